"""The modified Amdahl law of study 004 (Lutsyshyn, QL package), Eqs. 16–18 and footnote 5.

The run time of the original program on one reference unit (one CPU core) is normalised to 1 and split
into three parts::

    R + S + P = 1
    R   (R_CPU)  the part that stays on the CPU (analysis, raw random numbers, I/O),
    S   (S_GPU)  the serial part moved to the accelerator (runs at the reference speed),
    P   (P_GPU)  the parallel part moved to the accelerator (M-fold faster).

Launch overheads are omitted, as in the study. The accelerations relative to the single-unit program are

    classic Amdahl        A(M)      = 1 / (S + (1 − S)/M)                 →  1/S
    synchronous (Eq. 18)  A_syn(M)  = 1 / (R + S + P/M)                   →  1/(R + S)
    masked (Eq. 16)       A_mask(M) = 1 / max(R, S + P/M)                 →  1/R      (R > S)
    complete masking (17) A_mask(M) = 1 / (S + P/M)         while S + P/M ≥ R

In the masked (asynchronous) mode the CPU part runs while the accelerator works, so only the slower of
the two sides counts. The masked curve reaches its maximum 1/R at the **saturation point**

    M* = P / (R − S)                  (R > S; for R ≤ S it never saturates: M* = ∞)

where both sides take the same time and A_mask/A_syn = 2 exactly; everywhere else the ratio is smaller
(``(a + b)/max(a, b) ≤ 2``: "two devices"). For R = 0.02, S = 0.005 (Fig. 1) the maxima are ×40 and
×50, M* = 65, and A_syn reaches 90 % of its maximum only at M = 351.

Footnote 5: if the CPU side itself runs on D threads, its time is ``R = S_CPU + P_CPU/D``
(:func:`cpu_resident_fraction`), while the accelerator's parallel share stays
``P = 1 − S_CPU − P_CPU − S_GPU`` (:func:`amdahl_threads`).

All functions are vectorised over ``M`` (and broadcast over the fractions) with numpy; a scalar input
gives a numpy scalar.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Phases",
    "amdahl",
    "amdahl_complete_masking",
    "amdahl_masked",
    "amdahl_synchronous",
    "amdahl_threads",
    "cpu_resident_fraction",
    "fit_phases",
    "masking_ratio",
    "max_masked",
    "max_synchronous",
    "parallel_fraction",
    "saturation_point",
    "workers_for_fraction_of_max",
]


def _workers(M) -> np.ndarray:
    M = np.asarray(M, dtype=float)
    if np.any(~(M > 0)):
        raise ValueError(f"M (parallel workers) must be positive, got {M!r}")
    return M


def _fraction(name: str, value) -> np.ndarray:
    value = np.asarray(value, dtype=float)
    if np.any(~((value >= 0) & (value <= 1))):
        raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r}")
    return value


def parallel_fraction(R, S):
    """P = 1 − R − S: the parallel share moved to the accelerator (``R + S ≤ 1`` is required)."""
    R, S = _fraction("R", R), _fraction("S", S)
    P = 1.0 - R - S
    if np.any(P < -1e-12):
        raise ValueError(f"R + S must not exceed 1, got R = {R!r}, S = {S!r}")
    return np.maximum(P, 0.0)


def _split(R, S, P):
    R, S = _fraction("R", R), _fraction("S", S)
    P = parallel_fraction(R, S) if P is None else _fraction("P", P)
    return R, S, P


def amdahl(M, S):
    """Classic Amdahl law: ``A(M) = (S + P)/(S + P/M) = 1/(S + (1 − S)/M)``, P = 1 − S.

    M is the number of parallel workers (speed-up of the parallel part), S the serial fraction.
    The limit M → ∞ is 1/S.
    """
    M, S = _workers(M), _fraction("S", S)
    return 1.0 / (S + (1.0 - S) / M)


def amdahl_synchronous(M, R, S, P=None):
    """Synchronous acceleration, Eq. 18: ``A_syn(M) = 1/(R_CPU + S_GPU + P_GPU/M)``.

    The CPU part R and the accelerator's time S + P/M add up. P defaults to 1 − R − S; pass it
    explicitly when R has been reduced by CPU threads (footnote 5, :func:`amdahl_threads`).
    Maximum (M → ∞): 1/(R + S).
    """
    M = _workers(M)
    R, S, P = _split(R, S, P)
    return 1.0 / (R + S + P / M)


def amdahl_masked(M, R, S, P=None):
    """Masked (asynchronous) acceleration, Eq. 16: ``A_mask(M) = 1/max(R_CPU, S_GPU + P_GPU/M)``.

    The CPU part runs while the accelerator works: only the slower side counts. P defaults to
    1 − R − S. Maximum: 1/R, reached at ``M* = P/(R − S)`` (:func:`saturation_point`) when R > S;
    if R ≤ S the curve approaches 1/S without reaching it.
    """
    M = _workers(M)
    R, S, P = _split(R, S, P)
    return 1.0 / np.maximum(R, S + P / M)


def amdahl_complete_masking(M, S, P):
    """Eq. 17, complete masking (the CPU part fully hidden): ``A = 1/(S + P/M) = M/(M S + P)``.

    R drops out. This equals :func:`amdahl_masked` wherever ``S + P/M ≥ R`` (M ≤ M*).
    """
    M = _workers(M)
    S, P = _fraction("S", S), _fraction("P", P)
    return M / (M * S + P)


def masking_ratio(M, R, S, P=None):
    """``A_mask(M)/A_syn(M) = (R + S + P/M)/max(R, S + P/M)``: between 1 and 2, equal to 2 at M*."""
    return amdahl_masked(M, R, S, P) / amdahl_synchronous(M, R, S, P)


def saturation_point(R, S, P=None):
    """M* = P/(R − S): the M at which the masked curve reaches its maximum 1/R (∞ when R ≤ S).

    At M*, ``S + P/M* = R``: the accelerator's time equals the CPU's, both are busy all the time,
    and A_mask/A_syn = 2 exactly. Beyond M* adding workers does not help the masked program.
    """
    R, S, P = _split(R, S, P)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(R > S, P / np.where(R > S, R - S, 1.0), np.inf)[()]


def max_synchronous(R, S):
    """lim_{M→∞} A_syn = 1/(R + S)."""
    R, S = _fraction("R", R), _fraction("S", S)
    return 1.0 / (R + S)


def max_masked(R, S):
    """Supremum of A_mask = 1/max(R, S): 1/R, reached at M* when R > S (approached as M → ∞ if R ≤ S)."""
    R, S = _fraction("R", R), _fraction("S", S)
    return 1.0 / np.maximum(R, S)


def workers_for_fraction_of_max(R, S, fraction, P=None, masked=False):
    """The M at which the acceleration reaches ``fraction`` (0 < f < 1) of its maximum.

    synchronous:  R + S + P/M = (R + S)/f   ⇒  M = f P / ((R + S)(1 − f))
    masked:       S + P/M = max(R, S)/f      ⇒  M = P / (max(R, S)/f − S)

    Fig. 1: R = 0.02, S = 0.005, f = 0.9 gives M = 351 synchronous and M = 56.6 masked — the
    masked curve "approaches its maximal without the slow tapering".
    """
    R, S, P = _split(R, S, P)
    f = np.asarray(fraction, dtype=float)
    if np.any(~((f > 0) & (f < 1))):
        raise ValueError(f"fraction must be in (0, 1), got {fraction!r}")
    if masked:
        return P / (np.maximum(R, S) / f - S)
    return f * P / ((R + S) * (1.0 - f))


def cpu_resident_fraction(S_cpu, P_cpu, D):
    """Footnote 5: the CPU-resident time when the CPU part runs on D threads, ``R = S_CPU + P_CPU/D``.

    S_CPU and P_CPU are the serial and thread-parallel shares of the CPU part (fractions of the
    single-unit program time).
    """
    D = np.asarray(D, dtype=float)
    if np.any(~(D >= 1)):
        raise ValueError(f"D (CPU threads) must be ≥ 1, got {D!r}")
    return _fraction("S_cpu", S_cpu) + _fraction("P_cpu", P_cpu) / D


def amdahl_threads(M, D, S_cpu, P_cpu, S_gpu, masked=True):
    """Eq. 16 (``masked=True``) or Eq. 18 with a D-thread CPU side (footnote 5).

    The program splits as ``S_CPU + P_CPU + S_GPU + P_GPU = 1``; the CPU side takes
    ``R = S_CPU + P_CPU/D`` and the accelerator ``S_GPU + P_GPU/M``.
    """
    S_cpu, P_cpu, S_gpu = _fraction("S_cpu", S_cpu), _fraction("P_cpu", P_cpu), _fraction("S_gpu", S_gpu)
    P_gpu = 1.0 - S_cpu - P_cpu - S_gpu
    if np.any(P_gpu < -1e-12):
        raise ValueError("S_cpu + P_cpu + S_gpu must not exceed 1")
    P_gpu = np.maximum(P_gpu, 0.0)
    R = cpu_resident_fraction(S_cpu, P_cpu, D)
    law = amdahl_masked if masked else amdahl_synchronous
    return law(M, np.minimum(R, 1.0), S_gpu, P_gpu)


@dataclass(frozen=True)
class Phases:
    """The split ``R + S + P = 1`` of a program, with the single-unit time it was normalised by.

    R, S, P       fractions of the single-unit (reference) time: CPU-resident, accelerator serial,
                  accelerator parallel
    R_err, …      their standard errors from repeated measurements (0 for single measurements)
    total_s       the single-unit program time T₁ = t_CPU + t_serial + M t_parallel, seconds
    """

    R: float
    S: float
    P: float
    total_s: float
    R_err: float = 0.0
    S_err: float = 0.0
    P_err: float = 0.0

    def synchronous(self, M):
        """Eq. 18 with these fractions."""
        return amdahl_synchronous(M, self.R, self.S, self.P)

    def masked(self, M):
        """Eq. 16 with these fractions."""
        return amdahl_masked(M, self.R, self.S, self.P)

    @property
    def saturation_point(self) -> float:
        """M* = P/(R − S)."""
        return float(saturation_point(self.R, self.S, self.P))

    @property
    def max_synchronous(self) -> float:
        return float(max_synchronous(self.R, self.S))

    @property
    def max_masked(self) -> float:
        return float(max_masked(self.R, self.S))

    def __str__(self):
        return (f"R = {self.R:.4g}, S = {self.S:.4g}, P = {self.P:.4g} (T₁ = {self.total_s:.4g} s): "
                f"max A_syn = {self.max_synchronous:.3g}, max A_mask = {self.max_masked:.3g}, "
                f"M* = {self.saturation_point:.3g}")


def _mean_err(x) -> tuple[float, float]:
    x = np.atleast_1d(np.asarray(x, dtype=float)).ravel()
    if x.size == 0 or np.any(~np.isfinite(x)) or np.any(x < 0):
        raise ValueError(f"phase times must be finite and non-negative, got {x!r}")
    err = float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else 0.0
    return float(np.mean(x)), err


def fit_phases(cpu_s, gpu_serial_s, gpu_parallel_s, M=1) -> Phases:
    """Turn measured phase times into the fractions R, S, P of the modified Amdahl law.

    cpu_s           time of the CPU-resident part (analysis, raw random numbers, …) per unit of work
    gpu_serial_s    time of the serial part of the moved work (runs at the reference speed)
    gpu_parallel_s  time of the parallel part of the moved work, measured with ``M`` parallel
                    workers (``M = 1``: measured on the reference unit itself)

    Each argument is one measurement or an array of repeated measurements (averaged; their standard
    errors are propagated). ``M`` may be an array matching ``gpu_parallel_s`` when the parallel part was
    timed at several worker counts: each measurement then estimates the single-unit time ``M·t``. The
    single-unit time is ``T₁ = t_CPU + t_serial + M t_parallel`` and ``R = t_CPU/T₁``, ``S = t_serial/T₁``,
    ``P = M t_parallel/T₁``.
    """
    Ms = np.atleast_1d(np.asarray(M, dtype=float))
    if np.any(~(Ms > 0)):
        raise ValueError(f"M must be positive, got {M!r}")
    par = np.atleast_1d(np.asarray(gpu_parallel_s, dtype=float))
    par1 = par * Ms if Ms.size in (1, par.size) else None
    if par1 is None:
        raise ValueError("M must be a scalar or have one entry per gpu_parallel_s measurement")
    (c, dc), (s, ds), (p, dp) = _mean_err(cpu_s), _mean_err(gpu_serial_s), _mean_err(par1)
    total = c + s + p
    if not total > 0:
        raise ValueError("the phase times sum to zero")
    fr = np.array([c, s, p]) / total
    var = np.array([dc, ds, dp]) ** 2
    # error propagation for x_i / Σx: ∂f_i/∂x_j = (δ_ij − f_i)/T
    jac = (np.eye(3) - fr[:, None]) / total
    err = np.sqrt(jac**2 @ var)
    return Phases(R=float(fr[0]), S=float(fr[1]), P=float(fr[2]), total_s=float(total),
                  R_err=float(err[0]), S_err=float(err[1]), P_err=float(err[2]))
