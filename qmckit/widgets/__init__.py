"""ipywidgets panels for qmckit. They call only the public API: no physics lives here.

    >>> from qmckit.widgets import BosonPanel
    >>> panel = BosonPanel()
    >>> panel            # in Jupyter: controls, Run/Stop, progress bar, live plots
    >>> panel.run_sync() # or press Run (background thread) / Stop (pauses at the next block)

``fast_mode()`` reads ``QMCKIT_FAST`` (small default sizes for CI and notebook fast mode).
"""
from .atom_panel import AtomPanel
from .bec_panel import BosonPanel
from .fast import fast_mode
from .plots import plot_energy_trace, plot_reblock, run_figure

__all__ = ["AtomPanel", "BosonPanel", "fast_mode", "plot_energy_trace", "plot_reblock", "run_figure"]
