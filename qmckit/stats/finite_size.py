"""The canonical-ensemble finite-size correction of intensive averages (Lebowitz & Percus 1961).

A Monte Carlo run at fixed N in a periodic box samples the canonical ensemble. For a fluid with
short-ranged correlations the grand-canonical average of an intensive quantity in a periodic box has no
1/N term, and inverting ⟨A⟩_GC = Σ_N P(N) ⟨A⟩_N gives the canonical one (J. L. Lebowitz and J. K. Percus,
Phys. Rev. 122, 1675 (1961); J. L. Lebowitz, J. K. Percus and L. Verlet, Phys. Rev. 153, 250 (1967)):

    ⟨A⟩_N / N = a(ρ) − S(0) ρ ε_A''(ρ) / (2N) + O(N⁻²),        ε_A(ρ) = ρ a(ρ),

with a(ρ) the bulk value per particle, ε_A the density of A, ε_A'' its second derivative in ρ at fixed
"temperature", and S(0) = ⟨δN²⟩/⟨N⟩ the k → 0 limit of the bulk structure factor. Variational Monte Carlo
samples |ψ|² as a classical Boltzmann weight, so the same holds there with the trial function held fixed:
a(ρ) is measured at fixed variational parameters and S(0) is that of the |ψ|² fluid (a Jastrow factor
without a long-range part has S(0) > 0; one with the phonon r⁻² tail has S(0) = 0 and no such term).

The canonical S(k) has no k = 0 point, so S(0) is extrapolated from the smallest wave vectors of a large
box (:func:`structure_factor_at_zero`); ρ ε'' comes from a density scan at fixed ψ
(:func:`density_curvature`). Checked in ``tests/test_finite_size.py`` on an ideal gas, where the formula
is exact, and in ``notebooks/helium4.ipynb`` §4 on liquid ⁴He VMC, where it removes the 1/N residual left
by the potential tail correction.
"""
from __future__ import annotations

import numpy as np


def canonical_shift(n, s0: float, curvature):
    """⟨A⟩_N/N − a(ρ): the leading canonical finite-size term −S(0) ρ ε''(ρ) / (2N).

    n: number of particles N (scalar or array); s0: S(0) of the bulk fluid (dimensionless);
    curvature: ρ ε_A''(ρ) in the units of A per particle (e.g. K), from :func:`density_curvature`.
    Subtract it from a fixed-N average to estimate the bulk value.
    """
    n = np.asarray(n, dtype=float)
    if np.any(n < 2):
        raise ValueError(f"n must be ≥ 2 particles, got {n!r}")
    if not s0 >= 0:
        raise ValueError(f"s0 must be a structure factor ≥ 0, got {s0!r}")
    return -0.5 * s0 * np.asarray(curvature, dtype=float) / n


def density_curvature(densities, values, errors, density: float, degree: int = 3) -> tuple[float, float]:
    """ρ₀ ε''(ρ₀) with ε(ρ) = ρ a(ρ), from per-particle averages a(ρ_k) ± σ_k at fixed ψ (or temperature).

    A weighted polynomial of ``degree`` in x = ρ/ρ₀ − 1 is fitted to (ρ/ρ₀) a = ε/ρ₀, whose second
    derivative in x is ρ₀ ε''(ρ₀). Returns (value, error) in the units of ``values``; the error is the
    fit's (unscaled by χ²), so the scan's points should be independent runs.
    """
    densities, values, errors = (np.asarray(a, dtype=float) for a in (densities, values, errors))
    if not (densities.shape == values.shape == errors.shape and densities.ndim == 1):
        raise ValueError("densities, values and errors must be 1-D arrays of one length")
    if len(densities) < degree + 2:
        raise ValueError(f"a degree-{degree} fit needs at least {degree + 2} densities, got {len(densities)}")
    if np.any(errors <= 0):
        raise ValueError("errors must be positive")
    scale = densities / density
    coefficients, covariance = np.polyfit(scale - 1.0, scale * values, degree, w=1.0 / (scale * errors),
                                          cov="unscaled")
    return 2.0 * float(coefficients[-3]), 2.0 * float(np.sqrt(covariance[-3, -3]))


def structure_factor_at_zero(k, s, errors, shells: int = 4) -> tuple[float, float]:
    """S(0) by a weighted straight line S = S₀ + c k² through the ``shells`` smallest wave vectors.

    k in inverse length, S(k) and its errors dimensionless (one point per shell, e.g. from
    :func:`qmckit.systems.helium.structure_factor` averaged over batches). Returns (S₀, error).
    """
    k, s, errors = (np.asarray(a, dtype=float)[:shells] for a in (k, s, errors))
    if len(k) < 3:
        raise ValueError(f"shells must give at least 3 wave vectors, got {len(k)}")
    design = np.column_stack([np.ones_like(k), k ** 2]) / errors[:, None]
    coefficients, *_ = np.linalg.lstsq(design, s / errors, rcond=None)
    covariance = np.linalg.inv(design.T @ design)
    return float(coefficients[0]), float(np.sqrt(covariance[0, 0]))
