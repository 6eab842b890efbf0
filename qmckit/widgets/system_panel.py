"""A panel for any registered continuum system, its controls generated from the parameter metadata.

:class:`SystemPanel` turns a system's declared parameters (:mod:`qmckit.systems.protocol`) into
controls (:func:`~qmckit.widgets.controls.parameter_controls`), adds the run settings (method,
sampler, Δt, walkers, steps, seed), and drives the run the controls describe. No physics and no
parameter list live here: a new system module appears in this panel, as on the command line,
without an edit. Study panels (:class:`~qmckit.widgets.BosonPanel`, ``AtomPanel``, …) are subclasses
that pick which parameters to show and add their own plots.

    >>> from qmckit.widgets import SystemPanel
    >>> panel = SystemPanel("qdot", n=6, omega=1.0, method="dmc", dt=0.01)
    >>> panel            # in Jupyter; or panel.run_sync()

Threading
---------
*Run* starts the run's ``blocks`` generator in a background ``threading.Thread``. After every block
the thread moves the progress bar, calls the hooks registered with :meth:`SystemPanel.on_block`, and
(at most every ``redraw_interval`` seconds, and always at the end) re-renders the figure into an
``ipywidgets.Output`` by replacing its ``outputs`` (a PNG drawn with the Agg canvas, no pyplot),
which is safe from a thread. *Stop* sets a ``threading.Event``; ``blocks`` sees it at the next
block boundary and returns, leaving the run paused. *Run* then continues that run if the
controls still describe it (same numbers as an uninterrupted run), or starts a new one if any
control changed.
"""
from __future__ import annotations

import html
import math
import threading
import time
import warnings
from dataclasses import asdict

import ipywidgets as widgets

from ..runs import RunConfig, make_run
from ..stats import estimate, format_value_error
from ..systems import SYSTEMS
from .controls import DESCRIPTION_STYLE, control_values, int_control, parameter_controls
from .fast import fast_mode
from .plots import figure_png, png_output, run_figure

FAST_SIZES = {"walkers": 40, "steps": 200}
FULL_SIZES = {"walkers": 200, "steps": 2000}
METHOD_LABELS = {"vmc": "VMC", "dmc": "DMC"}
_COMPILED: set = set()  # system classes whose kernels this process has run (the compile note shows once)


class SystemPanel:
    """Controls, Run/Stop, progress bar, status line and live plots for a run of ``system``.

    ``system`` is a registered name (``qmckit.systems.SYSTEMS``). Further keyword arguments that name
    parameters of the system set their initial values; ``names`` limits the parameters shown (the
    others keep their defaults). ``methods`` are the methods offered (``"vmc"``, ``"dmc"``; DMC is
    fixed-node for systems with that capability). ``walkers`` and ``steps`` default to 40 × 200 in fast
    mode (``QMCKIT_FAST=1``) and 200 × 2000 otherwise.

    Attributes: one control per shown parameter, as ``panel.controls[name]`` and as ``panel.<name>``;
    ``method, sampler, dt, walkers, steps, seed``; the buttons ``run_button, stop_button``;
    ``progress`` (IntProgress, one step per block); ``status`` (Label); ``plot`` (Output); ``widget``
    (the whole VBox); ``last_run`` (the last run, or None); ``thread`` (the last background thread, or
    None); ``error`` (the exception of the last failed attempt, or None).
    """

    def __init__(self, system: str = "bec", *, names=None, methods=("vmc", "dmc"), method: str | None = None,
                 sampler: str = "drift", dt: float = 0.05, walkers: int | None = None, steps: int | None = None,
                 seed: int = 1, redraw_interval: float = 0.5, title: str | None = None, **params):
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
                                       value=method or methods[0], description="method", style=DESCRIPTION_STYLE,
                                       layout=widgets.Layout(width="210px"))
        self.sampler = widgets.Dropdown(options=[("drift (importance sampling)", "drift"),
                                                 ("brute (uniform moves)", "brute")],
                                        value=sampler, description="sampler", style=DESCRIPTION_STYLE,
                                        layout=widgets.Layout(width="290px"),
                                        tooltip="drift: Fokker–Planck importance sampling; brute: uniform "
                                                "moves with the step tuned during equilibration")
        time_unit = self.system_class.time_unit
        self.dt = widgets.FloatText(value=dt, description="Δt", style=DESCRIPTION_STYLE,
                                    layout=widgets.Layout(width="210px"),
                                    tooltip=f"time step of the drift sampler / DMC ({time_unit})")
        self.walkers = int_control("walkers", walkers or sizes["walkers"], "number of walkers (DMC: population "
                                   "target)", 1, 10**6)
        self.steps = int_control("steps", steps or sizes["steps"], "measured sweeps (DMC: steps) per walker", 1,
                                 10**8)
        self.seed = int_control("seed", seed, "random seed (≥ 0): same inputs, same numbers", 0, 2**62)
        self.sampler.observe(self._sampler_changed, names="value")
        self.method.observe(self._method_changed, names="value")
        self._method_changed()

        self.run_button = widgets.Button(description="Run", button_style="success", icon="play",
                                         tooltip="start, or continue a stopped run with the same settings")
        self.stop_button = widgets.Button(description="Stop", button_style="danger", icon="stop",
                                          disabled=True, tooltip="pause at the next block boundary")
        self.run_button.on_click(lambda _button: self.run())
        self.stop_button.on_click(lambda _button: self.stop())
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description="blocks", style=DESCRIPTION_STYLE,
                                            layout=widgets.Layout(width="330px"), tooltip="blocks done")
        self.status = widgets.Label(value="ready: set the parameters and press Run",
                                    layout=widgets.Layout(width="100%"))
        self.plot = widgets.Output(layout=widgets.Layout(min_height="300px"))

        units = ", ".join(f"{what} in {html.escape(unit)}" for what, unit in (
            ("lengths", self.system_class.length_unit), ("energies", self.system_class.energy_unit),
            ("time", time_unit)) if unit)
        header = widgets.HTML(f"<b>{html.escape(title or self.system_class.title)}</b> "
                              f"<span style='color:#666'>({units})</span>")
        run_controls = ([self.method] if len(methods) > 1 else []) + [self.sampler, self.dt, self.walkers,
                                                                       self.steps, self.seed]
        controls = widgets.HBox([widgets.VBox(list(self.controls.values())), widgets.VBox(run_controls)])
        buttons = widgets.HBox([self.run_button, self.stop_button, self.progress])
        self.widget = widgets.VBox([header, controls, buttons, self.status, self.plot])

        self.last_run = None
        self.thread: threading.Thread | None = None
        self.error: Exception | None = None
        self._stop = threading.Event()
        self._hooks: list = []
        self._paused = None  # the run a Stop left at a block boundary
        self._last_draw = 0.0

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

    # --- public API ---------------------------------------------------------------------------
    def parameter_values(self) -> dict:
        """The system parameters the controls hold, by name."""
        return control_values(self.controls)

    def config(self) -> RunConfig:
        """The :class:`RunConfig` the controls describe (raises ``ValueError`` for bad input)."""
        return RunConfig(system=self.system_name, method=self.method.value, params=self.parameter_values(),
                         sampler=self.sampler.value, dt=self.dt.value, walkers=self.walkers.value,
                         steps=self.steps.value, seed=self.seed.value)

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def on_block(self, callback) -> None:
        """Call ``callback(done, total)`` after every block, in the thread that runs it."""
        self._hooks.append(callback)

    def run(self, blocking: bool = False):
        """Start (or continue) the run the controls describe.

        ``blocking=False`` (the Run button): in a background thread, returned (None if nothing
        started). ``blocking=True``: in the calling thread, returning ``last_run.result()`` (None
        if the input was bad or the run was stopped). Bad input never raises: its one-line
        message goes to the status label (and ``self.error``).
        """
        if self.running:
            self.status.value = "a run is in progress: press Stop first"
            return None
        run = self._prepare()
        if run is None:
            return None
        if blocking:
            if not self._drive(run, reraise=True):
                return None
            with warnings.catch_warnings():  # a short run's warning is already in the status line
                warnings.simplefilter("ignore", RuntimeWarning)
                return run.result()
        self.thread = threading.Thread(target=self._drive, args=(run,), name=f"qmckit-{type(self).__name__}", daemon=True)
        self.thread.start()
        return self.thread

    def run_sync(self):
        """``run(blocking=True)``: run in the calling thread (tests, notebook fast mode)."""
        return self.run(blocking=True)

    def stop(self) -> None:
        """Ask the run to pause at the next block boundary (Run continues it)."""
        self._stop.set()
        if self.running:
            self.status.value = "stopping at the end of the current block…"

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the background run to end; True if it has."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.running

    def figure(self):
        """A fresh matplotlib ``Figure`` of the last run (energy trace and reblocking plot)."""
        run = self.last_run
        series = run.energy_series() if run is not None else []
        unit = run.system.energy_unit if run is not None else ""
        return run_figure(series, unit=unit, label=self._energy_label(run) if run is not None else "E")

    # --- internals ----------------------------------------------------------------------------
    def _fail(self, exc: Exception) -> None:
        self.error = exc
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not isinstance(exc, ValueError):
            message = f"{type(exc).__name__}: {message}"
        self.status.value = f"error: {message}"
        self.progress.bar_style = "danger"
        self.plot.outputs = ()  # the last run's figure does not belong to the rejected input

    def _make_run(self, config):
        return make_run(config)

    def _prepare(self):
        self.error = None
        try:
            config = self.config()
            previous = self.last_run
            if previous is not None and previous is self._paused and asdict(previous.config) == asdict(config):
                run = previous  # a stopped run with unchanged settings: continue it
            else:
                run = self._make_run(config)
                self.plot.outputs = ()  # a new run starts with an empty plot, not the last run's figure
                self.status.value = "starting…"
        except ValueError as exc:
            self._fail(exc)
            return None
        self.last_run = run
        self._stop.clear()
        self.progress.max = config.n_blocks
        self.progress.value = run.blocks_done
        self.progress.bar_style = "info"
        return run

    def _drive(self, run, reraise: bool = False) -> bool:
        """Run the remaining blocks of ``run``; True if it finished."""
        self.run_button.disabled = True
        self.stop_button.disabled = False
        self._paused = None
        self._last_draw = 0.0
        try:
            if not run.equilibrated:
                first = type(run.system) not in _COMPILED
                self.status.value = (f"equilibrating {run.config.equilibration} sweeps"
                                     + (" (the first run of this system also compiles its kernels)" if first else "")
                                     + "…")
                _COMPILED.add(type(run.system))
            for done, total in run.blocks(stop=self._stop):
                self.progress.value = done
                for hook in list(self._hooks):
                    hook(done, total)
                now = time.perf_counter()
                if done < total and now - self._last_draw >= self.redraw_interval:
                    self._last_draw = now
                    self.status.value = self._summary(run, prefix=f"block {done}/{total}")
                    self._redraw(run)
            finished = run.blocks_done >= run.config.n_blocks
            if finished:
                self.progress.bar_style = "success"
                self.status.value = self._summary(run, prefix="done", elapsed=run.wall_s)
            else:
                self._paused = run  # stopped cleanly at a block boundary: Run may continue it
                self.progress.bar_style = "warning"
                self.status.value = self._summary(
                    run, prefix=f"stopped after block {run.blocks_done}/{run.config.n_blocks}",
                    suffix="Run continues (change a setting to start afresh)")
            self._redraw(run)
        except Exception as exc:  # noqa: BLE001 - shown in the status line instead of a traceback
            self._fail(exc)
            if reraise and not isinstance(exc, ValueError):
                raise
            return False
        finally:
            self.run_button.disabled = False
            self.stop_button.disabled = True
        return finished

    def _summary(self, run, prefix: str, elapsed: float | None = None, suffix: str = "") -> str:
        parts = [prefix]
        if run.blocks_done:
            series = run.energy_series()
            caught = []
            if series.size >= 2:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", RuntimeWarning)
                    est = estimate(series)
                parts.append(f"{self._energy_label(run)} = {format_value_error(est.mean, est.error)} "
                             f"{run.system.energy_unit}")
                if est.error > 0 and math.isfinite(est.tau):
                    parts.append(f"τ = {est.tau:.1f}")
            parts.append(f"{series.size} sweeps × {self._population(run)}")
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
    def _population(run) -> str:
        return f"{run.config.walkers} walkers"

    def _redraw(self, run) -> None:
        fig = run_figure(run.energy_series(), unit=run.system.energy_unit, label=self._energy_label(run))
        self.plot.outputs = (png_output(figure_png(fig), text="<energy trace and reblocking plot>"),)
