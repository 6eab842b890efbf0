"""Study 001 (Anderson et al. 2007), target T3: relative error of the local energy E_L when the batched
orbital product is done in float32.

Study 001 (§5.1, §6) reports that with Kahan-compensated float32 matrix products ("KSF") the relative
error of E_L is about 1e-6, constant across its 7 molecules (no number without KSF; it does not say
whether 1e-6 is a mean, median or maximum). Here the single-precision part is exactly the one 001 put
on the GPU: the product (basis-function values, ∂x, ∂y, ∂z, ∇²) × (MO coefficients),

    (C·N·5) × n_basis  @  n_basis × n       (C configurations, N electrons, n = N/2 orbitals)

done with the float32 kernels of :mod:`qmckit.precision` (inputs rounded to float32 first, as a
float32 pipeline has them). Everything else is float64: the basis functions themselves
(:func:`~qmckit.systems.gaussian_basis.basis_derivatives`), the Slater inverses, the Jastrow factor,
the potential and the assembly of E_L, which is the module's own
:func:`~qmckit.systems.molecule.local_energy` fed with the supplied orbital rows
(:func:`~qmckit.systems.molecule.local_energy_from_orbitals`).

Arithmetics (keys of the result):

``"f64"``                   float64 products and sums, sequential in μ as the module's kernel sums:
                            the validation path, which reproduces the module's E_L bit for bit
``"f32"``                   :func:`~qmckit.precision.matmul_f32` (round to nearest)
``"kahan_f32"``             :func:`~qmckit.precision.matmul_kahan_f32` (001's KSF)
``"truncating_f32"``        :func:`~qmckit.precision.matmul_truncating_f32` (2006-GPU emulation:
                            every product and sum rounded toward zero)
``"kahan_truncating_f32"``  :func:`~qmckit.precision.matmul_kahan_truncating_f32`
``"f32_inputs"``            diagnostic: :func:`~qmckit.precision.matmul_f64` (inputs rounded to
                            float32, products and sums in float64): the error of storing basis values
                            and coefficients in float32 alone, the floor of any float32 arithmetic

The orbital rows are the float32 results converted (exactly) to float64. The reference E_L is the
module's :func:`~qmckit.systems.molecule.local_energy` at the same positions.

Configurations come from a short VMC run of the molecule (:class:`~qmckit.runs.VMCRun`, drift
sampler, CPU): ``walkers`` walkers equilibrated, then snapshots of all walkers ``spacing`` sweeps
apart, so the positions are drawn from |ψ_T|² (the Jastrow factor included when ``jastrow``).
"""
from __future__ import annotations

import math
import time

import numba as nb
import numpy as np

from .. import precision as P
from ..runs import RunConfig, make_run
from ..systems.gaussian_basis import basis_derivatives
from ..systems.molecule import Molecule, local_energy, local_energy_from_orbitals

PUBLISHED_RELATIVE_ERROR = 1e-6  # 001 §6: |ΔE_L/E_L| ≈ 1e-6 with KSF, "for all molecules"

ARITHMETICS = ("f32", "kahan_f32", "truncating_f32", "kahan_truncating_f32")
DIAGNOSTICS = ("f64", "f32_inputs")


@nb.njit(cache=True)
def matmul_seq_f64(A, B):
    """(M, K) @ (K, N) in float64, each element summed sequentially in k from 0 (the order of the
    molecule kernel's contraction, so the numbers are the kernel's bit for bit)."""
    M, K = A.shape
    N = B.shape[1]
    Bt = np.ascontiguousarray(B.T)
    C = np.empty((M, N))
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s += A[i, k] * Bt[j, k]
            C[i, j] = s
    return C


PRODUCTS = {
    "f64": matmul_seq_f64,
    "f32": P.matmul_f32,
    "kahan_f32": P.matmul_kahan_f32,
    "truncating_f32": P.matmul_truncating_f32,
    "kahan_truncating_f32": P.matmul_kahan_truncating_f32,
    "f32_inputs": P.matmul_f64,
}


def _molecule(molecule, basis: str, jastrow: bool) -> Molecule:
    if isinstance(molecule, Molecule):
        return molecule
    return Molecule(xyz=molecule, basis=basis, jastrow=jastrow)


def _sample(system: Molecule, configurations: int, seed: int, walkers: int, spacing: int, dt: float,
            equilibration: int) -> tuple[np.ndarray, float]:
    walkers = max(1, min(walkers, configurations))
    run = make_run(RunConfig(system="molecule", params=system.params.as_dict(), walkers=walkers, steps=1,
                             dt=dt, seed=seed, equilibration=equilibration, backend="cpu"))
    run.equilibrate()
    snapshots, accepted = [], []
    while sum(len(s) for s in snapshots) < configurations:
        _, acceptance = run.vmc.sweep(spacing, measure=False)
        snapshots.append(run.walkers.positions.copy())
        accepted.append(acceptance)
    return np.concatenate(snapshots)[:configurations], float(np.mean(accepted))


def sample_configurations(molecule, basis: str = "cc-pvdz", configurations: int = 200, seed: int = 1,
                          jastrow: bool = True, walkers: int = 20, spacing: int = 10, dt: float = 0.02,
                          equilibration: int = 200) -> np.ndarray:
    """Positions (configurations, N, 3) in bohr from |ψ_T|²: a VMC run (:class:`~qmckit.runs.VMCRun`,
    drift sampler, CPU) of ``walkers`` walkers, ``equilibration`` sweeps, then a snapshot of every
    walker each ``spacing`` sweeps until ``configurations`` are collected."""
    system = _molecule(molecule, basis, jastrow)
    return _sample(system, configurations, seed, walkers, spacing, dt, equilibration)[0]


def orbital_rows(system: Molecule, positions: np.ndarray, arithmetic: str):
    """Orbital values (C, N, n), gradients (C, N, n, 3) and Laplacians (C, N, n) at ``positions``
    (C, N, 3): float64 basis derivatives, then one batched product with ``arithmetic``."""
    Cn, N, _ = positions.shape
    B = basis_derivatives(system.basis, positions.reshape(-1, 3))  # (C·N, 5, n_basis), float64
    nbf = B.shape[2]
    coefficients = np.ascontiguousarray(system.mo_coefficients)
    out = np.asarray(PRODUCTS[arithmetic](B.reshape(-1, nbf), coefficients), dtype=np.float64)
    out = out.reshape(Cn, N, 5, coefficients.shape[1])
    return out[:, :, 0], np.ascontiguousarray(out[:, :, 1:4].transpose(0, 1, 3, 2)), out[:, :, 4]


def local_energies(system: Molecule, positions: np.ndarray, arithmetic: str | None = None) -> np.ndarray:
    """E_L (C,) at ``positions`` (C, N, 3): the module's kernel (``arithmetic=None``) or with the
    orbital product done in ``arithmetic`` (a key of :data:`PRODUCTS`)."""
    p = system.kernel_params
    cache = np.zeros(system.cache_size())
    out = np.empty(len(positions))
    if arithmetic is None:
        for c, R in enumerate(positions):
            cache[:] = 0.0
            out[c] = local_energy(np.ascontiguousarray(R), p, cache)
        return out
    values, gradients, laplacians = orbital_rows(system, positions, arithmetic)
    for c, R in enumerate(positions):
        cache[:] = 0.0
        out[c] = local_energy_from_orbitals(R, p, values[c], gradients[c], laplacians[c], cache)
    return out


def _stats(delta: np.ndarray, reference: np.ndarray) -> dict:
    rel = np.abs(delta) / np.abs(reference)
    return {"median": float(np.median(rel)), "p90": float(np.percentile(rel, 90)), "mean": float(np.mean(rel)),
            "max": float(np.max(rel)), "median_abs_Eh": float(np.median(np.abs(delta))),
            "mean_signed_rel": float(np.mean(delta / np.abs(reference)))}


def local_energy_precision(molecule, basis: str = "cc-pvdz", configurations: int = 200, seed: int = 1,
                           jastrow: bool = True, arithmetics=ARITHMETICS + DIAGNOSTICS, walkers: int = 20,
                           spacing: int = 10, dt: float = 0.02, equilibration: int = 200,
                           positions: np.ndarray | None = None) -> dict:
    """Relative error |E_L(arith) − E_L(f64)| / |E_L(f64)| over VMC configurations of ``molecule``.

    ``molecule``: a built-in name (``h2o``, ``ne``, ``acetic-acid``, ``glycine``, ``benzoic-acid``),
    an xyz accepted by :class:`~qmckit.systems.molecule.MoleculeParams`, or a :class:`Molecule`.
    Configurations: :func:`sample_configurations` (``walkers``, ``spacing``, ``dt``, ``equilibration``)
    unless ``positions`` (C, N, 3) are given.
    Returns ``{"molecule", "basis", "n_electrons", "n_basis", "configurations", "seed", "jastrow", "sampling",
    "E_L_mean", "errors": {arith: {"median", "p90", "mean", "max", "median_abs_Eh", "mean_signed_rel"}},
    "timing_s"}``; ``"f64"`` (if asked for) must give 0, which shows that the path reproduces the
    module's E_L. ``mean_signed_rel`` is the mean of (E_L(arith) − E_L(f64)) / |E_L(f64)|: a bias.
    """
    unknown = [a for a in arithmetics if a not in PRODUCTS]
    if unknown:
        raise ValueError(f"unknown arithmetic(s) {unknown}; choose from {', '.join(PRODUCTS)}")
    system = _molecule(molecule, basis, jastrow)
    timing = {}
    start = time.perf_counter()
    acceptance = None
    if positions is None:
        positions, acceptance = _sample(system, configurations, seed, walkers, spacing, dt, equilibration)
    positions = np.ascontiguousarray(positions, dtype=np.float64)
    timing["sampling"] = time.perf_counter() - start
    start = time.perf_counter()
    reference = local_energies(system, positions)
    timing["reference"] = time.perf_counter() - start
    errors = {}
    for arithmetic in arithmetics:
        start = time.perf_counter()
        energies = local_energies(system, positions, arithmetic)
        timing[arithmetic] = time.perf_counter() - start
        errors[arithmetic] = _stats(energies - reference, reference)
    p = system.params
    return {"molecule": p.xyz, "basis": p.basis, "n_electrons": system.n_particles, "n_basis": system.n_basis,
            "configurations": int(len(positions)), "seed": int(seed), "jastrow": bool(p.jastrow),
            "sampling": None if acceptance is None else {"walkers": max(1, min(walkers, configurations)),
                                                         "equilibration_sweeps": equilibration,
                                                         "spacing_sweeps": spacing, "dt": dt,
                                                         "acceptance": acceptance},
            "E_L_mean": float(np.mean(reference)), "E_L_median": float(np.median(reference)),
            "E_RHF": float(system.rhf_energy), "errors": errors, "timing_s": timing}


__all__ = ["local_energy_precision", "sample_configurations", "orbital_rows", "local_energies",
           "matmul_seq_f64", "ARITHMETICS", "DIAGNOSTICS", "PRODUCTS", "PUBLISHED_RELATIVE_ERROR"]
