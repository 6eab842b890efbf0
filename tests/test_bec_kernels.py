"""Trapped-boson kernels against finite differences of ln ψ and full recomputation."""
import math

import numpy as np
import pytest

from qmckit.systems import bec

LAM = math.sqrt(8.0)


def configuration(params, seed=3, spread=1.5):
    system = bec.TrappedBosons(params)
    return system, system.initial_positions(1, np.random.default_rng(seed))[0] * spread


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


def test_closed_form_energy():
    assert bec.noninteracting_energy_per_particle(0.5, 1.0) == pytest.approx(1.5)
    assert bec.noninteracting_energy_per_particle(0.6, LAM) == pytest.approx(2.45446, abs=1e-5)
