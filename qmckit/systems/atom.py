"""Atoms He, Be and Ne with hydrogenic orbitals and a Padé–Jastrow factor (study 002, Nikolaisen 2011,
§4.1/§6.3; parameters of Sandsdalen 2010, table 8.5).

Units: atomic units (bohr, hartree E_h, time ħ/E_h). Born–Oppenheimer nucleus of charge Z at the
origin, N = Z electrons (2, 4, 10), N↑ = N↓ = N/2 (electrons 0..N/2−1 up, the rest down):

    H = Σ_i [−½∇_i² − Z/r_i] + Σ_{i<j} 1/r_ij
    ψ_T = D↑ D↓ exp(Σ_{i<j} a_ij r_ij / (1 + β r_ij)),   D_s[k, j] = φ_j(r_k) (no normalisation)

with a_ij = ½ for antiparallel and ¼ for parallel spins (the cusp conditions; the thesis text has
them reversed, see doubt D4 of the notes). Orbitals of effective charge α, filled in this order
(1s for He; 1s, 2s for Be; 1s, 2s, 2p_x, 2p_y, 2p_z for Ne), constant factors dropped:

    φ_1s = e^{−αr},   φ_2s = (1 − αr/2) e^{−αr/2},   φ_2p,k = x_k e^{−αr/2}
    ∇φ_1s = −α φ_1s r⃗/r                            ∇²φ_1s = α(αr − 2)/r e^{−αr}
    ∇φ_2s = −(α/4)(4 − αr) e^{−αr/2} r⃗/r           ∇²φ_2s = −α(16 − 10αr + α²r²)/(8r) e^{−αr/2}
    ∇φ_2p,k = e^{−αr/2} ê_k − (α x_k/(2r)) e^{−αr/2} r⃗   ∇²φ_2p,k = x_k α(αr − 8)/(4r) e^{−αr/2}

With f(r) = a r/(1 + βr): f' = a/(1 + βr)², f'' + 2f'/r = 2a/(r(1 + βr)³). The local energy is

    E_L = Σ_i [−½(∇²_i D/D + |∇_i U|² + 2 ∇_i ln D·∇_i U) − Z/r_i] − Σ_{i<j} 2a_ij/(r_ij(1 + βr_ij)³)
          + Σ_{i<j} 1/r_ij

Options: ``jastrow=False`` drops J, ``ee=False`` drops the electron–electron repulsion (with α = Z
and both off, ψ_T is exact: E = −4, −20, −200 E_h with zero variance).

Fixed-node DMC: the kernel parameter ``reject_node_crossing`` makes ``test_move`` return −inf for a
move that changes the sign of ψ_T (a negative determinant ratio); :meth:`Atom.for_dmc` turns it on,
and :class:`~qmckit.methods.dmc.DMC` calls it. VMC leaves it off (node crossings are allowed).

Optional e–n cusp factor (``en_cusp=True``; off by default, so the study's ψ_T is unchanged). With
α ≠ Z the s orbitals have the cusp −α instead of −Z, so E_L → −(Z − α)/r at the nucleus (a heavy
tail for Ne, α = 9.546). The one-body Padé factor

    exp(Σ_i u(r_i)),   u(r) = −c r/(1 + β_en r),   c = Z − α
    u'(r) = −c/(1 + β_en r)²,   ∇²u = u'' + 2u'/r = −2c/(r(1 + β_en r)³)

adds −c to the cusp of every electron. At the nucleus an electron's row of D is dominated by the
s orbitals (the 2p vanish there), and 1s and 2s both have the cusp −α, so the total becomes
−α − c = −Z and the 1/r divergence of E_L cancels. Its gradient u'(r_i) r̂_i is part of JG (∇_i U);
its Laplacian enters E_L as −½ Σ_i ∇²u(r_i). Beyond r ≈ 1/β_en it tends to the constant −c/β_en,
so it changes the shape of ψ_T only inside r ≲ 1/β_en; the default β_en = 2α keeps that half the 1s
radius 1/α for every element and α (Ne: β_en = 19.09, 1/β_en = 0.052 bohr), so it scales with the
orbitals and the same choice suits He, Be and Ne. In short Ne VMC runs (100 walkers × 300 sweeps,
Δt = 0.01) the variance of E_L was 82 E_h² without the factor and 53, 60, 66, 72 E_h² with
β_en = α, 2α, 4α, 8α: a longer range lowers it further but reshapes the 1s shell more; 2α is a
compromise, not optimised. A move of electron i changes only its own term: test_move adds
u(r'_i) − u(r_i) to the log-ratio and u'(r'_i) r̂'_i to the new gradient; accept_move adds the
latter to JG[i] and touches no other electron.

Kernel parameter vector ``p``: [Z, α, β, jastrow (0/1), ee (0/1), reject_node_crossing (0/1),
en_cusp (0/1), β_en].

The Slater–Jastrow arithmetic that the atoms share with the molecules (determinant ratios and
gradients, the e–e Padé terms, the kinetic energy, the cache row's views T, DPHI, JG, U, DU, CO, CN,
META, MAT, LAP) is :mod:`qmckit.systems.slater_jastrow`; this module writes the hydrogenic orbitals, the
e–n cusp factor and the potential. The cache row of one walker is the core's and nothing else.

``accept_move`` is a Sherman–Morrison update of one block (O(n²)) plus O(N) Jastrow gradient updates.
``local_energy`` first rebuilds the whole cache from the positions (:func:`recompute`), so it is
exact whatever round-off the incremental updates have gathered, and every measured sweep also
refreshes the walker's cache.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numba as nb
import numpy as np

from .protocol import Capabilities, Kernels, parameter, validate
from .slater import det_ratio, invert, sherman_morrison_row
from .slater_jastrow import (SlaterJastrowSystem, core_size, determinant_move, drift_change, kinetic, pade_accept,
                             pade_gradients, pade_log, pade_move, pair_a, slater_gradient, views)

# element → (Z, default α, default β): Sandsdalen 2010 table 8.5, used by study 002's Table 7.1
ELEMENTS = {"He": (2, 1.839, 0.348), "Be": (4, 3.925, 0.109), "Ne": (10, 9.546, 0.177)}

# Reference total energies in E_h (value, error or None). "thesis": study 002 Table 7.1 (VMC,
# Δt → 0); "sandsdalen": the literature column of that table (Sandsdalen 2010, VMC, same ψ_T);
# "exact": non-relativistic ground state (outside knowledge, not in the document).
REFERENCE_ENERGIES = {
    "He": {"thesis": (-2.8903, 2e-4), "sandsdalen": (-2.89040, None), "exact": (-2.903724, None)},
    "Be": {"thesis": (-14.5015, 9e-4), "sandsdalen": (-14.50220, None), "exact": (-14.66736, None)},
    "Ne": {"thesis": (-127.4598, 3e-3), "sandsdalen": (-127.284, None), "exact": (-128.9383, None)},
}

P_Z, P_ALPHA, P_BETA, P_JASTROW, P_EE, P_REJECT, P_EN, P_BETA_EN = range(8)
BETA_EN_PER_ALPHA = 2.0  # default β_en = 2α: the e–n factor's range 1/β_en is half the 1s radius 1/α
# Compile-time switch for the e–n cusp factor's code: every e–n branch of the kernels below reads
# ``if EN_CUSP_CODE and p[P_EN] != 0.0``. numba freezes module globals as constants when it compiles,
# so with False that code is dead and removed. The CPU kernels keep True (the run-time flag p[P_EN]
# decides); the GPU twins (qmckit.backends.cuda_atom.device_functions) are compiled with False for
# systems without the factor, so that the compiler keeps no registers live for it.
EN_CUSP_CODE = True
_PRINCIPAL = (1, 2, 2, 2, 2)  # principal quantum number of orbital j


@dataclass(frozen=True)
class AtomParams:
    """Parameters of an atom with hydrogenic orbitals and a Padé–Jastrow factor (metadata on each field).

    ``alpha`` and ``beta`` default to Sandsdalen's optimum for the element. ``beta_en`` left at None
    stays None here and follows α (:attr:`effective_beta_en` = 2α, see the module docstring), so a copy
    made from ``as_dict()`` with another α keeps the rule (c = Z − α always follows α).
    """

    element: str = parameter("He", help="the atom (Z = N electrons, spin-balanced)", choices=tuple(ELEMENTS), symbol="atom")
    alpha: float | None = parameter(None, unit="bohr⁻¹", help="orbital exponent (effective charge) α; α = Z is "
                                    "the bare hydrogenic value", low=0.0, low_open=True, variational=True,
                                    default_text="the element's published optimum, He 1.839, Be 3.925, Ne 9.546", symbol="α")
    beta: float | None = parameter(None, unit="bohr⁻¹", help="Padé–Jastrow β", low=0.0, variational=True,
                                   default_text="He 0.348, Be 0.109, Ne 0.177", symbol="β")
    jastrow: bool = parameter(True, help="the Jastrow factor (without it ψ_T = D↑ D↓)", symbol="Jastrow factor")
    ee: bool = parameter(True, help="the electron–electron repulsion (without it, and without the Jastrow "
                         "factor, α = Z is exact: zero variance)", symbol="e–e repulsion")
    en_cusp: bool = parameter(False, help="the e–n Padé factor exp(−Σ_i (Z − α) r_i/(1 + β_en r_i)) that "
                              "restores the nuclear cusp of the s orbitals (off: the study's ψ_T)", symbol="e–n cusp factor")
    beta_en: float | None = parameter(None, unit="bohr⁻¹", help="β_en of the en_cusp factor", low=0.0,
                                      low_open=True, default_text="2α", symbol="β_en")

    def __post_init__(self):
        if isinstance(self.element, str):  # any capitalisation of a known symbol
            object.__setattr__(self, "element", {k.lower(): k for k in ELEMENTS}.get(self.element.strip().lower(),
                                                                                     self.element))
        validate(self)
        _, alpha0, beta0 = ELEMENTS[self.element]
        if self.alpha is None:
            object.__setattr__(self, "alpha", alpha0)
        if self.beta is None:
            object.__setattr__(self, "beta", beta0)

    @property
    def z(self) -> int:
        return ELEMENTS[self.element][0]

    @property
    def effective_beta_en(self) -> float:
        """β_en of the e–n cusp factor: the given value, or 2α (kept as ``None`` in the parameters so
        that a copy with another α, as in an α scan, follows the new α)."""
        return self.beta_en if self.beta_en is not None else BETA_EN_PER_ALPHA * self.alpha

    def as_dict(self) -> dict:
        return asdict(self)


def noninteracting_energy(element: str, alpha: float) -> float:
    """Exact VMC energy without Jastrow and without e–e repulsion: Σ_orbitals (α²/2 − Zα)/n² E_h.

    The orbitals of one α are orthogonal hydrogenic eigenfunctions of charge α, so ⟨T⟩ = α²/(2n²) and
    ⟨1/r⟩ = α/n² per electron; at α = Z this is the exact −4, −20, −200 E_h for He, Be, Ne.
    """
    z = ELEMENTS[element][0]
    n_orb = z // 2
    return 2.0 * sum((0.5 * alpha * alpha - z * alpha) / _PRINCIPAL[j] ** 2 for j in range(n_orb))


def helium_no_jastrow_energy(alpha: float) -> float:
    """Exact VMC energy of He with ψ = e^{−α(r1 + r2)} and e–e repulsion: α² − 4α + 5α/8 E_h."""
    return alpha * alpha - 4.0 * alpha + 0.625 * alpha


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def orbitals_at(x, y, z, alpha, n, val, grad, lap, with_lap):
    """φ_j, ∇φ_j (and ∇²φ_j if ``with_lap``) of the first ``n`` orbitals at (x, y, z)."""
    r = math.sqrt(x * x + y * y + z * z)
    rinv = 1.0 / r if r > 0.0 else 0.0
    e1 = math.exp(-alpha * r)
    val[0] = e1
    g = -alpha * e1 * rinv
    grad[0, 0] = g * x
    grad[0, 1] = g * y
    grad[0, 2] = g * z
    if with_lap:
        lap[0] = alpha * (alpha * r - 2.0) * rinv * e1
    if n > 1:
        e2 = math.exp(-0.5 * alpha * r)
        ar = alpha * r
        val[1] = (1.0 - 0.5 * ar) * e2
        g = -0.25 * alpha * (4.0 - ar) * e2 * rinv
        grad[1, 0] = g * x
        grad[1, 1] = g * y
        grad[1, 2] = g * z
        if with_lap:
            lap[1] = -alpha * (16.0 - 10.0 * ar + ar * ar) * 0.125 * rinv * e2
        h = -0.5 * alpha * e2 * rinv  # ∇e^{−αr/2} = h r⃗
        lap_factor = alpha * (ar - 8.0) * 0.25 * rinv * e2
        for k in range(n - 2):
            c = x if k == 0 else (y if k == 1 else z)
            j = 2 + k
            val[j] = c * e2
            grad[j, 0] = c * h * x
            grad[j, 1] = c * h * y
            grad[j, 2] = c * h * z
            grad[j, k] += e2
            if with_lap:
                lap[j] = c * lap_factor


@nb.njit(cache=True)
def en_pade(r, c, beta_en):
    """The optional e–n factor's u(r) = −c r/(1 + β_en r), u'(r)/r and ∇²u = −2c/(r(1 + β_en r)³)."""
    b = 1.0 / (1.0 + beta_en * r)
    rinv = 1.0 / r if r > 0.0 else 0.0
    return -c * r * b, -c * b * b * rinv, -2.0 * c * b * b * b * rinv


@nb.njit(cache=True, inline="always")
def cache_views(cache, N):
    return views(cache, N, N // 2, 3)


def cache_size_for(n_electrons: int) -> int:
    """Length of one walker's cache row (see the module docstring)."""
    return core_size(n_electrons, n_electrons // 2, 3)


@nb.njit(cache=True)
def log_psi(R, p):
    """ln|ψ_T(R)| (−inf on a node), from scratch."""
    N = R.shape[0]
    n = N // 2
    alpha, beta = p[P_ALPHA], p[P_BETA]
    M = np.empty((n, n))
    inv = np.empty((n, n))
    val = np.empty(n)
    grad = np.empty((n, 3))
    total = 0.0
    for s in range(2):
        for k in range(n):
            orbitals_at(R[s * n + k, 0], R[s * n + k, 1], R[s * n + k, 2], alpha, n, val, grad, val, False)
            for j in range(n):
                M[j, k] = val[j]
        log_abs, _ = invert(M, inv)
        total += log_abs
    if p[P_JASTROW] != 0.0:
        total = pade_log(R, n, beta, total)
    if EN_CUSP_CODE and p[P_EN] != 0.0:
        c_en, beta_en = p[P_Z] - alpha, p[P_BETA_EN]
        for i in range(N):
            u, _, _ = en_pade(math.sqrt(R[i, 0] ** 2 + R[i, 1] ** 2 + R[i, 2] ** 2), c_en, beta_en)
            total += u
    return total


@nb.njit(cache=True)
def recompute(R, p, cache):
    """Rebuild the cache from the positions: both inverse blocks, orbital gradients, ∇U."""
    N = R.shape[0]
    n = N // 2
    alpha, beta = p[P_ALPHA], p[P_BETA]
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N)
    for s in range(2):
        for k in range(n):
            i = s * n + k
            orbitals_at(R[i, 0], R[i, 1], R[i, 2], alpha, n, U, DPHI[i], LAP, False)
            for j in range(n):
                MAT[j, k] = U[j]  # Dᵀ, whose inverse is T
        invert(MAT, T[s * n:(s + 1) * n])
    for i in range(N):
        CO[i] = 0.0
        CN[i] = 0.0
        for c in range(3):
            JG[i, c] = 0.0
    META[0] = 0.0
    if p[P_JASTROW] != 0.0:
        pade_gradients(R, n, beta, JG)
    if EN_CUSP_CODE and p[P_EN] != 0.0:  # the one-body e–n term is part of ∇_i U
        c_en, beta_en = p[P_Z] - alpha, p[P_BETA_EN]
        for i in range(N):
            _, g, _ = en_pade(math.sqrt(R[i, 0] ** 2 + R[i, 1] ** 2 + R[i, 2] ** 2), c_en, beta_en)
            JG[i, 0] += g * R[i, 0]
            JG[i, 1] += g * R[i, 1]
            JG[i, 2] += g * R[i, 2]


@nb.njit(cache=True)
def gradient(R, p, cache, i, out):
    """∇_i ln|ψ(R)| from the cache: Σ_j ∇φ_j(r_i) T[i, j] + ∇_i U."""
    N = R.shape[0]
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N)
    slater_gradient(T, DPHI, JG, i, out)


@nb.njit(cache=True)
def test_move(R, p, cache, i, r_new, grad_new):
    """ln|ψ(R')/ψ(R)| for electron ``i`` moved to ``r_new`` and ∇_i ln|ψ(R')| into ``grad_new``.

    The determinant ratio is row i of T times the new orbital row; with ``reject_node_crossing``
    set, a move to the other sign of ψ_T (negative ratio) returns −inf. Leaves the scratch that
    ``accept_move`` needs. O(n + N).
    """
    N = R.shape[0]
    n = N // 2
    alpha, beta = p[P_ALPHA], p[P_BETA]
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N)
    x, y, z = r_new[0], r_new[1], r_new[2]
    orbitals_at(x, y, z, alpha, n, U, DU, LAP, False)
    q = det_ratio(T[i], U)
    META[0] = q
    if not (q != 0.0 and math.isfinite(q)) or (p[P_REJECT] != 0.0 and q < 0.0):
        return -np.inf  # q = 0, not finite, or (fixed-node DMC) a move to the other sign of ψ_T
    log_ratio, gx, gy, gz = determinant_move(T, DU, i, q, n)
    if p[P_JASTROW] != 0.0:
        delta, gx, gy, gz = pade_move(R, i, x, y, z, n, beta, CO, CN, gx, gy, gz)
        log_ratio += delta
    if EN_CUSP_CODE and p[P_EN] != 0.0:  # only the moved electron's own e–n term changes
        c_en, beta_en = p[P_Z] - alpha, p[P_BETA_EN]
        u_old, _, _ = en_pade(math.sqrt(R[i, 0] ** 2 + R[i, 1] ** 2 + R[i, 2] ** 2), c_en, beta_en)
        u_new, g, _ = en_pade(math.sqrt(x * x + y * y + z * z), c_en, beta_en)
        log_ratio += u_new - u_old
        gx += g * x
        gy += g * y
        gz += g * z
    grad_new[0] = gx
    grad_new[1] = gy
    grad_new[2] = gz
    return log_ratio


@nb.njit(cache=True)
def accept_move(R, p, cache, i, r_new, grad_new):
    """Commit the move tested last: Sherman–Morrison on electron i's block, its orbital
    gradients, and ∇U of every electron (O(n² + N))."""
    N = R.shape[0]
    n = N // 2
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N)
    s = i // n
    sherman_morrison_row(T[s * n:(s + 1) * n], i - s * n, U, META[0])
    for j in range(n):
        for c in range(3):
            DPHI[i, j, c] = DU[j, c]
    x, y, z = r_new[0], r_new[1], r_new[2]
    if p[P_JASTROW] != 0.0:
        jx, jy, jz = pade_accept(R, i, x, y, z, CO, CN, JG, 0.0, 0.0, 0.0)
        JG[i, 0] = jx
        JG[i, 1] = jy
        JG[i, 2] = jz
    if EN_CUSP_CODE and p[P_EN] != 0.0:  # electron i's own e–n gradient at its new position (no other electron's)
        _, g, _ = en_pade(math.sqrt(x * x + y * y + z * z), p[P_Z] - p[P_ALPHA], p[P_BETA_EN])
        if p[P_JASTROW] != 0.0:
            JG[i, 0] += g * x
            JG[i, 1] += g * y
            JG[i, 2] += g * z
        else:
            JG[i, 0] = g * x
            JG[i, 1] = g * y
            JG[i, 2] = g * z
    R[i, 0] = x
    R[i, 1] = y
    R[i, 2] = z


@nb.njit(cache=True)
def local_energy(R, p, cache):
    """E_L(R) in E_h (total energy of the atom). Rebuilds the cache first (exact; refreshes it)."""
    recompute(R, p, cache)
    N = R.shape[0]
    n = N // 2
    Z, alpha, beta = p[P_Z], p[P_ALPHA], p[P_BETA]
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N)
    energy = 0.0
    en = EN_CUSP_CODE and p[P_EN] != 0.0
    c_en, beta_en = Z - alpha, p[P_BETA_EN]
    for i in range(N):
        x, y, z = R[i, 0], R[i, 1], R[i, 2]
        orbitals_at(x, y, z, alpha, n, U, DU, LAP, True)
        energy += kinetic(T, i, DU, LAP, JG, n)
        energy -= Z / math.sqrt(x * x + y * y + z * z)
        if en:  # ∇²u of the e–n term (its gradient is in JG)
            _, _, lap_en = en_pade(math.sqrt(x * x + y * y + z * z), c_en, beta_en)
            energy -= 0.5 * lap_en
    jastrow = p[P_JASTROW] != 0.0
    ee = p[P_EE] != 0.0
    if jastrow or ee:
        for i in range(N):
            for l in range(i + 1, N):
                r = math.sqrt((R[i, 0] - R[l, 0]) ** 2 + (R[i, 1] - R[l, 1]) ** 2 + (R[i, 2] - R[l, 2]) ** 2)
                if jastrow:
                    b = 1.0 / (1.0 + beta * r)
                    energy -= 2.0 * pair_a(i, l, n) * b * b * b / r
                if ee:
                    energy += 1.0 / r
    return energy


@nb.njit(cache=True)
def other_drift_change(R, p, cache, i, r_new, dt):
    """(Δt/2) Σ_{j≠i} (|∇_j ln ψ(R)|² − |∇_j ln ψ(R')|²) for the move just tested (study 002's
    all-particle Green's function, doubt D1; exact sampling never uses it). O(n² + N)."""
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, R.shape[0])
    return drift_change(R, T, DPHI, JG, U, CO, CN, META[0], i, r_new, dt, p[P_JASTROW] != 0.0)


@nb.njit(cache=True)
def potential(R, p):
    """V(R) in E_h: −Z Σ_i 1/r_i, plus Σ_{i<j} 1/r_ij unless the e–e repulsion is off."""
    N = R.shape[0]
    total = 0.0
    for i in range(N):
        total -= p[P_Z] / math.sqrt(R[i, 0] ** 2 + R[i, 1] ** 2 + R[i, 2] ** 2)
        if p[P_EE] != 0.0:
            for l in range(i + 1, N):
                total += 1.0 / math.sqrt((R[i, 0] - R[l, 0]) ** 2 + (R[i, 1] - R[l, 1]) ** 2
                                         + (R[i, 2] - R[l, 2]) ** 2)
    return total


KERNELS = Kernels(recompute=recompute, gradient=gradient, test_move=test_move, accept_move=accept_move,
                  local_energy=local_energy, log_psi=log_psi, other_drift_change=other_drift_change,
                  potential=potential)


@nb.njit(cache=True)
def log_psi_parameter_derivatives(configs, p, cache_size, beta_en_follows, out):
    """(∂ ln ψ/∂α, ∂ ln ψ/∂β) of every configuration (M, N, 3) into out (M, 2).

    Each orbital is a function of αr, times 1/α for a 2p orbital (x e^{−αr/2} = (αx) e^{−αr/2}/α), so
    ln D(α; R) = ln D(1; αR) − n_2p ln α and ∂_α ln D = Σ_i r_i·∇_i ln D/α − n_2p/α (n_2p: the 2p orbitals of both
    determinants). Σ_i r_i·∇_i ln D is that sum for ln ψ (the kernels' gradients) less the Jastrow factor's,
    Σ_pairs a r/(1 + βr)², and the e–n factor's, Σ_i r u'(r) = −Σ_i c r/(1 + β_en r)². The e–n factor
    u = −c r/(1 + β_en r) with c = Z − α (and β_en = 2α when ``beta_en_follows``) adds its own ∂_α u;
    ∂_β J = −Σ a r²/(1 + βr)²."""
    M, N, _ = configs.shape
    n = N // 2
    alpha, beta = p[P_ALPHA], p[P_BETA]
    jastrow = p[P_JASTROW] != 0.0
    en = EN_CUSP_CODE and p[P_EN] != 0.0
    c_en, beta_en = p[P_Z] - alpha, p[P_BETA_EN]
    n_2p = 2 * max(0, n - 2)
    cache = np.zeros(cache_size)
    g = np.empty(3)
    for m in range(M):
        R = configs[m]
        recompute(R, p, cache)
        euler = 0.0
        for i in range(N):
            gradient(R, p, cache, i, g)
            euler += R[i, 0] * g[0] + R[i, 1] * g[1] + R[i, 2] * g[2]
        d_beta = 0.0
        if jastrow:
            for i in range(N):
                for l in range(i + 1, N):
                    r = math.sqrt((R[i, 0] - R[l, 0]) ** 2 + (R[i, 1] - R[l, 1]) ** 2 + (R[i, 2] - R[l, 2]) ** 2)
                    a = pair_a(i, l, n)
                    b = 1.0 / (1.0 + beta * r)
                    euler -= a * r * b * b
                    d_beta -= a * r * r * b * b
        d_alpha_en = 0.0
        if en:
            for i in range(N):
                r = math.sqrt(R[i, 0] ** 2 + R[i, 1] ** 2 + R[i, 2] ** 2)
                b = 1.0 / (1.0 + beta_en * r)
                euler += c_en * r * b * b
                d_alpha_en += r * b  # ∂u/∂c · ∂c/∂α
                if beta_en_follows:
                    d_alpha_en += 2.0 * c_en * r * r * b * b  # ∂u/∂β_en · ∂β_en/∂α
        out[m, 0] = (euler - n_2p) / alpha + d_alpha_en
        out[m, 1] = d_beta


class Atom(SlaterJastrowSystem):
    """An atom (He, Be, Ne) for the generic VMC and DMC drivers; reports the total ``energy`` in E_h."""

    name = "atom"
    title = "He, Be or Ne: hydrogenic orbitals + Padé–Jastrow (study 002)"
    description = ("An atom (He, Be, Ne) with hydrogenic orbitals of effective charge α and a Padé–Jastrow "
                   "factor. Lengths in bohr, energies in hartree, time in ħ/E_h; reports the total energy as "
                   "'energy'. DMC is fixed-node (moves across a node of ψ_T are rejected).")
    Params = AtomParams
    kernels = KERNELS
    # GPU sweeper: one thread per walker, the kernels above compiled as CUDA device functions
    capabilities = Capabilities(fixed_node=True, gpu="qmckit.backends.cuda_atom:CudaAtomSweeper", green_all=True,
                                gpu_nuclear_moves=True, parameter_derivatives=("alpha", "beta"))
    # no Jastrow, no e–e repulsion, α = Z: a product of hydrogenic determinants, E = −Σ Z²/(2n²)
    exact_cases = tuple((dict(element=e, alpha=float(ELEMENTS[e][0]), jastrow=False, ee=False), energy)
                        for e, energy in (("He", -4.0), ("Be", -20.0), ("Ne", -200.0)))
    examples = (dict(element="He"), dict(element="Be", en_cusp=True), dict(element="Ne", jastrow=False),
                dict(element="Be", ee=False, beta=0.3))

    def __repr__(self):
        p = self.params
        extra = "" if p.jastrow and p.ee else f", jastrow={p.jastrow}, ee={p.ee}"
        if p.en_cusp:
            extra += f", en_cusp=True, beta_en={p.effective_beta_en:g}"
        fixed_node = ", reject_node_crossing=True" if self.reject_node_crossing else ""
        return f"Atom(element={p.element!r}, alpha={p.alpha:g}, beta={p.beta:g}{extra}{fixed_node})"

    @property
    def z(self) -> int:
        return self.params.z

    @property
    def n_particles(self) -> int:
        return self.params.z

    @property
    def kernel_params(self) -> np.ndarray:
        p = self.params
        return np.array([float(p.z), p.alpha, p.beta, float(p.jastrow), float(p.ee),
                         float(self.reject_node_crossing), float(p.en_cusp), p.effective_beta_en])

    def cache_size(self) -> int:
        return cache_size_for(self.n_particles)

    def log_psi_parameter_derivatives(self, configs: np.ndarray, names: tuple) -> np.ndarray:
        """(M, P) ∂ ln ψ_T/∂α and ∂ ln ψ_T/∂β (bohr) at configurations (M, N, 3), for ``names``."""
        out = np.empty((len(configs), 2))
        log_psi_parameter_derivatives(np.ascontiguousarray(configs, dtype=np.float64), self.kernel_params,
                                      self.cache_size(), self.params.beta_en is None, out)
        return out[:, [("alpha", "beta").index(name) for name in names]]

    def nuclei(self) -> np.ndarray:
        """The nucleus: charge Z at the origin, (1, 4)."""
        return np.array([[0.0, 0.0, 0.0, float(self.params.z)]])

    def density_range(self) -> float:
        """A radius (bohr) that holds the electron cloud: 4/α for 1s only, 12/α with an n = 2 shell."""
        return (4.0 if self.n_particles <= 2 else 12.0) / self.params.alpha

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """Positions (W, N, 3): each electron Gaussian around the nucleus with the width of its
        shell (1/α for 1s, 2.5/α for n = 2); equilibration does the rest."""
        n = self.n_up
        width = np.array([1.0 if _PRINCIPAL[k] == 1 else 2.5 for k in range(n)] * 2) / self.params.alpha
        return rng.normal(size=(n_walkers, 2 * n, 3)) * width[None, :, None]
