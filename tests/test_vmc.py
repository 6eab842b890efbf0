"""VMC against exact answers: zero variance at the exact ψ, the closed form at α ≠ ½, no Δt bias."""
import math

import numpy as np
import pytest

from qmckit import RunConfig, VMCRun
from qmckit.systems.bec import noninteracting_energy_per_particle

LAM = math.sqrt(8.0)


def vmc(sampler, steps, **kwargs):
    params = {k: kwargs.pop(k) for k in ("n", "lam", "a", "alpha")}
    run = VMCRun(RunConfig(system="bec", params=params, sampler=sampler, steps=steps, **kwargs))
    run.run()
    return run


@pytest.mark.parametrize("sampler", ["brute", "drift"])
@pytest.mark.parametrize("lam, exact", [(1.0, 1.5), (LAM, 2.414214)])
def test_exact_trial_function_has_zero_variance(sampler, lam, exact):
    run = vmc(sampler, 200, n=10, lam=lam, a=0.0, alpha=0.5, walkers=50, seed=1)
    energy = run.estimates()["energy_per_particle"]
    assert abs(energy.mean - (2 + lam) / 2) < 1e-10
    assert abs(energy.mean - exact) < 1e-6
    assert energy.error < 1e-10
    assert run.estimates()["energy_variance"].mean < 1e-20
    assert 0.3 < run.acceptance <= 1.0


@pytest.mark.parametrize("sampler, lam, seed", [("brute", 1.0, 2), ("drift", 1.0, 3), ("brute", LAM, 4),
                                               ("drift", LAM, 5)])
def test_closed_form_energy_at_alpha_0_6(sampler, lam, seed):
    run = vmc(sampler, 2000, n=10, lam=lam, a=0.0, alpha=0.6, walkers=100, seed=seed, dt=0.1)
    energy = run.estimates()["energy_per_particle"]
    exact = noninteracting_energy_per_particle(0.6, lam)
    assert 0 < energy.error < 2e-3
    assert abs(energy.mean - exact) < 3 * energy.error, energy


def test_drift_sampler_has_no_time_step_bias():
    exact = noninteracting_energy_per_particle(0.6, LAM)
    results = {}
    for dt, steps in ((0.5, 1000), (0.1, 2000), (0.01, 16000)):
        run = vmc("drift", steps, n=6, lam=LAM, a=0.0, alpha=0.6, walkers=100, seed=11, dt=dt)
        results[dt] = run.estimates()["energy_per_particle"]
    for dt, energy in results.items():
        assert abs(energy.mean - exact) < 3 * energy.error, (dt, energy)
    e_big, e_small = results[0.5], results[0.01]
    assert abs(e_big.mean - e_small.mean) < 3 * math.hypot(e_big.error, e_small.error)


def test_samplers_agree_for_interacting_bosons():
    common = dict(n=10, lam=1.0, a=0.2, alpha=0.48, walkers=100)
    brute = vmc("brute", 1500, seed=21, **common).estimates()["energy_per_particle"]
    drift = vmc("drift", 1500, seed=22, dt=0.1, **common).estimates()["energy_per_particle"]
    assert abs(brute.mean - drift.mean) < 3 * math.hypot(brute.error, drift.error), (brute, drift)
    # interactions raise the energy above the non-interacting value at this α
    assert brute.mean > noninteracting_energy_per_particle(0.48, 1.0) + 20 * brute.error


def test_same_seed_same_numbers_different_seed_different_numbers():
    a = vmc("drift", 100, n=5, lam=1.0, a=0.1, alpha=0.5, walkers=20, seed=9).result()
    b = vmc("drift", 100, n=5, lam=1.0, a=0.1, alpha=0.5, walkers=20, seed=9).result()
    c = vmc("drift", 100, n=5, lam=1.0, a=0.1, alpha=0.5, walkers=20, seed=10).result()
    assert a["estimates"] == b["estimates"] and a["acceptance"] == b["acceptance"]
    assert a["estimates"] != c["estimates"]


def test_brute_step_is_tuned_to_target_acceptance():
    run = vmc("brute", 400, n=10, lam=1.0, a=0.0, alpha=0.5, walkers=50, seed=1)
    assert abs(run.acceptance - 0.5) < 0.05
