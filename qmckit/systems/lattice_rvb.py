"""Gutzwiller-projected d-wave RVB states for the t–J model on a square lattice (study 000).

Energies in units of the nearest-neighbour hopping t (t = 1); lengths in lattice spacings.

Hamiltonian (study 000's code: the t–t′–t″–J model at U = ∞)

    H = −Σ_{ij,σ} t_ij P (c†_iσ c_jσ + h.c.) P + J Σ_⟨ij⟩ (S_i·S_j − n_i n_j / 4)

P removes doubly occupied sites; the J sum runs over nearest-neighbour bonds.

Trial state (the thesis never writes it; these are our conventions)

    |Ψ⟩ = P_G P_N Π_k (u_k + v_k c†_k↑ c†_−k↓)|0⟩,    Ψ(x) = det[φ(R↑_k, R↓_l)]_{k,l = 1..N_p}
    φ(r_i, r_j) = (1/N_s) Σ_k g_k cos(k·(r_i − r_j)),   g_k = v_k/u_k = Δ_k / (ξ_k + E_k)
    ξ_k = −2(cos k_x + cos k_y) − 4 t′_v cos k_x cos k_y − 2 t″_v (cos 2k_x + cos 2k_y) − μ
    Δ_k = (Δ/2)(cos k_x − cos k_y)   (Paramekanti–Randeria–Trivedi's normalisation of Δ),
    E_k = (ξ_k² + Δ_k²)^½

with g_k evaluated as (E_k − ξ_k)/Δ_k where ξ_k < 0 (no cancellation). Rows are up electrons,
columns down electrons; electrons are labelled by pair index k = 0..N_p−1 and spin (0 down, 1 up).

**The Γ point.** At k = 0, Δ_Γ = 0 and ξ_Γ = −4 − μ < 0, so g_Γ = ∞: the Γ pair is occupied with
certainty. The N-projected state is then b†_Γ (Σ_{k≠Γ} g_k b†_k)^{N_p−1}|0⟩, whose amplitude is the
bordered determinant

    Ψ(x) ∝ det [[A₀, 1], [1ᵀ, 0]],   A₀ = [φ₀(R↑_k, R↓_l)],  φ₀ = φ without the Γ term,

i.e. one extra "ghost" up electron and one ghost down electron at a fictitious site N_s with
φ(ghost, ·) = φ(·, ghost) = 1 and φ(ghost, ghost) = 0. This is the exact limit (no large number in
any matrix: well conditioned), and the determinant ratios and Sherman–Morrison updates are those of
an (N_p + 1)-square matrix whose last row and column never move. The ghost is used whenever
Γ is allowed, Δ ≠ 0 and ξ_Γ < 0 (d-wave on the tilted cluster); the square cluster's antiperiodic
x boundary has no Γ. Any other divergent g_k (Δ_k = 0 with ξ_k < 0 off Γ) is refused.

**Δ = 0 and free fermions.** With Δ = 0 the pair function is the Fermi sea, g_k = 1 for the N_p
lowest ξ_k (this needs a closed shell) and 0 elsewhere; Ψ is then the product of the up and down
Slater determinants of the Fermi sea. ``free=True`` drops the projection as well (double occupancy
allowed, hops onto any site without a same-spin electron) and needs J = 0: its local energy is the
Fermi-sea energy 2 Σ_{k∈FS} ε_k for every configuration, a zero-variance check.

**Electron count.** N_e = 2·round(N_s(1 − x)/2) (the even integer nearest N_s(1 − x); it
reproduces the thesis's 24, 74, 204 at x = 0.1), N_p = N_e/2, S_z = 0.

**Local energy** (whole configuration; the energy per site divides by N_s):

    E_kin = −Σ_{electron at i} Σ_{j nbr of i, allowed} t_ij · Ψ(x_{i→j})/Ψ(x)
    E_J   = −(J/2) Σ_{antiparallel ⟨ij⟩} (1 + Ψ(x_{i↔j})/Ψ(x))

(a spin flip of two fermions is minus their position exchange). All ratios come from

    F = Φ(sites, R↓) A⁻¹  (N_s × M)    F[b, k] = ratio of up electron k → site b
    G = A⁻¹ Φ(R↑, sites)  (M × N_s)    G[l, a] = ratio of down electron l → site a
    swap (up k: a → b, down l: b → a):  A⁻¹[l,k] φ(b,a) + F[b,k] G[l,a] − A⁻¹[l,k] Σ_c F[b,c] φ(R↑_c, a)

at O(N_s M²) per measurement, instead of the thesis's O(N_s N_p²)-per-bond recomputation.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numba as nb
import numpy as np

from .clusters import KINDS, Cluster, displacements, make_cluster
from .protocol import Capabilities, System, parameter, validate

ENERGY_KEY = "energy_per_site"
ENERGY_UNIT = "t"
DOWN, UP = 0, 1
EMPTY = -1


def electron_count(n_sites: int, doping: float) -> int:
    """N_e = the even integer nearest N_s(1 − x) (thesis: 24, 74, 204 at x = 0.1 for L = 5, 9, 15)."""
    return 2 * int(math.floor(n_sites * (1.0 - doping) / 2.0 + 0.5))


@dataclass(frozen=True)
class LatticeParams:
    """Parameters of the projected RVB state on a cluster (energies in units of t = 1; metadata on each field).

    Δ_k = (Δ/2)(cos k_x − cos k_y); ``free`` gives unprojected free fermions with the Fermi-sea pair
    function (needs J = 0 and a closed shell): every configuration then has the exact Fermi-sea energy.
    """

    L: int = parameter(5, help="cluster side: tilted L²+1 sites with L odd (study 000), or L×L with kind square",
                       low=2, typical=(3, 15), symbol="L")
    doping: float = parameter(0.1, help="hole doping x; N_e = 2·round(N_s(1−x)/2)", low=0.0, high=1.0,
                              high_open=True, typical=(0.0, 0.3), symbol="doping x")
    J: float = parameter(0.3, unit="t", help="exchange J (0 with free)", low=0.0, typical=(0.0, 1.0), symbol="J")
    delta: float = parameter(1.5, unit="t", help="d-wave variational gap Δ (0: projected Fermi sea)", low=0.0,
                             variational=True, typical=(0.0, 3.0), symbol="Δ")
    mu: float = parameter(0.0, unit="t", help="variational chemical potential μ", variational=True,
                          typical=(-1.0, 1.0), symbol="μ")
    tp_v: float = parameter(0.0, unit="t", help="variational t′ in the pair function's ξ_k", variational=True, symbol="t′ (ψ)")
    tp: float = parameter(0.0, unit="t", help="Hamiltonian next-neighbour hopping t′", symbol="t′")
    tpp: float = parameter(0.0, unit="t", help="Hamiltonian third-neighbour hopping t″", symbol="t″")
    kind: str = parameter("tilted", help="cluster: tilted (L²+1, periodic) or square (L×L, antiperiodic in x)",
                          choices=KINDS, symbol="cluster")
    free: bool = parameter(False, help="unprojected free fermions with the Fermi-sea pair function (needs a closed "
                           "shell; J = 0): every configuration has the exact Fermi-sea energy", symbol="free fermions")

    def __post_init__(self):
        validate(self)
        if self.kind == "tilted" and self.L % 2 == 0:
            raise ValueError(f"L must be odd for the tilted L²+1 cluster, got {self.L}")
        if self.free and self.J != 0:
            raise ValueError(f"J must be 0 with free (unprojected fermions have no t–J exchange), got {self.J!r}")
        n_sites = self.L * self.L + (1 if self.kind == "tilted" else 0)
        n_e = electron_count(n_sites, self.doping)
        if n_e < 2:
            raise ValueError(f"doping {self.doping} leaves fewer than 2 electrons on {n_sites} sites")

    def as_dict(self) -> dict:
        return asdict(self)


def dispersion(momenta: np.ndarray, mu: float = 0.0, tp_v: float = 0.0) -> np.ndarray:
    """ξ_k of the pair function for momenta (K, 2): −2(cos k_x + cos k_y) − 4t′_v cos k_x cos k_y − μ."""
    cx, cy = np.cos(momenta[:, 0]), np.cos(momenta[:, 1])
    return -2.0 * (cx + cy) - 4.0 * tp_v * cx * cy - mu


def band_energy(momenta: np.ndarray, tp: float = 0.0, tpp: float = 0.0) -> np.ndarray:
    """ε_k of the Hamiltonian's hopping: −2(cos k_x + cos k_y) − 4t′ cos k_x cos k_y − 2t″(cos 2k_x + cos 2k_y)."""
    kx, ky = momenta[:, 0], momenta[:, 1]
    return (-2.0 * (np.cos(kx) + np.cos(ky)) - 4.0 * tp * np.cos(kx) * np.cos(ky)
            - 2.0 * tpp * (np.cos(2 * kx) + np.cos(2 * ky)))


def d_wave_gap(momenta: np.ndarray, delta: float) -> np.ndarray:
    """Δ_k = (Δ/2)(cos k_x − cos k_y)."""
    return 0.5 * delta * (np.cos(momenta[:, 0]) - np.cos(momenta[:, 1]))


def fermi_sea(energies: np.ndarray, n_pairs: int) -> np.ndarray:
    """Boolean mask of the ``n_pairs`` lowest energies; ValueError unless they form a closed shell."""
    order = np.argsort(energies, kind="stable")
    if n_pairs < len(energies) and abs(energies[order[n_pairs]] - energies[order[n_pairs - 1]]) < 1e-9:
        e = np.sort(energies)
        closed = [m for m in range(1, len(e)) if e[m] - e[m - 1] > 1e-9]
        raise ValueError(f"doping: N_p = {n_pairs} is an open shell on this cluster (closed shells at N_p = "
                         f"{', '.join(map(str, closed[:8]))}, …); the Fermi-sea pair function needs a closed shell")
    mask = np.zeros(len(energies), dtype=bool)
    mask[order[:n_pairs]] = True
    return mask


class LatticeRVB(System):
    """The projected RVB state of :class:`LatticeParams` on its cluster: geometry, pair matrix and kernels.

    Attributes: ``cluster``, ``n_sites``, ``n_electrons``, ``n_pairs``, ``ghost`` (1 when the Γ
    pair is the bordered-determinant limit, else 0), ``size`` = n_pairs + ghost (the matrix side M),
    ``pair`` (N_s + 1, N_s + 1) the pair matrix with the ghost row/column at index N_s, ``weights``
    g_k per momentum (inf at Γ when ghost).
    """

    name = "lattice"
    title = "t–J model: Gutzwiller-projected d-wave RVB state on a square-lattice cluster (study 000)"
    description = ("Lattice VMC of the projected d-wave BCS (RVB) state for the t–J model on a tilted L²+1 or square "
                   "cluster: hops to empty sites and spin swaps, Sherman–Morrison updates. Energies in units of t; "
                   "reports energy_per_site, kinetic_per_site, exchange_per_site and double_occupancy.")
    Params = LatticeParams
    kind = "lattice"
    energy_key = ENERGY_KEY
    energy_unit = ENERGY_UNIT
    capabilities = Capabilities(gpu="qmckit.backends.lattice_cuda:CudaChains", density=False)
    cli_implies = {"free": {"J": 0.0}}  # unprojected fermions have no exchange
    examples = (dict(L=3, doping=0.2), dict(L=4, kind="square", doping=0.125, delta=0.8, mu=-0.2))

    def __init__(self, params: LatticeParams | None = None, **kwargs):
        super().__init__(params, **kwargs)
        p = self.params
        self.cluster: Cluster = make_cluster(p.L, p.kind, 1.0, p.tp, p.tpp)
        self.n_sites = self.cluster.n_sites
        self.n_electrons = electron_count(self.n_sites, p.doping)
        self.n_pairs = self.n_electrons // 2
        self.weights, self.ghost = self._pair_weights()
        self.size = self.n_pairs + self.ghost
        self.pair = self._pair_matrix()
        self.projected = not p.free

    # --- the pair function -----------------------------------------------------------------------
    def _pair_weights(self) -> tuple[np.ndarray, int]:
        p, k = self.params, self.cluster.momenta
        if p.free or p.delta == 0.0:
            return fermi_sea(dispersion(k, p.mu, p.tp_v), self.n_pairs).astype(float), 0
        xi, gap = dispersion(k, p.mu, p.tp_v), d_wave_gap(k, p.delta)
        energy = np.sqrt(xi ** 2 + gap ** 2)
        weights = np.empty(len(xi))
        ghost = 0
        for q in range(len(xi)):
            if abs(gap[q]) > 1e-12:
                weights[q] = gap[q] / (xi[q] + energy[q]) if xi[q] > 0 else (energy[q] - xi[q]) / gap[q]
            elif xi[q] > 1e-12:
                weights[q] = 0.0
            elif np.all(np.abs(k[q]) < 1e-12):
                weights[q] = np.inf
                ghost = 1
            else:
                raise ValueError(f"mu: the d-wave pair function diverges at k = ({k[q, 0]:.4f}, {k[q, 1]:.4f}) "
                                 f"(Δ_k = 0 with ξ_k ≤ 0 off Γ); choose another μ or cluster")
        return weights, ghost

    def _pair_matrix(self) -> np.ndarray:
        k, g = self.cluster.momenta, self.weights
        finite = np.isfinite(g)
        phase = np.einsum("ijd,qd->ijq", displacements(self.cluster), k[finite])
        phi = np.cos(phase) @ g[finite] / self.n_sites
        n = self.n_sites
        pair = np.zeros((n + 1, n + 1))
        pair[:n, :n] = phi / np.abs(phi).max()  # ratios are scale-free; O(1) entries next to the ghost's 1
        if self.ghost:
            pair[n, :n] = 1.0
            pair[:n, n] = 1.0
        return pair

    # --- configurations --------------------------------------------------------------------------
    def configuration_matrix(self, up_site: np.ndarray, dn_site: np.ndarray) -> np.ndarray:
        """A[k, l] = φ(R↑_k, R↓_l) for site lists of length M (ghost entries = site N_s)."""
        return self.pair[np.ix_(up_site, dn_site)]

    def site_lists(self, up_sites, dn_sites) -> tuple[np.ndarray, np.ndarray]:
        """Append the ghost (site N_s) to per-spin site lists of length N_p when the state has one."""
        ghost = np.full(self.ghost, self.n_sites, dtype=np.int64)
        return (np.concatenate([np.asarray(up_sites, dtype=np.int64), ghost]),
                np.concatenate([np.asarray(dn_sites, dtype=np.int64), ghost]))

    def amplitude(self, up_sites, dn_sites) -> float:
        """Ψ(x) = det A (with the ghost border when present) for N_p up and N_p down sites."""
        up, dn = self.site_lists(up_sites, dn_sites)
        return float(np.linalg.det(self.configuration_matrix(up, dn)))

    def chain_state(self, up_sites: np.ndarray, dn_sites: np.ndarray) -> dict:
        """Chain arrays for given configurations: per-spin site lists (W, N_p) (no ghost).

        Returns ``up_site``/``dn_site`` (W, M) int64 (ghost appended), ``up_at``/``dn_at`` (W, N_s)
        int64 (label or −1) and ``ainv`` (W, M, M), A⁻¹[l, k] with rows down and columns up (zero
        where A is singular).
        """
        up_sites, dn_sites = np.atleast_2d(up_sites), np.atleast_2d(dn_sites)
        n_chains, npair = up_sites.shape
        ghost = np.full((n_chains, self.ghost), self.n_sites, dtype=np.int64)
        up = np.concatenate([up_sites.astype(np.int64), ghost], axis=1)
        dn = np.concatenate([dn_sites.astype(np.int64), ghost], axis=1)
        labels = np.broadcast_to(np.arange(npair), (n_chains, npair))
        up_at = np.full((n_chains, self.n_sites), EMPTY, np.int64)
        dn_at = np.full((n_chains, self.n_sites), EMPTY, np.int64)
        np.put_along_axis(up_at, up_sites, labels, axis=1)
        np.put_along_axis(dn_at, dn_sites, labels, axis=1)
        a = self.pair[up[:, :, None], dn[:, None, :]]
        singular = np.abs(np.linalg.det(a)) < 1e-300
        a[singular] = np.eye(self.size)
        ainv = np.linalg.inv(a)
        ainv[singular] = 0.0
        return {"up_site": up, "dn_site": dn, "up_at": up_at, "dn_at": dn_at, "ainv": ainv}

    def random_configurations(self, n_chains: int, rng: np.random.Generator, max_attempts: int = 100000,
                              min_rcond: float = 1e-7) -> dict:
        """Random start configurations (the chain arrays of :meth:`chain_state`) whose matrix has a
        reciprocal condition number ≥ ``min_rcond`` (study 000's ConditionNumberMin), redrawn at most
        ``max_attempts`` times per chain."""
        n, npair = self.n_sites, self.n_pairs
        ups, dns = np.empty((n_chains, npair), np.int64), np.empty((n_chains, npair), np.int64)
        for w in range(n_chains):
            for _ in range(max_attempts):
                if self.projected:
                    sites = rng.permutation(n)[:2 * npair]
                    up, dn = sites[:npair], sites[npair:]
                else:
                    up, dn = rng.permutation(n)[:npair], rng.permutation(n)[:npair]
                if 1.0 / np.linalg.cond(self.configuration_matrix(*self.site_lists(up, dn))) >= min_rcond:
                    break
            else:
                raise ValueError(f"no start configuration whose pair matrix has reciprocal condition ≥ {min_rcond} in "
                                 f"{max_attempts} draws: with these parameters the RVB state (nearly) vanishes")
            ups[w], dns[w] = up, dn
        return self.chain_state(ups, dns)

    # --- reference values ------------------------------------------------------------------------
    def fermi_sea_energy(self) -> float:
        """2 Σ_{k∈FS} ε_k: the exact energy of the free-fermion (``free=True``) state, in t."""
        p = self.params
        sea = fermi_sea(dispersion(self.cluster.momenta, p.mu, p.tp_v), self.n_pairs)
        return float(2.0 * band_energy(self.cluster.momenta, p.tp, p.tpp)[sea].sum())

    def kernel_args(self) -> tuple:
        """The read-only arrays every chain kernel takes: (pair, neighbours, hopping, bonds, J, projected, n_pairs)."""
        c = self.cluster
        return (self.pair, c.neighbours, c.hopping, c.bonds, float(self.params.J), self.projected, self.n_pairs)

    def memory_bytes(self) -> dict:
        """Study 000's Table 4.1 arithmetic: bytes of Ψ⁻¹ (N_p² doubles), the pair function (N_s² doubles)
        and the site list (2N_p ints)."""
        return {"n_sites": self.n_sites, "n_electrons": self.n_electrons, "n_pairs": self.n_pairs,
                "psi_inv": 8 * self.n_pairs ** 2, "pair_function": 8 * self.n_sites ** 2, "plist": 4 * 2 * self.n_pairs}


# ---------------------------------------------------------------------------------------------------
# Kernels (one chain; numba). A⁻¹ is stored as ainv[l, k]: rows are down labels, columns up labels,
# so an up move touches a column and a down move a row (study 000's convention).
# ---------------------------------------------------------------------------------------------------

@nb.njit(cache=True)
def ratio_up(pair, ainv, dn_site, k, b):
    """Ψ(x')/Ψ(x) for up electron k moved to site b: Σ_l φ(b, R↓_l) A⁻¹[l, k]."""
    r = 0.0
    for l in range(ainv.shape[0]):
        r += pair[b, dn_site[l]] * ainv[l, k]
    return r


@nb.njit(cache=True)
def ratio_down(pair, ainv, up_site, l, b):
    """Ψ(x')/Ψ(x) for down electron l moved to site b: Σ_k A⁻¹[l, k] φ(R↑_k, b)."""
    r = 0.0
    for k in range(ainv.shape[1]):
        r += ainv[l, k] * pair[up_site[k], b]
    return r


@nb.njit(cache=True)
def update_up(pair, ainv, dn_site, k, b, ratio, work):
    """Sherman–Morrison for row k of A replaced by φ(b, R↓): column k of A⁻¹ divided by the ratio,
    every other column c minus f_c times it, f_c = Σ_l φ(b, R↓_l) A⁻¹[l, c]. ``work`` (M,) scratch."""
    m = ainv.shape[0]
    for c in range(m):
        f = 0.0
        for l in range(m):
            f += pair[b, dn_site[l]] * ainv[l, c]
        work[c] = f
    inv_r = 1.0 / ratio
    for l in range(m):
        ainv[l, k] *= inv_r
    for c in range(m):
        if c != k:
            f = work[c]
            for l in range(m):
                ainv[l, c] -= f * ainv[l, k]


@nb.njit(cache=True)
def update_down(pair, ainv, up_site, l, b, ratio, work):
    """Sherman–Morrison for column l of A replaced by φ(R↑, b): row l of A⁻¹ divided by the ratio,
    every other row r minus g_r times it, g_r = Σ_k A⁻¹[r, k] φ(R↑_k, b)."""
    m = ainv.shape[0]
    for r in range(m):
        g = 0.0
        for k in range(m):
            g += ainv[r, k] * pair[up_site[k], b]
        work[r] = g
    inv_r = 1.0 / ratio
    for k in range(m):
        ainv[l, k] *= inv_r
    for r in range(m):
        if r != l:
            g = work[r]
            for k in range(m):
                ainv[r, k] -= g * ainv[l, k]


@nb.njit(cache=True)
def ratio_swap(pair, ainv, up_site, dn_site, k, l, work):
    """Ψ(x')/Ψ(x) for up electron k (at a) and down electron l (at b) exchanging sites, without
    touching A⁻¹ (study 000's streamlined function): with f_c = Σ_i φ(b, R↓_i) A⁻¹[i, c],

        R = A⁻¹[l,k] φ(b,a) + Σ_{c≠k} (A⁻¹[l,c] f_k − f_c A⁻¹[l,k]) φ(R↑_c, a).
    """
    m = ainv.shape[0]
    a = up_site[k]
    b = dn_site[l]
    for c in range(m):
        f = 0.0
        for i in range(m):
            f += pair[b, dn_site[i]] * ainv[i, c]
        work[c] = f
    fk = work[k]
    alk = ainv[l, k]
    r = alk * pair[b, a]
    for c in range(m):
        if c != k:
            r += (ainv[l, c] * fk - work[c] * alk) * pair[up_site[c], a]
    return r


@nb.njit(cache=True)
def hop_ratios(pair, up_site, dn_site, ainv, F, G):
    """F[b, c] = Σ_l φ(b, R↓_l) A⁻¹[l, c] (up electron c → site b) and G[l, a] = Σ_k A⁻¹[l, k] φ(R↑_k, a)
    (down electron l → site a), for every real site, into F (N_s, M) and G (M, N_s)."""
    # plain loops, not np.dot: BLAS threads inside chains that already run in parallel oversubscribe
    # the cores (10× slower at L = 15 on two cores); the inner loops are contiguous and vectorise
    n = F.shape[0]
    m = ainv.shape[0]
    F[:, :] = 0.0
    G[:, :] = 0.0
    for s in range(n):
        for l in range(m):
            phi = pair[s, dn_site[l]]
            for c in range(m):
                F[s, c] += phi * ainv[l, c]
    for l in range(m):
        for k in range(m):
            a = ainv[l, k]
            row = up_site[k]
            for s in range(n):
                G[l, s] += a * pair[row, s]


@nb.njit(cache=True)
def two_electron_ratio(pair, ainv, up_site, F, G, k, b, l, d):
    """Ψ(x′)/Ψ(x) for up electron k → site b together with down electron l → site d, from the hop
    ratios F, G of :func:`hop_ratios` (a rank-2 Sherman–Morrison step, O(M)):

        R = F[b,k] G[l,d] + A⁻¹[l,k] (φ(b, d) − Σ_c F[b,c] φ(R↑_c, d)).

    d = R↑_k, b = R↓_l is the spin swap of the exchange term; other sites give pair hops.
    """
    h = 0.0
    for c in range(ainv.shape[0]):
        h += F[b, c] * pair[up_site[c], d]
    return F[b, k] * G[l, d] + ainv[l, k] * (pair[b, d] - h)


@nb.njit(cache=True)
def local_energy(pair, neighbours, hopping, bonds, J, projected, n_pairs, up_site, dn_site, up_at, dn_at, ainv,
                 F, G):
    """(E_kin, E_J, double occupancy) of one configuration, whole cluster, in t (module docstring).

    ``F`` (N_s, M) and ``G`` (M, N_s) are scratch: the hop ratios of every electron to every site.
    """
    hop_ratios(pair, up_site, dn_site, ainv, F, G)
    return local_energy_given(pair, neighbours, hopping, bonds, J, projected, n_pairs, up_site, dn_site, up_at, dn_at,
                              ainv, F, G)


@nb.njit(cache=True)
def add_correlations(pair, translate, step, step_sign, up_site, dn_site, up_at, dn_at, ainv, F, G, spin, pairing,
                     counts):
    """Add one configuration's spin and d-wave pair correlations per displacement r (site index of r).

    spin[r]    += (1/N_s) Σ_i S^z_i S^z_{i+r}            (⟨S_0·S_r⟩ = 3⟨S^z_0 S^z_r⟩ in a singlet)
    pairing[r] += (1/N_s) Σ_i Σ_{δ,δ′ ∈ {x̂, ŷ}} g_δ g_δ′ E_L[Δ†_{i,δ} Δ_{i+r,δ′}],  g_x̂ = 1, g_ŷ = −1,
                  Δ†_{i,δ} = (c†_{i↑} c†_{i+δ↓} − c†_{i↓} c†_{i+δ↑})/√2, for bond pairs that share no site
    counts[r]  += the number of (i, δ, δ′) terms that share no site (to normalise ``pairing``)

    The pair term moves the singlet on bond (i+r, i+r+δ′) onto the empty bond (i, i+δ): ½ Σ of the
    two-electron ratios over both ways of placing ↑ and ↓ (each enters with a plus sign).
    ``translate[i, r]`` is the site i + r; ``step[i, 0/1]`` the sites i + x̂, i + ŷ with ``step_sign``
    the boundary sign of that bond (−1 across the square cluster's antiperiodic x boundary).
    F, G are scratch (N_s, M), (M, N_s).
    """
    n = up_at.shape[0]
    hop_ratios(pair, up_site, dn_site, ainv, F, G)
    for r in range(n):
        for i in range(n):
            j = translate[i, r]
            si = 0.5 if up_at[i] >= 0 else (-0.5 if dn_at[i] >= 0 else 0.0)
            sj = 0.5 if up_at[j] >= 0 else (-0.5 if dn_at[j] >= 0 else 0.0)
            spin[r] += si * sj / n
            for di in range(2):
                i2 = step[i, di]
                for dj in range(2):
                    j2 = step[j, dj]
                    if i == j or i == j2 or i2 == j or i2 == j2:
                        continue
                    counts[r] += 1
                    if up_at[i] >= 0 or dn_at[i] >= 0 or up_at[i2] >= 0 or dn_at[i2] >= 0:
                        continue  # the target bond must be empty
                    if up_at[j] >= 0 and dn_at[j2] >= 0:
                        k, l = up_at[j], dn_at[j2]
                    elif dn_at[j] >= 0 and up_at[j2] >= 0:
                        k, l = up_at[j2], dn_at[j]
                    else:
                        continue
                    value = 0.5 * (two_electron_ratio(pair, ainv, up_site, F, G, k, i, l, i2)
                                   + two_electron_ratio(pair, ainv, up_site, F, G, k, i2, l, i))
                    sign = (1.0 if di == dj else -1.0) * step_sign[i, di] * step_sign[j, dj]
                    pairing[r] += sign * value / n


# ---------------------------------------------------------------------------------------------------
# The "tracked" algorithm: F and G of hop_ratios kept up to date between moves (rank-1 updates).
#
# Up electron k → site b with ratio R = F[b, k]: row k of A becomes φ(b, R↓), so with f_c = F[b, c],
# x = A⁻¹[:, k] (before the move) and h_s = φ(b, s) − Σ_c F[b, c] φ(R↑_c, s) (R↑ before the move),
#     A⁻¹' = A⁻¹ − (x/R)(f − e_k)ᵀ,   F' = F − (F[:, k]/R)(f − e_k)ᵀ,   G' = G + (x/R) hᵀ.
# Down electron l → site a with ratio R = G[l, a]: column l of A becomes φ(R↑, a), so with g_r = G[r, a],
# y = A⁻¹[l, :] and d_s = φ(s, a) − Σ_r φ(s, R↓_r) G[r, a] (R↓ before the move),
#     A⁻¹' = A⁻¹ − (g − e_l)(y/R)ᵀ,   G' = G − (g − e_l)(G[l, :]/R),   F' = F + d (y/R)ᵀ.
# (F' = Φ(sites, R↓') A⁻¹' and G' = A⁻¹' Φ(R↑', sites) expanded; O(N_s M) per accepted move.)
# ---------------------------------------------------------------------------------------------------

@nb.njit(cache=True)
def tracked_update_up(pair, up_site, dn_site, ainv, F, G, k, b, fv, xv, fk, hv):
    """Up electron k → b (the site lists still hold the configuration before the move): A⁻¹, F, G updated
    in place; returns the ratio R used. fv, xv (M,) and fk, hv (N_s,) scratch; the site lists untouched.

    Stable form: the vectors divided by R — the row f = F[b, :] (which also gives R = f_k) and the
    column F[:, k] — are recomputed from A⁻¹ (O(M² + N_s M)), as :func:`update_up` does for f, and
    row b and column k of F are set to their exact values (e_k and F[:, k]/R). With the tracked f and
    F[:, k] instead, their errors come back amplified by 1/R at every small-ratio step, and at L = 15
    the tracked matrices drift by O(1) within tens of sweeps.
    """
    m = ainv.shape[0]
    n = F.shape[0]
    for c in range(m):
        f = 0.0
        for l in range(m):
            f += pair[b, dn_site[l]] * ainv[l, c]
        fv[c] = f
        xv[c] = ainv[c, k]
    for s in range(n):
        f = 0.0
        for l in range(m):
            f += pair[s, dn_site[l]] * ainv[l, k]
        fk[s] = f
        hv[s] = pair[b, s]
    for c in range(m):
        f = fv[c]
        row = up_site[c]
        for s in range(n):
            hv[s] -= f * pair[row, s]
    ratio = fv[k]
    inv_r = 1.0 / ratio
    fv[k] -= 1.0
    for l in range(m):
        x = xv[l] * inv_r
        for c in range(m):
            ainv[l, c] -= x * fv[c]
    for s in range(n):
        x = fk[s] * inv_r
        for c in range(m):
            F[s, c] -= x * fv[c]
        F[s, k] = x
    for c in range(m):
        F[b, c] = 0.0
    F[b, k] = 1.0
    for l in range(m):
        x = xv[l] * inv_r
        for s in range(n):
            G[l, s] += x * hv[s]
    return ratio


@nb.njit(cache=True)
def tracked_update_down(pair, up_site, dn_site, ainv, F, G, l, a, gv, yv, gl, dv):
    """Down electron l → a (the site lists still hold the configuration before the move): A⁻¹, F, G
    updated in place; returns the ratio R used. gv, yv (M,) and gl, dv (N_s,) scratch. Stable form as
    :func:`tracked_update_up`: g = G[:, a] (R = g_l) and the row G[l, :] recomputed from A⁻¹, column a
    and row l of G set exactly (e_l and G[l, :]/R)."""
    m = ainv.shape[0]
    n = F.shape[0]
    for r in range(m):
        g = 0.0
        for k in range(m):
            g += ainv[r, k] * pair[up_site[k], a]
        gv[r] = g
        yv[r] = ainv[l, r]
    for s in range(n):
        g = 0.0
        for k in range(m):
            g += ainv[l, k] * pair[up_site[k], s]
        gl[s] = g
        dv[s] = pair[s, a]
    for r in range(m):
        g = gv[r]
        col = dn_site[r]
        for s in range(n):
            dv[s] -= pair[s, col] * g
    ratio = gv[l]
    inv_r = 1.0 / ratio
    gv[l] -= 1.0
    for c in range(m):
        yv[c] *= inv_r
    for r in range(m):
        g = gv[r]
        for c in range(m):
            ainv[r, c] -= g * yv[c]
    for r in range(m):
        g = gv[r] * inv_r
        for s in range(n):
            G[r, s] -= g * gl[s]
        G[r, a] = 0.0
    for s in range(n):
        G[l, s] = gl[s] * inv_r
    G[l, a] = 1.0
    for s in range(n):
        d = dv[s]
        for c in range(m):
            F[s, c] += d * yv[c]
    return ratio


@nb.njit(cache=True)
def local_energy_given(pair, neighbours, hopping, bonds, J, projected, n_pairs, up_site, dn_site, up_at, dn_at, ainv,
                       F, G):
    """:func:`local_energy` with the hop ratios F (N_s, M) and G (M, N_s) given (the tracked algorithm's,
    kept up to date between moves) instead of recomputed: the same formulas, O(N_s + bonds·M)."""
    n = up_at.shape[0]
    kinetic = 0.0
    for s in range(n):
        for spin in range(2):
            label = up_at[s] if spin == UP else dn_at[s]
            if label < 0:
                continue
            for q in range(neighbours.shape[1]):
                j = neighbours[s, q]
                same_spin_there = up_at[j] >= 0 if spin == UP else dn_at[j] >= 0
                if same_spin_there or (projected and (up_at[j] >= 0 or dn_at[j] >= 0)):
                    continue
                kinetic -= hopping[s, q] * (F[j, label] if spin == UP else G[label, j])
    exchange = 0.0
    if projected and J != 0.0:
        for e in range(bonds.shape[0]):
            i = bonds[e, 0]
            j = bonds[e, 1]
            if up_at[i] >= 0 and dn_at[j] >= 0:
                a, b = i, j
            elif dn_at[i] >= 0 and up_at[j] >= 0:
                a, b = j, i
            else:
                continue
            swap = two_electron_ratio(pair, ainv, up_site, F, G, up_at[a], b, dn_at[b], a)
            exchange -= 0.5 * J * (1.0 + swap)
    double = 0
    for s in range(n):
        if up_at[s] >= 0 and dn_at[s] >= 0:
            double += 1
    return kinetic, exchange, double
