"""The BosonPanel widget: synchronous runs, bad input, and the threaded run with Stop/continue.

Tiny sizes: the only real cost is compiling the VMC kernel once per session.
"""
import threading

import numpy as np
import pytest

from qmckit.widgets import BosonPanel, fast_mode

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
    e = dmc["estimates"]["energy"]
    assert dmc["method"] == "dmc" and abs(e["mean"] + 2.903724) < 3 * e["error"] + 0.01  # exact He energy
    panel.alpha.value = -1.0
    assert panel.run_sync() is None and "alpha" in panel.status.value
