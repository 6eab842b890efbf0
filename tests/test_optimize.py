"""Correlated sampling and parameter optimisation against exact answers.

Non-interacting trapped bosons (a = 0): E(α) = (2 + λ)(α/2 + 1/(8α)) per particle for any λ, with
its minimum, and an exact zero of the variance, at α = ½. Interacting bosons (a > 0): the
repulsion widens the cloud, so the optimal α lies below ½.
"""
import numpy as np
import pytest

from qmckit.methods.optimize import (OptimizationResult, correlated_energies, evaluate, optimize_parameter,
                                     sample_configurations, with_parameter)
from qmckit.stats import estimate
from qmckit.systems import make_system
from qmckit.systems.bec import noninteracting_energy_per_particle


@pytest.fixture(scope="module")
def free_samples():
    system = make_system("bec", n=20, lam=1.0, a=0.0, alpha=0.55)
    return system, sample_configurations(system, n_walkers=100, n_samples=100, thin=4, seed=11)


def test_sampling_is_reproducible(free_samples):
    system, configs = free_samples
    assert configs.shape == (100, 100, 20, 3)
    again = sample_configurations(system, n_walkers=100, n_samples=100, thin=4, seed=11)
    assert np.array_equal(configs, again)


def test_correlated_energies_reproduce_closed_form(free_samples):
    system, configs = free_samples
    values = [0.5, 0.52, 0.55, 0.58, 0.6]
    scan = correlated_energies(system, configs, "alpha", values)
    exact = np.array([noninteracting_energy_per_particle(v, 1.0) for v in values])
    assert np.all(np.abs(scan.energy - exact) <= np.maximum(3 * scan.energy_error, 1e-12)), \
        (scan.energy - exact) / scan.energy_error
    assert np.all(scan.energy_error[1:] > 0) and np.all(scan.energy_error[1:] < 2e-3)
    # α = ½ is the exact ground state: every reweighted sample has the same E_L, zero variance
    assert scan.energy_error[0] < 1e-12 and scan.variance[0] < 1e-20
    assert np.all(scan.ess_fraction > 0.5) and scan.ess_fraction[2] == pytest.approx(1.0)
    # the reweighted variance is positive away from ½ and grows with the distance
    assert np.all(np.diff(scan.variance) > 0)


def test_reweighting_identity_and_error_cross_check():
    system = make_system("bec", n=10, lam=1.0, a=0.2, alpha=0.48)
    configs = sample_configurations(system, n_walkers=64, n_samples=64, thin=4, seed=5)
    scan = correlated_energies(system, configs, "alpha", [0.48])
    _, e_loc = evaluate(system, configs)
    e = e_loc / system.energy_scale()
    assert scan.ess[0] == scan.n == 64 * 64  # all weights exactly 1
    assert scan.energy[0] == pytest.approx(e.mean(), rel=1e-13)
    assert scan.variance[0] == pytest.approx(e.var(), rel=1e-10)
    # the jackknife over walker groups agrees with reblocking the walker-averaged series
    reblocked = estimate(e)
    assert 0.5 < scan.energy_error[0] / reblocked.error < 2.0
    est = scan.estimate(0)
    assert est.mean == scan.energy[0] and est.error == scan.energy_error[0] and est.tau > 0


@pytest.mark.parametrize("start, seed", [(0.6, 1), (0.4, 2)])
def test_optimum_of_free_bosons_is_one_half(start, seed):
    system = make_system("bec", n=20, lam=1.0, a=0.0, alpha=start)
    seen = []
    res = optimize_parameter(system, "alpha", n_walkers=100, n_samples=150, seed=seed, progress=seen.append)
    assert isinstance(res, OptimizationResult)
    assert res.converged and len(seen) == len(res.history) <= 8
    assert 0 < res.error < 0.01
    assert abs(res.value - 0.5) < 3 * res.error and abs(res.value - 0.5) < 0.02, (res.value, res.error)
    exact = noninteracting_energy_per_particle(res.value, 1.0)
    assert abs(res.energy.mean - exact) < max(3 * res.energy.error, 1e-12)
    assert res.scan.values.size >= 3 and res.history[0].centre == start


def test_variance_minimum_of_free_bosons_is_exact():
    system = make_system("bec", n=20, lam=1.0, a=0.0, alpha=0.6)
    res = optimize_parameter(system, "alpha", target="variance", n_walkers=100, n_samples=100, max_iter=4, seed=3)
    assert abs(res.value - 0.5) < 1e-3, res.value
    assert res.variance < 1e-6


def test_repulsion_lowers_the_optimal_alpha():
    system = make_system("bec", n=10, lam=1.0, a=0.2, alpha=0.5)
    res = optimize_parameter(system, "alpha", seed=4)
    assert res.converged
    assert res.value < 0.5 - 3 * res.error, (res.value, res.error)
    # correlated comparison of E(α*) with E(½) from fresh samples at α*
    at_opt = with_parameter(system, "alpha", res.value)
    configs = sample_configurations(at_opt, n_walkers=100, n_samples=100, thin=4, seed=40)
    scan = correlated_energies(at_opt, configs, "alpha", [res.value, 0.5])
    assert scan.ess_fraction.min() > 0.3
    assert scan.energy[0] - scan.energy[1] <= 2 * scan.difference_error(0, 1), scan.energy


def test_bad_arguments():
    system = make_system("bec", n=4, lam=1.0, a=0.0, alpha=0.5)
    with pytest.raises(ValueError, match="name"):
        optimize_parameter(system, "beta")
    with pytest.raises(ValueError, match="target"):
        optimize_parameter(system, "alpha", target="entropy")
    with pytest.raises(ValueError, match="alpha"):
        with_parameter(system, "alpha", -1.0)
    with pytest.raises(ValueError, match="thin"):
        sample_configurations(system, 10, 10, 0, seed=0)
