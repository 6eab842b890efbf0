"""Study 002's Metropolis deviations, offered as named options: they run and they are biased."""
import math

import numpy as np
import pytest

from qmckit.methods.vmc import VMC, variant_flags
from qmckit.stats import estimate
from qmckit.systems import bec
from qmckit.walkers import Walkers

SYSTEM = bec.TrappedBosons(n=10, lam=1.0, a=0.3, alpha=0.45)


def energy(seed, sweeps=3000, **options):
    seq = np.random.SeedSequence(seed)
    start, streams = seq.spawn(2)
    walkers = Walkers.from_positions(SYSTEM.initial_positions(200, np.random.default_rng(start)), streams,
                                     SYSTEM.cache_size())
    vmc = VMC(SYSTEM, walkers, **options)
    vmc.equilibrate(300)
    energies, _ = vmc.sweep(sweeps)
    return estimate(energies.mean(axis=1) / SYSTEM.params.n)


def test_other_drift_change_matches_full_recomputation():
    params = bec.BosonParams(n=7, lam=2.0, a=0.3, alpha=0.5)
    system = bec.TrappedBosons(params)
    R = system.initial_positions(1, np.random.default_rng(4))[0] * 1.4
    p = system.kernel_params
    before, after = np.zeros(system.cache_size()), np.zeros(system.cache_size())
    bec.recompute(R, p, before)
    i, r_new, dt = 3, R[3] + np.array([0.2, -0.1, 0.05]), 0.1
    assert np.isfinite(bec.test_move(R, p, before, i, r_new, np.zeros(3)))
    moved = R.copy()
    moved[i] = r_new
    bec.recompute(moved, p, after)
    g0 = before[: 3 * params.n].reshape(3, -1)
    g1 = after[: 3 * params.n].reshape(3, -1)
    others = np.arange(params.n) != i
    expected = 0.5 * dt * np.sum(g0[:, others] ** 2 - g1[:, others] ** 2)
    assert bec.other_drift_change(R, p, before, i, r_new, dt) == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_all_particle_green_function_biases_vmc():
    exact = energy(3, dt=0.05)
    seed_variant = energy(3, dt=0.05, green="all")
    assert abs(seed_variant.mean - exact.mean) > 8 * math.hypot(exact.error, seed_variant.error)


def test_reused_uniform_biases_vmc_at_large_time_step():
    exact = energy(5, sweeps=6000, dt=0.2)
    seed_variant = energy(5, sweeps=6000, dt=0.2, accept_uniform="reuse")
    assert seed_variant.mean - exact.mean > 4 * math.hypot(exact.error, seed_variant.error)


def test_variant_names_are_checked():
    assert variant_flags() == 0
    assert variant_flags("all", "reuse", "redraw") == 7
    with pytest.raises(ValueError, match="green must be 'moved'"):
        variant_flags(green="some")
