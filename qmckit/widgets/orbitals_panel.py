"""An ipywidgets panel for study 003: B-spline orbital evaluation cost and the updating schemes.

Two buttons, two questions:

* **Time**: one configuration's N × L orbital values on this CPU (study 003's Eq. 6 kernel,
  :func:`qmckit.systems.bspline_orbitals.time_evaluation`) for a system size of its Table II (or a small
  one), a grid and a precision, one thread or all: ms per MC step and GB/s of coefficients.
* **Run scheme**: a chain of one updating scheme (:mod:`qmckit.studies.updating_schemes`: particle by
  particle, Q.S. in its two readings, configuration by configuration) on jellium at r_s = 2 with a closed
  shell of plane waves, against the exact energy and structure factor: the bias in hartree per Si cell and
  S(G) per shell against 1 − c(G)/n.

No numerics live here.

    >>> from qmckit.widgets import OrbitalsPanel
    >>> panel = OrbitalsPanel()
    >>> panel                      # in Jupyter
    >>> panel.time_sync(); panel.run_sync()   # or press the buttons
"""
from __future__ import annotations

import warnings

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from ..stats import estimate, format_value_error
from ..studies import updating_schemes as us
from ..systems import bspline_orbitals as bo
from .fast import fast_mode
from .plots import figure_png, png_output

SMALL = {"system": "small", "electrons": 64, "orbitals": 16, "grid": (20, 20, 20)}
SIZES = {"small (N = 64, L = 16)": SMALL} | {
    f"{name} (N = {s['electrons']}, L = {s['orbitals']})": s for name, s in bo.TABLE_II_SIZES.items()}
SHELLS = (7, 19, 27, 33)  # closed shells per spin offered for the scheme runs


class OrbitalsPanel(widgets.VBox):
    """Controls for study 003's kernel timing and updating-scheme bias (see the module docstring)."""

    def __init__(self, size: str | None = None, grid: int | None = None, precision: str = "f32",
                 scheme: str = "qs_literal", n_per_spin: int | None = None, sweeps: int | None = None):
        fast = fast_mode()
        self.size = widgets.Dropdown(options=list(SIZES), value=size or next(iter(SIZES)), description="system")
        self.grid = widgets.IntSlider(value=grid or SIZES[self.size.value]["grid"][0], min=8, max=64,
                                      description="grid n³")
        self.precision = widgets.ToggleButtons(options=[("float32", "f32"), ("float64", "f64")], value=precision,
                                               description="precision")
        self.threads = widgets.ToggleButtons(options=[("one core", 1), ("all cores", None)], value=1,
                                             description="CPU")
        self.scheme = widgets.Dropdown(options=[(us.SCHEME_LABELS[s], s) for s in us.SCHEMES], value=scheme,
                                       description="scheme")
        self.n_per_spin = widgets.Dropdown(options=list(SHELLS), value=n_per_spin or (7 if fast else 19),
                                           description="n per spin")
        self.step_factor = widgets.FloatLogSlider(value=1.0, base=2, min=-3, max=1, step=1,
                                                  description="δ / δ_PbP")
        self.sweeps = widgets.IntText(value=sweeps or (2000 if fast else 20000), description="sweeps")
        self.time_button = widgets.Button(description="Time", button_style="primary")
        self.run_button = widgets.Button(description="Run scheme", button_style="primary")
        self.status = widgets.HTML()
        self.plot = widgets.Output()
        self.size.observe(lambda change: setattr(self.grid, "value", SIZES[change["new"]]["grid"][0]), "value")
        self.time_button.on_click(lambda _: self.time_sync())
        self.run_button.on_click(lambda _: self.run_sync())
        super().__init__([
            widgets.HBox([self.size, self.grid]), widgets.HBox([self.precision, self.threads, self.time_button]),
            widgets.HBox([self.scheme, self.n_per_spin]), widgets.HBox([self.step_factor, self.sweeps, self.run_button]),
            self.status, self.plot])

    def _error(self, err: Exception):
        self.status.value = f"<b>error:</b> {err}"

    def time_sync(self) -> dict | None:
        """Time one N × L evaluation with the current settings; returns the timing dict (None on bad input)."""
        s = SIZES[self.size.value]
        try:
            result = bo.time_evaluation(s["electrons"], s["orbitals"], (self.grid.value,) * 3,
                                        precision=self.precision.value, complex=True, repeats=3,
                                        threads=self.threads.value, values_only=True)
        except ValueError as err:
            self._error(err)
            return None
        self.status.value = (f"{s['system']}: N = {s['electrons']}, L = {s['orbitals']}, {self.grid.value}³ grid, "
                             f"{self.precision.value}, {result['threads']} thread(s): <b>{result['median_s'] * 1e3:.3g} ms</b> "
                             f"per MC step, {result['bytes_per_s'] / 1e9:.2f} GB/s of coefficients "
                             f"(study 003's i7-920 core: {_paper_cpu(s)})")
        return result

    def run_sync(self) -> dict | None:
        """One chain of the chosen scheme against the exact answer; returns {"run", "bias_per_cell", …}."""
        try:
            model = us.FreeElectronModel(n_per_spin=self.n_per_spin.value)
            if self.sweeps.value < 100:
                raise ValueError(f"sweeps must be at least 100, got {self.sweeps.value}")
            scheme = self.scheme.value
            base = us.tune_step(model, "cbc" if scheme == "cbc" else "pbp", sweeps=100)
            run = us.run_scheme(model, scheme, base * self.step_factor.value, sweeps=self.sweeps.value, seed=11)
        except ValueError as err:
            self._error(err)
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # short series: reblocking warns, the error is still given
            energy = estimate(run.energy)
        exact = model.exact_energy_per_electron()
        bias = (energy.mean - exact) * model.electrons_per_cell
        sigma = energy.error * model.electrons_per_cell
        self.status.value = (f"{us.SCHEME_LABELS[scheme]}, N = {model.n_electrons}, δ = {run.step:.3f} bohr, acceptance "
                             f"{run.acceptance:.2f}: E/N = {format_value_error(energy.mean, energy.error)} Ha "
                             f"(exact {exact:.6f}); bias <b>{bias:+.4f} ± {sigma:.4f} Ha per Si cell</b> "
                             f"(criterion 1e-3)")
        fig = Figure(figsize=(6.5, 3.2))
        fig.subplots_adjust(left=0.12, right=0.97, bottom=0.16, top=0.9)
        ax = fig.subplots()
        ax.plot(model.shell_g, model.exact_shell_s, "k-", lw=1, label="exact")
        ax.errorbar(model.shell_g, run.s.mean(axis=0), yerr=run.s.std(axis=0) / np.sqrt(len(run.s)), fmt="o", ms=4,
                    label=us.SCHEME_LABELS[scheme])
        ax.set(xlabel="|G| (bohr⁻¹)", ylabel="S(G)", title="structure factor per shell")
        ax.legend(fontsize=7)
        self.plot.outputs = (png_output(figure_png(fig)),)
        return {"run": run, "energy": energy, "exact": exact, "bias_per_cell": bias, "bias_per_cell_error": sigma}


def _paper_cpu(size: dict) -> str:
    from ..studies.tio2_orbitals import PAPER

    name = next((k for k, v in bo.TABLE_II_SIZES.items() if v is size), None)
    return f"{PAPER[name]['cpu_ms']} ms at {size['grid'][0]}³" if name in PAPER else "–"
