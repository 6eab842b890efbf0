"""Trapped-boson kernels against finite differences of ln ψ and full recomputation."""
import math

import numpy as np
import pytest

from qmckit.systems import bec

LAM = math.sqrt(8.0)


def configuration(params, seed=3, spread=1.5):
    system = bec.TrappedBosons(params)
    return system, system.initial_positions(1, np.random.default_rng(seed))[0] * spread


def finite_difference(R, p, h=2e-4):
    """Gradient (N, 3) and total Laplacian of ln ψ by central differences."""
    grad = np.zeros_like(R)
    lap = 0.0
    center = bec.log_psi(R, p)
    for i in range(R.shape[0]):
        for k in range(3):
            plus, minus = R.copy(), R.copy()
            plus[i, k] += h
            minus[i, k] -= h
            lp, lm = bec.log_psi(plus, p), bec.log_psi(minus, p)
            grad[i, k] = (lp - lm) / (2 * h)
            lap += (lp - 2 * center + lm) / h**2
    return grad, lap


@pytest.mark.parametrize("params", [
    bec.BosonParams(n=7, lam=LAM, a=0.433, alpha=0.45),
    bec.BosonParams(n=5, lam=1.0, a=0.1, alpha=0.7),
    bec.BosonParams(n=6, lam=1.0, a=0.0, alpha=0.6),
])
def test_drift_and_local_energy_match_finite_differences(params):
    system, R = configuration(params)
    p = system.kernel_params
    cache = np.zeros(system.cache_size())
    bec.recompute(R, p, cache)
    grad_fd, lap_fd = finite_difference(R, p)
    assert np.allclose(cache[: 3 * params.n].reshape(3, -1).T, grad_fd, rtol=1e-6, atol=1e-6)
    potential = 0.5 * np.sum(R[:, 0] ** 2 + R[:, 1] ** 2 + params.lam**2 * R[:, 2] ** 2)
    e_fd = -0.5 * (lap_fd + np.sum(grad_fd**2)) + potential
    assert bec.local_energy(R, p, cache) == pytest.approx(e_fd, rel=1e-5, abs=1e-4)


def test_move_ratio_gradient_and_incremental_cache_match_full_recomputation():
    params = bec.BosonParams(n=8, lam=LAM, a=0.3, alpha=0.5)
    system, R = configuration(params, seed=5)
    p = system.kernel_params
    cache = np.zeros(system.cache_size())
    bec.recompute(R, p, cache)
    rng = np.random.default_rng(0)
    grad_new = np.zeros(3)
    accepted = 0
    for step in range(400):
        i = step % params.n
        r_new = R[i] + 0.3 * rng.normal(size=3)
        moved = R.copy()
        moved[i] = r_new
        log_ratio = bec.test_move(R, p, cache, i, r_new, grad_new)
        expected = bec.log_psi(moved, p) - bec.log_psi(R, p)
        if not np.isfinite(expected):
            assert log_ratio == -np.inf  # a hard-core overlap is signalled, never accepted
            continue
        assert log_ratio == pytest.approx(expected, abs=1e-10)
        full = np.zeros_like(cache)
        bec.recompute(moved, p, full)
        assert np.allclose(grad_new, full[: 3 * params.n].reshape(3, -1)[:, i], atol=1e-10)
        bec.accept_move(R, p, cache, i, r_new, grad_new)
        accepted += 1
    full = np.zeros_like(cache)
    bec.recompute(R, p, full)
    # 400 incremental updates drift from the full recomputation only by round-off
    assert np.max(np.abs(cache[: 3 * params.n] - full[: 3 * params.n])) < 1e-10
    assert np.array_equal(cache[5 * params.n:], full[5 * params.n:])  # coordinate copies stay exact
    assert accepted > 200


def test_noninteracting_local_energy_is_exact_everywhere():
    for lam in (1.0, LAM):
        params = bec.BosonParams(n=10, lam=lam, a=0.0, alpha=0.5)
        system = bec.TrappedBosons(params)
        cache = np.zeros(system.cache_size())
        for R in system.initial_positions(20, np.random.default_rng(1)) * 3:
            e = bec.local_energy(R, system.kernel_params, cache) / params.n
            assert abs(e - (2 + lam) / 2) < 1e-12


def test_overlapping_configuration_has_zero_amplitude():
    p = np.array([0.5, 1.0, 0.5])
    R = np.array([[0.0, 0.0, 0.0], [0.4, 0.0, 0.0]])
    assert bec.log_psi(R, p) == -np.inf


@pytest.mark.parametrize("kwargs, name", [
    (dict(n=0), "n"), (dict(n=2.5), "n"), (dict(alpha=0.0), "alpha"), (dict(alpha=-1), "alpha"),
    (dict(lam=-1.0), "lam"), (dict(a=-0.1), "a"), (dict(alpha=float("nan")), "alpha"), (dict(a="x"), "a"),
])
def test_bad_parameters_name_themselves(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        bec.BosonParams(**kwargs)


def test_closed_form_energy():
    assert bec.noninteracting_energy_per_particle(0.5, 1.0) == pytest.approx(1.5)
    assert bec.noninteracting_energy_per_particle(0.6, LAM) == pytest.approx(2.45446, abs=1e-5)
