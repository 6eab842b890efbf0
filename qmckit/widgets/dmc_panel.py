"""An ipywidgets panel for DMC of trapped hard-sphere bosons.

:class:`DMCPanel` is :class:`~qmckit.widgets.BosonPanel` with the run built as a
:class:`qmckit.runs.DMCRun` (``method="dmc"``): the same controls (the sampler is fixed to the
drift–diffusion move that DMC needs), the same Run/Stop/continue behaviour, progress bar and live
plots, here of the mixed-estimator energy of every DMC step. No physics lives here: the controls
become a :class:`qmckit.RunConfig`, which validates them, and :func:`qmckit.runs.make_run` does the rest.

    >>> from qmckit.widgets.dmc_panel import DMCPanel
    >>> panel = DMCPanel(a=0.433, alpha=0.46, dt=0.01)   # set B2 of study 002
    >>> panel            # in Jupyter; or panel.run_sync()
"""
from __future__ import annotations

from .bec_panel import BosonPanel
from .fast import fast_mode
from .plots import run_figure

DMC_FAST_SIZES = {"walkers": 40, "steps": 300}
DMC_FULL_SIZES = {"walkers": 500, "steps": 4000}


class DMCPanel(BosonPanel):
    """Controls, Run/Stop, progress bar, status line and live plots for a trapped-boson DMC run.

    Keyword arguments set the initial controls as for :class:`BosonPanel`; ``walkers`` is the DMC
    population target and ``steps`` the number of measured DMC steps (after the run's VMC
    equilibration and one time unit, 1/Δτ steps, of DMC equilibration). Defaults: Δτ = 0.01 and
    40 × 300 in fast mode (``QMCKIT_FAST=1``), 500 × 4000 otherwise.
    """

    def __init__(self, *, dt: float = 0.01, walkers: int | None = None, steps: int | None = None, **kwargs):
        sizes = DMC_FAST_SIZES if fast_mode() else DMC_FULL_SIZES
        kwargs.pop("sampler", None)
        super().__init__(sampler="drift", dt=dt, walkers=walkers or sizes["walkers"],
                         steps=steps or sizes["steps"], methods=("dmc",),
                         title="Trapped hard-sphere bosons — DMC (mixed estimator, one point per DMC step)",
                         **kwargs)
        self.walkers.tooltip = "DMC population target"
        self.dt.tooltip = (f"DMC time step Δτ ({self._time_unit}), typically 0.001–0.02; the result has an O(Δτ) "
                           "bias")

    def _figure(self, run):
        """The mixed energy per particle of every DMC step, and its reblocking."""
        series = run.energy_series() if run is not None else []
        return run_figure(series, unit=self.system_class.energy_unit, label="E/N (mixed)", xlabel="DMC step",
                          what="energy per particle")
