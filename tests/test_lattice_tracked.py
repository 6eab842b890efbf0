"""The tracked algorithm of the lattice RVB chains (F and G kept up to date between moves) against the
thesis algorithm (ratios recomputed from A⁻¹): the same chain (qmckit.backends.lattice_chains)."""
from __future__ import annotations

import numpy as np
import pytest

from qmckit.backends.lattice_chains import CpuChains
from qmckit.rng import seed_states
from qmckit.systems.lattice_rvb import (LatticeRVB, hop_ratios, tracked_update_down, tracked_update_up,
                                        two_electron_ratio)


def _start(params, chains, seed=5):
    system = LatticeRVB(**params)
    state = system.random_configurations(chains, np.random.default_rng(seed))
    return system, state, seed_states(seed + 1, chains)


def _fresh(system, up, dn):
    ainv = np.linalg.inv(system.pair[np.ix_(up, dn)])
    F = np.empty((system.n_sites, system.size))
    G = np.empty((system.size, system.n_sites))
    hop_ratios(system.pair, up, dn, ainv, F, G)
    return ainv, F, G


def test_rank_one_updates_equal_recomputation():
    system, state, _ = _start(dict(L=5, doping=0.1), 1, seed=3)
    up, dn = state["up_site"][0].copy(), state["dn_site"][0].copy()
    ainv, F, G = _fresh(system, up, dn)
    m, n = system.size, system.n_sites
    scratch = (np.empty(m), np.empty(m), np.empty(n), np.empty(n))
    occupied = set(up[:system.n_pairs]) | set(dn[:system.n_pairs])
    empty = [s for s in range(n) if s not in occupied]
    tracked_update_up(system.pair, up, dn, ainv, F, G, 2, empty[0], *scratch)
    up[2] = empty[0]
    for mine, ref in zip((ainv, F, G), _fresh(system, up, dn)):
        assert np.abs(mine - ref).max() < 1e-10
    tracked_update_down(system.pair, up, dn, ainv, F, G, 3, empty[1], *scratch)
    dn[3] = empty[1]
    for mine, ref in zip((ainv, F, G), _fresh(system, up, dn)):
        assert np.abs(mine - ref).max() < 1e-10
    k, l = 0, 1  # a swap: its ratio, then two steps through the doubly occupied intermediate
    a, b = up[k], dn[l]
    ratio = two_electron_ratio(system.pair, ainv, up, F, G, k, b, l, a)
    up2, dn2 = up.copy(), dn.copy()
    up2[k], dn2[l] = b, a
    exact = np.linalg.det(system.pair[np.ix_(up2, dn2)]) / np.linalg.det(system.pair[np.ix_(up, dn)])
    assert abs(ratio - exact) < 1e-10
    tracked_update_up(system.pair, up, dn, ainv, F, G, k, b, *scratch)
    up[k] = b
    tracked_update_down(system.pair, up, dn, ainv, F, G, l, a, *scratch)
    dn[l] = a
    for mine, ref in zip((ainv, F, G), _fresh(system, up, dn)):
        assert np.abs(mine - ref).max() < 1e-10


@pytest.mark.parametrize("params,refresh", [(dict(L=5, doping=0.1), 1), (dict(L=9, doping=0.1), 1),
                                            (dict(L=5, doping=0.1), 10), (dict(L=4, kind="square", doping=0.125), 0),
                                            (dict(L=5, doping=0.6, free=True, J=0.0), 2)])
def test_tracked_chain_equals_thesis_chain(params, refresh):
    system, state, states = _start(params, 4)
    runs = {}
    for algorithm in ("thesis", "tracked"):
        chains = CpuChains(system, {k: np.array(v) for k, v in state.items()}, states.copy(), refresh_every=refresh,
                           algorithm=algorithm)
        e = np.concatenate([chains.sweep(7, measure=False), chains.sweep(13, measure=True)], axis=1)
        runs[algorithm] = (chains, e, chains.energies())
    (a, ea, na), (b, eb, nb_) = runs["thesis"], runs["tracked"]
    assert np.array_equal(a.counts, b.counts)
    assert a.counts[:, 1].sum() > 0 and (system.params.free or a.counts[:, 3].sum() > 0)
    for key in ("up_site", "dn_site", "up_at", "dn_at"):
        assert np.array_equal(a.state[key], b.state[key]), key
    assert np.array_equal(a.states, b.states)
    assert np.abs(a.state["ainv"] - b.state["ainv"]).max() < 1e-9
    assert np.abs(ea - eb).max() < 1e-9
    assert np.abs(na - nb_).max() < 1e-9
    if refresh:
        assert b.drift.max() < 1e-9 and b.drift_fg.max() < 1e-9
    if system.params.free:
        assert np.allclose(eb[..., 0] + eb[..., 1], system.fermi_sea_energy(), atol=1e-9)


def test_unknown_algorithm_raises():
    system, state, states = _start(dict(L=3, doping=0.2), 1)
    with pytest.raises(ValueError, match="algorithm"):
        CpuChains(system, state, states, algorithm="fast")


def test_tracked_matrices_stay_accurate_between_rebuilds():
    """The update vectors divided by the ratio are recomputed from A⁻¹ on acceptance: with them tracked too,
    A⁻¹, F and G drifted by ~3e-4 here (L = 9, 100 sweeps, rebuilds every 10) and by O(1) at L = 15."""
    system, state, states = _start(dict(L=9, doping=0.1), 2, seed=7)
    runs = [CpuChains(system, {k: np.array(v) for k, v in state.items()}, states.copy(), refresh_every=10,
                      algorithm=algorithm) for algorithm in ("thesis", "tracked")]
    energies = [chains.sweep(100, measure=True) for chains in runs]
    assert np.array_equal(runs[0].counts, runs[1].counts)
    assert runs[1].drift.max() < 1e-9 and runs[1].drift_fg.max() < 1e-9
    assert np.abs(energies[0] - energies[1]).max() < 1e-8
