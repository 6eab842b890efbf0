"""Projected d-wave RVB VMC (study 000): geometry, ratios and updates, exact checks, VMC, CLI."""
import json
import subprocess
import sys

import numpy as np
import pytest

from qmckit.backends.lattice_chains import CpuChains, configuration_energies, rebuild_inverse
from qmckit.methods.lattice_vmc import LatticeRun, LatticeRunConfig, resume_lattice_run
from qmckit.rng import seed_states
from qmckit.studies import lattice_rvb as study
from qmckit.systems.clusters import make_cluster
from qmckit.systems.lattice_rvb import (LatticeRVB, electron_count, ratio_down, ratio_swap, ratio_up, update_down,
                                        update_up)

TABLE_61 = dict(J=0.3, doping=0.1, delta=1.5, mu=0.0)


# --- geometry ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("L", [3, 5, 9, 15])
def test_tilted_cluster_geometry(L):
    c = make_cluster(L, "tilted")
    assert c.n_sites == L * L + 1
    assert c.bonds.shape == (2 * c.n_sites, 2)
    assert all(len(set(row)) == 4 for row in c.neighbours)        # four distinct nearest neighbours
    parity = np.arange(c.n_sites) % 2                              # bipartite: every bond joins the sublattices
    assert np.all(parity[c.bonds[:, 0]] != parity[c.bonds[:, 1]])
    k = c.momenta                                                  # N_s distinct momenta, periodic under a1, a2
    assert len({(round(a, 9), round(b, 9)) for a, b in k}) == c.n_sites
    for a in ((L, 1), (-1, L)):
        assert np.allclose(np.cos(k @ np.array(a)), 1.0)
    on_node = np.abs(np.cos(k[:, 0]) - np.cos(k[:, 1])) < 1e-12  # only Γ and M on the d-wave nodal lines
    nodal = {(round(abs(a), 9), round(abs(b), 9)) for a, b in k[on_node]}
    assert nodal == {(0.0, 0.0), (round(np.pi, 9), round(np.pi, 9))}


def test_square_cluster_has_no_divergent_d_wave_weight():
    c = make_cluster(4, "square")
    assert not c.has_gamma()
    assert np.all(np.abs(np.cos(c.momenta[:, 0]) - np.cos(c.momenta[:, 1])) > 1e-9)
    s = LatticeRVB(L=4, kind="square", doping=0.25)
    assert s.ghost == 0 and np.all(np.isfinite(s.weights))


def test_table_41_memory_arithmetic():
    for row in study.memory_table():
        assert {k: row[k] for k in study.TABLE_41[row["L"]]} == study.TABLE_41[row["L"]]
    assert [electron_count(L * L + 1, 0.1) for L in (5, 9, 15)] == [24, 74, 204]
    assert electron_count(10, 0.2) == 8 and electron_count(10, 0.1) == 10  # 4.5 pairs round up


# --- ratios and Sherman–Morrison ---------------------------------------------------------------------
def _det(system, up, dn):
    return np.linalg.det(system.configuration_matrix(up, dn))


@pytest.mark.parametrize("kw", [dict(L=5, **TABLE_61), dict(L=4, kind="square", doping=0.25, J=0.3, delta=1.0)])
def test_ratios_and_updates_match_determinants(kw):
    system = LatticeRVB(**kw)
    state = system.random_configurations(1, np.random.default_rng(3))
    up, dn, ainv = state["up_site"][0], state["dn_site"][0], state["ainv"][0]
    work = np.empty(system.size)
    d0 = _det(system, up, dn)
    empty = [s for s in range(system.n_sites) if state["up_at"][0, s] < 0 and state["dn_at"][0, s] < 0]
    for k in range(system.n_pairs):
        b = empty[k % len(empty)]
        up2 = up.copy()
        up2[k] = b
        assert ratio_up(system.pair, ainv, dn, k, b) == pytest.approx(_det(system, up2, dn) / d0, rel=1e-10, abs=1e-12)
        dn2 = dn.copy()
        dn2[k] = b
        assert ratio_down(system.pair, ainv, up, k, b) == pytest.approx(_det(system, up, dn2) / d0, rel=1e-10,
                                                                        abs=1e-12)
        for l in range(system.n_pairs):
            up3, dn3 = up.copy(), dn.copy()
            up3[k], dn3[l] = dn[l], up[k]
            assert ratio_swap(system.pair, ainv, up, dn, k, l, work) == pytest.approx(
                _det(system, up3, dn3) / d0, rel=1e-9, abs=1e-11)
    a2 = ainv.copy()
    update_up(system.pair, a2, dn, 0, empty[0], ratio_up(system.pair, a2, dn, 0, empty[0]), work)
    up2 = up.copy()
    up2[0] = empty[0]
    direct = np.linalg.inv(system.configuration_matrix(up2, dn))
    assert np.abs(a2 - direct).max() < 1e-10 * np.abs(direct).max()
    a3 = ainv.copy()
    update_down(system.pair, a3, up, 1, empty[1], ratio_down(system.pair, a3, up, 1, empty[1]), work)
    dn2 = dn.copy()
    dn2[1] = empty[1]
    direct = np.linalg.inv(system.configuration_matrix(up, dn2))
    assert np.abs(a3 - direct).max() < 1e-10 * np.abs(direct).max()


def test_inverse_after_1e5_moves():
    """10⁵ incremental updates (A⁻¹ rebuilt every 10 sweeps of 1000 proposals): the inverse, the
    bookkeeping and the recorded drift agree with a direct inversion to ≤ 1e-10."""
    system = LatticeRVB(L=9, **TABLE_61)
    state = system.random_configurations(1, np.random.default_rng(7))
    chains = CpuChains(system, state, seed_states(7, 1), moves_per_sweep=1000, refresh_every=10)
    chains.sweep(100, measure=False)
    s = chains.state
    up, dn = s["up_site"][0], s["dn_site"][0]
    assert sum(chains.counts[0, [0, 2]]) == 100_000
    assert chains.counts[0, 1] + chains.counts[0, 3] > 10_000             # many accepted updates
    assert chains.drift[0] <= 1e-10
    direct = np.linalg.inv(system.configuration_matrix(up, dn))
    assert np.abs(s["ainv"][0] - direct).max() / np.abs(direct).max() <= 1e-10
    assert np.all(s["up_at"][0, up[:system.n_pairs]] == np.arange(system.n_pairs))
    assert np.all(s["dn_at"][0, dn[:system.n_pairs]] == np.arange(system.n_pairs))
    assert len(set(up[:system.n_pairs]) | set(dn[:system.n_pairs])) == system.n_electrons  # projected
    # without refresh the drift is measured, not hidden: still small after 10⁵ moves
    chains.refresh_every = 10 ** 9
    chains.sweep(100, measure=False)
    assert rebuild_inverse(system.pair, s["up_site"][0], s["dn_site"][0], s["ainv"][0]) < 1e-8


# --- exact checks ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    dict(L=3, doping=0.2, J=0.3, delta=1.5, mu=0.0),                                 # 3150 states, Γ ghost
    dict(L=3, doping=0.2, J=0.3, delta=0.7, mu=-0.8, tp=-0.2, tpp=0.1, tp_v=-0.1),   # t′, t″ shells
    dict(L=3, doping=0.0, J=1.0, delta=1.0),                                         # Heisenberg, 252 states
    dict(L=3, kind="square", doping=0.2, J=0.4, delta=1.0, mu=-0.3),                 # antiperiodic x, no ghost
])
def test_local_energy_equals_hamiltonian_expectation(kw):
    """Σ Ψ² E_L / Σ Ψ² (qmckit's kernel) = ⟨Ψ|H|Ψ⟩/⟨Ψ|Ψ⟩ (fermion operators): every sign right;
    and the variational bound holds."""
    exact = study.exact_check(LatticeRVB(**kw))
    assert exact["enumeration"] == pytest.approx(exact["expectation"], abs=1e-10)
    assert exact["ground_state"] < exact["enumeration"]
    assert exact["kinetic"] <= 0.0


def test_free_fermion_closed_shells_have_zero_variance():
    for kw in (dict(L=5, doping=1 - 10 / 26), dict(L=9, doping=1 - 26 / 82), dict(L=4, kind="square", doping=0.25)):
        system = LatticeRVB(free=True, J=0.0, **kw)
        exact = system.fermi_sea_energy()
        state = system.random_configurations(40, np.random.default_rng(2))
        local = configuration_energies(*system.kernel_args(), *state.values())
        assert np.abs(local[:, 0] - exact).max() < 1e-10 * abs(exact)
        assert local[:, 1].max() == 0.0
    run = LatticeRun(LatticeRunConfig(params=dict(L=5, doping=1 - 10 / 26, free=True, J=0.0), chains=4, steps=40,
                                      equilibration=5, seed=1))
    result = run.run()
    est = result["estimates"]["energy_per_site"]
    assert est["mean"] == pytest.approx(run.system.fermi_sea_energy() / 26, abs=1e-12) and est["error"] < 1e-12
    assert result["estimates"]["double_occupancy"]["mean"] > 0  # unprojected: doubly occupied sites visited


def test_open_shell_free_state_is_refused():
    with pytest.raises(ValueError, match="open shell"):
        LatticeRVB(L=5, doping=0.1, free=True, J=0.0)


def test_vmc_matches_exact_enumeration_l3():
    system_kw = dict(L=3, doping=0.2, J=0.3, delta=1.5, mu=0.0)
    exact = study.exact_check(LatticeRVB(**system_kw))
    result = LatticeRun(LatticeRunConfig(params=system_kw, chains=16, steps=1500, equilibration=100, seed=4)).run()
    est = result["estimates"]
    for key, ref in (("energy_per_site", "enumeration"), ("kinetic_per_site", "kinetic"),
                     ("exchange_per_site", "exchange")):
        assert abs(est[key]["mean"] - exact[ref]) < 3 * est[key]["error"], (key, est[key], exact[ref])
    assert est["double_occupancy"]["mean"] == 0.0
    assert est["energy_per_site"]["mean"] > exact["ground_state"] + 5 * est["energy_per_site"]["error"]
    assert result["inverse_drift"] < 1e-10


def test_validation_messages():
    for kw, name in ((dict(L=4), "L"), (dict(L=0), "L"), (dict(doping=1.0), "doping"), (dict(J=-1), "J"),
                     (dict(delta=-0.1), "delta"), (dict(kind="hex"), "kind"), (dict(free=True, J=0.3), "J")):
        with pytest.raises(ValueError, match=f"^{name} "):
            LatticeRVB(**kw)
    with pytest.raises(ValueError, match="^chains "):
        LatticeRunConfig(params={"L": 3, "doping": 0.2}, chains=0)


# --- runs and CLI ------------------------------------------------------------------------------------
def test_resumed_run_matches_uninterrupted(tmp_path):
    cfg = dict(params=dict(L=5, **TABLE_61), chains=3, steps=60, equilibration=10, block=20, seed=9)
    whole = LatticeRun(LatticeRunConfig(**cfg)).run()
    path = tmp_path / "lattice.h5"
    first = LatticeRun(LatticeRunConfig(**cfg), checkpoint_path=path)
    blocks = first.blocks()
    next(blocks)  # one block, then "killed"
    resumed = resume_lattice_run(path).run()
    for key in ("energy_per_site", "kinetic_per_site", "exchange_per_site"):
        assert resumed["estimates"][key] == whole["estimates"][key]
    assert resumed["acceptance"] == whole["acceptance"] and resumed["swaps"] == whole["swaps"]


def test_run_config_runs_lattice_chains_and_refuses_walker_options():
    """RunConfig serves a lattice system too (walkers = chains): the same numbers as its LatticeRunConfig, and
    every option of continuum walkers refused by name."""
    from qmckit import Unsupported
    from qmckit.runs import RunConfig, make_run

    params = dict(L=3, doping=0.2, J=0.3)
    config = RunConfig(system="lattice", params=params, walkers=3, steps=12, equilibration=4, block=4, seed=2,
                       backend="cpu")
    lattice = LatticeRunConfig(params=params, chains=3, steps=12, equilibration=4, block=4, seed=2, backend="cpu")
    assert config.lattice_config() == lattice
    result = make_run(config).run()
    assert result == {**LatticeRun(lattice).run(), "wall_s": result["wall_s"], "profile": result["profile"]}
    for option, value in (("method", "dmc"), ("dt", 0.1), ("sampler", "brute"), ("density", "x"),
                          ("green", "all"), ("target_walkers", 7)):
        with pytest.raises(Unsupported, match=f"^{option}"):
            RunConfig(system="lattice", params=params, **{option: value})


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "qmckit", "run", "lattice", *args], capture_output=True, text=True)


def test_cli_contract_and_errors():
    res = _cli("--L", "3", "--doping", "0.2", "--steps", "30", "--walkers", "4", "--seed", "1", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert {"system", "method", "params", "seed", "backend", "estimates", "acceptance", "wall_s"} <= set(out)
    assert out["n_electrons"] == 8 and out["gamma_ghost"] is True
    assert out["estimates"]["energy_per_site"]["mean"] < 0
    for args, flag in ((("--L", "4"), "--L"), (("--doping", "1.5"), "--doping"), (("--method", "dmc"), "--method"),
                       (("--J", "0.3", "--free"), "--J")):
        res = _cli(*args)
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert res.returncode == 2 and len(lines) == 1 and flag in lines[0] and "Traceback" not in res.stderr


@pytest.mark.parametrize("kw", [dict(L=3, doping=0.2, J=0.3, delta=1.5, mu=0.0),
                                dict(L=3, kind="square", doping=0.2, J=0.3, delta=1.0, mu=-0.3)])
def test_correlations_equal_fermion_operator_expectations(kw):
    """Spin and d-wave pair correlations from qmckit's estimator, enumerated over every configuration,
    equal ⟨Ψ|O|Ψ⟩/⟨Ψ|Ψ⟩ with O built from fermion operators (signs of the pair hops and of the
    antiperiodic boundary included)."""
    from qmckit.systems import lattice_exact

    system = LatticeRVB(**kw)
    up, dn = study.all_configurations(system)
    psi = study.amplitudes(system, up, dn)
    keep = np.abs(psi) > 1e-12 * np.abs(psi).max()
    got = study.correlations(system, system.chain_state(up[keep], dn[keep]), psi[keep] ** 2)
    n, norm = system.n_sites, psi @ psi
    translate = system.cluster.translations()
    step, step_sign = system.cluster.unit_steps()
    U, D = (lambda s: (s, True)), (lambda s: (s + n, True))
    u, d = (lambda s: (s, False)), (lambda s: (s + n, False))
    for r in range(1, n):
        terms = []
        for i in range(n):
            j = translate[i, r]
            for di in range(2):
                for dj in range(2):
                    i2, j2 = step[i, di], step[j, dj]
                    if len({i, i2, j, j2}) < 4:
                        continue
                    g = (1.0 if di == dj else -1.0) * step_sign[i, di] * step_sign[j, dj] * 0.5
                    for ca, cb, sa in ((U(i), D(i2), 1), (D(i), U(i2), -1)):        # Δ†_{i,δ}
                        for aa, ab, sb in ((d(j2), u(j), 1), (u(j2), d(j), -1)):    # Δ_{j,δ′}
                            terms.append((g * sa * sb, [ca, cb, aa, ab]))
        if not terms:
            assert got["pairing"][r] == 0.0
            continue
        op = lattice_exact.operator(n, system.n_pairs, terms)
        exact = psi @ (op @ psi) / norm / (len(terms) / 4)
        assert got["pairing"][r] == pytest.approx(exact, abs=1e-10)
    sz = np.zeros((len(up), n))
    np.put_along_axis(sz, up, 0.5, axis=1)
    np.put_along_axis(sz, dn, -0.5, axis=1)
    exact_spin = [(psi ** 2) @ np.mean(sz * sz[:, translate[:, r]], axis=1) / norm for r in range(n)]
    assert np.allclose(got["spin"], exact_spin, atol=1e-12)
