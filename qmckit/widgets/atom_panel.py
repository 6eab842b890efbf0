"""An ipywidgets panel for VMC and fixed-node DMC of the atoms He, Be and Ne (study 002).

:class:`AtomPanel` reuses :class:`~qmckit.widgets.BosonPanel`'s Run/Stop/continue machinery,
progress bar and live plots with its own controls: element, α, β, Jastrow on/off, method, Δτ.
No physics lives here: the controls become a :class:`qmckit.RunConfig` (which validates them) and
:func:`qmckit.runs.make_run` does the rest.

    >>> from qmckit.widgets.atom_panel import AtomPanel
    >>> panel = AtomPanel(element="Be", method="dmc", dt=0.01)
    >>> panel            # in Jupyter; or panel.run_sync()
"""
from __future__ import annotations

import ipywidgets as widgets

from ..runs import RunConfig
from ..systems.atom import ELEMENTS
from .bec_panel import BosonPanel, _float
from .fast import fast_mode

# a sensible drift time step per element (ħ/E_h): the 1s orbital shrinks as 1/α
DEFAULT_DT = {"He": 0.05, "Be": 0.02, "Ne": 0.01}
ATOM_FAST_SIZES = {"walkers": 40, "steps": 200}
ATOM_FULL_SIZES = {"walkers": 400, "steps": 4000}


class AtomPanel(BosonPanel):
    """Controls, Run/Stop, progress bar, status line and live plots for an atom (energies in E_h).

    Choosing an element resets α, β and Δt to that element's defaults (Sandsdalen's parameters,
    as in study 002's Table 7.1). ``method="dmc"`` runs fixed-node DMC (walkers = population
    target, steps = measured DMC steps).
    """

    def __init__(self, *, element: str = "He", alpha: float | None = None, beta: float | None = None,
                 jastrow: bool = True, method: str = "vmc", dt: float | None = None,
                 walkers: int | None = None, steps: int | None = None, seed: int = 1, redraw_interval: float = 0.5):
        sizes = ATOM_FAST_SIZES if fast_mode() else ATOM_FULL_SIZES
        _, alpha0, beta0 = ELEMENTS[element] if element in ELEMENTS else (None, 1.0, 0.3)
        super().__init__(sampler="drift", dt=dt if dt is not None else DEFAULT_DT.get(element, 0.02),
                         walkers=walkers or sizes["walkers"], steps=steps or sizes["steps"], seed=seed,
                         redraw_interval=redraw_interval)
        self.element = widgets.Dropdown(options=list(ELEMENTS), value=element, description="atom",
                                        style={"description_width": "70px"}, layout=widgets.Layout(width="210px"))
        self.alpha = _float("α", alpha if alpha is not None else alpha0, "orbital effective charge α (bohr⁻¹)")
        self.beta = _float("β", beta if beta is not None else beta0, "Padé–Jastrow β (bohr⁻¹)")
        self.jastrow = widgets.Checkbox(value=bool(jastrow), description="Jastrow factor", indent=False)
        self.method = widgets.Dropdown(options=[("VMC", "vmc"), ("fixed-node DMC", "dmc")], value=method,
                                       description="method", style={"description_width": "70px"},
                                       layout=widgets.Layout(width="290px"))
        self.element.observe(self._element_changed, names="value")
        self.method.observe(self._method_changed, names="value")
        self._method_changed()
        header = widgets.HTML("<b>Atoms He, Be, Ne — VMC and fixed-node DMC</b> "
                              "<span style='color:#666'>(lengths in bohr, energies in hartree)</span>")
        controls = widgets.HBox([
            widgets.VBox([self.element, self.alpha, self.beta, self.jastrow]),
            widgets.VBox([self.method, self.sampler, self.dt, self.walkers, self.steps, self.seed]),
        ])
        self.widget.children = (header, controls) + tuple(self.widget.children[2:])

    def _element_changed(self, change) -> None:
        _, alpha0, beta0 = ELEMENTS[change["new"]]
        self.alpha.value, self.beta.value = alpha0, beta0
        self.dt.value = DEFAULT_DT[change["new"]]

    def _method_changed(self, _change=None) -> None:
        dmc = self.method.value == "dmc"
        if dmc:
            self.sampler.value = "drift"  # DMC moves walkers by drift–diffusion
        self.sampler.disabled = dmc
        self.dt.description = "Δτ" if dmc else "Δt"

    def config(self) -> RunConfig:
        """The :class:`RunConfig` the controls describe (raises ``ValueError`` for bad input)."""
        return RunConfig(system="atom", method=self.method.value,
                         params={"element": self.element.value, "alpha": self.alpha.value, "beta": self.beta.value,
                                 "jastrow": bool(self.jastrow.value)},
                         sampler=self.sampler.value, dt=self.dt.value, walkers=self.walkers.value,
                         steps=self.steps.value, seed=self.seed.value)
