"""The System protocol itself: parameter metadata, validation messages, CLI flags and help generated from it,
registration, and a system written outside qmckit (tests/_toy_system.py) that appears in the CLI, the
panels and the runs once registered, with no other code."""
import io
import json
from contextlib import redirect_stdout
from dataclasses import dataclass

import numpy as np
import pytest

from qmckit import RunConfig, cli
from qmckit.runs import make_run
from qmckit.systems import SYSTEMS, Unsupported, parameters, register, require
from qmckit.systems.protocol import validate


@pytest.fixture
def toy():
    from _toy_system import Toy

    register(Toy)
    yield Toy
    SYSTEMS.pop(Toy.name)


def test_parameter_metadata_describes_and_checks_values():
    from _toy_system import ToyParams

    info = {i.name: i for i in parameters(ToyParams)}
    assert info["alpha"].allowed() == "a finite number > 0" and info["alpha"].spec.variational
    assert info["n"].describe() == "number of particles; an integer ≥ 1 (default 3)"
    assert info["trap"].allowed() == "one of harmonic"
    assert (info["label"].flag, info["n"].flag) == ("--label", "--n")
    for kwargs, message in ((dict(n=0), "n must be an integer ≥ 1, got 0"), (dict(n=True), "n must be an integer"),
                            (dict(alpha=float("inf")), "alpha must be a finite number > 0"),
                            (dict(trap="box"), "trap must be one of harmonic, got 'box'"),
                            (dict(label=1), "label must be True or False")):
        with pytest.raises(ValueError, match="^" + message):
            ToyParams(**kwargs)
    assert ToyParams(n=np.int64(4), alpha=1).n == 4 and isinstance(ToyParams(alpha=1).alpha, float)


def test_a_field_without_metadata_and_a_bad_system_are_refused():
    @dataclass(frozen=True)
    class Bare:
        x: float = 1.0

        def __post_init__(self):
            validate(self)

    with pytest.raises(TypeError, match="Bare.x has no metadata"):
        Bare()
    from qmckit.systems.protocol import System

    class Nameless(System):
        Params = Bare

    with pytest.raises(ValueError, match="name must be a short identifier"):
        register(Nameless)
    with pytest.raises(TypeError, match="needs a qmckit.System subclass"):
        register(dict)


def test_require_names_the_capability_and_the_system():
    with pytest.raises(Unsupported, match="^DMC on a GPU needs capability 'gpu', which system 'helium' does not"):
        require(SYSTEMS["helium"], "gpu", "DMC on a GPU")


def test_a_registered_user_system_appears_in_the_cli_panels_and_runs(toy, capsys):
    # the CLI: a subcommand with one flag per declared parameter, validation by the metadata
    help_text = io.StringIO()
    with redirect_stdout(help_text), pytest.raises(SystemExit):
        cli.main(["run", "toy1d", "--help"])
    assert "--alpha ALPHA" in help_text.getvalue() and "--label" in help_text.getvalue()
    assert cli.main(["run", "toy1d", "--n", "3", "--alpha", "0.5", "--steps", "20", "--walkers", "4",
                     "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["system"] == "toy1d" and out["estimates"]["energy"]["mean"] == pytest.approx(1.5, abs=1e-12)
    assert cli.main(["run", "toy1d", "--alpha", "-2"]) == 2
    assert capsys.readouterr().err.strip() == "qmckit: error: --alpha must be a finite number > 0, got -2.0"
    # the panel
    from qmckit.widgets import SystemPanel

    panel = SystemPanel("toy1d", alpha=0.7, walkers=8, steps=50)
    assert list(panel.controls) == ["n", "alpha", "trap", "label"] and panel.alpha.value == 0.7
    result = panel.run_sync()
    exact = 3 * (0.7 / 2 + 1 / (8 * 0.7))  # the closed form E(α) = N(α/2 + 1/(8α))
    assert abs(result["estimates"]["energy"]["mean"] - exact) < 4 * result["estimates"]["energy"]["error"]
    # capabilities it does not declare are refused up front, with one line
    with pytest.raises(ValueError, match="needs capability 'fixed_node'|capability 'gpu'"):
        RunConfig(system="toy1d", backend="cuda")
    with pytest.raises(ValueError, match="^density must be one of x, pair for a 1-dimensional system"):
        RunConfig(system="toy1d", density="y")
    dmc = make_run(RunConfig(system="toy1d", method="dmc", params=dict(alpha=0.6), walkers=50, steps=200, dt=0.02,
                             seed=1)).run()
    assert dmc["estimates"]["energy"]["mean"] == pytest.approx(1.5, abs=5 * dmc["estimates"]["energy"]["error"])
