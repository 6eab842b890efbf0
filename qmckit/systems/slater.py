"""Small Slater-determinant helpers (numba), shared by fermionic continuum systems.

Convention. A spin block of n electrons in n orbitals has the Slater matrix D[k, j] = φ_j(r_k)
(row k = electron, column j = orbital). Systems keep its inverse *transposed*,

    T[k, j] = (D⁻¹)[j, k]        i.e.  T = (D⁻¹)ᵀ = (Dᵀ)⁻¹,

so that everything a one-electron move needs is one contiguous row:

* determinant ratio when electron k moves to r' (new orbital row u_j = φ_j(r')):
      q = det D' / det D = Σ_j u_j T[k, j]                                  (:func:`det_ratio`)
* gradient / Laplacian of ln|det D| for electron k: Σ_j ∇φ_j(r_k) T[k, j], Σ_j ∇²φ_j(r_k) T[k, j]
* Sherman–Morrison update after the move is accepted (D' = D + e_k (u − D_k)):
      T'[l, :] = T[l, :] − (v_l / q) T[k, :]   (l ≠ k),   v_l = Σ_j u_j T[l, j]
      T'[k, :] = T[k, :] / q                                                 (:func:`sherman_morrison_row`)

The inverse is built from scratch by Gauss–Jordan elimination with partial pivoting
(:func:`invert`, n ≤ 5 for the atoms of study 002, so no LAPACK is needed and the same code
could be compiled as a CUDA device function).
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np
from numpy.lib.stride_tricks import as_strided


@nb.njit(cache=True)
def invert(M, out):
    """``out`` = M⁻¹ for a square ``M`` (overwritten: it is the elimination's work space).

    Returns ``(ln|det M|, sign det M)``; a singular ``M`` gives ``(-inf, 0.0)`` and ``out`` full of NaN.
    To get the transposed inverse T = (D⁻¹)ᵀ of a Slater matrix, pass M = Dᵀ.
    """
    n = M.shape[0]
    for r in range(n):
        for c in range(n):
            out[r, c] = 1.0 if r == c else 0.0
    log_abs = 0.0
    sign = 1.0
    for c in range(n):
        piv = c
        best = abs(M[c, c])
        for r in range(c + 1, n):
            if abs(M[r, c]) > best:
                best = abs(M[r, c])
                piv = r
        if not best > 0.0:  # also catches NaN
            for r in range(n):
                for k in range(n):
                    out[r, k] = np.nan
            return -np.inf, 0.0
        if piv != c:
            sign = -sign
            for k in range(n):
                t = M[c, k]
                M[c, k] = M[piv, k]
                M[piv, k] = t
                t = out[c, k]
                out[c, k] = out[piv, k]
                out[piv, k] = t
        d = M[c, c]
        log_abs += math.log(abs(d))
        if d < 0.0:
            sign = -sign
        inv_d = 1.0 / d
        for k in range(n):
            M[c, k] *= inv_d
            out[c, k] *= inv_d
        for r in range(n):
            if r == c:
                continue
            f = M[r, c]
            if f != 0.0:
                for k in range(n):
                    M[r, k] -= f * M[c, k]
                    out[r, k] -= f * out[c, k]
    return log_abs, sign


@nb.njit(cache=True)
def slogdet(M):
    """``(ln|det M|, sign det M)`` of a square matrix (M is left unchanged)."""
    n = M.shape[0]
    work = M.copy()
    scratch = np.empty((n, n))
    return invert(work, scratch)


@nb.njit(cache=True, inline="always")
def det_ratio(T_row, u):
    """det D'/det D when one electron's orbital row becomes ``u``: Σ_j u_j T[k, j] (T_row = T[k])."""
    q = 0.0
    for j in range(u.shape[0]):
        q += u[j] * T_row[j]
    return q


@nb.njit(cache=True)
def sherman_morrison_row(T, k, u, q):
    """Update the transposed inverse ``T`` (n, n) in place after electron ``k``'s orbital row
    became ``u``; ``q`` is the determinant ratio :func:`det_ratio` gave for that move. O(n²)."""
    n = T.shape[0]
    inv_q = 1.0 / q
    for l in range(n):
        if l == k:
            continue
        v = 0.0
        for j in range(n):
            v += u[j] * T[l, j]
        f = v * inv_q
        if f != 0.0:
            for j in range(n):
                T[l, j] -= f * T[k, j]
    for j in range(n):
        T[k, j] *= inv_q


@nb.njit(cache=True, inline="always", error_model="numpy")
def mat_view(a, o, rows, cols):
    """``a[o:o + rows·cols]`` viewed as a (rows, cols) row-major matrix, as ``reshape`` would give, but
    built from strides (numba's ``reshape`` calls a C helper, ~40 ns, and the kernels take ~30 views
    per electron move)."""
    s = a.strides[0]
    return as_strided(a[o:o + rows * cols], shape=(rows, cols), strides=(cols * s, s))


@nb.njit(cache=True, inline="always", error_model="numpy")
def mat3_view(a, o, d0, d1, d2):
    """``a[o:o + d0·d1·d2]`` viewed as a (d0, d1, d2) row-major array (see :func:`mat_view`)."""
    s = a.strides[0]
    return as_strided(a[o:o + d0 * d1 * d2], shape=(d0, d1, d2), strides=(d1 * d2 * s, d2 * s, s))
