"""Plots shared by the widget panels and the notebooks (no physics: they draw what the API returns).

The functions draw into a given matplotlib ``Axes``; :func:`run_figure` builds a two-panel
figure without pyplot (``matplotlib.figure.Figure``), so it can be rendered from a background
thread and never pops up through the inline backend by itself.
"""
from __future__ import annotations

import base64
import io

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import Formatter, MaxNLocator

from ..stats import format_value_error, reblock
from .labels import mpl_text

_label_unit = mpl_text  # the name this module used for it


class ShortFormatter(Formatter):
    """Tick labels that stay short, with one scale for the whole axis: 0, 10k, 20k (not 8000 next to 16k);
    plain numbers below 10000."""

    def __init__(self):
        self.scale, self.suffix = 1.0, ""

    def set_locs(self, locs):
        top = max((abs(x) for x in locs), default=0.0)
        self.scale, self.suffix = (1e6, "M") if top >= 1e6 else (1e3, "k") if top >= 1e4 else (1.0, "")

    def __call__(self, x, pos=None):
        return "0" if x == 0 else f"{x / self.scale:g}{self.suffix}"


def sparse_ticks(ax, integer: bool = True) -> None:
    """At most about five short x tick labels, so that they do not run into each other on a half-width
    axis however long the series (20000 sweeps and more wrote five-digit labels edge to edge)."""
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=integer))
    ax.xaxis.set_major_formatter(ShortFormatter())


def plot_energy_trace(ax, series, unit: str = "", label: str = "E/N", xlabel: str = "sweep"):
    """Energy of every sweep (or DMC step: ``xlabel``) with its running mean. ``unit`` and ``label`` may be
    written as the metadata write them (``ħω_⊥``): they are drawn with subscripts."""
    series = np.asarray(series, dtype=float)
    unit, label = mpl_text(unit), mpl_text(label)
    ax.clear()
    if series.size:
        sweeps = np.arange(1, series.size + 1)
        ax.plot(sweeps, series, lw=0.6, color="tab:blue", alpha=0.7, label=f"{label} per {xlabel}")
        ax.plot(sweeps, np.cumsum(series) / sweeps, lw=1.6, color="tab:red", label="running mean")
        ax.legend(loc="upper right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"{label} [{unit}]" if unit else label)
    ax.set_title("energy trace")
    ax.ticklabel_format(axis="y", useOffset=False)
    sparse_ticks(ax)
    return ax


def plot_reblock(ax, table, unit: str = ""):
    """Standard error against log2(block size), with error bars and the optimal block marked."""
    unit = mpl_text(unit)
    ax.clear()
    if table is None or table.error.size == 0:
        ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
    else:
        levels = np.log2(table.block_size)
        ax.errorbar(levels, table.error, yerr=table.error_of_error, fmt="o-", ms=4, capsize=3,
                    color="tab:blue", label="standard error")
        if table.optimal is not None:
            k = table.optimal
            ax.plot(levels[k], table.error[k], marker="*", ms=16, color="tab:red", ls="none",
                    label=f"optimal block = {int(table.block_size[k])}")
            ax.axvline(levels[k], color="tab:red", lw=0.8, ls="--")
        if not np.any(table.error > 0):
            ax.text(0.5, 0.5, "zero variance: the error is exactly 0", ha="center", va="center",
                    transform=ax.transAxes)
        ax.legend(loc="upper left", fontsize="small")
    ax.set_xlabel("log₂(block size)")
    ax.set_ylabel(f"standard error [{unit}]" if unit else "standard error")
    ax.set_title("reblocking")
    return ax


def reblock_or_none(series):
    """``reblock(series)``, or None for fewer than two samples (too few to plot)."""
    series = np.asarray(series, dtype=float)
    if series.size < 2:
        return None
    return reblock(series)


def run_figure(series, unit: str = "", label: str = "E/N", title: str | None = None,
               figsize=(10.0, 3.6), xlabel: str = "sweep", what: str = "") -> Figure:
    """The panel's two-panel figure: energy trace and reblocking plot of ``series`` (one value per
    ``xlabel``: sweep or DMC step). The default title is ``"{what}: {label} = value(error) unit"``
    (``what``: e.g. "total energy"; none if empty)."""
    fig = Figure(figsize=figsize)
    # fixed margins: a constrained layout would double the drawing time of every live redraw
    fig.subplots_adjust(left=0.085, right=0.985, bottom=0.14, top=0.86, wspace=0.28)
    ax_trace, ax_block = fig.subplots(1, 2)
    plot_energy_trace(ax_trace, series, unit=unit, label=label, xlabel=xlabel)
    table = reblock_or_none(series)
    plot_reblock(ax_block, table, unit=unit)
    if title is None and table is not None:
        k = table.optimal if table.optimal is not None else 0
        title = f"{mpl_text(label)} = {format_value_error(table.mean[0], table.error[k])} {mpl_text(unit)}".strip()
        if what:
            title = f"{what}: {title}"
    if title:
        fig.suptitle(title)
    return fig


def figure_png(fig: Figure, dpi: int = 80) -> bytes:
    """Render ``fig`` to PNG bytes with the Agg canvas (safe outside the main thread)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def png_output(png: bytes, text: str = "<figure>") -> dict:
    """A ``display_data`` output dict (for ``ipywidgets.Output.outputs``) holding a PNG."""
    return {"output_type": "display_data",
            "data": {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": text},
            "metadata": {}}
