"""An ipywidgets panel for the floating-point error of the orbital matrix product (studies 001 and 002).

:class:`PrecisionPanel` measures the error per element of ``A @ B`` against its inner length ``K``
in the arithmetics of :mod:`qmckit.precision` — float64, float32, Kahan-compensated float32, and
float32 that truncates every operation (the emulated 2006 GPU of study 001), with or without Kahan —
and draws it on log–log axes (study 001's Figs 5–6). The operands are

* ``uniform``: both U[0, 1) (001's Fig. 5);
* ``basis_uniform``: synthetic Gaussian-basis-like values times U[0, 1) (001's Fig. 6 protocol);
* ``molecule`` (needs PySCF): the real thing — ``A`` the values of a molecule's Cartesian Gaussian
  basis functions at electron positions (:func:`qmckit.systems.gaussian_basis.basis_values`),
  ``B`` its occupied RHF orbital coefficients, so ``A @ B`` is the orbital evaluation of QMC. The
  inner length is then the number of basis functions, one point per chosen basis set (the electron
  positions are :meth:`Molecule.initial_positions`, Gaussian clouds around the nuclei, not a sample
  of |ψ|²).

No numerics live here: :func:`qmckit.precision.error_vs_length` does the measuring (one inner length,
or one basis set, per point; Stop is seen between two matrix pairs, and the unfinished point is left out) and
:func:`qmckit.precision.plot_error_vs_length` the drawing.

    >>> from qmckit.widgets import PrecisionPanel
    >>> panel = PrecisionPanel()
    >>> panel            # in Jupyter; or panel.run_sync() -> qmckit.precision.ErrorVsLength
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .. import precision as P
from ..systems.molecule import builtin_molecules
from .controls import int_control
from .fast import fast_mode
from .molecule_panel import BASES, pyscf_missing
from .panel_base import RunControls, compile_note, row, style
from .plots import figure_png, png_output

ARITHMETIC_OPTIONS = (("float64", "f64"), ("float32", "f32"), ("Kahan float32", "kahan_f32"),
                      ("truncating float32 (2006 GPU)", "f32_rz"), ("Kahan truncating float32", "kahan_f32_rz"))
DEFAULT_ARITHMETICS = ("f64", "f32", "kahan_f32", "f32_rz")
KIND_OPTIONS = (("uniform [0, 1) × uniform (001 Fig. 5)", "uniform"),
                ("basis-like × uniform, synthetic (Fig. 6)", "basis_uniform"),
                ("molecule: basis values × RHF orbitals (PySCF)", "molecule"))
STAT_OPTIONS = (("mean relative error", "mean"), ("median relative error", "median"),
                ("max relative error", "max"), ("|bias| (mean signed)", "mean_signed"),
                ("mean |ΔC| / (|A||B|)", "mean_scaled"))
MAX_LENGTH = 10**6
# (K min, K max, points, matrix pairs per point, work per point ≈ output elements × K)
PRECISION_FAST = {"k_min": 10, "k_max": 10_000, "points": 4, "trials": 1, "work": 2.0**20}
PRECISION_FULL = {"k_min": 10, "k_max": 100_000, "points": 5, "trials": 3, "work": 2.0**22}
MOLECULE_POINTS = 200  # electron positions (rows of A) per matrix pair for the molecule kind


def inner_lengths(k_min: int, k_max: int, points: int) -> np.ndarray:
    """``points`` integer inner lengths spaced evenly in log K from ``k_min`` to ``k_max`` (duplicates dropped)."""
    if points == 1 or k_min == k_max:
        return np.array([k_min], dtype=np.int64)
    return np.unique(np.round(np.geomspace(k_min, k_max, points)).astype(np.int64))


def molecule_operands(molecule: str, basis: str, rows: int, rng):
    """``(A, B, n_basis)`` for a built-in molecule: A (rows, n_basis) the basis-function values at
    electron positions from :meth:`Molecule.initial_positions`, B (n_basis, n_occ) the RHF orbitals."""
    from ..systems.gaussian_basis import basis_values
    from ..systems.molecule import Molecule

    mol = Molecule(xyz=molecule, basis=basis, jastrow=False)
    walkers = math.ceil(rows / mol.n_particles)
    points = mol.initial_positions(walkers, rng).reshape(-1, 3)[:rows]
    return basis_values(mol.basis, points), np.asarray(mol.mo_coefficients), mol.n_basis


def _merge(kind: str, parts: list, trials: int, labels: list | None = None) -> P.ErrorVsLength:
    """One :class:`ErrorVsLength` (sorted by K) from single-length results."""
    order = sorted(range(len(parts)), key=lambda i: int(parts[i].lengths[0]))
    parts = [parts[i] for i in order]
    stats = {a: {s: np.array([p.stats[a][s][0] for p in parts]) for s in parts[0].stats[a]}
             for a in parts[0].stats}
    result = P.ErrorVsLength(kind=kind, lengths=np.array([int(p.lengths[0]) for p in parts], dtype=np.int64),
                             shapes=[p.shapes[0] for p in parts], trials=trials, stats=stats)
    result.labels = [labels[i] for i in order] if labels is not None else None
    return result


class _Stopped(Exception):
    """Raised between two matrix pairs of a point when Stop was pressed (the point is left out)."""


class PrecisionPanel(RunControls):
    """Controls, Run/Stop, progress bar, status line and a log–log plot of error per element against K.

    Keyword arguments set the initial controls: ``arithmetics`` (keys of
    ``qmckit.precision.ARITHMETICS``), ``kind`` (``"uniform"``, ``"basis_uniform"`` or
    ``"molecule"``), ``stat`` (an ``ErrorVsLength.stats`` key), ``k_min``, ``k_max``, ``points``
    (inner lengths, log-spaced), ``trials`` (matrix pairs per point), ``seed``; for the molecule kind
    ``molecule`` and ``bases`` (one point per basis set, K = its number of basis functions).

    Attributes: those controls; ``run_button, stop_button, progress`` (FloatProgress: points done, with
    the fraction of matrix pairs of the current one; described "points"), ``status`` (HTML line),
    ``plot, widget``; ``result`` (the last :class:`qmckit.precision.ErrorVsLength`, or None; partial
    after Stop); ``thread``; ``error`` (the exception of the last failed attempt, or None).
    Stop takes effect after the current matrix pair (the unfinished point is left out).
    """

    def __init__(self, *, arithmetics=DEFAULT_ARITHMETICS, kind: str = "uniform", stat: str = "mean",
                 k_min: int | None = None, k_max: int | None = None, points: int | None = None,
                 trials: int | None = None, seed: int = 2007, molecule: str = "h2o",
                 bases=("sto-3g", "6-31g", "cc-pvdz", "cc-pvtz"), work: float | None = None):
        if kind not in [v for _, v in KIND_OPTIONS]:
            raise ValueError(f"kind must be one of {', '.join(v for _, v in KIND_OPTIONS)}, got {kind!r}")
        self.result: P.ErrorVsLength | None = None
        self._hooks: list = []
        self._prefix = ""  # what the last status summary began with ("done", "stopped after …")
        sizes = PRECISION_FAST if fast_mode() else PRECISION_FULL
        self.work = float(work if work is not None else sizes["work"])
        self.pyscf_message = pyscf_missing()
        kinds = [k for k in KIND_OPTIONS if k[1] != "molecule" or self.pyscf_message is None]
        self.arithmetics = widgets.SelectMultiple(options=ARITHMETIC_OPTIONS, value=tuple(arithmetics), rows=5,
                                                  description="arithmetic", style=style("arithmetic"),
                                                  layout=widgets.Layout(width="330px", max_width="100%"))
        self.kind = widgets.Dropdown(options=kinds, value=kind if kind in [v for _, v in kinds] else "uniform",
                                     description="matrices", style=style("matrices"),
                                     layout=widgets.Layout(width="400px", max_width="100%"))
        self.stat = widgets.Dropdown(options=STAT_OPTIONS, value=stat, description="per element",
                                     style=style("per element"), layout=widgets.Layout(width="330px", max_width="100%"))
        self.k_min = int_control("K min", k_min if k_min is not None else sizes["k_min"], "shortest inner length (≥ 1)")
        self.k_max = int_control("K max", k_max if k_max is not None else sizes["k_max"],
                                 f"longest inner length (≤ {MAX_LENGTH})")
        self.points = int_control("points", points or sizes["points"], "inner lengths, evenly spaced in log K", 1, 50)
        self.trials = int_control("pairs", trials or sizes["trials"], "matrix pairs per point (pooled)", 1, 100)
        self.seed = int_control("seed", seed, "random seed (≥ 0): same inputs, same numbers", 0, 2**62)
        names = builtin_molecules()
        self.molecule = widgets.Dropdown(options=names, value=molecule if molecule in names else names[0],
                                         description="molecule", style=style("molecule"),
                                         layout=widgets.Layout(width="240px"))
        self.bases = widgets.SelectMultiple(options=BASES, value=tuple(b for b in bases if b in BASES), rows=5,
                                            description="bases", style=style("bases"),
                                            layout=widgets.Layout(width="240px"),
                                            tooltip="one point per basis set: K = its number of basis functions")
        self.kind.observe(self._kind_changed, names="value")
        self.stat.observe(self._stat_changed, names="value")

        note = "" if self.pyscf_message is None else f" (molecule matrices unavailable: {self.pyscf_message})"
        self._build_run_controls(ready="ready: choose the arithmetics and the matrices and press Run" + note,
                                 run_tooltip="measure the errors (a background thread)",
                                 stop_tooltip="stop after the current matrix pair; the plot keeps the points done",
                                 progress_tooltip="inner lengths (or basis sets) measured")
        self.run_button.on_click(lambda _button: self.run())
        header = widgets.HTML("<b>Precision of A·B: error per element against the inner length K</b> "
                              "<span style='color:#666'>(float32 inputs; reference: error-free Dot2 in float64; "
                              "u = 2<sup>−24</sup>)</span>")
        self._molecule_box = widgets.VBox([self.molecule, self.bases])
        controls = row([
            widgets.VBox([self.arithmetics, self.stat]),
            widgets.VBox([self.kind, row([widgets.VBox([self.k_min, self.k_max, self.points, self.trials,
                                                        self.seed]), self._molecule_box])]),
        ])
        buttons = row([self.run_button, self.stop_button, self.progress])
        self.widget = self._root([header, controls, buttons, self.status, self.plot])
        self._kind_changed()

    # --- display and controls -----------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def _kind_changed(self, _change=None) -> None:
        molecular = self.kind.value == "molecule"
        for control in (self.k_min, self.k_max, self.points):
            control.disabled = molecular  # K is the basis size there
        self._molecule_box.layout.display = None if molecular else "none"
        if molecular and self.stat.value == "mean":
            self.stat.value = "median"  # signed coefficients: near-zero elements dominate the mean

    def _stat_changed(self, _change=None) -> None:
        """Another statistic per element: the plot and the status line show it (a running measurement's
        next point does so by itself)."""
        self._redraw()
        if self.result is not None and not self.running:
            self._say(self._summary(self._prefix))

    # --- public API ---------------------------------------------------------------------------
    def plan(self) -> dict:
        """What the controls ask for: ``{"kind", "arithmetics", "trials", "seed", "steps"}`` with
        ``steps`` the inner lengths (ints) or, for the molecule kind, the basis-set names.
        Raises ``ValueError`` with a one-line message for bad input."""
        arithmetics = tuple(self.arithmetics.value)
        if not arithmetics:
            raise ValueError("arithmetic: choose at least one (float64, float32, Kahan float32, …)")
        trials, seed = self.trials.value, self.seed.value
        if not isinstance(trials, int) or trials < 1:
            raise ValueError(f"pairs must be a positive integer, got {trials!r}")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        kind = self.kind.value
        if kind == "molecule":
            if self.pyscf_message is not None:
                raise ValueError(self.pyscf_message)
            bases = tuple(self.bases.value)
            if not bases:
                raise ValueError("bases: choose at least one basis set for the molecule matrices")
            steps = bases
        else:
            k_min, k_max, points = self.k_min.value, self.k_max.value, self.points.value
            if not isinstance(k_min, int) or k_min < 1:
                raise ValueError(f"K min must be an integer ≥ 1, got {k_min!r}")
            if not isinstance(k_max, int) or not k_min <= k_max <= MAX_LENGTH:
                raise ValueError(f"K max must be an integer from K min = {k_min} to {MAX_LENGTH}, got {k_max!r}")
            if not isinstance(points, int) or points < 1:
                raise ValueError(f"points must be a positive integer, got {points!r}")
            steps = tuple(int(k) for k in inner_lengths(k_min, k_max, points))
        return {"kind": kind, "arithmetics": arithmetics, "trials": trials, "seed": seed, "steps": steps}

    def on_point(self, callback) -> None:
        """Call ``callback(done, total)`` after every measured point, in the thread that runs it."""
        self._hooks.append(callback)

    def run(self, blocking: bool = False):
        """Measure what the controls describe. ``blocking=False`` (the Run button): in a background
        thread, returned (None if nothing started). ``blocking=True``: in the calling thread,
        returning the :class:`~qmckit.precision.ErrorVsLength` (None for bad input or a stopped run).
        Bad input never raises: its one-line message goes to the status line (and ``self.error``), and
        the plot is cleared."""
        if self._refuse_if_running():
            return None
        self.error = None
        self.result = None
        self._starting()
        try:
            plan = self.plan()
        except ValueError as exc:
            self._fail(exc)
            return None
        self._set_progress("points", 0, len(plan["steps"]), style="info")
        if blocking:
            return self.result if self._launch(self._drive, (plan, True), blocking=True) else None
        return self._launch(self._drive, (plan,))

    def run_sync(self):
        """``run(blocking=True)``: in the calling thread (tests, notebook fast mode)."""
        return self.run(blocking=True)

    def figure(self) -> Figure:
        """A fresh matplotlib ``Figure`` of the last result (log–log, one line per arithmetic)."""
        return precision_figure(self.result, self.stat.value)

    # --- internals ----------------------------------------------------------------------------
    def _pairs(self, make, k: int, total: int, trials: int):
        """``make`` (a ``kind(M, K, rng)`` of :func:`qmckit.precision.error_vs_length`) that moves the progress
        bar by one matrix pair and raises :class:`_Stopped` when Stop was pressed, so that a Stop waits one
        pair, not one point."""
        count = [0]

        def pair(M, K, rng):
            if self._stop.is_set():
                raise _Stopped
            if self._progress_due():
                self._set_progress("points", k + count[0] / trials, total)
            count[0] += 1
            return make(M, K, rng)

        pair.__name__ = getattr(make, "__name__", "custom")
        return pair

    def _measure(self, plan: dict, step, rng, k: int) -> tuple:
        """One point: (ErrorVsLength at one K, label or None)."""
        total, trials = len(plan["steps"]), plan["trials"]
        if plan["kind"] != "molecule":
            make = P.KINDS[plan["kind"]]
            part = P.error_vs_length([step], self._pairs(make, k, total, trials), trials=trials, rng=rng,
                                     arithmetics=plan["arithmetics"], work=self.work)
            part.kind = plan["kind"]
            return part, None
        molecule = self.molecule.value
        try:
            A, B, n_basis = molecule_operands(molecule, step, MOLECULE_POINTS, rng)
        except ValueError:
            raise
        except Exception as exc:  # noqa: BLE001 - PySCF's own failures: one line, no traceback
            raise ValueError(f"molecule {molecule!r} in basis {step!r} failed in PySCF: {type(exc).__name__}") from None
        first = [(A, B)]

        def operands(M, K, rng_):  # the first pair is the one built above; later trials draw new positions
            return first.pop() if first else molecule_operands(molecule, step, M, rng_)[:2]

        operands.__name__ = f"molecule {molecule}"
        part = P.error_vs_length([n_basis], self._pairs(operands, k, total, trials), trials=trials, rng=rng,
                                 arithmetics=plan["arithmetics"], size=MOLECULE_POINTS)
        part.shapes = [(MOLECULE_POINTS, B.shape[1])]
        return part, step

    def _drive(self, plan: dict, reraise: bool = False) -> bool:
        """Measure every point of ``plan``; True if all were done."""
        kind = plan["kind"] if plan["kind"] != "molecule" else f"molecule {self.molecule.value}"
        parts, labels = [], []
        total = len(plan["steps"])
        rng = np.random.default_rng(plan["seed"])
        self.result = None
        note = compile_note("precision")
        try:
            for k, step in enumerate(plan["steps"]):
                if self._stop.is_set():
                    break
                what = f"basis {step}" if plan["kind"] == "molecule" else f"K = {step}"
                self._say(f"measuring {what} ({k + 1}/{total}){note}…")
                try:
                    part, label = self._measure(plan, step, rng, k)
                except _Stopped:
                    break
                note = ""
                parts.append(part)
                labels.append(label)
                self.result = _merge(kind, parts, plan["trials"], labels if plan["kind"] == "molecule" else None)
                self._set_progress("points", k + 1, total)
                self._redraw()
                for hook in list(self._hooks):
                    hook(k + 1, total)
            finished = len(parts) == total
            self._set_progress("done" if finished else "stopped", len(parts), total,
                               style="success" if finished else "warning")
            self._prefix = "done" if finished else f"stopped after {len(parts)}/{total} points"
            self._say(self._summary(self._prefix))
        except Exception as exc:  # noqa: BLE001 - shown in the status line instead of a traceback
            self._fail(exc)
            if reraise and not isinstance(exc, ValueError):
                raise
            return False
        return finished

    def _summary(self, prefix: str) -> str:
        result = self.result
        if result is None or not result.lengths.size:
            return prefix
        stat = self.stat.value
        K = result.lengths
        parts = [prefix, f"K = {K[0]}–{K[-1]}" if K.size > 1 else f"K = {K[0]}"]
        last = ", ".join(f"{P.LABELS.get(a, a)} {abs(s[stat][-1]):.2g}" for a, s in result.stats.items())
        parts.append(f"{dict((v, k) for k, v in STAT_OPTIONS)[stat]} per element at K = {K[-1]}: {last}")
        if K.size > 1:
            slopes = []
            for a, s in result.stats.items():
                e1, e2 = abs(s[stat][0]), abs(s[stat][-1])
                if e1 > 0 and e2 > 0:
                    slopes.append(f"{P.LABELS.get(a, a)} {P.growth_exponent(K[0], e1, K[-1], e2):+.2f}")
            if slopes:
                parts.append("d log(error)/d log K: " + ", ".join(slopes))
        return " · ".join(parts)

    def _redraw(self) -> None:
        if self.result is None:
            return
        fig = precision_figure(self.result, self.stat.value)
        self.plot.outputs = (png_output(figure_png(fig), text="<error per element against inner length>"),)


def precision_figure(result, stat: str = "mean") -> Figure:
    """Log–log error per element against K of ``result`` (an :class:`ErrorVsLength`, or None), no pyplot."""
    fig = Figure(figsize=(7.5, 4.4))
    fig.subplots_adjust(left=0.13, right=0.97, bottom=0.13, top=0.9)
    ax = fig.add_subplot(1, 1, 1)
    if result is None or not result.lengths.size:
        ax.text(0.5, 0.5, "no data yet", ha="center", va="center", transform=ax.transAxes)
        return fig
    P.plot_error_vs_length(result, ax=ax, stat=stat, guides=result.lengths.size > 1)
    labels = getattr(result, "labels", None)
    if labels:  # name each point's basis set on a top axis
        fig.subplots_adjust(top=0.84)
        top = ax.secondary_xaxis("top")
        top.set_xticks([float(k) for k in result.lengths], labels=labels, fontsize=7)
        top.minorticks_off()
        ax.set_xlabel("inner length K = number of basis functions")
        ax.set_title(f"A @ B, {result.kind}: basis values × RHF orbitals", fontsize=10)
    if not any(np.any(np.abs(s[stat]) > 0) for s in result.stats.values()):
        ax.text(0.5, 0.5, "all errors are exactly 0", ha="center", va="center", transform=ax.transAxes)
    return fig


__all__ = ["PrecisionPanel", "precision_figure", "inner_lengths", "molecule_operands",
           "ARITHMETIC_OPTIONS", "KIND_OPTIONS", "STAT_OPTIONS"]
