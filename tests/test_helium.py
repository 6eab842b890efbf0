"""Liquid ⁴He (qmckit.systems.helium): potential, tail, exact derivatives, incremental cache, estimators, CLI."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from qmckit.methods.vmc import VMC
from qmckit.systems import helium
from qmckit.walkers import Walkers

# study 004 notes, §1.3: V(r) of HFD-B(HE) at these r (Å), in K
SPOT_VALUES = {2.0: 537.96, 2.2: 182.87, 2.4: 49.72, 2.556: 10.03, 2.64: -0.289, 2.8: -9.115, 2.963: -10.948,
               3.5: -6.270, 4.0: -2.934, 5.0: -0.729, 7.0: -0.0912}
# notes Table 1.2: V_tail/N (K) at ρ = 0.02186 Å⁻³
TAILS = {64: -1.310, 128: -0.647, 256: -0.321, 512: -0.160, 1000: -0.0815, 1952: -0.0417}


def test_potential_spot_values_minimum_and_zero():
    for r, v in SPOT_VALUES.items():
        assert helium.potential(r) == pytest.approx(v, abs=max(5e-3, 1e-4 * abs(v)))
    eps, rm = helium.HFDB[0], helium.HFDB[1]
    assert helium.potential(rm) == pytest.approx(-eps, rel=1e-6)  # the published digits are rounded
    h = 1e-6
    assert abs(helium.potential(rm + h) - helium.potential(rm - h)) / (2 * h) < 1e-3  # minimum at r_m (V'' ≈ 70 K Å⁻²)
    assert helium.potential(2.6368) > 0 > helium.potential(2.6370)  # zero crossing 2.6369 Å


def test_tail_correction_matches_table():
    for n, tail in TAILS.items():
        assert helium.tail_per_particle(helium.HeliumParams(n=n)) == pytest.approx(tail, rel=6e-3, abs=6e-4)
    assert helium.tail_per_particle(helium.HeliumParams(potential="none")) == 0.0


def test_hbar2_over_m_from_constants():
    hbar, u, k_b = 1.054571817e-34, 1.66053906660e-27, 1.380649e-23
    value = hbar ** 2 / (4.00260325413 * u * k_b) * 1e20  # K Å²
    assert value == pytest.approx(helium.HBAR2_OVER_M, rel=1e-5)


def _config(n=16, seed=0, b=3.07, **kw):
    system = helium.Helium(n=n, b=b, **kw)
    R = system.initial_positions(1, np.random.default_rng(seed))[0]
    # melt the lattice a little so that pairs sit at all distances (but never in contact)
    R += np.random.default_rng(seed + 1).normal(scale=0.4, size=R.shape)
    return system, R % system.box


def test_gradient_and_local_energy_against_finite_differences():
    system, R = _config()
    p = system.kernel_params
    cache = np.empty(system.cache_size())
    helium.recompute(R, p, cache)
    h = 1e-4
    lap_total, grad2_total = 0.0, 0.0
    g = np.empty(3)
    for i in range(len(R)):
        helium.gradient(R, p, cache, i, g)
        for k in range(3):
            plus, minus = R.copy(), R.copy()
            plus[i, k] += h
            minus[i, k] -= h
            lp, lm, l0 = helium.log_psi(plus, p), helium.log_psi(minus, p), helium.log_psi(R, p)
            assert g[k] == pytest.approx((lp - lm) / (2 * h), rel=1e-6, abs=1e-7)
            lap_total += (lp - 2 * l0 + lm) / h ** 2
        grad2_total += g @ g
    v, t_lap, t_grad = helium.energy_terms(R, p)
    hb = system.hbar2_over_m
    assert t_lap == pytest.approx(-0.25 * hb * lap_total, rel=1e-5)
    assert t_grad == pytest.approx(0.5 * hb * grad2_total, rel=1e-10)
    e_fd = v - 0.5 * hb * (lap_total + grad2_total)
    assert helium.local_energy(R, p, cache) == pytest.approx(e_fd, rel=1e-6)
    # V is the plain pair sum inside L/2 plus the tail
    diffs = R[:, None, :] - R[None, :, :]
    diffs -= system.box * np.round(diffs / system.box)
    r = np.linalg.norm(diffs, axis=-1)[np.triu_indices(len(R), 1)]
    assert v == pytest.approx(helium.potential(r[r < system.box / 2]).sum() + system.tail * len(R), rel=1e-12)


def test_log_psi_is_continuous_at_half_the_box():
    system = helium.Helium(n=16)
    L = system.box
    p = system.kernel_params
    for r in (0.5 * L - 1e-7, 0.5 * L + 1e-7):
        R = np.array([[0.0, 0.0, 0.0], [r, 0.0, 0.0]])
        assert abs(helium.log_psi(R, p)) < 1e-12  # u(L/2) = 0 and u'(L/2) = 0


def test_incremental_cache_matches_recompute_after_many_moves():
    system = helium.Helium(n=24)
    walkers = Walkers.from_positions(system.initial_positions(2, np.random.default_rng(1)),
                                     np.random.SeedSequence(2), system.cache_size())
    vmc = VMC(system, walkers, sampler="drift", dt=0.01)
    vmc.sweep(15, measure=False)  # 360 moves per walker
    incremental = walkers.caches.copy()
    vmc.recompute()
    N = system.n_particles
    assert np.abs(incremental[:, :3 * N] - walkers.caches[:, :3 * N]).max() < 1e-10
    assert np.array_equal(incremental[:, 5 * N:], walkers.caches[:, 5 * N:])
    assert walkers.positions.min() >= 0 and walkers.positions.max() < system.box


def test_ideal_gas_has_zero_energy_and_accepts_everything():
    system = helium.Helium(n=16, b=0.0, potential="none")
    walkers = Walkers.from_positions(system.initial_positions(4, np.random.default_rng(0)),
                                     np.random.SeedSequence(1), system.cache_size())
    vmc = VMC(system, walkers, sampler="brute", step=3.0)
    energies, acceptance = vmc.sweep(5)
    assert acceptance == 1.0 and np.all(energies == 0.0)


def test_laplacian_and_gradient_kinetic_estimators_agree():
    """T_lap and T_grad are equal in expectation (integration by parts with the symmetrised u)."""
    from qmckit.runs import RunConfig, make_run

    run = make_run(RunConfig(system="helium", params={"n": 32}, sampler="brute", step=2.8, target_acceptance=0.37,
                             walkers=16, steps=500, equilibration=100, seed=11))
    est = run.run()["estimates"]
    t_lap, t_grad = est["kinetic_energy_per_particle"], est["kinetic_energy_gradient_per_particle"]
    z = (t_lap["mean"] - t_grad["mean"]) / math.hypot(t_lap["error"], t_grad["error"])
    assert abs(z) < 3, (t_lap, t_grad)
    e, v = est["energy_per_particle"], est["potential_energy_per_particle"]
    # E = V + 2 T_lap − T_grad holds sample by sample, so also for the means
    assert e["mean"] == pytest.approx(v["mean"] + 2 * t_lap["mean"] - t_grad["mean"], abs=1e-9)


def test_pair_distribution_and_structure_factor_of_an_ideal_gas():
    rng = np.random.default_rng(5)
    box = 10.0
    positions = rng.uniform(0, box, size=(400, 20, 3))
    r, g = helium.pair_distribution(positions, box, bins=10)
    edges = np.linspace(0, box / 2, 11)
    expected_counts = 400 * 190 * 4 * math.pi / 3 * (edges[1:] ** 3 - edges[:-1] ** 3) / box ** 3
    assert np.all(np.abs(g - 1) * np.sqrt(expected_counts) < 4)  # Poisson: 4σ per bin
    k, s = helium.structure_factor(positions, box, n_max=2)
    assert k[0] == pytest.approx(2 * math.pi / box)
    assert np.all(np.abs(s - 1) < 0.15)


def test_params_validation():
    for bad in ({"n": 1}, {"density": 0}, {"b": -1}, {"potential": "lj"}, {"tail": "yes"}, {"hbar2_over_m": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            helium.HeliumParams(**bad)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "qmckit.cli", "run", "helium", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_json_and_errors():
    res = _cli("--n", "8", "--steps", "20", "--walkers", "4", "--seed", "3", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["system"] == "helium" and out["sampler"] == "brute" and out["energy_unit"] == "K"
    assert {"energy_per_particle", "potential_energy_per_particle", "kinetic_energy_per_particle"} <= set(out["estimates"])
    for args, flag in ((("--density", "0"), "--density"), (("--potential", "lj"), "--potential"),
                       (("--every", "0"), "--every"), (("--acceptance", "1.5"), "--acceptance")):
        res = _cli(*args)
        lines = [l for l in res.stderr.splitlines() if l.strip()]
        assert res.returncode == 2 and len(lines) == 1 and flag in lines[0] and "Traceback" not in res.stderr


def test_sample_run_comparison_carries_the_rounding_of_b():
    from qmckit.studies import helium4

    # a scan where V/N and T/N are straight lines in b with slopes ∓15 K/Å, E/N flat
    scan = [{"b": b, "energy_per_particle": [-5.8, 1e-3], "potential_energy_per_particle": [-20.97 - 15 * (b - 3.07), 1e-3],
             "kinetic_energy_per_particle": [15.17 + 15 * (b - 3.07), 1e-3]} for b in (3.055, 3.065, 3.07, 3.075, 3.085)]
    slopes = helium4.b_slopes(scan)
    assert abs(slopes["potential_energy_per_particle"] + 15) < 1e-9 and abs(slopes["kinetic_energy_per_particle"] - 15) < 1e-9
    assert abs(slopes["energy_per_particle"]) < 1e-9
    result = {"estimates": {name: {"mean": row[0], "error": 5e-4} for name, row in scan[2].items() if name != "b"}}
    plain = {r["observable"]: r for r in helium4.compare_sample_run(result)}
    rounded = {r["observable"]: r for r in helium4.compare_sample_run(result, slopes)}
    sd_b = 0.005 / math.sqrt(3)
    for name in ("potential_energy_per_particle", "kinetic_energy_per_particle"):
        assert math.isclose(rounded[name]["published_error"], math.hypot(plain[name]["published_error"], 15 * sd_b))
        assert abs(rounded[name]["pull"]) < abs(plain[name]["pull"])
    assert rounded["energy_per_particle"]["published_error"] == plain["energy_per_particle"]["published_error"]
