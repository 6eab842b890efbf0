"""Time-step extrapolation: weighted least-squares fits of E(Δτ) and their Δτ → 0 limit.

Study 002 fits E(Δτ) = E₀ + c Δτ through the three smallest time steps (Numerical Recipes
§15.4); :func:`extrapolate` does that and the quadratic fit, with E₀ ± σ from the fit's
covariance and χ²/dof, and :func:`best_extrapolation` picks how many of the smallest Δτ to use.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Extrapolation:
    """A weighted fit E(Δτ) = Σ_k c_k Δτ^k of degree ``order`` through ``n_points`` time steps.

    energy, error   E₀ = c₀ and its standard error (from the covariance of the weighted fit,
                    not rescaled by χ²)
    coefficients    c_0, c_1, …;  covariance of the coefficients
    chi2, dof       χ² of the fit and its degrees of freedom (n_points − order − 1)
    dts             the time steps used
    """

    energy: float
    error: float
    coefficients: np.ndarray
    covariance: np.ndarray
    chi2: float
    dof: int
    order: int
    dts: np.ndarray = field(repr=False)

    @property
    def n_points(self) -> int:
        return len(self.dts)

    @property
    def reduced_chi2(self) -> float:
        return self.chi2 / self.dof if self.dof > 0 else float("nan")

    def __call__(self, dt):
        """The fitted E(Δτ)."""
        return np.polyval(self.coefficients[::-1], np.asarray(dt, dtype=float))

    def band(self, dt):
        """Standard error of the fitted curve at ``dt`` (from the coefficient covariance)."""
        dt = np.atleast_1d(np.asarray(dt, dtype=float))
        basis = np.vander(dt, self.order + 1, increasing=True)
        return np.sqrt(np.einsum("ij,jk,ik->i", basis, self.covariance, basis))

    def __str__(self):
        from .estimate import format_value_error

        return (f"E0 = {format_value_error(self.energy, self.error)} "
                f"({'linear' if self.order == 1 else 'quadratic' if self.order == 2 else f'order {self.order}'}, "
                f"{self.n_points} points, χ²/dof = {self.reduced_chi2:.2f})")


def extrapolate(dts, energies, errors, order: int = 1, n_points: int | None = 3) -> Extrapolation:
    """Fit E(Δτ) through the ``n_points`` smallest time steps (all if None) and return E(0).

    dts, energies, errors : 1-D arrays of equal length (time step, estimate, its error > 0)
    order : 1 (linear, as in study 002) or 2 (quadratic)
    """
    dts, energies, errors = (np.asarray(x, dtype=float) for x in (dts, energies, errors))
    if not (dts.ndim == energies.ndim == errors.ndim == 1 and dts.size == energies.size == errors.size):
        raise ValueError("dts, energies and errors must be 1-D arrays of equal length")
    if order < 0:
        raise ValueError(f"order must be ≥ 0, got {order}")
    if np.any(dts < 0) or not np.all(np.isfinite(dts)):
        raise ValueError("dts must be finite and ≥ 0")
    if np.any(errors <= 0) or not np.all(np.isfinite(errors)):
        raise ValueError("errors must be finite and > 0 (a zero error cannot weight a fit)")
    keep = np.argsort(dts)[: (n_points or dts.size)]
    x, y, s = dts[keep], energies[keep], errors[keep]
    if x.size < order + 1:
        raise ValueError(f"n_points must be ≥ order + 1 = {order + 1}, got {x.size}")
    # weighted least squares: minimise Σ ((y − A c)/σ)²; cov = (Aᵀ W A)⁻¹
    design = np.vander(x, order + 1, increasing=True) / s[:, None]
    coefficients, *_ = np.linalg.lstsq(design, y / s, rcond=None)
    covariance = np.linalg.inv(design.T @ design)
    residual = (y - np.vander(x, order + 1, increasing=True) @ coefficients) / s
    return Extrapolation(energy=float(coefficients[0]), error=float(math.sqrt(covariance[0, 0])),
                         coefficients=coefficients, covariance=covariance, chi2=float(residual @ residual),
                         dof=int(x.size - order - 1), order=order, dts=x)


def best_extrapolation(dts, energies, errors, orders=(1, 2), min_points: int = 3) -> Extrapolation:
    """Among fits of the given orders through the k smallest Δτ (k ≥ min_points), the one with
    the largest χ² probability; ties favour fewer parameters. Needs scipy for the χ² law."""
    from scipy.stats import chi2 as chi2_law

    best, best_p = None, -1.0
    n = len(dts)
    for order in orders:
        for k in range(max(min_points, order + 2), n + 1):
            fit = extrapolate(dts, energies, errors, order=order, n_points=k)
            p = float(chi2_law.sf(fit.chi2, fit.dof))
            if p > best_p + 1e-12:
                best, best_p = fit, p
    if best is None:
        raise ValueError(f"need at least {max(min_points, 3)} time steps, got {n}")
    if best_p < 0.01:
        warnings.warn(f"best time-step fit has χ² probability {best_p:.2g}: E(Δτ) is not described well",
                      RuntimeWarning, stacklevel=2)
    return best


def plot_extrapolation(ax, dts, energies, errors, fit: Extrapolation | None = None, label: str = "",
                       color=None, reference: tuple[float, float] | None = None, reference_label: str = ""):
    """Draw E(Δτ) with error bars, the fit with its 1σ band and E₀ at Δτ = 0 on a matplotlib axis."""
    dts, energies, errors = (np.asarray(x, dtype=float) for x in (dts, energies, errors))
    line = ax.errorbar(dts, energies, yerr=errors, fmt="o", ms=4, capsize=2, color=color, label=label)
    color = line[0].get_color()
    if fit is not None:
        grid = np.linspace(0.0, fit.dts.max() * 1.05, 100)
        ax.plot(grid, fit(grid), "-", color=color, lw=1)
        ax.fill_between(grid, fit(grid) - fit.band(grid), fit(grid) + fit.band(grid), color=color, alpha=0.2, lw=0)
        ax.errorbar([0.0], [fit.energy], yerr=[fit.error], fmt="s", ms=5, capsize=3, color=color)
    if reference is not None:
        value, error = reference
        ax.axhspan(value - error, value + error, color="0.6", alpha=0.4, lw=0)
        ax.axhline(value, color="0.4", lw=0.8, ls="--", label=reference_label)
    ax.set_xlabel("Δτ")
    ax.set_ylabel("E")
    return ax
