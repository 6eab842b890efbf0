"""Atoms He, Be, Ne (study 002): kernels against finite differences and numpy, the incremental cache
against a rebuild, exact non-interacting energies, published VMC energies, fixed-node DMC, the CLI."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from qmckit import RunConfig, VMCRun
from qmckit.methods.dmc import DMC
from qmckit.methods.vmc import VMC
from qmckit.runs import make_run
from qmckit.systems import make_system
from qmckit.systems.atom import (ELEMENTS, REFERENCE_ENERGIES, Atom, AtomParams, helium_no_jastrow_energy,
                                 noninteracting_energy)
from qmckit.systems.slater import det_ratio, invert, sherman_morrison_row, slogdet
from qmckit.walkers import Walkers

QMCKIT = [sys.executable, "-m", "qmckit.cli"]
HE_EXACT = -2.903724  # non-relativistic ground state (Pekeris), outside the document


def walkers_for(system, n_walkers, seed):
    positions = system.initial_positions(n_walkers, np.random.default_rng(seed))
    return Walkers.from_positions(positions, seed, system.cache_size())


def equilibrated_configs(system, n_walkers, seed, sweeps=200):
    """Configurations drawn from |ψ_T|² (not from the crude starting guess)."""
    vmc = VMC(system, walkers_for(system, n_walkers, seed), sampler="drift", dt=0.2 / system.params.alpha ** 2)
    vmc.sweep(sweeps, measure=False)
    return vmc.walkers.positions.copy()


# --- parameters ------------------------------------------------------------------------------
def test_params_defaults_and_validation():
    p = AtomParams(element="be")
    assert (p.element, p.alpha, p.beta, p.jastrow, p.ee, p.z) == ("Be", 3.925, 0.109, True, True, 4)
    assert make_system("atom", element="Ne", alpha=10).params.alpha == 10.0
    for kwargs, name in (({"element": "Xx"}, "element"), ({"alpha": 0.0}, "alpha"), ({"alpha": float("nan")}, "alpha"),
                         ({"beta": -0.1}, "beta"), ({"jastrow": 1}, "jastrow"), ({"ee": "no"}, "ee")):
        with pytest.raises(ValueError, match=f"^{name} "):
            AtomParams(**kwargs)
    system = Atom(element="He")
    assert system.energy_key == "energy" and system.energy_scale() == 1.0 and system.n_particles == 2
    assert system.capabilities.gpu == "qmckit.backends.cuda_atom:CudaAtomSweeper"  # GPU kernels: tests/test_cuda_atom.py
    assert system.kernel_params[5] == 0.0 and system.for_dmc().kernel_params[5] == 1.0
    assert system.for_dmc().params == system.params


# --- Slater helpers --------------------------------------------------------------------------
def test_slater_helpers_against_numpy():
    rng = np.random.default_rng(3)
    for n in (1, 2, 5):
        D = rng.normal(size=(n, n))
        T = np.empty((n, n))
        log_abs, sign = invert(D.T.copy(), T)  # T = (D⁻¹)ᵀ from Dᵀ
        assert np.allclose(T, np.linalg.inv(D).T, rtol=1e-12, atol=1e-12)
        ref_sign, ref_log = np.linalg.slogdet(D)
        assert sign == ref_sign and log_abs == pytest.approx(ref_log, abs=1e-12)
        assert slogdet(D) == pytest.approx((ref_log, ref_sign), abs=1e-12)
        for _ in range(20):  # a chain of one-row updates stays equal to the direct inverse
            k = int(rng.integers(n))
            u = rng.normal(size=n)
            D_new = D.copy()
            D_new[k] = u
            q = det_ratio(T[k], u)
            assert q == pytest.approx(np.linalg.det(D_new) / np.linalg.det(D), rel=1e-10)
            sherman_morrison_row(T, k, u, q)
            D = D_new
            assert np.allclose(T, np.linalg.inv(D).T, rtol=1e-9, atol=1e-9)
    singular = np.ones((2, 2))
    assert invert(singular, np.empty((2, 2)))[1] == 0.0


# (gradients, kinetic energy, move ratios and the incremental cache against finite differences and a
# rebuild: tests/test_conformance.py, for every registered system)


def test_en_cusp_params_and_default_off():
    p = AtomParams(element="Ne")
    assert (p.en_cusp, p.beta_en, p.effective_beta_en) == (False, None, 2 * 9.546)  # default 2α, off by default
    assert AtomParams(element="He", alpha=1.5).effective_beta_en == 3.0
    assert AtomParams(element="Ne", en_cusp=True, beta_en=30).effective_beta_en == 30.0
    # the default follows α in a copy with another α (an α scan)
    scanned = AtomParams(**(AtomParams(element="He", en_cusp=True).as_dict() | {"alpha": 1.5}))
    assert scanned.effective_beta_en == 3.0
    for kwargs, name in (({"beta_en": 0.0}, "beta_en"), ({"beta_en": float("inf")}, "beta_en"),
                         ({"en_cusp": 1}, "en_cusp")):
        with pytest.raises(ValueError, match=f"^{name} "):
            AtomParams(**kwargs)
    off, on = Atom(element="Ne"), Atom(element="Ne", en_cusp=True)
    # appended at the end: the first six entries (and their indices) are unchanged
    assert len(off.kernel_params) == 8 and off.kernel_params[6] == 0.0 and on.kernel_params[6] == 1.0
    assert np.array_equal(off.kernel_params[:6], on.kernel_params[:6])
    assert on.kernel_params[7] == on.params.effective_beta_en
    # off: exactly the study's ψ_T (the factor is never evaluated); on: log ψ differs by Σ u(r_i)
    R = equilibrated_configs(off, 1, seed=3, sweeps=20)[0]
    c, b = 10 - 9.546, on.params.effective_beta_en
    r = np.linalg.norm(R, axis=1)
    assert on.kernels.log_psi(R, on.kernel_params) - off.kernels.log_psi(R, off.kernel_params) == pytest.approx(
        np.sum(-c * r / (1 + b * r)), abs=1e-10)


def test_en_cusp_removes_the_nuclear_divergence_of_the_local_energy():
    # Ne, α = 9.546: without the factor E_L → −(Z − α)/r = −0.454/r as an electron approaches the nucleus
    c = 10 - 9.546
    R = equilibrated_configs(Atom(element="Ne"), 1, seed=8, sweeps=30)[0]
    energies = {}
    for en_cusp in (False, True):
        system = Atom(element="Ne", en_cusp=en_cusp)
        p = system.kernel_params
        cache = np.zeros(system.cache_size())
        row = []
        for r in (1e-2, 1e-3, 1e-4):
            Rs = R.copy()
            Rs[0] = r * np.array([0.48, -0.6, 0.64])  # a unit direction
            row.append(system.kernels.local_energy(Rs, p, cache))
        energies[en_cusp] = np.array(row)
    off, on = energies[False], energies[True]
    # off: the 1e-3 → 1e-4 change is the −c/r tail (−0.454 × 9000 ≈ −4086 E_h)
    assert off[2] - off[1] == pytest.approx(-c * (1e4 - 1e3), rel=0.02)
    # on: finite at the nucleus — the same step changes E_L by a few E_h at most
    assert abs(on[2] - on[1]) < 5.0, on
    assert abs(on[2] - off[0]) < 100.0 and abs(off[2]) > 20 * abs(on[2]), (off, on)


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")  # short series
def test_en_cusp_lowers_the_neon_variance():
    # the same walkers and streams with and without the factor; 60 walkers × 150 measured sweeps
    variances = {}
    for en_cusp in (False, True):
        system = Atom(element="Ne", en_cusp=en_cusp)
        vmc = VMC(system, walkers_for(system, 60, seed=21), sampler="drift", dt=0.01)
        vmc.sweep(150, measure=False)
        energies, _ = vmc.sweep(150)
        variances[en_cusp] = energies.var()
    assert variances[True] < 0.9 * variances[False], variances


# --- exact answers --------------------------------------------------------------------------
@pytest.mark.parametrize("element, exact", [("He", -4.0), ("Be", -20.0), ("Ne", -200.0)])
@pytest.mark.parametrize("sampler", ["brute", "drift"])
def test_noninteracting_atoms_are_exact_with_zero_variance(element, exact, sampler):
    z = ELEMENTS[element][0]
    assert noninteracting_energy(element, z) == exact
    system = Atom(element=element, alpha=z, jastrow=False, ee=False)
    vmc = VMC(system, walkers_for(system, 20, seed=2), sampler=sampler, dt=0.2 / z ** 2, step=1.0 / z)
    vmc.equilibrate(20)
    energies, acceptance = vmc.sweep(50)
    assert 0.2 < acceptance <= 1.0
    assert np.abs(energies - exact).max() < 1e-9


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")  # short series
def test_noninteracting_run_reports_exact_energy():
    run = VMCRun(RunConfig(system="atom", params=dict(element="Be", alpha=4.0, jastrow=False, ee=False),
                           walkers=20, steps=50, dt=0.01, seed=1))
    energy = run.run()["estimates"]["energy"]
    assert abs(energy["mean"] + 20.0) < 1e-9 and energy["error"] < 1e-10


@pytest.mark.parametrize("case", ["Be without Jastrow or e-e, alpha=3.8", "He without Jastrow, alpha=27/16"])
def test_closed_form_energies_away_from_the_exact_alpha(case):
    # these test the sampling, not only E_L: ψ_T is not an eigenfunction here
    if case.startswith("Be"):
        params, exact = dict(element="Be", alpha=3.8, jastrow=False, ee=False), noninteracting_energy("Be", 3.8)
    else:
        params, exact = dict(element="He", alpha=27 / 16, jastrow=False), helium_no_jastrow_energy(27 / 16)
        assert exact == pytest.approx(-(27 / 16) ** 2)
    run = VMCRun(RunConfig(system="atom", params=params, walkers=200, steps=1500, dt=0.02, seed=4))
    run.run()
    energy = run.estimates()["energy"]
    assert 0 < energy.error < 6e-3
    assert abs(energy.mean - exact) < 3 * energy.error, (energy, exact)


# --- published VMC energies (study 002, Table 7.1) --------------------------------------------
@pytest.mark.parametrize("element, walkers, steps, dt, max_error", [("He", 200, 3000, 0.05, 1.2e-3),
                                                                    ("Be", 200, 6000, 0.02, 3.5e-3)])
def test_vmc_reproduces_table_7_1(element, walkers, steps, dt, max_error):
    run = VMCRun(RunConfig(system="atom", params=dict(element=element), walkers=walkers, steps=steps, dt=dt,
                           seed=2011))
    run.run()
    energy = run.estimates()["energy"]
    published, published_error = REFERENCE_ENERGIES[element]["thesis"]
    assert 0 < energy.error < max_error
    assert abs(energy.mean - published) < 3 * math.hypot(energy.error, published_error), energy


# --- fixed-node DMC -------------------------------------------------------------------------
def test_node_crossing_is_rejected_only_when_the_flag_is_set():
    # Be's same-spin block (1s, 2s): with electron 1 at radius 1, the node of D↑ in r_0 is the sphere
    # |r_0| = 1 (φ_2s/φ_1s is monotonic in r), so moving electron 0 from radius 0.3 to 1.5 flips the sign
    vmc_system = Atom(element="Be")
    dmc_system = vmc_system.for_dmc()
    R = np.array([[0.3, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.4], [0.5, 0.5, 0.0]])
    crossing, staying = np.array([0.0, 0.0, 1.5]), np.array([0.0, 0.2, 0.5])
    p = vmc_system.kernel_params
    sign = lambda R: np.sign(np.linalg.det(np.array([[np.exp(-p[1] * r), (1 - p[1] * r / 2) * np.exp(-p[1] * r / 2)]
                                                      for r in np.linalg.norm(R[:2], axis=1)])))
    for r_new, flips in ((crossing, True), (staying, False)):
        R_new = R.copy()
        R_new[0] = r_new
        assert (sign(R_new) != sign(R)) == flips
        results = []
        for system in (vmc_system, dmc_system):
            cache = np.zeros(system.cache_size())
            system.kernels.recompute(R, system.kernel_params, cache)
            results.append(system.kernels.test_move(R, system.kernel_params, cache, 0, r_new, np.empty(3)))
        assert math.isfinite(results[0])
        assert results[1] == (-math.inf if flips else results[0])


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")  # short series
def test_dmc_drivers_use_the_node_rejecting_kernels():
    system = Atom(element="Be")
    dmc = DMC(system, walkers_for(system, 10, seed=1), dt=0.01)
    assert dmc.system.reject_node_crossing and dmc.driver._p[5] == 1.0
    run = make_run(RunConfig(system="atom", params=dict(element="Be"), method="dmc", walkers=10, steps=2,
                             equilibration=2, dmc_equilibration=2, dt=0.01))
    assert run.system.reject_node_crossing and run.vmc._p[5] == 1.0
    vmc_run = make_run(RunConfig(system="atom", params=dict(element="Be"), walkers=10, steps=2, dt=0.01))
    assert not vmc_run.system.reject_node_crossing and vmc_run.vmc._p[5] == 0.0
    result = run.run()
    assert result["params"] == AtomParams(element="Be").as_dict()  # the flag is no physics parameter


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")  # short series
def test_helium_fixed_node_dmc_reaches_the_exact_ground_state():
    # He's spin-assigned ψ_T = φ(r1) φ(r2) J has no node, so DMC is exact up to the time-step and
    # population-control errors. Time-step allowance, from runs of 1000 walkers × 200 time units:
    # E = −2.9042(4), −2.9039(4), −2.9047(4), −2.9032(4) E_h at Δτ = 0.04, 0.02, 0.01, 0.005 — no
    # resolvable trend. A linear Δτ error bounded by that spread (|slope| ≲ 1e-3/0.035 ≈ 0.03 E_h per
    # unit Δτ) is ≲ 3e-4 E_h at Δτ = 0.01; population-control bias at 800 walkers is smaller still.
    # We allow 1e-3 E_h on top of 3σ. The DMC error bar is ~1.3e-3 here, ~10σ below the VMC energy.
    # (Many walkers and few steps: each step is one parallel kernel launch, slow on a busy machine.)
    run = make_run(RunConfig(system="atom", params=dict(element="He"), method="dmc", walkers=800, steps=2000,
                             dt=0.01, seed=7))
    run.run()
    energy = run.estimates()["energy"]
    assert 0 < energy.error < 2.5e-3
    assert abs(energy.mean - HE_EXACT) < 3 * energy.error + 1e-3, energy
    vmc_value = REFERENCE_ENERGIES["He"]["sandsdalen"][0]
    assert energy.mean < vmc_value - 5 * energy.error  # clearly below the VMC energy of the same ψ_T
    assert run.series_of("removed").sum() == 0


# --- command line ---------------------------------------------------------------------------
def qmckit(*args):
    return subprocess.run([*QMCKIT, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args, flag", [(["--element", "Xx"], "--element"), (["--alpha", "-1"], "--alpha"),
                                        (["--beta", "nan"], "--beta"), (["--beta-en", "0"], "--beta-en")])
def test_cli_bad_input_exits_2_with_one_line(args, flag):
    res = qmckit("run", "atom", *args)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert flag in lines[0] and res.stdout == ""


def test_cli_json_contract_non_interacting_neon():
    res = qmckit("run", "atom", "--element", "Ne", "--alpha", "10", "--no-jastrow", "--no-ee", "--walkers", "10",
                 "--steps", "20", "--dt", "0.002", "--seed", "1", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert {"system", "method", "params", "seed", "backend", "estimates", "acceptance", "wall_s"} <= set(out)
    assert out["params"] == {"element": "Ne", "alpha": 10.0, "beta": 0.177, "jastrow": False, "ee": False,
                             "en_cusp": False, "beta_en": None}
    assert out["estimates"]["energy"]["mean"] == pytest.approx(-200.0, abs=1e-9)
    assert out["energy_unit"] == "E_h"


@pytest.mark.filterwarnings("ignore:reblock:RuntimeWarning")
def test_cli_en_cusp_flags():
    res = qmckit("run", "atom", "--element", "Ne", "--en-cusp", "--beta-en", "25", "--walkers", "4", "--steps", "5",
                 "--equil", "5", "--dt", "0.005", "--seed", "1", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["params"]["en_cusp"] is True and out["params"]["beta_en"] == 25.0
    assert math.isfinite(out["estimates"]["energy"]["mean"])
