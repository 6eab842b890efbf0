"""An ipywidgets panel for VMC and fixed-node DMC of the atoms He, Be and Ne (study 002).

:class:`AtomPanel` is :class:`~qmckit.widgets.SystemPanel` for the system ``"atom"`` showing the
element, α, β and the Jastrow switch (controls from the parameter metadata), with method and Δτ.
No physics lives here: the controls become a :class:`qmckit.RunConfig` (which validates them) and
:func:`qmckit.runs.make_run` does the rest.

    >>> from qmckit.widgets.atom_panel import AtomPanel
    >>> panel = AtomPanel(element="Be", method="dmc", dt=0.01)
    >>> panel            # in Jupyter; or panel.run_sync()
"""
from __future__ import annotations

from ..systems.atom import AtomParams
from .fast import fast_mode
from .system_panel import SystemPanel

# a sensible drift time step per element (ħ/E_h): the 1s orbital shrinks as 1/α
DEFAULT_DT = {"He": 0.05, "Be": 0.02, "Ne": 0.01}
ATOM_FAST_SIZES = {"walkers": 40, "steps": 200}
ATOM_FULL_SIZES = {"walkers": 400, "steps": 4000}


class AtomPanel(SystemPanel):
    """Controls, Run/Stop, progress bar, status line and live plots for an atom (energies in E_h).

    The controls atom, α, β and Jastrow factor come from :class:`~qmckit.systems.atom.AtomParams`'
    metadata. Choosing an element resets α and β to that element's defaults (Sandsdalen's parameters,
    as in study 002's Table 7.1) and Δt to :data:`DEFAULT_DT`. ``method="dmc"`` runs fixed-node DMC
    (walkers = population target, steps = measured DMC steps).
    """

    def __init__(self, *, element: str = "He", alpha: float | None = None, beta: float | None = None,
                 jastrow: bool = True, method: str = "vmc", dt: float | None = None,
                 walkers: int | None = None, steps: int | None = None, seed: int = 1, redraw_interval: float = 0.5):
        sizes = ATOM_FAST_SIZES if fast_mode() else ATOM_FULL_SIZES
        params = {k: v for k, v in dict(element=element, alpha=alpha, beta=beta, jastrow=jastrow).items()
                  if v is not None}
        super().__init__("atom", names=("element", "alpha", "beta", "jastrow"), method=method, sampler="drift",
                         dt=dt if dt is not None else DEFAULT_DT.get(element, 0.02),
                         walkers=walkers or sizes["walkers"], steps=steps or sizes["steps"], seed=seed,
                         redraw_interval=redraw_interval, title="Atoms He, Be, Ne — VMC and fixed-node DMC", **params)
        self.element.observe(self._element_changed, names="value")

    def _element_changed(self, change) -> None:
        resolved = AtomParams(element=change["new"])
        self.alpha.value, self.beta.value = resolved.alpha, resolved.beta
        self.dt.value = DEFAULT_DT[change["new"]]
