"""The Slater–Jastrow core of the electronic systems in 3D: the atoms (:mod:`qmckit.systems.atom`) and the
molecules (:mod:`qmckit.systems.molecule`) write their orbitals and their electron–nucleus terms; the rest is
here, once.

Units: atomic units (bohr, E_h). N electrons, n = N/2 per spin (electrons 0..n−1 up, the rest down), and

    ψ_T = D↑ D↓ exp(U),   U = Σ_{i<l} f(r_il) + (the system's one-body e–n terms),
    f(r) = a_il r/(1 + βr),   a_il = ¼ for parallel, ½ for antiparallel spins (the cusp conditions),
    f'(r) = a/(1 + βr)²,      f'' + 2f'/r = 2a/(r(1 + βr)³).

A walker's cache row starts with the core's part (:func:`views`; a system appends its own after
:func:`core_size` entries; :mod:`qmckit.systems.slater` gives the convention for T):

    T     (N, n)     row i: the transposed inverse of electron i's spin block
    DPHI  (N, n, 3)  ∇φ_j(r_i), so ∇_i ln|D| = Σ_j DPHI[i, j] T[i, j] needs no orbital evaluation
    JG    (N, 3)     ∇_i U (e–e and the system's e–n terms), updated in O(N) per accepted move
    U, DU (n), (n,3) orbital values and gradients at the proposed position   ┐ scratch from
    CO, CN (N), (N)  f'(r_il)/r_il of the moved electron before / after     │ test_move for
    META  (1)        the determinant ratio of the last tested move          ┘ accept_move
    MAT, LAP         (n, n), (n) scratch for inversion and orbital Laplacians

The kernels here take those views and return what a system's kernel adds to its own terms: the
arithmetic is the systems' own, in their order, so that a system built on them gives the same numbers
bit for bit as one that writes them out. None of them allocates, so the GPU twins
(:mod:`qmckit.backends.cuda_atom`) compile them as device functions from this source.
:class:`SlaterJastrowSystem` is the systems' common Python side (units, spins, fixed node).
"""
from __future__ import annotations

import math

import numba as nb

from .protocol import System
from .slater import mat_view, mat3_view

A_ANTIPARALLEL = 0.5
A_PARALLEL = 0.25


@nb.njit(cache=True, inline="always", error_model="numpy")
def pair_a(i, l, n):
    """Jastrow a of the pair (i, l): ¼ for parallel spins, ½ for antiparallel (n electrons per spin)."""
    return A_PARALLEL if (i < n) == (l < n) else A_ANTIPARALLEL


@nb.njit(cache=True, error_model="numpy")
def core_size(N, n, d):
    """Length of the core's part of a cache row (N electrons, n orbitals per spin, d dimensions), in float64
    entries."""
    return N * n + N * n * d + N * d + n + n * d + 2 * N + 1 + n * n + n


@nb.njit(cache=True, inline="always", error_model="numpy")
def views(cache, N, n, d):
    """(T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP): the core's views of a cache row (see the module docstring;
    in d dimensions, d = 3 here, and d = 2 or 3 for the quantum dots, which keep the same layout)."""
    o = 0
    T = mat_view(cache, o, N, n)  # strided views: numba's reshape costs ~40 ns a call
    o += N * n
    DPHI = mat3_view(cache, o, N, n, d)
    o += N * n * d
    JG = mat_view(cache, o, N, d)
    o += N * d
    U = cache[o:o + n]
    o += n
    DU = mat_view(cache, o, n, d)
    o += n * d
    CO = cache[o:o + N]
    o += N
    CN = cache[o:o + N]
    o += N
    META = cache[o:o + 1]
    o += 1
    MAT = mat_view(cache, o, n, n)
    o += n * n
    LAP = cache[o:o + n]
    return T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP


@nb.njit(cache=True, error_model="numpy")
def pade_log(R, n, beta, total):
    """``total`` + Σ_{i<l} a_il r_il/(1 + β r_il) (the e–e part of ln ψ_T) for positions R (N, 3) in bohr."""
    N = R.shape[0]
    for i in range(N):
        for l in range(i + 1, N):
            r = math.sqrt((R[i, 0] - R[l, 0]) ** 2 + (R[i, 1] - R[l, 1]) ** 2 + (R[i, 2] - R[l, 2]) ** 2)
            total += pair_a(i, l, n) * r / (1.0 + beta * r)
    return total


@nb.njit(cache=True, error_model="numpy")
def pade_gradients(R, n, beta, JG):
    """Add the e–e gradients Σ_{l≠i} f'(r_il) r̂_il to every row of JG (N, 3)."""
    N = R.shape[0]
    for i in range(N):
        for l in range(i + 1, N):
            dx = R[i, 0] - R[l, 0]
            dy = R[i, 1] - R[l, 1]
            dz = R[i, 2] - R[l, 2]
            r = math.sqrt(dx * dx + dy * dy + dz * dz)
            b = 1.0 / (1.0 + beta * r)
            c = pair_a(i, l, n) * b * b / r  # f'(r)/r
            JG[i, 0] += c * dx
            JG[i, 1] += c * dy
            JG[i, 2] += c * dz
            JG[l, 0] -= c * dx
            JG[l, 1] -= c * dy
            JG[l, 2] -= c * dz


@nb.njit(cache=True, error_model="numpy")
def slater_gradient(T, DPHI, JG, i, out):
    """∇_i ln|ψ| = Σ_j ∇φ_j(r_i) T[i, j] + ∇_i U into ``out`` (3,), from the cache."""
    gx = JG[i, 0]
    gy = JG[i, 1]
    gz = JG[i, 2]
    for j in range(T.shape[1]):
        t = T[i, j]
        gx += DPHI[i, j, 0] * t
        gy += DPHI[i, j, 1] * t
        gz += DPHI[i, j, 2] * t
    out[0] = gx
    out[1] = gy
    out[2] = gz


@nb.njit(cache=True, error_model="numpy")
def determinant_move(T, DU, i, q, n):
    """The determinant part of moving electron i, once its ratio q = det D'/det D
    (:func:`qmckit.systems.slater.det_ratio`) is known to be finite and non-zero: returns (ln|q|, gx, gy, gz) with
    ∇_i ln|D'| = Σ_j ∇φ_j(r'_i) T[i, j]/q in 1/bohr, DU (n, 3) the gradients of the n orbitals at r'_i."""
    inv_q = 1.0 / q
    gx = 0.0
    gy = 0.0
    gz = 0.0
    for j in range(n):
        t = T[i, j] * inv_q
        gx += DU[j, 0] * t
        gy += DU[j, 1] * t
        gz += DU[j, 2] * t
    return math.log(abs(q)), gx, gy, gz


@nb.njit(cache=True, error_model="numpy")
def pade_move(R, i, x, y, z, n, beta, CO, CN, gx, gy, gz):
    """The e–e Jastrow part of moving electron i to (x, y, z): returns (Δ ln J, gx, gy, gz) with the new
    e–e gradient of electron i added to (gx, gy, gz), and leaves f'/r of every pair before (CO) and after
    (CN) the move for :func:`pade_accept`. O(N)."""
    N = R.shape[0]
    xo, yo, zo = R[i, 0], R[i, 1], R[i, 2]
    delta = 0.0
    for l in range(N):
        if l == i:
            CO[l] = 0.0
            CN[l] = 0.0
            continue
        a = pair_a(i, l, n)
        dxo = xo - R[l, 0]
        dyo = yo - R[l, 1]
        dzo = zo - R[l, 2]
        dxn = x - R[l, 0]
        dyn = y - R[l, 1]
        dzn = z - R[l, 2]
        ro = math.sqrt(dxo * dxo + dyo * dyo + dzo * dzo)
        rn = math.sqrt(dxn * dxn + dyn * dyn + dzn * dzn)
        bo = 1.0 / (1.0 + beta * ro)
        bn = 1.0 / (1.0 + beta * rn)
        delta += a * (rn * bn - ro * bo)
        CO[l] = a * bo * bo / ro
        cn = a * bn * bn / rn
        CN[l] = cn
        gx += cn * dxn
        gy += cn * dyn
        gz += cn * dzn
    return delta, gx, gy, gz


@nb.njit(cache=True, error_model="numpy")
def pade_accept(R, i, x, y, z, CO, CN, JG, jx, jy, jz):
    """Commit the e–e gradients of the move of electron i (still at R[i]) to (x, y, z) that
    :func:`pade_move` tested: every other row of JG changes by its pair term; returns (jx, jy, jz) plus
    electron i's new e–e gradient (the caller stores JG[i]). O(N)."""
    N = R.shape[0]
    xo, yo, zo = R[i, 0], R[i, 1], R[i, 2]
    for l in range(N):
        if l == i:
            continue
        co = CO[l]
        cn = CN[l]
        JG[l, 0] += cn * (R[l, 0] - x) - co * (R[l, 0] - xo)
        JG[l, 1] += cn * (R[l, 1] - y) - co * (R[l, 1] - yo)
        JG[l, 2] += cn * (R[l, 2] - z) - co * (R[l, 2] - zo)
        jx += cn * (x - R[l, 0])
        jy += cn * (y - R[l, 1])
        jz += cn * (z - R[l, 2])
    return jx, jy, jz


@nb.njit(cache=True, error_model="numpy")
def kinetic(T, i, G, L, JG, n):
    """Electron i's local kinetic energy −½ ∇_i²ψ/ψ = −½(∇²D/D + |∇U|² + 2 ∇ln D·∇U) in E_h, with G (n, 3) and
    L (n,) the gradients and Laplacians of the n orbitals at r_i (∇²U is the system's: its Jastrow terms)."""
    gx = 0.0
    gy = 0.0
    gz = 0.0
    lap_d = 0.0
    for j in range(n):
        t = T[i, j]
        gx += G[j, 0] * t
        gy += G[j, 1] * t
        gz += G[j, 2] * t
        lap_d += L[j] * t
    jx, jy, jz = JG[i, 0], JG[i, 1], JG[i, 2]
    return -0.5 * (lap_d + jx * jx + jy * jy + jz * jz + 2.0 * (gx * jx + gy * jy + gz * jz))


@nb.njit(cache=True, error_model="numpy")
def drift_change(R, T, DPHI, JG, U, CO, CN, q, i, r_new, dt, jastrow):
    """(Δt/2) Σ_{l≠i} (|∇_l ln ψ(R)|² − |∇_l ln ψ(R')|²) for the move of electron i to ``r_new`` just tested
    (q its determinant ratio, U its orbital row; study 002's all-particle Green's function). The determinant
    part of ∇_l changes only in i's spin block (T's row l after Sherman–Morrison); the e–e part by the pair
    terms in CO, CN (with ``jastrow``). The e–n terms of ∇_l do not change. O(n² + N)."""
    N = R.shape[0]
    n = T.shape[1]
    s = i // n
    x, y, z = r_new[0], r_new[1], r_new[2]
    xo, yo, zo = R[i, 0], R[i, 1], R[i, 2]
    total = 0.0
    for l in range(N):
        if l == i:
            continue
        # old gradient, and Σ_j ∇φ_j(r_l) T[i, j] for the change of row l of T
        gx = JG[l, 0]
        gy = JG[l, 1]
        gz = JG[l, 2]
        hx = 0.0
        hy = 0.0
        hz = 0.0
        v = 0.0
        same_block = l // n == s
        for j in range(n):
            t = T[l, j]
            gx += DPHI[l, j, 0] * t
            gy += DPHI[l, j, 1] * t
            gz += DPHI[l, j, 2] * t
            if same_block:
                ti = T[i, j]
                hx += DPHI[l, j, 0] * ti
                hy += DPHI[l, j, 1] * ti
                hz += DPHI[l, j, 2] * ti
                v += U[j] * t
        f = v / q if same_block else 0.0
        nx = gx - f * hx
        ny = gy - f * hy
        nz = gz - f * hz
        if jastrow:
            nx += CN[l] * (R[l, 0] - x) - CO[l] * (R[l, 0] - xo)
            ny += CN[l] * (R[l, 1] - y) - CO[l] * (R[l, 1] - yo)
            nz += CN[l] * (R[l, 2] - z) - CO[l] * (R[l, 2] - zo)
        total += gx * gx + gy * gy + gz * gz - (nx * nx + ny * ny + nz * nz)
    return 0.5 * dt * total


class SlaterJastrowSystem(System):
    """The common Python side of the systems built on this core: N electrons in 3D, N/2 per spin, the total
    ``energy`` in E_h, and fixed-node DMC by rejecting moves across a node of ψ_T (``reject_node_crossing``,
    which a subclass puts in its kernel parameters)."""

    dim = 3
    energy_key = "energy"
    energy_unit = "E_h"
    length_unit = "bohr"
    time_unit = "ħ/E_h"

    def __init__(self, params=None, *, reject_node_crossing: bool = False, **kwargs):
        super().__init__(params, **kwargs)
        self.reject_node_crossing = bool(reject_node_crossing)

    def for_dmc(self):
        """The same system with moves across a node of ψ_T rejected (fixed-node DMC)."""
        return type(self)(self.params, reject_node_crossing=True)

    @property
    def n_up(self) -> int:
        return self.n_particles // 2

    def energy_scale(self) -> float:
        """Walker energies are already the reported ``energy`` (total, in E_h)."""
        return 1.0
