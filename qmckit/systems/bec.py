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
# a hard-core overlap is signalled with -inf.
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
@nb.njit(cache=True, fastmath=_FASTMATH)
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


@nb.njit(cache=True, fastmath=_FASTMATH)
def recompute(R, p, cache):
    """Fill the cache from scratch: ∇_i ln ψ for all i (O(N²))."""
    alpha, lam, a = p[0], p[1], p[2]
    N = R.shape[0]
    for i in range(N):
        cache[3 * i] = -2.0 * alpha * R[i, 0]
        cache[3 * i + 1] = -2.0 * alpha * R[i, 1]
        cache[3 * i + 2] = -2.0 * alpha * lam * R[i, 2]
    if a > 0.0:
        for i in range(N):
            gx = 0.0
            gy = 0.0
            gz = 0.0
            for j in range(i + 1, N):
                dx = R[i, 0] - R[j, 0]
                dy = R[i, 1] - R[j, 1]
                dz = R[i, 2] - R[j, 2]
                r = math.sqrt(dx * dx + dy * dy + dz * dz)
                c = a / (r * r * (r - a))  # u'(r)/r
                gx += c * dx
                gy += c * dy
                gz += c * dz
                cache[3 * j] -= c * dx
                cache[3 * j + 1] -= c * dy
                cache[3 * j + 2] -= c * dz
            cache[3 * i] += gx
            cache[3 * i + 1] += gy
            cache[3 * i + 2] += gz


@nb.njit(cache=True, inline="always")
def gradient(R, p, cache, i, out):
    """∇_i ln ψ(R) of particle ``i`` (from the cache) into ``out`` (3,)."""
    out[0] = cache[3 * i]
    out[1] = cache[3 * i + 1]
    out[2] = cache[3 * i + 2]


@nb.njit(cache=True, fastmath=_FASTMATH, inline="always")
def _pairs_test(R, i, x, y, z, a, cache, N, j0, j1, acc):
    # acc: [ratio of f-products, gx, gy, gz, overlap flag]
    ratio = acc[0]
    gx = acc[1]
    gy = acc[2]
    gz = acc[3]
    overlap = acc[4]
    xo = R[i, 0]
    yo = R[i, 1]
    zo = R[i, 2]
    for j in range(j0, j1):
        dxo = xo - R[j, 0]
        dyo = yo - R[j, 1]
        dzo = zo - R[j, 2]
        ro = math.sqrt(dxo * dxo + dyo * dyo + dzo * dzo)
        dxn = x - R[j, 0]
        dyn = y - R[j, 1]
        dzn = z - R[j, 2]
        rn = math.sqrt(dxn * dxn + dyn * dyn + dzn * dzn)
        cn = a / (rn * rn * (rn - a))
        cache[3 * N + j] = a / (ro * ro * (ro - a))
        cache[4 * N + j] = cn
        ratio *= (ro * (rn - a)) / (rn * (ro - a))  # f(rn)/f(ro)
        gx += cn * dxn
        gy += cn * dyn
        gz += cn * dzn
        overlap = max(overlap, 1.0 if rn <= a else 0.0)
    acc[0] = ratio
    acc[1] = gx
    acc[2] = gy
    acc[3] = gz
    acc[4] = overlap


@nb.njit(cache=True, fastmath=_FASTMATH)
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
        acc = np.empty(5)
        acc[0] = 1.0
        acc[1] = 0.0
        acc[2] = 0.0
        acc[3] = 0.0
        acc[4] = 0.0
        _pairs_test(R, i, x, y, z, a, cache, N, 0, i, acc)
        _pairs_test(R, i, x, y, z, a, cache, N, i + 1, N, acc)
        cache[3 * N + i] = 0.0
        cache[4 * N + i] = 0.0
        if acc[4] > 0.0:
            return -np.inf
        log_ratio += math.log(acc[0])
        grad_new[0] += acc[1]
        grad_new[1] += acc[2]
        grad_new[2] += acc[3]
    return log_ratio


@nb.njit(cache=True, fastmath=_FASTMATH)
def accept_move(R, p, cache, i, r_new, grad_new):
    """Move particle ``i`` to ``r_new`` and update every cached gradient in O(N)."""
    a = p[2]
    N = R.shape[0]
    if a > 0.0:
        xo, yo, zo = R[i, 0], R[i, 1], R[i, 2]
        x, y, z = r_new[0], r_new[1], r_new[2]
        for j in range(N):
            co = cache[3 * N + j]
            cn = cache[4 * N + j]
            # particle j's pair term with i is c·(r_j − r_i): remove the old, add the new
            cache[3 * j] += cn * (R[j, 0] - x) - co * (R[j, 0] - xo)
            cache[3 * j + 1] += cn * (R[j, 1] - y) - co * (R[j, 1] - yo)
            cache[3 * j + 2] += cn * (R[j, 2] - z) - co * (R[j, 2] - zo)
    for k in range(3):
        R[i, k] = r_new[k]
        cache[3 * i + k] = grad_new[k]


@nb.njit(cache=True, fastmath=_FASTMATH)
def local_energy(R, p, cache):
    """E_L(R) in ħω_⊥ for the whole walker (not per particle), recomputed from scratch in O(N²)."""
    alpha, lam, a = p[0], p[1], p[2]
    N = R.shape[0]
    g = np.empty((N, 3))
    pair_lap = np.zeros(N)
    potential = 0.0
    for i in range(N):
        g[i, 0] = -2.0 * alpha * R[i, 0]
        g[i, 1] = -2.0 * alpha * R[i, 1]
        g[i, 2] = -2.0 * alpha * lam * R[i, 2]
        potential += 0.5 * (R[i, 0] ** 2 + R[i, 1] ** 2 + lam * lam * R[i, 2] ** 2)
    if a > 0.0:
        for i in range(N):
            gx = 0.0
            gy = 0.0
            gz = 0.0
            lap = 0.0
            for j in range(i + 1, N):
                dx = R[i, 0] - R[j, 0]
                dy = R[i, 1] - R[j, 1]
                dz = R[i, 2] - R[j, 2]
                r = math.sqrt(dx * dx + dy * dy + dz * dz)
                du = a / (r * (r - a))  # u'(r)
                c = du / r
                gx += c * dx
                gy += c * dy
                gz += c * dz
                g[j, 0] -= c * dx
                g[j, 1] -= c * dy
                g[j, 2] -= c * dz
                lap += du * du
                pair_lap[j] += du * du
            g[i, 0] += gx
            g[i, 1] += gy
            g[i, 2] += gz
            pair_lap[i] += lap
    kinetic = N * alpha * (2.0 + lam)
    for i in range(N):
        kinetic += 0.5 * pair_lap[i] - 0.5 * (g[i, 0] ** 2 + g[i, 1] ** 2 + g[i, 2] ** 2)
    return kinetic + potential


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
