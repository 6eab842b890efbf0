"""Markov chains of the projected RVB state (study 000): the CPU kernel.

One *proposal* (study 000's moves, the thesis's Alg. 4 with neighbour fraction 0):

1. an electron is drawn uniformly among the 2N_p: e = ⌊u·2N_p⌋, label e // 2, spin e % 2 (0 down, 1 up);
2. a target site is drawn uniformly, ⌊u·N_s⌋, and redrawn while it holds an electron of the same
   spin (the electron's own site included);
3. an empty target is a *hop*; a target with an opposite-spin electron is a *swap* of the two
   (projected state only; the free-fermion check hops there instead, creating a double occupancy);
4. one more uniform u decides: accept if u < R², R = Ψ(x′)/Ψ(x).

Every proposal has the same number of choices forward and backward (2N_p electrons, N_s − N_p
targets), so the proposal is symmetric and Metropolis is exact. A *sweep* is ``moves_per_sweep``
proposals (default N_e, our reading of the thesis's undefined npsweep); one measurement follows each
measured sweep.

An accepted swap is two Sherman–Morrison steps through the doubly-occupied intermediate; the step
with the larger first ratio goes first, and if both first ratios are below 1e-8 (a singular
intermediate) A⁻¹ is rebuilt instead. Every ``refresh_every`` sweeps of a call, and after its last
sweep, A⁻¹ is rebuilt from scratch and the largest deviation of the incremental inverse from it
(relative to max |A⁻¹|) is recorded.

``algorithm="tracked"`` (:func:`run_chains_tracked`) keeps the hop ratios F = Φ(sites, R↓) A⁻¹ and
G = A⁻¹ Φ(R↑, sites) up to date between moves (rank-1 updates on acceptance, formulas in
:mod:`qmckit.systems.lattice_rvb`): a hop ratio is one element of F or G, a swap ratio
``two_electron_ratio`` (O(M)), and a measurement needs no recomputation of F and G. Same proposals,
random numbers, swap order and rebuild rules (a rebuild recomputes F and G from the new A⁻¹), so the
same chain as the default ``"thesis"`` algorithm (its ratios equal to round-off). An accepted move
recomputes from A⁻¹ the vectors that its update divides by the ratio (O(M² + N_s M), see
:func:`~qmckit.systems.lattice_rvb.tracked_update_up`): tracking them too is unstable.

Random numbers come from each chain's xoroshiro128+ stream (:mod:`qmckit.rng`), in the order above,
so a GPU kernel compiled from the same generator can follow the same chain.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .. import rng as _rng
from ..systems.slater import invert
from ..systems.lattice_rvb import (UP, hop_ratios, local_energy, local_energy_given, ratio_down, ratio_swap, ratio_up,
                                   tracked_update_down, tracked_update_up, two_electron_ratio, update_down, update_up)

SINGULAR_RATIO = 1e-8
# Sweeps between rebuilds of A⁻¹ by default. A rebuild costs about one sweep (L = 15 on an H100:
# 0.60 ms against 0.87 ms), so rebuilding every sweep took 35 % of the Table 6.2 run; the deviation it
# removes stays at round-off over a whole 10⁴-sweep run without any rebuild (energies equal to 3e-15,
# benchmarks/results/lattice_chains_h100_2026-11-22.md), and every call still ends with one.
REFRESH_EVERY = 100
# counters per chain
HOPS_PROPOSED, HOPS_ACCEPTED, SWAPS_PROPOSED, SWAPS_ACCEPTED, REBUILDS = range(5)
N_COUNTERS = 5


@nb.njit(cache=True)
def rebuild_inverse(pair, up_site, dn_site, ainv):
    """A⁻¹ from scratch; returns max |A⁻¹_old − A⁻¹_new| / max |A⁻¹_new| (the incremental drift)."""
    m = ainv.shape[0]
    a = np.empty((m, m))
    for k in range(m):
        for l in range(m):
            a[k, l] = pair[up_site[k], dn_site[l]]
    fresh = np.empty((m, m))
    invert(a, fresh)  # our Gauss–Jordan, not LAPACK: no library threads inside parallel chains
    drift = np.abs(fresh - ainv).max() / np.abs(fresh).max()
    ainv[:, :] = fresh
    return drift


@nb.njit(cache=True, inline="always")
def swap_sites(up_site, dn_site, up_at, dn_at, k, l, a, b):
    """The configuration after an accepted swap: up electron k a → b, down electron l b → a (the GPU kernel
    compiles this function's source as a device function)."""
    up_site[k] = b
    dn_site[l] = a
    up_at[a] = -1
    up_at[b] = k
    dn_at[b] = -1
    dn_at[a] = l


@nb.njit(cache=True)
def propose(states, w, n_pairs, n_sites, up_site, dn_site, up_at, dn_at):
    """Draw (label, spin, target site) as in the module docstring."""
    e = min(int(_rng.uniform(states, w) * 2 * n_pairs), 2 * n_pairs - 1)
    label = e >> 1
    spin = e & 1
    while True:
        target = min(int(_rng.uniform(states, w) * n_sites), n_sites - 1)
        if (up_at[target] if spin == UP else dn_at[target]) < 0:
            return label, spin, target


@nb.njit(cache=True)
def move(pair, projected, n_pairs, up_site, dn_site, up_at, dn_at, ainv, states, w, work, counts):
    """One proposal and its Metropolis decision; updates the configuration and A⁻¹ in place."""
    n_sites = up_at.shape[0]
    label, spin, target = propose(states, w, n_pairs, n_sites, up_site, dn_site, up_at, dn_at)
    swap = projected and (dn_at[target] >= 0 if spin == UP else up_at[target] >= 0)
    if swap:
        k = label if spin == UP else up_at[target]
        l = dn_at[target] if spin == UP else label
        ratio = ratio_swap(pair, ainv, up_site, dn_site, k, l, work)
        counts[SWAPS_PROPOSED] += 1
    elif spin == UP:
        ratio = ratio_up(pair, ainv, dn_site, label, target)
        counts[HOPS_PROPOSED] += 1
    else:
        ratio = ratio_down(pair, ainv, up_site, label, target)
        counts[HOPS_PROPOSED] += 1
    if not _rng.uniform(states, w) < ratio * ratio:
        return
    if swap:
        a = up_site[k]
        b = dn_site[l]
        first_up = ratio_up(pair, ainv, dn_site, k, b)
        first_down = ratio_down(pair, ainv, up_site, l, a)
        swap_sites(up_site, dn_site, up_at, dn_at, k, l, a, b)
        if max(abs(first_up), abs(first_down)) < SINGULAR_RATIO:
            rebuild_inverse(pair, up_site, dn_site, ainv)
            counts[REBUILDS] += 1
        elif abs(first_up) >= abs(first_down):
            dn_site[l] = b  # the intermediate: up k already at b, down l still there
            update_up(pair, ainv, dn_site, k, b, first_up, work)
            dn_site[l] = a
            update_down(pair, ainv, up_site, l, a, ratio_down(pair, ainv, up_site, l, a), work)
        else:
            up_site[k] = a
            update_down(pair, ainv, up_site, l, a, first_down, work)
            up_site[k] = b
            update_up(pair, ainv, dn_site, k, b, ratio_up(pair, ainv, dn_site, k, b), work)
        counts[SWAPS_ACCEPTED] += 1
    elif spin == UP:
        update_up(pair, ainv, dn_site, label, target, ratio, work)
        up_at[up_site[label]] = -1
        up_at[target] = label
        up_site[label] = target
        counts[HOPS_ACCEPTED] += 1
    else:
        update_down(pair, ainv, up_site, label, target, ratio, work)
        dn_at[dn_site[label]] = -1
        dn_at[target] = label
        dn_site[label] = target
        counts[HOPS_ACCEPTED] += 1


@nb.njit(cache=True, nogil=True, parallel=True)
def run_chains(pair, neighbours, hopping, bonds, J, projected, n_pairs, up_site, dn_site, up_at, dn_at, ainv,
               states, n_sweeps, moves_per_sweep, measure, refresh_every, energies, counts, drift):
    """``n_sweeps`` sweeps of every chain (in parallel over chains), in place.

    Chain state: up_site, dn_site (W, M); up_at, dn_at (W, N_s); ainv (W, M, M); states (W, 2).
    Outputs: energies (W, n_sweeps, 3) ← (E_kin, E_J, double occupancy) after each sweep when
    ``measure``; counts (W, 5) incremented; drift (W,) ← max(drift, rebuild deviation).
    """
    n_chains, m = up_site.shape
    n_sites = up_at.shape[1]
    for w in nb.prange(n_chains):
        work = np.empty(m)
        F = np.empty((n_sites, m))
        G = np.empty((m, n_sites))
        for s in range(n_sweeps):
            for _ in range(moves_per_sweep):
                move(pair, projected, n_pairs, up_site[w], dn_site[w], up_at[w], dn_at[w], ainv[w], states, w,
                     work, counts[w])
            if refresh_every > 0 and ((s + 1) % refresh_every == 0 or s + 1 == n_sweeps):
                drift[w] = max(drift[w], rebuild_inverse(pair, up_site[w], dn_site[w], ainv[w]))
            if measure:
                kinetic, exchange, double = local_energy(pair, neighbours, hopping, bonds, J, projected, n_pairs,
                                                         up_site[w], dn_site[w], up_at[w], dn_at[w], ainv[w], F, G)
                energies[w, s, 0] = kinetic
                energies[w, s, 1] = exchange
                energies[w, s, 2] = double


@nb.njit(cache=True)
def configuration_energies(pair, neighbours, hopping, bonds, J, projected, n_pairs, up_site, dn_site, up_at, dn_at,
                           ainv):
    """(E_kin, E_J, double occupancy) of every chain's current configuration: (W, 3)."""
    n_chains, m = up_site.shape
    n_sites = up_at.shape[1]
    out = np.empty((n_chains, 3))
    F = np.empty((n_sites, m))
    G = np.empty((m, n_sites))
    for w in range(n_chains):
        kinetic, exchange, double = local_energy(pair, neighbours, hopping, bonds, J, projected, n_pairs, up_site[w],
                                                 dn_site[w], up_at[w], dn_at[w], ainv[w], F, G)
        out[w, 0] = kinetic
        out[w, 1] = exchange
        out[w, 2] = double
    return out


@nb.njit(cache=True)
def move_tracked(pair, projected, n_pairs, up_site, dn_site, up_at, dn_at, ainv, F, G, states, w, v1, v2, v3, v4,
                 counts):
    """:func:`move` with the tracked hop ratios F (N_s, M), G (M, N_s), kept up to date; v1, v2 (M,) and
    v3, v4 (N_s,) scratch (an accepted swap below the singular threshold rebuilds A⁻¹, F and G)."""
    n_sites = up_at.shape[0]
    label, spin, target = propose(states, w, n_pairs, n_sites, up_site, dn_site, up_at, dn_at)
    swap = projected and (dn_at[target] >= 0 if spin == UP else up_at[target] >= 0)
    k = 0
    l = 0
    if swap:
        k = label if spin == UP else up_at[target]
        l = dn_at[target] if spin == UP else label
        ratio = two_electron_ratio(pair, ainv, up_site, F, G, k, dn_site[l], l, up_site[k])
        counts[SWAPS_PROPOSED] += 1
    elif spin == UP:
        ratio = F[target, label]
        counts[HOPS_PROPOSED] += 1
    else:
        ratio = G[label, target]
        counts[HOPS_PROPOSED] += 1
    if not _rng.uniform(states, w) < ratio * ratio:
        return
    if swap:
        a = up_site[k]
        b = dn_site[l]
        first_up = F[b, k]
        first_down = G[l, a]
        counts[SWAPS_ACCEPTED] += 1
        if max(abs(first_up), abs(first_down)) < SINGULAR_RATIO:
            up_site[k] = b
            dn_site[l] = a
            rebuild_inverse(pair, up_site, dn_site, ainv)
            hop_ratios(pair, up_site, dn_site, ainv, F, G)
            counts[REBUILDS] += 1
        elif abs(first_up) >= abs(first_down):
            tracked_update_up(pair, up_site, dn_site, ainv, F, G, k, b, v1, v2, v3, v4)
            up_site[k] = b  # the intermediate: up k at b, down l still there
            tracked_update_down(pair, up_site, dn_site, ainv, F, G, l, a, v1, v2, v3, v4)
            dn_site[l] = a
        else:
            tracked_update_down(pair, up_site, dn_site, ainv, F, G, l, a, v1, v2, v3, v4)
            dn_site[l] = a  # the intermediate: down l at a, up k still there
            tracked_update_up(pair, up_site, dn_site, ainv, F, G, k, b, v1, v2, v3, v4)
            up_site[k] = b
        up_at[a] = -1
        up_at[b] = k
        dn_at[b] = -1
        dn_at[a] = l
    elif spin == UP:
        tracked_update_up(pair, up_site, dn_site, ainv, F, G, label, target, v1, v2, v3, v4)
        up_at[up_site[label]] = -1
        up_at[target] = label
        up_site[label] = target
        counts[HOPS_ACCEPTED] += 1
    else:
        tracked_update_down(pair, up_site, dn_site, ainv, F, G, label, target, v1, v2, v3, v4)
        dn_at[dn_site[label]] = -1
        dn_at[target] = label
        dn_site[label] = target
        counts[HOPS_ACCEPTED] += 1


@nb.njit(cache=True)
def _relative_deviation(old, new):
    dmax = 0.0
    amax = 0.0
    for i in range(old.shape[0]):
        for j in range(old.shape[1]):
            dmax = max(dmax, abs(old[i, j] - new[i, j]))
            amax = max(amax, abs(new[i, j]))
    return dmax / amax if amax > 0.0 else 0.0


@nb.njit(cache=True, nogil=True, parallel=True)
def run_chains_tracked(pair, neighbours, hopping, bonds, J, projected, n_pairs, up_site, dn_site, up_at, dn_at, ainv,
                       states, n_sweeps, moves_per_sweep, measure, refresh_every, energies, counts, drift, drift_fg):
    """:func:`run_chains` with the tracked algorithm (:func:`move_tracked`): F and G are formed from A⁻¹
    at the start of the call and after every rebuild, and updated with A⁻¹ on every accepted move.
    ``drift_fg`` (W,) ← max(drift_fg, max |F,G_tracked − F,G_fresh| / max |F,G_fresh|) at the rebuilds."""
    n_chains, m = up_site.shape
    n_sites = up_at.shape[1]
    for w in nb.prange(n_chains):
        v1 = np.empty(m)
        v2 = np.empty(m)
        v3 = np.empty(n_sites)
        v4 = np.empty(n_sites)
        F = np.empty((n_sites, m))
        G = np.empty((m, n_sites))
        F2 = np.empty((n_sites, m))
        G2 = np.empty((m, n_sites))
        hop_ratios(pair, up_site[w], dn_site[w], ainv[w], F, G)
        for s in range(n_sweeps):
            for _ in range(moves_per_sweep):
                move_tracked(pair, projected, n_pairs, up_site[w], dn_site[w], up_at[w], dn_at[w], ainv[w], F, G,
                             states, w, v1, v2, v3, v4, counts[w])
            if refresh_every > 0 and ((s + 1) % refresh_every == 0 or s + 1 == n_sweeps):
                drift[w] = max(drift[w], rebuild_inverse(pair, up_site[w], dn_site[w], ainv[w]))
                hop_ratios(pair, up_site[w], dn_site[w], ainv[w], F2, G2)
                drift_fg[w] = max(drift_fg[w], _relative_deviation(F, F2), _relative_deviation(G, G2))
                F[:, :] = F2
                G[:, :] = G2
            if measure:
                kinetic, exchange, double = local_energy_given(pair, neighbours, hopping, bonds, J, projected,
                                                               n_pairs, up_site[w], dn_site[w], up_at[w], dn_at[w],
                                                               ainv[w], F, G)
                energies[w, s, 0] = kinetic
                energies[w, s, 1] = exchange
                energies[w, s, 2] = double


ALGORITHMS = ("thesis", "tracked")


class CpuChains:
    """W Markov chains of a :class:`~qmckit.systems.lattice_rvb.LatticeRVB` state on the CPU.

    ``state`` holds the chain arrays of :meth:`LatticeRVB.random_configurations` plus ``states``
    (W, 2) uint64 random streams; :meth:`sweep` advances all chains and returns the measurements.
    ``algorithm``: "thesis" (default: ratios recomputed from A⁻¹, :func:`run_chains`) or "tracked"
    (F and G kept up to date, :func:`run_chains_tracked`; the same chain to round-off).
    """

    backend = "cpu"

    def __init__(self, system, state: dict, states: np.ndarray, moves_per_sweep: int | None = None,
                 refresh_every: int = REFRESH_EVERY, algorithm: str = "thesis"):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
        self.algorithm = algorithm
        self.system = system
        self.state = state
        self.states = states
        self.moves_per_sweep = int(moves_per_sweep or system.n_electrons)
        self.refresh_every = int(refresh_every)
        n_chains = states.shape[0]
        self.counts = np.zeros((n_chains, N_COUNTERS), dtype=np.int64)
        self.drift = np.zeros(n_chains)
        self.drift_fg = np.zeros(n_chains)  # tracked only: F, G deviation at the rebuilds

    @property
    def n_chains(self) -> int:
        return self.states.shape[0]

    def sweep(self, n_sweeps: int, measure: bool = True) -> np.ndarray:
        """Advance every chain ``n_sweeps`` sweeps; (W, n_sweeps, 3) of (E_kin, E_J, double occupancy)
        per sweep (whole cluster, in t) when ``measure``, else an empty array."""
        s = self.state
        energies = np.zeros((self.n_chains, n_sweeps if measure else 0, 3))
        args = (*self.system.kernel_args(), s["up_site"], s["dn_site"], s["up_at"], s["dn_at"], s["ainv"],
                self.states, n_sweeps, self.moves_per_sweep, measure, self.refresh_every, energies, self.counts,
                self.drift)
        if self.algorithm == "tracked":
            run_chains_tracked(*args, self.drift_fg)
        else:
            run_chains(*args)
        return energies

    def host_state(self) -> dict:
        """The chain arrays (up_site, dn_site, up_at, dn_at, ainv) on the host (for checkpoints)."""
        return {name: np.array(value) for name, value in self.state.items()}

    def states_to_host(self) -> np.ndarray:
        return np.array(self.states)

    def energies(self) -> np.ndarray:
        """(W, 3) local (E_kin, E_J, double occupancy) of the current configurations."""
        s = self.state
        return configuration_energies(*self.system.kernel_args(), s["up_site"], s["dn_site"], s["up_at"],
                                      s["dn_at"], s["ainv"])
