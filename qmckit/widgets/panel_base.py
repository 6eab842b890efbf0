"""What every panel with a long computation shares: Run and Stop, a progress bar that names its phase, a
status line that wraps, a plot, the background thread and the busy state. No physics lives here.

:class:`RunControls` is a mixin: a panel calls :meth:`RunControls._build_run_controls` in its constructor,
lays the widgets out with :func:`row` and :meth:`RunControls._root`, and drives its work through
:meth:`RunControls._launch` (a background thread for the Run button, the calling thread for ``run_sync``).

What a user (and a browser test) sees, the same in every panel:

* *Run* (``run_button``, description ``"Run"``; OrbitalsPanel also has *Time*) is disabled while a run goes,
  *Stop* (``stop_button``, ``"Stop"``) only then; the root widget carries the CSS class ``qmckit-busy``.
* A new run clears the last run's figure at once (``plot.outputs == ()``), sets the status line to
  :data:`STARTING` and the progress bar to 0 with description ``"starting"``.
* The progress bar (``progress``, a ``FloatProgress``) names its phase in its description: ``"starting"``,
  ``"equilibrating"``, ``"DMC equil."``, ``"blocks"`` (value: blocks done, with the fraction of the current
  one), ``"points"``, ``"sweeps"``, then ``"done"``, ``"stopped"`` or ``"error"``.
* Stop takes effect at the next piece of work (a fraction of a second; see :mod:`qmckit.methods.run`); the
  status line then starts with ``"stopped"``.
* A rejected input shows one line ``"error: …"`` in the status line, clears the plot, and starts nothing.

CSS classes on the DOM nodes (for browser tests): ``qmckit-panel`` (root), ``qmckit-run``, ``qmckit-stop``,
``qmckit-progress``, ``qmckit-status``, ``qmckit-plot``, and ``qmckit-busy`` on the root while busy.

Units and labels come from the systems' metadata with underscores (``ħω_⊥``, ``E_h``); the panels render
them with :mod:`qmckit.widgets.labels` (Unicode in status lines, mathtext in plots).
"""
from __future__ import annotations

import threading
import time

import ipywidgets as widgets

from .controls import style  # noqa: F401 - the panels import it from here with the rest
from .labels import status_text

STARTING = "starting…"
PROGRESS_INTERVAL = 0.1  # s between progress-bar updates from a run's pieces (each is a message to the browser)
PHASE_LABELS = {"equilibration": "equilibrating", "DMC equilibration": "DMC equil.", "block": "blocks"}
_NOTED: set = set()  # kernel families whose compile note this process has shown

def compile_note(key) -> str:
    """``" (the first run also compiles the kernels)"`` the first time ``key`` (a kernel family: a system
    class, ``"precision"``, …) is asked for in this process, else ``""``: numba compiles once per process
    (or reads its disk cache), so the note belongs to the first run only."""
    if key in _NOTED:
        return ""
    _NOTED.add(key)
    return " (the first run also compiles the kernels)"


def row(children, **layout) -> widgets.HBox:
    """A row of widgets that wraps onto the next line where the notebook is too narrow for it."""
    return widgets.HBox(list(children), layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start",
                                                              **layout))


class RunControls:
    """Run/Stop, progress, status, plot, thread and busy state of a panel (see the module docstring).

    Attributes it sets: ``run_button, stop_button, progress, status, plot``; ``thread`` (the last
    background thread, or None); ``error`` (the exception of the last failed attempt, or None).
    """

    def _build_run_controls(self, *, ready: str, run_tooltip: str, stop_tooltip: str, progress_tooltip: str,
                            run_description: str = "Run") -> None:
        self.run_button = widgets.Button(description=run_description, button_style="success", icon="play",
                                         tooltip=run_tooltip)
        self.stop_button = widgets.Button(description="Stop", button_style="danger", icon="stop", disabled=True,
                                          tooltip=stop_tooltip)
        self.stop_button.on_click(lambda _button: self.stop())
        self.progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="ready",
                                              tooltip=progress_tooltip,
                                              style={"description_width": "100px"},  # "equilibrating"
                                              layout=widgets.Layout(width="360px", max_width="100%"))
        # an HTML line wraps where a Label would cut the text off; its value stays plain text (status_text)
        self.status = widgets.HTML(value=status_text(ready))
        self.plot = widgets.Output(layout=widgets.Layout(min_height="300px", max_width="100%", overflow="hidden"))
        for widget, name in ((self.run_button, "run"), (self.stop_button, "stop"), (self.progress, "progress"),
                             (self.status, "status"), (self.plot, "plot")):
            widget.add_class(f"qmckit-{name}")
        self.thread: threading.Thread | None = None
        self.error: Exception | None = None
        self._stop = threading.Event()
        self._last_progress = 0.0
        self._busy_buttons = [self.run_button]

    def _root(self, children) -> widgets.VBox:
        """The panel's root box: as wide as the notebook (no fixed width, so no horizontal scrollbar), with
        whatever still does not fit hidden rather than scrolled."""
        root = widgets.VBox(list(children), layout=widgets.Layout(max_width="100%", overflow="hidden"))
        root.add_class("qmckit-panel")
        return root

    # --- public API ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def stop(self) -> None:
        """Ask the running work to stop at its next piece (a fraction of a second)."""
        self._stop.set()
        if self.running:
            self._say("stopping…")

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the background run to end; True if it has."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.running

    # --- internals ----------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        self.status.value = status_text(text)

    def _refuse_if_running(self) -> bool:
        if self.running:
            self._say("a run is in progress: press Stop first")
            return True
        return False

    def _starting(self) -> None:
        """A new run: the last run's figure goes at once, the status says so, the bar starts at 0."""
        self.plot.outputs = ()
        self._set_progress("starting", 0.0, 1.0, style="info")
        self._say(STARTING)

    def _fail(self, exc: Exception) -> None:
        """One line for the failure in the status, no figure (it would belong to other input), a red bar."""
        self.error = exc
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if not isinstance(exc, ValueError):
            message = f"{type(exc).__name__}: {message}"
        self._say(f"error: {message}")
        self.plot.outputs = ()
        self._set_progress("error", 0.0, max(self.progress.max, 1.0), style="danger")

    def _set_progress(self, description: str, value: float, maximum: float, style: str | None = None) -> None:
        self.progress.description = description
        if maximum != self.progress.max:
            if value > self.progress.max:  # never let the value exceed the old maximum on the way
                self.progress.max = maximum
                self.progress.value = value
            else:
                self.progress.value = value
                self.progress.max = maximum
        else:
            self.progress.value = value
        if style is not None:
            self.progress.bar_style = style

    def _progress_due(self, force: bool = False) -> bool:
        """Whether a progress update is due (at most every :data:`PROGRESS_INTERVAL` s: a DMC run reports
        every step, and each widget update is a message to the browser)."""
        now = time.perf_counter()
        if force or now - self._last_progress >= PROGRESS_INTERVAL:
            self._last_progress = now
            return True
        return False

    def _set_busy(self, busy: bool, stoppable: bool = True) -> None:
        for button in self._busy_buttons:
            button.disabled = busy
        self.stop_button.disabled = not (busy and stoppable)
        root = getattr(self, "widget", None)
        if root is not None:
            (root.add_class if busy else root.remove_class)("qmckit-busy")

    def _start(self, blocking: bool, name: str):
        """``self._work()`` busy (see :meth:`_launch`), unless a run is already going: the Run button's and
        ``run_sync``'s common start for a panel whose work takes no arguments."""
        if self._refuse_if_running():
            return None
        return self._launch(self._work, blocking=blocking, name=name)

    def _launch(self, work, args=(), blocking: bool = False, name: str | None = None, stoppable: bool = True):
        """Run ``work(*args)`` busy: in the calling thread (``blocking``: its return value) or in a background
        thread (returned). ``work`` reports its own failures; the busy state ends however it ends.
        ``stoppable=False`` (work that cannot be cut, a few seconds at most) leaves Stop disabled."""
        self._stop.clear()
        self._last_progress = 0.0
        self._set_busy(True, stoppable)

        def body():
            try:
                return work(*args)
            finally:
                self._set_busy(False)

        if blocking:
            return body()
        self.thread = threading.Thread(target=body, name=name or f"qmckit-{type(self).__name__}", daemon=True)
        self.thread.start()
        return self.thread
