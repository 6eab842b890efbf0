"""A panel for parameter scans (:func:`qmckit.scan`): a grid editor generated from a system's metadata, points
done / running / queued, a plot that fills in as rows arrive, the Dask dashboard link, Stop.

Every declared parameter of the system gets a text box holding one value (fixed for all points) or an axis:
``0.40:0.60:11`` (start:stop:count) or ``0.4,0.5,0.6``; so do the run settings (method, Δt, walkers, steps).
One axis: the energy with its error bar against it; two: a heat map; more: the energy against the point's number.
``workers`` = 0 runs the points in this kernel, one by one; K > 0 on a local Dask cluster of K process workers
(started for the run and closed after it). No physics here: the panel calls :func:`qmckit.scan`.

    >>> from qmckit.widgets import ScanPanel
    >>> panel = ScanPanel("bec", alpha="0.40:0.60:9", a="0", n="10", walkers="100", steps="1000")
    >>> panel          # in Jupyter; or panel.run_sync() -> qmckit.scans.ScanResult
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from ..scans import scan
from ..scans.grid import parse_axis
from ..scans.execute import start_executor
from ..systems import system_class as lookup
from .fast import fast_mode
from .labels import mpl_text, unit_text
from .panel_base import RunControls, compile_note, row, style
from .plots import figure_png, png_output

SETTINGS = ("method", "dt", "walkers", "steps")  # run settings offered beside the parameters
DEFAULT_SETTINGS = {"method": "vmc", "dt": "0.05", "walkers": "40", "steps": "300"}
FULL_SETTINGS = {"walkers": "200", "steps": "2000"}


class ScanPanel(RunControls):
    """Grid editor, Run/Stop, progress over points, status, live plot of a scan of ``system`` (a registered name, or
    a system instance such as a student's :func:`qmckit.UserSystem`, whose values fill the boxes).

    Keyword arguments set the text of a parameter's or setting's box (a value or an axis). Attributes:
    ``boxes`` (name → Text), ``workers`` (IntText), ``seed`` (IntText), ``dashboard`` (HTML), the
    :class:`~qmckit.widgets.panel_base.RunControls` widgets, ``result`` (the last
    :class:`~qmckit.scans.ScanResult`), ``widget``.
    """

    def __init__(self, system: str = "bec", workers: int = 2, seed: int = 0, **values):
        instance = None if isinstance(system, str) else system  # a student's qmckit.UserSystem: its values start
        if instance is not None:
            from ..systems import adopt

            system = adopt(instance)
        self.system = system
        self.system_class = lookup(system)
        infos = {info.name: info for info in self.system_class.parameters()}
        defaults = (instance.params if instance is not None else self.system_class.Params()).as_dict()
        settings = DEFAULT_SETTINGS | ({} if fast_mode() else FULL_SETTINGS)
        unknown = sorted(set(values) - set(infos) - set(SETTINGS))
        if unknown:
            raise TypeError(f"ScanPanel({system!r}) has no box {', '.join(unknown)}; its boxes are "
                            f"{', '.join([*infos, *SETTINGS])}")
        self.boxes = {}
        for name in [*infos, *SETTINGS]:
            text = values.get(name, settings.get(name) if name in SETTINGS else _text(defaults[name]))
            label = unit_text(infos[name].label) if name in infos else ("Δt" if name == "dt" else name)
            tip = infos[name].describe() if name in infos else f"run setting {name}"
            self.boxes[name] = widgets.Text(value=str(text), description=label, style=style(label),
                                            tooltip=tip + " · a value, or an axis START:STOP:COUNT or V1,V2,…",
                                            layout=widgets.Layout(width="210px", max_width="100%"))
        self.workers = widgets.BoundedIntText(value=workers, min=0, max=256, description="workers",
                                              tooltip="0: one by one in this kernel; K: a local Dask cluster of K",
                                              style=style("workers"), layout=widgets.Layout(width="160px"))
        self.seed = widgets.BoundedIntText(value=seed, min=0, max=2**31 - 2, description="seed", style=style("seed"),
                                           tooltip="the scan's seed; each point's seed is derived from it",
                                           layout=widgets.Layout(width="160px"))
        self.dashboard = widgets.HTML(value="")
        self._build_run_controls(ready="ready: type a value or an axis (0.4:0.6:9 or 0.4,0.5) in any box",
                                 run_tooltip="run every point of the grid", stop_tooltip="cancel the points not "
                                 "started; keep the finished ones", progress_tooltip="points finished")
        self.run_button.on_click(lambda _button: self.run())
        self.result = None
        title = widgets.HTML(f"<b>Scan: {html.escape(self.system_class.title)}</b>")
        boxes = list(self.boxes.values())
        self.widget = self._root([title, row(boxes), row([self.workers, self.seed]),
                                  row([self.run_button, self.stop_button, self.progress]), self.status,
                                  self.dashboard, self.plot])

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)

    # --- the grid ------------------------------------------------------------------------------
    def grid(self) -> tuple[dict, dict]:
        """(axes, fixed) the boxes describe; a malformed axis raises a one-line ValueError naming its box."""
        axes, fixed = {}, {}
        for name, box in self.boxes.items():
            text = box.value.strip()
            try:
                if ":" in text or "," in text:
                    axes[name] = parse_axis(f"{name}={text}")[1]
                elif text:
                    fixed[name] = parse_axis(f"{name}={text}")[1][0]
            except ValueError as err:
                raise ValueError(str(err).replace("--param ", "")) from None
        return axes, fixed

    # --- running -------------------------------------------------------------------------------
    def run(self):
        """Start the scan in a background thread (Run)."""
        return self._start(False, "qmckit-scan")

    def run_sync(self):
        """Run the scan in the calling thread; returns the ScanResult (None if it failed)."""
        return self._start(True, "qmckit-scan")

    def _work(self):
        self._starting()
        self.dashboard.value = ""
        try:
            axes, fixed = self.grid()
            if not axes:
                raise ValueError("no axis: type START:STOP:COUNT or V1,V2,… in at least one box")
            total = int(np.prod([len(v) for v in axes.values()]))
            executor, close = start_executor("serial" if self.workers.value == 0 else None, self.workers.value or None,
                                             total)
        except Exception as err:  # noqa: BLE001 - a bad box, no Dask, a cluster that would not start: one line
            self._fail(err)
            return None
        if executor is not None and hasattr(executor, "dashboard_link"):
            link = html.escape(executor.dashboard_link)
            self.dashboard.value = f'Dask dashboard: <a href="{link}" target="_blank">{link}</a>'
        note = compile_note(self.system_class)
        self._set_progress("points", 0, total)
        self._say(f"0 done · {min(max(1, self.workers.value), total)} running · "
                  f"{max(0, total - max(1, self.workers.value))} queued{note}")
        try:
            result = scan(self.system, axes, fixed, seed=self.seed.value,
                          client=executor if executor is not None else "serial", progress=self._on_row(axes),
                          stop=self._stop)
            self.result = result
            self._draw(axes, result.rows)
        except Exception as err:  # noqa: BLE001 - one line in the status, whatever went wrong
            self._fail(err)
            return None
        finally:
            close()
        done = len(result.rows)
        if result.stopped:
            self._set_progress("stopped", done, total, style="warning")
            self._say(f"stopped: {done} of {total} points done (the queued ones cancelled)")
        else:
            self._set_progress("done", total, total, style="success")
            self._say(f"done: {total} points")
        return result

    def _on_row(self, axes):
        rows: list = []
        workers = max(1, self.workers.value)

        def progress(done, total, row_):
            rows.append(row_)
            running = min(workers, total - done)
            self._set_progress("points", done, total)
            self._say(f"{done} done · {running} running · {total - done - running} queued")
            self._draw(axes, rows)
        return progress

    # --- the plot ------------------------------------------------------------------------------
    def _draw(self, axes: dict, rows: list) -> None:
        key = self.system_class.energy_key
        unit = mpl_text(self.system_class.energy_unit)
        label = mpl_text(key.replace("energy_per_particle", "E/N").replace("energy_per_site", "E/N_s")
                         .replace("energy", "E"))
        fig = Figure(figsize=(6.4, 3.8), layout="constrained")
        ax = fig.subplots()
        names = list(axes)
        mean = np.array([r["estimates"][key]["mean"] for r in rows])
        error = np.array([r["estimates"][key]["error"] for r in rows])
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for n in names for v in axes[n])
        if len(names) == 1 and numeric:
            x = np.array([r["point"][names[0]] for r in rows], dtype=float)
            order = np.argsort(x)
            ax.errorbar(x[order], mean[order], yerr=error[order], fmt="o-", ms=4, capsize=2)
            ax.set_xlabel(mpl_text(self.boxes[names[0]].description))
            ax.set_ylabel(f"{label} [{unit}]" if unit else label)
        elif len(names) == 2 and numeric:
            xs, ys = (sorted(set(axes[n])) for n in names)
            grid = np.full((len(ys), len(xs)), np.nan)
            for r, m in zip(rows, mean):
                grid[ys.index(r["point"][names[1]]), xs.index(r["point"][names[0]])] = m
            image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis",
                              extent=_extent(xs) + _extent(ys))
            fig.colorbar(image, ax=ax, label=f"{label} [{unit}]" if unit else label)
            ax.set_xlabel(mpl_text(self.boxes[names[0]].description))
            ax.set_ylabel(mpl_text(self.boxes[names[1]].description))
        else:  # many axes, or a text axis (method=vmc,dmc): the points in order, labelled
            ax.errorbar(np.arange(len(rows)), mean, yerr=error, fmt="o", ms=4, capsize=2)
            ax.set_xticks(np.arange(len(rows)), [", ".join(str(r["point"][n]) for n in names) for r in rows],
                          rotation=30, ha="right", fontsize=7)
            ax.set_xlabel(", ".join(names))
            ax.set_ylabel(f"{label} [{unit}]" if unit else label)
        ax.set_title(f"{self.system}: {len(rows)} points")
        self.plot.outputs = (png_output(figure_png(fig), text=f"<scan of {len(rows)} points>"),)


def _text(value) -> str:
    return "" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))


def _extent(values) -> list:
    """Image edges half a step beyond the first and last grid values."""
    if len(values) == 1:
        return [values[0] - 0.5, values[0] + 0.5]
    step = (values[-1] - values[0]) / (len(values) - 1)
    return [values[0] - step / 2, values[-1] + step / 2]
