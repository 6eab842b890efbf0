"""Electrons in a harmonic quantum dot, 2D or 3D (the Oslo FYS4411 project 2 system).

Units: effective atomic units ("Hartree*": ħ = m* = e²/(4πε₀ε_r) = 1), lengths in a₀*, energies in
E_h*, time in ħ/E_h*. N electrons in a closed shell, N↑ = N↓ = N/2 (electrons 0..N/2−1 up, the
rest down):

    H = Σ_i [−½∇_i² + ½ω² r_i²] + Σ_{i<j} 1/r_ij          (the last term off with interaction=False)
    ψ_T = D↑ D↓ exp(Σ_{i<j} a_ij r_ij / (1 + β r_ij)),   D_s[k, j] = φ_j(r_k)

Orbitals: Hermite functions of the oscillator with the variational frequency αω (α = 1 gives the
exact non-interacting orbitals), for quantum numbers n = (n_x, n_y[, n_z]) filled shell by shell:

    φ_n(r) = Π_d H_{n_d}(s x_d) · exp(−c r²/2),   c = αω,  s = √c

With h_d = H_{n_d}(s x_d), h'_d = s H'_{n_d}(s x_d) = 2 n_d s H_{n_d−1}, h''_d = 4 n_d(n_d − 1) s² H_{n_d−2}
and P = Π_d h_d (no division by h_d, which may vanish):

    ∂_d φ  = (h'_d Π_{e≠d} h_e − c x_d P) g
    ∂_d² φ = (h''_d Π_{e≠d} h_e − 2 c x_d h'_d Π_{e≠d} h_e + (c² x_d² − c) P) g,   g = exp(−c r²/2)

Closed shells: shell k holds k + 1 orbitals per spin in 2D (N = 2, 6, 12, 20, 30, …) and
(k + 1)(k + 2)/2 in 3D (N = 2, 8, 20, 40, …); orbital n has energy (|n| + d/2) αω-free, so without
interaction and at α = 1 ψ_T is exact: E = 2 Σ_n (|n| + d/2) ω (2D: 2ω, 10ω, 28ω; 3D: 3ω, 18ω, 60ω).

Jastrow: the Padé factor with the cusp-correct a (Kato: a = 1/(d − 1) for antiparallel spins and
1/(d + 1) for parallel ones: 2D 1 and ⅓, 3D ½ and ¼), times 0 when the interaction is off (no
cusp then: ψ_T stays exact). With f(r) = a r/(1 + βr): f' = a/(1 + βr)²; the d-dimensional
Laplacian is f'' + (d − 1) f'/r = a (d − 1 − (3 − d) βr)/(r (1 + βr)³).

Local energy (as for the atoms, :mod:`qmckit.systems.atom`):

    E_L = Σ_i [−½(∇_i²D/D + |∇_i U|² + 2 ∇_i ln D·∇_i U) + ½ω² r_i²] − Σ_{i<j} ∇²f(r_ij) + Σ_{i<j} 1/r_ij

Fixed-node DMC: the kernel flag ``reject_node_crossing`` (set by :meth:`QuantumDot.for_dmc`) makes
``test_move`` return −inf for a move that changes the sign of a determinant. For N = 2 the ground
state is nodeless, so DMC is exact: 2D ω = 1 gives Taut's 3 E_h*, 3D ω = ½ gives Kestner and
Sinanoglu's 2 E_h*.

Kernel parameter vector ``p``: [ω, α, β, a_parallel, a_antiparallel, interaction (0/1),
reject_node_crossing (0/1), then the quantum numbers (n_x, n_y, n_z) of the n = N/2 orbitals].

Cache layout of one walker (N electrons, n = N/2 orbitals per spin, d dimensions), float64: the
Slater–Jastrow core's (:func:`qmckit.systems.slater_jastrow.views`) in d dimensions,

    T     (N, n)     row i: the transposed inverse of electron i's spin block (:mod:`qmckit.systems.slater`)
    DPHI  (N, n, d)  ∇φ_j(r_i)
    JG    (N, d)     ∇_i U = Σ_{l≠i} f'(r_il) r̂_il
    U, DU (n), (n, d)  orbital values and gradients at the proposed position  ┐ scratch from test_move
    CO, CN (N), (N)    f'(r_il)/r_il of the moved electron before / after     │ for accept_move
    META  (1)          the determinant ratio of the last tested move          ┘
    MAT, LAP (n, n), (n)  scratch for inversion and orbital Laplacians

The kernels are written in d dimensions with the spin factors a in ``p``; the core's functions (written
out in x, y, z for the atoms' GPU register budget, with the 3D cusp factors) are not used.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numba as nb
import numpy as np

from .protocol import Capabilities, Kernels, System, no_other_drift_change, parameter, validate
from .slater import det_ratio, invert, sherman_morrison_row
from .slater_jastrow import core_size, views

ENERGY_KEY = "energy"
ENERGY_UNIT = "E_h*"
DIMENSIONS = (2, 3)
P_OMEGA, P_ALPHA, P_BETA, P_APAR, P_AANTI, P_INTERACT, P_REJECT = range(7)
HEADER = 7
MAX_SHELL = 8


def shell_orbitals(dim: int, shells: int) -> list[tuple[int, int, int]]:
    """Quantum numbers (n_x, n_y, n_z) of the first ``shells`` shells in ``dim`` dimensions, shell by shell."""
    out = []
    for k in range(shells):
        if dim == 2:
            out += [(nx, k - nx, 0) for nx in range(k, -1, -1)]
        else:
            out += [(nx, ny, k - nx - ny) for nx in range(k, -1, -1) for ny in range(k - nx, -1, -1)]
    return out


def closed_shells(dim: int, shells: int = MAX_SHELL) -> list[int]:
    """Electron counts N of closed shells: [2, 6, 12, …] in 2D, [2, 8, 20, …] in 3D."""
    return [2 * len(shell_orbitals(dim, k)) for k in range(1, shells + 1)]


def noninteracting_energy(n: int, dim: int, omega: float) -> float:
    """Exact energy of N non-interacting electrons in a closed shell: 2 Σ_orbitals (|n| + d/2) ω."""
    return 2.0 * omega * sum(sum(q) + dim / 2 for q in shell_orbitals(dim, closed_shells(dim).index(n) + 1))


@dataclass(frozen=True)
class QuantumDotParams:
    """Parameters of a closed-shell harmonic quantum dot (metadata on each field)."""

    n: int = parameter(2, help="number of electrons N, a closed shell (2D: 2, 6, 12, 20, …; 3D: 2, 8, 20, …)",
                       low=2, symbol="N")
    dim: int = parameter(2, help="spatial dimension", low=2, high=3, symbol="d")
    omega: float = parameter(1.0, unit="E_h*/ħ", help="trap frequency ω", low=0.0, low_open=True, typical=(0.1, 2.0), symbol="ω")
    alpha: float = parameter(1.0, help="orbital frequency factor α (Hermite functions of αω; 1 is exact without "
                             "interaction)", low=0.0, low_open=True, variational=True, typical=(0.5, 1.2), symbol="α")
    beta: float = parameter(0.4, unit="a₀*⁻¹", help="Padé–Jastrow β", low=0.0, variational=True,
                            typical=(0.0, 1.0), symbol="β")
    interaction: bool = parameter(True, help="the electron–electron Coulomb repulsion (without it the cusp-correct "
                                  "Jastrow vanishes, and α = 1 is exact)", symbol="Coulomb repulsion")
    jastrow: bool = parameter(True, help="the Padé–Jastrow factor (without it ψ_T = D↑ D↓)", symbol="Jastrow factor")

    def __post_init__(self):
        validate(self)
        allowed = closed_shells(self.dim)
        if self.n not in allowed:
            raise ValueError(f"n must be a closed shell in {self.dim}D, one of {', '.join(map(str, allowed))}, "
                             f"got {self.n}")

    def as_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always")
def hermite(k, x):
    """(H_k(x), H_{k−1}(x), H_{k−2}(x)) of the physicists' Hermite polynomials (0 for negative order)."""
    h2 = 0.0
    h1 = 0.0
    h0 = 1.0
    for m in range(k):
        h2 = h1
        h1 = h0
        h0 = 2.0 * x * h1 - 2.0 * m * h2
    return h0, h1, h2


@nb.njit(cache=True, inline="always")
def hermite_factor(q, x, s, c):
    """(h, h', h'') of the factor H_q(s x) and its first two x-derivatives (s = √c)."""
    a0, a1, a2 = hermite(q, s * x)
    return a0, 2.0 * q * s * a1, 4.0 * q * (q - 1) * c * a2


@nb.njit(cache=True)
def orbitals_at(r, p, n, val, grad, lap, with_lap):
    """Values φ_j(r), gradients ∇φ_j (n, d) and (if ``with_lap``) Laplacians of the n orbitals at ``r`` (d,).

    No allocation (the GPU sampler compiles this function for the device too): the d ≤ 3 factors are
    scalars, a missing z factor is 1."""
    d = r.shape[0]
    c = p[P_ALPHA] * p[P_OMEGA]
    s = math.sqrt(c)
    x = r[0]
    y = r[1]
    z = r[2] if d == 3 else 0.0
    g = math.exp(-0.5 * c * (x * x + y * y + z * z))
    for j in range(n):
        hx, dx, ddx = hermite_factor(int(p[HEADER + 3 * j]), x, s, c)
        hy, dy, ddy = hermite_factor(int(p[HEADER + 3 * j + 1]), y, s, c)
        hz, dz, ddz = 1.0, 0.0, 0.0
        if d == 3:
            hz, dz, ddz = hermite_factor(int(p[HEADER + 3 * j + 2]), z, s, c)
        prod = hx * hy * hz
        val[j] = prod * g
        grad[j, 0] = (dx * hy * hz - c * x * prod) * g
        grad[j, 1] = (hx * dy * hz - c * y * prod) * g
        if d == 3:
            grad[j, 2] = (hx * hy * dz - c * z * prod) * g
        if with_lap:
            total = (ddx * hy * hz - 2.0 * c * x * dx * hy * hz + (c * c * x * x - c) * prod
                     + hx * ddy * hz - 2.0 * c * y * hx * dy * hz + (c * c * y * y - c) * prod)
            if d == 3:
                total += hx * hy * ddz - 2.0 * c * z * hx * hy * dz + (c * c * z * z - c) * prod
            lap[j] = total * g


@nb.njit(cache=True, inline="always")
def pair_a(p, i, l, n):
    """Jastrow a of the pair (i, l): parallel spins (same block) or antiparallel."""
    return p[P_APAR] if (i < n) == (l < n) else p[P_AANTI]


@nb.njit(cache=True, inline="always")
def distance(R, i, l):
    r2 = 0.0
    for k in range(R.shape[1]):
        r2 += (R[i, k] - R[l, k]) ** 2
    return math.sqrt(r2)


@nb.njit(cache=True)
def cache_views(cache, N, d):
    n = N // 2
    if cache.shape[0] < core_size(N, n, d):  # views from strides are not bounds-checked
        raise ValueError("quantum-dot cache row too short (see cache_size_for)")
    return views(cache, N, n, d)


def cache_size_for(n_electrons: int, dim: int) -> int:
    """Length of one walker's cache row (see the module docstring)."""
    return core_size(n_electrons, n_electrons // 2, dim)


@nb.njit(cache=True)
def log_psi(R, p):
    """ln|ψ_T(R)| (−inf where a determinant vanishes)."""
    N, d = R.shape
    n = N // 2
    total = 0.0
    M = np.empty((n, n))
    out = np.empty((n, n))
    val = np.empty(n)
    grad = np.empty((n, d))
    for s in range(2):
        for k in range(n):
            orbitals_at(R[s * n + k], p, n, val, grad, val, False)
            for j in range(n):
                M[j, k] = val[j]
        log_abs, sign = invert(M, out)
        total += log_abs
    beta = p[P_BETA]
    for i in range(N):
        for l in range(i + 1, N):
            a = pair_a(p, i, l, n)
            if a != 0.0:
                r = distance(R, i, l)
                total += a * r / (1.0 + beta * r)
    return total


@nb.njit(cache=True)
def recompute(R, p, cache):
    """Rebuild the cache from the positions: inverses, orbital gradients, Jastrow gradients."""
    N, d = R.shape
    n = N // 2
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N, d)
    for s in range(2):
        for k in range(n):
            i = s * n + k
            orbitals_at(R[i], p, n, U, DU, LAP, False)
            for j in range(n):
                MAT[j, k] = U[j]  # Dᵀ, so that invert gives T = (D⁻¹)ᵀ
                for e in range(d):
                    DPHI[i, j, e] = DU[j, e]
        invert(MAT, T[s * n:(s + 1) * n])
    beta = p[P_BETA]
    for i in range(N):
        for e in range(d):
            JG[i, e] = 0.0
    for i in range(N):
        for l in range(i + 1, N):
            a = pair_a(p, i, l, n)
            if a == 0.0:
                continue
            r = distance(R, i, l)
            b = 1.0 / (1.0 + beta * r)
            c = a * b * b / r
            for e in range(d):
                diff = c * (R[i, e] - R[l, e])
                JG[i, e] += diff
                JG[l, e] -= diff


@nb.njit(cache=True)
def gradient(R, p, cache, i, out):
    """∇_i ln ψ(R) into ``out`` (d,), from the cache."""
    N, d = R.shape
    n = N // 2
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N, d)
    for e in range(d):
        g = JG[i, e]
        for j in range(n):
            g += DPHI[i, j, e] * T[i, j]
        out[e] = g


@nb.njit(cache=True)
def test_move(R, p, cache, i, r_new, grad_new):
    """ln|ψ(R')/ψ(R)| for electron i moved to ``r_new``; ∇_i ln ψ(R') into ``grad_new``.

    −inf when the determinant ratio is zero, or negative with ``reject_node_crossing`` (fixed node)."""
    N, d = R.shape
    n = N // 2
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N, d)
    orbitals_at(r_new, p, n, U, DU, LAP, False)
    q = det_ratio(T[i], U)
    META[0] = q
    if q == 0.0 or (p[P_REJECT] != 0.0 and q < 0.0):
        return -np.inf
    log_ratio = math.log(abs(q))
    for e in range(d):
        g = 0.0
        for j in range(n):
            g += DU[j, e] * T[i, j]
        grad_new[e] = g / q
    beta = p[P_BETA]
    for l in range(N):
        CO[l] = 0.0
        CN[l] = 0.0
        if l == i:
            continue
        a = pair_a(p, i, l, n)
        if a == 0.0:
            continue
        ro = distance(R, i, l)
        rn2 = 0.0
        for e in range(d):
            rn2 += (r_new[e] - R[l, e]) ** 2
        rn = math.sqrt(rn2)
        log_ratio += a * (rn / (1.0 + beta * rn) - ro / (1.0 + beta * ro))
        bo = 1.0 / (1.0 + beta * ro)
        bn = 1.0 / (1.0 + beta * rn)
        CO[l] = a * bo * bo / ro
        CN[l] = a * bn * bn / rn
        for e in range(d):
            grad_new[e] += CN[l] * (r_new[e] - R[l, e])
    return log_ratio


@nb.njit(cache=True)
def accept_move(R, p, cache, i, r_new, grad_new):
    """Commit the move tested last: Sherman–Morrison update of electron i's block, its orbital
    gradients, and the O(N) Jastrow-gradient updates of every other electron."""
    N, d = R.shape
    n = N // 2
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N, d)
    s = i // n
    sherman_morrison_row(T[s * n:(s + 1) * n], i - s * n, U, META[0])
    for j in range(n):
        for e in range(d):
            DPHI[i, j, e] = DU[j, e]
    for e in range(d):
        JG[i, e] = 0.0
    for l in range(N):
        if l == i:
            continue
        for e in range(d):
            # pair term of l with i: f'(r)/r (r_l − r_i)
            new = CN[l] * (R[l, e] - r_new[e])
            JG[l, e] += new - CO[l] * (R[l, e] - R[i, e])
            JG[i, e] -= new
    for e in range(d):
        R[i, e] = r_new[e]


@nb.njit(cache=True)
def local_energy(R, p, cache):
    """E_L(R) in E_h* (total). Rebuilds the cache first (exact; refreshes it)."""
    recompute(R, p, cache)
    N, d = R.shape
    n = N // 2
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = cache_views(cache, N, d)
    omega, beta = p[P_OMEGA], p[P_BETA]
    energy = 0.0
    for i in range(N):
        orbitals_at(R[i], p, n, U, DU, LAP, True)
        lap_d = 0.0
        for j in range(n):
            lap_d += LAP[j] * T[i, j]
        cross = 0.0
        jg2 = 0.0
        r2 = 0.0
        for e in range(d):
            g = 0.0
            for j in range(n):
                g += DU[j, e] * T[i, j]
            cross += g * JG[i, e]
            jg2 += JG[i, e] * JG[i, e]
            r2 += R[i, e] * R[i, e]
        energy += -0.5 * (lap_d + jg2 + 2.0 * cross) + 0.5 * omega * omega * r2
    interact = p[P_INTERACT] != 0.0
    for i in range(N):
        for l in range(i + 1, N):
            r = distance(R, i, l)
            a = pair_a(p, i, l, n)
            if a != 0.0:
                b = 1.0 / (1.0 + beta * r)
                energy -= a * (d - 1.0 - (3.0 - d) * beta * r) * b * b * b / r
            if interact:
                energy += 1.0 / r
    return energy


@nb.njit(cache=True)
def potential(R, p):
    """V(R) in E_h*: Σ_i ½ω² r_i², plus Σ_{i<j} 1/r_ij with the interaction on."""
    N = R.shape[0]
    omega = p[P_OMEGA]
    total = 0.0
    for i in range(N):
        for e in range(R.shape[1]):
            total += 0.5 * omega * omega * R[i, e] ** 2
        if p[P_INTERACT] != 0.0:
            for l in range(i + 1, N):
                total += 1.0 / distance(R, i, l)
    return total


KERNELS = Kernels(recompute=recompute, gradient=gradient, test_move=test_move, accept_move=accept_move,
                  local_energy=local_energy, log_psi=log_psi, other_drift_change=no_other_drift_change,
                  potential=potential)


@nb.njit(cache=True)
def log_psi_parameter_derivatives(configs, p, cache_size, out):
    """(∂ ln ψ/∂α, ∂ ln ψ/∂β) of every configuration (M, N, d) into out (M, 2).

    The orbitals are functions of √(αω) r alone, so ln D(α; R) = ln D(1; √α R) and ∂_α ln D = Σ_i r_i·∇_i ln D/(2α).
    Σ_i r_i·∇_i ln D is that sum for ln ψ (the kernels' gradients) less the Jastrow factor's, Σ_pairs r J'(r)
    = Σ a r/(1 + βr)² (Euler's relation for functions of the pair distances); ∂_β J = −Σ a r²/(1 + βr)²."""
    M, N, d = configs.shape
    n = N // 2
    alpha, beta = p[P_ALPHA], p[P_BETA]
    cache = np.zeros(cache_size)
    g = np.empty(d)
    for m in range(M):
        R = configs[m]
        recompute(R, p, cache)
        euler = 0.0
        for i in range(N):
            gradient(R, p, cache, i, g)
            for k in range(d):
                euler += R[i, k] * g[k]
        d_beta = 0.0
        for i in range(N):
            for l in range(i + 1, N):
                a = pair_a(p, i, l, n)
                if a != 0.0:
                    r = distance(R, i, l)
                    b = 1.0 / (1.0 + beta * r)
                    euler -= a * r * b * b
                    d_beta -= a * r * r * b * b
        out[m, 0] = euler / (2.0 * alpha)
        out[m, 1] = d_beta


class QuantumDot(System):
    """N electrons in a 2D or 3D harmonic trap: Hermite-function Slater determinants × Padé–Jastrow."""

    name = "qdot"
    title = "electrons in a 2D or 3D harmonic quantum dot: Slater–Padé–Jastrow (FYS4411 project 2)"
    description = ("Closed-shell electrons in a harmonic trap ½ω²r² with Coulomb repulsion, in effective atomic "
                   "units (lengths in a₀*, energies in E_h*, time in ħ/E_h*); reports the total energy as "
                   "'energy'. ψ_T: Slater determinants of Hermite functions of frequency αω times a Padé–Jastrow "
                   "factor with the cusp-correct a. DMC is fixed-node.")
    Params = QuantumDotParams
    energy_key = ENERGY_KEY
    energy_unit = ENERGY_UNIT
    length_unit = "a₀*"
    time_unit = "ħ/E_h*"
    kernels = KERNELS
    # GPU sampler: one thread per walker, the kernels above compiled as CUDA device functions (the atoms' design)
    capabilities = Capabilities(fixed_node=True, gpu="qmckit.backends.cuda_qdot:CudaQdotSweeper",
                                parameter_derivatives=("alpha", "beta"))
    # no interaction, α = 1: the oscillator's Slater determinants are exact
    exact_cases = tuple((dict(n=n, dim=d, omega=w, alpha=1.0, interaction=False), noninteracting_energy(n, d, w))
                        for n, d, w in ((2, 2, 1.0), (6, 2, 1.0), (12, 2, 0.5), (2, 3, 1.0), (8, 3, 0.28)))
    examples = (dict(n=2, dim=2), dict(n=6, dim=2, alpha=0.9, beta=0.5), dict(n=8, dim=3, omega=0.5, beta=0.3),
                dict(n=12, dim=2, jastrow=False), dict(n=20, dim=3, omega=1.0, alpha=0.8, beta=0.2))

    def __init__(self, params: QuantumDotParams | None = None, *, reject_node_crossing: bool = False, **kwargs):
        super().__init__(params, **kwargs)
        self.reject_node_crossing = bool(reject_node_crossing)
        self.dim = self.params.dim

    def for_dmc(self) -> "QuantumDot":
        """The same dot with moves across a node of ψ_T rejected (fixed-node DMC)."""
        return QuantumDot(self.params, reject_node_crossing=True)

    @property
    def n_particles(self) -> int:
        return self.params.n

    @property
    def orbitals(self) -> list[tuple[int, int, int]]:
        """Quantum numbers (n_x, n_y, n_z) of the occupied orbitals of one spin."""
        p = self.params
        return shell_orbitals(p.dim, closed_shells(p.dim).index(p.n) + 1)

    @property
    def kernel_params(self) -> np.ndarray:
        p = self.params
        strength = float(p.interaction and p.jastrow)
        a_par, a_anti = 1.0 / (p.dim + 1), 1.0 / (p.dim - 1)
        header = [p.omega, p.alpha, p.beta, strength * a_par, strength * a_anti, float(p.interaction),
                  float(self.reject_node_crossing)]
        return np.array(header + [float(q) for orbital in self.orbitals for q in orbital])

    def cache_size(self) -> int:
        return cache_size_for(self.params.n, self.params.dim)

    def log_psi_parameter_derivatives(self, configs: np.ndarray, names: tuple) -> np.ndarray:
        """(M, P) ∂ ln ψ_T/∂α (dimensionless) and ∂ ln ψ_T/∂β (a₀*) at configurations (M, N, d), for ``names``."""
        out = np.empty((len(configs), 2))
        log_psi_parameter_derivatives(np.ascontiguousarray(configs, dtype=np.float64), self.kernel_params,
                                      self.cache_size(), out)
        return out[:, [("alpha", "beta").index(name) for name in names]]

    def exact_noninteracting_energy(self) -> float:
        """2 Σ (|n| + d/2) ω in E_h*: the energy without interaction (exact at α = 1)."""
        p = self.params
        return noninteracting_energy(p.n, p.dim, p.omega)

    def density_range(self) -> float:
        """A radius (a₀*) that holds the cloud: the outer shell's classical turning point plus 2 widths."""
        p = self.params
        shells = closed_shells(p.dim).index(p.n) + 1
        return math.sqrt((2 * shells + p.dim) / (p.alpha * p.omega)) + 2.0 / math.sqrt(p.alpha * p.omega)

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """(W, N, d): Gaussian with the width of the outer shell (equilibration does the rest)."""
        p = self.params
        width = math.sqrt((closed_shells(p.dim).index(p.n) + 1) / (p.alpha * p.omega))
        return rng.normal(size=(n_walkers, p.n, p.dim)) * width
