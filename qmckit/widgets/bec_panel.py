"""An ipywidgets panel for VMC of trapped hard-sphere bosons (study 002).

:class:`BosonPanel` is :class:`~qmckit.widgets.SystemPanel` for the system ``"bec"``: its controls
N, λ, a, α come from :class:`~qmckit.systems.bec.BosonParams`' metadata, the run settings and the
Run/Stop/continue machinery from :class:`SystemPanel`. No physics lives here.

    >>> from qmckit.widgets import BosonPanel
    >>> panel = BosonPanel(n=20, alpha=0.495)
    >>> panel            # in Jupyter; or panel.run_sync()
"""
from __future__ import annotations

from .system_panel import FAST_SIZES, FULL_SIZES, SystemPanel

__all__ = ["BosonPanel", "FAST_SIZES", "FULL_SIZES"]


class BosonPanel(SystemPanel):
    """Controls, Run/Stop, progress bar, status line and live plots for a trapped-boson VMC run.

    Keyword arguments set the initial values of the controls; parameters not given take the
    defaults of :class:`~qmckit.systems.bec.BosonParams`. ``walkers`` and ``steps`` default to
    40 × 200 in fast mode (``QMCKIT_FAST=1``) and 200 × 2000 otherwise.

    Attributes: the controls ``n, lam, a, alpha, sampler, dt, walkers, steps, seed`` and those of
    :class:`SystemPanel`.
    """

    def __init__(self, *, sampler: str = "drift", dt: float = 0.05, walkers: int | None = None,
                 steps: int | None = None, seed: int = 1, redraw_interval: float = 0.5, methods=("vmc",),
                 title: str = "Trapped hard-sphere bosons — VMC", **params):
        super().__init__("bec", methods=methods, sampler=sampler, dt=dt, walkers=walkers, steps=steps, seed=seed,
                         redraw_interval=redraw_interval, title=title, **params)
