"""Liquid ⁴He in a periodic cubic box (study 004, Lutsyshyn's QL package; McMillan, Phys. Rev. 138, A442).

Units: lengths in Å, energies in K (k_B = 1), time in K⁻¹ (ħ = 1 K·K⁻¹), so ħ²/m = 12.1194 K Å².

    H = −(ħ²/2m) Σ_i ∇_i² + Σ_{i<j} V(r_ij)
    ψ_T = exp(Σ_{i<j} u(r_ij)),   u(r) = f(r) + f(L − r) − 2 f(L/2) for r < L/2, 0 beyond,
    f(r) = −½ (b/r)⁵ (Schiff–Verlet / McMillan; the ½ convention of 004, which puts the optimum at
    b ≈ 3.07 Å)

L = (N/ρ)^⅓ is the box side; r_ij is the minimum-image distance. The symmetrised u has u(L/2) =
u'(L/2) = 0, so ψ_T and its gradient are continuous where pairs leave the cut-off sphere and the
kinetic energy has no tail. V is the HFD-B(HE) ("Aziz-II") potential of Aziz, McCourt & Wong,
Mol. Phys. 61, 1487 (1987), cut at L/2 like u; the potential tail beyond L/2 (g = 1 there),

    V_tail/N = 2πρ ∫_{L/2}^∞ r² V(r) dr

is added to V and E when ``tail=True`` (the default). Study 004's sample-run values carry no tail
(its notes, §1.2), so reproducing them needs ``tail=False``.

Estimators (whole walker, K); u'  = (5/2) b⁵ (r⁻⁶ − (L−r)⁻⁶), u'' = −15 b⁵ (r⁻⁷ + (L−r)⁻⁷):

    ∇_i ln ψ = Σ_{j≠i} u'(r_ij) r̂_ij,           ∇_i² ln ψ = Σ_{j≠i} (u'' + 2u'/r)(r_ij)
    T_lap  = −(ħ²/4m) Σ_i ∇_i² ln ψ               (Laplacian form; 004's T)
    T_grad =  (ħ²/2m) Σ_i |∇_i ln ψ|²              (gradient form)
    E_L    =  V − (ħ²/2m) Σ_i (∇_i² ln ψ + |∇_i ln ψ|²) = V + 2 T_lap − T_grad

T_lap and T_grad agree in expectation (integration by parts; the symmetrised u leaves no boundary
term); E_L has the smallest variance of the three.

The kernels follow the protocol of :mod:`qmckit.systems.protocol`. Cache layout (length 8N, as for
the trapped bosons): ``[0, 3N)`` ∇_i ln ψ (x, y, z components), ``[3N, 5N)`` u'(r)/r of the moved
particle with every other particle before / after the proposed move, ``[5N, 8N)`` the coordinates.
Positions are wrapped into [0, L)³ when a move is accepted.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numba as nb
import numpy as np

from .protocol import Capabilities, Kernels, System, no_other_drift_change, parameter, validate

ENERGY_KEY = "energy_per_particle"
ENERGY_UNIT = "K"

HBAR2_OVER_M = 12.1194          # K Å², ⁴He (m = 4.0026 u); CODATA 2018 constants give 12.1193
EQUILIBRIUM_DENSITY = 0.02186   # Å⁻³, liquid ⁴He at T → 0 and saturated vapour pressure
POTENTIALS = ("hfdb", "none")

# HFD-B(HE), Aziz, McCourt & Wong, Mol. Phys. 61, 1487 (1987): ε/k_B (K), r_m (Å), A, α, β, C6, C8, C10, D
HFDB = (10.948, 2.963, 1.8443101e5, 10.43329537, -2.27965105, 1.36745214, 0.42123807, 0.17473318, 1.4826)

_FASTMATH = {"reassoc", "contract", "arcp", "nsz"}
_FAST_PAIRS = True  # full fastmath for the O(N) move loops (no inf/NaN reaches them): they vectorise


@dataclass(frozen=True)
class HeliumParams:
    """Parameters of bulk ⁴He in a cubic periodic box (metadata on each field)."""

    n: int = parameter(64, help="number of ⁴He atoms N", low=2, typical=(32, 1000), symbol="N")
    density: float = parameter(EQUILIBRIUM_DENSITY, unit="Å⁻³", help="number density ρ (0.02186: the equilibrium "
                               "liquid)", low=0.0, low_open=True, typical=(0.015, 0.03), symbol="ρ")
    b: float = parameter(3.07, unit="Å", help="McMillan parameter b of u = −½(b/r)⁵ (0 switches the Jastrow "
                         "factor off)", low=0.0, variational=True, typical=(2.5, 3.5), symbol="b")
    hbar2_over_m: float = parameter(HBAR2_OVER_M, unit="K Å²", help="ħ²/m (12.1194: ⁴He)", low=0.0, low_open=True, symbol="ħ²/m")
    potential: str = parameter("hfdb", help="pair potential: hfdb (Aziz HFD-B(HE), 'Aziz-II') or none (ideal gas)",
                               choices=POTENTIALS, symbol="potential")
    tail: bool = parameter(True, help="the potential tail correction beyond L/2 (study 004's sample run has none)", symbol="tail correction")

    def __post_init__(self):
        validate(self)

    @property
    def box(self) -> float:
        """Box side L = (N/ρ)^⅓ in Å."""
        return (self.n / self.density) ** (1.0 / 3.0)

    def as_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# the potential
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always")
def aziz_potential(r):
    """HFD-B(HE) pair potential V(r) in K at distance ``r`` in Å (scalar)."""
    eps, rm, a_rep, alpha, beta, c6, c8, c10, d = HFDB
    x = r / rm
    inv2 = 1.0 / (x * x)
    inv6 = inv2 * inv2 * inv2
    dispersion = inv6 * (c6 + inv2 * (c8 + inv2 * c10))
    if x < d:
        t = d / x - 1.0
        dispersion *= math.exp(-t * t)
    return eps * (a_rep * math.exp(-alpha * x + beta * x * x) - dispersion)


@nb.njit(cache=True)
def _aziz_array(r):
    out = np.empty(r.shape[0])
    for k in range(r.shape[0]):
        out[k] = aziz_potential(r[k])
    return out


def potential(r):
    """HFD-B(HE) V(r) in K for distances ``r`` in Å (scalar or array)."""
    values = _aziz_array(np.atleast_1d(np.asarray(r, dtype=np.float64)).ravel())
    return values.reshape(np.shape(r)) if np.ndim(r) else float(values[0])


def tail_per_particle(params: HeliumParams) -> float:
    """V_tail/N = 2πρ ∫_{L/2}^∞ r² V(r) dr in K (g = 1 beyond L/2); 0 without a potential.

    With r = r_c/t the integral is r_c³ ∫_0^1 V(r_c/t) t⁻⁴ dt, a smooth integrand (∝ t² as t → 0)
    that 200-point Gauss–Legendre integrates to machine precision.
    """
    if params.potential == "none":
        return 0.0
    r_cut = 0.5 * params.box
    t, w = np.polynomial.legendre.leggauss(200)
    t = 0.5 * (t + 1.0)
    integral = r_cut ** 3 * 0.5 * np.sum(w * potential(r_cut / t) / t ** 4)
    return 2.0 * math.pi * params.density * integral


# --------------------------------------------------------------------------------------------
# kernels; p = [L, b⁵, ħ²/m, potential (0/1), tail (K, whole walker)]
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always")
def _minimum_image(d, box):
    return d - box * math.floor(d / box + 0.5)


@nb.njit(cache=True, inline="always")
def _pair_vector(R, i, j, box):
    """Minimum-image r_i − r_j (three numbers) and its length."""
    dx = _minimum_image(R[i, 0] - R[j, 0], box)
    dy = _minimum_image(R[i, 1] - R[j, 1], box)
    dz = _minimum_image(R[i, 2] - R[j, 2], box)
    return dx, dy, dz, math.sqrt(dx * dx + dy * dy + dz * dz)


@nb.njit(cache=True, inline="always")
def _u(r, box, b5):
    """u(r) for r < L/2 (the caller cuts)."""
    s = 1.0 / r
    t = 1.0 / (box - r)
    h = 2.0 / box
    s2 = s * s
    t2 = t * t
    h2 = h * h
    return -0.5 * b5 * (s2 * s2 * s + t2 * t2 * t - 2.0 * h2 * h2 * h)


@nb.njit(cache=True, inline="always")
def _du_over_r(r, box, b5):
    """u'(r)/r for r < L/2."""
    s = 1.0 / r
    t = 1.0 / (box - r)
    s3 = s * s * s
    t3 = t * t * t
    return 2.5 * b5 * (s3 * s3 - t3 * t3) * s


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def log_psi(R, p):
    """ln ψ_T(R) = Σ_{i<j} u(r_ij)."""
    box, b5 = p[0], p[1]
    half = 0.5 * box
    N = R.shape[0]
    total = 0.0
    if b5 == 0.0:
        return total
    for i in range(N):
        for j in range(i + 1, N):
            r = _pair_vector(R, i, j, box)[3]
            if r < half:
                total += _u(r, box, b5)
    return total


@nb.njit(cache=True)
def _log_psi_each(configs, p, out):
    """ln ψ_T of every configuration (M, N, 3) into out (M,)."""
    for m in range(configs.shape[0]):
        out[m] = log_psi(configs[m], p)


@nb.njit(cache=True, inline="always")
def _views(cache, N):
    return (cache[0:N], cache[N:2 * N], cache[2 * N:3 * N], cache[3 * N:4 * N], cache[4 * N:5 * N],
            cache[5 * N:6 * N], cache[6 * N:7 * N], cache[7 * N:8 * N])


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def _gradient_of(X, Y, Z, i, box, b5):
    """∇_i ln ψ from the coordinates, O(N)."""
    half = 0.5 * box
    gx = 0.0
    gy = 0.0
    gz = 0.0
    for j in range(X.shape[0]):
        if j == i:
            continue
        dx = _minimum_image(X[i] - X[j], box)
        dy = _minimum_image(Y[i] - Y[j], box)
        dz = _minimum_image(Z[i] - Z[j], box)
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if r < half:
            c = _du_over_r(r, box, b5)
            gx += c * dx
            gy += c * dy
            gz += c * dz
    return gx, gy, gz


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def recompute(R, p, cache):
    """Fill the cache from scratch: coordinates and ∇_i ln ψ for every i (O(N²))."""
    box, b5 = p[0], p[1]
    N = R.shape[0]
    gx, gy, gz, c_old, c_new, X, Y, Z = _views(cache, N)
    for i in range(N):
        X[i] = R[i, 0]
        Y[i] = R[i, 1]
        Z[i] = R[i, 2]
        c_old[i] = 0.0
        c_new[i] = 0.0
    for i in range(N):
        gx[i], gy[i], gz[i] = _gradient_of(X, Y, Z, i, box, b5)


@nb.njit(cache=True, inline="always")
def gradient(R, p, cache, i, out):
    """∇_i ln ψ(R) (Å⁻¹) from the cache into ``out`` (3,)."""
    N = R.shape[0]
    out[0] = cache[i]
    out[1] = cache[N + i]
    out[2] = cache[2 * N + i]


@nb.njit(cache=True, inline="always")
def _u_and_c(r2, box, half2, b5):
    """u(r) and u'(r)/r from r², both 0 beyond L/2; branch-free (a select), so pair loops vectorise."""
    r = math.sqrt(r2)
    s = 1.0 / r
    t = 1.0 / (box - r)
    s2 = s * s
    t2 = t * t
    h = 2.0 / box
    h2 = h * h
    u = -0.5 * b5 * (s2 * s2 * s + t2 * t2 * t - 2.0 * h2 * h2 * h)
    c = 2.5 * b5 * (s2 * s2 * s2 - t2 * t2 * t2) * s
    inside = r2 < half2
    return (u if inside else 0.0), (c if inside else 0.0)


@nb.njit(cache=True, error_model="numpy", fastmath=_FAST_PAIRS)
def test_move(R, p, cache, i, r_new, grad_new):
    """ln ψ(R')/ψ(R) for moving atom ``i`` to ``r_new`` (O(N)); ∇_i ln ψ(R') into ``grad_new``.

    Leaves u'(r)/r of the old and new pairs in the cache's scratch for ``accept_move``. The loop
    runs over every j and gives j = i a dummy partner half a box away with weight 0 (branch-free).
    """
    box, b5 = p[0], p[1]
    half2 = 0.25 * box * box
    inv_box = 1.0 / box
    N = R.shape[0]
    _, _, _, c_old, c_new, X, Y, Z = _views(cache, N)
    x, y, z = r_new[0], r_new[1], r_new[2]
    xo, yo, zo = X[i], Y[i], Z[i]
    if b5 == 0.0:
        grad_new[0] = grad_new[1] = grad_new[2] = 0.0
        return 0.0
    log_ratio = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    for j in range(N):
        other = 1.0 if j != i else 0.0
        xj = X[j] if j != i else xo + 0.5 * box
        dx = xo - xj
        dy = yo - Y[j]
        dz = zo - Z[j]
        dx -= box * np.rint(dx * inv_box)
        dy -= box * np.rint(dy * inv_box)
        dz -= box * np.rint(dz * inv_box)
        uo, co = _u_and_c(dx * dx + dy * dy + dz * dz, box, half2, b5)
        dx = x - xj
        dy = y - Y[j]
        dz = z - Z[j]
        dx -= box * np.rint(dx * inv_box)
        dy -= box * np.rint(dy * inv_box)
        dz -= box * np.rint(dz * inv_box)
        # a coincidence (r = 0, probability zero) gets r² = 1e-300: u → −huge, the move is rejected
        un, cn = _u_and_c(max(dx * dx + dy * dy + dz * dz, 1e-300), box, half2, b5)
        cn *= other
        log_ratio += other * (un - uo)
        gx += cn * dx
        gy += cn * dy
        gz += cn * dz
        c_old[j] = other * co
        c_new[j] = cn
    grad_new[0] = gx
    grad_new[1] = gy
    grad_new[2] = gz
    return log_ratio


@nb.njit(cache=True, error_model="numpy", fastmath=_FAST_PAIRS)
def accept_move(R, p, cache, i, r_new, grad_new):
    """Move atom ``i`` to ``r_new`` (wrapped into the box) and update every cached gradient, O(N)."""
    box = p[0]
    inv_box = 1.0 / box
    N = R.shape[0]
    gx, gy, gz, c_old, c_new, X, Y, Z = _views(cache, N)
    x, y, z = r_new[0], r_new[1], r_new[2]
    xo, yo, zo = X[i], Y[i], Z[i]
    if p[1] != 0.0:
        # atom j's term from the pair (j, i) is −c (r_i − r_j): remove the old one, add the new one
        # (c_old[i] = c_new[i] = 0, so j = i is untouched)
        for j in range(N):
            co = c_old[j]
            cn = c_new[j]
            dxo = xo - X[j]
            dyo = yo - Y[j]
            dzo = zo - Z[j]
            dxn = x - X[j]
            dyn = y - Y[j]
            dzn = z - Z[j]
            gx[j] += co * (dxo - box * np.rint(dxo * inv_box)) - cn * (dxn - box * np.rint(dxn * inv_box))
            gy[j] += co * (dyo - box * np.rint(dyo * inv_box)) - cn * (dyn - box * np.rint(dyn * inv_box))
            gz[j] += co * (dzo - box * np.rint(dzo * inv_box)) - cn * (dzn - box * np.rint(dzn * inv_box))
    R[i, 0] = X[i] = x - box * math.floor(x / box)
    R[i, 1] = Y[i] = y - box * math.floor(y / box)
    R[i, 2] = Z[i] = z - box * math.floor(z / box)
    gx[i] = grad_new[0]
    gy[i] = grad_new[1]
    gz[i] = grad_new[2]


@nb.njit(cache=True, error_model="numpy", fastmath=_FASTMATH)
def energy_terms(R, p):
    """(V, T_lap, T_grad) of one configuration in K, whole walker; V includes the tail if on. O(N²)."""
    box, b5, hbar2_m, with_potential, tail = p[0], p[1], p[2], p[3], p[4]
    half = 0.5 * box
    N = R.shape[0]
    G = np.zeros((N, 3))
    potential_sum = 0.0
    lap = 0.0  # Σ_{i<j} (u'' + 2u'/r)
    for i in range(N):
        for j in range(i + 1, N):
            dx, dy, dz, r = _pair_vector(R, i, j, box)
            if r >= half:
                continue
            if with_potential != 0.0:
                potential_sum += aziz_potential(r)
            if b5 != 0.0:
                s = 1.0 / r
                t = 1.0 / (box - r)
                s2 = s * s
                t2 = t * t
                c = 2.5 * b5 * (s2 * s2 * s2 - t2 * t2 * t2) * s       # u'/r
                d2u = -15.0 * b5 * (s2 * s2 * s2 * s + t2 * t2 * t2 * t)  # u''
                lap += d2u + 2.0 * c
                G[i, 0] += c * dx
                G[i, 1] += c * dy
                G[i, 2] += c * dz
                G[j, 0] -= c * dx
                G[j, 1] -= c * dy
                G[j, 2] -= c * dz
    grad2 = 0.0
    for i in range(N):
        grad2 += G[i, 0] ** 2 + G[i, 1] ** 2 + G[i, 2] ** 2
    t_lap = -0.5 * hbar2_m * lap          # −(ħ²/4m) Σ_i ∇_i² ln ψ, Σ_i ∇_i² = 2 Σ_{i<j}
    t_grad = 0.5 * hbar2_m * grad2
    return potential_sum + tail, t_lap, t_grad


@nb.njit(cache=True)
def local_energy(R, p, cache):
    """E_L(R) = V + 2 T_lap − T_grad in K, whole walker, from the positions alone (O(N²))."""
    v, t_lap, t_grad = energy_terms(R, p)
    return v + 2.0 * t_lap - t_grad


@nb.njit(cache=True, parallel=True)
def measure_all(positions, p, out):
    """Per walker (E_L, V, T_lap, T_grad) in K (whole walker) into ``out`` (W, 4)."""
    for w in nb.prange(positions.shape[0]):
        v, t_lap, t_grad = energy_terms(positions[w], p)
        out[w, 0] = v + 2.0 * t_lap - t_grad
        out[w, 1] = v
        out[w, 2] = t_lap
        out[w, 3] = t_grad


@nb.njit(cache=True)
def total_potential(R, p):
    """V(R) in K: the pair potential cut at L/2, plus the tail correction when it is on."""
    return energy_terms(R, p)[0]


KERNELS = Kernels(recompute=recompute, gradient=gradient, test_move=test_move, accept_move=accept_move,
                  local_energy=local_energy, log_psi=log_psi, other_drift_change=no_other_drift_change,
                  potential=total_potential)


# --------------------------------------------------------------------------------------------
# structure: g(r) and S(k)
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, parallel=True)
def _pair_histograms(positions, box, r_max, out):
    W, N, _ = positions.shape
    bins = out.shape[1]
    scale = bins / r_max
    for w in nb.prange(W):
        R = positions[w]
        for i in range(N):
            for j in range(i + 1, N):
                k = int(_pair_vector(R, i, j, box)[3] * scale)
                if k < bins:
                    out[w, k] += 1.0


def pair_distribution(positions, box: float, bins: int = 100, r_max: float | None = None):
    """g(r) of configurations ``positions`` (W, N, 3) in a periodic box of side ``box`` (Å).

    Returns ``(r, g)``: bin centres in Å up to ``r_max`` (default L/2, where minimum-image distances
    are complete) and g normalised so that an ideal gas gives 1: the pair count of a shell divided
    by N(N−1)/2 × (shell volume / L³), averaged over the W configurations.
    """
    positions = np.ascontiguousarray(positions, dtype=np.float64)
    if positions.ndim != 3 or positions.shape[2] != 3:
        raise ValueError(f"positions must have shape (W, N, 3), got {positions.shape}")
    r_max = 0.5 * box if r_max is None else float(r_max)
    if not 0 < r_max <= 0.5 * box:
        raise ValueError(f"r_max must be in (0, L/2 = {0.5 * box:g}] Å, got {r_max!r}")
    W, N, _ = positions.shape
    counts = np.zeros((W, int(bins)))
    _pair_histograms(positions, float(box), r_max, counts)
    edges = np.linspace(0.0, r_max, int(bins) + 1)
    shell = 4.0 * math.pi / 3.0 * (edges[1:] ** 3 - edges[:-1] ** 3)
    g = counts.mean(axis=0) / (0.5 * N * (N - 1) * shell / box ** 3)
    return 0.5 * (edges[1:] + edges[:-1]), g


@nb.njit(cache=True, parallel=True)
def _structure_sums(positions, kvecs, out):
    W, N, _ = positions.shape
    for q in nb.prange(kvecs.shape[0]):
        kx, ky, kz = kvecs[q, 0], kvecs[q, 1], kvecs[q, 2]
        total = 0.0
        for w in range(W):
            c = 0.0
            s = 0.0
            for j in range(N):
                phase = kx * positions[w, j, 0] + ky * positions[w, j, 1] + kz * positions[w, j, 2]
                c += math.cos(phase)
                s += math.sin(phase)
            total += c * c + s * s
        out[q] = total / (W * N)


def structure_factor(positions, box: float, n_max: int = 8):
    """S(k) = ⟨|Σ_j e^{ik·r_j}|²⟩/N over the box's wave vectors k = 2π(n_x, n_y, n_z)/L, 0 < |n|² ≤ n_max².

    Returns ``(k, S)`` in Å⁻¹, averaged over vectors of equal |k| (one point per shell).
    """
    positions = np.ascontiguousarray(positions, dtype=np.float64)
    n = np.arange(-n_max, n_max + 1)
    grid = np.stack(np.meshgrid(n, n, n, indexing="ij"), axis=-1).reshape(-1, 3)
    norm2 = (grid ** 2).sum(axis=1)
    keep = (norm2 > 0) & (norm2 <= n_max ** 2)
    # ±k give the same |ρ_k|²: keep one of each pair (first nonzero component positive)
    first = np.array([row[np.nonzero(row)[0][0]] if row.any() else 0 for row in grid])
    keep &= first > 0
    grid, norm2 = grid[keep], norm2[keep]
    values = np.empty(len(grid))
    _structure_sums(positions, 2.0 * math.pi / box * grid.astype(np.float64), values)
    shells, inverse = np.unique(norm2, return_inverse=True)
    s = np.bincount(inverse, weights=values) / np.bincount(inverse)
    return 2.0 * math.pi / box * np.sqrt(shells), s


# --------------------------------------------------------------------------------------------
# the system object
# --------------------------------------------------------------------------------------------
class Helium(System):
    """Bulk liquid ⁴He for the generic VMC and DMC drivers; reports ``energy_per_particle`` in K.

    Besides the energy, VMC runs record V, T_lap and T_grad per particle (``measure``).
    """

    name = "helium"
    title = "liquid ⁴He: Aziz HFD-B(HE) potential + McMillan Jastrow in a periodic box (study 004)"
    description = ("Bulk ⁴He in a cubic periodic box (minimum image, cut-offs at L/2). Lengths in Å, energies in "
                   "K, DMC time step in K⁻¹; reports energy_per_particle and, for VMC, the potential and both "
                   "kinetic estimators per particle. VMC defaults to Metropolis moves tuned to acceptance 0.37.")
    Params = HeliumParams
    dim = 3
    energy_key = ENERGY_KEY
    energy_unit = ENERGY_UNIT
    length_unit = "Å"
    time_unit = "K⁻¹"
    kernels = KERNELS
    capabilities = Capabilities(parameter_derivatives=("b",), observables=("potential_energy_per_particle", "kinetic_energy_per_particle",
                                             "kinetic_energy_gradient_per_particle"), observables_gpu=True,
                                samplers={"gauss": "qmckit.backends.helium_sampler:HeliumGaussSampler"})
    # Metropolis moves at study 004's acceptance for VMC; Δτ in K⁻¹ for DMC; on the GPU, study 004's own
    # move (random atom, Gaussian step σ: 0.81 Å gives 0.37 at ρ = 0.02186 Å⁻³, notes Table 2.1)
    run_defaults = {"vmc": {"sampler": "brute", "target_acceptance": 0.37, "step": 2.8}, "dmc": {"dt": 0.002},
                    "vmc cuda": {"sampler": "gauss", "target_acceptance": 0.37, "step": 0.81}}
    # no potential, no Jastrow: the ideal Bose gas at k = 0, ψ = 1 and E = 0
    exact_cases = ((dict(n=8, b=0.0, potential="none", tail=False), 0.0),)
    examples = (dict(n=16), dict(n=8, b=2.6, tail=False, density=0.015))

    def __init__(self, params: HeliumParams | None = None, **kwargs):
        super().__init__(params, **kwargs)
        self.tail = tail_per_particle(self.params) if self.params.tail else 0.0

    def __repr__(self):
        p = self.params
        return f"Helium(n={p.n}, density={p.density:g}, b={p.b:g}, potential={p.potential!r}, tail={p.tail})"

    @property
    def n_particles(self) -> int:
        return self.params.n

    @property
    def box(self) -> float:
        return self.params.box

    @property
    def hbar2_over_m(self) -> float:
        """ħ²/m (K Å²): a drift-diffusion step of Δτ (K⁻¹) has variance (ħ²/m) Δτ per component."""
        return self.params.hbar2_over_m

    @property
    def kernel_params(self) -> np.ndarray:
        p = self.params
        return np.array([p.box, p.b ** 5, p.hbar2_over_m, 0.0 if p.potential == "none" else 1.0,
                         self.tail * p.n])

    def cache_size(self) -> int:
        return 8 * self.params.n

    def energy_scale(self) -> float:
        return float(self.params.n)

    def density_range(self) -> float:
        return 0.5 * self.box

    def log_psi_parameter_derivatives(self, configs: np.ndarray, names: tuple) -> np.ndarray:
        """(M, 1) ∂ ln ψ_T/∂b (Å⁻¹) at configurations (M, N, 3): ln ψ_T is b⁵ times a function of the positions, so
        the derivative is 5 ln ψ_T/b (0 at b = 0)."""
        b = self.params.b
        if b == 0.0:
            return np.zeros((len(configs), 1))
        out = np.empty(len(configs))
        _log_psi_each(np.ascontiguousarray(configs, dtype=np.float64), self.kernel_params, out)
        return (5.0 * out / b)[:, None]

    def measure(self, positions: np.ndarray) -> np.ndarray:
        """(W, 4) whole-walker E_L, V, T_lap, T_grad in K (the energy, then ``capabilities.observables``)."""
        out = np.empty((positions.shape[0], 4))
        measure_all(np.ascontiguousarray(positions), self.kernel_params, out)
        return out

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """(W, N, 3) in Å: N sites drawn from a simple cubic lattice of k³ ≥ N sites filling the box,
        each shaken by up to 5 % of the lattice spacing (equilibration melts it)."""
        n = self.params.n
        k = math.ceil(n ** (1.0 / 3.0) - 1e-9)
        spacing = self.box / k
        sites = (np.stack(np.meshgrid(*(np.arange(k),) * 3, indexing="ij"), axis=-1).reshape(-1, 3) + 0.5) * spacing
        out = np.empty((n_walkers, n, 3))
        for w in range(n_walkers):
            chosen = sites[rng.choice(len(sites), size=n, replace=False)]
            out[w] = chosen + rng.uniform(-0.05, 0.05, size=(n, 3)) * spacing
        return out
