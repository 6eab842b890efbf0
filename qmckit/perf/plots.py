"""Plots of the perf layer: they draw what the functions of :mod:`qmckit.perf` return into a given Axes.

:func:`amdahl_figure` builds a figure without pyplot (``matplotlib.figure.Figure``), so a widget
callback can return it for display without it popping up twice through the inline backend.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .amdahl import amdahl_masked, amdahl_synchronous, max_masked, max_synchronous, saturation_point
from .masking import (penalty_bound_masked, penalty_bound_sequential, penalty_masked, penalty_sequential,
                      total_time_masked, total_time_sequential)

__all__ = ["amdahl_figure", "plot_amdahl", "plot_masking_scan", "plot_penalties", "profile_figure"]


def plot_amdahl(ax, R: float, S: float, M=None, annotate: bool = True):
    """Fig. 1 of study 004: A_syn (dashed blue) and A_mask (solid green) against M on a log axis.

    (The classic law with serial fraction R + S is A_syn itself: running the CPU part and the
    accelerator one after the other is exactly a larger serial part.)
    ``annotate`` marks the maxima 1/(R + S) and 1/max(R, S) and the saturation point M*.
    """
    M = np.geomspace(1, 1e4, 600) if M is None else np.asarray(M, dtype=float)
    a_syn, a_mask = amdahl_synchronous(M, R, S), amdahl_masked(M, R, S)
    top_syn, top_mask = float(max_synchronous(R, S)), float(max_masked(R, S))
    ax.plot(M, a_syn, "--", color="tab:blue", lw=1.8, label=f"synchronous $A_{{syn}}$ (Eq. 18), max ×{top_syn:.3g}")
    ax.plot(M, a_mask, "-", color="tab:green", lw=1.8, label=f"masked $A_{{mask}}$ (Eq. 16), max ×{top_mask:.3g}")
    if annotate:
        ax.axhline(top_syn, color="tab:blue", lw=0.6, alpha=0.6)
        ax.axhline(top_mask, color="tab:green", lw=0.6, alpha=0.6)
        m_star = float(saturation_point(R, S))
        if np.isfinite(m_star) and M.min() <= m_star <= M.max():
            ax.axvline(m_star, color="0.5", lw=0.8, ls=":")
            ax.annotate(f"M* = {m_star:.3g}\nratio 2", (m_star, top_mask), xytext=(6, -28),
                        textcoords="offset points", fontsize="small")
    ax.set_xscale("log")
    ax.set_xlabel("M (parallel speed-up of the accelerated part)")
    ax.set_ylabel("acceleration A")
    ax.set_title(f"modified Amdahl law, R = {R:g}, S = {S:g}, P = {1 - R - S:g}")
    ax.legend(loc="lower right", fontsize="small")
    return ax


def amdahl_figure(R: float, S: float, M=None, figsize=(7.0, 4.2)) -> Figure:
    """A one-panel figure of :func:`plot_amdahl` (built without pyplot)."""
    fig = Figure(figsize=figsize, layout="constrained")
    plot_amdahl(fig.add_subplot(), R, S, M=M)
    return fig


def plot_penalties(ax, alpha: float, m_c_values=(0.5, 1, 5, 50), m=None, bounds: bool = True):
    """Penalties P_seq(m) (dashed) and P_mask(m) (solid) against m for several m_c, with their bounds."""
    m = np.geomspace(1, max(10 * alpha, 10), 400) if m is None else np.asarray(m, dtype=float)
    for k, m_c in enumerate(m_c_values):
        color = f"C{k}"
        ax.plot(m, penalty_sequential(m, alpha, m_c), "--", color=color, lw=1.2)
        ax.plot(m, penalty_masked(m, alpha, m_c), "-", color=color, lw=1.5, label=f"$m_c$ = {m_c:g}")
    if bounds:
        ax.plot(m, penalty_bound_sequential(m, alpha), "--", color="k", lw=0.8, alpha=0.6,
                label="bounds (any $m_c$)")
        ax.plot(m, penalty_bound_masked(m, alpha), "-", color="k", lw=0.8, alpha=0.6)
    ax.axvline(alpha, color="0.5", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("analysis period m (macroupdates)")
    ax.set_ylabel("penalty t(m)/t(m_opt)")
    ax.set_title(f"α = {alpha:g}: sequential (dashed), masked (solid)")
    ax.legend(fontsize="small")
    return ax


def plot_masking_scan(ax, scan, t_G: float | None = None, t_A: float | None = None, fits: bool = True):
    """Fig. 3: total wall time against m, synchronous (filled) and asynchronous (open squares).

    With ``fits`` the ``a + b/m`` fit of the synchronous curve and the threshold fit of the
    asynchronous one are drawn; with measured ``t_G``, ``t_A`` the model curves (Eqs. 11, 13 with
    the pipeline's fill and drain) are drawn thin.
    """
    m = scan.m.astype(float)
    grid = np.geomspace(m.min(), m.max(), 300)
    if "sync" in scan.wall:
        ax.plot(m, scan.wall["sync"], "s", color="tab:blue", ms=5, label="synchronous")
        if fits and len(m) >= 3:
            fit = scan.fit_sync()
            ax.plot(grid, fit(grid), "-", color="tab:blue", lw=1,
                    label=f"a + b/m: a = {fit.a:.3g} s, b = {fit.b:.3g} s")
    if "async" in scan.wall:
        ax.plot(m, scan.wall["async"], "s", mfc="none", color="tab:green", ms=6, label="asynchronous")
        if fits and len(m) >= 4:
            tf = scan.fit_async()
            ax.plot(grid, tf(grid), "-", color="tab:green", lw=1, label=f"threshold fit: m* = {tf.threshold:.3g}")
            ax.axvline(tf.threshold, color="tab:green", lw=0.8, ls=":")
    if t_G is not None and t_A is not None:
        K = scan.total_macroupdates
        ax.plot(grid, total_time_sequential(grid, K, t_G, t_A), color="tab:blue", lw=0.6, alpha=0.5)
        ax.plot(grid, total_time_masked(grid, K, t_G, t_A), color="tab:green", lw=0.6, alpha=0.5,
                label="model (Eqs. 11, 13)")
        ax.axvline(t_A / t_G, color="k", lw=0.8, ls="--", alpha=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("analysis period m (macroupdates per writeout)")
    ax.set_ylabel("total wall time (s)")
    ax.set_title(f"load masking, {scan.total_macroupdates} macroupdates per run")
    ax.legend(fontsize="small")
    return ax


PHASE_COLOURS = {"sampling": "tab:green", "measurements": "tab:orange", "density": "gold", "branching": "tab:purple",
                 "transfers": "tab:red", "checkpoint": "tab:brown", "analysis": "tab:blue", "other": "0.7"}


def profile_figure(profile: dict, model, figsize=(9.0, 3.4)) -> Figure:
    """A run's profile (:mod:`qmckit.perf.run_profile`) as one bar of phase fractions, beside the modified Amdahl
    curves of its model (:func:`qmckit.perf.report`): what a sampler M times faster would make of this run."""
    fig = Figure(figsize=figsize, layout="constrained")
    ax_bar, ax_model = fig.subplots(1, 2, width_ratios=(1, 1.4))
    left = 0.0
    for name, row in profile["phases"].items():
        ax_bar.barh(0, row["fraction"], left=left, color=PHASE_COLOURS.get(name, "0.5"), edgecolor="white",
                    label=f"{name} {100 * row['fraction']:.1f} %")
        left += row["fraction"]
    ax_bar.set(xlim=(0, 1), yticks=[], xlabel="share of the run's time",
               title=f"{profile['total_s']:.3g} s on {profile['device']}"[:60])
    ax_bar.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncols=2, fontsize="small", frameon=False)
    plot_amdahl(ax_model, model.cpu, model.serial)
    ax_model.set_title("if the sampling were M× faster", fontsize="medium")
    ax_model.legend(fontsize="x-small", loc="lower right")
    return fig
