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

Cache layout (length 5N): ``[0, 3N)`` ∇_i ln ψ for every particle, kept up to date incrementally;
``[3N, 4N)`` and ``[4N, 5N)`` u'(r)/r of the moved particle with each other particle, before and
after the proposed move (scratch handed from ``test_move`` to ``accept_move``).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numba as nb
import numpy as np

from .protocol import SystemKernels

ENERGY_KEY = "energy_per_particle"
ENERGY_UNIT = "ħω_⊥"

# Reassociation lets LLVM vectorise the pair loops; no-NaN/Inf assumptions are left out because
# a hard-core overlap is signalled with -inf. error_model="numpy" drops the per-division
# zero check (it blocks vectorisation); no kernel divides by a zero distance.
_FASTMATH = {"reassoc", "contract", "arcp", "nsz"}


@dataclass(frozen=True)
class BosonParams:
    """Parameters of trapped hard-sphere bosons.

    n      number of bosons N (≥ 1)
    lam    trap anisotropy λ = ω_z/ω_⊥ (> 0); √8 ≈ 2.828 is the thesis's elliptic trap
    a      hard-sphere diameter = s-wave scattering length, in a_⊥ (≥ 0; 0 switches interactions off)
    alpha  variational parameter α of the Gaussian factor, in a_⊥⁻² (> 0)
    """

    n: int = 20
    lam: float = 1.0
    a: float = 0.00433
    alpha: float = 0.5

    def __post_init__(self):
        n = self.n
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be a positive integer number of bosons, got {n!r}")
        for name, low, strict in (("lam", 0.0, True), ("a", 0.0, False), ("alpha", 0.0, True)):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.floating, np.integer)) \
                    or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
            if (value <= low) if strict else (value < low):
                raise ValueError(f"{name} must be {'>' if strict else '≥'} {low:g}, got {value!r}")
            object.__setattr__(self, name, float(value))
        object.__setattr__(self, "n", int(n))

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


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH, inline="always")
def _pair_sums(R, i, a):
    """Σ_{j≠i} u'(r_ij) r̂_ij (3 numbers) and Σ_{j≠i} u'(r_ij)² for particle ``i``.

    The loop runs over every j and masks j = i instead of splitting the range: one branch-free
    loop from 0 is what LLVM vectorises (each pair is then visited from both ends, which costs
    less than a scalar loop over i < j).
    """
    N = R.shape[0]
    xi, yi, zi = R[i, 0], R[i, 1], R[i, 2]
    gx = 0.0
    gy = 0.0
    gz = 0.0
    lap = 0.0
    for j in range(N):
        dx = xi - R[j, 0]
        dy = yi - R[j, 1]
        dz = zi - R[j, 2]
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        r = r if j != i else 2.0 * a + 1.0  # any distance > a; the term is masked below
        du = a / (r * (r - a))  # u'(r)
        du = du if j != i else 0.0
        c = du / r
        gx += c * dx
        gy += c * dy
        gz += c * dz
        lap += du * du
    return gx, gy, gz, lap


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def recompute(R, p, cache):
    """Fill the cache from scratch: ∇_i ln ψ for all i (O(N²))."""
    alpha, lam, a = p[0], p[1], p[2]
    N = R.shape[0]
    for i in range(N):
        cache[3 * i] = -2.0 * alpha * R[i, 0]
        cache[3 * i + 1] = -2.0 * alpha * R[i, 1]
        cache[3 * i + 2] = -2.0 * alpha * lam * R[i, 2]
        if a > 0.0:
            gx, gy, gz, _ = _pair_sums(R, i, a)
            cache[3 * i] += gx
            cache[3 * i + 1] += gy
            cache[3 * i + 2] += gz


@nb.njit(cache=True, inline="always")
def gradient(R, p, cache, i, out):
    """∇_i ln ψ(R) of particle ``i`` (from the cache) into ``out`` (3,)."""
    out[0] = cache[3 * i]
    out[1] = cache[3 * i + 1]
    out[2] = cache[3 * i + 2]


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def _pair_move(R, i, x, y, z, a, c_old, c_new):
    """Pair part of moving particle ``i`` to (x, y, z): Π_j f(r'_ij)/f(r_ij), Σ_j u'(r'_ij) r̂'_ij,
    the number of overlaps, and u'(r)/r before/after into ``c_old``/``c_new`` (N,).

    Kept apart from ``test_move`` with the new position as scalars: that is the form LLVM
    vectorises (with ``r_new`` read from an array inside the same function it does not).
    j = i is masked branch-free: it gets the same dummy distance d > a before and after (ratio
    factor 1, no false overlap), its gradient term is subtracted after the loop, and its
    c_old/c_new entries are junk that ``accept_move`` overwrites.
    """
    N = R.shape[0]
    xo, yo, zo = R[i, 0], R[i, 1], R[i, 2]
    d_self = 2.0 * a + 1.0
    d_self2 = d_self * d_self
    ratio = 1.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    overlaps = 0.0
    for j in range(N):
        dxo = xo - R[j, 0]
        dyo = yo - R[j, 1]
        dzo = zo - R[j, 2]
        dxn = x - R[j, 0]
        dyn = y - R[j, 1]
        dzn = z - R[j, 2]
        ro2 = dxo * dxo + dyo * dyo + dzo * dzo
        other = 1.0 if ro2 > 0.0 else 0.0  # 0 only for j = i: distinct bosons never coincide
        ro = math.sqrt(ro2 + (1.0 - other) * d_self2)
        rn = math.sqrt(other * (dxn * dxn + dyn * dyn + dzn * dzn) + (1.0 - other) * d_self2)
        # u'(r)/r = a/(r²(r − a)) before and after the move, and f(rn)/f(ro), from ONE division
        # (divisions, not square roots, bound this loop): with A = rn(rn − a), B = ro(ro − a)
        # and q = 1/(rn² A ro² B): cn = a q rn ro² B, co = a q ro rn² A, f(rn)/f(ro) = q A² ro⁴.
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
        ratio, gx, gy, gz, overlaps = _pair_move(R, i, x, y, z, a, cache[3 * N: 4 * N], cache[4 * N: 5 * N])
        if overlaps > 0.0:
            return -np.inf
        log_ratio += math.log(ratio)
        grad_new[0] += gx
        grad_new[1] += gy
        grad_new[2] += gz
    return log_ratio


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def accept_move(R, p, cache, i, r_new, grad_new):
    """Move particle ``i`` to ``r_new`` and update every cached gradient in O(N)."""
    a = p[2]
    N = R.shape[0]
    if a > 0.0:
        _pair_accept(R, i, r_new[0], r_new[1], r_new[2], cache[: 3 * N].reshape((N, 3)),
                     cache[3 * N: 4 * N], cache[4 * N: 5 * N])
    for k in range(3):
        R[i, k] = r_new[k]
        cache[3 * i + k] = grad_new[k]


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def _pair_accept(R, i, x, y, z, grad, c_old, c_new):
    # particle j's pair term with i is c·(r_j − r_i): remove the old one, add the new one
    # (j = i gets junk here; accept_move then overwrites its gradient)
    xo, yo, zo = R[i, 0], R[i, 1], R[i, 2]
    for j in range(R.shape[0]):
        co = c_old[j]
        cn = c_new[j]
        grad[j, 0] += cn * (R[j, 0] - x) - co * (R[j, 0] - xo)
        grad[j, 1] += cn * (R[j, 1] - y) - co * (R[j, 1] - yo)
        grad[j, 2] += cn * (R[j, 2] - z) - co * (R[j, 2] - zo)


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def local_energy(R, p, cache):
    """E_L(R) in ħω_⊥ for the whole walker (not per particle), recomputed from scratch in O(N²)."""
    alpha, lam, a = p[0], p[1], p[2]
    N = R.shape[0]
    energy = N * alpha * (2.0 + lam)
    for i in range(N):
        x, y, z = R[i, 0], R[i, 1], R[i, 2]
        gx = -2.0 * alpha * x
        gy = -2.0 * alpha * y
        gz = -2.0 * alpha * lam * z
        if a > 0.0:
            px, py, pz, lap = _pair_sums(R, i, a)
            gx += px
            gy += py
            gz += pz
            energy += 0.5 * lap
        energy += 0.5 * (x * x + y * y + lam * lam * z * z) - 0.5 * (gx * gx + gy * gy + gz * gz)
    return energy


KERNELS = SystemKernels(recompute=recompute, gradient=gradient, test_move=test_move,
                          accept_move=accept_move, local_energy=local_energy, log_psi=log_psi)


class TrappedBosons:
    """The system object the drivers use: parameters, kernels and a sensible starting ensemble."""

    name = "bec"
    dim = 3
    energy_key = ENERGY_KEY
    energy_unit = ENERGY_UNIT
    kernels = KERNELS

    def __init__(self, params: BosonParams | None = None, **kwargs):
        self.params = params if params is not None else BosonParams(**kwargs)

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
        return 5 * self.params.n

    def energy_scale(self) -> float:
        """Divide walker energies by this to report ``energy_per_particle``."""
        return float(self.params.n)

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """Positions (W, N, 3) drawn from the non-interacting |ψ_T|², overlapping bosons redrawn.

        Redrawing is fine here: it only chooses a starting point, equilibration follows.
        """
        p = self.params
        sigma = np.array([1.0, 1.0, 1.0 / math.sqrt(p.lam)]) / math.sqrt(4.0 * p.alpha)
        out = rng.normal(size=(n_walkers, p.n, 3)) * sigma
        if p.a == 0.0 or p.n < 2:
            return out
        upper = np.triu(np.ones((p.n, p.n), dtype=bool), 1)
        for w in range(n_walkers):
            for _ in range(10_000):
                dist = np.linalg.norm(out[w, :, None, :] - out[w, None, :, :], axis=-1)
                bad = np.unique(np.nonzero((dist <= p.a) & upper)[1])
                if bad.size == 0:
                    break
                out[w, bad] = rng.normal(size=(bad.size, 3)) * sigma
            else:
                raise ValueError(f"a = {p.a} is too large to place {p.n} bosons in this trap")
        return out
