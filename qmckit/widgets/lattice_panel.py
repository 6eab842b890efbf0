"""An ipywidgets panel for lattice VMC of the projected d-wave RVB state of the t–J model (study 000).

:class:`LatticePanel` is :class:`~qmckit.widgets.SystemPanel` for the system ``"lattice"`` (background
thread, ``threading.Event`` checked at block boundaries, progress bar, live plot drawn with the Agg
canvas): cluster kind and side L, hole doping x, exchange J, variational gap Δ and chemical potential μ
(controls from :class:`~qmckit.systems.lattice_rvb.LatticeParams`' metadata), Markov chains, measured
sweeps, seed and backend. It
shows the energy per site of every sweep (chain average) with its running mean and reblocking
plot, and, when the run ends, a result line "E/Nₛ = mean ± error" with the kinetic and exchange parts.

No physics lives here: the controls become a
:class:`~qmckit.methods.lattice_vmc.LatticeRunConfig` (which validates them: an even L for the
tilted cluster, a doping outside [0, 1), … are refused with a one-line ``ValueError`` that the panel
shows in its status line) and :class:`~qmckit.methods.lattice_vmc.LatticeRun` does the rest; the
conventions (Δ normalisation, the Γ ghost, N_e rounding) are those of
:mod:`qmckit.systems.lattice_rvb`.

    >>> from qmckit.widgets import LatticePanel
    >>> panel = LatticePanel(L=9, delta=1.5)   # study 000's Table 6.1 parameters by default
    >>> panel            # in Jupyter; or panel.run_sync()
"""
from __future__ import annotations

import html
import warnings

import ipywidgets as widgets

from ..methods.lattice_vmc import BACKENDS, LatticeRun, LatticeRunConfig
from ..stats import format_value_error
from .fast import fast_mode
from .panel_base import row, style
from .plots import run_figure
from .system_panel import SystemPanel

LATTICE_FAST_SIZES = {"chains": 8, "sweeps": 200}
LATTICE_FULL_SIZES = {"chains": 32, "sweeps": 2000}
_CONTINUUM_CONTROLS = ("sampler", "dt")  # run settings of continuum walkers, built by SystemPanel, not used here
_LABEL = "E/N_s"  # as the metadata write it: status lines show E/Nₛ, plots E/N with a subscript s


class LatticePanel(SystemPanel):
    """Controls, Run/Stop, progress bar, status line, result line and live plots for a lattice VMC run.

    Keyword arguments set the initial controls; the physics defaults are study 000's Table 6.1
    (tilted L = 5, x = 0.1, J = 0.3, Δ = 1.5, μ = 0; energies in units of t). ``chains`` × ``sweeps``
    default to 8 × 200 in fast mode (``QMCKIT_FAST=1``) and 32 × 2000 otherwise; a sweep is N_e
    proposals and the run first equilibrates max(50, sweeps/5) sweeps (the :class:`LatticeRunConfig`
    defaults).

    Attributes: the controls ``kind, L, doping, J, delta, mu, chains, sweeps, seed, backend``; the
    buttons ``run_button, stop_button``; ``progress`` (FloatProgress: "equilibrating", then "blocks");
    ``status`` (HTML line); ``result_line`` (HTML: the final estimate, empty until a run ends); ``plot`` (Output);
    ``widget`` (the whole VBox); ``last_run`` (the last :class:`LatticeRun`, or None); ``thread``;
    ``error`` (the exception of the last failed attempt, or None).
    """

    def __init__(self, *, L: int = 5, kind: str = "tilted", doping: float = 0.1, J: float = 0.3, delta: float = 1.5,
                 mu: float = 0.0, chains: int | None = None, sweeps: int | None = None, seed: int = 1,
                 backend: str = "cpu", redraw_interval: float = 0.5):
        sizes = LATTICE_FAST_SIZES if fast_mode() else LATTICE_FULL_SIZES
        super().__init__("lattice", names=("kind", "L", "doping", "J", "delta", "mu"), methods=("vmc",),
                         walkers=chains or sizes["chains"], steps=sweeps or sizes["sweeps"], seed=seed,
                         redraw_interval=redraw_interval, L=L, kind=kind, doping=doping, J=J, delta=delta, mu=mu)
        for name in _CONTINUUM_CONTROLS:
            delattr(self, name)
        self.chains = self.walkers
        self.chains.description, self.chains.tooltip = "chains", "Markov chains (study 000: 32)"
        self.sweeps = self.steps
        self.sweeps.description, self.sweeps.tooltip = "sweeps", "measured sweeps per chain (N_e proposals each)"
        self.backend = widgets.Dropdown(options=list(BACKENDS), value=backend if backend in BACKENDS else "cpu",
                                        description="backend", style=style("backend"),
                                        layout=widgets.Layout(width="210px"),
                                        tooltip="cpu (numba), cuda (a GPU), auto (cuda when there is one)")
        self.result_line = widgets.HTML(value="")  # no width: 100% plus the widget margins overflowed
        header = widgets.HTML("<b>t–J model: projected d-wave RVB state — lattice VMC</b> "
                              "<span style='color:#666'>(study 000; energies per site in units of t)</span>")
        controls = row([
            widgets.VBox([self.kind, self.L, self.doping, self.J]),
            widgets.VBox([self.delta, self.mu, self.backend]),
            widgets.VBox([self.chains, self.sweeps, self.seed]),
        ])
        buttons, status, plot = self.widget.children[2:]
        self.widget.children = (header, controls, buttons, status, self.result_line, plot)

    def _sampler_changed(self, _change=None):  # no sampler control here
        pass

    def _method_changed(self, _change=None):  # lattice chains: VMC only
        pass

    # --- public API ---------------------------------------------------------------------------
    def config(self) -> LatticeRunConfig:
        """The :class:`LatticeRunConfig` the controls describe (raises ``ValueError`` for bad input)."""
        return LatticeRunConfig(params=self.parameter_values(), chains=self.chains.value, steps=self.sweeps.value,
                                seed=self.seed.value, backend=self.backend.value)

    # --- internals ----------------------------------------------------------------------------
    def _make_run(self, config: LatticeRunConfig) -> LatticeRun:
        return LatticeRun(config)

    def _prepare(self) -> LatticeRun | None:
        self.result_line.value = ""  # the last run's result line goes with its figure
        return super()._prepare()

    def _drive(self, run: LatticeRun, reraise: bool = False) -> bool:
        finished = super()._drive(run, reraise)
        if finished:
            self.result_line.value = self._result_html(run)
        return finished

    @staticmethod
    def _energy_label(run) -> str:
        return _LABEL

    @staticmethod
    def _population(run) -> str:
        return f"{run.config.chains} chains"

    def _result_html(self, run: LatticeRun) -> str:
        with warnings.catch_warnings():  # a short run's warning is already in the status line
            warnings.simplefilter("ignore", RuntimeWarning)
            result = run.result()
        return format_result(result)

    def _figure(self, run):
        """The energy per site of every sweep (chain average) and its reblocking."""
        series = run.energy_series() if run is not None else []
        return run_figure(series, unit=self.system_class.energy_unit, label=_LABEL, what="energy per site")


def format_result(result: dict) -> str:
    """The panel's result line for a :meth:`LatticeRun.result` dictionary (HTML, one line)."""
    est, unit = result["estimates"], html.escape(result["energy_unit"])

    def value(key):
        return f"{est[key]['mean']:.6f} ± {est[key]['error']:.6f}"

    ghost = " (Γ ghost)" if result["gamma_ghost"] else ""
    return (f"<b>E/N<sub>s</sub> = {value('energy_per_site')} {unit}</b> "
            f"({format_value_error(est['energy_per_site']['mean'], est['energy_per_site']['error'])}) · "
            f"kinetic {value('kinetic_per_site')} · exchange {value('exchange_per_site')} · "
            f"N<sub>s</sub> = {result['n_sites']}, N<sub>e</sub> = {result['n_electrons']}{ghost} · "
            f"acceptance {result['acceptance']:.3f}")
