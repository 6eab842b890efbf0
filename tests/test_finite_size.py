"""The canonical finite-size correction (qmckit.stats.finite_size) on an ideal gas, where it is exact."""
from __future__ import annotations

import math

import numpy as np
import pytest

from qmckit.stats import canonical_shift, density_curvature, structure_factor_at_zero

WIDTH = 1.0  # Gaussian pair observable a(r) = exp(−r²/2w²), ∫ a d³r = (2π)^{3/2} w³
INTEGRAL = (2 * math.pi) ** 1.5 * WIDTH ** 3


def bulk_pair_mean(density):
    """Bulk ⟨Σ_{i<j} a(r_ij)⟩/N of an ideal gas: (ρ/2) ∫ a d³r."""
    return 0.5 * np.asarray(density) * INTEGRAL


def test_ideal_gas_pair_sum_at_fixed_n_matches_the_canonical_correction():
    # N uniform points in a periodic box (an ideal gas at fixed N, S(0) = 1): the exact canonical mean is
    # (N − 1)/(2V) ∫ a, i.e. the bulk value times (1 − 1/N). The curvature comes from a density scan of the
    # bulk formula, as a simulation would measure it.
    n, box, samples = 8, 10.0, 20000
    rng = np.random.default_rng(3)
    x = rng.random((samples, n, 3)) * box
    d = x[:, :, None, :] - x[:, None, :, :]
    d -= box * np.rint(d / box)
    r2 = (d ** 2).sum(axis=-1)
    upper = np.triu_indices(n, 1)
    per_particle = np.exp(-0.5 * r2[:, upper[0], upper[1]] / WIDTH ** 2).sum(axis=1) / n
    mean, error = per_particle.mean(), per_particle.std(ddof=1) / math.sqrt(samples)
    density = n / box ** 3
    densities = density * np.linspace(0.8, 1.2, 7)
    curvature, curvature_error = density_curvature(densities, bulk_pair_mean(densities), np.full(7, 1e-9), density)
    assert math.isclose(curvature, density * INTEGRAL, rel_tol=1e-6) and curvature_error < 1e-6
    corrected = bulk_pair_mean(density) + canonical_shift(n, 1.0, curvature)
    assert math.isclose(corrected, bulk_pair_mean(density) * (1 - 1 / n), rel_tol=1e-9)
    assert abs(mean - corrected) < 4 * error  # the fixed-N average agrees with the corrected value …
    assert abs(mean - bulk_pair_mean(density)) > 10 * error  # … and not with the bulk one


def test_structure_factor_extrapolates_a_quadratic_exactly():
    k = np.array([0.2, 0.28, 0.35, 0.4, 0.45])
    s0, s0_error = structure_factor_at_zero(k, 0.075 + 0.15 * k ** 2, np.full(5, 1e-4), shells=4)
    assert math.isclose(s0, 0.075, abs_tol=1e-12) and 0 < s0_error < 1e-3


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="n must be"):
        canonical_shift(1, 0.1, 50.0)
    with pytest.raises(ValueError, match="s0 must be"):
        canonical_shift(64, -0.1, 50.0)
    with pytest.raises(ValueError, match="at least 5 densities"):
        density_curvature([1, 2, 3], [1, 2, 3], [1, 1, 1], 2.0)
    with pytest.raises(ValueError, match="shells"):
        structure_factor_at_zero([0.1, 0.2], [0.1, 0.2], [1, 1])
