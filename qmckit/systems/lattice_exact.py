"""Exact (brute-force) tools for the Gutzwiller-projected t–J model on small clusters (≤ ~12 sites).

Used to check lattice variational Monte Carlo: the exact ground-state energy by diagonalisation, and
the exact variational energy <Ψ|H|Ψ>/<Ψ|Ψ> of a projected pair (RVB) wave function computed in the
same Fock basis, fermion signs included.

Units: energies in units of the hopping t (the caller passes t_ij and J in those units).

Model (U = ∞, no doubly occupied site, P the Gutzwiller projector):

    H = −Σ_{(ij) ∈ hops} t_ij Σ_σ P (c†_iσ c_jσ + c†_jσ c_iσ) P + J Σ_{(ij) ∈ bonds} (S_i·S_j − n_i n_j / 4)

The lattice is given only by arrays: ``hops`` (nh, 2) with ``hop_t`` (nh,), and ``bonds`` (nb, 2),
each unordered pair listed once per term; a pair listed twice (a tiny periodic cluster reaching the
same neighbour through two lattice vectors) contributes twice.

Fock basis. N↑ = N↓ = Np; for up sites U = (u_1 < ... < u_Np) and down sites D = (d_1 < ... < d_Np)

    |U, D> = c†_{u1↑} ... c†_{uNp↑} c†_{d1↓} ... c†_{dNp↓} |0>      (all up operators first)

Internally a state is one integer of 2·Ns occupation bits, mode m = site for up and Ns + site for
down, so |U, D> has bit m set for each occupied mode and a creation or annihilation operator on
mode m carries the sign (−1)^(number of occupied modes with index < m). With that ordering the
product above is exactly the bit pattern with sign +1, and every matrix element (hops and spin flips
alike) follows by applying the operators one at a time: no hand-derived sign rules.

A pair wave function (Σ_ij F_ij c†_i↑ c†_j↓)^Np |0>, projected, has amplitude ∝ det F[U, D] on
|U, D> in this basis (the constant reordering sign (−1)^(Np(Np−1)/2) is the same for every state),
which is what :func:`pair_amplitudes` returns.
"""
from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh

DENSE_LIMIT = 200  # below this dimension a dense eigvalsh is faster and more robust than Lanczos


# ----------------------------------------------------------------------------- validation

def _check_sizes(n_sites, n_pairs, projected):
    if not isinstance(n_sites, (int, np.integer)) or not 2 <= n_sites <= 31:
        raise ValueError(f"n_sites must be an integer between 2 and 31, got {n_sites!r}")
    top = n_sites // 2 if projected else n_sites
    if not isinstance(n_pairs, (int, np.integer)) or not 1 <= n_pairs <= top:
        space = "projected" if projected else "unprojected"
        raise ValueError(f"n_pairs must be between 1 and {top} for a {space} space of {n_sites} sites, "
                         f"got {n_pairs!r}")


def _pair_list(pairs, n_sites, name):
    """``pairs`` as an (n, 2) int array of distinct in-range sites; an empty list gives (0, 2)."""
    arr = np.asarray(pairs, dtype=np.int64)
    if arr.size == 0:
        return arr.reshape(0, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (n, 2), got {arr.shape}")
    if arr.min() < 0 or arr.max() >= n_sites:
        raise ValueError(f"{name} must hold sites 0..{n_sites - 1}, got {arr.min()}..{arr.max()}")
    if np.any(arr[:, 0] == arr[:, 1]):
        raise ValueError(f"{name} must join two different sites, got a pair (i, i)")
    return arr


# ----------------------------------------------------------------------------- basis

def basis(n_sites, n_pairs, projected=True):
    """The Fock basis with N↑ = N↓ = n_pairs electrons on n_sites sites.

    Returns ``(up_sites, dn_sites)``, int arrays of shape (D, Np), rows sorted ascending. Order: up
    configurations in lexicographic order (``itertools.combinations``), and for each the down
    configurations in lexicographic order among the sites allowed (the empty ones when projected).
    D = C(Ns, Np)·C(Ns − Np, Np) projected, C(Ns, Np)² otherwise.
    """
    _check_sizes(n_sites, n_pairs, projected)
    ups, dns = [], []
    for up in itertools.combinations(range(n_sites), n_pairs):
        free = [s for s in range(n_sites) if s not in up] if projected else range(n_sites)
        for dn in itertools.combinations(free, n_pairs):
            ups.append(up)
            dns.append(dn)
    return np.array(ups, dtype=np.int64), np.array(dns, dtype=np.int64)


def _modes(up_sites, dn_sites, n_sites):
    """Occupation bit patterns (D,) int64: bit s for an up electron on site s, bit Ns + s for down."""
    one = np.int64(1)
    up = np.bitwise_or.reduce(one << up_sites, axis=1)
    dn = np.bitwise_or.reduce(one << (dn_sites + n_sites), axis=1)
    return up | dn


class _Lookup:
    """Index of a bit pattern in the basis, or −1 for a pattern outside it (e.g. a double occupancy)."""

    def __init__(self, modes):
        self.order = np.argsort(modes)
        self.sorted = modes[self.order]

    def __call__(self, modes):
        pos = np.clip(np.searchsorted(self.sorted, modes), 0, len(self.sorted) - 1)
        return np.where(self.sorted[pos] == modes, self.order[pos], -1)


# ----------------------------------------------------------------------------- second quantisation

def _count_below(modes, m):
    """Number of occupied modes with index < m, per state (D,)."""
    below = modes & ((np.int64(1) << m) - 1)
    count = np.zeros_like(modes)
    for k in range(m):  # m ≤ 62; a plain loop keeps numpy < 2.0 (no bitwise_count) supported
        count += (below >> k) & 1
    return count


def _apply(modes, sign, m, create):
    """Apply c†_m (``create``) or c_m to states ``modes`` with amplitudes ``sign`` (both (D,)).

    Returns the new ``(modes, sign)``; a state the operator annihilates gets sign 0.
    """
    occupied = (modes >> m) & 1
    allowed = occupied == (0 if create else 1)
    phase = 1 - 2 * (_count_below(modes, m) & 1)  # (−1)^(occupied modes below m)
    return modes ^ (np.int64(1) << m), sign * phase * allowed


def _apply_string(modes, ops):
    """Apply a product of operators, ``ops`` = [(mode, create), ...] written left to right as in the
    formula (so the rightmost acts first). Returns ``(new_modes, sign)`` with sign ∈ {−1, 0, +1}."""
    sign = np.ones_like(modes)
    for m, create in reversed(ops):
        modes, sign = _apply(modes, sign, m, create)
    return modes, sign


# ----------------------------------------------------------------------------- Hamiltonian

def _off_diagonal(modes, lookup, ops, value):
    """COO triplets (rows, cols, vals) of ``value``·(operator string ``ops``) within the basis.

    Results outside the basis are dropped: in the projected space that is the projector P."""
    new, sign = _apply_string(modes, ops)
    rows = lookup(new)
    keep = (sign != 0) & (rows >= 0)
    cols = np.nonzero(keep)[0]
    return rows[keep], cols, value * sign[keep].astype(float)


def hamiltonian(n_sites, n_pairs, hops, hop_t, bonds, J, projected=True):
    """The t–J Hamiltonian as a real symmetric CSR matrix (D, D) in the order of :func:`basis`.

    hops (nh, 2) int with hop_t (nh,) float: −t_ij Σ_σ (c†_iσ c_jσ + c†_jσ c_iσ) per entry.
    bonds (nb, 2) int with exchange J: J (S_i·S_j − n_i n_j / 4) per entry.
    Energies in units of t. ``projected=False`` gives the space with double occupancy allowed
    (U = 0 Hubbard, for free-fermion checks); then J must be 0.
    """
    _check_sizes(n_sites, n_pairs, projected)
    hops = _pair_list(hops, n_sites, "hops")
    hop_t = np.asarray(hop_t, dtype=float).reshape(-1)
    if hop_t.shape != (len(hops),):
        raise ValueError(f"hop_t must have shape ({len(hops)},) to match hops, got {hop_t.shape}")
    bonds = _pair_list(bonds, n_sites, "bonds")
    if not projected and J != 0:
        raise ValueError(f"J must be 0 when projected=False (S_i·S_j is only defined here without "
                         f"double occupancy), got {J}")

    up_sites, dn_sites = basis(n_sites, n_pairs, projected)
    modes = _modes(up_sites, dn_sites, n_sites)
    lookup = _Lookup(modes)
    dim = len(modes)
    rows, cols, vals = [np.arange(dim)], [np.arange(dim)], [np.zeros(dim)]

    def add(triplets):
        for lst, x in zip((rows, cols, vals), triplets):
            lst.append(x)

    for (i, j), t in zip(hops, hop_t):
        for shift in (0, n_sites):  # up modes, then down modes
            a, b = i + shift, j + shift
            add(_off_diagonal(modes, lookup, [(a, True), (b, False)], -t))
            add(_off_diagonal(modes, lookup, [(b, True), (a, False)], -t))

    if J != 0:
        diag = np.zeros(dim)
        for i, j in bonds:
            n_up_i, n_dn_i = (modes >> i) & 1, (modes >> (i + n_sites)) & 1
            n_up_j, n_dn_j = (modes >> j) & 1, (modes >> (j + n_sites)) & 1
            sz_sz = 0.25 * (n_up_i - n_dn_i) * (n_up_j - n_dn_j)
            nn = (n_up_i + n_dn_i) * (n_up_j + n_dn_j)
            diag += J * (sz_sz - 0.25 * nn)
            # ½(S+_i S−_j + S−_i S+_j), with S+_k = c†_k↑ c_k↓ and S−_k = c†_k↓ c_k↑
            ui, di, uj, dj = i, i + n_sites, j, j + n_sites
            add(_off_diagonal(modes, lookup, [(ui, True), (di, False), (dj, True), (uj, False)], 0.5 * J))
            add(_off_diagonal(modes, lookup, [(di, True), (ui, False), (uj, True), (dj, False)], 0.5 * J))
        vals[0] = diag

    # coo → csr sums repeated (row, col) entries: duplicated hops or bonds add up, as documented
    return sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(dim, dim)).tocsr()


def operator(n_sites, n_pairs, terms, projected=True):
    """A general operator Σ coefficient · (string of c†/c) as a CSR matrix (D, D) in the basis order.

    ``terms`` is a list of ``(coefficient, ops)``, ``ops`` = [(mode, create), ...] written left to
    right as in the formula; mode = site for spin up, n_sites + site for spin down. Results outside
    the basis are dropped (the projector P of a projected space).
    """
    _check_sizes(n_sites, n_pairs, projected)
    modes = _modes(*basis(n_sites, n_pairs, projected), n_sites)
    lookup = _Lookup(modes)
    parts = [_off_diagonal(modes, lookup, ops, coefficient) for coefficient, ops in terms]
    rows, cols, vals = (np.concatenate([part[k] for part in parts]) for k in range(3))
    return sp.coo_matrix((vals, (rows, cols)), shape=(len(modes), len(modes))).tocsr()


# ----------------------------------------------------------------------------- energies

def ground_state_energy(H, return_vector=False):
    """Lowest eigenvalue of the symmetric matrix H (D, D), in units of t.

    Dense ``eigvalsh``/``eigh`` for D ≤ 200, Lanczos (``eigsh``, which='SA') above. With
    ``return_vector=True`` returns ``(energy, vector)``, the vector (D,) normalised.
    """
    if H.ndim != 2 or H.shape[0] != H.shape[1] or H.shape[0] == 0:
        raise ValueError(f"H must be a non-empty square matrix, got shape {H.shape}")
    dim = H.shape[0]
    if dim <= DENSE_LIMIT:
        dense = H.toarray() if sp.issparse(H) else np.asarray(H)
        if not return_vector:
            return float(np.linalg.eigvalsh(dense)[0])
        w, v = np.linalg.eigh(dense)
        return float(w[0]), v[:, 0]
    # a fixed random start vector: reproducible, and not orthogonal to the ground state by symmetry
    v0 = np.random.default_rng(0).standard_normal(dim)
    w, v = eigsh(H, k=1, which="SA", v0=v0)
    return (float(w[0]), v[:, 0]) if return_vector else float(w[0])


def variational_energy(H, amplitudes):
    """<a|H|a> / <a|a> for a real amplitude vector ``amplitudes`` (D,) in the basis order, units of t."""
    a = np.asarray(amplitudes, dtype=float)
    if a.shape != (H.shape[0],):
        raise ValueError(f"amplitudes must have shape ({H.shape[0]},) to match H, got {a.shape}")
    norm = a @ a
    if not norm > 0:
        raise ValueError("amplitudes must not be all zero (the state has no norm)")
    return float(a @ (H @ a) / norm)


def pair_amplitudes(pair_matrix, up_sites, dn_sites):
    """Amplitudes a[s] = det[F[U_s[k], D_s[l]]]_{k,l} of the projected pair wave function.

    pair_matrix F (Ns, Ns) real; up_sites, dn_sites (D, Np) from :func:`basis`. Returns (D,).
    """
    F = np.asarray(pair_matrix, dtype=float)
    if F.ndim != 2 or F.shape[0] != F.shape[1]:
        raise ValueError(f"pair_matrix must be square (Ns, Ns), got shape {F.shape}")
    up, dn = np.asarray(up_sites), np.asarray(dn_sites)
    if up.shape != dn.shape or up.ndim != 2:
        raise ValueError(f"up_sites and dn_sites must both have shape (D, Np), got {up.shape} and {dn.shape}")
    if up.size and max(up.max(), dn.max()) >= F.shape[0]:
        raise ValueError(f"pair_matrix must cover every site in the basis, got shape {F.shape}")
    # stack (D, Np, Np): entry [s, k, l] = F[U_s[k], D_s[l]]
    return np.linalg.det(F[up[:, :, None], dn[:, None, :]])


__all__ = ["basis", "hamiltonian", "ground_state_energy", "variational_energy", "pair_amplitudes"]
