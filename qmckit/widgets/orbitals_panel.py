"""An ipywidgets panel for study 003: B-spline orbital evaluation cost and the updating schemes.

Two buttons, two questions:

* **Time**: one configuration's N × L orbital values on this CPU (study 003's Eq. 6 kernel,
  :func:`qmckit.systems.bspline_orbitals.time_evaluation`) for a system size of its Table II (or a small
  one), a grid and a precision, one thread or all: ms per MC step and GB/s of coefficients. A few seconds at
  most, in one call: busy, but Stop stays off.
* **Run scheme**: a chain of one updating scheme (:mod:`qmckit.studies.updating_schemes`: particle by
  particle, Q.S. in its two readings, configuration by configuration) on jellium at r_s = 2 with a closed
  shell of plane waves, against the exact energy and structure factor: the bias in hartree per Si cell and
  S(G) per shell against 1 − c(G)/n. The chain runs in the background in pieces of whole blocks of
  :class:`~qmckit.studies.updating_schemes.Chain` (each block draws its random numbers and refreshes the
  inverses, so the pieces give the numbers of :func:`~qmckit.studies.updating_schemes.run_scheme` in one
  call); the progress bar follows the equilibration and the measured sweeps, and Stop ends the chain after
  the current block (a fraction of a second; the next Run scheme starts afresh).

No numerics live here.

    >>> from qmckit.widgets import OrbitalsPanel
    >>> panel = OrbitalsPanel()
    >>> panel                      # in Jupyter
    >>> panel.time_sync(); panel.run_sync()   # or press the buttons
"""
from __future__ import annotations

import time
import warnings

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from ..stats import estimate, format_value_error
from ..studies import updating_schemes as us
from ..systems import bspline_orbitals as bo
from .fast import fast_mode
from .panel_base import RunControls, compile_note, row, style
from .plots import figure_png, png_output

SMALL = {"system": "small", "electrons": 64, "orbitals": 16, "grid": (20, 20, 20)}
SIZES = {"small (N = 64, L = 16)": SMALL} | {
    f"{name} (N = {s['electrons']}, L = {s['orbitals']})": s for name, s in bo.TABLE_II_SIZES.items()}
SHELLS = (7, 19, 27, 33)  # closed shells per spin offered for the scheme runs
# the chain of a scheme run: run_scheme's equilibration, measurement interval and block, and the panel's seed
EQUILIBRATION, MEASURE_EVERY, BLOCK, SEED = 500, 2, 200, 11


class OrbitalsPanel(RunControls, widgets.VBox):
    """Controls for study 003's kernel timing and updating-scheme bias (see the module docstring).

    Attributes: the controls ``size, grid, precision, threads, scheme, n_per_spin, step_factor, sweeps``;
    the buttons ``time_button`` ("Time"), ``run_button`` ("Run scheme"), ``stop_button`` ("Stop");
    ``progress`` (FloatProgress: "tuning δ", "equilibrating", "sweeps", or "timing"); ``status`` (HTML
    line); ``plot`` (Output); ``thread``; ``error``. The panel is itself the widget (a VBox).
    """

    def __init__(self, size: str | None = None, grid: int | None = None, precision: str = "f32",
                 scheme: str = "qs_literal", n_per_spin: int | None = None, sweeps: int | None = None):
        fast = fast_mode()
        self.size = widgets.Dropdown(options=list(SIZES), value=size or next(iter(SIZES)), description="system",
                                     style=style("system"), layout=widgets.Layout(width="330px", max_width="100%"))
        self.grid = widgets.IntSlider(value=grid or SIZES[self.size.value]["grid"][0], min=8, max=64,
                                      description="grid n³", style=style("grid n³"))
        self.precision = widgets.ToggleButtons(options=[("float32", "f32"), ("float64", "f64")], value=precision,
                                               description="precision", style=style("precision"))
        self.threads = widgets.ToggleButtons(options=[("one core", 1), ("all cores", None)], value=1,
                                             description="CPU", style=style("CPU"))
        # the scheme names are long: as wide as they need, never wider than the notebook
        self.scheme = widgets.Dropdown(options=[(us.SCHEME_LABELS[s], s) for s in us.SCHEMES], value=scheme,
                                       description="scheme", style=style("scheme"),
                                       layout=widgets.Layout(width="520px", max_width="100%"))
        self.n_per_spin = widgets.Dropdown(options=list(SHELLS), value=n_per_spin or (7 if fast else 19),
                                           description="n per spin", style=style("n per spin"),
                                           layout=widgets.Layout(width="200px"))
        self.step_factor = widgets.FloatLogSlider(value=1.0, base=2, min=-3, max=1, step=1,
                                                  description="δ / δ<sub>PbP</sub>", description_allow_html=True,
                                                  style=style("δ / δPbP"),
                                                  tooltip="the step as a multiple of the particle-by-particle one")
        self.sweeps = widgets.IntText(value=sweeps or (2000 if fast else 20000), description="sweeps",
                                      style=style("sweeps"), layout=widgets.Layout(width="210px"))
        self.time_button = widgets.Button(description="Time", button_style="primary", icon="clock-o",
                                          tooltip="time one N × L orbital evaluation (a few seconds)")
        self.time_button.add_class("qmckit-time")
        self._build_run_controls(ready="ready: press Time or Run scheme", run_description="Run scheme",
                                 run_tooltip="a chain of the scheme against the exact answer (a background thread)",
                                 stop_tooltip="stop the chain after the current block (the next run starts afresh)",
                                 progress_tooltip="equilibration, then the measured sweeps of the chain")
        self._busy_buttons = [self.run_button, self.time_button]
        self.size.observe(lambda change: setattr(self.grid, "value", SIZES[change["new"]]["grid"][0]), "value")
        self.time_button.on_click(lambda _: self.time())
        self.run_button.on_click(lambda _: self.run())
        super().__init__([
            row([self.size, self.grid]), row([self.precision, self.threads, self.time_button]),
            row([self.scheme, self.n_per_spin]), row([self.step_factor, self.sweeps]),
            row([self.run_button, self.stop_button, self.progress]),
            self.status, self.plot], layout=widgets.Layout(max_width="100%", overflow="hidden"))
        self.add_class("qmckit-panel")
        self.widget = self  # the root that carries qmckit-busy

    # --- timing -------------------------------------------------------------------------------
    def time(self, blocking: bool = False):
        """Time one N × L evaluation with the current settings: in a background thread (the Time button;
        returned) or, ``blocking``, here (its timing dict, None on bad input)."""
        if self._refuse_if_running():
            return None
        self.error = None
        self._starting()
        self._set_progress("timing", 0, 1, style="info")
        return self._launch(self._time, blocking=blocking, stoppable=False)

    def time_sync(self) -> dict | None:
        """``time(blocking=True)``: the timing dict (None on bad input)."""
        return self.time(blocking=True)

    def _time(self) -> dict | None:
        s = SIZES[self.size.value]
        self._say(f"timing {s['system']} on a {self.grid.value}³ grid{compile_note('bspline')}…")
        try:
            result = bo.time_evaluation(s["electrons"], s["orbitals"], (self.grid.value,) * 3,
                                        precision=self.precision.value, complex=True, repeats=3,
                                        threads=self.threads.value, values_only=True)
        except Exception as exc:  # noqa: BLE001 - one line in the status, no traceback
            self._fail(exc)
            return None
        self._set_progress("done", 1, 1, style="success")
        self._say(f"{s['system']}: N = {s['electrons']}, L = {s['orbitals']}, {self.grid.value}³ grid, "
                  f"{self.precision.value}, {result['threads']} thread(s): {result['median_s'] * 1e3:.3g} ms "
                  f"per MC step, {result['bytes_per_s'] / 1e9:.2f} GB/s of coefficients "
                  f"(study 003's i7-920 core: {_paper_cpu(s)})")
        return result

    # --- scheme runs --------------------------------------------------------------------------
    def run(self, blocking: bool = False):
        """One chain of the chosen scheme against the exact answer: in a background thread (the Run scheme
        button; returned) or, ``blocking``, here (``{"run", "bias_per_cell", …}``; None on bad input or Stop).
        Bad input gives one line in the status and clears the plot."""
        if self._refuse_if_running():
            return None
        self.error = None
        self._starting()
        try:
            if not isinstance(self.sweeps.value, int) or self.sweeps.value < 100:
                raise ValueError(f"sweeps must be at least 100, got {self.sweeps.value}")
            model = us.FreeElectronModel(n_per_spin=self.n_per_spin.value)
        except ValueError as exc:
            self._fail(exc)
            return None
        return self._launch(self._run, (model, self.scheme.value, self.step_factor.value, self.sweeps.value),
                            blocking=blocking)

    def run_sync(self) -> dict | None:
        """``run(blocking=True)``: ``{"run", "energy", "exact", "bias_per_cell", "bias_per_cell_error"}``."""
        return self.run(blocking=True)

    def _run(self, model, scheme: str, factor: float, sweeps: int) -> dict | None:
        try:
            self._set_progress("tuning δ", 0, 1, style="info")
            self._say(f"tuning the step of {us.SCHEME_LABELS[scheme]}{compile_note('updating_schemes')}…")
            base = us.tune_step(model, "cbc" if scheme == "cbc" else "pbp", sweeps=100)
            run = self._chain(model, scheme, base * factor, sweeps)
            if run is None:
                return None
        except Exception as exc:  # noqa: BLE001 - one line in the status, no traceback
            self._fail(exc)
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # short series: reblocking warns, the error is still given
            energy = estimate(run.energy)
        exact = model.exact_energy_per_electron()
        bias = (energy.mean - exact) * model.electrons_per_cell
        sigma = energy.error * model.electrons_per_cell
        self._set_progress("done", sweeps, sweeps, style="success")
        self._say(f"done · {us.SCHEME_LABELS[scheme]}, N = {model.n_electrons}, δ = {run.step:.3f} bohr, acceptance "
                  f"{run.acceptance:.2f}: E/N = {format_value_error(energy.mean, energy.error)} Ha "
                  f"(exact {exact:.6f}); bias {bias:+.4f} ± {sigma:.4f} Ha per Si cell (criterion 1e-3) "
                  f"· {run.wall_s:.1f} s")
        fig = Figure(figsize=(6.5, 3.2))
        fig.subplots_adjust(left=0.12, right=0.97, bottom=0.16, top=0.9)
        ax = fig.subplots()
        ax.plot(model.shell_g, model.exact_shell_s, "k-", lw=1, label="exact")
        ax.errorbar(model.shell_g, run.s.mean(axis=0), yerr=run.s.std(axis=0) / np.sqrt(len(run.s)), fmt="o", ms=4,
                    label=us.SCHEME_LABELS[scheme])
        ax.set(xlabel="|G| (bohr⁻¹)", ylabel="S(G)", title="structure factor per shell")
        ax.legend(fontsize=7)
        self.plot.outputs = (png_output(figure_png(fig), text="<structure factor per shell>"),)
        return {"run": run, "energy": energy, "exact": exact, "bias_per_cell": bias, "bias_per_cell_error": sigma}

    def _chain(self, model, scheme: str, step: float, sweeps: int):
        """:func:`~qmckit.studies.updating_schemes.run_scheme` (its equilibration, measurement interval and
        block) in pieces of whole blocks, so that the progress bar moves and Stop is seen after every block;
        the same numbers as one call. None if stopped."""
        start = time.perf_counter()
        chain = us.Chain(model, scheme, step, seed=SEED, block=BLOCK)
        for phase, total, every in (("equilibrating", EQUILIBRATION, 0), ("sweeps", sweeps, MEASURE_EVERY)):
            done, energies, shells = 0, [], []
            while done < total:
                if self._stop.is_set():
                    self._set_progress("stopped", done, total, style="warning")
                    self._say(f"stopped while {'equilibrating' if every == 0 else 'measuring'} "
                              f"({done}/{total} sweeps) · Run scheme starts afresh")
                    return None
                piece = min(BLOCK, total - done)
                e, s = chain.advance(piece, every)
                energies.append(e)
                shells.append(s)
                done += piece
                if self._progress_due(done == total):
                    self._set_progress(phase, done, total)
                    self._say(f"{us.SCHEME_LABELS[scheme]}: {'equilibrating' if every == 0 else 'measuring'} "
                              f"{done}/{total} sweeps…")
            if every == 0:
                chain.counts[:] = 0  # the acceptance counts the measured sweeps only
        e, s = np.concatenate(energies), np.concatenate(shells)
        n = model.n_electrons
        return us.SchemeRun(scheme, float(step), SEED, (e[:, 0] + e[:, 1]) / n, e[:, 1] / n, e[:, 0] / n, s,
                            chain.acceptance, time.perf_counter() - start, int(sweeps))


def _paper_cpu(size: dict) -> str:
    from ..studies.tio2_orbitals import PAPER

    name = next((k for k, v in bo.TABLE_II_SIZES.items() if v is size), None)
    return f"{PAPER[name]['cpu_ms']} ms at {size['grid'][0]}³" if name in PAPER else "–"
