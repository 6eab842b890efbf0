"""Contracted Cartesian Gaussian basis sets (study 001, Eq. 6) as flat arrays, with numba kernels for
the values, gradients and Laplacians of every basis function, one point at a time or batched.

A basis function is

    χ_μ(r) = x^lx y^ly z^lz Σ_p c_p exp(−a_p |r − R|²),      x, y, z = components of r − R

with non-negative integers lx + ly + lz = l (the shell's angular momentum). The basis comes from a
PySCF ``Mole`` built with ``cart=True``: then PySCF's atomic orbitals *are* these Cartesian functions
(6 d, 10 f, … per shell), so no spherical-harmonic transform is needed and the molecular-orbital
coefficients of an SCF on that ``Mole`` multiply these functions directly. (With ``cart=False``
PySCF's AOs are real solid harmonics: a different set, which :func:`from_pyscf` refuses.)

Normalisation is PySCF's, so that values equal ``mol.eval_gto("GTOval_cart", points)``: the
contraction coefficients of ``mol._env`` already carry each primitive's radial normalisation and
the contraction's norm, and libcint multiplies s and p shells by the solid-harmonic factors
1/√(4π) and √(3/(4π)) (``CINTcommon_fac_sp``), which :func:`from_pyscf` folds into the coefficients.
Cartesian components of one shell share one normalisation, so d_xx is unit-normalised but d_xy is
not: harmless, since orbitals and energies only use the functions through the SCF's coefficients.
Component order within a shell is PySCF's: lx from l down to 0, then ly from l − lx down to 0
(d: xx, xy, xz, yy, yz, zz). A PySCF shell with several contractions (``nctr > 1``, e.g. the
general contractions of cc-pVXZ) becomes several shells here, in PySCF's AO order.

Layout. :class:`GaussianBasis` keeps the structured arrays (lengths in bohr) and one flat float64
vector, ``packed``, that the kernels walk shell by shell (a format that a CUDA device function can
read as well):

    packed = [n_shells, n_basis,  shell 0, shell 1, …],
    shell  = [Rx, Ry, Rz, l, n_prim, a_0, c_0, a_1, c_1, …]

Kernels (all ``@njit(cache=True)``):

* :func:`eval_point` — values (and gradients, and Laplacians) of all functions at one point,
  O(n_basis); what a one-electron move needs;
* :func:`basis_values` ``(P, 3) → (P, n_basis)`` and :func:`basis_derivatives`
  ``(P, 3) → (P, 5, n_basis)`` (value, ∂x, ∂y, ∂z, ∇²), parallel over points;
* :func:`orbital_values` = ``basis_values(points) @ C``: for all walkers and electrons of an
  all-electron move at once this is the single GEMM ``(W·N [·5]) × n_basis @ n_basis × n_orb``
  that study 001 put on the GPU (its Algorithm 1) and that the precision study uses.

Derivatives. With the radial sum R(s) = Σ c e^{−a s} of s = |r − R|², R' = dR/ds, R'' = d²R/ds², and
the monomial P = x^lx y^ly z^lz (homogeneous of degree l, so (r − R)·∇P = l P):

    ∂χ/∂x = (∂P/∂x) R + 2x P R'
    ∇²χ   = (∇²P) R + 4 l P R' + P (6 R' + 4 s R'')

PySCF is imported lazily (:func:`require_pyscf`): ``import qmckit`` and the kernels work without it.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

# primitives with a |r − R|² beyond this contribute < e⁻²⁰⁰ relative to 1 and are skipped
EXPONENT_CUTOFF = 200.0
_SP_FACTOR = {0: 0.282094791773878143, 1: 0.488602511902919921}  # libcint's CINTcommon_fac_sp
CHEM_EXTRA_HINT = "pip install 'qmckit[chem]' (or pip install pyscf)"


class PySCFMissing(ImportError):
    """PySCF, the optional dependency of Gaussian-basis molecules, is not installed."""


def require_pyscf():
    """Import and return the ``pyscf`` module, or raise :class:`PySCFMissing` with one line that
    names the ``chem`` extra."""
    try:
        import pyscf  # noqa: F401
        from pyscf import gto, scf  # noqa: F401
    except ImportError:
        raise PySCFMissing(f"Gaussian-basis molecules need PySCF, the optional 'chem' extra: {CHEM_EXTRA_HINT}") \
            from None
    return pyscf


def n_cartesian(l: int) -> int:
    """Number of Cartesian components of angular momentum l: (l + 1)(l + 2)/2."""
    return (l + 1) * (l + 2) // 2


def cartesian_powers(l: int) -> list[tuple[int, int, int]]:
    """(lx, ly, lz) of a shell's components in PySCF's order."""
    return [(lx, ly, l - lx - ly) for lx in range(l, -1, -1) for ly in range(l - lx, -1, -1)]


class GaussianBasis(NamedTuple):
    """A contracted Cartesian Gaussian basis as flat arrays (bohr; see the module docstring).

    centres      (S, 3)   shell centres R
    l            (S,)     angular momentum of each shell
    atom         (S,)     index of the atom the shell sits on
    prim_start   (S + 1,) primitives of shell s are ``prim_start[s]:prim_start[s + 1]``
    exponents    (n_prim,) a_p in bohr⁻²
    coefficients (n_prim,) c_p including PySCF's normalisation
    ao_start     (S + 1,) basis functions of shell s are ``ao_start[s]:ao_start[s + 1]``
    packed       the flat float64 vector the kernels read
    """

    centres: np.ndarray
    l: np.ndarray
    atom: np.ndarray
    prim_start: np.ndarray
    exponents: np.ndarray
    coefficients: np.ndarray
    ao_start: np.ndarray
    packed: np.ndarray

    @property
    def n_shells(self) -> int:
        return int(self.l.shape[0])

    @property
    def n_basis(self) -> int:
        return int(self.ao_start[-1])

    @classmethod
    def from_arrays(cls, centres, l, prim_start, exponents, coefficients, atom=None) -> "GaussianBasis":
        """Build a basis (and its packed vector) from the structured arrays."""
        centres = np.ascontiguousarray(centres, dtype=np.float64).reshape(-1, 3)
        l = np.asarray(l, dtype=np.int64)
        prim_start = np.asarray(prim_start, dtype=np.int64)
        exponents = np.ascontiguousarray(exponents, dtype=np.float64)
        coefficients = np.ascontiguousarray(coefficients, dtype=np.float64)
        S = l.shape[0]
        if centres.shape[0] != S or prim_start.shape != (S + 1,) or prim_start[-1] != exponents.shape[0] \
                or coefficients.shape != exponents.shape or np.any(l < 0):
            raise ValueError("basis arrays have inconsistent shapes")
        atom = np.zeros(S, dtype=np.int64) if atom is None else np.asarray(atom, dtype=np.int64)
        ao_start = np.zeros(S + 1, dtype=np.int64)
        ao_start[1:] = np.cumsum([n_cartesian(int(k)) for k in l])
        packed = [float(S), float(ao_start[-1])]
        for s in range(S):
            lo, hi = prim_start[s], prim_start[s + 1]
            packed += [*centres[s], float(l[s]), float(hi - lo)]
            for p in range(lo, hi):
                packed += [exponents[p], coefficients[p]]
        return cls(centres, l, atom, prim_start, exponents, coefficients, ao_start, np.array(packed))


def from_pyscf(mol) -> GaussianBasis:
    """The Cartesian basis of a PySCF ``Mole`` (which must have been built with ``cart=True``)."""
    if not getattr(mol, "cart", False):
        raise ValueError("mol must be built with cart=True (Cartesian Gaussians; spherical AOs are not supported)")
    centres, ls, atoms, exps, coefs, prim_start = [], [], [], [], [], [0]
    for ib in range(mol.nbas):
        l = int(mol.bas_angular(ib))
        a = np.asarray(mol.bas_exp(ib), dtype=np.float64)
        ctr = np.asarray(mol._libcint_ctr_coeff(ib), dtype=np.float64) * _SP_FACTOR.get(l, 1.0)  # (nprim, nctr)
        for k in range(ctr.shape[1]):
            centres.append(mol.bas_coord(ib))
            ls.append(l)
            atoms.append(int(mol.bas_atom(ib)))
            exps.append(a)
            coefs.append(ctr[:, k])
            prim_start.append(prim_start[-1] + a.shape[0])
    basis = GaussianBasis.from_arrays(np.array(centres), ls, prim_start, np.concatenate(exps), np.concatenate(coefs),
                                      atom=atoms)
    if basis.n_basis != mol.nao_nr():
        raise ValueError(f"basis has {basis.n_basis} functions but the Mole has {mol.nao_nr()}")
    return basis


def _packed(basis) -> np.ndarray:
    return basis.packed if isinstance(basis, GaussianBasis) else np.ascontiguousarray(basis, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always", error_model="numpy")
def ipow(x, n):
    """x**n for a small non-negative integer n (0**0 = 1)."""
    r = 1.0
    for _ in range(n):
        r *= x
    return r


@nb.njit(cache=True, error_model="numpy")
def packed_length(packed):
    """Length of a packed basis vector (what follows it in a longer vector is not part of it)."""
    o = 2
    for _ in range(int(packed[0])):
        o += 5 + 2 * int(packed[o + 4])  # centre (3), l, n_prim, then (exponent, coefficient) pairs
    return o


@nb.njit(cache=True, error_model="numpy")
def n_basis_of(packed):
    """Number of basis functions of a packed basis."""
    return int(packed[1])


@nb.njit(cache=True, error_model="numpy")
def eval_point(packed, x, y, z, val, grad, lap, order):
    """Every basis function at (x, y, z): values into ``val`` (n_basis,); with ``order`` ≥ 1 the
    gradients into ``grad`` (n_basis, 3); with ``order`` ≥ 2 the Laplacians into ``lap``
    (n_basis,). Arrays not asked for are left alone (they may be dummies).

    Shells of l = 0, 1, 2 are written out; higher l take a generic branch with loops and powers
    (which gives the same numbers, bit for bit, for l ≤ 2 too). Two consecutive shells with the same
    centre and exponents (the contractions of one general contraction, e.g. the 1s and 2s of
    cc-pVXZ) share their exponentials. Everything is inline: a call with array arguments per shell
    costs as much as the shell."""
    n_shells = int(packed[0])
    o = 2
    mu = 0
    shared = False  # the radial sums of this shell were computed with the previous one
    Rb = 0.0
    R1b = 0.0
    R2b = 0.0
    for shell in range(n_shells):
        dx = x - packed[o]
        dy = y - packed[o + 1]
        dz = z - packed[o + 2]
        l = int(packed[o + 3])
        n_prim = int(packed[o + 4])
        s = dx * dx + dy * dy + dz * dz
        q = o + 5 + 2 * n_prim  # offset of the next shell
        if shared:
            R = Rb
            R1 = R1b
            R2 = R2b
            shared = False
        else:
            # does the next shell share centre and exponents?
            pair = shell + 1 < n_shells and packed[q + 4] == packed[o + 4] and packed[q] == packed[o] \
                and packed[q + 1] == packed[o + 1] and packed[q + 2] == packed[o + 2]
            if pair:
                for k in range(n_prim):
                    if packed[q + 5 + 2 * k] != packed[o + 5 + 2 * k]:
                        pair = False
                        break
            R = 0.0
            R1 = 0.0
            R2 = 0.0
            Rb = 0.0
            R1b = 0.0
            R2b = 0.0
            for k in range(n_prim):
                a = packed[o + 5 + 2 * k]
                if a * s < EXPONENT_CUTOFF:
                    ex = math.exp(-a * s)
                    e = packed[o + 6 + 2 * k] * ex
                    R += e
                    if order >= 1:
                        R1 -= a * e
                        if order >= 2:
                            R2 += a * a * e
                    if pair:
                        e = packed[q + 6 + 2 * k] * ex
                        Rb += e
                        if order >= 1:
                            R1b -= a * e
                            if order >= 2:
                                R2b += a * a * e
            shared = pair
        o = q
        if l == 0:
            val[mu] = R
            if order >= 1:
                two_pr1 = 2.0 * R1
                grad[mu, 0] = two_pr1 * dx
                grad[mu, 1] = two_pr1 * dy
                grad[mu, 2] = two_pr1 * dz
                if order >= 2:
                    lap[mu] = 6.0 * R1 + 4.0 * s * R2
            mu += 1
        elif l == 1:  # x, y, z
            val[mu] = dx * R
            val[mu + 1] = dy * R
            val[mu + 2] = dz * R
            if order >= 1:
                t = 2.0 * R1
                tx = t * dx
                ty = t * dy
                tz = t * dz
                grad[mu, 0] = R + tx * dx
                grad[mu, 1] = tx * dy
                grad[mu, 2] = tx * dz
                grad[mu + 1, 0] = ty * dx
                grad[mu + 1, 1] = R + ty * dy
                grad[mu + 1, 2] = ty * dz
                grad[mu + 2, 0] = tz * dx
                grad[mu + 2, 1] = tz * dy
                grad[mu + 2, 2] = R + tz * dz
                if order >= 2:
                    t = 10.0 * R1 + 4.0 * s * R2
                    lap[mu] = dx * t
                    lap[mu + 1] = dy * t
                    lap[mu + 2] = dz * t
            mu += 3
        elif l == 2:  # xx, xy, xz, yy, yz, zz
            xx = dx * dx
            xy = dx * dy
            xz = dx * dz
            yy = dy * dy
            yz = dy * dz
            zz = dz * dz
            val[mu] = xx * R
            val[mu + 1] = xy * R
            val[mu + 2] = xz * R
            val[mu + 3] = yy * R
            val[mu + 4] = yz * R
            val[mu + 5] = zz * R
            if order >= 1:
                t = 2.0 * R1
                dxr = dx * R
                dyr = dy * R
                dzr = dz * R
                g = t * xx
                grad[mu, 0] = 2.0 * dxr + g * dx
                grad[mu, 1] = g * dy
                grad[mu, 2] = g * dz
                g = t * xy
                grad[mu + 1, 0] = dyr + g * dx
                grad[mu + 1, 1] = dxr + g * dy
                grad[mu + 1, 2] = g * dz
                g = t * xz
                grad[mu + 2, 0] = dzr + g * dx
                grad[mu + 2, 1] = g * dy
                grad[mu + 2, 2] = dxr + g * dz
                g = t * yy
                grad[mu + 3, 0] = g * dx
                grad[mu + 3, 1] = 2.0 * dyr + g * dy
                grad[mu + 3, 2] = g * dz
                g = t * yz
                grad[mu + 4, 0] = g * dx
                grad[mu + 4, 1] = dzr + g * dy
                grad[mu + 4, 2] = dyr + g * dz
                g = t * zz
                grad[mu + 5, 0] = g * dx
                grad[mu + 5, 1] = g * dy
                grad[mu + 5, 2] = 2.0 * dzr + g * dz
                if order >= 2:
                    t = 14.0 * R1 + 4.0 * s * R2
                    two_r = 2.0 * R
                    lap[mu] = two_r + xx * t
                    lap[mu + 1] = xy * t
                    lap[mu + 2] = xz * t
                    lap[mu + 3] = two_r + yy * t
                    lap[mu + 4] = yz * t
                    lap[mu + 5] = two_r + zz * t
            mu += 6
        else:
            for lx in range(l, -1, -1):
                for ly in range(l - lx, -1, -1):
                    lz = l - lx - ly
                    px = ipow(dx, lx)
                    py = ipow(dy, ly)
                    pz = ipow(dz, lz)
                    P = px * py * pz
                    val[mu] = P * R
                    if order >= 1:
                        # ∂P/∂x etc. (zero when the power is 0)
                        gx = lx * ipow(dx, lx - 1) * py * pz if lx > 0 else 0.0
                        gy = ly * px * ipow(dy, ly - 1) * pz if ly > 0 else 0.0
                        gz = lz * px * py * ipow(dz, lz - 1) if lz > 0 else 0.0
                        two_pr1 = 2.0 * P * R1
                        grad[mu, 0] = gx * R + two_pr1 * dx
                        grad[mu, 1] = gy * R + two_pr1 * dy
                        grad[mu, 2] = gz * R + two_pr1 * dz
                        if order >= 2:
                            lap_p = 0.0
                            if lx > 1:
                                lap_p += lx * (lx - 1) * ipow(dx, lx - 2) * py * pz
                            if ly > 1:
                                lap_p += ly * (ly - 1) * px * ipow(dy, ly - 2) * pz
                            if lz > 1:
                                lap_p += lz * (lz - 1) * px * py * ipow(dz, lz - 2)
                            lap[mu] = lap_p * R + P * ((4.0 * l + 6.0) * R1 + 4.0 * s * R2)
                    mu += 1


@nb.njit(cache=True, parallel=True)
def _values_kernel(packed, points, out):
    dummy_g = np.empty((1, 3))
    dummy_l = np.empty(1)
    for k in nb.prange(points.shape[0]):
        eval_point(packed, points[k, 0], points[k, 1], points[k, 2], out[k], dummy_g, dummy_l, 0)


@nb.njit(cache=True, parallel=True)
def _derivatives_kernel(packed, points, out):
    nbf = out.shape[2]
    for k in nb.prange(points.shape[0]):
        grad = np.empty((nbf, 3))
        eval_point(packed, points[k, 0], points[k, 1], points[k, 2], out[k, 0], grad, out[k, 4], 2)
        for mu in range(nbf):
            out[k, 1, mu] = grad[mu, 0]
            out[k, 2, mu] = grad[mu, 1]
            out[k, 3, mu] = grad[mu, 2]


def _points(points) -> np.ndarray:
    points = np.ascontiguousarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"points must have shape (P, 3), got {points.shape}")
    return points


def basis_values(basis, points) -> np.ndarray:
    """Values of all basis functions at ``points`` (P, 3) in bohr: an array (P, n_basis)."""
    packed = _packed(basis)
    points = _points(points)
    out = np.empty((points.shape[0], int(packed[1])))
    _values_kernel(packed, points, out)
    return out


def basis_derivatives(basis, points) -> np.ndarray:
    """Value, ∂/∂x, ∂/∂y, ∂/∂z and ∇² of all basis functions at ``points`` (P, 3): (P, 5, n_basis).

    ``out.reshape(P * 5, n_basis) @ C`` gives all five orbital quantities in one GEMM."""
    packed = _packed(basis)
    points = _points(points)
    out = np.empty((points.shape[0], 5, int(packed[1])))
    _derivatives_kernel(packed, points, out)
    return out


def orbital_values(basis, points, coefficients, derivatives: bool = False) -> np.ndarray:
    """Orbitals φ_j = Σ_μ χ_μ C[μ, j] at ``points`` (P, 3): ``basis_values(points) @ C`` (P, n_orb),
    or with ``derivatives`` the five quantities (P, 5, n_orb) from one (P·5) × n_basis GEMM.

    ``points`` may stack every electron of every walker (W·N, 3): the batched product of study 001."""
    C = np.asarray(coefficients)
    if derivatives:
        B = basis_derivatives(basis, points)
        P, _, nbf = B.shape
        return (B.reshape(P * 5, nbf) @ C).reshape(P, 5, C.shape[1])
    return basis_values(basis, points) @ C
