"""Exact t–J tools (qmckit.systems.lattice_exact): dimensions, known Heisenberg and free-fermion
energies, matrix elements against an independent Jordan–Wigner construction in the full Fock space,
spin symmetry (S² spectrum, singlet ground state, singlet pair wave functions), variational bounds."""
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from qmckit.systems.lattice_exact import (basis, ground_state_energy, hamiltonian, pair_amplitudes,
                                          variational_energy)


def ring(n):
    return np.array([[i, (i + 1) % n] for i in range(n)])


def chain(n):
    return np.array([[i, i + 1] for i in range(n - 1)])


def square_torus(L):
    """Nearest-neighbour bonds of an L×L periodic square lattice, each listed once (2L² bonds)."""
    return np.array([(x * L + y, ((x + dx) % L) * L + (y + dy) % L)
                     for x in range(L) for y in range(L) for dx, dy in ((1, 0), (0, 1))])


def all_pairs(n):
    return np.array(list(itertools.combinations(range(n), 2)))


def total_spin_squared(n_sites, n_pairs):
    """S² = (Σ_i S_i)² in the projected basis, built from :func:`hamiltonian` with every pair as a bond.

    With J = 1 and all pairs, H = Σ_{i<j} (S_i·S_j − n_i n_j/4). Projected, S_i² = ¾ n_i and
    n_i² = n_i, so with N_e = 2 n_pairs electrons Σ_{i<j} n_i n_j = N_e(N_e − 1)/2 and
    S² = 2 Σ_{i<j} S_i·S_j + ¾ N_e = 2H + N_e(N_e + 2)/4.
    """
    H = hamiltonian(n_sites, n_pairs, [], [], all_pairs(n_sites), 1.0)
    n_e = 2 * n_pairs
    return 2 * H + n_e * (n_e + 2) / 4 * sp.identity(H.shape[0])


def random_lattice(rng, n_sites, n_hops, n_bonds):
    """Random hops (with one pair repeated, as on tiny periodic clusters) and random bonds."""
    pairs = all_pairs(n_sites)
    hops = pairs[rng.choice(len(pairs), n_hops, replace=False)]
    hops = np.vstack([hops, hops[:1]])  # a duplicated entry must add up
    hop_t = rng.uniform(-1.0, 1.0, len(hops))
    bonds = pairs[rng.choice(len(pairs), n_bonds, replace=False)]
    return hops, hop_t, bonds


# ----------------------------------------------------------------------------- independent reference

def jordan_wigner(n_modes):
    """Annihilators c_m (2^M × 2^M sparse) of M fermion modes; mode 0 is the most significant factor.

    c_m = Z ⊗ ... ⊗ Z ⊗ a ⊗ 1 ⊗ ... ⊗ 1 (m factors Z), so c†_{m1} ... c†_{mk}|0> with m1 < ... < mk
    is the basis vector with those bits set and sign +1, the same convention as the module's |U, D>.
    """
    a = sp.csr_matrix(np.array([[0.0, 1.0], [0.0, 0.0]]))
    z = sp.diags([1.0, -1.0])
    eye = sp.identity(2)
    ops = []
    for m in range(n_modes):
        factors = [z] * m + [a] + [eye] * (n_modes - m - 1)
        op = factors[0]
        for f in factors[1:]:
            op = sp.kron(op, f, format="csr")
        ops.append(op)
    return ops


def reference_hamiltonian(n_sites, n_pairs, hops, hop_t, bonds, J, projected=True):
    """H restricted to the module's basis, built as full Fock-space operator products."""
    c = jordan_wigner(2 * n_sites)
    cd = [op.T.tocsr() for op in c]
    up, dn = (lambda i: i), (lambda i: n_sites + i)
    n = [cd[m] @ c[m] for m in range(2 * n_sites)]
    H = sp.csr_matrix((2 ** (2 * n_sites),) * 2)
    for (i, j), t in zip(hops, hop_t):
        for s in (up, dn):
            H = H - t * (cd[s(i)] @ c[s(j)] + cd[s(j)] @ c[s(i)])
    for i, j in bonds:
        sz_i, sz_j = 0.5 * (n[up(i)] - n[dn(i)]), 0.5 * (n[up(j)] - n[dn(j)])
        s_plus = lambda k: cd[up(k)] @ c[dn(k)]
        s_minus = lambda k: cd[dn(k)] @ c[up(k)]
        n_i, n_j = n[up(i)] + n[dn(i)], n[up(j)] + n[dn(j)]
        H = H + J * (sz_i @ sz_j + 0.5 * (s_plus(i) @ s_minus(j) + s_minus(i) @ s_plus(j)) - 0.25 * n_i @ n_j)
    # the basis states are projected already, so <a|PHP|b> = <a|H|b>: just pick their rows/columns
    up_sites, dn_sites = basis(n_sites, n_pairs, projected)
    weights = 2 ** (2 * n_sites - 1 - np.arange(2 * n_sites))
    idx = weights[up_sites].sum(axis=1) + weights[dn_sites + n_sites].sum(axis=1)
    return H.toarray()[np.ix_(idx, idx)]


def test_jordan_wigner_reference_anticommutes():
    c = jordan_wigner(4)
    for m, k in itertools.product(range(4), repeat=2):
        anti = (c[m] @ c[k].T + c[k].T @ c[m]).toarray()
        assert np.allclose(anti, np.eye(16) * (m == k))
        assert np.allclose((c[m] @ c[k] + c[k] @ c[m]).toarray(), 0)


# ----------------------------------------------------------------------------- basis

@pytest.mark.parametrize("n_sites, n_pairs, projected, dim", [
    (10, 4, True, 3150), (10, 5, True, 252), (4, 1, True, 12), (6, 2, False, 225), (2, 1, True, 2)])
def test_basis_dimension_and_states(n_sites, n_pairs, projected, dim):
    up, dn = basis(n_sites, n_pairs, projected)
    assert up.shape == dn.shape == (dim, n_pairs)
    assert np.all(np.diff(up, axis=1) > 0) and np.all(np.diff(dn, axis=1) > 0)
    assert len({(tuple(u), tuple(d)) for u, d in zip(up, dn)}) == dim
    if projected:
        assert not any(set(u) & set(d) for u, d in zip(up, dn))


# ----------------------------------------------------------------------------- Heisenberg limit

def test_two_site_singlet_and_sign_convention():
    J = 0.7
    H = hamiltonian(2, 1, [], [], [[0, 1]], J)
    # basis: c†0↑c†1↓|0>, c†1↑c†0↓|0>; the spin flip between them is −J/2 with the up-first ordering
    assert np.allclose(H.toarray(), [[-J / 2, -J / 2], [-J / 2, -J / 2]])
    assert ground_state_energy(H) == pytest.approx(-J)  # J(−3/4 − 1/4)
    up, dn = basis(2, 1)
    singlet = pair_amplitudes(np.array([[0.0, 1.0], [1.0, 0.0]]), up, dn)  # symmetric F
    triplet = pair_amplitudes(np.array([[0.0, 1.0], [-1.0, 0.0]]), up, dn)  # antisymmetric F
    assert variational_energy(H, singlet) == pytest.approx(-J)
    assert variational_energy(H, triplet) == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("n_sites, bonds, sum_s_dot_s", [
    (4, ring(4), -2.0),
    (6, ring(6), -(2 + math.sqrt(13)) / 2),  # −2.8027756..., the 6-site ring
    (16, square_torus(4), -11.228483208),  # 4×4 periodic square lattice (literature value)
])
def test_heisenberg_ground_energy(n_sites, bonds, sum_s_dot_s):
    J = 1.3
    E = ground_state_energy(hamiltonian(n_sites, n_sites // 2, [], [], bonds, J))
    assert E == pytest.approx(J * (sum_s_dot_s - len(bonds) / 4), abs=1e-8)


def test_half_filled_ring_ground_state_is_singlet():
    H = hamiltonian(4, 2, ring(4), np.ones(4), ring(4), 0.5)  # hops are inert at half filling
    E, psi = ground_state_energy(H, return_vector=True)
    assert E == pytest.approx(-1.5)
    S2 = total_spin_squared(4, 2)
    assert psi @ (S2 @ psi) == pytest.approx(0.0, abs=1e-10)


@pytest.mark.parametrize("n_sites, n_pairs", [(4, 2), (6, 2), (5, 1)])
def test_total_spin_squared_has_spectrum_s_s_plus_1(n_sites, n_pairs):
    # a wrong spin-flip sign would break the multiplets; S_z = 0, so S = 0..n_pairs all occur
    w = np.linalg.eigvalsh(total_spin_squared(n_sites, n_pairs).toarray())
    allowed = np.array([s * (s + 1) for s in range(n_pairs + 1)])
    assert np.allclose(np.min(np.abs(w[:, None] - allowed[None, :]), axis=1), 0, atol=1e-10)
    assert set(np.round(w).astype(int)) == set(allowed.astype(int))


@pytest.mark.parametrize("n_sites, n_pairs", [(4, 2), (6, 2), (6, 3)])
def test_symmetric_pair_wave_function_is_singlet(n_sites, n_pairs):
    rng = np.random.default_rng(n_sites + n_pairs)
    F = rng.standard_normal((n_sites, n_sites))
    up, dn = basis(n_sites, n_pairs)
    S2 = total_spin_squared(n_sites, n_pairs)
    a = pair_amplitudes(F + F.T, up, dn)
    assert variational_energy(S2, a) == pytest.approx(0.0, abs=1e-10)
    b = pair_amplitudes(F, up, dn)  # a generic F mixes in triplet pairs
    assert variational_energy(S2, b) > 0.1


# ----------------------------------------------------------------------------- free fermions

@pytest.mark.parametrize("n_sites, n_pairs", [(7, 1), (7, 2), (6, 3)])
def test_open_chain_free_fermions(n_sites, n_pairs):
    t = 0.8
    H = hamiltonian(n_sites, n_pairs, chain(n_sites), t * np.ones(n_sites - 1), [], 0.0, projected=False)
    levels = -2 * t * np.cos(np.pi * np.arange(1, n_sites + 1) / (n_sites + 1))
    assert ground_state_energy(H) == pytest.approx(2 * np.sort(levels)[:n_pairs].sum())


@pytest.mark.parametrize("n_pairs, expected", [(1, -4.0), (2, -6.0), (3, -8.0)])
def test_ring_free_fermions(n_pairs, expected):
    # second-quantised fermions: the ring's one-body levels −2t cos(2πm/6) are exact for any filling
    H = hamiltonian(6, n_pairs, ring(6), np.ones(6), [], 0.0, projected=False)
    assert ground_state_energy(H) == pytest.approx(expected)


@pytest.mark.parametrize("seed, n_sites, n_pairs", [(1, 6, 2), (2, 6, 3), (3, 5, 4)])
def test_random_graph_free_fermions_match_one_body_spectrum(seed, n_sites, n_pairs):
    hops, hop_t, _ = random_lattice(np.random.default_rng(seed), n_sites, 8, 0)
    h = np.zeros((n_sites, n_sites))
    for (i, j), t in zip(hops, hop_t):
        h[i, j] -= t
        h[j, i] -= t
    H = hamiltonian(n_sites, n_pairs, hops, hop_t, [], 0.0, projected=False)
    assert ground_state_energy(H) == pytest.approx(2 * np.linalg.eigvalsh(h)[:n_pairs].sum())


# ----------------------------------------------------------------------------- matrix elements

def test_one_pair_on_projected_ring_matches_jordan_wigner():
    args = (4, 1, ring(4), np.ones(4), ring(4), 0.4)
    H = hamiltonian(*args).toarray()
    assert np.allclose(H, reference_hamiltonian(*args))
    assert ground_state_energy(hamiltonian(*args)) == pytest.approx(np.linalg.eigvalsh(H)[0])


@pytest.mark.parametrize("seed, n_sites, n_pairs, projected, J", [
    (4, 5, 2, True, 0.35), (5, 5, 1, True, 1.1), (6, 4, 2, False, 0.0), (7, 5, 2, False, 0.0)])
def test_random_lattice_matches_jordan_wigner(seed, n_sites, n_pairs, projected, J):
    hops, hop_t, bonds = random_lattice(np.random.default_rng(seed), n_sites, 6, 5)
    args = (n_sites, n_pairs, hops, hop_t, bonds, J, projected)
    assert np.allclose(hamiltonian(*args).toarray(), reference_hamiltonian(*args))


def test_hamiltonian_is_symmetric():
    hops, hop_t, bonds = random_lattice(np.random.default_rng(8), 8, 12, 10)
    H = hamiltonian(8, 3, hops, hop_t, bonds, 0.6)
    assert H.shape == (560, 560)
    assert abs(H - H.T).max() < 1e-14
    assert abs(H).max() > 0.1


# ----------------------------------------------------------------------------- energies

def test_lanczos_matches_dense_and_variational_bound():
    hops, hop_t, bonds = random_lattice(np.random.default_rng(9), 8, 14, 10)
    H = hamiltonian(8, 3, hops, hop_t, bonds, 0.5)  # D = 560: the eigsh path
    E, psi = ground_state_energy(H, return_vector=True)
    assert E == pytest.approx(np.linalg.eigvalsh(H.toarray())[0], abs=1e-10)
    assert variational_energy(H, psi) == pytest.approx(E, abs=1e-10)
    assert variational_energy(H, 3.0 * psi) == pytest.approx(E, abs=1e-10)  # normalisation-free
    rng = np.random.default_rng(10)
    for _ in range(5):
        assert variational_energy(H, rng.standard_normal(H.shape[0])) > E + 1e-3


def test_pair_amplitudes_are_determinants():
    rng = np.random.default_rng(11)
    F = rng.standard_normal((5, 5))
    up, dn = basis(5, 1)
    assert np.allclose(pair_amplitudes(F, up, dn), F[up[:, 0], dn[:, 0]])
    up, dn = basis(5, 2)
    a = pair_amplitudes(F, up, dn)
    expect = [F[u0, d0] * F[u1, d1] - F[u0, d1] * F[u1, d0] for (u0, u1), (d0, d1) in zip(up, dn)]
    assert np.allclose(a, expect)


def test_pair_wave_function_energy_is_above_ground_state():
    hops, bonds = ring(6), ring(6)
    H = hamiltonian(6, 2, hops, np.ones(6), bonds, 0.4)
    rng = np.random.default_rng(12)
    F = rng.standard_normal((6, 6))
    up, dn = basis(6, 2)
    assert variational_energy(H, pair_amplitudes(F + F.T, up, dn)) > ground_state_energy(H)


# ----------------------------------------------------------------------------- validation

@pytest.mark.parametrize("call, match", [
    (lambda: basis(10, 6), "n_pairs"),
    (lambda: basis(10, 0), "n_pairs"),
    (lambda: basis(1, 1), "n_sites"),
    (lambda: hamiltonian(4, 2, ring(4), np.ones(4), ring(4), 0.5, projected=False), "J must be 0"),
    (lambda: hamiltonian(4, 1, ring(4), np.ones(3), [], 0.0), "hop_t"),
    (lambda: hamiltonian(4, 1, [[0, 4]], [1.0], [], 0.0), "hops"),
    (lambda: hamiltonian(4, 1, [], [], [[1, 1]], 1.0), "bonds"),
    (lambda: variational_energy(sp.identity(3), np.ones(4)), "amplitudes"),
    (lambda: variational_energy(sp.identity(3), np.zeros(3)), "amplitudes"),
    (lambda: pair_amplitudes(np.ones((3, 4)), *basis(4, 1)), "pair_matrix"),
    (lambda: pair_amplitudes(np.ones((3, 3)), *basis(4, 1)), "pair_matrix"),
])
def test_invalid_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()
