"""DMCPanel (qmckit.widgets.dmc_panel), used by notebooks/bec.ipynb: tiny sizes, exact answers."""
import math

import numpy as np
import pytest

from qmckit.runs import DMCRun
from qmckit.widgets import fast_mode
from qmckit.widgets.dmc_panel import DMCPanel


def tiny_dmc_panel(**kwargs):
    settings = dict(n=4, lam=1.0, a=0.0, alpha=0.5, dt=0.05, walkers=8, steps=40, seed=3)
    settings.update(kwargs)
    return DMCPanel(**settings)


def test_dmc_panel_builds_a_dmc_config():
    panel = tiny_dmc_panel()
    config = panel.config()
    assert config.method == "dmc" and config.sampler == "drift"
    assert config.target_walkers == 8 and config.dt == 0.05
    assert panel.sampler.disabled
    assert "DMC" in panel.widget.children[0].value
    assert "application/vnd.jupyter.widget-view+json" in panel._repr_mimebundle_()


def test_dmc_panel_default_sizes(monkeypatch):
    monkeypatch.setenv("QMCKIT_FAST", "1")
    assert fast_mode()
    assert (DMCPanel().walkers.value, DMCPanel().steps.value) == (40, 300)
    monkeypatch.delenv("QMCKIT_FAST")
    assert DMCPanel().steps.value > 300


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")
def test_dmc_panel_sync_run_exact_noninteracting():
    panel = tiny_dmc_panel()
    result = panel.run_sync()
    assert result is not None and panel.error is None
    assert isinstance(panel.last_run, DMCRun) and result["method"] == "dmc"
    assert panel.progress.value == panel.progress.max
    est = result["estimates"]["energy_per_particle"]
    assert abs(est["mean"] - 1.5) < 1e-12 and est["error"] < 1e-12


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")
def test_dmc_panel_interacting_and_bad_input():
    panel = tiny_dmc_panel(a=0.2, alpha=0.48, steps=30)
    result = panel.run_sync()
    energy = result["estimates"]["energy_per_particle"]
    assert math.isfinite(energy["mean"]) and energy["mean"] > 1.5
    assert np.isfinite(result["walkers_final"])
    panel.dt.value = -1.0
    assert panel.run_sync() is None
    assert panel.status.value.startswith("error: dt must be a positive number")


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")
def test_dmc_panel_figure_labels_steps():
    panel = tiny_dmc_panel(steps=20)
    assert panel.figure().axes[0].get_xlabel() == "DMC step"  # no run yet: an empty figure
    panel.run_sync()
    fig = panel.figure()
    assert fig.axes[0].get_xlabel() == "DMC step"
    assert len(panel.plot.outputs) == 1 and "image/png" in panel.plot.outputs[0]["data"]
