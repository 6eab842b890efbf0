"""A panel for any registered continuum system, its controls generated from the parameter metadata.

:class:`SystemPanel` turns a system's declared parameters (:mod:`qmckit.systems.protocol`) into
controls (:func:`~qmckit.widgets.controls.parameter_controls`), adds the run settings (method,
sampler, Δt, walkers, sweeps or steps, seed), and drives the run the controls describe. No physics and no
parameter list live here: a new system module appears in this panel, as on the command line,
without an edit. Study panels (:class:`~qmckit.widgets.BosonPanel`, ``AtomPanel``, …) are subclasses
that pick which parameters to show and add their own plots.

    >>> from qmckit.widgets import SystemPanel
    >>> panel = SystemPanel("qdot", n=6, omega=1.0, method="dmc", dt=0.01)
    >>> panel            # in Jupyter; or panel.run_sync()

Threading
---------
*Run* clears the last figure, says "starting…", and starts the run's ``blocks`` generator in a background
``threading.Thread`` (:class:`~qmckit.widgets.panel_base.RunControls`). The run reports every piece of its
work (:mod:`qmckit.methods.run`: chunks of equilibration sweeps, DMC steps, pieces of a block of about
0.1 s); the thread moves the progress bar through the phases (equilibrating, DMC equilibration, blocks) at
most every 0.1 s, calls the hooks registered with :meth:`SystemPanel.on_block` after every block, and (at
most every ``redraw_interval`` seconds, and always at the end) re-renders the figure into an
``ipywidgets.Output`` by replacing its ``outputs`` (a PNG drawn with the Agg canvas, no pyplot), which is
safe from a thread. *Stop* sets a ``threading.Event`` that the run sees after the current piece, so it
takes effect within a fraction of a second in any phase, the equilibration included. The run is left
paused where it was; *Run* then continues it if the controls still describe it (the same numbers as an
uninterrupted run), or starts a new one if any control changed.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import asdict

import ipywidgets as widgets

from ..runs import RunConfig, make_run
from ..stats import estimate, format_value_error
from ..systems import SYSTEMS
from .controls import control_values, int_control, parameter_controls
from .fast import fast_mode
from .labels import html_text, unit_text
from .panel_base import PHASE_LABELS, RunControls, compile_note, row, style
from .plots import figure_png, png_output, run_figure

FAST_SIZES = {"walkers": 40, "steps": 200}
FULL_SIZES = {"walkers": 200, "steps": 2000}
METHOD_LABELS = {"vmc": "VMC", "dmc": "DMC"}
# what one measured record is called, per method: a VMC sweep moves every particle once; a DMC step is a
# sweep plus branching (controls, status lines and plots say the same)
RECORD_NAMES = {"vmc": ("sweep", "sweeps"), "dmc": ("DMC step", "DMC steps")}


class SystemPanel(RunControls):
    """Controls, Run/Stop, progress bar, status line and live plots for a run of ``system``.

    ``system`` is a registered name (``qmckit.systems.SYSTEMS``) or a system instance, such as a student's
    :func:`qmckit.UserSystem`, whose values the controls start from. Further keyword arguments that name
    parameters of the system set their initial values; ``names`` limits the parameters shown (the
    others keep their defaults). ``methods`` are the methods offered (``"vmc"``, ``"dmc"``; DMC is
    fixed-node for systems with that capability). ``walkers`` and ``steps`` default to 40 × 200 in fast
    mode (``QMCKIT_FAST=1``) and 200 × 2000 otherwise.

    Attributes: one control per shown parameter, as ``panel.controls[name]`` and as ``panel.<name>``;
    ``method, sampler, dt, walkers, steps, seed`` (``steps`` is labelled "sweeps" for VMC and "steps"
    for DMC); the buttons ``run_button, stop_button``; ``progress`` (FloatProgress: during the
    equilibration the sweeps (DMC: steps) done, described "equilibrating" / "DMC equil."; then the blocks
    done with the fraction of the current one, described "blocks"); ``status`` (HTML, one line of plain
    text that wraps); ``plot`` (Output); ``widget`` (the whole VBox); ``last_run`` (the last run, or None);
    ``thread`` (the last background thread, or None); ``error`` (the exception of the last failed attempt,
    or None). See :mod:`qmckit.widgets.panel_base` for what every panel shows while it runs.
    """

    def __init__(self, system: str = "bec", *, names=None, methods=("vmc", "dmc"), method: str | None = None,
                 sampler: str = "drift", dt: float = 0.05, walkers: int | None = None, steps: int | None = None,
                 seed: int = 1, redraw_interval: float = 0.5, title: str | None = None, **params):
        if not isinstance(system, str):  # an instance (a student's qmckit.UserSystem): its class, its values
            from ..systems import adopt

            params = {**system.params.as_dict(), **params}
            system = adopt(system)
        if system not in SYSTEMS:
            raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, got {system!r}")
        self.system_class = SYSTEMS[system]
        self.system_name = system
        sizes = FAST_SIZES if fast_mode() else FULL_SIZES
        self.redraw_interval = float(redraw_interval)

        self.controls = parameter_controls(self.system_class, params, names)
        for name, control in self.controls.items():
            setattr(self, name, control)
        methods = tuple(methods)
        self.method = widgets.Dropdown(options=[(METHOD_LABELS.get(m, m), m) for m in methods],
                                       value=method or methods[0], description="method", style=style("method"),
                                       layout=widgets.Layout(width="210px"))
        self.sampler = widgets.Dropdown(options=[("drift (importance sampling)", "drift"),
                                                 ("brute (uniform moves)", "brute")],
                                        value=sampler, description="sampler", style=style("sampler"),
                                        layout=widgets.Layout(width="290px", max_width="100%"),
                                        tooltip="drift: Fokker–Planck importance sampling; brute: uniform "
                                                "moves with the step tuned during equilibration")
        self._time_unit = unit_text(self.system_class.time_unit)
        self.dt = widgets.FloatText(value=dt, description="Δt", style=style("Δt"),
                                    layout=widgets.Layout(width="210px"),
                                    tooltip=f"time step of the drift sampler / DMC ({self._time_unit})")
        self.walkers = int_control("walkers", walkers or sizes["walkers"], "number of walkers (DMC: population "
                                   "target)", 1, 10**6)
        self.steps = int_control("sweeps", steps or sizes["steps"], "measured sweeps per walker", 1, 10**8)
        self.seed = int_control("seed", seed, "random seed (≥ 0): same inputs, same numbers", 0, 2**62)
        self.sampler.observe(self._sampler_changed, names="value")
        self.method.observe(self._method_changed, names="value")
        self._method_changed()

        self._build_run_controls(
            ready="ready: set the parameters and press Run",
            run_tooltip="start, or continue a stopped run with the same settings",
            stop_tooltip="stop within a fraction of a second, in any phase (Run continues the same run)",
            progress_tooltip="equilibration, then blocks of measured sweeps or steps")
        self.run_button.on_click(lambda _button: self.run())
        self.profile_button = widgets.ToggleButton(
            value=False, description="Profile", layout=widgets.Layout(width="90px"),
            tooltip="where the run's time went, by phase, and what a faster sampler would buy (qmckit.perf.report)")
        self.profile_button.observe(self._profile_toggled, names="value")

        units = ", ".join(f"{what} in {html_text(unit)}" for what, unit in (
            ("lengths", self.system_class.length_unit), ("energies", self.system_class.energy_unit),
            ("time", self.system_class.time_unit)) if unit)
        header = widgets.HTML(f"<b>{html_text(title or self.system_class.title)}</b>"
                              + (f" <span style='color:#666'>({units})</span>" if units else ""))
        run_controls = ([self.method] if len(methods) > 1 else []) + [self.sampler, self.dt, self.walkers,
                                                                       self.steps, self.seed]
        controls = row([widgets.VBox(list(self.controls.values())), widgets.VBox(run_controls)])
        buttons = row([self.run_button, self.stop_button, self.progress, self.profile_button])
        self.widget = self._root([header, controls, buttons, self.status, self.plot])

        self.last_run = None
        self._hooks: list = []
        self._progress_hooks: list = []
        self._paused = None  # the run a Stop paused (at a piece or block boundary)
        self._last_draw = 0.0
        self._note = ""  # the compile note of the run in progress (its first run only)
        self._last_piece = None  # (phase, done, total) the run reported last

    # --- display ------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def _sampler_changed(self, _change=None):
        self.dt.disabled = self.sampler.value != "drift"

    def _method_changed(self, _change=None) -> None:
        dmc = self.method.value == "dmc"
        if dmc:
            self.sampler.value = "drift"  # DMC moves walkers by drift–diffusion
        self.sampler.disabled = dmc
        self.dt.description = "Δτ" if dmc else "Δt"
        # DMC counts steps, VMC sweeps: the control says which (panel.steps either way)
        self.steps.description = "steps" if dmc else "sweeps"
        self.steps.tooltip = "measured DMC steps (after the equilibration)" if dmc else "measured sweeps per walker"

    # --- public API ---------------------------------------------------------------------------
    def parameter_values(self) -> dict:
        """The system parameters the controls hold, by name."""
        return control_values(self.controls)

    def config(self) -> RunConfig:
        """The :class:`RunConfig` the controls describe (raises ``ValueError`` for bad input)."""
        return RunConfig(system=self.system_name, method=self.method.value, params=self.parameter_values(),
                         sampler=self.sampler.value, dt=self.dt.value, walkers=self.walkers.value,
                         steps=self.steps.value, seed=self.seed.value)

    def on_block(self, callback) -> None:
        """Call ``callback(done, total)`` after every block, in the thread that runs it."""
        self._hooks.append(callback)

    def on_progress(self, callback) -> None:
        """Call ``callback(phase, done, total)`` after every piece of work (``"equilibration"`` sweeps,
        ``"DMC equilibration"`` steps, ``"block"``: sweeps or steps of the current block), in the thread
        that runs it; often (every DMC step), so keep it cheap. A Stop set there is seen at once."""
        self._progress_hooks.append(callback)

    def run(self, blocking: bool = False):
        """Start (or continue) the run the controls describe.

        ``blocking=False`` (the Run button): in a background thread, returned (None if nothing
        started). ``blocking=True``: in the calling thread, returning ``last_run.result()`` (None
        if the input was bad or the run was stopped). Bad input never raises: its one-line
        message goes to the status line (and ``self.error``), and the plot is cleared.
        """
        if self._refuse_if_running():
            return None
        run = self._prepare()
        if run is None:
            return None
        if blocking:
            if not self._launch(self._drive, (run, True), blocking=True):
                return None
            with warnings.catch_warnings():  # a short run's warning is already in the status line
                warnings.simplefilter("ignore", RuntimeWarning)
                return run.result()
        return self._launch(self._drive, (run,))

    def run_sync(self):
        """``run(blocking=True)``: run in the calling thread (tests, notebook fast mode)."""
        return self.run(blocking=True)

    def figure(self):
        """A fresh matplotlib ``Figure`` of the last run (energy trace and reblocking plot)."""
        return self._figure(self.last_run)

    # --- internals ----------------------------------------------------------------------------
    def _make_run(self, config):
        return make_run(config)

    def _prepare(self):
        self.error = None
        paused = self._paused
        if paused is None:
            self._starting()  # before the config: building a system may take a while (a molecule's RHF)
        try:
            config = self.config()
            if paused is not None and paused is self.last_run and asdict(paused.config) == asdict(config):
                run = paused  # a stopped run with unchanged settings: continue it
                self._say(f"continuing {self._where(run)}…")
            else:
                if paused is not None:
                    self._starting()
                run = self._make_run(config)
                self._last_piece = None
        except ValueError as exc:
            self._paused = None  # the input changed: the paused run can no longer be continued
            self._fail(exc)
            return None
        self.last_run = run
        return run

    def _where(self, run) -> str:
        """Where a paused run stands, in words."""
        if not run.equilibrated:
            return "the equilibration"
        return f"after block {run.blocks_done}/{run.config.n_blocks}"

    @staticmethod
    def _method(run) -> str:
        return getattr(run, "method", "vmc") or "vmc"

    def _record_names(self, run) -> tuple:
        return RECORD_NAMES.get(self._method(run), RECORD_NAMES["vmc"])

    def _drive(self, run, reraise: bool = False) -> bool:
        """Run the rest of ``run`` (busy: see :meth:`RunControls._launch`); True if it finished."""
        self._paused = None
        self._last_draw = 0.0
        self._note = compile_note(type(run.system)) if not run.equilibrated else ""
        n_blocks = run.config.n_blocks
        try:
            if run.blocks_done:  # continuing: show what is done while the next block goes
                self._redraw(run)
            if not run.equilibrated:  # a new run, or one paused in its equilibration: where it stands
                self._on_piece(run, *(self._last_piece or ("equilibration", 0, run.config.equilibration)),
                               force=True)
            else:
                self._set_progress("blocks", run.blocks_done, n_blocks, style="info")
            for done, total in run.blocks(stop=self._stop, progress=lambda *piece: self._on_piece(run, *piece)):
                self._set_progress("blocks", done, total)
                self._note = ""
                for hook in list(self._hooks):
                    hook(done, total)
                now = time.perf_counter()
                if done < total and now - self._last_draw >= self.redraw_interval:
                    self._last_draw = now
                    self._say(self._summary(run, prefix=f"block {done}/{total}"))
                    self._redraw(run)
            finished = run.blocks_done >= n_blocks
            if finished:
                self._set_progress("done", n_blocks, n_blocks, style="success")
                self._say(self._summary(run, prefix="done", elapsed=run.wall_s))
            else:
                self._paused = run  # paused cleanly: Run may continue it with the same numbers
                if run.equilibrated:
                    self._set_progress("stopped", run.blocks_done, n_blocks, style="warning")
                    part = (f" (block {run.blocks_done + 1} part-way)" if run.paused_part_way else "")
                    prefix = f"stopped after block {run.blocks_done}/{n_blocks}{part}"
                else:
                    phase, done, total = self._last_piece or ("equilibration", 0, run.config.equilibration)
                    self._set_progress("stopped", done, total, style="warning")
                    unit = "DMC steps" if phase == "DMC equilibration" else "sweeps"
                    prefix = f"stopped during the {phase} ({done}/{total} {unit})"
                self._say(self._summary(run, prefix=prefix,
                                        suffix="Run continues it (change a setting to start afresh)"))
            if run.blocks_done:
                self._redraw(run)
        except Exception as exc:  # noqa: BLE001 - shown in the status line instead of a traceback
            self._fail(exc)
            if reraise and not isinstance(exc, ValueError):
                raise
            return False
        return finished

    def _on_piece(self, run, phase: str, done: int, total: int, force: bool = False) -> None:
        """Progress of one piece of the run (throttled: a DMC run reports every step)."""
        self._last_piece = (phase, done, total)
        if not force:
            for hook in list(self._progress_hooks):
                hook(phase, done, total)
        if not self._progress_due(force):
            return
        if phase == "block":
            self._set_progress(PHASE_LABELS[phase], run.blocks_done + done / total, run.config.n_blocks)
            if not run.blocks_done:  # until the first block ends there is no estimate to show
                self._say(f"block 1/{run.config.n_blocks}: {done}/{total} {self._record_names(run)[1]}…")
            return
        self._set_progress(PHASE_LABELS.get(phase, phase), done, total)
        unit = "DMC steps" if phase == "DMC equilibration" else "sweeps"
        self._say(f"{PHASE_LABELS.get(phase, phase)}: {done}/{total} {unit}{self._note}…")

    def _summary(self, run, prefix: str, elapsed: float | None = None, suffix: str = "") -> str:
        parts = [prefix]
        if run.blocks_done:
            series = run.energy_series()
            caught = []
            if series.size >= 2:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", RuntimeWarning)
                    est = estimate(series)
                parts.append(f"{unit_text(self._energy_label(run))} = {format_value_error(est.mean, est.error)} "
                             f"{unit_text(run.system.energy_unit)}")
                if est.error > 0 and math.isfinite(est.tau):
                    parts.append(f"τ = {est.tau:.1f}")
            parts.append(f"{series.size} {self._record_names(run)[1]} × {self._population(run)}")
            parts.append(f"acceptance {run.acceptance:.3f}")
            if caught:
                parts.append("few blocks: the error may be underestimated")
        if elapsed is not None:
            parts.append(f"{elapsed:.1f} s")
        if suffix:
            parts.append(suffix)
        return " · ".join(parts)

    @staticmethod
    def _energy_label(run) -> str:
        return "E/N" if run.system.energy_key == "energy_per_particle" else "E"

    @staticmethod
    def _energy_words(run) -> str:
        """What the energy is, for titles: an atom's or molecule's E is the total energy, not E/N."""
        return "energy per particle" if run.system.energy_key == "energy_per_particle" else "total energy"

    @staticmethod
    def _population(run) -> str:
        return f"{run.config.walkers} walkers"

    def _figure(self, run):
        if run is None:
            return run_figure([], unit=self.system_class.energy_unit, label="E")
        return run_figure(run.energy_series(), unit=run.system.energy_unit, label=self._energy_label(run),
                          xlabel=self._record_names(run)[0], what=self._energy_words(run))

    def _profile_toggled(self, _change=None) -> None:
        """Show the Profile view or the energy plot of the last run (a running run's next block redraws anyway)."""
        if self.last_run is not None and self.last_run.blocks_done and not self.running:
            self._redraw(self.last_run)

    def _redraw(self, run) -> None:
        if self.profile_button.value:  # the Profile view: the run's phases and its Amdahl model
            from ..perf import report
            from ..perf.plots import profile_figure

            result = run.result()
            fig = profile_figure(result["profile"], report(result))
            self.plot.outputs = (png_output(figure_png(fig), text="<run profile and its Amdahl model>"),)
            return
        fig = self._figure(run)
        self.plot.outputs = (png_output(figure_png(fig), text="<energy trace and reblocking plot>"),)


__all__ = ["SystemPanel", "FAST_SIZES", "FULL_SIZES", "RECORD_NAMES"]
