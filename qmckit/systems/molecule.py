"""Closed-shell molecules in a Gaussian basis: RHF Slater determinants from PySCF times a Padé–Jastrow
factor (study 001, Anderson et al. 2007: all-electron QMC with Cartesian Gaussian orbitals).

Units: atomic units (bohr, hartree E_h, time ħ/E_h). Clamped nuclei A of charge Z_A at R_A; N electrons
(N = Σ Z_A − charge, even), N↑ = N↓ = n = N/2 (electrons 0..n−1 up, the rest down):

    H = Σ_i [−½∇_i² − Σ_A Z_A/r_iA] + Σ_{i<j} 1/r_ij + E_nn,      E_nn = Σ_{A<B} Z_A Z_B / R_AB
    ψ_T = D↑ D↓ exp(U),   D_s[k, j] = φ_j(r_k),   φ_j = Σ_μ χ_μ C[μ, j]

The orbitals φ_j are the n lowest canonical RHF molecular orbitals of ``scf.RHF(mol).run()`` for a
PySCF ``Mole`` built with ``cart=True`` (the basis functions χ_μ are Cartesian Gaussians, see
:mod:`qmckit.systems.gaussian_basis`), the same orbitals for both spins. With the Jastrow factor off,
⟨E_L⟩ over |D↑D↓|² is exactly the RHF energy (nuclear repulsion included): the must-show check.

The Jastrow exponent U has two optional Padé parts (``jastrow=False`` drops both):

    e–e (``jastrow_ee``):  Σ_{i<j} a_ij r_ij / (1 + β_ee r_ij),  a_ij = ½ antiparallel, ¼ parallel
    e–n (``jastrow_en``):  Σ_i Σ_A −Z_A r_iA / (1 + β_en r_iA)

and a polynomial part (coefficients ``c_ee2``, ``c_ee3``, ``c_en2``, ``c_en3``, all 0 by default) in the scaled
distance r̄ = r/(1 + r) (bohr), which starts at r̄² so that it leaves the cusps alone:

    Σ_{i<j} (c_ee2 r̄_ij² + c_ee3 r̄_ij³) + Σ_i Σ_A (c_en2 r̄_iA² + c_en3 r̄_iA³)

It is linear in its coefficients, so ∂ ln ψ/∂c is exact (the optimisers' input, :mod:`qmckit.methods.optimizers`).
The Padé parts have the Kato cusp slopes at contact. Gaussian orbitals have zero slope at a nucleus, so the
bare determinant misses the electron–nucleus cusp and E_L diverges like −Z/r there; the e–n term
gives ψ_T the slope −Z_A back and cancels that divergence for r ≲ 1/β_en. The RHF orbitals are not
reoptimised, so both terms must stay short-ranged: the e–n factor multiplies the density near a
nucleus by up to e^{−2Z/β_en}, and a long-ranged e–e term (small β_ee) pushes all electrons apart.
Measured on H2O and Ne in cc-pVDZ (reweighting 19 200 configurations of |D↑D↓|²): β_ee = 1 raises
the H2O energy by 0.67(9) E_h, β_ee = 4 lowers it by 0.11(2) E_h (Ne: 0.11(5) E_h). On top of that,
β_en = 30 multiplies the E_L variance by ~25, β_en = 100 by ~4, β_en = 300 by ~1.25 (energy a further
0.02(3) E_h lower in H2O, 0.08(5) E_h in Ne), β_en = 1000 changes nothing measurable. Hence the
defaults β_ee = 4 and β_en = 300 bohr⁻¹ (QMcBeaver used b = 100 for e–n, see the study's notes). The
e–n factor's sharp shell makes fixed-node DMC time-step errors large; ``cusp=True`` (with
``jastrow_en=False``) instead corrects the orbitals near each nucleus (:mod:`qmckit.systems.gaussian_cusp`).
For f(r) = a r/(1 + βr): f' = a/(1 + βr)², f'' + 2f'/r = 2a/(r(1 + βr)³), and

    E_L = Σ_i [−½(∇²_i D/D + ∇²_i U + |∇_i U|² + 2 ∇_i ln D·∇_i U) − Σ_A Z_A/r_iA] + Σ_{i<j} 1/r_ij + E_nn

Fixed-node DMC: :meth:`Molecule.for_dmc` turns on ``reject_node_crossing`` (a move that changes the
sign of ψ_T is rejected), as for :class:`~qmckit.systems.atom.Atom`.

Kernel parameter vector ``p`` (float64; the generic drivers pass it to every kernel):

    [N, n, n_atoms, n_basis, jastrow_ee, β_ee, jastrow_en, β_en, reject_node_crossing, E_nn,
     polynomial on, c_ee2, c_ee3, c_en2, c_en3,
     atoms (n_atoms × [x, y, z, Z]), C (n_basis × n, row-major), packed basis (see gaussian_basis),
     with ``cusp``: the correction block of :mod:`qmckit.systems.gaussian_cusp`]

The Slater–Jastrow arithmetic that the molecules share with the atoms (determinant ratios and
gradients, the e–e Padé terms, the kinetic energy) is :mod:`qmckit.systems.slater_jastrow`; this module
writes the Gaussian-basis orbitals, the e–n Padé terms and the potential.

Cache layout of one walker (N electrons, n orbitals per spin, n_basis functions), float64: the
Slater–Jastrow core's part (:func:`qmckit.systems.slater_jastrow.views`: T, DPHI, JG, U, DU, CO, CN,
META, MAT, LAP, where DPHI[i] is electron i's orbital gradient row, evaluated at RC[i], and LAP the
orbital Laplacians at the proposed position), then

    OL    (N, n)     ∇²φ_j(r_i)   (orbital row of electron i, evaluated at RC[i])
    EG    (3)        e–n part of ∇U at the proposed position (scratch of test_move for accept_move)
    BV, BG, BL       (n_basis), (n_basis, 3), (n_basis) basis values, gradients, Laplacians
    DV    (N, n)     φ_j(r_i)     (orbital row of electron i = row i of the Slater matrices, at RC[i])
    RC    (N, 3)     the position at which the rows DV[i], DPHI[i], OL[i] were evaluated
    FLAG  (1)        ROWS_VALID once ``recompute`` has filled every row (a zeroed cache has none)

A one-electron move costs one basis evaluation with Laplacians (O(n_basis)), the orbital
contraction O(n_basis·n), a Sherman–Morrison update O(n²) and O(N + n_atoms) Jastrow work; an
accepted move stores the new orbital rows of the electron (computed by test_move at the position it
now has). ``local_energy`` rebuilds the cache from the positions first (exact whatever round-off the
incremental updates gathered): the inverses by Gauss–Jordan elimination from the Slater matrices and
∇U from the distances. The orbital rows are pure functions of one electron's position, so a row whose
RC equals the electron's position (compared exactly) is reused instead of evaluated again — the same
numbers bit for bit, and a measured sweep then evaluates the basis once per move instead of once per
move plus once per electron.

PySCF is optional (the ``chem`` extra): it is imported only when a molecule is built; the RHF
solution is cached in memory per (geometry, basis, charge), so building the same system again (as
:class:`~qmckit.runs.RunConfig` and the run do) costs nothing.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import warnings
from dataclasses import asdict, dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import NamedTuple

import numba as nb
import numpy as np

from . import gaussian_cusp
from .gaussian_cusp import apply as apply_cusp
from .gaussian_basis import (GaussianBasis, PySCFMissing, eval_point, from_pyscf, orbital_values, packed_length,
                             require_pyscf)
from ..resources import data_path
from .protocol import Capabilities, Kernels, parameter, validate
from .slater import det_ratio, invert, mat_view
from .slater_jastrow import (SlaterJastrowSystem, core_size, determinant_move, drift_change, kinetic, pade_accept,
                             pade_gradients, pade_log, pade_move, pair_a, slater_gradient, views)

DATA_DIR = data_path("molecules")

# H–Kr: all-electron correlation-consistent bases stop there
ELEMENTS = ("H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se "
            "Br Kr").split()

DEFAULT_BETA_EE = 4.0
DEFAULT_BETA_EN = 300.0

(P_N, P_NUP, P_NATOM, P_NBF, P_JEE, P_BEE, P_JEN, P_BEN, P_REJECT, P_ENUC, P_POLY, P_CEE2, P_CEE3, P_CEN2,
 P_CEN3) = range(15)
HEADER = 15
POLY_NAMES = ("c_ee2", "c_ee3", "c_en2", "c_en3")  # the polynomial Jastrow's coefficients, in header order
ROWS_VALID = 2.718281828459045  # FLAG value: the rows DV, DPHI, OL hold the orbitals at the positions RC


def builtin_molecules() -> list[str]:
    """Names accepted by ``xyz`` as built-in geometries (files ``data/molecules/NAME.xyz``)."""
    return sorted(p.stem for p in DATA_DIR.glob("*.xyz")) if DATA_DIR.is_dir() else []


def _parse_atoms(lines, where: str) -> tuple:
    """((symbol, x, y, z), …) in Å from 'Sym x y z' lines."""
    atoms = []
    for line in lines:
        parts = line.replace(",", " ").split()
        if not parts:
            continue
        if len(parts) < 4:
            raise ValueError(f"xyz {where}: expected 'symbol x y z', got {line.strip()!r}")
        symbol = re.sub(r"[^A-Za-z]", "", parts[0]).capitalize()
        if symbol not in ELEMENTS:
            raise ValueError(f"xyz {where}: unknown or unsupported element {parts[0]!r} (H to Kr)")
        try:
            x, y, z = (float(v) for v in parts[1:4])
        except ValueError:
            raise ValueError(f"xyz {where}: coordinates must be numbers, got {line.strip()!r}") from None
        if not all(math.isfinite(v) for v in (x, y, z)):
            raise ValueError(f"xyz {where}: coordinates must be finite, got {line.strip()!r}")
        atoms.append((symbol, x, y, z))
    if not atoms:
        raise ValueError(f"xyz {where}: no atoms")
    return tuple(atoms)


def read_xyz(path) -> tuple:
    """Atoms ((symbol, x, y, z), …) in Å of an .xyz file (count line, comment line, atom lines);
    a file without the count line may hold atom lines only (# starts a comment)."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"xyz file {str(path)!r} cannot be read ({err.__class__.__name__})") from None
    lines = text.splitlines()
    first = lines[0].strip() if lines else ""
    if first.isdigit():
        count = int(first)
        atoms = _parse_atoms(lines[2:2 + count], f"file {str(path)!r}")
        if len(atoms) != count:
            raise ValueError(f"xyz file {str(path)!r} announces {count} atoms but lists {len(atoms)}")
        return atoms
    return _parse_atoms([l.split("#", 1)[0] for l in lines], f"file {str(path)!r}")


def _inline(atoms) -> str:
    return "; ".join(f"{s} {x!r} {y!r} {z!r}" for s, x, y, z in atoms)


@lru_cache(maxsize=None)
def _builtin_atoms(name: str) -> tuple:
    return read_xyz(DATA_DIR / f"{name}.xyz")


def resolve_geometry(xyz: str) -> tuple[str, tuple]:
    """``(normalised xyz, atoms)`` for a built-in name, an .xyz file or inline 'Sym x y z; …' (Å).

    Built-in names stay names; a file is replaced by its inline geometry, so that a run's parameters
    say everything (a run resumed from a checkpoint does not need the file)."""
    if not isinstance(xyz, str) or not xyz.strip():
        raise ValueError(f"xyz must be a built-in name ({', '.join(builtin_molecules())}), an .xyz file or "
                         f"'Sym x y z; …' in Å, got {xyz!r}")
    text = xyz.strip()
    name = text.lower()
    if name in builtin_molecules():
        return name, _builtin_atoms(name)
    if ";" in text or "\n" in text or (len(text.split()) >= 4 and not os.path.exists(text)):
        atoms = _parse_atoms(re.split(r"[;\n]", text), "inline geometry")
        return _inline(atoms), atoms
    if os.path.isfile(text):
        atoms = read_xyz(text)
        return _inline(atoms), atoms
    raise ValueError(f"xyz must be a built-in name ({', '.join(builtin_molecules())}), an .xyz file or "
                     f"'Sym x y z; …' in Å; no such file {text!r}")


@dataclass(frozen=True)
class MoleculeParams:
    """Parameters of a closed-shell molecule with RHF orbitals in a Gaussian basis (metadata on each field).

    ``xyz`` is a built-in name (``builtin_molecules()``), the path of an .xyz file (normalised to the
    inline form) or inline 'O 0 0 0; H …'. ``cusp`` corrects the orbitals near each nucleus so that
    they have the Kato cusp (:mod:`qmckit.systems.gaussian_cusp`); it replaces the e–n Jastrow term,
    which must then be off.
    """

    xyz: str = parameter("h2o", unit="Å", help="geometry: a built-in name (h2o, ne, h2, benzene, acetic-acid, "
                         "glycine, benzoic-acid), an .xyz file, or inline 'O 0 0 0; H 0 0.76 0.59'", symbol="molecule")
    basis: str = parameter("cc-pvdz", help="Gaussian basis set known to PySCF, used with Cartesian functions", symbol="basis")
    charge: int = parameter(0, unit="e", help="total charge; must leave an even number of electrons", symbol="charge")
    jastrow: bool = parameter(True, help="the Jastrow factor (without it ψ_T = D↑ D↓, whose VMC energy is the "
                              "RHF energy)", symbol="Jastrow factor")
    jastrow_ee: bool = parameter(True, help="the e–e Padé term (cusps ½ antiparallel, ¼ parallel)",
                                 switch="--no-ee-jastrow", symbol="e–e Jastrow")
    jastrow_en: bool = parameter(True, help="the e–n Padé term −Z r/(1 + β_en r) that restores the nuclear cusps",
                                 switch="--no-en-jastrow", symbol="e–n Jastrow")
    beta_ee: float = parameter(DEFAULT_BETA_EE, unit="bohr⁻¹", help="β of the e–e Padé–Jastrow term", low=0.0,
                               variational=True, symbol="β_ee")
    beta_en: float = parameter(DEFAULT_BETA_EN, unit="bohr⁻¹", help="β of the e–n Padé–Jastrow term", low=0.0,
                               low_open=True, variational=True, symbol="β_en")
    c_ee2: float = parameter(0.0, help="coefficient of r̄² (r̄ = r/(1 + r)) in the e–e polynomial Jastrow term",
                             variational=True, typical=(-1.0, 1.0), symbol="c₂ᵉᵉ")
    c_ee3: float = parameter(0.0, help="coefficient of r̄³ in the e–e polynomial Jastrow term", variational=True,
                             typical=(-1.0, 1.0), symbol="c₃ᵉᵉ")
    c_en2: float = parameter(0.0, help="coefficient of r̄² in the e–n polynomial Jastrow term (every nucleus)",
                             variational=True, typical=(-1.0, 1.0), symbol="c₂ᵉⁿ")
    c_en3: float = parameter(0.0, help="coefficient of r̄³ in the e–n polynomial Jastrow term (every nucleus)",
                             variational=True, typical=(-1.0, 1.0), symbol="c₃ᵉⁿ")
    cusp: bool = parameter(False, help="cusp-corrected orbitals near each nucleus instead of the e–n Padé term "
                           "(on the command line it implies --no-en-jastrow); smaller E_L variance and DMC "
                           "time-step error", symbol="cusp-corrected orbitals")

    def __post_init__(self):
        validate(self)
        xyz, atoms = resolve_geometry(self.xyz)
        object.__setattr__(self, "xyz", xyz)
        object.__setattr__(self, "basis", self.basis.strip().lower())
        n_electrons = sum(ELEMENTS.index(s) + 1 for s, *_ in atoms) - self.charge
        if n_electrons < 2 or n_electrons % 2:
            raise ValueError(f"charge must leave an even number ≥ 2 of electrons (closed shell), got "
                             f"{n_electrons} electrons with charge {self.charge}")
        if self.cusp and self.jastrow and self.jastrow_en:
            raise ValueError("cusp and jastrow_en both give the orbitals the nuclear cusp: set jastrow_en=False "
                             "with cusp=True")

    @cached_property
    def atoms(self) -> tuple:
        """((symbol, x, y, z), …) in Å (the geometry is resolved, a file read, once per parameter set)."""
        return resolve_geometry(self.xyz)[1]

    @property
    def n_electrons(self) -> int:
        return sum(ELEMENTS.index(s) + 1 for s, *_ in self.atoms) - self.charge

    def as_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# RHF orbitals from PySCF (cached per geometry, basis and charge)
# --------------------------------------------------------------------------------------------
class RHFSolution(NamedTuple):
    """What a molecule needs from PySCF (lengths in bohr, energies in E_h)."""

    basis: GaussianBasis
    coefficients: np.ndarray   # (n_basis, n) occupied MO coefficients, lowest orbital energy first
    orbital_energies: np.ndarray  # (n,)
    energy: float              # E_RHF, nuclear repulsion included
    nuclear_repulsion: float
    coordinates: np.ndarray    # (n_atoms, 3) bohr
    charges: np.ndarray        # (n_atoms,)
    converged: bool


_RHF_CACHE: dict[tuple, RHFSolution] = {}


def build_mole(atoms, basis: str, charge: int = 0):
    """A PySCF ``Mole`` (``cart=True``, silent) for atoms ((symbol, x, y, z), …) in Å."""
    require_pyscf()
    from pyscf import gto
    from pyscf.lib import exceptions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PySCF suggests basis-set-exchange on stderr for unknown names
        try:
            return gto.M(atom=[(s, (x, y, z)) for s, x, y, z in atoms], basis=basis, charge=charge, spin=0,
                         cart=True, unit="Angstrom", verbose=0)
        except (exceptions.BasisNotFoundError, KeyError) as err:
            detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ValueError(f"basis {basis!r} is not known to PySCF for these elements ({detail})") from None


def rhf_solution(atoms, basis: str, charge: int = 0) -> RHFSolution:
    """The RHF orbitals of a closed-shell molecule, computed once per (geometry, basis, charge)."""
    key = (tuple(atoms), basis.lower(), int(charge))
    if key in _RHF_CACHE:
        return _RHF_CACHE[key]
    mol = build_mole(atoms, basis, charge)
    from pyscf import scf

    mf = scf.RHF(mol)
    mf.verbose = 0
    mf.conv_tol = 1e-10
    energy = float(mf.kernel())
    if not mf.converged:
        mf = mf.newton()
        energy = float(mf.kernel(mf.make_rdm1()))
    if not mf.converged:
        warnings.warn(f"RHF did not converge for {basis}; the orbitals are those of the last iteration",
                      RuntimeWarning, stacklevel=2)
    occupied = np.nonzero(mf.mo_occ > 0)[0]
    C = np.ascontiguousarray(mf.mo_coeff[:, occupied], dtype=np.float64)
    solution = RHFSolution(basis=from_pyscf(mol), coefficients=C,
                           orbital_energies=np.asarray(mf.mo_energy[occupied], dtype=np.float64),
                           energy=energy, nuclear_repulsion=float(mol.energy_nuc()),
                           coordinates=np.asarray(mol.atom_coords(), dtype=np.float64),
                           charges=np.asarray(mol.atom_charges(), dtype=np.float64), converged=bool(mf.converged))
    for array in (solution.coefficients, solution.orbital_energies, solution.coordinates, solution.charges):
        array.setflags(write=False)
    _RHF_CACHE[key] = solution
    return solution


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always", error_model="numpy")
def _layout(p):
    """(N, n, atoms (n_atoms, 4), C (n_basis, n), packed basis) views of the parameter vector."""
    N = int(p[P_N])
    n = int(p[P_NUP])
    na = int(p[P_NATOM])
    nbf = int(p[P_NBF])
    o = HEADER
    if p.shape[0] < o + 4 * na + nbf * n:  # views from strides are not bounds-checked (reshape was)
        raise ValueError("molecule kernel parameter vector too short")
    atoms = mat_view(p, o, na, 4)
    o += 4 * na
    C = mat_view(p, o, nbf, n)
    o += nbf * n
    return N, n, atoms, C, p[o:]


@nb.njit(cache=True, inline="always", error_model="numpy")
def cache_views(cache, N, n, nbf):
    T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP = views(cache, N, n, 3)
    o = core_size(N, n, 3)
    OL = mat_view(cache, o, N, n)
    o += N * n
    EG = cache[o:o + 3]
    o += 3
    BV = cache[o:o + nbf]
    o += nbf
    BG = mat_view(cache, o, nbf, 3)
    o += 3 * nbf
    BL = cache[o:o + nbf]
    o += nbf
    DV = mat_view(cache, o, N, n)
    o += N * n
    RC = mat_view(cache, o, N, 3)
    o += 3 * N
    FLAG = cache[o:o + 1]
    if cache.shape[0] < o + 1:  # views from strides are not bounds-checked (reshape was)
        raise ValueError("molecule cache row too short for this molecule (see cache_size_for)")
    return T, DPHI, OL, JG, U, DU, CO, CN, EG, META, MAT, LAP, BV, BG, BL, DV, RC, FLAG


def cache_size_for(n_electrons: int, n_basis: int) -> int:
    """Length of one walker's cache row (see the module docstring)."""
    N = n_electrons
    n = N // 2
    return core_size(N, n, 3) + N * n + 3 + 5 * n_basis + N * n + 3 * N + 1


@nb.njit(cache=True, error_model="numpy")
def _orbitals(basis, C, x, y, z, val, grad, lap, BV, BG, BL, order):
    """φ_j (and ∇φ_j with ``order`` ≥ 1, ∇²φ_j with ``order`` ≥ 2) of the n occupied orbitals at
    (x, y, z): one basis evaluation and the contraction with C. The contraction runs orbital by
    orbital with the sums in registers (the order of the terms is that of a plain Σ_μ, so the
    numbers do not depend on it); screened functions (value and gradient exactly 0) add 0."""
    nbf, n = C.shape
    eval_point(basis, x, y, z, BV, BG, BL, order)
    if order == 0:
        for j in range(n):
            v = 0.0
            for mu in range(nbf):
                v += BV[mu] * C[mu, j]
            val[j] = v
        _cusp(basis, x, y, z, val, grad, lap, order)
        return
    for j in range(n):
        v = 0.0
        gx = 0.0
        gy = 0.0
        gz = 0.0
        lp = 0.0
        for mu in range(nbf):
            c = C[mu, j]
            v += BV[mu] * c
            gx += BG[mu, 0] * c
            gy += BG[mu, 1] * c
            gz += BG[mu, 2] * c
            if order >= 2:
                lp += BL[mu] * c
        val[j] = v
        grad[j, 0] = gx
        grad[j, 1] = gy
        grad[j, 2] = gz
        if order >= 2:
            lap[j] = lp
    _cusp(basis, x, y, z, val, grad, lap, order)


@nb.njit(cache=True, error_model="numpy")
def _orbitals_f32(basis, C, x, y, z, val, grad, lap, BV, BG, BL, order):
    """:func:`_orbitals` with the contraction in float32 (study 001's single-precision orbital product): the basis
    functions are evaluated in float64 and rounded to float32, as are the coefficients, and the products and sums
    run in float32; the rows are widened to float64, and the cusp correction and everything after them stay
    float64. The GPU sampler's ``dtype=float32`` variant compiles this in place of :func:`_orbitals` (with C and the
    basis scratch stored as float32, so the roundings here are no-ops there). Per element the error against the
    exact product of the float64 inputs is at most γ_{K+2} Σ_μ |B_μ||C_μj|, γ_m = m u/(1 − m u), u = 2⁻²⁴ (Higham
    §3.1; two roundings of the inputs, K of the sum; a GPU's fused multiply–add only lowers it)."""
    nbf, n = C.shape
    eval_point(basis, x, y, z, BV, BG, BL, order)
    if order == 0:
        for j in range(n):
            v = np.float32(0.0)
            for mu in range(nbf):
                v += np.float32(BV[mu]) * np.float32(C[mu, j])
            val[j] = np.float64(v)
        _cusp(basis, x, y, z, val, grad, lap, order)
        return
    for j in range(n):
        v = np.float32(0.0)
        gx = np.float32(0.0)
        gy = np.float32(0.0)
        gz = np.float32(0.0)
        lp = np.float32(0.0)
        for mu in range(nbf):
            c = np.float32(C[mu, j])
            v += np.float32(BV[mu]) * c
            gx += np.float32(BG[mu, 0]) * c
            gy += np.float32(BG[mu, 1]) * c
            gz += np.float32(BG[mu, 2]) * c
            if order >= 2:
                lp += np.float32(BL[mu]) * c
        val[j] = np.float64(v)
        grad[j, 0] = np.float64(gx)
        grad[j, 1] = np.float64(gy)
        grad[j, 2] = np.float64(gz)
        if order >= 2:
            lap[j] = np.float64(lp)
    _cusp(basis, x, y, z, val, grad, lap, order)


@nb.njit(cache=True, inline="always", error_model="numpy")
def _cusp(basis, x, y, z, val, grad, lap, order):
    """The nuclear cusp correction, when the parameter vector carries one after the packed basis."""
    length = packed_length(basis)
    if basis.shape[0] > length:
        apply_cusp(basis[length:], x, y, z, val, grad, lap, order)


@nb.njit(cache=True, error_model="numpy")
def _en_value(atoms, x, y, z, beta):
    """Σ_A −Z_A r/(1 + β r) of one electron at (x, y, z)."""
    u = 0.0
    for A in range(atoms.shape[0]):
        r = math.sqrt((x - atoms[A, 0]) ** 2 + (y - atoms[A, 1]) ** 2 + (z - atoms[A, 2]) ** 2)
        u -= atoms[A, 3] * r / (1.0 + beta * r)
    return u


@nb.njit(cache=True, error_model="numpy")
def _en_gradient(atoms, x, y, z, beta, out):
    """∇ of the e–n Jastrow of one electron at (x, y, z) into ``out`` (3,)."""
    out[0] = 0.0
    out[1] = 0.0
    out[2] = 0.0
    for A in range(atoms.shape[0]):
        dx = x - atoms[A, 0]
        dy = y - atoms[A, 1]
        dz = z - atoms[A, 2]
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if r > 0.0:
            b = 1.0 / (1.0 + beta * r)
            c = -atoms[A, 3] * b * b / r
            out[0] += c * dx
            out[1] += c * dy
            out[2] += c * dz


@nb.njit(cache=True, inline="always", error_model="numpy")
def _poly(r, c2, c3):
    """u = c2 r̄² + c3 r̄³ with r̄ = r/(1 + r): (u, u'(r)/r, ∇²u = u'' + 2u'/r); finite at r = 0."""
    s = 1.0 / (1.0 + r)
    t = r * s
    d1 = 2.0 * c2 * t + 3.0 * c3 * t * t          # du/dr̄; dr̄/dr = s², d²r̄/dr² = −2s³
    d2 = 2.0 * c2 + 6.0 * c3 * t
    up_over_r = (2.0 * c2 + 3.0 * c3 * t) * s * s * s
    return c2 * t * t + c3 * t * t * t, up_over_r, d2 * s ** 4 - 2.0 * d1 * s ** 3 + 2.0 * up_over_r


@nb.njit(cache=True, error_model="numpy")
def _poly_around(centres, skip, x, y, z, c2, c3, out):
    """Σ u(|r − c_l|) of a point r = (x, y, z) over the rows c_l of ``centres`` (first three columns) but row ``skip``;
    adds the gradient with respect to r to ``out`` (3,)."""
    u = 0.0
    for l in range(centres.shape[0]):
        if l != skip:
            dx, dy, dz = x - centres[l, 0], y - centres[l, 1], z - centres[l, 2]
            v, g, _ = _poly(math.sqrt(dx * dx + dy * dy + dz * dz), c2, c3)
            u += v
            out[0] += g * dx
            out[1] += g * dy
            out[2] += g * dz
    return u


@nb.njit(cache=True, error_model="numpy")
def _poly_one(R, p, atoms, i, x, y, z, out):
    """The polynomial Jastrow terms of electron i placed at (x, y, z), the others at R: returns their sum and adds
    their gradient with respect to electron i to ``out`` (3,)."""
    en = _poly_around(atoms, -1, x, y, z, p[P_CEN2], p[P_CEN3], out)
    return en + _poly_around(R, i, x, y, z, p[P_CEE2], p[P_CEE3], out)


@nb.njit(cache=True, error_model="numpy")
def _poly_log(R, p, atoms):
    """The polynomial Jastrow terms of the configuration R: Σ_i Σ_A u_en(r_iA) + Σ_{i<l} u_ee(r_il)."""
    total = 0.0
    for i in range(R.shape[0]):
        for A in range(atoms.shape[0]):
            r = math.sqrt((R[i, 0] - atoms[A, 0]) ** 2 + (R[i, 1] - atoms[A, 1]) ** 2 + (R[i, 2] - atoms[A, 2]) ** 2)
            total += _poly(r, p[P_CEN2], p[P_CEN3])[0]
        for l in range(i + 1, R.shape[0]):
            r = math.sqrt((R[i, 0] - R[l, 0]) ** 2 + (R[i, 1] - R[l, 1]) ** 2 + (R[i, 2] - R[l, 2]) ** 2)
            total += _poly(r, p[P_CEE2], p[P_CEE3])[0]
    return total


@nb.njit(cache=True, error_model="numpy")
def log_psi(R, p):
    """ln|ψ_T(R)| (−inf on a node), from scratch."""
    N, n, atoms, C, basis = _layout(p)
    nbf = C.shape[0]
    M = np.empty((n, n))
    inv = np.empty((n, n))
    val = np.empty(n)
    grad = np.empty((n, 3))
    BV = np.empty(nbf)
    BG = np.empty((nbf, 3))
    total = 0.0
    for s in range(2):
        for k in range(n):
            i = s * n + k
            _orbitals(basis, C, R[i, 0], R[i, 1], R[i, 2], val, grad, val, BV, BG, BV, 0)
            for j in range(n):
                M[j, k] = val[j]
        log_abs, _ = invert(M, inv)
        total += log_abs
    if p[P_JEE] != 0.0:
        total = pade_log(R, n, p[P_BEE], total)
    if p[P_JEN] != 0.0:
        for i in range(N):
            total += _en_value(atoms, R[i, 0], R[i, 1], R[i, 2], p[P_BEN])
    if p[P_POLY] != 0.0:
        total += _poly_log(R, p, atoms)
    return total


@nb.njit(cache=True, error_model="numpy")
def recompute(R, p, cache):
    """Rebuild the cache from the positions: inverse blocks, orbital rows (values, gradients and
    Laplacians; a row evaluated at exactly the electron's current position is kept), ∇U."""
    N, n, atoms, C, basis = _layout(p)
    T, DPHI, OL, JG, U, DU, CO, CN, EG, META, MAT, LAP, BV, BG, BL, DV, RC, FLAG = cache_views(cache, N, n, C.shape[0])
    valid = FLAG[0] == ROWS_VALID
    for s in range(2):
        for k in range(n):
            i = s * n + k
            x, y, z = R[i, 0], R[i, 1], R[i, 2]
            if not (valid and RC[i, 0] == x and RC[i, 1] == y and RC[i, 2] == z):
                _orbitals(basis, C, x, y, z, DV[i], DPHI[i], OL[i], BV, BG, BL, 2)
                RC[i, 0] = x
                RC[i, 1] = y
                RC[i, 2] = z
            for j in range(n):
                MAT[j, k] = DV[i, j]  # Dᵀ, whose inverse is T
        invert(MAT, T[s * n:(s + 1) * n])
    FLAG[0] = ROWS_VALID
    for i in range(N):
        CO[i] = 0.0
        CN[i] = 0.0
        JG[i, 0] = 0.0
        JG[i, 1] = 0.0
        JG[i, 2] = 0.0
    META[0] = 0.0
    if p[P_JEN] != 0.0:
        for i in range(N):
            _en_gradient(atoms, R[i, 0], R[i, 1], R[i, 2], p[P_BEN], EG)
            JG[i, 0] = EG[0]
            JG[i, 1] = EG[1]
            JG[i, 2] = EG[2]
    if p[P_JEE] != 0.0:
        pade_gradients(R, n, p[P_BEE], JG)
    if p[P_POLY] != 0.0:
        for i in range(N):
            _poly_one(R, p, atoms, i, R[i, 0], R[i, 1], R[i, 2], JG[i])


@nb.njit(cache=True, error_model="numpy")
def gradient(R, p, cache, i, out):
    """∇_i ln|ψ(R)| from the cache: Σ_j ∇φ_j(r_i) T[i, j] + ∇_i U."""
    N, n, atoms, C, basis = _layout(p)
    T, DPHI, OL, JG, U, DU, CO, CN, EG, META, MAT, LAP, BV, BG, BL, DV, RC, FLAG = cache_views(cache, N, n, C.shape[0])
    slater_gradient(T, DPHI, JG, i, out)


@nb.njit(cache=True, error_model="numpy")
def test_move(R, p, cache, i, r_new, grad_new):
    """ln|ψ(R')/ψ(R)| for electron ``i`` moved to ``r_new`` and ∇_i ln|ψ(R')| into ``grad_new``.

    With ``reject_node_crossing`` set, a move to the other sign of ψ_T returns −inf. Leaves the
    scratch that ``accept_move`` needs. O(n_basis·n + N + n_atoms)."""
    N, n, atoms, C, basis = _layout(p)
    T, DPHI, OL, JG, U, DU, CO, CN, EG, META, MAT, LAP, BV, BG, BL, DV, RC, FLAG = cache_views(cache, N, n, C.shape[0])
    x, y, z = r_new[0], r_new[1], r_new[2]
    _orbitals(basis, C, x, y, z, U, DU, LAP, BV, BG, BL, 2)
    q = det_ratio(T[i], U)
    META[0] = q
    if not (q != 0.0 and math.isfinite(q)) or (p[P_REJECT] != 0.0 and q < 0.0):
        return -np.inf  # q = 0, not finite, or (fixed-node DMC) a move to the other sign of ψ_T
    log_ratio, gx, gy, gz = determinant_move(T, DU, i, q, n)
    xo, yo, zo = R[i, 0], R[i, 1], R[i, 2]
    if p[P_JEN] != 0.0:
        beta_en = p[P_BEN]
        log_ratio += _en_value(atoms, x, y, z, beta_en) - _en_value(atoms, xo, yo, zo, beta_en)
        _en_gradient(atoms, x, y, z, beta_en, EG)
        gx += EG[0]
        gy += EG[1]
        gz += EG[2]
    if p[P_JEE] != 0.0:
        delta, gx, gy, gz = pade_move(R, i, x, y, z, n, p[P_BEE], CO, CN, gx, gy, gz)
        log_ratio += delta
    if p[P_POLY] != 0.0:  # grad_new is both calls' zeroed scratch (no allocation: the GPU twin runs this code)
        grad_new[0] = 0.0
        grad_new[1] = 0.0
        grad_new[2] = 0.0
        old = _poly_one(R, p, atoms, i, xo, yo, zo, grad_new)
        grad_new[0] = 0.0
        grad_new[1] = 0.0
        grad_new[2] = 0.0
        log_ratio += _poly_one(R, p, atoms, i, x, y, z, grad_new) - old
        gx += grad_new[0]
        gy += grad_new[1]
        gz += grad_new[2]
    grad_new[0] = gx
    grad_new[1] = gy
    grad_new[2] = gz
    return log_ratio


@nb.njit(cache=True, error_model="numpy")
def accept_move(R, p, cache, i, r_new, grad_new):
    """Commit the move tested last: Sherman–Morrison on electron i's block, its orbital rows (values,
    gradients, Laplacians at r_new from test_move), and ∇U of every electron (O(n² + N))."""
    N, n, atoms, C, basis = _layout(p)
    T, DPHI, OL, JG, U, DU, CO, CN, EG, META, MAT, LAP, BV, BG, BL, DV, RC, FLAG = cache_views(cache, N, n, C.shape[0])
    s = i // n
    # Sherman–Morrison on electron i's block (slater.sherman_morrison_row written out here: the same
    # arithmetic in the same order, without a call that passes the block as a strided slice)
    b = s * n
    inv_q = 1.0 / META[0]
    for l in range(b, b + n):
        if l == i:
            continue
        v = 0.0
        for j in range(n):
            v += U[j] * T[l, j]
        f = v * inv_q
        if f != 0.0:
            for j in range(n):
                T[l, j] -= f * T[i, j]
    for j in range(n):
        T[i, j] *= inv_q
    x, y, z = r_new[0], r_new[1], r_new[2]
    for j in range(n):  # the orbital rows of electron i at its new position (computed by test_move)
        DV[i, j] = U[j]
        OL[i, j] = LAP[j]
        for c in range(3):
            DPHI[i, j, c] = DU[j, c]
    RC[i, 0] = x
    RC[i, 1] = y
    RC[i, 2] = z
    jee = p[P_JEE] != 0.0
    jen = p[P_JEN] != 0.0
    if jee or jen:
        jx = EG[0] if jen else 0.0
        jy = EG[1] if jen else 0.0
        jz = EG[2] if jen else 0.0
        if jee:
            jx, jy, jz = pade_accept(R, i, x, y, z, CO, CN, JG, jx, jy, jz)
        JG[i, 0] = jx
        JG[i, 1] = jy
        JG[i, 2] = jz
    if p[P_POLY] != 0.0:
        if not (jee or jen):
            JG[i, 0] = 0.0
            JG[i, 1] = 0.0
            JG[i, 2] = 0.0
        _poly_one(R, p, atoms, i, x, y, z, JG[i])
        c2, c3 = p[P_CEE2], p[P_CEE3]
        for l in range(N):  # the other electrons' gradients lose the old pair term and gain the new one
            if l != i:
                ox, oy, oz = R[l, 0] - R[i, 0], R[l, 1] - R[i, 1], R[l, 2] - R[i, 2]
                _, g_old, _ = _poly(math.sqrt(ox * ox + oy * oy + oz * oz), c2, c3)
                nx, ny, nz = R[l, 0] - x, R[l, 1] - y, R[l, 2] - z
                _, g_new, _ = _poly(math.sqrt(nx * nx + ny * ny + nz * nz), c2, c3)
                JG[l, 0] += g_new * nx - g_old * ox
                JG[l, 1] += g_new * ny - g_old * oy
                JG[l, 2] += g_new * nz - g_old * oz
    R[i, 0] = x
    R[i, 1] = y
    R[i, 2] = z


@nb.njit(cache=True, error_model="numpy")
def local_energy(R, p, cache):
    """E_L(R) in E_h (total energy, nuclear repulsion included). Rebuilds the cache first."""
    recompute(R, p, cache)
    N, n, atoms, C, basis = _layout(p)
    T, DPHI, OL, JG, U, DU, CO, CN, EG, META, MAT, LAP, BV, BG, BL, DV, RC, FLAG = cache_views(cache, N, n, C.shape[0])
    jee = p[P_JEE] != 0.0
    jen = p[P_JEN] != 0.0
    poly = p[P_POLY] != 0.0
    beta_en = p[P_BEN]
    energy = p[P_ENUC]
    for i in range(N):
        x, y, z = R[i, 0], R[i, 1], R[i, 2]
        energy += kinetic(T, i, DPHI[i], OL[i], JG, n)
        for A in range(atoms.shape[0]):
            r = math.sqrt((x - atoms[A, 0]) ** 2 + (y - atoms[A, 1]) ** 2 + (z - atoms[A, 2]) ** 2)
            energy -= atoms[A, 3] / r
            if jen:
                b = 1.0 / (1.0 + beta_en * r)
                energy += atoms[A, 3] * b * b * b / r  # −½ ∇² of −Z r/(1 + βr)
            if poly:
                energy -= 0.5 * _poly(r, p[P_CEN2], p[P_CEN3])[2]
    beta = p[P_BEE]
    for i in range(N):
        for l in range(i + 1, N):
            r = math.sqrt((R[i, 0] - R[l, 0]) ** 2 + (R[i, 1] - R[l, 1]) ** 2 + (R[i, 2] - R[l, 2]) ** 2)
            energy += 1.0 / r
            if jee:
                b = 1.0 / (1.0 + beta * r)
                energy -= 2.0 * pair_a(i, l, n) * b * b * b / r
            if poly:
                energy -= _poly(r, p[P_CEE2], p[P_CEE3])[2]  # −½ (∇_i² + ∇_l²) of the pair term
    return energy


@nb.njit(cache=True, error_model="numpy")
def other_drift_change(R, p, cache, i, r_new, dt):
    """(Δt/2) Σ_{j≠i} (|∇_j ln ψ(R)|² − |∇_j ln ψ(R')|²) for the move just tested (study 002's
    all-particle Green's function; exact sampling never uses it). O(n² + N)."""
    N, n, atoms, C, basis = _layout(p)
    T, DPHI, OL, JG, U, DU, CO, CN, EG, META, MAT, LAP, BV, BG, BL, DV, RC, FLAG = cache_views(cache, N, n, C.shape[0])
    return drift_change(R, T, DPHI, JG, U, CO, CN, META[0], i, r_new, dt, p[P_JEE] != 0.0)


@nb.njit(cache=True, error_model="numpy")
def _load_rows(R, p, cache, values, gradients, laplacians):
    """Store supplied orbital rows in the cache as if evaluated at the positions R (RC = R, FLAG set)."""
    N, n, atoms, C, basis = _layout(p)
    T, DPHI, OL, JG, U, DU, CO, CN, EG, META, MAT, LAP, BV, BG, BL, DV, RC, FLAG = cache_views(cache, N, n, C.shape[0])
    for i in range(N):
        for j in range(n):
            DV[i, j] = values[i, j]
            OL[i, j] = laplacians[i, j]
            for c in range(3):
                DPHI[i, j, c] = gradients[i, j, c]
        RC[i, 0] = R[i, 0]
        RC[i, 1] = R[i, 1]
        RC[i, 2] = R[i, 2]
    FLAG[0] = ROWS_VALID


def local_energy_from_orbitals(R, p, values, gradients, laplacians, cache=None) -> float:
    """E_L(R) in E_h from orbital rows supplied from outside, by the module's own :func:`local_energy`.

    ``values`` (N, n) φ_j(r_i), ``gradients`` (N, n, 3) ∇φ_j(r_i), ``laplacians`` (N, n) ∇²φ_j(r_i)
    for the electrons at ``R`` (N, 3) (rows 0..n−1 spin up, the rest down, as the kernels order them),
    ``p`` the molecule's :attr:`Molecule.kernel_params`. The rows go into a cache as if they had been
    evaluated at R, so :func:`recompute` keeps them (a row is reused when its position equals the
    electron's exactly) and everything else — inverses, Jastrow, potential — is the module's float64
    arithmetic. With the rows that :func:`_orbitals` computes this is :func:`local_energy` bit for bit;
    the precision study (:mod:`qmckit.studies.precision_energy`) supplies rows from float32 products.
    """
    R = np.ascontiguousarray(R, dtype=np.float64)
    N, n = int(p[P_N]), int(p[P_NUP])
    values = np.ascontiguousarray(values, dtype=np.float64)
    gradients = np.ascontiguousarray(gradients, dtype=np.float64)
    laplacians = np.ascontiguousarray(laplacians, dtype=np.float64)
    if R.shape != (N, 3) or values.shape != (N, n) or gradients.shape != (N, n, 3) or laplacians.shape != (N, n):
        raise ValueError(f"expected R (N, 3), values (N, n), gradients (N, n, 3), laplacians (N, n) with "
                         f"N = {N}, n = {n}; got {R.shape}, {values.shape}, {gradients.shape}, {laplacians.shape}")
    if cache is None:
        cache = np.zeros(cache_size_for(N, int(p[P_NBF])))
    _load_rows(R, p, cache, values, gradients, laplacians)
    return float(local_energy(R, p, cache))


@nb.njit(cache=True, error_model="numpy")
def potential(R, p):
    """V(R) in E_h: electron–nucleus attraction, electron–electron repulsion and the nuclear repulsion."""
    N, n, atoms, C, basis = _layout(p)
    total = p[P_ENUC]
    for i in range(N):
        for A in range(atoms.shape[0]):
            total -= atoms[A, 3] / math.sqrt((R[i, 0] - atoms[A, 0]) ** 2 + (R[i, 1] - atoms[A, 1]) ** 2
                                             + (R[i, 2] - atoms[A, 2]) ** 2)
        for l in range(i + 1, N):
            total += 1.0 / math.sqrt((R[i, 0] - R[l, 0]) ** 2 + (R[i, 1] - R[l, 1]) ** 2 + (R[i, 2] - R[l, 2]) ** 2)
    return total


KERNELS = Kernels(recompute=recompute, gradient=gradient, test_move=test_move, accept_move=accept_move,
                  local_energy=local_energy, log_psi=log_psi, other_drift_change=other_drift_change,
                  potential=potential)


class Molecule(SlaterJastrowSystem):
    """A closed-shell molecule for the generic VMC and DMC drivers; reports the total ``energy`` in E_h.

    ``Molecule(xyz="h2o", basis="cc-pvdz", jastrow=False)`` builds the PySCF ``Mole`` (``cart=True``),
    runs RHF once (cached) and packs geometry, orbitals and basis into :attr:`kernel_params`."""

    name = "molecule"
    title = "closed-shell molecule: RHF orbitals in a Gaussian basis + Padé–Jastrow (study 001)"
    description = ("A closed-shell molecule with the occupied RHF orbitals of PySCF (Cartesian Gaussian basis) "
                   "and an optional Padé–Jastrow factor (e–e and e–n terms). Lengths in bohr (geometries in Å), "
                   "energies in hartree (nuclear repulsion included), time in ħ/E_h; reports the total energy "
                   "as 'energy'. Needs the optional 'chem' extra (PySCF). DMC is fixed-node.")
    Params = MoleculeParams
    kernels = KERNELS
    cache_layout = 2  # 2: the Slater–Jastrow core's views first (slater_jastrow.views), then OL, EG, … (was T, DPHI, OL, …)
    capabilities = Capabilities(fixed_node=True, green_all=True, parameter_derivatives=POLY_NAMES,
                                gpu="qmckit.backends.cuda_molecule:CudaMoleculeSweeper", gpu_nuclear_moves=True)
    examples = (dict(xyz="h2", basis="sto-3g"), dict(xyz="h2o", basis="sto-3g", cusp=True, jastrow_en=False),
                dict(xyz="Li 0 0 0; H 0 0 1.6", basis="6-31g", jastrow=False),
                dict(xyz="h2", basis="sto-3g", c_ee2=0.3, c_ee3=-0.2, c_en2=0.1, c_en3=-0.05),
                dict(xyz="Li 0 0 0; H 0 0 1.6", basis="6-31g", jastrow_ee=False, jastrow_en=False, c_ee2=0.2,
                     c_en3=0.1))
    cli_implies = {"cusp": {"jastrow_en": False}}  # the corrected orbitals carry the cusp; the e–n term would double it
    # all-electron DMC wants Δτ Z² ≲ 0.1–0.2 (the electrons near a nucleus of charge Z move on a scale 1/Z): the run's
    # general Δτ = 0.05 gives H2O/cc-pVTZ −105.7(6) E_h against −76.4 (benchmarks/results/cli_molecule_dmc_2026-11-27.md)
    run_defaults = {"dmc": {"dt": 0.002}}

    def __init__(self, params: MoleculeParams | None = None, *, reject_node_crossing: bool = False, **kwargs):
        super().__init__(params, reject_node_crossing=reject_node_crossing, **kwargs)
        p = self.params
        self.rhf = rhf_solution(p.atoms, p.basis, p.charge)
        self._kernel_params = self._pack()
        if self._kernel_params[P_POLY] != 0.0:  # study 002's all-particle drift change knows only the Padé terms
            self.capabilities = dataclasses.replace(type(self).capabilities, green_all=False)

    def __repr__(self):
        p = self.params
        fixed_node = ", reject_node_crossing=True" if self.reject_node_crossing else ""
        if not p.jastrow:
            jastrow = "jastrow=False"
        else:
            parts = ([f"beta_ee={p.beta_ee:g}"] if p.jastrow_ee else ["jastrow_ee=False"]) + \
                    ([f"beta_en={p.beta_en:g}"] if p.jastrow_en else ["jastrow_en=False"]) + \
                    [f"{name}={getattr(p, name):g}" for name in POLY_NAMES if getattr(p, name)]
            jastrow = ", ".join(parts)
        xyz = p.xyz if len(p.xyz) <= 40 else p.xyz[:37] + "…"
        charge = f", charge={p.charge}" if p.charge else ""
        charge += ", cusp=True" if p.cusp else ""
        return f"Molecule(xyz={xyz!r}, basis={p.basis!r}{charge}, {jastrow}{fixed_node})"

    # --- sizes and references -----------------------------------------------------------------
    @property
    def n_particles(self) -> int:
        return self.params.n_electrons

    @property
    def n_basis(self) -> int:
        return self.rhf.basis.n_basis

    @property
    def basis(self) -> GaussianBasis:
        return self.rhf.basis

    @property
    def mo_coefficients(self) -> np.ndarray:
        """(n_basis, n) occupied RHF orbitals (read-only)."""
        return self.rhf.coefficients

    @property
    def rhf_energy(self) -> float:
        """E_RHF in E_h (nuclear repulsion included): the exact VMC energy with ``jastrow=False``."""
        return self.rhf.energy

    @property
    def nuclear_repulsion(self) -> float:
        return self.rhf.nuclear_repulsion

    @property
    def coordinates(self) -> np.ndarray:
        """Nuclear positions (n_atoms, 3) in bohr."""
        return self.rhf.coordinates

    @property
    def charges(self) -> np.ndarray:
        return self.rhf.charges

    def nuclei(self) -> np.ndarray:
        """The nuclei [x, y, z, Z] (n_atoms, 4), bohr."""
        return np.column_stack([self.coordinates, self.charges]).astype(np.float64)

    def orbitals(self, points, derivatives: bool = False) -> np.ndarray:
        """The occupied orbitals at ``points`` (P, 3) in bohr: (P, n), or with ``derivatives`` value,
        ∂x, ∂y, ∂z and ∇² (P, 5, n), by the batched basis evaluation and one GEMM
        (:func:`~qmckit.systems.gaussian_basis.orbital_values`); ``points`` may stack all electrons of
        all walkers, ``positions.reshape(-1, 3)``."""
        return orbital_values(self.basis, points, self.mo_coefficients, derivatives=derivatives)

    # --- kernel interface ---------------------------------------------------------------------
    def _pack(self) -> np.ndarray:
        p, rhf = self.params, self.rhf
        jee = p.jastrow and p.jastrow_ee
        jen = p.jastrow and p.jastrow_en
        header = [float(self.n_particles), float(self.n_up), float(len(rhf.charges)), float(self.n_basis),
                  float(jee), p.beta_ee, float(jen), p.beta_en, float(self.reject_node_crossing),
                  rhf.nuclear_repulsion]
        coefficients = [float(getattr(p, name)) if p.jastrow else 0.0 for name in POLY_NAMES]
        header += [float(any(coefficients))] + coefficients
        atoms = np.column_stack([rhf.coordinates, rhf.charges]).ravel()
        cusp = (gaussian_cusp.cusp_block(rhf.basis, rhf.coefficients, rhf.coordinates, rhf.charges) if p.cusp
                else np.zeros(0))
        return np.concatenate([np.array(header), atoms, rhf.coefficients.ravel(), rhf.basis.packed, cusp])

    @property
    def kernel_params(self) -> np.ndarray:
        return self._kernel_params.copy()

    def cache_size(self) -> int:
        return cache_size_for(self.n_particles, self.n_basis)

    def log_psi_parameter_derivatives(self, configs: np.ndarray, names: tuple) -> np.ndarray:
        """(M, P) ∂ ln ψ_T/∂c of the polynomial coefficients ``names`` at configurations (M, N, 3): the sums of
        r̄² and r̄³ over the e–e pairs and over the electron–nucleus pairs (zero with the Jastrow factor off)."""
        configs = np.asarray(configs, dtype=np.float64)
        if not self.params.jastrow:
            return np.zeros((len(configs), len(names)))
        iu = np.triu_indices(configs.shape[1], 1)
        ee = np.linalg.norm(configs[:, :, None] - configs[:, None], axis=-1)[:, iu[0], iu[1]]
        en = np.linalg.norm(configs[:, :, None] - self.coordinates[None, None], axis=-1)
        ee, en = ee / (1 + ee), en / (1 + en)
        sums = {"c_ee2": (ee ** 2).sum(axis=1), "c_ee3": (ee ** 3).sum(axis=1),
                "c_en2": (en ** 2).sum(axis=(1, 2)), "c_en3": (en ** 3).sum(axis=(1, 2))}
        return np.stack([sums[name] for name in names], axis=1)

    def density_range(self) -> float:
        """A radius (bohr) around the centroid of the nuclei that holds the electron cloud."""
        centre = self.coordinates.mean(axis=0)
        return float(np.linalg.norm(self.coordinates - centre, axis=1).max()) + 4.0

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """Positions (W, N, 3): electrons shared out over the atoms (Z_A each, the last atoms giving
        up electrons for a positive charge, the first taking extra ones for a negative charge),
        alternately spin up and down, Gaussian around their nucleus with width 1/Z_A for the first
        two of an atom and 1 bohr for the others."""
        coords, charges = self.coordinates, self.charges
        slots = []  # (atom, width)
        for A, Z in enumerate(charges.astype(int)):
            slots += [(A, (1.0 / Z if k < 2 else 1.0)) for k in range(Z)]
        N = self.n_particles
        while len(slots) < N:
            slots.append((0, 1.5))
        slots = slots[:N]
        up, down = slots[0::2], slots[1::2]
        order = up + down
        centres = np.array([coords[A] for A, _ in order])
        widths = np.array([w for _, w in order])
        return centres[None] + rng.normal(size=(n_walkers, N, 3)) * widths[None, :, None]


__all__ = ["Molecule", "MoleculeParams", "RHFSolution", "rhf_solution", "build_mole", "read_xyz",
           "local_energy_from_orbitals",
           "resolve_geometry", "builtin_molecules", "PySCFMissing"]
