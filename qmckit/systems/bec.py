"""Hard-sphere bosons in an elliptic harmonic trap (study 002, Nikolaisen 2011; Nilsen et al. 2005).

Units: lengths in a_⊥ = (ħ/mω_⊥)^½, energies in ħω_⊥.

    H = Σ_i [−½∇_i² + ½(x_i² + y_i² + λ² z_i²)] + Σ_{i<j} V(r_ij),  V = ∞ for r ≤ a, 0 otherwise
    ψ_T(R) = Π_i exp(−α(x_i² + y_i² + λ z_i²)) · Π_{i<j} f(r_ij),  f(r) = 1 − a/r (r > a), 0 (r ≤ a)

λ is the trap anisotropy ω_z/ω_⊥ and enters ψ_T too (β = λ held fixed, as in the thesis).
With u = ln f:  u'(r) = a / (r (r − a)) and, because f solves the zero-energy two-body problem,
∇²u = −u'². The local energy is therefore O(N²) per configuration (doubt D3 of the notes):

    E_L = Σ_i [ α(2 + λ) + ½ Σ_{j≠i} u'(r_ij)² − ½ |∇_i ln ψ|² + ½(x_i² + y_i² + λ² z_i²) ]

Kernels follow the small protocol every continuum system implements (``R`` is one walker's
``(N, 3)`` positions, ``p`` the float64 parameter vector, ``cache`` the walker's cache row):
``recompute``, ``gradient`` (of ln ψ for one particle, from the cache), ``test_move``
(log ψ ratio for one moved particle, gradient at the new point), ``accept_move``,
``local_energy`` and ``log_psi``.

Cache layout (length 8N, structure of arrays so that pair loops read unit-stride (N,) vectors):
``[0, 3N)`` the x, y and z components of ∇_i ln ψ for every particle, kept up to date
incrementally; ``[3N, 4N)`` and ``[4N, 5N)`` u'(r)/r of the moved particle with each other
particle before and after the proposed move (scratch handed from ``test_move`` to
``accept_move``); ``[5N, 8N)`` copies of the x, y and z coordinates.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numba as nb
import numpy as np

from .protocol import Capabilities, Kernels, System, parameter, validate

ENERGY_KEY = "energy_per_particle"
ENERGY_UNIT = "ħω_⊥"

# Reassociation lets LLVM vectorise the pair loops; no-NaN/Inf assumptions are left out because
# a hard-core overlap is signalled with -inf. error_model="numpy" drops the per-division
# zero check (it blocks vectorisation); no kernel divides by a zero distance.
_FASTMATH = {"reassoc", "contract", "arcp", "nsz"}


@dataclass(frozen=True)
class BosonParams:
    """Parameters of trapped hard-sphere bosons (the metadata of each field says unit, bounds and help)."""

    n: int = parameter(20, help="number of bosons N", low=1, typical=(1, 500), symbol="N")
    lam: float = parameter(1.0, help="trap anisotropy λ = ω_z/ω_⊥ (the thesis's elliptic trap is √8 ≈ 2.8284)",
                           low=0.0, low_open=True, typical=(0.1, 10.0), symbol="λ")
    a: float = parameter(0.00433, unit="a_⊥", help="hard-sphere diameter = s-wave scattering length "
                         "(0.00433 = a_Rb; 0 switches the interaction off)", low=0.0, typical=(0.0, 0.5), symbol="a")
    alpha: float = parameter(0.495, unit="a_⊥⁻²", help="variational α of the Gaussian factor exp(−α(x² + y² + λz²)) "
                             "(study 002's B1 value; ½ is exact without interaction)", low=0.0, low_open=True,
                             variational=True, typical=(0.1, 2.0), symbol="α")

    def __post_init__(self):
        validate(self)

    def as_dict(self) -> dict:
        return asdict(self)


def noninteracting_energy_per_particle(alpha: float, lam: float) -> float:
    """Exact VMC energy per particle for a = 0: (2 + λ)(α/2 + 1/(8α)) ħω_⊥ (λ in both ψ and trap)."""
    return (2.0 + lam) * (alpha / 2.0 + 1.0 / (8.0 * alpha))


def exact_ground_state_per_particle(lam: float) -> float:
    """Non-interacting ground-state energy per particle, (2 + λ)/2 ħω_⊥."""
    return (2.0 + lam) / 2.0


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def log_psi(R, p):
    """ln ψ_T(R); −inf when two bosons overlap."""
    alpha, lam, a = p[0], p[1], p[2]
    N = R.shape[0]
    total = 0.0
    for i in range(N):
        total -= alpha * (R[i, 0] ** 2 + R[i, 1] ** 2 + lam * R[i, 2] ** 2)
    if a > 0.0:
        for i in range(N):
            for j in range(i + 1, N):
                r = math.sqrt((R[i, 0] - R[j, 0]) ** 2 + (R[i, 1] - R[j, 1]) ** 2 + (R[i, 2] - R[j, 2]) ** 2)
                if r <= a:
                    return -np.inf
                total += math.log(1.0 - a / r)
    return total


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def _pair_sums(X, Y, Z, i, a):
    """Σ_{j≠i} u'(r_ij) r̂_ij (3 numbers) and Σ_{j≠i} u'(r_ij)² for particle ``i``.

    X, Y, Z are the coordinates as separate (N,) arrays: unit-stride loads are what make this
    loop vectorise well. It runs over every j and masks j = i branch-free (a zero distance gets
    a dummy value and a zero weight) instead of splitting the range; each pair is then visited
    from both ends, which still costs less than a scalar loop over i < j.
    """
    xi, yi, zi = X[i], Y[i], Z[i]
    d_self2 = (2.0 * a + 1.0) ** 2
    gx = 0.0
    gy = 0.0
    gz = 0.0
    lap = 0.0
    for j in range(X.shape[0]):
        dx = xi - X[j]
        dy = yi - Y[j]
        dz = zi - Z[j]
        r2 = dx * dx + dy * dy + dz * dz
        other = 1.0 if r2 > 0.0 else 0.0  # 0 only for j = i: distinct bosons never coincide
        r = math.sqrt(r2 + (1.0 - other) * d_self2)
        du = other * a / (r * (r - a))  # u'(r)
        c = du / r
        gx += c * dx
        gy += c * dy
        gz += c * dz
        lap += du * du
    return gx, gy, gz, lap


@nb.njit(cache=True, inline="always")
def _views(cache, N):
    """The cache row as named (N,) views: gradient components, pair scratch, coordinates."""
    return (cache[0:N], cache[N:2 * N], cache[2 * N:3 * N], cache[3 * N:4 * N], cache[4 * N:5 * N],
            cache[5 * N:6 * N], cache[6 * N:7 * N], cache[7 * N:8 * N])


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def recompute(R, p, cache):
    """Fill the cache from scratch: coordinates copied from R, ∇_i ln ψ for all i (O(N²))."""
    alpha, lam, a = p[0], p[1], p[2]
    N = R.shape[0]
    gx, gy, gz, c_old, c_new, X, Y, Z = _views(cache, N)
    for i in range(N):
        X[i] = R[i, 0]
        Y[i] = R[i, 1]
        Z[i] = R[i, 2]
        c_old[i] = 0.0
        c_new[i] = 0.0
    for i in range(N):
        gx[i] = -2.0 * alpha * X[i]
        gy[i] = -2.0 * alpha * Y[i]
        gz[i] = -2.0 * alpha * lam * Z[i]
        if a > 0.0:
            px, py, pz, _ = _pair_sums(X, Y, Z, i, a)
            gx[i] += px
            gy[i] += py
            gz[i] += pz


@nb.njit(cache=True, inline="always")
def gradient(R, p, cache, i, out):
    """∇_i ln ψ(R) of particle ``i`` (from the cache) into ``out`` (3,)."""
    N = R.shape[0]
    out[0] = cache[i]
    out[1] = cache[N + i]
    out[2] = cache[2 * N + i]


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def _pair_move(X, Y, Z, i, x, y, z, a, c_old, c_new):
    """Pair part of moving particle ``i`` to (x, y, z): Π_j f(r'_ij)/f(r_ij), Σ_j u'(r'_ij) r̂'_ij,
    the number of overlaps, and u'(r)/r before/after into ``c_old``/``c_new`` (N,).

    j = i is masked branch-free (which keeps the loop vectorisable): it gets the same dummy
    distance d > a before and after (ratio factor 1, no false overlap), its gradient term is
    subtracted after the loop, and its c_old/c_new entries are junk that ``accept_move`` ignores.
    """
    xo, yo, zo = X[i], Y[i], Z[i]
    d_self = 2.0 * a + 1.0
    d_self2 = d_self * d_self
    ratio = 1.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    overlaps = 0.0
    for j in range(X.shape[0]):
        dxo = xo - X[j]
        dyo = yo - Y[j]
        dzo = zo - Z[j]
        dxn = x - X[j]
        dyn = y - Y[j]
        dzn = z - Z[j]
        ro2 = dxo * dxo + dyo * dyo + dzo * dzo
        other = 1.0 if ro2 > 0.0 else 0.0  # 0 only for j = i: distinct bosons never coincide
        ro = math.sqrt(ro2 + (1.0 - other) * d_self2)
        rn = math.sqrt(other * (dxn * dxn + dyn * dyn + dzn * dzn) + (1.0 - other) * d_self2)
        # u'(r)/r = a/(r²(r − a)) before and after the move, and f(rn)/f(ro), from ONE division
        # (divisions, more than square roots, bound this loop): with A = rn(rn − a),
        # B = ro(ro − a) and q = 1/(rn² A ro² B): cn = a q rn ro² B, co = a q ro rn² A and
        # f(rn)/f(ro) = q A² ro⁴.
        big_a = rn * (rn - a)
        big_b = ro * (ro - a)
        ro_sq = ro * ro
        q = 1.0 / (rn * rn * big_a * ro_sq * big_b)
        cn = a * q * rn * ro_sq * big_b
        c_old[j] = a * q * ro * rn * rn * big_a
        c_new[j] = cn
        ratio *= q * big_a * big_a * ro_sq * ro_sq
        gx += cn * dxn
        gy += cn * dyn
        gz += cn * dzn
        overlaps += 1.0 if rn <= a else 0.0  # a sum, unlike max, vectorises
    c_self = a / (d_self2 * (d_self - a))
    return ratio, gx - c_self * (x - xo), gy - c_self * (y - yo), gz - c_self * (z - zo), overlaps


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def test_move(R, p, cache, i, r_new, grad_new):
    """ln |ψ(R')/ψ(R)| for moving particle ``i`` to ``r_new``; −inf if it would overlap.

    Writes ∇_i ln ψ(R') into ``grad_new`` (3,) and leaves the pair scratch for ``accept_move``.
    O(N): each other particle is one pair evaluation (old and new distance).
    """
    alpha, lam, a = p[0], p[1], p[2]
    N = R.shape[0]
    x, y, z = r_new[0], r_new[1], r_new[2]
    log_ratio = -alpha * ((x * x + y * y + lam * z * z)
                          - (R[i, 0] ** 2 + R[i, 1] ** 2 + lam * R[i, 2] ** 2))
    grad_new[0] = -2.0 * alpha * x
    grad_new[1] = -2.0 * alpha * y
    grad_new[2] = -2.0 * alpha * lam * z
    if a > 0.0:
        _, _, _, c_old, c_new, X, Y, Z = _views(cache, N)
        ratio, gx, gy, gz, overlaps = _pair_move(X, Y, Z, i, x, y, z, a, c_old, c_new)
        if overlaps > 0.0:
            return -np.inf
        log_ratio += math.log(ratio)
        grad_new[0] += gx
        grad_new[1] += gy
        grad_new[2] += gz
    return log_ratio


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def _pair_accept(X, Y, Z, i, x, y, z, gx, gy, gz, c_old, c_new):
    # particle j's pair term with i is c·(r_j − r_i): remove the old one, add the new one
    # (j = i gets junk here; accept_move then overwrites its gradient)
    xo, yo, zo = X[i], Y[i], Z[i]
    for j in range(X.shape[0]):
        co = c_old[j]
        cn = c_new[j]
        gx[j] += cn * (X[j] - x) - co * (X[j] - xo)
        gy[j] += cn * (Y[j] - y) - co * (Y[j] - yo)
        gz[j] += cn * (Z[j] - z) - co * (Z[j] - zo)


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def accept_move(R, p, cache, i, r_new, grad_new):
    """Move particle ``i`` to ``r_new`` and update every cached gradient in O(N)."""
    N = R.shape[0]
    gx, gy, gz, c_old, c_new, X, Y, Z = _views(cache, N)
    if p[2] > 0.0:
        _pair_accept(X, Y, Z, i, r_new[0], r_new[1], r_new[2], gx, gy, gz, c_old, c_new)
    R[i, 0] = X[i] = r_new[0]
    R[i, 1] = Y[i] = r_new[1]
    R[i, 2] = Z[i] = r_new[2]
    gx[i] = grad_new[0]
    gy[i] = grad_new[1]
    gz[i] = grad_new[2]


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def local_energy(R, p, cache):
    """E_L(R) in ħω_⊥ for the whole walker (not per particle), from the positions alone, O(N²)."""
    alpha, lam, a = p[0], p[1], p[2]
    N = R.shape[0]
    X = np.ascontiguousarray(R[:, 0])
    Y = np.ascontiguousarray(R[:, 1])
    Z = np.ascontiguousarray(R[:, 2])
    energy = N * alpha * (2.0 + lam)
    for i in range(N):
        x, y, z = X[i], Y[i], Z[i]
        gx = -2.0 * alpha * x
        gy = -2.0 * alpha * y
        gz = -2.0 * alpha * lam * z
        if a > 0.0:
            px, py, pz, lap = _pair_sums(X, Y, Z, i, a)
            gx += px
            gy += py
            gz += pz
            energy += 0.5 * lap
        energy += 0.5 * (x * x + y * y + lam * lam * z * z) - 0.5 * (gx * gx + gy * gy + gz * gz)
    return energy


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def other_drift_change(R, p, cache, i, r_new, dt):
    """(Δt/2) Σ_{j≠i} (|∇_j ln ψ(R)|² − |∇_j ln ψ(R')|²) for the move just tested.

    The extra factor of study 002's all-particle Green's function (its doubt D1), with
    F = 2∇ ln ψ and D = ½: exp((DΔt/4) Σ_{j≠i} (|F_j|² − |F'_j|²)). Exact sampling never uses it.
    """
    N = R.shape[0]
    gx, gy, gz, c_old, c_new, X, Y, Z = _views(cache, N)
    x, y, z = r_new[0], r_new[1], r_new[2]
    xo, yo, zo = X[i], Y[i], Z[i]
    total = 0.0
    for j in range(N):
        if j == i:
            continue
        hx = gx[j] + c_new[j] * (X[j] - x) - c_old[j] * (X[j] - xo)
        hy = gy[j] + c_new[j] * (Y[j] - y) - c_old[j] * (Y[j] - yo)
        hz = gz[j] + c_new[j] * (Z[j] - z) - c_old[j] * (Z[j] - zo)
        total += gx[j] ** 2 + gy[j] ** 2 + gz[j] ** 2 - (hx * hx + hy * hy + hz * hz)
    return 0.5 * dt * total


@nb.njit(cache=True)
def _place_bosons(out, sigma, a, seed):
    """Fill ``out`` (W, N, 3) with Gaussian positions (widths ``sigma``) free of overlaps; False if
    some boson could not be placed in 10⁵ tries."""
    np.random.seed(seed)
    a2 = a * a
    for w in range(out.shape[0]):
        for i in range(out.shape[1]):
            placed = False
            x = y = z = 0.0
            for _ in range(100_000):
                x = np.random.normal() * sigma[0]
                y = np.random.normal() * sigma[1]
                z = np.random.normal() * sigma[2]
                placed = True
                for j in range(i):
                    if (x - out[w, j, 0]) ** 2 + (y - out[w, j, 1]) ** 2 + (z - out[w, j, 2]) ** 2 <= a2:
                        placed = False
                        break
                if placed:
                    break
            if not placed:
                return False
            out[w, i, 0] = x
            out[w, i, 1] = y
            out[w, i, 2] = z
    return True


@nb.njit(cache=True)
def potential(R, p):
    """V(R) in ħω_⊥: the trap Σ_i ½(x_i² + y_i² + λ² z_i²), and +inf when two bosons overlap."""
    lam, a = p[1], p[2]
    N = R.shape[0]
    total = 0.0
    for i in range(N):
        total += 0.5 * (R[i, 0] ** 2 + R[i, 1] ** 2 + lam * lam * R[i, 2] ** 2)
        for j in range(i + 1, N):
            if (R[i, 0] - R[j, 0]) ** 2 + (R[i, 1] - R[j, 1]) ** 2 + (R[i, 2] - R[j, 2]) ** 2 <= a * a:
                return np.inf
    return total


KERNELS = Kernels(recompute=recompute, gradient=gradient, test_move=test_move, accept_move=accept_move,
                  local_energy=local_energy, log_psi=log_psi, other_drift_change=other_drift_change,
                  potential=potential)


class TrappedBosons(System):
    """The system object the drivers use: parameters, kernels and a sensible starting ensemble."""

    name = "bec"
    title = "hard-sphere bosons in an elliptic harmonic trap (study 002)"
    description = ("Trapped hard-sphere bosons. Lengths in a_⊥, energies in ħω_⊥, time in 1/ω_⊥; "
                   "reports energy_per_particle.")
    Params = BosonParams
    dim = 3
    energy_key = ENERGY_KEY
    energy_unit = ENERGY_UNIT
    length_unit = "a_⊥"
    time_unit = "1/ω_⊥"
    kernels = KERNELS
    capabilities = Capabilities(gpu="qmckit.backends.cuda_bec:CudaBosonSweeper", green_all=True,
                                parameter_derivatives=("alpha",))
    # a = 0 and α = ½: the Gaussian is the ground state, E/N = (2 + λ)/2
    exact_cases = ((dict(n=5, lam=1.0, a=0.0, alpha=0.5), 1.5), (dict(n=3, lam=2.8284, a=0.0, alpha=0.5), 2.4142))
    examples = (dict(n=7, lam=2.8284, a=0.433, alpha=0.45), dict(n=5, lam=1.0, a=0.1, alpha=0.7),
                dict(n=6, lam=1.0, a=0.0, alpha=0.6))

    def __repr__(self):
        p = self.params
        return f"TrappedBosons(n={p.n}, lam={p.lam:g}, a={p.a:g}, alpha={p.alpha:g})"

    @property
    def n_particles(self) -> int:
        return self.params.n

    @property
    def kernel_params(self) -> np.ndarray:
        p = self.params
        return np.array([p.alpha, p.lam, p.a])

    def cache_size(self) -> int:
        return 8 * self.params.n

    def density_range(self) -> float:
        """A histogram range that holds the cloud: five Gaussian widths 1/√(4α) of the x density."""
        return 5.0 / math.sqrt(4.0 * self.params.alpha)

    def log_psi_parameter_derivatives(self, configs: np.ndarray, names: tuple) -> np.ndarray:
        """(M, 1) ∂ ln ψ_T/∂α = −Σ_i (x_i² + y_i² + λ z_i²) (a_⊥²) at configurations (M, N, 3)."""
        x2 = configs[..., 0] ** 2 + configs[..., 1] ** 2 + self.params.lam * configs[..., 2] ** 2
        return -x2.sum(axis=-1)[:, None]

    def energy_scale(self) -> float:
        """Divide walker energies by this to report ``energy_per_particle``."""
        return float(self.params.n)

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """Positions (W, N, 3) drawn from the non-interacting |ψ_T|², each boson redrawn until it
        overlaps none placed before it (fine for a starting point: equilibration follows)."""
        p = self.params
        sigma = np.array([1.0, 1.0, 1.0 / math.sqrt(p.lam)]) / math.sqrt(4.0 * p.alpha)
        if p.a == 0.0 or p.n < 2:
            return rng.normal(size=(n_walkers, p.n, 3)) * sigma
        out = np.empty((n_walkers, p.n, 3))
        if not _place_bosons(out, sigma, p.a, int(rng.integers(2**62))):
            raise ValueError(f"a = {p.a} is too large to place {p.n} bosons in this trap")
        return out
