"""A panel for wave-function optimisation (:func:`qmckit.methods.optimizers.optimize`): the system's parameters
(generated from its metadata; the variational ones with a *free* box), the method and target, Run/Stop, and a live
plot of the energy and of the freed parameters after every step. No physics here: the panel calls ``optimize``.

    >>> from qmckit.widgets import OptimizePanel
    >>> panel = OptimizePanel("atom", element="He", alpha=1.6, beta=0.1)
    >>> panel          # in Jupyter; or panel.run_sync() -> OptimizeResult
"""
from __future__ import annotations

import html

import ipywidgets as widgets
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..methods.optimizers import METHODS, optimize
from ..methods.parameter_derivatives import variational_names
from ..systems import make_system
from ..systems import system_class as lookup
from .controls import control_values, int_control, parameter_controls
from .fast import fast_mode
from .labels import mpl_text, unit_text
from .panel_base import RunControls, compile_note, row, style
from .plots import figure_png, png_output

SETTINGS = {"steps": 12, "walkers": 100, "samples": 100}
FAST_SETTINGS = {"steps": 6, "walkers": 40, "samples": 50}


class OptimizePanel(RunControls):
    """Controls, Run/Stop, progress over steps, status and live plot of an optimisation of ``system`` (a registered
    name, or a system instance such as a student's :func:`qmckit.UserSystem`, whose values start the controls).

    ``free``: the variational parameters to optimise (default all); keyword arguments set the starting values.
    Attributes: ``controls`` (name → control), ``free`` (name → Checkbox), ``method``, ``target`` (Dropdowns),
    ``steps``, ``walkers``, ``samples``, ``seed``; ``result`` (the last OptimizeResult), ``widget``.
    """

    def __init__(self, system: str = "atom", free=None, method: str = "linear", target: str = "energy", seed: int = 0,
                 **values):
        self.instance = None if isinstance(system, str) else system
        if self.instance is not None:
            from ..systems import adopt

            system = adopt(self.instance)
            values = self.instance.params.as_dict() | values
        self.system = system
        self.system_class = lookup(system)
        if self.system_class.kind != "continuum":
            raise ValueError(f"system: OptimizePanel optimises continuum systems, got {system!r}")
        self.controls = parameter_controls(self.system_class, values)
        names = variational_names(self.system_class)
        chosen = set(names if free is None else ([free] if isinstance(free, str) else free))
        unknown = sorted(chosen - set(names))
        if unknown:
            raise ValueError(f"free must be among the variational parameters of {system!r} ({', '.join(names)}), "
                             f"got {', '.join(unknown)}")
        self.free = {n: widgets.Checkbox(value=n in chosen, description=f"free {self.controls[n].description}",
                                         indent=False, layout=widgets.Layout(width="auto"),
                                         tooltip=f"optimise {n}; unticked, it stays at its value") for n in names}
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        self.method = widgets.Dropdown(options=list(METHODS), value=method, description="method",
                                       style=style("method"), layout=widgets.Layout(width="210px"),
                                       tooltip="linear: the linear method; sr: stochastic reconfiguration; "
                                               "adam, gd: gradient descent")
        self.target = widgets.Dropdown(options=["energy", "variance"], value=target, description="target",
                                       style=style("target"), layout=widgets.Layout(width="210px"),
                                       tooltip="minimise the energy or the variance of E_L (variance: not linear)")
        settings = FAST_SETTINGS if fast_mode() else SETTINGS
        self.steps = int_control("steps", settings["steps"], "at most this many steps", 1, 1000)
        self.walkers = int_control("walkers", settings["walkers"], "walkers per step", 2, 100_000)
        self.samples = int_control("samples", settings["samples"], "samples per walker and step (doubles when "
                                   "noise dominates)", 1, 1_000_000)
        self.seed = int_control("seed", seed, "the optimisation's seed", 0, 2**31 - 2)
        self._build_run_controls(ready="ready: choose the parameters to free and press Run",
                                 run_tooltip="optimise the freed parameters", stop_tooltip="stop now (within a "
                                 "sample); the result is the last step measured", progress_tooltip="steps done")
        self.run_button.on_click(lambda _button: self.run())
        self.result = None
        self._history: list = []
        title = widgets.HTML(f"<b>Optimise: {html.escape(self.system_class.title)}</b>")
        self.widget = self._root([title, row(self.controls.values()), row(self.free.values()),
                                  row([self.method, self.target, self.steps, self.walkers, self.samples, self.seed]),
                                  row([self.run_button, self.stop_button, self.progress]), self.status, self.plot])

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)

    # --- running -------------------------------------------------------------------------------
    def run(self):
        """Start the optimisation in a background thread (Run)."""
        return self._start(False, "qmckit-optimize")

    def run_sync(self):
        """Optimise in the calling thread; returns the OptimizeResult (None if it failed)."""
        return self._start(True, "qmckit-optimize")

    def _work(self):
        self._starting()
        self._history = []
        try:
            names = [n for n, box in self.free.items() if box.value]
            if not names:
                raise ValueError("free: tick at least one parameter to optimise")
            values = control_values(self.controls)
            system = (type(self.instance)(**values) if self.instance is not None
                      else make_system(self.system, **values))
        except Exception as err:  # noqa: BLE001 - a bad value: one line
            self._fail(err)
            return None
        steps = self.steps.value
        self._set_progress("steps", 0, steps)
        self._say(f"step 1 of at most {steps}{compile_note(self.system_class)}")
        try:
            result = optimize(system, names, method=self.method.value, target=self.target.value, steps=steps,
                              n_walkers=self.walkers.value, n_samples=self.samples.value, seed=self.seed.value,
                              progress=self._on_step(steps), stop=self._stop)
        except Exception as err:  # noqa: BLE001 - one line in the status, whatever went wrong
            self._fail(err)
            return None
        self.result = result
        if not result.history:
            self._set_progress("stopped", 0, steps, style="warning")
            self._say("stopped before the first step ended")
            return result
        self._draw(result)
        e = result.estimates["energy"]
        values = ", ".join(f"{self.controls[n].description} = {v:.5g}" for n, v in result.params.items())
        unit = unit_text(self.system_class.energy_unit)
        words = {"steps": "done", "converged": "converged", "stopped": "stopped"}[result.stopped]
        self._set_progress(words if words != "converged" else "done", len(result.history), steps,
                           style="warning" if result.stopped == "stopped" else "success")
        which = "last measured" if result.stopped == "stopped" else "best (correlated sampling)"
        self._say(f"{words} after {len(result.history)} steps: {which} {values}, E = {e} {unit}")
        return result

    def _on_step(self, steps: int):
        unit = unit_text(self.system_class.energy_unit)

        def progress(step):
            self._history.append(step)
            state = "" if step.accepted else f" (refused: {step.note.removeprefix('refused: ')})"
            self._set_progress("steps", step.step + 1, steps)
            self._say(f"step {step.step + 1}: E = {step.energy} {unit}, σ² = {step.variance:.3g}{state}")
            self._draw(None)
        return progress

    # --- the plot ------------------------------------------------------------------------------
    def _draw(self, result) -> None:
        history = result.history if result is not None else self._history
        if not history:
            return
        names = list(history[0].params)
        fig = Figure(figsize=(6.4, 2.2 + 1.4 * len(names)), layout="constrained")
        axes = fig.subplots(1 + len(names), 1, sharex=True, squeeze=False)[:, 0]
        steps = [s.step + 1 for s in history]
        axes[0].errorbar(steps, [s.energy.mean for s in history], [s.energy.error for s in history], fmt="o-", ms=4,
                         capsize=2)
        unit = mpl_text(self.system_class.energy_unit)
        axes[0].set_ylabel(f"E [{unit}]" if unit else "E")
        if result is not None and result.estimates:
            e = result.estimates["energy"]
            axes[0].axhspan(e.mean - e.error, e.mean + e.error, color="C1", alpha=0.3, label="best")
            axes[0].legend(loc="upper right")
        for ax, name in zip(axes[1:], names):
            ax.plot(steps, [s.params[name] for s in history], "o-", ms=4)
            if result is not None:
                ax.axhline(result.params[name], color="C1")
            ax.set_ylabel(mpl_text(self.controls[name].description))
        axes[-1].set_xlabel("step")
        axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
        self.plot.outputs = (png_output(figure_png(fig), text=f"<optimisation, {len(history)} steps>"),)
