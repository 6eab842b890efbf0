"""The BosonPanel widget: synchronous runs, bad input, and the threaded run with Stop/continue.

Tiny sizes: the only real cost is compiling the VMC kernel once per session.
"""
import threading

import numpy as np
import pytest

from qmckit.runs import make_run
from qmckit.systems import SYSTEMS
from qmckit.widgets import BosonPanel, SystemPanel, fast_mode
from qmckit.widgets.labels import unit_text

TIMEOUT = 120.0  # seconds; generous for a cold numba compile on a slow CI machine


def tiny_panel(**kwargs):
    settings = dict(n=4, lam=1.0, a=0.0, alpha=0.5, walkers=4, steps=40, seed=3)
    settings.update(kwargs)
    return BosonPanel(**settings)


def test_fast_mode(monkeypatch):
    monkeypatch.delenv("QMCKIT_FAST", raising=False)
    assert not fast_mode()
    for value in ("1", "yes", "true"):
        monkeypatch.setenv("QMCKIT_FAST", value)
        assert fast_mode()
    for value in ("0", "", "false", "off"):
        monkeypatch.setenv("QMCKIT_FAST", value)
        assert not fast_mode()
    monkeypatch.setenv("QMCKIT_FAST", "1")
    panel = BosonPanel()
    assert (panel.walkers.value, panel.steps.value) == (40, 200)
    monkeypatch.delenv("QMCKIT_FAST")
    assert BosonPanel().steps.value > 200


def test_panel_displays():
    panel = tiny_panel()
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert panel.run_button.description == "Run" and panel.stop_button.disabled
    panel.sampler.value = "brute"
    assert panel.dt.disabled
    panel.sampler.value = "drift"
    assert not panel.dt.disabled


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")  # 40 sweeps: too short for its own error
def test_sync_run_exact_noninteracting():
    panel = tiny_panel()
    panel.lam.value, panel.a.value, panel.alpha.value = 1.0, 0.0, 0.5
    result = panel.run_sync()
    assert result is not None and panel.error is None
    assert panel.progress.max == panel.last_run.config.n_blocks
    assert panel.progress.value == panel.progress.max
    assert panel.status.value.startswith("done")
    assert "1.5(exact)" in panel.status.value
    est = panel.last_run.result()["estimates"]["energy_per_particle"]
    assert abs(est["mean"] - 1.5) < 1e-12 and est["error"] < 1e-12
    assert result["estimates"]["energy_per_particle"]["mean"] == est["mean"]
    # the figure was rendered into the Output widget
    (out,) = panel.plot.outputs
    assert out["output_type"] == "display_data" and out["data"]["image/png"]
    assert len(panel.figure().axes) == 2


@pytest.mark.parametrize("field, value, word", [("alpha", -1.0, "alpha"), ("n", 0, "n"), ("lam", 0.0, "lam")])
def test_bad_input_goes_to_status(field, value, word):
    panel = tiny_panel()
    getattr(panel, field).value = value
    assert panel.run_sync() is None  # no exception
    assert panel.status.value.startswith("error: ")
    assert word in panel.status.value and "\n" not in panel.status.value
    assert "Traceback" not in panel.status.value
    assert isinstance(panel.error, ValueError)
    assert panel.last_run is None
    # the threaded path does not start a thread for bad input either
    assert panel.run() is None and panel.thread is None
    assert not panel.run_button.disabled


def test_stop_pauses_at_block_boundary_and_run_continues():
    settings = dict(n=6, a=0.00433, alpha=0.495, walkers=4, steps=60, seed=11)
    panel = tiny_panel(**settings)
    first_block = threading.Event()
    proceed = threading.Event()

    def hook(done, total):
        if done == 1:
            first_block.set()
            assert proceed.wait(TIMEOUT)  # hold the run here until the test has pressed Stop

    panel.on_block(hook)
    panel.run_button.click()
    try:
        assert first_block.wait(TIMEOUT), "the first block never finished"
        assert panel.running and panel.run_button.disabled and not panel.stop_button.disabled
        panel.stop_button.click()
    finally:
        proceed.set()
    assert panel.wait(TIMEOUT)
    run = panel.last_run
    total = run.config.n_blocks
    assert total == 20
    assert run.blocks_done == 1 and panel.progress.value == 1 and panel.progress.max == total
    assert panel.status.value.startswith("stopped after block 1/20")
    assert not panel.run_button.disabled and panel.stop_button.disabled

    # Run again with the same settings: the same run continues to the end
    panel.run_button.click()
    assert panel.wait(TIMEOUT)
    assert panel.last_run is run and run.blocks_done == total
    assert panel.progress.value == total and panel.status.value.startswith("done")

    # ... and gives exactly the numbers of a run that was never stopped
    reference = tiny_panel(**settings)
    reference.run_sync()
    np.testing.assert_array_equal(run.energy_series(), reference.last_run.energy_series())

    # a changed setting starts afresh
    panel.seed.value = 12
    panel.run_button.click()
    assert panel.wait(TIMEOUT)
    assert panel.last_run is not run and panel.last_run.config.seed == 12
    assert panel.last_run.blocks_done == total and panel.status.value.startswith("done")


def test_second_run_while_running_is_refused():
    panel = tiny_panel(steps=60, seed=5)
    started = threading.Event()
    release = threading.Event()

    def hook(done, total):
        if done == 1:
            started.set()
            assert release.wait(TIMEOUT)

    panel.on_block(hook)
    panel.run()
    try:
        assert started.wait(TIMEOUT)
        assert panel.run() is None and "in progress" in panel.status.value
    finally:
        release.set()
    assert panel.wait(TIMEOUT)
    assert panel.last_run.blocks_done == panel.last_run.config.n_blocks


def test_atom_panel_vmc_dmc_and_bad_input():
    from qmckit.systems.atom import ELEMENTS
    from qmckit.widgets import AtomPanel

    panel = AtomPanel(element="He", walkers=20, steps=60, seed=2)
    panel.element.value = "Be"  # resets α, β and Δt to the element's defaults
    assert (panel.alpha.value, panel.beta.value) == ELEMENTS["Be"][1:] and panel.dt.value == 0.02
    panel.element.value = "He"
    panel.jastrow.value = False
    panel.alpha.value = 27 / 16  # no Jastrow: the closed form −(27/16)² = −2.84766 E_h
    result = panel.run_sync()
    e = result["estimates"]["energy"]
    assert result["system"] == "atom" and abs(e["mean"] + (27 / 16) ** 2) < 5 * e["error"] + 1e-3
    assert panel.status.value.startswith("done") and "E = " in panel.status.value
    panel.method.value = "dmc"
    assert panel.sampler.value == "drift" and panel.sampler.disabled and panel.dt.description == "Δτ"
    panel.element.value, panel.element.value = "Be", "He"  # back to He's default α, β
    panel.jastrow.value = True
    panel.dt.value, panel.walkers.value, panel.steps.value = 0.02, 40, 150
    dmc = panel.run_sync()
    # the panel holds no physics: its DMC is the run of its controls' RunConfig, number for number (DMC against
    # the exact He energy: tests/test_dmc_exact.py)
    assert dmc["method"] == "dmc" and dmc["params"]["element"] == "He" and dmc["dt"] == 0.02
    assert dmc["estimates"] == make_run(panel.last_run.config).run()["estimates"]
    panel.alpha.value = -1.0
    assert panel.run_sync() is None and "alpha" in panel.status.value


# --- MoleculePanel and PrecisionPanel ---------------------------------------------------------------
# Tiny sizes: with warm numba caches each test takes about a second (the molecule and precision kernels
# compile once per machine; cold, the molecule kernels take tens of seconds, as in tests/test_molecule.py).
import subprocess  # noqa: E402
import sys  # noqa: E402

from qmckit.widgets.molecule_panel import pyscf_missing  # noqa: E402

needs_pyscf = pytest.mark.skipif(pyscf_missing() is not None, reason="PySCF (the 'chem' extra) is not installed")
H2_EXACT = -1.1744757  # non-relativistic Born–Oppenheimer H2 at r = 1.4011 bohr (Kołos–Wolniewicz)


@needs_pyscf
@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")
def test_molecule_panel_vmc_equals_rhf_dmc_goes_below_and_bad_input():
    from qmckit.widgets import MoleculePanel

    # redraw_interval: draw the first block and the end only (a live redraw costs more than these tiny runs)
    panel = MoleculePanel(molecule="h2", basis="sto-3g", jastrow=False, walkers=100, steps=1000, seed=3,
                          redraw_interval=60.0)
    assert "application/vnd.jupyter.widget-view+json" in panel._repr_mimebundle_()
    panel.molecule.value = "ne"  # Δt follows the molecule
    assert panel.dt.value == 0.005
    panel.molecule.value = "h2"
    assert panel.dt.value == 0.05
    # the bare RHF determinant: VMC must give PySCF's RHF energy (−1.116682 E_h in STO-3G)
    result = panel.run_sync()
    assert result is not None and result["system"] == "molecule" and panel.error is None
    values = panel.energy_vs_rhf()
    assert values["rhf"] == pytest.approx(-1.11668, abs=1e-4)
    assert 0 < values["error"] < 0.01 and abs(values["pull"]) < 3, values
    assert values["energy"] == result["estimates"]["energy"]["mean"]
    # units rendered (issue 26, item 4.9): E(RHF) and Eₕ, no raw underscores
    assert panel.status.value.startswith("done") and f"E(RHF) = {values['rhf']:.6f} Eₕ" in panel.status.value
    assert "E<sub>RHF</sub>" in panel.comparison.value and "bare RHF determinant" in panel.comparison.value
    (out,) = panel.plot.outputs
    assert out["data"]["image/png"]
    fig = panel.figure()
    assert len(fig.axes) == 2 and any("RHF" in line.get_label() for line in fig.axes[0].lines)

    # fixed-node DMC with the Jastrow factor: H2 has no node, so DMC goes far below RHF to the exact energy
    panel.method.value = "dmc"
    assert panel.sampler.disabled and panel.dt.description == "Δτ"
    panel.jastrow.value = True
    panel.dt.value, panel.steps.value = 0.02, 500
    dmc = panel.run_sync()
    values = panel.energy_vs_rhf()
    assert dmc["method"] == "dmc" and values["energy"] == dmc["estimates"]["energy"]["mean"]
    assert values["difference"] < -3 * values["error"], values
    assert abs(values["energy"] - H2_EXACT) < 4 * values["error"] + 0.005, values
    assert "imaginary time" in panel.figure().axes[0].get_xlabel()

    # bad input: one line in the status, no traceback, no run and no thread
    for control, value, word in ((panel.basis, "no-such-basis", "basis"), (panel.dt, 0.0, "dt")):
        good = control.value
        control.value = value
        assert panel.run_sync() is None and isinstance(panel.error, ValueError)
        assert panel.status.value.startswith("error: ") and word in panel.status.value
        assert "\n" not in panel.status.value and "Traceback" not in panel.status.value
        assert panel.comparison.value == ""
        assert panel.run() is None and not panel.running
        control.value = good


def test_molecule_and_precision_panels_without_pyscf(monkeypatch):
    from qmckit.widgets import MoleculePanel, PrecisionPanel

    monkeypatch.setitem(sys.modules, "pyscf", None)  # import pyscf now raises ImportError
    panel = MoleculePanel(molecule="h2o")
    assert panel.pyscf_message is not None and "chem" in panel.pyscf_message
    assert panel.status.value.startswith("unavailable: ") and "\n" not in panel.status.value
    assert panel.run_button.disabled
    assert panel.run_sync() is None and panel.status.value.startswith("error: ")
    assert "pyscf" in panel.status.value.lower()
    precision = PrecisionPanel()
    assert "molecule" not in [value for _, value in precision.kind.options]
    assert "unavailable" in precision.status.value
    # and in a fresh interpreter, importing the widgets does not need PySCF
    code = ("import sys; sys.modules['pyscf'] = None\n"
            "from qmckit.widgets import MoleculePanel, PrecisionPanel\n"
            "print(MoleculePanel().status.value)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("unavailable: ") and "chem" in res.stdout


def tiny_precision_panel(**kwargs):
    from qmckit.widgets import PrecisionPanel

    settings = dict(arithmetics=("f64", "f32", "kahan_f32", "f32_rz"), kind="uniform", k_min=10, k_max=3000, points=3,
                    trials=1, seed=5, work=2.0**18)
    settings.update(kwargs)
    return PrecisionPanel(**settings)


def test_precision_panel_error_laws():
    panel = tiny_precision_panel()
    assert "application/vnd.jupyter.widget-view+json" in panel._repr_mimebundle_()
    result = panel.run_sync()
    assert result is not None and panel.error is None
    K = result.lengths
    assert list(K) == [10, 173, 3000] and panel.progress.value == panel.progress.max == 3
    mean = {name: stats["mean"] for name, stats in result.stats.items()}
    # float64 accumulation of float32 products: round-off of order 1e-16 per element
    assert np.all(mean["f64"] <= 2e-15) and np.all(result.stats["f64"]["max"] <= 1e-14)
    # float32 is at the level of u = 6e-8 and grows; Kahan stays flat, below plain float32 from K = 1000 on
    assert np.all(mean["f32"] > 1e-8)
    long = K >= 1000
    assert np.all(mean["kahan_f32"][long] < 0.2 * mean["f32"][long])
    assert np.all(mean["kahan_f32"] < 3 * 2.0**-24)
    # truncation: error ∝ K, above round to nearest
    slope = np.log(mean["f32_rz"][-1] / mean["f32_rz"][0]) / np.log(K[-1] / K[0])
    assert slope > 0.85 and mean["f32_rz"][-1] > 10 * mean["f32"][-1]
    assert panel.status.value.startswith("done · K = 10–3000") and "Kahan f32" in panel.status.value
    (out,) = panel.plot.outputs
    assert out["data"]["image/png"]
    ax = panel.figure().axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    panel.stat.value = "max"  # redraws the last result with another statistic
    assert "max" in panel.figure().axes[0].get_ylabel()


@pytest.mark.parametrize("control, value, word", [("k_min", 0, "K min"), ("k_max", 5, "K max"),
                                                  ("k_max", 10**7, "K max"), ("arithmetics", (), "arithmetic")])
def test_precision_panel_bad_input_goes_to_status(control, value, word):
    panel = tiny_precision_panel()
    getattr(panel, control).value = value
    assert panel.run_sync() is None and isinstance(panel.error, ValueError)
    assert panel.status.value.startswith("error: ") and word in panel.status.value
    assert "\n" not in panel.status.value and "Traceback" not in panel.status.value
    assert panel.run() is None and panel.thread is None and panel.result is None


def test_precision_panel_stop_keeps_the_points_done():
    panel = tiny_precision_panel()
    panel.on_point(lambda done, total: panel.stop() if done == 1 else None)
    panel.run_button.click()
    assert panel.wait(TIMEOUT)
    assert panel.status.value.startswith("stopped after 1/3 points") and list(panel.result.lengths) == [10]
    assert not panel.run_button.disabled and panel.stop_button.disabled


@needs_pyscf
def test_precision_panel_real_basis_matrices():
    panel = tiny_precision_panel(kind="molecule", molecule="h2", bases=("cc-pvdz", "sto-3g"),
                                 arithmetics=("f64", "f32", "kahan_f32"))
    assert panel.stat.value == "median" and panel.k_min.disabled
    result = panel.run_sync()
    # K = number of Cartesian basis functions of H2: 2 × 1s (STO-3G), 2 × (2s 1p) (cc-pVDZ); B = the one RHF orbital
    assert list(result.lengths) == [2, 10] and result.labels == ["sto-3g", "cc-pvdz"]
    assert result.shapes == [(200, 1), (200, 1)]
    assert np.all(result.stats["f64"]["median"] <= 1e-15)
    assert np.all(result.stats["f32"]["median"] < 1e-6) and np.all(result.stats["kahan_f32"]["median"] < 3 * 2.0**-24)
    assert panel.status.value.startswith("done") and "molecule h2" in panel.figure().axes[0].get_title()
    panel.bases.value = ()
    assert panel.run_sync() is None and "bases" in panel.status.value


def test_orbitals_panel_literal_qs_is_biased_pbp_is_not_and_bad_input(monkeypatch):
    monkeypatch.setenv("QMCKIT_FAST", "1")
    from qmckit.widgets import OrbitalsPanel

    panel = OrbitalsPanel(scheme="qs_literal", n_per_spin=7, sweeps=3000)
    literal = panel.run_sync()
    assert literal["bias_per_cell"] > 4 * literal["bias_per_cell_error"]  # reading A fills the exchange hole
    assert "Ha per Si cell" in panel.status.value and len(panel.plot.outputs) == 1
    panel.scheme.value = "pbp"
    exact = panel.run_sync()
    assert abs(exact["bias_per_cell"]) < 4 * exact["bias_per_cell_error"]
    panel.sweeps.value = 5
    assert panel.run_sync() is None and "sweeps" in panel.status.value
    panel.grid.value = 8
    timing = panel.time_sync()
    assert timing["median_s"] > 0 and timing["grid"] == [8, 8, 8] and "ms" in panel.status.value


@pytest.mark.parametrize("name", [n for n, cls in SYSTEMS.items() if cls.kind == "continuum" and n != "molecule"])
def test_system_panel_controls_come_from_the_parameter_metadata(name):
    """SystemPanel builds one control per declared parameter, labelled and explained by the metadata,
    and turns them into the RunConfig of that system: a registered system needs no widget code."""
    panel = SystemPanel(name)
    infos = SYSTEMS[name].parameters()
    assert list(panel.controls) == [info.name for info in infos]
    for info in infos:
        control = panel.controls[info.name]
        # the symbol with its subscripts rendered (β_en → βₑₙ), the help as the metadata give it
        assert control.description == unit_text(info.label) and "_" not in control.description
        assert control.tooltip == info.describe()
        assert getattr(panel, info.name) is control
    config = panel.config()
    assert config.system == name and config.params == SYSTEMS[name]().params.as_dict()


def test_system_panel_runs_a_quantum_dot_and_shows_bad_input_in_one_line():
    panel = SystemPanel("qdot", n=6, omega=0.5, method="dmc", dt=0.02, walkers=8, steps=20, seed=3)
    result = panel.run_sync()
    assert result["system"] == "qdot" and result["method"] == "dmc" and result["params"]["n"] == 6
    assert panel.status.value.startswith("done") and "E = " in panel.status.value
    panel.n.value = 5
    assert panel.run_sync() is None
    assert panel.status.value.startswith("error: n must be a closed shell in 2D")


def test_rejected_input_and_a_new_run_clear_the_last_runs_figure():
    panel = SystemPanel("qdot", n=2, walkers=4, steps=10, seed=1)
    panel.run_sync()
    assert len(panel.plot.outputs) == 1  # the finished run's figure
    panel.omega.value = -1.0
    assert panel.run_sync() is None and panel.plot.outputs == ()
    assert panel.status.value == "error: omega must be a finite number > 0, got -1.0"
    panel.omega.value = 1.0
    panel.on_block(lambda done, total: seen.append(len(panel.plot.outputs)))
    seen = []
    panel.redraw_interval = 1e9  # no redraw before the end: the plot stays empty while the new run goes
    panel.run_sync()
    assert seen and seen[0] == 0 and len(panel.plot.outputs) == 1
