"""Floating-point accuracy of the inner products that QMC orbital evaluation uses.

Gaussian-basis QMC builds every Slater-matrix element as an inner product
``phi_k(r_i) = sum_j chi_j(r_i) c_jk`` — a product (electrons x basis) @ (basis x orbitals) whose
inner length ``K`` is the number of basis functions. Study 001 (Anderson et al. 2007, §5.2 and
Figs 5–6) found that the GPU of 2006 (nVidia 7800 GTX: float32 only, not IEEE) made an error in
this product that grew about linearly with ``K``, and that Kahan-compensated summation inside the
product ("KSF") brought it back to about CPU single precision. Study 002 (Table 7.5) compared
float32 and float64 runs of a whole VMC calculation. This module measures the arithmetic itself.

Arithmetics (the names are the keys used everywhere below)
----------------------------------------------------------
``"f32"``           float32 products, float32 accumulator, sequential in k, round to nearest
                    (IEEE binary32, what a current CPU or GPU does without FMA contraction).
``"kahan_f32"``     as ``"f32"`` but the sum is Kahan-compensated (the product is still rounded:
                    only the additions are compensated, exactly like 001's Algorithm 2).
``"f32_rz"``        the 2006-GPU emulation: every product and every sum is formed exactly and then
                    rounded toward zero (truncated, "chopped") to float32.
``"kahan_f32_rz"``  Kahan summation with every operation truncated as in ``"f32_rz"``.
``"f64"``           float32 inputs, float64 products and float64 accumulator (the "CPU double"
                    of 001, and what an x87 extended-precision accumulator approximates).

The reference for all of them is :func:`dot_ref` / :func:`matmul_ref`: the same float32 inputs
(converted exactly to float64) multiplied and summed with error-free transformations
(TwoProduct/TwoSum, Ogita–Rump–Oishi "Dot2"), i.e. as accurate as a float64 result of the exact
inner product can be unless the sum cancels by more than ~1e16. Errors therefore measure the
arithmetic only, never the rounding of the inputs to float32.

Unit roundoff ``U32 = 2**-24`` (≈ 5.96e-8) for round-to-nearest float32; truncation has a
relative error below ``2 * U32`` per operation and, unlike rounding, always of one sign.

Bounds (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1 and §4.3), per element,
with ``|A||B|`` the product of the absolute values, ``K U32 < 1``:

* ``f32``:           ``|dC| <= K U32 / (1 - K U32) * (|A||B|)``
* ``f32_rz``:        the same with ``U32`` replaced by ``2 U32``
* ``kahan_f32``:     ``|dC| <= (3 U32 + 4 K U32**2) * (|A||B|)`` (2u for the compensated sum,
                     u for the product rounding; the K u^2 term is 6e-10 at K = 1e5)
* ``kahan_f32_rz``:  the same with ``U32`` replaced by ``2 U32``
* ``f64``:           ``|dC| <= K U64 / (1 - K U64) * (|A||B|)``, ``U64 = 2**-53``

For non-negative data (uniform matrices) ``|A||B| = |C|`` and the bounds are relative errors.

Kernels are plain ``numba.njit`` functions (never ``fastmath``: reassociation would delete the
Kahan compensation) that accept any float arrays and convert every element to float32 first.
Called from Python, the float32 dot kernels return a Python float holding a float32 value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numba as nb
import numpy as np
from numba import types
from numba.extending import intrinsic

__all__ = [
    "U32", "U64", "ARITHMETICS", "LABELS",
    "dot_f32", "dot_kahan_f32", "dot_truncating_f32", "dot_kahan_truncating_f32", "dot_f64",
    "dot_ref", "matmul_f32", "matmul_kahan_f32", "matmul_truncating_f32",
    "matmul_kahan_truncating_f32", "matmul_f64", "matmul_ref", "round_toward_zero_f32",
    "uniform_pair", "gaussian_basis_like", "product_errors", "ErrorVsLength", "error_vs_length",
    "plot_error_vs_length", "growth_exponent",
]

U32 = 2.0 ** -24  # unit roundoff of float32, round to nearest
U64 = 2.0 ** -53  # unit roundoff of float64

ARITHMETICS = ("f32", "kahan_f32", "f32_rz", "kahan_f32_rz", "f64")
LABELS = {
    "f32": "f32",
    "kahan_f32": "Kahan f32",
    "f32_rz": "f32 truncating",
    "kahan_f32_rz": "Kahan f32 truncating",
    "f64": "f64",
    "blas_f32": "numpy/BLAS f32",
    "exact_f32": "exact, stored as f32",
}


# ==============================================================================================
# bit casts (numba has no scalar view; these compile to a single LLVM bitcast)
# ==============================================================================================
def _bitcast(src, dst):
    @intrinsic
    def cast(typingctx, x):
        if x != src:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(dst))

        return dst(src), codegen

    return cast


_f64_bits = _bitcast(types.float64, types.uint64)
_bits_f64 = _bitcast(types.uint64, types.float64)
_f32_bits = _bitcast(types.float32, types.uint32)
_bits_f32 = _bitcast(types.uint32, types.float32)

_KEEP_F32_MANTISSA = np.uint64(0xFFFFFFFFE0000000)  # sign, exponent, top 23 of 52 mantissa bits
_ONE_U32 = np.uint32(1)
_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp/Dekker split of a float64


# ==============================================================================================
# rounding toward zero (the 2006-GPU emulation)
# ==============================================================================================
@nb.njit(cache=True, inline="always")
def _step_toward_zero(f):
    """The float32 next to ``f`` (finite or infinite, non-zero) in the direction of zero."""
    # sign-magnitude: the magnitude bits minus one (numba widens uint32 arithmetic: narrow again)
    return _bits_f32(np.uint32(_f32_bits(f) - _ONE_U32))


@nb.njit(cache=True, inline="always")
def _rz(x):
    """float64 -> float32, rounding toward zero (scalar kernel of round_toward_zero_f32)."""
    x = np.float64(x)
    if x != x:  # NaN: masking could turn a low-payload NaN into inf
        return np.float32(x)
    # Clearing the low 29 of the 52 mantissa bits truncates the magnitude to 24 significant bits;
    # inside the float32 normal range the result is a float32, so the conversion below is exact.
    f = np.float32(_bits_f64(np.uint64(_f64_bits(x) & _KEEP_F32_MANTISSA)))
    # Outside that range (float32 subnormals, |x| >= 2**128) the conversion rounded to nearest and
    # may have rounded away from zero, by one float32 step at most: undo it. Overflow gives inf,
    # whose step toward zero is FLT_MAX, as IEEE round-toward-zero requires.
    if abs(np.float64(f)) > abs(x):
        f = _step_toward_zero(f)
    return f


@nb.njit(cache=True)
def _rz_array(x):
    out = np.empty(x.size, np.float32)
    flat = x.ravel()
    for i in range(x.size):
        out[i] = _rz(flat[i])
    return out.reshape(x.shape)


def round_toward_zero_f32(x):
    """Round float64 value(s) to float32 toward zero (IEEE roundTowardZero, "chopping").

    The result is the float32 of largest magnitude not exceeding ``|x|`` with the sign of ``x``:
    it equals ``numpy.float32(x)`` when that conversion is exact, is never larger in magnitude
    than the round-to-nearest value, and differs from it by at most one float32 step. Values
    beyond the float32 range give ``±FLT_MAX`` (infinities stay infinite), float32 subnormals are
    kept (the 7800 GTX flushed them to zero; that is not emulated here), NaN stays NaN.
    Accepts a scalar (returns ``numpy.float32``) or an array (returns a float32 array).
    """
    if np.ndim(x) == 0:
        return np.float32(_rz(float(x)))
    return _rz_array(np.ascontiguousarray(x, dtype=np.float64))


@nb.njit(cache=True, inline="always")
def _mul_rz(a, b):
    """float32 a*b rounded toward zero: the float64 product of two float32 values is exact."""
    return _rz(np.float64(a) * np.float64(b))


@nb.njit(cache=True, inline="always")
def _add_rz(a, b):
    """float32 a+b rounded toward zero, exactly (also when the float64 sum itself is inexact)."""
    a64 = np.float64(a)
    b64 = np.float64(b)
    y = a64 + b64
    f = _rz(y)
    if np.float64(f) == y:
        # y sits on the float32 grid; if float64 rounding moved it there from the inside (the
        # exact sum is y + e with e of the other sign than y), truncation must go one step lower.
        # Off the grid, |e| <= ulp64(y)/2 cannot cross a grid point, so rz(y) is already right.
        bb = y - a64
        e = (a64 - (y - bb)) + (b64 - bb)  # TwoSum: a + b = y + e exactly
        if e != 0.0 and (e > 0.0) != (y > 0.0):
            f = _step_toward_zero(f)
    return f


# ==============================================================================================
# inner products
# ==============================================================================================
@nb.njit(cache=True)
def dot_f32(a, b):
    """Plain float32 inner product: float32 products, float32 accumulator, k = 0, 1, ..."""
    s = np.float32(0.0)
    for k in range(a.shape[0]):
        s = s + np.float32(a[k]) * np.float32(b[k])
    return s


@nb.njit(cache=True)
def dot_kahan_f32(a, b):
    """Kahan-compensated float32 inner product (001, Algorithm 2): the products are rounded,
    the additions compensated. Error <= (3 U32 + 4 K U32**2) * sum|a_k b_k|."""
    s = np.float32(0.0)
    c = np.float32(0.0)
    for k in range(a.shape[0]):
        y = np.float32(a[k]) * np.float32(b[k]) - c
        t = s + y
        c = (t - s) - y  # the parentheses are the algorithm: never compile with fastmath
        s = t
    return s


@nb.njit(cache=True)
def dot_truncating_f32(a, b):
    """float32 inner product on a round-toward-zero machine: each product and each sum is formed
    exactly and then truncated to float32 (the emulated 2006 GPU)."""
    s = np.float32(0.0)
    for k in range(a.shape[0]):
        s = _add_rz(s, _mul_rz(np.float32(a[k]), np.float32(b[k])))
    return s


@nb.njit(cache=True)
def dot_kahan_truncating_f32(a, b):
    """Kahan-compensated float32 inner product with every operation truncated toward zero."""
    s = np.float32(0.0)
    c = np.float32(0.0)
    for k in range(a.shape[0]):
        y = _add_rz(_mul_rz(np.float32(a[k]), np.float32(b[k])), -c)
        t = _add_rz(s, y)
        c = _add_rz(_add_rz(t, -s), -y)
        s = t
    return s


@nb.njit(cache=True)
def dot_f64(a, b):
    """float32 inputs, float64 products (exact) and float64 accumulator."""
    s = 0.0
    for k in range(a.shape[0]):
        s += np.float64(np.float32(a[k])) * np.float64(np.float32(b[k]))
    return s


@nb.njit(cache=True)
def _dot2(a, b, to_f32):
    """Ogita–Rump–Oishi Dot2 in float64: result as if computed in ~106-bit precision, then
    rounded: |res - a.b| <= U64 |a.b| + (K U64)**2 sum|a_k b_k| (K U64 << 1)."""
    s = 0.0
    c = 0.0
    for k in range(a.shape[0]):
        if to_f32:
            x = np.float64(np.float32(a[k]))
            z = np.float64(np.float32(b[k]))
        else:
            x = np.float64(a[k])
            z = np.float64(b[k])
        # TwoProduct by Dekker/Veltkamp splitting (no FMA needed): p + q == x*z exactly
        p = x * z
        t = _SPLITTER * x
        xh = t - (t - x)
        xl = x - xh
        t = _SPLITTER * z
        zh = t - (t - z)
        zl = z - zh
        q = xl * zl - (((p - xh * zh) - xl * zh) - xh * zl)
        # TwoSum: s + p == s_new + r exactly
        s_new = s + p
        bb = s_new - s
        r = (s - (s_new - bb)) + (p - bb)
        s = s_new
        c += r + q
    return s + c


@nb.njit(cache=True)
def dot_ref(a, b):
    """Reference inner product of the float64 values of ``a`` and ``b`` (Dot2, see _dot2)."""
    return _dot2(a, b, False)


# ==============================================================================================
# matrix products (M, K) @ (K, N): each element is the corresponding dot kernel, same order
# ==============================================================================================
@nb.njit(cache=True)
def _prepare(A, B):
    A32 = np.empty(A.shape, np.float32)
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            A32[i, k] = np.float32(A[i, k])
    Bt = np.empty((B.shape[1], B.shape[0]), np.float32)  # B transposed: rows are contiguous
    for k in range(B.shape[0]):
        for j in range(B.shape[1]):
            Bt[j, k] = np.float32(B[k, j])
    return A32, Bt


@nb.njit(cache=True)
def matmul_f32(A, B):
    """(M, K) @ (K, N) with :func:`dot_f32` for every element; returns float32."""
    A32, Bt = _prepare(A, B)
    C = np.empty((A.shape[0], B.shape[1]), np.float32)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = dot_f32(A32[i], Bt[j])
    return C


@nb.njit(cache=True)
def matmul_kahan_f32(A, B):
    """(M, K) @ (K, N) with :func:`dot_kahan_f32` for every element; returns float32."""
    A32, Bt = _prepare(A, B)
    C = np.empty((A.shape[0], B.shape[1]), np.float32)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = dot_kahan_f32(A32[i], Bt[j])
    return C


@nb.njit(cache=True)
def matmul_truncating_f32(A, B):
    """(M, K) @ (K, N) with :func:`dot_truncating_f32` for every element; returns float32."""
    A32, Bt = _prepare(A, B)
    C = np.empty((A.shape[0], B.shape[1]), np.float32)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = dot_truncating_f32(A32[i], Bt[j])
    return C


@nb.njit(cache=True)
def matmul_kahan_truncating_f32(A, B):
    """(M, K) @ (K, N) with :func:`dot_kahan_truncating_f32` for every element; float32."""
    A32, Bt = _prepare(A, B)
    C = np.empty((A.shape[0], B.shape[1]), np.float32)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = dot_kahan_truncating_f32(A32[i], Bt[j])
    return C


@nb.njit(cache=True)
def matmul_f64(A, B):
    """(M, K) @ (K, N) of the float32 inputs with :func:`dot_f64` for every element; float64."""
    A32, Bt = _prepare(A, B)
    C = np.empty((A.shape[0], B.shape[1]), np.float64)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = dot_f64(A32[i], Bt[j])
    return C


@nb.njit(cache=True)
def _matmul_ref(A, Bt, to_f32):
    C = np.empty((A.shape[0], Bt.shape[0]), np.float64)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = _dot2(A[i], Bt[j], to_f32)
    return C


def matmul_ref(A, B, *, as_float32=False):
    """Reference (M, K) @ (K, N) in float64 by Dot2 for every element.

    With ``as_float32=True`` the inputs are first rounded to float32 — the reference for the
    kernels above, which all see the float32 values of their inputs.
    """
    A = np.ascontiguousarray(A)
    Bt = np.ascontiguousarray(np.asarray(B).T)
    return _matmul_ref(A, Bt, as_float32)


_MATMUL = {
    "f32": matmul_f32,
    "kahan_f32": matmul_kahan_f32,
    "f32_rz": matmul_truncating_f32,
    "kahan_f32_rz": matmul_kahan_truncating_f32,
    "f64": matmul_f64,
    # extras, not in ARITHMETICS: numpy's float32 GEMM (blocked BLAS: a modern "CPU single"), and
    # the exact product rounded once to float32 (the floor set by storing the result in float32)
    "blas_f32": lambda A, B: np.asarray(A, np.float32) @ np.asarray(B, np.float32),
    "exact_f32": lambda A, B: matmul_ref(A, B).astype(np.float32),
}


# ==============================================================================================
# test matrices
# ==============================================================================================
def _as_rng(rng) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def uniform_pair(M: int, K: int, rng=None, N: int | None = None):
    """001's Fig. 5 operands: ``A`` (M, K) and ``B`` (K, N) uniform in [0, 1), float32."""
    rng = _as_rng(rng)
    N = M if N is None else N
    return (rng.random((M, K), dtype=np.float32), rng.random((K, N), dtype=np.float32))


def gaussian_basis_like(M: int, K: int, rng=None, N: int | None = None, *,
                        coefficients: str = "signed", radius: float = 3.0,
                        exponents: tuple[float, float] = (0.05, 50.0)):
    """Operands with the structure of QMC orbital evaluation: (basis values) @ (coefficients).

    ``A[i, j] = (2 a_j / pi)**(3/4) * exp(-a_j |r_i - R_j|**2)`` — the value of a normalised
    s-type Gaussian basis function ``j`` at electron position ``r_i``: positive, decaying with
    distance, spanning many orders of magnitude (core functions are large near their centre and
    underflow elsewhere, diffuse ones are small and smooth). Centres ``R_j`` are uniform in a
    ball of ``radius`` bohr (a molecule-sized region, whatever ``K``, so every function
    contributes), exponents ``a_j`` log-uniform in ``exponents`` (bohr**-2), electrons sit at a
    random centre plus a normal offset of 1 bohr per axis.

    ``B`` (K, N) holds the coefficients: ``"signed"`` (default) draws them normal(0, 1), so
    orbitals have positive and negative parts and each element of ``A @ B`` is a sum with
    cancellation, like real molecular orbitals; ``"uniform"`` draws U[0, 1), which is 001's
    Fig. 6 protocol (basis-like multiplier, uniform multiplicand). Both are float32.

    This is a synthetic stand-in with the statistical shape of a basis matrix, not chemistry;
    real PySCF basis and MO-coefficient matrices can be passed to :func:`product_errors` (and to
    :func:`error_vs_length` through a callable ``kind``) unchanged.
    """
    rng = _as_rng(rng)
    N = M if N is None else N
    u = rng.standard_normal((K, 3))
    centres = radius * rng.random(K)[:, None] ** (1.0 / 3.0) * u / np.linalg.norm(u, axis=1)[:, None]
    lo, hi = exponents
    alpha = np.exp(rng.uniform(np.log(lo), np.log(hi), K))
    electrons = centres[rng.integers(0, K, M)] + rng.standard_normal((M, 3))
    r2 = ((electrons[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2) if M * K <= 4_000_000 \
        else np.stack([((e - centres) ** 2).sum(axis=1) for e in electrons])
    A = ((2.0 * alpha / np.pi) ** 0.75 * np.exp(-alpha * r2)).astype(np.float32)
    if coefficients == "signed":
        B = rng.standard_normal((K, N)).astype(np.float32)
    elif coefficients == "uniform":
        B = rng.random((K, N), dtype=np.float32)
    else:
        raise ValueError(f"coefficients must be 'signed' or 'uniform', got {coefficients!r}")
    return A, B


KINDS: dict[str, Callable] = {
    "uniform": uniform_pair,
    "basis": gaussian_basis_like,
    "basis_uniform": lambda M, K, rng, N=None: gaussian_basis_like(M, K, rng, N,
                                                                   coefficients="uniform"),
}


# ==============================================================================================
# measurements
# ==============================================================================================
def product_errors(A, B, arithmetics: Sequence[str] = ARITHMETICS) -> dict:
    """Per-element errors of ``A @ B`` in each arithmetic against :func:`matmul_ref`.

    Any pair of matrices works (synthetic or real basis/coefficient matrices); all arithmetics
    see the float32 values of the inputs and so does the reference. Besides ``ARITHMETICS``,
    ``"blas_f32"`` (numpy's float32 ``@``) and ``"exact_f32"`` (the reference rounded once to
    float32: the least error any float32 result can have) are accepted. Returns a dict with
    ``"abs_AB"`` (|A||B|, float64), ``"ref"`` (the reference product) and, per arithmetic,
    ``out[name] = {"rel": ..., "signed": ..., "scaled": ...}`` with ``rel`` = |C - ref| / |ref|,
    ``signed`` = (C - ref) / ref (negative: the result is too small in magnitude; both NaN where
    ref == 0) and ``scaled`` = |C - ref| / (|A||B|) (NaN where |A||B| == 0).
    """
    A32 = np.ascontiguousarray(A, dtype=np.float32)
    B32 = np.ascontiguousarray(B, dtype=np.float32)
    ref = matmul_ref(A32, B32)
    abs_ab = np.abs(A32.astype(np.float64)) @ np.abs(B32.astype(np.float64))
    out = {"ref": ref, "abs_AB": abs_ab}
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in arithmetics:
            C = ref.astype(np.float32) if name == "exact_f32" else _MATMUL[name](A32, B32)
            diff = np.asarray(C, np.float64) - ref
            err = np.abs(diff)
            out[name] = {"rel": np.where(ref != 0, err / np.abs(ref), np.nan),
                         "signed": np.where(ref != 0, diff / ref, np.nan),
                         "scaled": np.where(abs_ab != 0, err / abs_ab, np.nan)}
    return out


@dataclass
class ErrorVsLength:
    """Result of :func:`error_vs_length`.

    ``stats[name][stat]`` is an array over ``lengths`` for arithmetic ``name`` and ``stat`` in
    ``"mean"``, ``"median"``, ``"max"`` (of the relative error per element), ``"mean_signed"``
    (mean of (C - ref) / ref: the bias; negative means results too small in magnitude, the mark
    of truncation) and ``"mean_scaled"`` (mean of |dC| / (|A||B|)), pooled over all elements of
    all trials.
    ``shapes[i]`` is the (M, N) output size used at ``lengths[i]``.
    """

    kind: str
    lengths: np.ndarray
    shapes: list
    trials: int
    stats: dict = field(default_factory=dict)

    def table(self, stat: str = "mean") -> list[tuple]:
        """Rows ``(K, M, N, value per arithmetic...)`` in the order of ``self.stats``."""
        names = list(self.stats)
        return [(int(k), m, n, *(float(self.stats[a][stat][i]) for a in names))
                for i, (k, (m, n)) in enumerate(zip(self.lengths, self.shapes))]


def _output_size(K: int, work: float, max_size: int, min_size: int) -> int:
    return int(min(max_size, max(min_size, round(math.sqrt(work / K)))))


def error_vs_length(lengths: Sequence[int], kind: str | Callable = "uniform", trials: int = 3,
                    rng=None, *, arithmetics: Sequence[str] = ARITHMETICS,
                    size: int | None = None, work: float = 2.0 ** 24, max_size: int = 200,
                    min_size: int = 8) -> ErrorVsLength:
    """Relative error per element of ``A @ B`` against inner length ``K``, per arithmetic.

    ``kind`` is ``"uniform"`` (001 Fig. 5: both operands U[0, 1)), ``"basis"``
    (:func:`gaussian_basis_like` with signed coefficients: cancellation), ``"basis_uniform"``
    (001 Fig. 6: basis-like multiplier, uniform multiplicand) or any callable
    ``kind(M, K, rng) -> (A, B)`` with ``A`` (M, K) and ``B`` (K, M).
    The output is ``size x size``; by default its side shrinks with ``K`` so that the work
    ``size**2 * K`` stays near ``work`` (between ``min_size`` and ``max_size``) — the errors are
    per element, so fewer elements only widen the scatter of the mean. Each of ``trials`` draws
    new matrices from ``rng`` (a Generator or a seed).
    """
    rng = _as_rng(rng)
    make = KINDS[kind] if isinstance(kind, str) else kind
    lengths = np.asarray(lengths, dtype=np.int64)
    shapes = []
    parts = ("rel", "signed", "scaled")
    pooled = {a: {p: [] for p in parts} for a in arithmetics}
    stats = {a: {s: np.empty(len(lengths))
                 for s in ("mean", "median", "max", "mean_signed", "mean_scaled")}
             for a in arithmetics}
    for i, K in enumerate(lengths):
        m = size if size is not None else _output_size(int(K), work, max_size, min_size)
        shapes.append((m, m))
        for a in arithmetics:
            for p in parts:
                pooled[a][p].clear()
        for _ in range(trials):
            A, B = make(m, int(K), rng)
            errs = product_errors(A, B, arithmetics)
            for a in arithmetics:
                for p in parts:
                    pooled[a][p].append(errs[a][p].ravel())
        for a in arithmetics:
            rel, signed, scaled = (np.concatenate(pooled[a][p]) for p in parts)
            rel, signed, scaled = (x[np.isfinite(x)] for x in (rel, signed, scaled))
            stats[a]["mean"][i] = rel.mean()
            stats[a]["median"][i] = np.median(rel)
            stats[a]["max"][i] = rel.max()
            stats[a]["mean_signed"][i] = signed.mean()
            stats[a]["mean_scaled"][i] = scaled.mean()
    name = kind if isinstance(kind, str) else getattr(kind, "__name__", "custom")
    return ErrorVsLength(kind=name, lengths=lengths, shapes=shapes, trials=trials, stats=stats)


def growth_exponent(k1: float, e1: float, k2: float, e2: float) -> float:
    """Slope of log(error) against log(K) between two points: 0.5 for a random walk of
    rounding errors (√K), 1 for systematically biased rounding (K)."""
    return math.log(e2 / e1) / math.log(k2 / k1)


# ==============================================================================================
# plot
# ==============================================================================================
_STYLES = {"f32": ("C0", "o", "-"), "kahan_f32": ("C1", "s", "-"), "f32_rz": ("C3", "v", "--"),
           "kahan_f32_rz": ("C2", "^", "--"), "f64": ("C7", "D", ":"),
           "blas_f32": ("C4", "x", "-."), "exact_f32": ("k", "", (0, (4, 2)))}


def plot_error_vs_length(results: ErrorVsLength, ax=None, stat: str = "mean",
                         guides: bool = True):
    """Log-log plot of one statistic (``ErrorVsLength.stats`` key; the absolute value for
    ``"mean_signed"``) against inner length, one line per arithmetic; ``guides`` adds the slopes
    U32·√K and U32·K. Returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    K = results.lengths
    for name, per_stat in results.stats.items():
        colour, marker, line = _STYLES.get(name, (None, ".", "-"))
        y = np.abs(per_stat[stat])  # |bias| for "mean_signed"
        ax.loglog(K, y, ls=line, color=colour, marker=marker or None,
                  label=LABELS.get(name, name))
    if guides:
        kk = np.array([K.min(), K.max()], dtype=float)
        ax.loglog(kk, U32 * np.sqrt(kk), color="0.6", lw=0.8, ls=(0, (1, 3)), label="u·√K")
        ax.loglog(kk, U32 * kk, color="0.3", lw=0.8, ls=(0, (1, 3)), label="u·K")
    what = {"mean": "mean relative error", "median": "median relative error",
            "max": "max relative error", "mean_signed": "|mean signed relative error| (bias)",
            "mean_scaled": "mean |ΔC| / (|A||B|)"}.get(stat, stat)
    ax.set_xlabel("inner length K")
    ax.set_ylabel(f"{what} per element")
    ax.set_title(f"A @ B, {results.kind} operands")
    ax.legend(fontsize="small")
    return ax
