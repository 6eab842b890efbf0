"""One all-electron VMC step of a Gaussian-basis molecule for W walkers at once, phase by phase, on
the CPU (numba) and on the GPU (numba-cuda): study 001's pipeline (Anderson et al. 2007, Algorithm 1;
notes/001 §2), made to be timed phase by phase (:mod:`qmckit.studies.speedup_001`).

A step moves every electron of every walker at once (001 §2.2) and runs five phases:

=========  ===================================================================  ==========================
phase      what                                                                 arrays written
=========  ===================================================================  ==========================
basis      value, ∂x, ∂y, ∂z, ∇² of every basis function at all W·N proposed      ``A`` (W·N·5, n_bf)
           electron positions (:func:`~qmckit.systems.gaussian_basis.eval_point`)
gemm       ``Φ = A @ C``: the batched orbital product, one GEMM with one            ``Phi`` (W·N·5, n)
           multiplicand (RHF: both spins share C); f64, f32 or Kahan f32
slater     per walker and spin: the Slater matrix from Φ, Gauss–Jordan inverse     ``logdet``, ``sign`` (W, 2),
           with partial pivoting (ln|det|, sign, T = (Dᵀ)⁻¹), then                  ``gD`` (W, N, 3), ``lD`` (W, N)
           ∇_i ln D = Σ_j T[i,j] ∇φ_j(r_i) and ∇²_i D/D = Σ_j T[i,j] ∇²φ_j(r_i)
jastrow    Padé–Jastrow e–e and e–n terms per electron: value, ∇, ∇², and the      ``Ue``, ``Ve``, ``lU`` (W, N),
           Coulomb potential from the same distances                               ``gU`` (W, N, 3)
accept     E_L, ln|ψ| and the drift at the proposal; Metropolis–Hastings with     ``R``, ``Rp``, ``drift``,
           the all-electron drift–diffusion Green's function (a fresh uniform);   ``logpsi``, ``eloc``, ``esum``,
           the next proposal R' = R + τ v(R) + √τ χ                                ``nacc``, ``accepted``
=========  ===================================================================  ==========================

The physics is the molecule module's (:mod:`qmckit.systems.molecule`): the same kernel parameter
vector, the same ψ_T = D↑ D↓ e^U, the same E_L (tests/test_molecule_speedup.py checks ln|ψ| and E_L
against :func:`~qmckit.systems.molecule.log_psi` and :func:`~qmckit.systems.molecule.local_energy`
to 1e-12, and the basis block against :func:`~qmckit.systems.gaussian_basis.basis_derivatives`).
Arithmetic: the basis functions are evaluated in float64 and stored in the GEMM's dtype; everything
after the GEMM is float64 (Φ read as float32 for the f32 kinds), as 001 kept its statistics in double.

Per-electron and per-walker physics is written once, as plain numba functions
(:func:`electron_pairs`, :func:`electron_terms`, :func:`walker_decide`, :func:`electron_update`),
and compiled a second time from their Python source as CUDA device functions (the technique of
:mod:`qmckit.backends.cuda_rng`), like :func:`~qmckit.systems.gaussian_basis.eval_point` and the
random streams (:mod:`qmckit.rng`: one xoroshiro128+ stream per electron, index w·N + i; the
acceptance uniform of walker w comes from stream w·N before that electron's normals).

CPU (numba, parallel over walkers or points; :class:`CpuStep`):
  basis   :func:`cpu_basis` (eval_point per point, prange over blocks of points)
  gemm    BLAS per walker in a prange (f64/f32; :func:`cpu_blas_by_block`) or :func:`cpu_kahan_matmul` (prange over rows; bit-equal to
          :func:`qmckit.precision.matmul_kahan_f32` and to the GPU kernel)
  slater  :func:`cpu_slater` (:func:`qmckit.systems.slater.invert` per walker and spin)
  jastrow :func:`cpu_pairs` (each pair once, i < l); :func:`cpu_pairs_per_electron` is the GPU's
          per-electron loop on the CPU
  accept  :func:`cpu_accept`

GPU (numba-cuda; :class:`GpuStep`):
  basis   thread per (point, basis chunk): the basis is cut into chunks of ≤ ``chunk_functions``
          functions (whole shells; :func:`basis_chunks`), each a packed basis of its own, so the
          eval_point twin runs on W·N × n_chunks threads and a warp shares its chunk (no divergence
          in the shell loop); value and Laplacian go straight into their rows of A, the gradient
          (n_bf, 3) block into a scratch, then a second kernel moves it into the rows ∂x, ∂y, ∂z of
          A (001's "layout conversion", Kernel 2)
  gemm    :func:`qmckit.backends.cuda_gemm.matmul` (tiled shared-memory GEMM, f64/f32/kahan32)
  slater  block per (walker, spin), matrices in global scratch: Gauss–Jordan of
          :func:`~qmckit.systems.slater.invert`, each column's pivot found by a block reduction
          (first index of the largest |entry|, as the serial loop picks it), the row operations
          spread over the block; element by element the same arithmetic as the CPU twin (the GPU
          contracts ``a − f·b`` into an fma), so the twins agree to round-off
  jastrow thread per electron (grid y = walkers): :func:`electron_pairs` (each pair from both ends)
  accept  block per walker: :func:`electron_terms` per electron, :func:`walker_decide` on thread 0
          (sums in electron order, as on the CPU), :func:`electron_update` per electron

Importing this module never needs CUDA: ``numba.cuda`` is imported on first use.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numba as nb
import numpy as np

from .. import rng as _rng
from ..rng import normal_pair, uniform
from ..systems import gaussian_basis as _gb
from ..systems import molecule as _mol
from ..systems import slater_jastrow as _sj
from ..systems.gaussian_basis import eval_point
from ..systems.slater_jastrow import pair_a
from ..systems.slater import invert
from . import cuda_import

PHASES = ("basis", "gemm", "slater", "jastrow", "accept")
KINDS = ("f64", "f32", "kahan32")
DTYPES = {"f64": np.dtype(np.float64), "f32": np.dtype(np.float32), "kahan32": np.dtype(np.float32)}
MAX_ORBITALS = 512  # per spin: the Slater kernel's shared pivot-factor array
SLATER_MAX_THREADS = 256  # the Slater kernel's reduction arrays
DEFAULT_CHUNK_FUNCTIONS = 24

cuda = None  # numba.cuda, imported on first use; a module global so that the simulator can swap it


def _cuda():
    return cuda_import.bind(globals())


from .cuda_import import available, simulated  # noqa: E402,F401  (this module's GPU questions, answered once)


# --------------------------------------------------------------------------------------------
# the system: the molecule's kernel parameter vector, unpacked
# --------------------------------------------------------------------------------------------
class StepSystem(NamedTuple):
    """What a step needs of a molecule (bohr, hartree), from its kernel parameter vector ``p``
    (:attr:`qmckit.systems.molecule.Molecule.kernel_params`, or a synthetic one of the same layout).

    chunks (G, L) / chunk_ao (G + 1,): the basis cut into G packed sub-bases (see :func:`basis_chunks`)
    """

    p: np.ndarray
    N: int
    n: int
    n_basis: int
    atoms: np.ndarray        # (n_atoms, 4): x, y, z, Z
    C: np.ndarray            # (n_basis, n) float64
    packed: np.ndarray       # the whole packed basis
    chunks: np.ndarray
    chunk_ao: np.ndarray
    jee: int
    beta_ee: float
    jen: int
    beta_en: float
    e_nuc: float


def unpack_params(p, chunk_functions: int = DEFAULT_CHUNK_FUNCTIONS) -> StepSystem:
    """A :class:`StepSystem` from a molecule kernel parameter vector (layout of :mod:`qmckit.systems.molecule`)."""
    p = np.ascontiguousarray(p, dtype=np.float64)
    N, n, na, nbf = (int(p[k]) for k in (_mol.P_N, _mol.P_NUP, _mol.P_NATOM, _mol.P_NBF))
    if N != 2 * n or N < 2:
        raise ValueError(f"closed shells only: N = {N}, n = {n}")
    if n > MAX_ORBITALS:
        raise ValueError(f"at most {MAX_ORBITALS} orbitals per spin, got {n}")
    if p[_mol.P_POLY] != 0.0:
        raise ValueError("the step has the Padé Jastrow terms only: set the polynomial coefficients (c_ee2, …) to 0")
    o = _mol.HEADER
    atoms = p[o:o + 4 * na].reshape(na, 4).copy()
    o += 4 * na
    C = p[o:o + nbf * n].reshape(nbf, n).copy()
    o += nbf * n
    packed = p[o:].copy()
    if int(packed[1]) != nbf:
        raise ValueError(f"packed basis has {int(packed[1])} functions, header says {nbf}")
    chunks, chunk_ao = basis_chunks(packed, chunk_functions)
    return StepSystem(p, N, n, nbf, atoms, C, packed, chunks, chunk_ao, int(p[_mol.P_JEE] != 0.0),
                      float(p[_mol.P_BEE]), int(p[_mol.P_JEN] != 0.0), float(p[_mol.P_BEN]), float(p[_mol.P_ENUC]))


def _shells(packed):
    """(offset, l, n_prim, n_functions) of every shell of a packed basis."""
    out = []
    o = 2
    for _ in range(int(packed[0])):
        l, n_prim = int(packed[o + 3]), int(packed[o + 4])
        out.append((o, l, n_prim, _gb.n_cartesian(l)))
        o += 5 + 2 * n_prim
    return out


def basis_chunks(packed, max_functions: int = DEFAULT_CHUNK_FUNCTIONS):
    """Cut a packed basis into consecutive groups of whole shells of at most ``max_functions``
    functions (a larger shell is a group of its own), each a valid packed basis.

    Returns ``(chunks (G, L) float64, zero-padded rows; chunk_ao (G + 1,) int64)``: chunk g holds the
    basis functions ``chunk_ao[g]:chunk_ao[g + 1]``. :func:`eval_point` on chunk g gives exactly
    those functions' numbers (two shells that share exponentials give the same numbers whether
    they are evaluated together or apart)."""
    packed = np.asarray(packed, dtype=np.float64)
    if max_functions < 1:
        raise ValueError(f"max_functions must be ≥ 1, got {max_functions}")
    groups, current, size = [], [], 0
    for shell in _shells(packed):
        if current and size + shell[3] > max_functions:
            groups.append(current)
            current, size = [], 0
        current.append(shell)
        size += shell[3]
    if current:
        groups.append(current)
    rows, ao = [], [0]
    for group in groups:
        body = [packed[o:o + 5 + 2 * n_prim] for o, _, n_prim, _ in group]
        nf = sum(s[3] for s in group)
        rows.append(np.concatenate([[float(len(group)), float(nf)], *body]))
        ao.append(ao[-1] + nf)
    L = max(len(r) for r in rows)
    chunks = np.zeros((len(rows), L))
    for g, r in enumerate(rows):
        chunks[g, :len(r)] = r
    return chunks, np.array(ao, dtype=np.int64)


# --------------------------------------------------------------------------------------------
# per-electron and per-walker physics: numba functions, compiled again as CUDA device functions
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, error_model="numpy")
def electron_nuclei(x, y, z, atoms, jen, beta_en):
    """The electron–nucleus terms of one electron at (x, y, z): ``(u, lap, v, gx, gy, gz)`` with
    u = Σ_A −Z_A r/(1 + β_en r), its Laplacian and gradient (with ``jen``) and v = −Σ_A Z_A/r."""
    u = 0.0
    lap = 0.0
    v = 0.0
    gx = 0.0
    gy = 0.0
    gz = 0.0
    for A in range(atoms.shape[0]):
        dx = x - atoms[A, 0]
        dy = y - atoms[A, 1]
        dz = z - atoms[A, 2]
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        Z = atoms[A, 3]
        v -= Z / r
        if jen != 0:
            b = 1.0 / (1.0 + beta_en * r)
            u -= Z * r * b
            c = -Z * b * b / r
            gx += c * dx
            gy += c * dy
            gz += c * dz
            lap -= 2.0 * Z * b * b * b / r
    return u, lap, v, gx, gy, gz


@nb.njit(cache=True, error_model="numpy")
def electron_pairs(R, i, n, atoms, jee, beta_ee, jen, beta_en, g):
    """Pair terms of electron ``i`` of one walker (R (N, 3)): returns ``(u_i, lap_i, v_i)`` and writes
    ∇_i U into ``g`` (3,).

    u_i   = ½ Σ_{l≠i} a_il r/(1 + β_ee r) + Σ_A −Z_A r/(1 + β_en r)   (Σ_i u_i = U)
    lap_i = ∇²_i U = Σ_{l≠i} 2 a_il/(r (1 + β_ee r)³) − Σ_A 2 Z_A/(r (1 + β_en r)³)
    v_i   = ½ Σ_{l≠i} 1/r_il − Σ_A Z_A/r_iA                            (Σ_i v_i = V_ee + V_en)

    (the e–e terms with ``jee``, the e–n terms with ``jen``; a_il of :func:`qmckit.systems.slater_jastrow.pair_a`)."""
    N = R.shape[0]
    x = R[i, 0]
    y = R[i, 1]
    z = R[i, 2]
    u, lap, v, gx, gy, gz = electron_nuclei(x, y, z, atoms, jen, beta_en)
    for l in range(N):
        if l == i:
            continue
        dx = x - R[l, 0]
        dy = y - R[l, 1]
        dz = z - R[l, 2]
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        v += 0.5 / r
        if jee != 0:
            a = pair_a(i, l, n)
            b = 1.0 / (1.0 + beta_ee * r)
            u += 0.5 * a * r * b
            c = a * b * b / r
            gx += c * dx
            gy += c * dy
            gz += c * dz
            lap += 2.0 * a * b * b * b / r
    g[0] = gx
    g[1] = gy
    g[2] = gz
    return u, lap, v


@nb.njit(cache=True, error_model="numpy")
def electron_terms(R, Rp, drift, gD, lD, gU, lU, w, i, tau, vnew, terms):
    """Electron i of walker w at the proposal Rp: the drift v' = ∇_i ln|ψ(Rp)| into ``vnew[w, i]``
    and into ``terms[w, i]``: the kinetic term −½(∇²D/D + ∇²U + |∇U|² + 2 ∇ln D·∇U), and
    |r'_i − r_i − τ v_i(R)|² and |r_i − r'_i − τ v'_i|² (forward and reverse Green's-function exponents)."""
    gdx = gD[w, i, 0]
    gdy = gD[w, i, 1]
    gdz = gD[w, i, 2]
    gux = gU[w, i, 0]
    guy = gU[w, i, 1]
    guz = gU[w, i, 2]
    terms[w, i, 0] = -0.5 * (lD[w, i] + lU[w, i] + gux * gux + guy * guy + guz * guz
                             + 2.0 * (gdx * gux + gdy * guy + gdz * guz))
    vx = gdx + gux
    vy = gdy + guy
    vz = gdz + guz
    vnew[w, i, 0] = vx
    vnew[w, i, 1] = vy
    vnew[w, i, 2] = vz
    fx = Rp[w, i, 0] - R[w, i, 0] - tau * drift[w, i, 0]
    fy = Rp[w, i, 1] - R[w, i, 1] - tau * drift[w, i, 1]
    fz = Rp[w, i, 2] - R[w, i, 2] - tau * drift[w, i, 2]
    bx = R[w, i, 0] - Rp[w, i, 0] - tau * vx
    by = R[w, i, 1] - Rp[w, i, 1] - tau * vy
    bz = R[w, i, 2] - Rp[w, i, 2] - tau * vz
    terms[w, i, 1] = fx * fx + fy * fy + fz * fz
    terms[w, i, 2] = bx * bx + by * by + bz * bz


@nb.njit(cache=True, error_model="numpy")
def walker_decide(w, N, logdet, Ue, Ve, terms, e_nuc, tau, first, states, logpsi, eloc, esum, nacc, accepted):
    """Walker w: ln|ψ(Rp)| and E_L(Rp) from the phases' sums (electron order), then the
    Metropolis–Hastings decision with a fresh uniform of stream w·N (``first``: accept without
    drawing, the start of a run); updates logpsi, eloc, esum (Σ E_L over steps), nacc, accepted[w]."""
    lp = logdet[w, 0] + logdet[w, 1]
    kin = 0.0
    pot = e_nuc
    fwd = 0.0
    bwd = 0.0
    for i in range(N):
        lp += Ue[w, i]
        kin += terms[w, i, 0]
        pot += Ve[w, i]
        fwd += terms[w, i, 1]
        bwd += terms[w, i, 2]
    if first != 0:
        acc = 1
    else:
        log_a = 2.0 * (lp - logpsi[w]) + (fwd - bwd) / (2.0 * tau)
        u = uniform(states, w * N)
        acc = 1 if (lp > -math.inf and u < math.exp(min(log_a, 0.0))) else 0
    if acc != 0:
        logpsi[w] = lp
        eloc[w] = kin + pot
    if first == 0:
        nacc[w] += acc
        esum[w] += eloc[w]
    accepted[w] = acc


@nb.njit(cache=True, error_model="numpy")
def electron_update(R, Rp, drift, vnew, states, w, i, N, tau, sqrt_tau, acc):
    """Electron i of walker w: take the proposal if the walker's move was accepted, then draw the
    next proposal r'_i = r_i + τ v_i + √τ χ from stream w·N + i (two normal pairs, the fourth normal
    discarded)."""
    if acc != 0:
        for c in range(3):
            R[w, i, c] = Rp[w, i, c]
            drift[w, i, c] = vnew[w, i, c]
    s = w * N + i
    z0, z1 = normal_pair(states, s)
    z2, _ = normal_pair(states, s)
    Rp[w, i, 0] = R[w, i, 0] + tau * drift[w, i, 0] + sqrt_tau * z0
    Rp[w, i, 1] = R[w, i, 1] + tau * drift[w, i, 1] + sqrt_tau * z1
    Rp[w, i, 2] = R[w, i, 2] + tau * drift[w, i, 2] + sqrt_tau * z2


# --------------------------------------------------------------------------------------------
# CPU phases (batched over walkers)
# --------------------------------------------------------------------------------------------
_POINT_BLOCK = 32


@nb.njit(cache=True, parallel=True, error_model="numpy")
def cpu_basis(packed, R, out):
    """Phase 1: value, ∂x, ∂y, ∂z, ∇² of every basis function at every electron of every walker.

    R (W, N, 3); out (W·N, 5, n_bf) of float64 or float32 (evaluated in float64, stored rounded).
    For float64 the numbers are :func:`~qmckit.systems.gaussian_basis.basis_derivatives`'s bit for bit."""
    W, N = R.shape[0], R.shape[1]
    P = W * N
    nbf = out.shape[2]
    for b in nb.prange((P + _POINT_BLOCK - 1) // _POINT_BLOCK):
        grad = np.empty((nbf, 3))
        for k in range(b * _POINT_BLOCK, min(P, (b + 1) * _POINT_BLOCK)):
            w = k // N
            i = k - w * N
            eval_point(packed, R[w, i, 0], R[w, i, 1], R[w, i, 2], out[k, 0], grad, out[k, 4], 2)
            for mu in range(nbf):
                out[k, 1, mu] = grad[mu, 0]
                out[k, 2, mu] = grad[mu, 1]
                out[k, 3, mu] = grad[mu, 2]


_ROW_BLOCK = 64


@nb.njit(cache=True, parallel=True)
def cpu_kahan_matmul(A, B, C):
    """C = A @ B in float32 with Kahan-compensated sums (001's KSF): per element ``p = a·b``,
    ``y = p − c``, ``t = s + y``, ``c = (t − s) − y``, ``s = t`` over k = 0 … K−1 — the arithmetic of
    :func:`qmckit.precision.matmul_kahan_f32` and of cuda_gemm's ``"kahan32"`` kernel (bit for bit),
    vectorised over the columns and parallel over blocks of rows. A (M, K), B (K, N), C (M, N) float32."""
    M, K = A.shape
    N = B.shape[1]
    for blk in nb.prange((M + _ROW_BLOCK - 1) // _ROW_BLOCK):
        s = np.empty(N, np.float32)
        c = np.empty(N, np.float32)
        for i in range(blk * _ROW_BLOCK, min(M, (blk + 1) * _ROW_BLOCK)):
            for j in range(N):
                s[j] = 0.0
                c[j] = 0.0
            for k in range(K):
                a = A[i, k]
                for j in range(N):
                    y = a * B[k, j] - c[j]
                    t = s[j] + y
                    c[j] = (t - s[j]) - y
                    s[j] = t
            for j in range(N):
                C[i, j] = s[j]


@nb.njit(cache=True, parallel=True)
def cpu_blas_by_block(A, B, out, rows):
    """``out = A @ B`` as one BLAS call per block of ``rows`` rows (a walker's 5N rows), the blocks in
    parallel. Each numba thread calls single-threaded BLAS (the timing children set
    OPENBLAS_NUM_THREADS=1): one multi-threaded BLAS call between numba's parallel phases left the BLAS
    library's threads spinning on the same cores, and every following numba phase waited for the
    scheduler (≈ 8 ms per phase on a 16-core host, whatever its work)."""
    for w in nb.prange(A.shape[0] // rows):
        np.dot(A[w * rows:(w + 1) * rows], B, out[w * rows:(w + 1) * rows])


def cpu_gemm(A, B, kind, out, rows=None):
    """Phase 2 on the CPU: ``out = A @ B`` (BLAS for f64/f32, by blocks of ``rows`` rows in parallel when
    given: :func:`cpu_blas_by_block`; :func:`cpu_kahan_matmul` for kahan32)."""
    if kind == "kahan32":
        cpu_kahan_matmul(A, B, out)
    elif rows:
        cpu_blas_by_block(A, B, out, rows)
    else:
        np.matmul(A, B, out=out)
    return out


@nb.njit(cache=True, parallel=True, error_model="numpy")
def cpu_slater(Phi, N, n, logdet, sign, gD, lD):
    """Phase 3: per walker and spin, the Slater matrix from Φ (rows (w·N + i)·5 + q), its inverse by
    :func:`~qmckit.systems.slater.invert` (as :func:`qmckit.systems.molecule.recompute` does: T =
    (Dᵀ)⁻¹), ln|det| and sign, then ∇_i ln D and ∇²_i D/D (the sums of
    :func:`qmckit.systems.molecule.local_energy`, in its order)."""
    W = logdet.shape[0]
    for w in nb.prange(W):
        M = np.empty((n, n))
        T = np.empty((n, n))
        for s in range(2):
            base = (w * N + s * n) * 5
            for k in range(n):
                for j in range(n):
                    M[j, k] = Phi[base + 5 * k, j]
            la, sg = invert(M, T)
            logdet[w, s] = la
            sign[w, s] = sg
            for k in range(n):
                i = s * n + k
                row = base + 5 * k
                gx = 0.0
                gy = 0.0
                gz = 0.0
                lp = 0.0
                for j in range(n):
                    t = T[k, j]
                    gx += Phi[row + 1, j] * t
                    gy += Phi[row + 2, j] * t
                    gz += Phi[row + 3, j] * t
                    lp += Phi[row + 4, j] * t
                gD[w, i, 0] = gx
                gD[w, i, 1] = gy
                gD[w, i, 2] = gz
                lD[w, i] = lp


@nb.njit(cache=True, parallel=True, error_model="numpy")
def cpu_pairs(R, n, atoms, jee, beta_ee, jen, beta_en, Ue, gU, lU, Ve):
    """Phase 4 on the CPU: the quantities of :func:`electron_pairs` for every electron, each e–e pair
    evaluated once (i < l) and shared between its two electrons. R (W, N, 3)."""
    W, N = R.shape[0], R.shape[1]
    for w in nb.prange(W):
        for i in range(N):
            Ue[w, i] = 0.0
            lU[w, i] = 0.0
            Ve[w, i] = 0.0
            gU[w, i, 0] = 0.0
            gU[w, i, 1] = 0.0
            gU[w, i, 2] = 0.0
        for i in range(N):
            x = R[w, i, 0]
            y = R[w, i, 1]
            z = R[w, i, 2]
            u, lap, v, gx, gy, gz = electron_nuclei(x, y, z, atoms, jen, beta_en)
            for l in range(i + 1, N):
                dx = x - R[w, l, 0]
                dy = y - R[w, l, 1]
                dz = z - R[w, l, 2]
                r = math.sqrt(dx * dx + dy * dy + dz * dz)
                h = 0.5 / r
                v += h
                Ve[w, l] += h
                if jee != 0:
                    a = pair_a(i, l, n)
                    b = 1.0 / (1.0 + beta_ee * r)
                    f = 0.5 * a * r * b
                    u += f
                    Ue[w, l] += f
                    c = a * b * b / r
                    gx += c * dx
                    gy += c * dy
                    gz += c * dz
                    gU[w, l, 0] -= c * dx
                    gU[w, l, 1] -= c * dy
                    gU[w, l, 2] -= c * dz
                    t = 2.0 * a * b * b * b / r
                    lap += t
                    lU[w, l] += t
            Ue[w, i] += u
            lU[w, i] += lap
            Ve[w, i] += v
            gU[w, i, 0] += gx
            gU[w, i, 1] += gy
            gU[w, i, 2] += gz


@nb.njit(cache=True, error_model="numpy")
def cpu_pairs_per_electron(R, n, atoms, jee, beta_ee, jen, beta_en, Ue, gU, lU, Ve):
    """Phase 4 as the GPU computes it: :func:`electron_pairs` for every electron (each e–e pair
    twice, once from each end). The CPU twin of the GPU Jastrow kernel (serial: it checks, it is
    not timed)."""
    W, N = R.shape[0], R.shape[1]
    for w in range(W):
        for i in range(N):
            u, lap, v = electron_pairs(R[w], i, n, atoms, jee, beta_ee, jen, beta_en, gU[w, i])
            Ue[w, i] = u
            lU[w, i] = lap
            Ve[w, i] = v


@nb.njit(cache=True, parallel=True, error_model="numpy")
def cpu_accept(R, Rp, drift, vnew, gD, lD, gU, lU, Ue, Ve, logdet, terms, states, tau, first, e_nuc,
               logpsi, eloc, esum, nacc, accepted):
    """Phase 5 on the CPU: :func:`electron_terms`, :func:`walker_decide`, :func:`electron_update`
    for every walker (parallel over walkers)."""
    W, N = R.shape[0], R.shape[1]
    sqrt_tau = math.sqrt(tau)
    for w in nb.prange(W):
        for i in range(N):
            electron_terms(R, Rp, drift, gD, lD, gU, lU, w, i, tau, vnew, terms)
        walker_decide(w, N, logdet, Ue, Ve, terms, e_nuc, tau, first, states, logpsi, eloc, esum, nacc, accepted)
        acc = accepted[w]
        for i in range(N):
            electron_update(R, Rp, drift, vnew, states, w, i, N, tau, sqrt_tau, acc)


# --------------------------------------------------------------------------------------------
# the state of W walkers, and the CPU step
# --------------------------------------------------------------------------------------------
STATE_ARRAYS = ("R", "Rp", "drift", "states", "logpsi", "eloc", "esum", "nacc", "accepted")
PHASE_ARRAYS = {"basis": ("A",), "gemm": ("Phi",), "slater": ("logdet", "sign", "gD", "lD"),
                "jastrow": ("Ue", "gU", "lU", "Ve"), "accept": ("vnew", "terms") + STATE_ARRAYS}


def initial_state(system: StepSystem, positions, seed: int) -> dict:
    """Host arrays of a fresh run: positions R = Rp (W, N, 3), zero drift, one random stream per
    electron (``qmckit.rng.seed_states(seed, W·N)``)."""
    R = np.ascontiguousarray(positions, dtype=np.float64)
    if R.ndim != 3 or R.shape[1:] != (system.N, 3):
        raise ValueError(f"positions must have shape (W, {system.N}, 3), got {R.shape}")
    W = R.shape[0]
    return {"R": R.copy(), "Rp": R.copy(), "drift": np.zeros_like(R),
            "states": _rng.seed_states(seed, W * system.N), "logpsi": np.zeros(W), "eloc": np.zeros(W),
            "esum": np.zeros(W), "nacc": np.zeros(W, np.int64), "accepted": np.zeros(W, np.int64)}


class CpuStep:
    """W walkers of a molecule on the CPU: the five phases of one all-electron VMC step as methods
    (:meth:`basis`, :meth:`gemm`, :meth:`slater`, :meth:`jastrow`, :meth:`accept`) and :meth:`step`,
    which calls them in that order. :meth:`start` evaluates the first positions (phases 1–4 and an
    accept that takes them). Arrays are attributes (see :data:`PHASE_ARRAYS`); ``kind`` picks the
    GEMM (and the dtype of A and Φ).

    ``pairs="symmetric"`` (default; each e–e pair once) or ``"per_electron"`` (the GPU's loop)."""

    def __init__(self, system: StepSystem, positions, seed: int = 0, tau: float = 0.02, kind: str = "f64",
                 pairs: str = "symmetric"):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if not (tau > 0 and math.isfinite(tau)):
            raise ValueError(f"tau must be positive, got {tau!r}")
        if pairs not in ("symmetric", "per_electron"):
            raise ValueError(f"pairs must be 'symmetric' or 'per_electron', got {pairs!r}")
        self.system = system
        self.kind = kind
        self.tau = float(tau)
        self.pairs = pairs
        for name, value in initial_state(system, positions, seed).items():
            setattr(self, name, value)
        W, N, n, nbf = self.R.shape[0], system.N, system.n, system.n_basis
        dt = DTYPES[kind]
        self.W = W
        self.A = np.empty((W * N * 5, nbf), dt)
        self.B = np.ascontiguousarray(system.C, dt)
        self.Phi = np.empty((W * N * 5, n), dt)
        self.logdet = np.zeros((W, 2))
        self.sign = np.zeros((W, 2))
        self.gD = np.zeros((W, N, 3))
        self.lD = np.zeros((W, N))
        self.Ue = np.zeros((W, N))
        self.gU = np.zeros((W, N, 3))
        self.lU = np.zeros((W, N))
        self.Ve = np.zeros((W, N))
        self.vnew = np.zeros((W, N, 3))
        self.terms = np.zeros((W, N, 3))

    def basis(self):
        cpu_basis(self.system.packed, self.Rp, self.A.reshape(self.W * self.system.N, 5, self.system.n_basis))

    def gemm(self):
        cpu_gemm(self.A, self.B, self.kind, self.Phi, rows=5 * self.system.N)

    def slater(self):
        cpu_slater(self.Phi, self.system.N, self.system.n, self.logdet, self.sign, self.gD, self.lD)

    def jastrow(self):
        s = self.system
        f = cpu_pairs if self.pairs == "symmetric" else cpu_pairs_per_electron
        f(self.Rp, s.n, s.atoms, s.jee, s.beta_ee, s.jen, s.beta_en, self.Ue, self.gU, self.lU, self.Ve)

    def accept(self, first: bool = False):
        cpu_accept(self.R, self.Rp, self.drift, self.vnew, self.gD, self.lD, self.gU, self.lU, self.Ue, self.Ve,
                   self.logdet, self.terms, self.states, self.tau, int(bool(first)), self.system.e_nuc,
                   self.logpsi, self.eloc, self.esum, self.nacc, self.accepted)

    def phase(self, name: str):
        """Run one phase by name (see :data:`PHASES`)."""
        getattr(self, name)()

    def start(self):
        """Evaluate ψ_T, E_L and the drift at the current positions and draw the first proposals."""
        self.basis()
        self.gemm()
        self.slater()
        self.jastrow()
        self.accept(first=True)

    def step(self):
        """One all-electron VMC step: phases 1–5 in order."""
        self.basis()
        self.gemm()
        self.slater()
        self.jastrow()
        self.accept()

    def synchronize(self):
        """Nothing to wait for on the CPU (the GPU class waits for its kernels)."""

    def arrays(self, names=None) -> dict:
        """Copies of the named arrays (default: all of :data:`PHASE_ARRAYS`)."""
        names = names or [a for group in PHASE_ARRAYS.values() for a in group]
        return {k: np.array(getattr(self, k)) for k in names}


@nb.njit(cache=True)
def cpu_matmul_seq(A, B, C):
    """C = A @ B with every element summed in k = 0 … K−1, one product and one sum per term: the order
    (and, without fma, the arithmetic) of cuda_gemm's f64/f32 kernels — which the CUDA simulator
    runs with ``cuda.fma`` as a product and a sum, so there the two agree bit for bit. Serial (a
    twin for checks, not timed)."""
    M, K = A.shape
    N = B.shape[1]
    for i in range(M):
        for j in range(N):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * B[k, j]  # rounded to C's dtype after every term


class TwinStep(CpuStep):
    """The CPU twin of :class:`GpuStep`: the same phases with the GPU's arithmetic where it differs
    from :class:`CpuStep` — GEMM in the GPU kernels' order (:func:`cpu_matmul_seq`, or
    :func:`cpu_kahan_matmul`), the per-electron pair loop. The basis is evaluated into float64 and
    rounded to the kind's dtype, Φ is read as float64 by the Slater phase (the same numbers as the
    float32 paths, with only float64 signatures to compile). With the same positions and seed, a
    :class:`GpuStep` gives these numbers up to the GPU's fma contraction and libdevice's last bits
    (bit for bit under the CUDA simulator)."""

    def __init__(self, system: StepSystem, positions, seed: int = 0, tau: float = 0.02, kind: str = "f64"):
        super().__init__(system, positions, seed=seed, tau=tau, kind=kind, pairs="per_electron")
        self.A64 = np.empty(self.A.shape)
        self.Phi64 = np.empty(self.Phi.shape)

    def basis(self):
        cpu_basis(self.system.packed, self.Rp, self.A64.reshape(self.W * self.system.N, 5, self.system.n_basis))
        self.A[...] = self.A64

    def gemm(self):
        if self.kind == "kahan32":
            cpu_kahan_matmul(self.A, self.B, self.Phi)
        else:
            cpu_matmul_seq(self.A, self.B, self.Phi)

    def slater(self):
        self.Phi64[...] = self.Phi
        cpu_slater(self.Phi64, self.system.N, self.system.n, self.logdet, self.sign, self.gD, self.lD)


def compare_arrays(a: dict, b: dict) -> dict:
    """Per array: max |a − b|, max |a|, their ratio, and whether they are equal bit for bit."""
    out = {}
    for k in a:
        x = np.asarray(a[k])
        y = np.asarray(b[k])
        if x.dtype.kind in "fc":
            x = x.astype(np.float64)
            y = y.astype(np.float64)
            same = bool(np.array_equal(x, y, equal_nan=True))
            both = np.isfinite(x) & np.isfinite(y)
            diff = float(np.max(np.abs(x[both] - y[both]))) if both.any() else 0.0
            ref = float(np.max(np.abs(x[both]))) if both.any() else 0.0
            out[k] = {"max_abs_diff": diff, "max_abs": ref, "rel": diff / ref if ref > 0 else diff, "equal": same,
                      "same_nonfinite": bool(np.array_equal(~np.isfinite(x), ~np.isfinite(y)))}
        else:
            same = bool(np.array_equal(x, y))
            out[k] = {"equal": same, "differing": int(np.sum(x != y))}
    return out


def twin_check(system: StepSystem, positions, kind: str = "f64", seed: int = 0, tau: float = 0.005,
               steps: int = 2, threads: dict | None = None, tile=None) -> dict:
    """Run :class:`GpuStep` and its CPU twin :class:`TwinStep` from the same positions and streams:
    the four evaluation phases of :meth:`start` one by one, then its accept, then ``steps`` steps;
    :func:`compare_arrays` of each phase's outputs (``"phases"``) and of the whole state after the
    start and after every step (``"steps"``)."""
    cpu = TwinStep(system, positions, seed=seed, tau=tau, kind=kind)
    gpu = GpuStep(system, positions, seed=seed, tau=tau, kind=kind, threads=threads, tile=tile)
    out = {"kind": kind, "walkers": cpu.W, "n_electrons": system.N, "n_basis": system.n_basis, "phases": {},
           "steps": []}
    for name in ("basis", "gemm", "slater", "jastrow"):
        cpu.phase(name)
        gpu.phase(name)
        gpu.synchronize()
        out["phases"][name] = compare_arrays(cpu.arrays(PHASE_ARRAYS[name]), gpu.arrays(PHASE_ARRAYS[name]))
    cpu.accept(first=True)
    gpu.accept(first=True)
    names = [a for group in PHASE_ARRAYS.values() for a in group]
    out["steps"].append(compare_arrays(cpu.arrays(names), gpu.arrays(names)))
    for _ in range(steps):
        cpu.step()
        gpu.step()
        out["steps"].append(compare_arrays(cpu.arrays(names), gpu.arrays(names)))
    out["accepted_cpu"] = int(cpu.nacc.sum())
    out["accepted_gpu"] = int(gpu.arrays(["nacc"])["nacc"].sum())
    return out


# --------------------------------------------------------------------------------------------
# GPU: device twins and kernels
# --------------------------------------------------------------------------------------------
_twin = cuda_import.device_twin


@functools.lru_cache(maxsize=None)
def device_functions() -> dict:
    """CUDA device twins, compiled from the CPU functions' own source: ``eval_point`` (with its
    ``ipow``), ``pair_a``, :func:`electron_nuclei`, :func:`electron_pairs`, :func:`electron_terms`, :func:`walker_decide`,
    :func:`electron_update` (these call the xoroshiro twins of :mod:`qmckit.backends.cuda_rng`)."""
    from . import cuda_rng

    kw = cuda_rng._DEVICE_KW
    gb_ns = dict(vars(_gb))
    gb_ns["ipow"] = _twin(_gb.ipow, gb_ns, kw)
    ev = _twin(_gb.eval_point, gb_ns, kw)
    pair_a = _twin(_sj.pair_a, dict(vars(_sj)), kw)
    ns = dict(globals())
    ns.update({"uniform": cuda_rng.uniform, "normal_pair": cuda_rng.normal_pair, "eval_point": ev, "pair_a": pair_a})
    ns["electron_nuclei"] = _twin(electron_nuclei, ns, kw)
    twins = {name: _twin(globals()[name], ns, kw)
             for name in ("electron_pairs", "electron_terms", "walker_decide", "electron_update")}
    ns.update(twins)
    return {"eval_point": ev, "pair_a": pair_a, **twins}


@functools.lru_cache(maxsize=None)
def kernels() -> dict:
    """The kernels (compiled on first launch, per argument types): ``basis``, ``grad_layout``,
    ``slater``, ``pairs``, ``accept``."""
    c = _cuda()
    d = device_functions()
    eval_point_d = d["eval_point"]
    electron_pairs_d = d["electron_pairs"]
    electron_terms_d = d["electron_terms"]
    walker_decide_d = d["walker_decide"]
    electron_update_d = d["electron_update"]
    f8 = nb.float64
    i8 = nb.int64
    MAXO = MAX_ORBITALS
    NT = SLATER_MAX_THREADS

    @c.jit
    def basis_kernel(chunks, chunk_ao, R, A, Gs):
        """Thread per (point, chunk): point p = w·N + i along x, chunk g along y. Value and Laplacian
        into A rows 5p and 5p + 4, the gradient into Gs[p] (n_bf, 3)."""
        p = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        g = cuda.blockIdx.y
        N = R.shape[1]
        if p >= R.shape[0] * N:
            return
        w = p // N
        i = p - w * N
        o = chunk_ao[g]
        e = chunk_ao[g + 1]
        r = 5 * p
        eval_point_d(chunks[g], R[w, i, 0], R[w, i, 1], R[w, i, 2], A[r, o:e], Gs[p, o:e], A[r + 4, o:e], 2)

    @c.jit
    def grad_layout_kernel(Gs, A):
        """A[5p + 1 + c, μ] = Gs[p, μ, c] (thread per (p, μ), μ fastest: coalesced writes)."""
        t = cuda.grid(1)
        nbf = Gs.shape[1]
        if t >= Gs.shape[0] * nbf:
            return
        p = t // nbf
        mu = t - p * nbf
        r = 5 * p
        A[r + 1, mu] = Gs[p, mu, 0]
        A[r + 2, mu] = Gs[p, mu, 1]
        A[r + 3, mu] = Gs[p, mu, 2]

    @c.jit
    def slater_kernel(Phi, N, n, Mw, Tw, logdet, sign, gD, lD):
        """Block b = 2w + s: walker w, spin s. Mw, Tw (2W, n, n) global scratch: Mw = Dᵀ, eliminated
        to the identity (Gauss–Jordan, partial pivoting), Tw = (Dᵀ)⁻¹. blockDim.x: a power of 2 ≤ 256."""
        b = cuda.blockIdx.x
        w = b // 2
        s = b - 2 * w
        t = cuda.threadIdx.x
        B = cuda.blockDim.x
        TX = 32 if B >= 32 else B
        TY = B // TX
        tx = t % TX
        ty = t // TX
        M = Mw[b]
        T = Tw[b]
        f = cuda.shared.array(MAXO, f8)
        bv = cuda.shared.array(NT, f8)
        bi = cuda.shared.array(NT, i8)
        base = (w * N + s * n) * 5
        nn = n * n
        for e in range(t, nn, B):
            j = e // n
            k = e - j * n
            M[j, k] = Phi[base + 5 * k, j]
            T[j, k] = 1.0 if j == k else 0.0
        cuda.syncthreads()
        log_abs = 0.0
        sgn = 1.0
        singular = False
        for col in range(n):
            best = -1.0
            idx = n
            for r in range(col + t, n, B):
                a = abs(M[r, col])
                if a > best:
                    best = a
                    idx = r
            bv[t] = best
            bi[t] = idx
            cuda.syncthreads()
            stride = B // 2
            while stride > 0:
                if t < stride:
                    v2 = bv[t + stride]
                    i2 = bi[t + stride]
                    if v2 > bv[t] or (v2 == bv[t] and i2 < bi[t]):
                        bv[t] = v2
                        bi[t] = i2
                cuda.syncthreads()
                stride //= 2
            best = bv[0]
            piv = bi[0]
            if not best > 0.0:  # also NaN: the same for every thread of the block
                singular = True
                break
            if piv != col:
                sgn = -sgn
                for k in range(t, n, B):
                    x = M[col, k]
                    M[col, k] = M[piv, k]
                    M[piv, k] = x
                    x = T[col, k]
                    T[col, k] = T[piv, k]
                    T[piv, k] = x
                cuda.syncthreads()
            d = M[col, col]
            log_abs += math.log(abs(d))
            if d < 0.0:
                sgn = -sgn
            inv_d = 1.0 / d
            cuda.syncthreads()  # every thread has read d before row col is scaled
            for k in range(t, n, B):
                M[col, k] *= inv_d
                T[col, k] *= inv_d
            for r in range(t, n, B):
                f[r] = M[r, col]
            cuda.syncthreads()
            # rows r ≡ ty (mod TY), columns k ≡ tx (mod TX): a warp updates consecutive columns of
            # one row (coalesced), no integer division. Columns left of col are finished (row col
            # holds (near) zeros there), so M is updated from col on; T everywhere.
            for r in range(ty, n, TY):
                if r != col:
                    fr = f[r]
                    if fr != 0.0:
                        for k in range(col + tx, n, TX):
                            M[r, k] -= fr * M[col, k]
                        for k in range(tx, n, TX):
                            T[r, k] -= fr * T[col, k]
            cuda.syncthreads()
        if singular:
            for e in range(t, nn, B):
                j = e // n
                T[j, e - j * n] = math.nan
            cuda.syncthreads()
            log_abs = -math.inf
            sgn = 0.0
        if t == 0:
            logdet[w, s] = log_abs
            sign[w, s] = sgn
        for k in range(t, n, B):
            i = s * n + k
            row = base + 5 * k
            gx = 0.0
            gy = 0.0
            gz = 0.0
            lp = 0.0
            for j in range(n):
                tt = T[k, j]
                gx += float(Phi[row + 1, j]) * tt
                gy += float(Phi[row + 2, j]) * tt
                gz += float(Phi[row + 3, j]) * tt
                lp += float(Phi[row + 4, j]) * tt
            gD[w, i, 0] = gx
            gD[w, i, 1] = gy
            gD[w, i, 2] = gz
            lD[w, i] = lp

    @c.jit
    def pairs_kernel(R, n, atoms, jee, beta_ee, jen, beta_en, Ue, gU, lU, Ve):
        """Thread per electron i (x), walker w = blockIdx.y."""
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        w = cuda.blockIdx.y
        if i >= R.shape[1]:
            return
        u, lap, v = electron_pairs_d(R[w], i, n, atoms, jee, beta_ee, jen, beta_en, gU[w, i])
        Ue[w, i] = u
        lU[w, i] = lap
        Ve[w, i] = v

    @c.jit
    def accept_kernel(R, Rp, drift, vnew, gD, lD, gU, lU, Ue, Ve, logdet, terms, states, tau, first, e_nuc,
                      logpsi, eloc, esum, nacc, accepted):
        """Block per walker: per-electron terms, thread 0 decides, per-electron updates."""
        w = cuda.blockIdx.x
        t = cuda.threadIdx.x
        B = cuda.blockDim.x
        N = R.shape[1]
        for i in range(t, N, B):
            electron_terms_d(R, Rp, drift, gD, lD, gU, lU, w, i, tau, vnew, terms)
        cuda.syncthreads()
        if t == 0:
            walker_decide_d(w, N, logdet, Ue, Ve, terms, e_nuc, tau, first, states, logpsi, eloc, esum, nacc,
                            accepted)
        cuda.syncthreads()
        acc = accepted[w]
        sqrt_tau = math.sqrt(tau)
        for i in range(t, N, B):
            electron_update_d(R, Rp, drift, vnew, states, w, i, N, tau, sqrt_tau, acc)

    return {"basis": basis_kernel, "grad_layout": grad_layout_kernel, "slater": slater_kernel,
            "pairs": pairs_kernel, "accept": accept_kernel}


def _pow2_at_least(x: int, lo: int, hi: int) -> int:
    v = lo
    while v < x and v < hi:
        v *= 2
    return v


class GpuStep:
    """W walkers of a molecule on the GPU: the same phases, arrays and methods as :class:`CpuStep`
    (device arrays; :meth:`arrays` copies them to the host). Launches are asynchronous:
    :meth:`synchronize` waits for them.

    threads: {"basis": 128, "layout": 256, "slater": power of 2 ≥ n/… (≤ 256), "pairs": ≤ 128,
    "accept": ≤ 128}; ``tile``: cuda_gemm tile for the GEMM (None: its default for n)."""

    def __init__(self, system: StepSystem, positions, seed: int = 0, tau: float = 0.02, kind: str = "f64",
                 threads: dict | None = None, tile=None):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if not (tau > 0 and math.isfinite(tau)):
            raise ValueError(f"tau must be positive, got {tau!r}")
        c = _cuda()
        from . import cuda_gemm

        self._gemm = cuda_gemm
        self.system = system
        self.kind = kind
        self.tau = float(tau)
        self.tile = tile
        self._k = kernels()
        host = initial_state(system, positions, seed)
        W, N, n, nbf = host["R"].shape[0], system.N, system.n, system.n_basis
        self.W = W
        th = {"basis": 128, "layout": 256, "slater": _pow2_at_least(n, 32, 128),
              "pairs": min(128, 32 * (-(-N // 32))), "accept": min(128, 32 * (-(-N // 32)))}
        th.update(threads or {})
        sl = th["slater"]
        if sl < 1 or sl > SLATER_MAX_THREADS or sl & (sl - 1):
            raise ValueError(f"threads['slater'] must be a power of 2 ≤ {SLATER_MAX_THREADS}, got {sl}")
        self.threads = th
        dt = DTYPES[kind]
        for name, value in host.items():
            setattr(self, name, c.to_device(value))
        self.chunks = c.to_device(system.chunks)
        self.chunk_ao = c.to_device(system.chunk_ao)
        self.atoms = c.to_device(system.atoms)
        self.B = c.to_device(np.ascontiguousarray(system.C, dt))
        self.A = c.device_array((W * N * 5, nbf), dt)
        self.Gs = c.device_array((W * N, nbf, 3), dt)
        self.Phi = c.device_array((W * N * 5, n), dt)
        self.Mw = c.device_array((2 * W, n, n), np.float64)
        self.Tw = c.device_array((2 * W, n, n), np.float64)
        for name, shape in (("logdet", (W, 2)), ("sign", (W, 2)), ("gD", (W, N, 3)), ("lD", (W, N)),
                            ("Ue", (W, N)), ("gU", (W, N, 3)), ("lU", (W, N)), ("Ve", (W, N)),
                            ("vnew", (W, N, 3)), ("terms", (W, N, 3))):
            setattr(self, name, c.to_device(np.zeros(shape)))

    # --- phases ---------------------------------------------------------------------------------
    def basis(self):
        """Phase 1: the basis kernel and the gradient layout conversion."""
        s, th = self.system, self.threads
        P = self.W * s.N
        if P == 0:
            return
        grid = ((P + th["basis"] - 1) // th["basis"], s.chunks.shape[0])
        self._k["basis"][grid, th["basis"]](self.chunks, self.chunk_ao, self.Rp, self.A, self.Gs)
        total = P * s.n_basis
        self._k["grad_layout"][(total + th["layout"] - 1) // th["layout"], th["layout"]](self.Gs, self.A)

    def gemm(self):
        self._gemm.matmul(self.A, self.B, self.kind, out=self.Phi, tile=self.tile)

    def slater(self):
        s = self.system
        self._k["slater"][2 * self.W, self.threads["slater"]](self.Phi, s.N, s.n, self.Mw, self.Tw, self.logdet,
                                                               self.sign, self.gD, self.lD)

    def jastrow(self):
        s, th = self.system, self.threads["pairs"]
        self._k["pairs"][((s.N + th - 1) // th, self.W), th](self.Rp, s.n, self.atoms, s.jee, s.beta_ee, s.jen,
                                                              s.beta_en, self.Ue, self.gU, self.lU, self.Ve)

    def accept(self, first: bool = False):
        self._k["accept"][self.W, self.threads["accept"]](
            self.R, self.Rp, self.drift, self.vnew, self.gD, self.lD, self.gU, self.lU, self.Ue, self.Ve,
            self.logdet, self.terms, self.states, self.tau, int(bool(first)), self.system.e_nuc, self.logpsi,
            self.eloc, self.esum, self.nacc, self.accepted)

    phase = CpuStep.phase
    start = CpuStep.start
    step = CpuStep.step

    def synchronize(self):
        _cuda().synchronize()

    def arrays(self, names=None) -> dict:
        """Host copies of the named device arrays (default: all of :data:`PHASE_ARRAYS`)."""
        names = names or [a for group in PHASE_ARRAYS.values() for a in group]
        return {k: getattr(self, k).copy_to_host() for k in names}

    def registers(self) -> dict:
        """Registers per thread of the compiled kernels (None where not compiled, and under the simulator)."""
        out = {}
        for name, kern in self._k.items():
            get = getattr(kern, "get_regs_per_thread", None)
            try:
                regs = get() if get else None
                if isinstance(regs, dict):
                    regs = max(regs.values()) if regs else None
                out[name] = None if regs is None else int(regs)
            except Exception:  # noqa: BLE001
                out[name] = None
        return out


__all__ = ["PHASES", "KINDS", "StepSystem", "unpack_params", "basis_chunks", "CpuStep", "GpuStep",
           "electron_pairs", "electron_terms", "walker_decide", "electron_update", "cpu_basis", "cpu_gemm",
           "cpu_kahan_matmul", "cpu_slater", "cpu_pairs", "cpu_pairs_per_electron", "cpu_accept",
           "initial_state", "simulated", "available", "device_functions", "kernels", "TwinStep", "cpu_matmul_seq",
           "compare_arrays", "twin_check"]
