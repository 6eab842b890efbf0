"""Analysis-period theory of study 004 (Section 4, Eqs. 10–15) and the fits of its Fig. 3.

A generator (the GPU, or a CPU thread) advances the Markov chains; every ``m`` macroupdates it writes
the configurations out and an analysis (energy, g(r)) consumes them. With

    t_G   time to generate one macroupdate,    t_A   time of one analysis,    α = t_A / t_G,
    m_c   autocorrelation time of the analysed quantity, in macroupdates (m_c = Σ_{k≥1} R(k)),

the study's performance model is

    Eq. 10   σ = σ₀/√n · √(1 + 2 m_c/m)                  (n analysed samples)
    Eq. 11   t_step = m t_G + t_A                         sequential: generate, then analyse
    Eq. 13   t_step = max(m t_G, t_A)                     masked: both run at the same time
             t(σ*) = (σ₀/σ*)² (1 + 2 m_c/m) t_step          time to reach the error σ*
    Eq. 12   m_opt = √(2 m_c α)                            minimises the sequential t(σ*)
    Eq. 14   m_opt = α                                    minimises the masked t(σ*)

The **penalty** of analysing every ``m`` macroupdates is ``P(m) = t(σ*; m)/t(σ*; m_opt)``. Re-derived
(the OCR of Eq. 15 is damaged), for m = 1:

    P_seq(1)  = (α + 1)(1 + 2 m_c) / (√α + √(2 m_c))²      → α + 1  as m_c → ∞
    P_mask(1) = α (1 + 2 m_c) / (α + 2 m_c)                → α      as m_c → ∞   (α ≥ 1)

and for general m (both independent of m_c, hence "choose m ≈ α from simple benchmarking"):

    1 ≤ P_seq(m)  ≤ 1 + max(α/m, (m − 1)/(α + 1))
    1 ≤ P_mask(m) ≤ max(α/m, m/α)

The bounds are the limits m_c → ∞ and m_c → 0 with the analysis period restricted to m ≥ 1 (``m_min``
below); the unrestricted optimum √(2 m_c α) → 0 for m_c → 0 is not a possible analysis period.

Eq. 10 is the small-m approximation; for an exponentially decaying autocorrelation the exact factor is
:func:`error_factor_exponential`, smaller for m ≳ m_c (note 004 §7.8).

Fig. 3 (load masking): with a fixed total of K macroupdates and w = K/m writeouts, the sequential run
time is ``a + b/m`` with a = K t_G and b = K t_A (:func:`fit_a_plus_b_over_m`); the masked run time
``max(K t_G, K t_A/m)`` is flat above the threshold m* = α and ``∝ 1/m`` below
(:func:`fit_masked_threshold`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "InverseFit",
    "ThresholdFit",
    "error_factor",
    "error_factor_exponential",
    "fit_a_plus_b_over_m",
    "fit_masked_threshold",
    "optimal_period_masked",
    "optimal_period_sequential",
    "penalty_bound_masked",
    "penalty_bound_sequential",
    "penalty_masked",
    "penalty_sequential",
    "statistical_error",
    "step_time_masked",
    "step_time_sequential",
    "time_to_error",
    "total_time_masked",
    "total_time_sequential",
]


def _positive(name, x, allow_zero=False, allow_inf=False):
    x = np.asarray(x, dtype=float)
    ok = (x >= 0) if allow_zero else (x > 0)
    if not allow_inf:
        ok &= np.isfinite(x)
    if np.any(~ok):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}"
                         f"{'' if allow_inf else ' and finite'}, got {x!r}")
    return x


# --- Eq. 10: the error of an analysis every m macroupdates ------------------------------------------

def error_factor(m, m_c):
    """Eq. 10's inflation of the error by serial correlation: ``√(1 + 2 m_c/m)``.

    m     analysis period in macroupdates;  m_c   autocorrelation time in macroupdates.
    """
    m, m_c = _positive("m", m), _positive("m_c", m_c, allow_zero=True, allow_inf=True)
    return np.sqrt(1.0 + 2.0 * m_c / m)


def error_factor_exponential(m, m_c):
    """The exact factor for an exponential autocorrelation R(k) = ρᵏ with Σ_{k≥1} ρᵏ = m_c.

    ρ = m_c/(1 + m_c). Analysing every m steps sees the correlation ρᵐ, so
    ``σ √n/σ₀ = √((1 + ρᵐ)/(1 − ρᵐ))``. Equal to :func:`error_factor` at m = 1; for m ≫ m_c it tends to
    1 + ρᵐ, while Eq. 10 only falls as 1 + m_c/m.
    """
    m, m_c = _positive("m", m), _positive("m_c", m_c, allow_zero=True)
    rho_m = (m_c / (1.0 + m_c)) ** m
    return np.sqrt((1.0 + rho_m) / (1.0 - rho_m))


def statistical_error(sigma0, n_samples, m, m_c):
    """Eq. 10: ``σ = (σ₀/√n) √(1 + 2 m_c/m)`` for n samples analysed every m macroupdates."""
    n = _positive("n_samples", n_samples)
    return np.asarray(sigma0, dtype=float) / np.sqrt(n) * error_factor(m, m_c)


# --- Eqs. 11–14: step times, time to error, optimal periods ---------------------------------------------

def step_time_sequential(m, t_G, t_A):
    """Eq. 11: one writeout period when generation and analysis alternate, ``m t_G + t_A``."""
    m = _positive("m", m, allow_zero=True)
    return m * np.asarray(t_G, dtype=float) + np.asarray(t_A, dtype=float)


def step_time_masked(m, t_G, t_A):
    """Eq. 13: one writeout period when analysis runs while the next m macroupdates are generated,
    ``max(m t_G, t_A)``."""
    m = _positive("m", m, allow_zero=True)
    return np.maximum(m * np.asarray(t_G, dtype=float), np.asarray(t_A, dtype=float))


def time_to_error(m, t_G, t_A, m_c, sigma0=1.0, sigma_target=1.0, masked=False):
    """Wall time to reach the error ``sigma_target``: ``(σ₀/σ*)² (1 + 2 m_c/m) t_step(m)``.

    ``n = (σ₀/σ*)² (1 + 2 m_c/m)`` analysed samples are needed (Eq. 10), each costing one step
    (Eq. 11, or Eq. 13 when ``masked``). Minimised by m = √(2 m_c α) (sequential) or m = α (masked).
    """
    step = (step_time_masked if masked else step_time_sequential)(m, t_G, t_A)
    return (np.asarray(sigma0, float) / np.asarray(sigma_target, float)) ** 2 * error_factor(m, m_c) ** 2 * step


def optimal_period_sequential(alpha, m_c):
    """Eq. 12: ``m_opt = √(2 m_c α)``, α = t_A/t_G (a real number; round it to an allowed period)."""
    alpha = _positive("alpha", alpha, allow_zero=True)
    m_c = _positive("m_c", m_c, allow_zero=True)
    return np.sqrt(2.0 * m_c * alpha)


def optimal_period_masked(alpha):
    """Eq. 14: ``m_opt = α``: generation of m macroupdates takes exactly as long as one analysis,
    so both devices are busy all the time (independent of m_c)."""
    return _positive("alpha", alpha, allow_zero=True) * 1.0


# --- Eq. 15: penalties ------------------------------------------------------------------------------------

def _cost_sequential(m, alpha, m_c):
    """(1 + 2m_c/m)(m + α) in units of (σ₀/σ*)² t_G, with its m → 0 limits where they are finite."""
    with np.errstate(divide="ignore", invalid="ignore"):
        general = (m + 2.0 * m_c) * (m + alpha) / m
        return np.where(m_c == 0, m + alpha, np.where(alpha == 0, m + 2.0 * m_c, general))


def _cost_masked(m, alpha, m_c):
    """(1 + 2m_c/m) max(m, α) in units of (σ₀/σ*)² t_G."""
    with np.errstate(divide="ignore", invalid="ignore"):
        general = (m + 2.0 * m_c) * np.maximum(m, alpha) / m
        return np.where(m_c == 0, np.maximum(m, alpha), np.where(alpha == 0, m + 2.0 * m_c, general))


def _penalty_args(m, alpha, m_c, m_min):
    m = _positive("m", m)
    alpha = _positive("alpha", alpha, allow_zero=True)
    m_c = _positive("m_c", m_c, allow_zero=True, allow_inf=True)
    if not (m_min >= 0 and math.isfinite(m_min)):
        raise ValueError(f"m_min must be a finite number ≥ 0, got {m_min!r}")
    return np.broadcast_arrays(m, alpha, m_c)


def penalty_sequential(m, alpha, m_c, m_min=1.0):
    """Sequential penalty ``P_seq(m) = t(σ*; m)/t(σ*; m_opt)``, m_opt = max(m_min, √(2 m_c α)).

    For m = 1 and √(2 m_c α) ≥ m_min this is Eq. 15,
    ``(α + 1)(1 + 2 m_c)/(√α + √(2 m_c))²``; m_c = ∞ gives the limit ``1 + α/m``. ``m_min`` (default 1,
    the smallest possible analysis period) clips the optimum; pass 0 for the unconstrained formula.
    """
    m, alpha, m_c = _penalty_args(m, alpha, m_c, m_min)
    finite = np.isfinite(m_c)
    mc = np.where(finite, m_c, 0.0)
    m_opt = np.maximum(m_min, np.sqrt(2.0 * mc * alpha))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = _cost_sequential(m, alpha, mc) / _cost_sequential(m_opt, alpha, mc)
    return np.where(finite, ratio, 1.0 + alpha / m)[()]


def penalty_masked(m, alpha, m_c, m_min=1.0):
    """Masked penalty ``P_mask(m) = t(σ*; m)/t(σ*; m_opt)``, m_opt = max(m_min, α).

    For m = 1 and α ≥ 1: ``α (1 + 2 m_c)/(α + 2 m_c) ≤ α`` — the cost is "unnecessary idling of the
    accelerator" while the CPU analyses. m_c = ∞ gives ``max(1, α/m)`` (for α ≥ m_min).
    """
    m, alpha, m_c = _penalty_args(m, alpha, m_c, m_min)
    finite = np.isfinite(m_c)
    mc = np.where(finite, m_c, 0.0)
    m_opt = np.maximum(m_min, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = _cost_masked(m, alpha, mc) / _cost_masked(m_opt, alpha, mc)
        limit = np.maximum(m, alpha) / m / (np.maximum(m_opt, alpha) / m_opt)
    return np.where(finite, ratio, limit)[()]


def penalty_bound_sequential(m, alpha):
    """Upper bound of the sequential penalty for any m_c: ``1 + max(α/m, (m − 1)/(α + 1))``."""
    m, alpha = _positive("m", m), _positive("alpha", alpha, allow_zero=True)
    return 1.0 + np.maximum(alpha / m, (m - 1.0) / (alpha + 1.0))


def penalty_bound_masked(m, alpha):
    """Upper bound of the masked penalty for any m_c: ``max(α/m, m/α)`` (α > 0)."""
    m, alpha = _positive("m", m), _positive("alpha", alpha)
    return np.maximum(alpha / m, m / alpha)


# --- whole runs (Fig. 3) -------------------------------------------------------------------------------------

def total_time_sequential(m, total_macroupdates, t_G, t_A):
    """A run of K macroupdates with an analysis every m: ``(K/m)(m t_G + t_A) = K t_G + K t_A/m``
    (the ``a + b/m`` law of the synchronous curve in Fig. 3)."""
    m = _positive("m", m)
    K = _positive("total_macroupdates", total_macroupdates)
    return (K / m) * step_time_sequential(m, t_G, t_A)


def total_time_masked(m, total_macroupdates, t_G, t_A, fill=True):
    """A masked run of K macroupdates with w = K/m writeouts.

    ``fill=False``: the steady-state law ``w max(m t_G, t_A) = max(K t_G, K t_A/m)``, flat above
    m = α. ``fill=True`` adds the pipeline's fill and drain: the first writeout cannot be analysed
    before it exists, and the last analysis starts after the generator stops,
    ``m t_G + (w − 1) max(m t_G, t_A) + t_A``.
    """
    m = _positive("m", m)
    K = _positive("total_macroupdates", total_macroupdates)
    t_G, t_A = np.asarray(t_G, dtype=float), np.asarray(t_A, dtype=float)
    w = K / m
    if not fill:
        return w * step_time_masked(m, t_G, t_A)
    return m * t_G + (w - 1.0) * step_time_masked(m, t_G, t_A) + t_A


# --- fits ----------------------------------------------------------------------------------------------------

def _weighted_lstsq(X, y, w):
    """Weighted linear least squares: coefficients, unscaled covariance, χ²."""
    sw = np.sqrt(w)
    A = X * sw[:, None]
    coef, *_ = np.linalg.lstsq(A, y * sw, rcond=None)
    resid = (y - X @ coef) * sw
    cov = np.linalg.pinv(A.T @ A)
    return coef, cov, float(resid @ resid)


def _fit_inputs(m, t, sigma, n_min):
    m = np.asarray(m, dtype=float).ravel()
    t = np.asarray(t, dtype=float).ravel()
    if m.shape != t.shape:
        raise ValueError(f"m and t must have the same length, got {m.size} and {t.size}")
    if np.any(~(m > 0)) or np.any(~np.isfinite(m)) or np.any(~np.isfinite(t)):
        raise ValueError("m must be positive and finite, t finite")
    if sigma is None:
        w = np.ones_like(t)
    else:
        sigma = np.broadcast_to(np.asarray(sigma, dtype=float), t.shape)
        if np.any(~(sigma > 0)):
            raise ValueError("sigma must be positive")
        w = 1.0 / sigma**2
    if np.unique(m).size < n_min:
        raise ValueError(f"need at least {n_min} distinct m values, got {np.unique(m).size}")
    return m, t, w


@dataclass(frozen=True)
class InverseFit:
    """A weighted least-squares fit ``t(m) = a + b/m``.

    a, b, a_err, b_err   coefficients and standard errors
    covariance           2×2 covariance of (a, b)
    chi2, dof            χ² and degrees of freedom (n − 2)
    absolute_sigma       True when errors come from the given σ; False when scaled by χ²/dof
                         (no σ given: the scatter of the points sets the error)
    """

    a: float
    b: float
    a_err: float
    b_err: float
    covariance: np.ndarray = field(repr=False)
    chi2: float
    dof: int
    absolute_sigma: bool

    def __call__(self, m):
        return self.a + self.b / np.asarray(m, dtype=float)

    @property
    def reduced_chi2(self) -> float:
        return self.chi2 / self.dof if self.dof > 0 else float("nan")

    @property
    def b_over_a(self) -> float:
        """b/a: for the synchronous curve of a fixed-K run, a = K t_G and b = K t_A, so b/a = α."""
        return self.b / self.a

    @property
    def b_over_a_err(self) -> float:
        r = self.b / self.a
        g = np.array([-r / self.a, 1.0 / self.a])
        return float(np.sqrt(g @ self.covariance @ g))

    def __str__(self):
        from ..stats import format_value_error

        return (f"a = {format_value_error(self.a, self.a_err)}, b = {format_value_error(self.b, self.b_err)} "
                f"(χ²/dof = {self.reduced_chi2:.2f})")


def fit_a_plus_b_over_m(m, t, sigma=None) -> InverseFit:
    """Weighted least-squares fit of ``t = a + b/m`` (Fig. 3: every line is such a fit).

    With ``sigma`` (per-point standard errors) the weights are 1/σ² and the errors of a, b come
    from the covariance as is. Without it, all points weigh the same and the covariance is scaled by
    χ²/dof, so the scatter of the points sets the errors.
    """
    m, t, w = _fit_inputs(m, t, sigma, 2)
    X = np.column_stack([np.ones_like(m), 1.0 / m])
    coef, cov, chi2 = _weighted_lstsq(X, t, w)
    dof = m.size - 2
    if sigma is None:
        cov = cov * (chi2 / dof if dof > 0 else float("nan"))
    err = np.sqrt(np.diag(cov))
    return InverseFit(a=float(coef[0]), b=float(coef[1]), a_err=float(err[0]), b_err=float(err[1]),
                      covariance=cov, chi2=chi2, dof=dof, absolute_sigma=sigma is not None)


@dataclass(frozen=True)
class ThresholdFit:
    """A fit of the masked curve: ``t(m) = a + b/m`` below the threshold m*, ``c = a + b/m*`` above.

    threshold              m* (where the CPU-bound branch meets the flat, generator-bound one)
    threshold_low/high     the interval where the profile χ² stays within Δχ² of its minimum
                           (Δχ² = 1 with absolute σ, χ²_min/dof otherwise): a ±1σ range
    a, b, c                the two branches
    chi2, dof              χ² at the optimum and n − 3
    """

    threshold: float
    threshold_low: float
    threshold_high: float
    a: float
    b: float
    c: float
    chi2: float
    dof: int
    absolute_sigma: bool
    profile: tuple = field(repr=False, default=())

    def __call__(self, m):
        m = np.asarray(m, dtype=float)
        return np.where(m < self.threshold, self.a + self.b / m, self.c)

    @property
    def threshold_err(self) -> float:
        """Half the width of the ±1σ interval of m*."""
        return 0.5 * (self.threshold_high - self.threshold_low)

    @property
    def reduced_chi2(self) -> float:
        return self.chi2 / self.dof if self.dof > 0 else float("nan")

    def __str__(self):
        return (f"m* = {self.threshold:.3g} (1σ: {self.threshold_low:.3g}–{self.threshold_high:.3g}), "
                f"below: {self.a:.4g} + {self.b:.4g}/m, above: {self.c:.4g} (χ²/dof = {self.reduced_chi2:.2f})")


def fit_masked_threshold(m, t, sigma=None, n_grid: int = 400) -> ThresholdFit:
    """Fit the asynchronous curve of Fig. 3: ``a + b/m`` below a threshold m*, constant above.

    The model is continuous, ``t(m) = a + b/min(m, m*)`` — for the ideal masked run
    ``max(K t_G, K t_A/m)`` this gives a = 0, b = K t_A, c = K t_G and m* = α. For a fixed m* it is linear
    in (a, b); m* is found by minimising the profile χ² over a logarithmic grid between the smallest
    and the largest m (then refined), and its ±1σ interval from the profile. Weights as in
    :func:`fit_a_plus_b_over_m`.
    """
    m, t, w = _fit_inputs(m, t, sigma, 3)
    u = np.unique(m)
    grid = np.unique(np.concatenate([np.geomspace(u[0], u[-1], n_grid)[1:], u[1:]]))

    def solve(ms):
        X = np.column_stack([np.ones_like(m), 1.0 / np.minimum(m, ms)])
        return _weighted_lstsq(X, t, w)

    chi2 = np.array([solve(ms)[2] for ms in grid])
    k = int(np.argmin(chi2))
    # refine between the neighbours of the best grid point (the profile is smooth between data points)
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    fine = np.geomspace(lo, hi, 101) if hi > lo else np.array([grid[k]])
    chi2_fine = np.array([solve(ms)[2] for ms in fine])
    j = int(np.argmin(chi2_fine))
    best, chi2_best = float(fine[j]), float(chi2_fine[j])
    if chi2[k] < chi2_best:
        best, chi2_best = float(grid[k]), float(chi2[k])
    coef, _, _ = solve(best)
    dof = m.size - 3
    delta = 1.0 if sigma is not None else (chi2_best / dof if dof > 0 else float("nan"))
    all_m = np.concatenate([grid, fine])
    all_chi2 = np.concatenate([chi2, chi2_fine])
    inside = all_m[all_chi2 <= chi2_best + delta] if np.isfinite(delta) else np.array([best])
    low, high = (float(inside.min()), float(inside.max())) if inside.size else (best, best)
    a, b = float(coef[0]), float(coef[1])
    order = np.argsort(all_m)
    return ThresholdFit(threshold=best, threshold_low=min(low, best), threshold_high=max(high, best), a=a, b=b,
                        c=a + b / best, chi2=chi2_best, dof=dof, absolute_sigma=sigma is not None,
                        profile=(all_m[order], all_chi2[order]))
