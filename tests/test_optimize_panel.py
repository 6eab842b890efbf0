"""OptimizePanel (issue 29): runs an optimisation live, stops on Stop, refuses bad input in one line; no physics in
the panel (it calls qmckit.methods.optimizers.optimize, whose own tests check the numbers)."""
import numpy as np

from qmckit.widgets import OptimizePanel


def test_the_panel_optimises_the_freed_parameter_and_draws_every_step():
    panel = OptimizePanel("bec", n=10, a=0.0, lam=1.0, alpha=0.3, seed=1)
    panel.steps.value, panel.walkers.value, panel.samples.value = 6, 40, 50
    result = panel.run_sync()
    assert abs(result.params["alpha"] - 0.5) < 1e-3
    assert panel.status.value.startswith(("converged", "done")) and "best (correlated sampling) α = 0.5" in \
        panel.status.value
    assert panel.progress.description == "done" and len(panel.plot.outputs) == 1


def test_a_fixed_parameter_keeps_its_value_and_stop_ends_after_the_current_step():
    panel = OptimizePanel("atom", element="He", alpha=1.6, beta=0.1, free="beta")
    assert not panel.free["alpha"].value and panel.free["beta"].value
    panel.steps.value, panel.walkers.value, panel.samples.value = 10, 40, 50
    seen = []
    callback = panel._on_step(10)

    def stop_after_first(step):  # Stop pressed while the first step is drawn
        seen.append(step)
        callback(step)
        panel.stop()

    panel._on_step = lambda steps: stop_after_first
    result = panel.run_sync()
    assert len(seen) == 1 and result.stopped == "stopped" and set(result.params) == {"beta"}
    assert panel.status.value.startswith("stopped after 1 steps: last measured β = 0.1")
    assert panel.progress.description == "stopped"
    assert np.isclose(seen[0].params["beta"], 0.1)


def test_bad_input_gives_one_line_and_no_figure():
    panel = OptimizePanel("bec", alpha=-1.0)
    assert panel.run_sync() is None
    assert panel.status.value == "error: alpha must be a finite number &gt; 0, got -1.0" or \
        panel.status.value.startswith("error: alpha must be")
    assert panel.plot.outputs == ()
    for box in panel.free.values():
        box.value = False
    panel.controls["alpha"].value = 0.4
    assert panel.run_sync() is None and panel.status.value == "error: free: tick at least one parameter to optimise"
