"""Periodic cubic B-spline ("blip") orbital sets of a periodic solid (study 003, Uejima & Maezono 2012).

Units: lengths in bohr. A simulation cell is a 3×3 matrix whose ROWS are the lattice vectors a₁, a₂, a₃
(any non-singular cell; orthorhombic is the common case). A point r (row vector) has fractional
coordinates u = r · A⁻¹ ("cell_inverse" is A⁻¹, shape (3, 3)), and the spline grid has n_d points
along a_d, at u_d = i_d / n_d. In grid units t_d = n_d u_d an orbital is

    ψ_l(r) = Σ_{i₁ i₂ i₃} c[i₁, i₂, i₃, l] B(t₁ − i₁) B(t₂ − i₂) B(t₃ − i₃)   (indices mod n_d)

with B the standard uniform cubic B-spline (support |t| < 2, Σ_i B(t − i) = 1, B(0) = 2/3,
B(±1) = 1/6). Only 4 × 4 × 4 = 64 coefficients contribute at any point (study 003's Eq. 6). Study
003's blip function φ is 3/2 × B (its notes, §1.3), so its coefficients are these divided by 3/2.

Interpolation. At grid points ψ = Σ (c_{k−1} + 4c_k + c_{k+1})/6 per axis, a circulant matrix with
the 1-D symbol (4 + 2 cos θ)/6 (θ = 2πq/n, always ≥ 1/3), so the coefficients that make ψ equal the
given grid values are c = IFFT(FFT(values) / Π_d symbol_d) (:func:`fit_coefficients`). The
interpolant of a smooth periodic function converges as h⁴ (values), h³ (gradient), h² (Laplacian).

Derivatives. ∂ψ/∂r_k = Σ_d J[k, d] ∂ψ/∂t_d with J[k, d] = n_d A⁻¹[k, d]; the Laplacian is
Σ_{d,e} M[d, e] ∂²ψ/∂t_d∂t_e with M = JᵀJ (mixed terms vanish for an orthorhombic cell). Because ψ is
linear in the coefficients, each of the 64 grid points gets five real weights (value, ∂x, ∂y, ∂z,
∇²) once per electron, and the per-orbital work is five multiply-adds per coefficient, whatever the
cell.

Layouts (study 003, Table VII): ``coalesced`` stores coefficients as (n1, n2, n3, L), the ORBITAL
INDEX FASTEST, so one electron reads 64 contiguous rows of L values (study 003's implementation 3);
``uncoalesced`` stores (L, n1, n2, n3) and visits each orbital's 64 scattered coefficients in turn
(the layout of its implementations 1 and 2). Both sum the 64 terms in the same order and give
bit-identical results.

Precision: coefficients are float64/complex128 ("f64") or float32/complex64 ("f32"); outputs have
the coefficients' dtype and accumulate in it (study 003's GPU kernel is single precision). Spline
weights are computed in float64 and rounded to the coefficients' real type.

Kernels (numba, no argument checks; :class:`BsplineOrbitals` checks and allocates):

    evaluate(coeffs, cell_inverse, positions, out_values, out_gradients, out_laplacians)
        positions (N, 3) float64; out_values (N, L), out_gradients (N, 3, L), out_laplacians (N, L);
        coalesced coefficients (n1, n2, n3, L); parallel over electrons (prange).
    evaluate_uncoalesced(...)        same, coefficients (L, n1, n2, n3)
    evaluate_values(coeffs, cell_inverse, positions, out_values)
        values only (study 003's Eq. 6 kernel), coalesced, parallel over electrons
    evaluate_electron(coeffs, cell_inverse, position, out_values, out_gradients, out_laplacians)
        one electron (particle-by-particle): position (3,), outputs (L,), (3, L), (L,)
    evaluate_electron_uncoalesced(...)   same, coefficients (L, n1, n2, n3)

Orbital sources: :func:`plane_wave_orbitals` (free-electron orbitals of a cell, exact values and
derivatives), :meth:`BsplineOrbitals.random` (random coefficients for timing) at the sizes of study
003's Table II (:data:`TABLE_II_SIZES`), and :func:`time_evaluation` for ``qmckit bench orbitals``.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba as nb
import numpy as np

LAYOUTS = ("coalesced", "uncoalesced")
PRECISIONS = {"f64": (np.float64, np.complex128), "f32": (np.float32, np.complex64)}
_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
MIN_GRID = 4  # 4 points per axis so that the 4 contributing points of an axis are distinct

# Study 003, Table II (and its notes §1.1, §7.1): electrons N, stored orbitals L, the spline grid
# used here (the paper gives only "50³ ~ 60³"; the per-system grids are the notes' choice), and the
# published per-MC-step times of the value-only kernel: CPU = one core of an Intel i7-920 in double
# precision (CASINO, implementation 0a), GPU = GTX 480, single precision, implementation 3, transfers
# included. Orbitals are complex in the paper.
TABLE_II_SIZES = {
    "Si": {"system": "Si (diamond) 3×3×3", "electrons": 216, "orbitals": 56, "grid": (50, 50, 50),
           "cpu_ms": 2.77, "gpu_ms": 0.17, "acceleration": 16.58},
    "TiO2-648": {"system": "TiO2 (cubic) 3×3×3", "electrons": 648, "orbitals": 168, "grid": (56, 56, 56),
                 "cpu_ms": 20.21, "gpu_ms": 0.82, "acceleration": 24.46},
    "TiO2-1536": {"system": "TiO2 (cubic) 4×4×4", "electrons": 1536, "orbitals": 384, "grid": (60, 60, 60),
                  "cpu_ms": 100.00, "gpu_ms": 3.26, "acceleration": 30.67},
}


# --------------------------------------------------------------------------------------------
# validation helpers (messages start with the parameter name)
# --------------------------------------------------------------------------------------------
def check_int(name, value, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def check_grid(grid, name="grid"):
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, (bool, np.bool_)):
        grid = (grid, grid, grid)
    try:
        grid = tuple(grid)
    except TypeError:
        raise ValueError(f"{name} must be an integer or three integers ≥ {MIN_GRID}, got {grid!r}") from None
    if len(grid) != 3 or any(isinstance(g, (bool, np.bool_)) or not isinstance(g, (int, np.integer)) or g < MIN_GRID
                             for g in grid):
        raise ValueError(f"{name} must be an integer or three integers ≥ {MIN_GRID}, got {grid!r}")
    return tuple(int(g) for g in grid)


def _check_cell(cell):
    try:
        arr = np.array(cell, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"cell must be a 3×3 matrix of lattice vectors (rows) in bohr, got {cell!r}") from None
    if arr.ndim == 0:
        arr = arr * np.eye(3)  # a cube of that side
    elif arr.shape == (3,):
        arr = np.diag(arr)  # orthorhombic sides
    if arr.shape != (3, 3) or not np.all(np.isfinite(arr)):
        raise ValueError(f"cell must be a 3×3 matrix of finite lattice vectors (rows) in bohr, got shape {arr.shape}")
    det = np.linalg.det(arr)
    if not abs(det) > 1e-12 * max(1.0, float(np.abs(arr).max())) ** 3:
        raise ValueError(f"cell must be non-singular (its lattice vectors span a volume), got det = {det:g}")
    return arr


def check_precision(precision):
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision


def _check_layout(layout):
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    return layout


def dtype_for(precision, complex_):
    return np.dtype(PRECISIONS[check_precision(precision)][1 if complex_ else 0])


# --------------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------------
def interpolation_symbol(n: int) -> np.ndarray:
    """1-D symbol (4 + 2 cos θ_q)/6, θ_q = 2πq/n, of the periodic cubic B-spline interpolation matrix (n,)."""
    return (4.0 + 2.0 * np.cos(2.0 * np.pi * np.arange(n) / n)) / 6.0


def fit_coefficients(values, dtype=None) -> np.ndarray:
    """Coefficients (n1, n2, n3, L) whose spline interpolates ``values`` (n1, n2, n3, L) on the grid.

    ``values[i1, i2, i3, l]`` is orbital l at fractional point (i1/n1, i2/n2, i3/n3); real values give
    real coefficients. ``dtype`` (default float64/complex128 to match) rounds the result.
    """
    values = np.asarray(values)
    if values.ndim != 4 or min(values.shape[:3]) < MIN_GRID or values.shape[3] < 1:
        raise ValueError(f"values must have shape (n1, n2, n3, L) with every n ≥ {MIN_GRID} and L ≥ 1, "
                         f"got {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite")
    is_complex = np.iscomplexobj(values)
    symbol = (interpolation_symbol(values.shape[0])[:, None, None, None]
              * interpolation_symbol(values.shape[1])[None, :, None, None]
              * interpolation_symbol(values.shape[2])[None, None, :, None])
    coeffs = np.fft.ifftn(np.fft.fftn(values, axes=(0, 1, 2)) / symbol, axes=(0, 1, 2))
    if not is_complex:
        coeffs = coeffs.real
    if dtype is None:
        dtype = np.complex128 if is_complex else np.float64
    return np.ascontiguousarray(coeffs, dtype=dtype)


def grid_points(cell, grid) -> np.ndarray:
    """Cartesian positions (n1, n2, n3, 3) in bohr of the grid points i_d/n_d along the cell's vectors."""
    cell = _check_cell(cell)
    grid = check_grid(grid)
    u = np.stack(np.meshgrid(*(np.arange(n) / n for n in grid), indexing="ij"), axis=-1)
    return u @ cell


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _axis_weights(t, n, idx, w, d):
    """Grid indices and B-spline weights (value, first, second t-derivative) of one axis at t (grid units)."""
    i0 = math.floor(t)
    f = t - i0
    base = int(i0) - 1
    for a in range(4):
        idx[d, a] = (base + a) % n
    g = 1.0 - f
    f2 = f * f
    f3 = f2 * f
    w[d, 0, 0] = g * g * g / 6.0
    w[d, 0, 1] = (3.0 * f3 - 6.0 * f2 + 4.0) / 6.0
    w[d, 0, 2] = (-3.0 * f3 + 3.0 * f2 + 3.0 * f + 1.0) / 6.0
    w[d, 0, 3] = f3 / 6.0
    w[d, 1, 0] = -0.5 * g * g
    w[d, 1, 1] = 1.5 * f2 - 2.0 * f
    w[d, 1, 2] = -1.5 * f2 + f + 0.5
    w[d, 1, 3] = 0.5 * f2
    w[d, 2, 0] = g
    w[d, 2, 1] = 3.0 * f - 2.0
    w[d, 2, 2] = 1.0 - 3.0 * f
    w[d, 2, 3] = f


@nb.njit(cache=True)
def _point_weights(cell_inverse, position, n1, n2, n3, idx, weights):
    """Fill idx (3, 4) with grid indices and weights (64, 5) with value, ∂x, ∂y, ∂z, ∇² weights."""
    ns = (n1, n2, n3)
    w = np.empty((3, 3, 4))
    jac = np.empty((3, 3))  # jac[k, d] = ∂t_d/∂r_k
    for d in range(3):
        u = position[0] * cell_inverse[0, d] + position[1] * cell_inverse[1, d] + position[2] * cell_inverse[2, d]
        _axis_weights(ns[d] * u, ns[d], idx, w, d)
        for k in range(3):
            jac[k, d] = ns[d] * cell_inverse[k, d]
    metric = np.empty((3, 3))
    for d in range(3):
        for e in range(3):
            metric[d, e] = jac[0, d] * jac[0, e] + jac[1, d] * jac[1, e] + jac[2, d] * jac[2, e]
    for a in range(4):
        for b in range(4):
            for c in range(4):
                s = (a * 4 + b) * 4 + c
                v0, v1, v2 = w[0, 0, a], w[1, 0, b], w[2, 0, c]
                g0, g1, g2 = w[0, 1, a], w[1, 1, b], w[2, 1, c]
                t0 = g0 * v1 * v2
                t1 = v0 * g1 * v2
                t2 = v0 * v1 * g2
                weights[s, 0] = v0 * v1 * v2
                for k in range(3):
                    weights[s, 1 + k] = jac[k, 0] * t0 + jac[k, 1] * t1 + jac[k, 2] * t2
                lap = (metric[0, 0] * w[0, 2, a] * v1 * v2 + metric[1, 1] * v0 * w[1, 2, b] * v2
                       + metric[2, 2] * v0 * v1 * w[2, 2, c])
                lap += 2.0 * (metric[0, 1] * g0 * g1 * v2 + metric[0, 2] * g0 * v1 * g2 + metric[1, 2] * v0 * g1 * g2)
                weights[s, 4] = lap


@nb.njit(cache=True)
def _electron_coalesced(coeffs, cell_inverse, position, ov, og, ol):
    n1, n2, n3, n_orb = coeffs.shape
    idx = np.empty((3, 4), dtype=np.int64)
    weights = np.empty((64, 5), dtype=ov.real.dtype)  # the coefficients' real type
    _point_weights(cell_inverse, position, n1, n2, n3, idx, weights)
    gx, gy, gz = og[0], og[1], og[2]
    ov[:] = 0
    gx[:] = 0
    gy[:] = 0
    gz[:] = 0
    ol[:] = 0
    for a in range(4):
        for b in range(4):
            for c in range(4):
                s = (a * 4 + b) * 4 + c
                wv, wx, wy, wz, wl = weights[s, 0], weights[s, 1], weights[s, 2], weights[s, 3], weights[s, 4]
                row = coeffs[idx[0, a], idx[1, b], idx[2, c]]
                for l in range(n_orb):
                    cl = row[l]
                    ov[l] += wv * cl
                    gx[l] += wx * cl
                    gy[l] += wy * cl
                    gz[l] += wz * cl
                    ol[l] += wl * cl


@nb.njit(cache=True)
def _electron_uncoalesced(coeffs, cell_inverse, position, ov, og, ol):
    n_orb, n1, n2, n3 = coeffs.shape
    idx = np.empty((3, 4), dtype=np.int64)
    weights = np.empty((64, 5), dtype=ov.real.dtype)
    _point_weights(cell_inverse, position, n1, n2, n3, idx, weights)
    ov[:] = 0
    og[:] = 0
    ol[:] = 0
    for l in range(n_orb):
        v, x, y, z, p = ov[l], og[0, l], og[1, l], og[2, l], ol[l]  # zeros of the output type
        for a in range(4):
            for b in range(4):
                for c in range(4):
                    s = (a * 4 + b) * 4 + c
                    cl = coeffs[l, idx[0, a], idx[1, b], idx[2, c]]
                    v += weights[s, 0] * cl
                    x += weights[s, 1] * cl
                    y += weights[s, 2] * cl
                    z += weights[s, 3] * cl
                    p += weights[s, 4] * cl
        ov[l] = v
        og[0, l] = x
        og[1, l] = y
        og[2, l] = z
        ol[l] = p


@nb.njit(cache=True)
def electron_values(coeffs, cell_inverse, position, ov):
    n1, n2, n3, n_orb = coeffs.shape
    idx = np.empty((3, 4), dtype=np.int64)
    weights = np.empty((64, 5), dtype=ov.real.dtype)
    _point_weights(cell_inverse, position, n1, n2, n3, idx, weights)
    ov[:] = 0
    for a in range(4):
        for b in range(4):
            for c in range(4):
                wv = weights[(a * 4 + b) * 4 + c, 0]
                row = coeffs[idx[0, a], idx[1, b], idx[2, c]]
                for l in range(n_orb):
                    ov[l] += wv * row[l]


@nb.njit(cache=True, parallel=True)
def evaluate_values(coeffs, cell_inverse, positions, out_values):
    """Values only (study 003's kernel, Eq. 6), coalesced coefficients (n1, n2, n3, L): out_values (N, L);
    bit-identical to the values of :func:`evaluate`."""
    for j in nb.prange(positions.shape[0]):
        electron_values(coeffs, cell_inverse, positions[j], out_values[j])


@nb.njit(cache=True)
def evaluate_electron(coeffs, cell_inverse, position, out_values, out_gradients, out_laplacians):
    """One electron, coalesced coefficients (n1, n2, n3, L): values (L,), gradients (3, L), Laplacians (L,)."""
    _electron_coalesced(coeffs, cell_inverse, position, out_values, out_gradients, out_laplacians)


@nb.njit(cache=True)
def evaluate_electron_uncoalesced(coeffs, cell_inverse, position, out_values, out_gradients, out_laplacians):
    """One electron, uncoalesced coefficients (L, n1, n2, n3): values (L,), gradients (3, L), Laplacians (L,)."""
    _electron_uncoalesced(coeffs, cell_inverse, position, out_values, out_gradients, out_laplacians)


@nb.njit(cache=True, parallel=True)
def evaluate(coeffs, cell_inverse, positions, out_values, out_gradients, out_laplacians):
    """All L orbitals at N electrons, coalesced coefficients (n1, n2, n3, L), parallel over electrons.

    positions (N, 3) in bohr; out_values (N, L), out_gradients (N, 3, L), out_laplacians (N, L) of the
    coefficients' dtype (overwritten).
    """
    for j in nb.prange(positions.shape[0]):
        _electron_coalesced(coeffs, cell_inverse, positions[j], out_values[j], out_gradients[j], out_laplacians[j])


@nb.njit(cache=True, parallel=True)
def evaluate_uncoalesced(coeffs, cell_inverse, positions, out_values, out_gradients, out_laplacians):
    """As :func:`evaluate` with uncoalesced coefficients (L, n1, n2, n3) (orbital index slowest)."""
    for j in nb.prange(positions.shape[0]):
        _electron_uncoalesced(coeffs, cell_inverse, positions[j], out_values[j], out_gradients[j], out_laplacians[j])


# --------------------------------------------------------------------------------------------
# the orbital set
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class BsplineOrbitals:
    """L periodic cubic B-spline orbitals on an (n1, n2, n3) grid over ``cell``.

    coefficients  (n1, n2, n3, L) for layout "coalesced" (orbital index fastest, default) or
                  (L, n1, n2, n3) for "uncoalesced"; float32, float64, complex64 or complex128
    cell          (3, 3) lattice vectors as rows, in bohr (a number: a cube; three numbers: orthorhombic)
    layout        "coalesced" or "uncoalesced"
    """

    coefficients: np.ndarray
    cell: np.ndarray
    layout: str = "coalesced"

    def __post_init__(self):
        _check_layout(self.layout)
        object.__setattr__(self, "cell", _check_cell(self.cell))
        c = self.coefficients
        if not isinstance(c, np.ndarray) or c.ndim != 4:
            raise ValueError("coefficients must be a 4-D array, (n1, n2, n3, L) coalesced or (L, n1, n2, n3) "
                             f"uncoalesced, got {type(c).__name__} of shape {np.shape(c)}")
        if c.dtype not in _DTYPES:
            raise ValueError(f"coefficients must be float32, float64, complex64 or complex128, got {c.dtype}")
        grid = c.shape[:3] if self.layout == "coalesced" else c.shape[1:]
        n_orb = c.shape[3] if self.layout == "coalesced" else c.shape[0]
        if min(grid) < MIN_GRID or n_orb < 1:
            raise ValueError(f"coefficients must have a grid of at least {MIN_GRID} points per axis and L ≥ 1, "
                             f"got shape {c.shape} ({self.layout})")
        object.__setattr__(self, "coefficients", np.ascontiguousarray(c))
        inv = np.ascontiguousarray(np.linalg.inv(self.cell))
        object.__setattr__(self, "_cell_inverse", inv)

    # ---- construction ----
    @classmethod
    def from_grid_values(cls, cell, values, precision="f64", layout="coalesced"):
        """The orbitals that interpolate ``values`` (n1, n2, n3, L) given at :func:`grid_points`."""
        values = np.asarray(values)
        coeffs = fit_coefficients(values, dtype=dtype_for(precision, np.iscomplexobj(values)))
        return cls(coeffs, cell).with_layout(layout)

    @classmethod
    def random(cls, grid, n_orbitals, cell=10.0, precision="f64", complex=True, layout="coalesced", seed=0):
        """Random coefficients (uniform in [−1, 1), real and imaginary parts) for timing."""
        grid = check_grid(grid)
        n_orbitals = check_int("n_orbitals", n_orbitals, 1)
        dtype = dtype_for(precision, complex)
        _check_layout(layout)
        shape = (*grid, n_orbitals) if layout == "coalesced" else (n_orbitals, *grid)
        rng = np.random.default_rng(seed)
        real = dtype.type(0).real.dtype
        coeffs = np.empty(shape, dtype=dtype)
        if complex:
            coeffs.real = rng.uniform(-1.0, 1.0, size=shape).astype(real)
            coeffs.imag = rng.uniform(-1.0, 1.0, size=shape).astype(real)
        else:
            coeffs[...] = rng.uniform(-1.0, 1.0, size=shape).astype(real)
        return cls(coeffs, cell, layout)

    def with_layout(self, layout):
        """The same orbitals stored in ``layout`` (a copy when it changes)."""
        _check_layout(layout)
        if layout == self.layout:
            return self
        axes = (3, 0, 1, 2) if layout == "uncoalesced" else (1, 2, 3, 0)
        return BsplineOrbitals(np.ascontiguousarray(self.coefficients.transpose(axes)), self.cell, layout)

    def astype(self, precision):
        """The same orbitals with coefficients rounded to ``precision`` ("f32" or "f64")."""
        dtype = dtype_for(precision, self.is_complex)
        return BsplineOrbitals(self.coefficients.astype(dtype), self.cell, self.layout)

    # ---- properties ----
    @property
    def cell_inverse(self) -> np.ndarray:
        """A⁻¹ (3, 3): fractional coordinates u = r · A⁻¹."""
        return self._cell_inverse

    @property
    def grid(self) -> tuple:
        c = self.coefficients
        return c.shape[:3] if self.layout == "coalesced" else c.shape[1:]

    @property
    def n_orbitals(self) -> int:
        c = self.coefficients
        return c.shape[3] if self.layout == "coalesced" else c.shape[0]

    @property
    def dtype(self) -> np.dtype:
        return self.coefficients.dtype

    @property
    def is_complex(self) -> bool:
        return np.iscomplexobj(self.coefficients)

    @property
    def precision(self) -> str:
        return "f32" if self.coefficients.real.dtype == np.float32 else "f64"

    # ---- evaluation ----
    def checked_positions(self, positions):
        pos = np.asarray(positions, dtype=np.float64)
        if pos.ndim != 2 or pos.shape[1] != 3 or not np.all(np.isfinite(pos)):
            raise ValueError(f"positions must be a finite (N, 3) array in bohr, got shape {pos.shape}")
        return np.ascontiguousarray(pos)

    def allocate(self, n_electrons):
        """Output arrays (values (N, L), gradients (N, 3, L), Laplacians (N, L)) of the coefficients' dtype."""
        n, l = n_electrons, self.n_orbitals
        return (np.empty((n, l), self.dtype), np.empty((n, 3, l), self.dtype), np.empty((n, l), self.dtype))

    def _check_out(self, out, n, single=False):
        shapes = ((self.n_orbitals,), (3, self.n_orbitals), (self.n_orbitals,))
        if not single:
            shapes = tuple((n, *shape) for shape in shapes)
        if (not isinstance(out, (tuple, list)) or len(out) != 3
                or any(not isinstance(a, np.ndarray) or a.shape != shape or a.dtype != self.dtype
                       or not a.flags.c_contiguous for a, shape in zip(out, shapes))):
            raise ValueError(f"out must be three C-contiguous {self.dtype} arrays of shapes "
                             f"{', '.join(map(str, shapes))} (see allocate)")
        return tuple(out)

    def evaluate(self, positions, out=None):
        """Values (N, L), Cartesian gradients (N, 3, L) and Laplacians (N, L) at ``positions`` (N, 3) bohr."""
        pos = self.checked_positions(positions)
        out = self.allocate(len(pos)) if out is None else self._check_out(out, len(pos))
        if self.layout == "uncoalesced":
            evaluate_uncoalesced(self.coefficients, self._cell_inverse, pos, *out)
        else:
            coeffs, values, gradients, laplacians = self._real_views(self.coefficients, *out)
            evaluate(coeffs, self._cell_inverse, pos, values, gradients, laplacians)
        return out

    def _real_views(self, *arrays):
        """Complex coalesced arrays viewed as real with the last axis doubled: a real weight times
        (re, im) gives exactly the complex product (w + 0i)(a + bi), at half the arithmetic."""
        if not self.is_complex:
            return arrays
        real = self.coefficients.real.dtype
        return tuple(a.view(real) for a in arrays)

    def values(self, positions, out=None):
        """Values (N, L) only (:func:`evaluate_values`; coalesced layout only)."""
        if self.layout != "coalesced":
            raise ValueError("layout must be coalesced for values-only evaluation, got uncoalesced")
        pos = self.checked_positions(positions)
        out = np.empty((len(pos), self.n_orbitals), self.dtype) if out is None else out
        coeffs, values = self._real_views(self.coefficients, out)
        evaluate_values(coeffs, self._cell_inverse, pos, values)
        return out

    def evaluate_electron(self, position, out=None):
        """One electron (particle-by-particle kernel): values (L,), gradients (3, L), Laplacians (L,)."""
        pos = self.checked_positions(np.reshape(position, (1, 3)))[0]
        out = tuple(a[0] for a in self.allocate(1)) if out is None else self._check_out(out, 1, single=True)
        if self.layout == "uncoalesced":
            evaluate_electron_uncoalesced(self.coefficients, self._cell_inverse, pos, *out)
        else:
            coeffs, values, gradients, laplacians = self._real_views(self.coefficients, *out)
            evaluate_electron(coeffs, self._cell_inverse, pos, values, gradients, laplacians)
        return out

    def evaluate_per_electron(self, positions):
        """All electrons, one :meth:`evaluate_electron` call each (the per-electron kernel, serial)."""
        pos = self.checked_positions(positions)
        values, gradients, laplacians = self.allocate(len(pos))
        for j in range(len(pos)):
            self.evaluate_electron(pos[j], (values[j], gradients[j], laplacians[j]))
        return values, gradients, laplacians


# --------------------------------------------------------------------------------------------
# plane-wave (free-electron) orbitals: exact values for tests
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PlaneWaveOrbitals:
    """The lowest-|G| plane waves of a periodic cell, unnormalised (amplitude 1).

    cell          (3, 3) lattice vectors (rows) in bohr
    g_vectors     (L, 3) reciprocal-lattice vectors G = m · 2π A⁻ᵀ in bohr⁻¹, one per orbital
    millers       (L, 3) integer m of each G
    kinds         (L,) for real sets: 0 = cos(G·r) (G = 0 gives the constant 1), 1 = sin(G·r);
                  for complex sets every orbital is exp(iG·r) (kinds all 2)
    complex       whether the set is complex
    """

    cell: np.ndarray
    g_vectors: np.ndarray
    millers: np.ndarray
    kinds: np.ndarray
    complex: bool

    @property
    def n_orbitals(self) -> int:
        return len(self.kinds)

    def evaluate(self, positions):
        """Exact values (N, L), gradients (N, 3, L) and Laplacians (N, L) at ``positions`` (N, 3) bohr."""
        pos = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
        phase = pos @ self.g_vectors.T  # (N, L)
        g2 = np.sum(self.g_vectors ** 2, axis=1)
        if self.complex:
            values = np.exp(1j * phase)
            gradients = 1j * self.g_vectors.T[None, :, :] * values[:, None, :]
        else:
            cos, sin = np.cos(phase), np.sin(phase)
            is_sin = self.kinds == 1
            values = np.where(is_sin, sin, cos)
            deriv = np.where(is_sin, cos, -sin)  # d/dφ
            gradients = self.g_vectors.T[None, :, :] * deriv[:, None, :]
        return values, gradients, -g2 * values

    def grid_values(self, grid) -> np.ndarray:
        """Values (n1, n2, n3, L) at :func:`grid_points` (input of :func:`fit_coefficients`)."""
        grid = check_grid(grid)
        pts = grid_points(self.cell, grid).reshape(-1, 3)
        return self.evaluate(pts)[0].reshape(*grid, self.n_orbitals)

    def bspline(self, grid, precision="f64", layout="coalesced") -> BsplineOrbitals:
        """The B-spline orbitals that interpolate these plane waves on ``grid``."""
        return BsplineOrbitals.from_grid_values(self.cell, self.grid_values(grid), precision, layout)


def plane_wave_orbitals(cell, n_orbitals, complex=False) -> PlaneWaveOrbitals:
    """The ``n_orbitals`` lowest-|G| plane waves of ``cell`` (bohr; rows are lattice vectors).

    Order: by |G|, ties broken by the integer indices m (lexicographic). Complex sets: exp(iG·r) for
    each G. Real sets: 1 (G = 0), then for each ±G pair (the member whose first nonzero m is positive)
    cos(G·r) followed by sin(G·r).
    """
    cell = _check_cell(cell)
    n_orbitals = check_int("n_orbitals", n_orbitals, 1)
    recip = 2.0 * np.pi * np.linalg.inv(cell).T  # rows b_i, a_i · b_j = 2π δ_ij
    sigma_min = np.linalg.svd(recip, compute_uv=False).min()
    needed = n_orbitals if complex else (n_orbitals + 1) // 2 + 1  # G vectors (pairs count once)
    m_max = 1
    while True:
        rng = np.arange(-m_max, m_max + 1)
        m = np.stack(np.meshgrid(rng, rng, rng, indexing="ij"), axis=-1).reshape(-1, 3)
        if not complex:  # one representative per ±G pair: first nonzero index positive (and G = 0)
            first = np.where(m[:, 0] != 0, m[:, 0], np.where(m[:, 1] != 0, m[:, 1], m[:, 2]))
            m = m[first >= 0]
        g2 = np.sum((m @ recip) ** 2, axis=1)
        key = np.round(g2 / (sigma_min ** 2), 9)
        order = np.lexsort((m[:, 2], m[:, 1], m[:, 0], key))
        m, g2 = m[order], g2[order]
        if len(m) >= needed and math.sqrt(g2[needed - 1]) * (1 + 1e-9) < sigma_min * (m_max + 1):
            break  # every G outside the box is longer than the last one kept
        m_max += 1
    if complex:
        millers = m[:n_orbitals]
        kinds = np.full(n_orbitals, 2)
    else:
        rows, kinds = [m[0]], [0]
        for mm in m[1:]:
            rows += [mm, mm]
            kinds += [0, 1]
        millers, kinds = np.array(rows[:n_orbitals]), np.array(kinds[:n_orbitals])
    return PlaneWaveOrbitals(cell, millers @ recip, millers.astype(np.int64), kinds, bool(complex))


# --------------------------------------------------------------------------------------------
# timing (qmckit bench orbitals)
# --------------------------------------------------------------------------------------------
def flops_per_evaluation(n_electrons, n_orbitals, complex=True) -> int:
    """Floating-point operations of one N × L value+gradient+Laplacian evaluation: 64 points × 5 sums ×
    one multiply-add (2 flops), ×2 for complex coefficients (the counting rule of study 003's Table
    XII, which counts the value sum only: divide by 5 for its number)."""
    return n_electrons * n_orbitals * 64 * 5 * 2 * (2 if complex else 1)


def coefficient_bytes(n_electrons, n_orbitals, precision="f64", complex=True) -> int:
    """Bytes of coefficients read by one N × L evaluation: 64 coefficients × L per electron."""
    return n_electrons * n_orbitals * 64 * dtype_for(precision, complex).itemsize


def time_evaluation(n_electrons, n_orbitals, grid, precision="f64", layout="coalesced", complex=True,
                    repeats=5, threads=None, seed=0, cell=None, values_only=False):
    """Time one N × L value+gradient+Laplacian evaluation on the CPU with random coefficients
    (``values_only``: values alone, study 003's kernel, coalesced layout only).

    Electrons sit at uniform random points of the cell (a cube of side 10 bohr unless ``cell`` is
    given). Returns a dict: sizes, ``median_s``/``min_s`` over ``repeats`` timed calls (after one
    compile/warm-up call), ``bytes_per_s`` (coefficient reads), ``gflops`` (:func:`flops_per_evaluation`)
    and ``paper_gflops`` (the value sum only, study 003's Table XII rule, whatever was evaluated).
    """
    n_electrons = check_int("n_electrons", n_electrons, 1)
    n_orbitals = check_int("n_orbitals", n_orbitals, 1)
    grid = check_grid(grid)
    check_precision(precision)
    _check_layout(layout)
    repeats = check_int("repeats", repeats, 1)
    if values_only and layout != "coalesced":
        raise ValueError("layout must be coalesced for values-only evaluation, got uncoalesced")
    if threads is not None:
        threads = check_int("threads", threads, 1)
        if threads > nb.config.NUMBA_NUM_THREADS:
            raise ValueError(f"threads must be at most {nb.config.NUMBA_NUM_THREADS} on this machine, got {threads}")
    orbitals = BsplineOrbitals.random(grid, n_orbitals, cell=10.0 if cell is None else cell, precision=precision,
                                      complex=complex, layout=layout, seed=seed)
    rng = np.random.default_rng(seed + 1)
    positions = rng.random((n_electrons, 3)) @ orbitals.cell
    if values_only:
        out = np.empty((n_electrons, n_orbitals), orbitals.dtype)
        run = orbitals.values
    else:
        out = orbitals.allocate(n_electrons)
        run = orbitals.evaluate
    previous = nb.get_num_threads()
    if threads is not None:
        nb.set_num_threads(threads)
    try:
        run(positions, out)  # compile / warm up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run(positions, out)
            times.append(time.perf_counter() - start)
        used = nb.get_num_threads()
    finally:
        nb.set_num_threads(previous)
    median = float(np.median(times))
    flops = flops_per_evaluation(n_electrons, n_orbitals, complex) // (5 if values_only else 1)
    paper_flops = flops_per_evaluation(n_electrons, n_orbitals, complex) // 5
    return {"electrons": n_electrons, "orbitals": n_orbitals, "grid": list(grid), "precision": precision,
            "dtype": str(orbitals.dtype), "layout": layout, "complex": bool(complex),
            "quantities": "values" if values_only else "values+gradients+laplacians", "threads": used,
            "repeats": repeats, "median_s": median, "min_s": float(min(times)),
            "coefficient_table_bytes": int(orbitals.coefficients.nbytes),
            "bytes_per_s": coefficient_bytes(n_electrons, n_orbitals, precision, complex) / median,
            "gflops": flops / median / 1e9, "paper_gflops": paper_flops / median / 1e9}
