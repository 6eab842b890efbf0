"""Finite square-lattice clusters for lattice VMC (study 000): sites, momenta, neighbours, bonds.

Two kinds, both with lattice spacing 1:

``tilted``  The L²+1 cluster of study 000 (L odd): the infinite square lattice modulo the periodic
            vectors a1 = (L, 1) and a2 = (−1, L). The map s = (L·x + y) mod N_s is a bijection from
            the cluster to 0..N_s−1 (it vanishes on a1 and a2 and is onto), so site s may be
            represented by the point (0, s) and a translation by (x, y) is s → s + L·x + y. The
            allowed momenta are k_q = (2π/N_s)·((L·q) mod N_s, q), q = 0..N_s−1, and
            exp(i k_q·r_s) = exp(2πi q s/N_s). Both periodic vectors have an even coordinate sum,
            so the cluster is bipartite. Fully periodic.
``square``  L×L sites, periodic in y and **antiperiodic in x** (a fermion hopping across the x
            boundary changes sign; k_x = 2π(m + ½)/L). The twist keeps Γ and every point of the
            d-wave nodal lines cos k_x = cos k_y out of the momentum set, so the d-wave pair
            function has no divergent weight; it is the boundary condition of Gros's and
            Paramekanti–Randeria–Trivedi's square-lattice VMC. Bipartite for even L.

``Cluster.coords`` gives each site one representative point (for plots and for the pair
function, which is evaluated from the actual displacement so that the antiperiodic sign is
automatic). ``neighbours[s, n]`` with ``hopping[s, n]`` lists, per site, the neighbours of the
shells t (4 sites), t′ (4 diagonal sites) and t″ (4 sites at distance 2) that have a nonzero
amplitude; the amplitude carries the boundary sign. ``bonds`` lists every nearest-neighbour
bond once: (s, s + x̂) and (s, s + ŷ), 2·N_s bonds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("tilted", "square")
_SHELLS = (((1, 0), (-1, 0), (0, 1), (0, -1)),        # t
           ((1, 1), (-1, -1), (1, -1), (-1, 1)),      # t′
           ((2, 0), (-2, 0), (0, 2), (0, -2)))        # t″


@dataclass(frozen=True, eq=False)
class Cluster:
    """A finite cluster: ``n_sites`` sites, ``coords`` (N_s, 2), ``momenta`` (N_s, 2) in units of
    1/lattice spacing, ``neighbours``/``hopping`` (N_s, n_nb), ``bonds`` (2 N_s, 2)."""

    kind: str
    L: int
    n_sites: int
    coords: np.ndarray
    momenta: np.ndarray
    neighbours: np.ndarray
    hopping: np.ndarray
    bonds: np.ndarray

    def has_gamma(self) -> bool:
        """Whether k = (0, 0) is an allowed momentum."""
        return bool(np.any(np.all(np.abs(self.momenta) < 1e-12, axis=1)))

    def translations(self) -> np.ndarray:
        """(N_s, N_s) table: entry [i, r] is the site r_i + r_r (site r read as the displacement from site 0)."""
        if self.kind == "tilted":
            return (np.arange(self.n_sites)[:, None] + np.arange(self.n_sites)[None, :]) % self.n_sites
        x, y = self.coords[:, 0], self.coords[:, 1]
        return ((x[:, None] + x[None, :]) % self.L) + self.L * ((y[:, None] + y[None, :]) % self.L)

    def unit_steps(self) -> tuple[np.ndarray, np.ndarray]:
        """The sites i + x̂ and i + ŷ (N_s, 2) and the boundary sign of those bonds (N_s, 2)."""
        return self.neighbours[:, [0, 2]].copy(), np.sign(self.hopping[:, [0, 2]])

    def hop_list(self) -> tuple[np.ndarray, np.ndarray]:
        """Each directed neighbour pair once as an undirected hop: ``(pairs (n, 2), amplitudes (n,))``.

        ``neighbours`` lists i→j and j→i; this keeps the entries with (dx, dy) in the positive half
        of each shell, so every hop is counted once (what an exact diagonalisation needs).
        """
        pairs, amps = [], []
        for s in range(self.n_sites):
            for n in range(self.neighbours.shape[1]):
                if n % 2 == 0:  # the shells list +d, −d in turn
                    pairs.append((s, self.neighbours[s, n]))
                    amps.append(self.hopping[s, n])
        return np.array(pairs, dtype=np.int64), np.array(amps)


def _site_tilted(L, n, x, y):
    return (L * x + y) % n


def _site_square(L, x, y):
    return (x % L) + L * (y % L)


def make_cluster(L: int, kind: str = "tilted", t: float = 1.0, tp: float = 0.0, tpp: float = 0.0) -> Cluster:
    """The cluster of side ``L`` with hopping amplitudes t, t′, t″ (in units of t; zero shells are left out)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(L, (int, np.integer)) or L < 2:
        raise ValueError(f"L must be an integer ≥ 2, got {L!r}")
    if kind == "tilted" and L % 2 == 0:
        raise ValueError(f"L must be odd for a tilted L²+1 cluster (bipartite under its periodic vectors), got {L}")
    shells = [(shell, amp) for shell, amp in zip(_SHELLS, (t, tp, tpp)) if amp != 0.0]
    if kind == "tilted":
        n = L * L + 1
        # one representative point per site: the shortest (x, y) with L·x + y ≡ s (ties: smaller x, y)
        best = {}
        for x in range(-L, L + 1):
            for y in range(-L, L + 1):
                s = _site_tilted(L, n, x, y)
                key = (x * x + y * y, x, y)
                if s not in best or key < best[s]:
                    best[s] = key
        coords = np.array([[best[s][1], best[s][2]] for s in range(n)], dtype=np.int64)
        q = np.arange(n)
        momenta = 2 * np.pi / n * np.stack([(L * q) % n, q], axis=1).astype(float)
        momenta = np.where(momenta > np.pi, momenta - 2 * np.pi, momenta)  # into (−π, π]
        neighbours = np.array([[_site_tilted(L, n, 0 + dx, s + dy) for shell, _ in shells for dx, dy in shell]
                               for s in range(n)], dtype=np.int64)
        hopping = np.array([[amp for shell, amp in shells for _ in shell] for _ in range(n)], dtype=float)
        bonds = np.array([(s, _site_tilted(L, n, 1, s)) for s in range(n)]
                         + [(s, _site_tilted(L, n, 0, s + 1)) for s in range(n)], dtype=np.int64)
    else:
        n = L * L
        coords = np.array([(s % L, s // L) for s in range(n)], dtype=np.int64)
        m = np.arange(L)
        kx = 2 * np.pi * (m + 0.5) / L
        ky = 2 * np.pi * m / L
        momenta = np.array([(a, b) for b in ky for a in kx])
        momenta = np.where(momenta > np.pi, momenta - 2 * np.pi, momenta)
        neighbours = np.empty((n, sum(len(sh) for sh, _ in shells)), dtype=np.int64)
        hopping = np.empty(neighbours.shape)
        for s, (x, y) in enumerate(coords):
            col = 0
            for shell, amp in shells:
                for dx, dy in shell:
                    neighbours[s, col] = _site_square(L, x + dx, y + dy)
                    wraps = (x + dx) // L  # crossings of the antiperiodic x boundary
                    hopping[s, col] = amp * (-1.0) ** wraps
                    col += 1
        bonds = np.array([(s, _site_square(L, x + 1, y)) for s, (x, y) in enumerate(coords)]
                         + [(s, _site_square(L, x, y + 1)) for s, (x, y) in enumerate(coords)], dtype=np.int64)
    return Cluster(kind=kind, L=int(L), n_sites=n, coords=coords, momenta=momenta, neighbours=neighbours,
                   hopping=hopping, bonds=bonds)


def displacements(cluster: Cluster) -> np.ndarray:
    """The (N_s, N_s, 2) displacements r_i − r_j between the representative points.

    Phases exp(ik·(r_i − r_j)) built from them are right for both kinds: the tilted cluster is fully
    periodic (any representatives work), and for the square one the actual difference carries the
    antiperiodic sign through cos(k_x·(x_i − x_j)).
    """
    r = cluster.coords.astype(float)
    return r[:, None, :] - r[None, :, :]
