"""Electrons in a harmonic quantum dot (qmckit.systems.qdot): exact limits, Taut's and Kestner–Sinanoglu's
exact energies in DMC, and the published DMC energies of closed-shell 2D dots.

The generic checks (finite differences, move ratios, incremental cache, checkpoint, bad input)
run in tests/test_conformance.py like for every registered system. The DMC tests use a trial
function whose VMC energy lies many error bars above the exact value, and check that in the same
test: they fail if DMC stayed at the VMC energy.
"""
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from qmckit import RunConfig, cli
from qmckit.runs import make_run
from qmckit.systems import make_system
from qmckit.systems.qdot import orbitals_at, closed_shells, noninteracting_energy, shell_orbitals

REFERENCES = json.loads((Path(__file__).resolve().parents[1] / "data" / "quantum_dots.json").read_text())


def published_dmc(n, dim, omega):
    return next((v["energy"], v["error"]) for v in REFERENCES["dmc"]["values"]
                if (v["n"], v["dim"], v["omega"]) == (n, dim, omega))


def test_closed_shells_and_their_orbitals():
    assert closed_shells(2, 5) == [2, 6, 12, 20, 30]
    assert closed_shells(3, 4) == [2, 8, 20, 40]
    assert shell_orbitals(2, 2) == [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
    assert len(set(shell_orbitals(3, 3))) == 10
    with pytest.raises(ValueError, match=r"^n must be a closed shell in 3D, one of 2, 8, 20"):
        make_system("qdot", n=6, dim=3)


@pytest.mark.parametrize("dim", [2, 3])
def test_hermite_orbitals_are_oscillator_eigenfunctions(dim):
    """−½∇²φ + ½ω²r²φ = (|n| + d/2) ω φ for every orbital of the first four shells at α = 1."""
    omega = 0.7
    system = make_system("qdot", n=closed_shells(dim)[3], dim=dim, omega=omega, alpha=1.0)
    p, n = system.kernel_params, system.n_particles // 2
    val, grad, lap = np.empty(n), np.empty((n, dim)), np.empty(n)
    for r in np.random.default_rng(1).normal(size=(5, dim)):
        orbitals_at(r, p, n, val, grad, lap, True)
        levels = np.array([sum(q) + dim / 2 for q in system.orbitals]) * omega
        assert np.allclose(-0.5 * lap + 0.5 * omega ** 2 * (r @ r) * val, levels * val, atol=1e-12)


@pytest.mark.parametrize("n, dim, omega", [(2, 2, 1.0), (6, 2, 1.0), (12, 2, 1.0), (2, 3, 1.0), (8, 3, 1.0),
                                           (12, 2, 0.5)])
def test_noninteracting_closed_shells_have_zero_variance_at_the_exact_energy(n, dim, omega):
    exact = {(2, 2): 2.0, (6, 2): 10.0, (12, 2): 28.0, (2, 3): 3.0, (8, 3): 18.0}[(n, dim)] * omega
    assert noninteracting_energy(n, dim, omega) == pytest.approx(exact)
    result = make_run(RunConfig(system="qdot", params=dict(n=n, dim=dim, omega=omega, alpha=1.0, interaction=False),
                                walkers=10, steps=30, dt=0.05, seed=3)).run()
    assert result["estimates"]["energy"]["mean"] == pytest.approx(exact, abs=1e-10)
    assert result["estimates"]["energy_variance"]["mean"] < 1e-20
    # away from α = 1 the same ψ_T has a variance, and the closed form E(α) = E·(α + 1/α)/2 (kinetic ∝ α,
    # potential ∝ 1/α, equal halves at α = 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        off = make_run(RunConfig(system="qdot", params=dict(n=n, dim=dim, omega=omega, alpha=0.8, interaction=False),
                                 walkers=40, steps=400, dt=0.05, seed=3)).run()["estimates"]
    assert off["energy_variance"]["mean"] > 1e-3
    assert abs(off["energy"]["mean"] - exact * (0.8 + 1 / 0.8) / 2) < 3 * off["energy"]["error"]


def _vmc_and_dmc(params, dmc_settings, vmc_settings=dict(walkers=100, steps=2000, dt=0.05), seed=1):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # short-series reblocking notes
        vmc = make_run(RunConfig(system="qdot", params=params, seed=1, **vmc_settings)).run()
        dmc = make_run(RunConfig(system="qdot", method="dmc", params=params, seed=seed, **dmc_settings)).run()
    return vmc["estimates"]["energy"], dmc["estimates"]["energy"]


@pytest.mark.slow
def test_dmc_gives_taut_exact_energy_for_two_electrons_in_2d():
    """2D, N = 2, ω = 1: exactly 3 E_h* (Taut). ψ_T's VMC energy is ~0.005 above; DMC within 3σ, σ ≤ 5e-4.

    (Seeds 2–4 at Δτ = 0.01, 0.02, 0.05 gave deviations of −1.7 … +2.7σ, mean +0.5σ: no time-step or
    population bias visible at this precision.)"""
    exact = REFERENCES["exact"]["2d_n2_omega1"]["energy"]
    vmc, dmc = _vmc_and_dmc(dict(n=2, dim=2, omega=1.0, alpha=0.97, beta=0.35),
                            dict(walkers=1000, steps=6000, dt=0.02), seed=2)
    assert vmc["mean"] - exact > 5 * vmc["error"] and vmc["mean"] - dmc["mean"] > 10 * dmc["error"]
    assert dmc["error"] <= 5e-4
    assert abs(dmc["mean"] - exact) < 3 * dmc["error"]


@pytest.mark.slow
def test_dmc_gives_kestner_sinanoglu_exact_energy_in_3d():
    """3D, N = 2, ω = ½: exactly 2 E_h* (Kestner and Sinanoglu's Hooke's atom)."""
    exact = REFERENCES["exact"]["3d_n2_omega0.5"]["energy"]
    vmc, dmc = _vmc_and_dmc(dict(n=2, dim=3, omega=0.5, alpha=0.95, beta=0.2),
                            dict(walkers=400, steps=4000, dt=0.02))
    assert vmc["mean"] - exact > 3 * vmc["error"]
    assert dmc["error"] < 5e-4
    assert abs(dmc["mean"] - exact) < 3 * dmc["error"]


@pytest.mark.slow
@pytest.mark.parametrize("n, params, settings", [
    (6, dict(alpha=0.93, beta=0.55), dict(walkers=400, steps=4000, dt=0.01)),
    (12, dict(alpha=0.9, beta=0.6), dict(walkers=400, steps=4000, dt=0.01, dmc_equilibration=500)),
])
def test_fixed_node_dmc_matches_the_published_2d_closed_shells(n, params, settings):
    """2D, ω = 1, N = 6 and 12: the published fixed-node DMC energies (Pedersen Lohne et al. 2011,
    data/quantum_dots.json) within 3 combined σ; the VMC energy of ψ_T lies ≥ 10 σ above them."""
    reference, ref_error = published_dmc(n, 2, 1.0)
    vmc, dmc = _vmc_and_dmc(dict(n=n, dim=2, omega=1.0, **params), settings)
    sigma = math.hypot(dmc["error"], ref_error)
    assert vmc["mean"] - reference > 10 * sigma
    assert abs(dmc["mean"] - reference) < 3 * sigma


def test_cli_runs_a_dot_and_refuses_bad_input(capsys):
    assert cli.main(["run", "qdot", "--n", "6", "--dim", "2", "--omega", "1", "--steps", "20", "--walkers", "8",
                     "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["system"] == "qdot" and out["energy_unit"] == "E_h*" and "energy" in out["estimates"]
    assert out["params"] == dict(n=6, dim=2, omega=1.0, alpha=1.0, beta=0.4, interaction=True, jastrow=True)
    for args, flag in ((["--omega", "-1"], "--omega"), (["--n", "5"], "--n"), (["--dim", "4"], "--dim")):
        code = cli.main(["run", "qdot", *args, "--steps", "5"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and flag in err[0], err


def test_two_dimensional_density_offers_the_radial_histogram_only_as_rho():
    result = make_run(RunConfig(system="qdot", params=dict(n=2, dim=2), walkers=8, steps=20, dt=0.05, seed=2,
                                density="rho", density_bins=8)).run()
    edges, density = np.array(result["density"]["edges"]), np.array(result["density"]["density"])
    # ∫ 2πρ n(ρ) dρ over the histogram ≈ 1 (a few per cent may lie beyond its range)
    assert 0.9 < np.sum(np.pi * (edges[1:] ** 2 - edges[:-1] ** 2) * density) <= 1.0 + 1e-12
    with pytest.raises(ValueError, match="^density must be one of x, y, rho"):
        RunConfig(system="qdot", params=dict(n=2, dim=2), density="r")
