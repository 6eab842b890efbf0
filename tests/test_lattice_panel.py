"""The LatticePanel widget (study 000): headless synchronous runs, bad input, threaded Stop/continue.

Tiny L = 3 runs (10 sites, 8 electrons): the only real cost is compiling the lattice kernels once
per machine (numba caches them).
"""
import threading

import numpy as np
import pytest

from qmckit.methods.lattice_vmc import LatticeRun, LatticeRunConfig
from qmckit.stats import format_value_error
from qmckit.widgets import LatticePanel
from qmckit.widgets.lattice_panel import format_result

TIMEOUT = 120.0  # seconds; generous for a cold numba compile on a slow CI machine
TINY = dict(L=3, doping=0.2, J=0.3, delta=1.5, mu=0.0, chains=4, sweeps=60, seed=3)

pytestmark = pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")  # 60 sweeps: too short for its own error


def tiny_panel(**kwargs):
    return LatticePanel(**(TINY | kwargs))


def test_defaults_fast_mode_and_display(monkeypatch):
    monkeypatch.setenv("QMCKIT_FAST", "1")
    panel = LatticePanel()
    assert (panel.chains.value, panel.sweeps.value) == (8, 200)
    # study 000's Table 6.1 parameters
    assert (panel.kind.value, panel.L.value, panel.doping.value, panel.J.value, panel.delta.value, panel.mu.value) == (
        "tilted", 5, 0.1, 0.3, 1.5, 0.0)
    assert panel.config().params["L"] == 5 and panel.config().chains == 8 and panel.config().backend == "cpu"
    monkeypatch.delenv("QMCKIT_FAST")
    assert LatticePanel().sweeps.value > 200
    assert "application/vnd.jupyter.widget-view+json" in panel._repr_mimebundle_()
    assert panel.run_button.description == "Run" and panel.stop_button.disabled
    assert panel.result_line.value == "" and panel.status.value.startswith("ready")
    for name in ("n", "lam", "a", "alpha", "sampler", "dt"):  # no trapped-boson controls left over
        assert not hasattr(panel, name)


def test_sync_run_equals_direct_lattice_run():
    panel = tiny_panel()
    result = panel.run_sync()
    assert result is not None and panel.error is None
    direct_run = LatticeRun(LatticeRunConfig(params=dict(L=3, doping=0.2, J=0.3, delta=1.5, mu=0.0, kind="tilted"),
                                             chains=4, steps=60, seed=3, backend="cpu"))
    direct = direct_run.run()
    np.testing.assert_array_equal(panel.last_run.energy_series(), direct_run.energy_series())
    for key in ("energy_per_site", "kinetic_per_site", "exchange_per_site"):
        assert result["estimates"][key] == direct["estimates"][key]
    assert result["acceptance"] == direct["acceptance"] and result["n_electrons"] == 8 and result["gamma_ghost"]
    # what the panel displays is the direct run's estimate
    est = direct["estimates"]["energy_per_site"]
    assert panel.result_line.value == format_result(direct)
    assert f"{est['mean']:.6f} ± {est['error']:.6f}" in panel.result_line.value
    assert panel.status.value.startswith("done")
    assert f"E/Nₛ = {format_value_error(est['mean'], est['error'])} t" in panel.status.value  # no raw E/N_s
    assert "60 sweeps × 4 chains" in panel.status.value
    assert panel.progress.max == panel.last_run.config.n_blocks == panel.progress.value
    (out,) = panel.plot.outputs  # the live plot was rendered into the Output widget
    assert out["output_type"] == "display_data" and out["data"]["image/png"]
    fig = panel.figure()
    assert len(fig.axes) == 2 and "E/N" in fig.axes[0].get_ylabel()


@pytest.mark.parametrize("control, value, word", [("L", 4, "L"), ("doping", 1.0, "doping"), ("J", -0.5, "J"),
                                                  ("delta", -1.0, "delta"), ("mu", float("nan"), "mu")])
def test_bad_input_goes_to_status(control, value, word):
    panel = tiny_panel()
    getattr(panel, control).value = value
    assert panel.run_sync() is None  # no exception
    assert panel.status.value.startswith(f"error: {word} ")
    assert "\n" not in panel.status.value and "Traceback" not in panel.status.value
    assert isinstance(panel.error, ValueError) and panel.last_run is None
    assert panel.result_line.value == ""
    assert panel.run() is None and panel.thread is None  # the Run button starts no thread either
    assert not panel.run_button.disabled


def test_cuda_without_a_gpu_is_a_one_line_message():
    from qmckit.backends import lattice_cuda

    if lattice_cuda.available():
        pytest.skip("a CUDA GPU is present")
    panel = tiny_panel(backend="cuda")
    assert panel.run_sync() is None and panel.status.value.startswith("error: backend cuda")


def test_stop_pauses_at_block_boundary_and_run_continues():
    panel = tiny_panel(seed=11)
    first_block, proceed = threading.Event(), threading.Event()

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
    assert total == 20 and run.blocks_done == 1 and panel.progress.value == 1
    assert panel.status.value.startswith("stopped after block 1/20") and panel.result_line.value == ""

    panel.run_button.click()  # same settings: the same run continues to the end
    assert panel.wait(TIMEOUT)
    assert panel.last_run is run and run.blocks_done == total and panel.status.value.startswith("done")
    assert panel.result_line.value.startswith("<b>E/N<sub>s</sub> = ")
    reference = tiny_panel(seed=11)
    reference.run_sync()  # ... with exactly the numbers of a run that was never stopped
    np.testing.assert_array_equal(run.energy_series(), reference.last_run.energy_series())

    panel.seed.value = 12  # a changed setting starts afresh
    panel.run_button.click()
    assert panel.wait(TIMEOUT)
    assert panel.last_run is not run and panel.last_run.config.seed == 12 and panel.status.value.startswith("done")
