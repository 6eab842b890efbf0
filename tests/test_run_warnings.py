"""A run never returns silent garbage: its result carries ``warnings``, one line per problem (issue 25).

Each test provokes one problem and checks the line that names it, and a run without the problem has none:
error bars from too short a series (one line for all of them, naming the steps that would do, instead of one
Python warning per series), acceptance that says the walkers hardly move, a DMC population that collapsed.
"""
import subprocess
import sys
import warnings

import numpy as np
import pytest

from qmckit.runs import RunConfig, make_run
from qmckit.stats import ShortSeriesWarning

HE = dict(system="atom", params=dict(element="He"), seed=1, backend="cpu")


def test_short_series_give_one_line_naming_the_steps_that_would_do():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShortSeriesWarning)  # none may escape the run
        short = make_run(RunConfig(**HE, walkers=20, steps=40)).run()
    assert len(short["warnings"]) == 1, short["warnings"]
    line = short["warnings"][0]
    assert "too short a series" in line and "40 measured steps" in line
    suggested = int(line.split("steps = ")[1].split()[0])
    enough = make_run(RunConfig(**HE, walkers=20, steps=suggested)).run()
    assert enough["warnings"] == []


def test_walkers_that_hardly_move_are_reported():
    stuck = make_run(RunConfig(**HE, walkers=10, steps=400, dt=200.0)).run()
    assert stuck["acceptance"] < 1e-3
    assert any(line.startswith("acceptance") and "hardly move" in line for line in stuck["warnings"])


@pytest.mark.filterwarnings("ignore:reblock")
def test_a_collapsed_dmc_population_is_reported():
    run = make_run(RunConfig(**HE, method="dmc", walkers=20, steps=20, dt=0.01))
    run.run()
    assert not any("population" in line for line in run.warnings())
    run.series["population"][-1][-1] = 3  # below 20 % of the target of 20
    assert any("population fell to 3 walkers (target 20)" in line for line in run.warnings())


def test_the_cli_prints_each_warning_once_on_stderr():
    res = subprocess.run([sys.executable, "-m", "qmckit", "run", "atom", "--element", "He", "--walkers", "20",
                          "--steps", "40", "--seed", "1", "--json"], capture_output=True, text=True)
    assert res.returncode == 0
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("qmckit: warning: 2 error bars rest on too short a series"), lines
    assert np.isfinite(__import__("json").loads(res.stdout)["estimates"]["energy"]["mean"])
