"""Electron–nucleus cusp correction of Gaussian-basis orbitals (the form of Ma, Towler, Drummond and
Needs, J. Chem. Phys. 122, 224322 (2005), with a simpler choice of its free parameter).

Units: bohr, hartree. Gaussian orbitals have zero slope at a nucleus, so a determinant of them misses the
Kato cusp and E_L diverges like −Z/r there. An e–n Jastrow factor can restore the slope, but only within
about its range, and its sharp shell of large E_L makes DMC time-step errors large (notebooks/atoms.ipynb
§4). The correction instead changes the orbitals themselves near each nucleus A. Inside r < r_c it
replaces the s part η_iA of orbital i (the s-type basis functions on A, a radial function
η(r) = Σ_k d_k exp(−a_k r²)) by

    R(r) = C + s · exp(α₀ + α₁ r + α₂ r² + α₃ r³ + α₄ r⁴),

with five conditions:

* R, R′ and R″ equal η, η′ and η″ at r_c, so the orbital and its first two derivatives are continuous;
* R(0) = η(0), so the orbital keeps its value φ_i(R_A) at the nucleus (Ma et al. fix α₀ by minimising
  the fluctuation of an effective one-electron energy instead);
* R′(0) = −Z_A φ_i(R_A): the cusp. The rest of the orbital (other centres, l > 0 functions on A) is smooth,
  so its spherical average has zero slope at A, and the spherically averaged orbital then has the
  Kato slope −Z_A φ(R_A).

C = 0 and s = sign η when η keeps its sign on [0, r_c]. Otherwise C is shifted below min η by a tenth of
its range and s = +1, so that the logarithm exists. With R(0) and R′(0) fixed, α₀ and α₁ are known and
α₂, α₃, α₄ solve a 3 × 3 linear system. The radius defaults to r_c = min(0.5, 1/Z_A) bohr, about
a fifth of the 1s radius 1/Z.

Block (float64), appended to a molecule's kernel parameter vector after the packed basis:

    [n_atoms, per atom: x, y, z, r_c, K, n, a_1 … a_K,
              per orbital i < n: C, s, α₀ … α₄, d_1 … d_K]

:func:`apply` adds R − η (and its gradient and Laplacian) to orbital rows evaluated at a point within
r_c of a nucleus. The correction is exact about the values it matches and changes the orbitals only
inside the spheres, so the RHF energy of the determinant changes by a small amount (checked in the tests).
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

from .gaussian_basis import GaussianBasis, orbital_values


def default_radius(charge: float) -> float:
    """r_c = min(0.5, 1/Z) bohr."""
    return float(min(0.5, 1.0 / charge))


def _s_part(basis: GaussianBasis, C: np.ndarray, atom: int):
    """(exponents (K,), d (n, K)): η_i(r) = Σ_k d[i, k] exp(−a_k r²) of the s functions on ``atom``."""
    exps, rows = [], []
    for s in range(basis.n_shells):
        if basis.atom[s] != atom or basis.l[s] != 0:
            continue
        mu = basis.ao_start[s]
        for p in range(basis.prim_start[s], basis.prim_start[s + 1]):
            exps.append(basis.exponents[p])
            rows.append(basis.coefficients[p] * C[mu])  # (n,)
    if not exps:
        return np.zeros(0), np.zeros((C.shape[1], 0))
    return np.array(exps), np.array(rows).T


def _radial(a, d, r):
    """η, η′, η″ of η(r) = Σ d_k exp(−a_k r²) at r."""
    e = d * np.exp(-a * r * r)
    return e.sum(), (-2.0 * a * r * e).sum(), ((4.0 * a * a * r * r - 2.0 * a) * e).sum()


def fit_orbital(a, d, charge: float, phi_nucleus: float, rc: float):
    """(C, s, α (5,)) of one orbital's correction at one nucleus (see the module docstring)."""
    grid = np.linspace(0.0, rc, 201)
    eta = np.array([_radial(a, d, r)[0] for r in grid])
    if np.all(eta > 0) or np.all(eta < 0):
        shift, sign = 0.0, float(np.sign(eta[0]))
    else:
        shift, sign = float(eta.min() - 0.1 * (eta.max() - eta.min())), 1.0
    e0 = _radial(a, d, 0.0)[0]
    v, v1, v2 = _radial(a, d, rc)
    alpha0 = math.log(abs(e0 - shift))
    alpha1 = -charge * phi_nucleus / (e0 - shift)
    l0 = math.log(abs(v - shift))
    l1 = v1 / (v - shift)
    l2 = v2 / (v - shift) - l1 * l1
    m = np.array([[rc ** 2, rc ** 3, rc ** 4], [2 * rc, 3 * rc ** 2, 4 * rc ** 3], [2.0, 6 * rc, 12 * rc ** 2]])
    rhs = np.array([l0 - alpha0 - alpha1 * rc, l1 - alpha1, l2])
    return shift, sign, np.concatenate([[alpha0, alpha1], np.linalg.solve(m, rhs)])


def cusp_block(basis: GaussianBasis, C, coordinates, charges, radii=None) -> np.ndarray:
    """The correction block for orbitals ``C`` (n_basis, n) of ``basis`` with nuclei at ``coordinates``
    (n_atoms, 3) bohr of ``charges``; ``radii`` (n_atoms,) bohr, default :func:`default_radius`.
    Atoms without s functions are left out."""
    C = np.asarray(C, dtype=np.float64)
    n = C.shape[1]
    out = []
    for A, (centre, Z) in enumerate(zip(np.asarray(coordinates, float), np.asarray(charges, float))):
        a, d = _s_part(basis, C, A)
        if a.size == 0:
            continue
        rc = default_radius(Z) if radii is None else float(radii[A])
        phi0 = orbital_values(basis, centre[None, :], C)[0]  # (n,) orbitals at the nucleus
        part = [*centre, rc, float(a.size), float(n), *a]
        for i in range(n):
            shift, sign, alpha = fit_orbital(a, d[i], Z, phi0[i], rc)
            part += [shift, sign, *alpha, *d[i]]
        out.append(part)
    return np.array([float(len(out))] + [x for part in out for x in part])


@nb.njit(cache=True, error_model="numpy")
def apply(block, x, y, z, val, grad, lap, order):
    """Add R − η of every orbital to the rows val (n,), grad (n, 3), lap (n,) at (x, y, z) for each nucleus
    within r_c (``order`` as in the orbital evaluation: 0 values, 1 + gradients, 2 + Laplacians)."""
    o = 1
    for _ in range(int(block[0])):
        ax, ay, az, rc = block[o], block[o + 1], block[o + 2], block[o + 3]
        K = int(block[o + 4])
        n = int(block[o + 5])
        a = block[o + 6:o + 6 + K]
        o += 6 + K
        dx, dy, dz = x - ax, y - ay, z - az
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if r >= rc:
            o += n * (7 + K)
            continue
        for i in range(n):
            shift, sign = block[o], block[o + 1]
            p = block[o + 2] + r * (block[o + 3] + r * (block[o + 4] + r * (block[o + 5] + r * block[o + 6])))
            p1 = block[o + 3] + r * (2.0 * block[o + 4] + r * (3.0 * block[o + 5] + r * 4.0 * block[o + 6]))
            p2 = 2.0 * block[o + 4] + r * (6.0 * block[o + 5] + r * 12.0 * block[o + 6])
            e = sign * math.exp(p)
            eta = 0.0
            eta1 = 0.0
            eta2 = 0.0
            for k in range(K):
                g = block[o + 7 + k] * math.exp(-a[k] * r * r)
                eta += g
                eta1 -= 2.0 * a[k] * r * g
                eta2 += (4.0 * a[k] * a[k] * r * r - 2.0 * a[k]) * g
            val[i] += shift + e - eta
            if order >= 1 and r > 0.0:
                dr = (e * p1 - eta1) / r  # d/dr of the change, divided by r: × (dx, dy, dz) gives the gradient
                grad[i, 0] += dr * dx
                grad[i, 1] += dr * dy
                grad[i, 2] += dr * dz
                if order >= 2:
                    lap[i] += e * (p2 + p1 * p1) - eta2 + 2.0 * dr
            o += 7 + K
