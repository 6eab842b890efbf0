"""Real DFT orbitals of cubic (fluorite-type) TiO2 as periodic B-spline orbitals (study 003, its notes §7.3).

Study 003 (Uejima & Maezono 2012) evaluates blip (B-spline) orbitals of "cubic TiO2" with 24 valence
electrons per formula unit (its notes §1.1: a Ne-core Ti pseudopotential, 12 electrons, plus 6 per O,
which fits the fluorite-type Fm-3m phase). This module makes such an orbital set from a real DFT
calculation, with PySCF's periodic code (``pyscf.pbc``, the optional ``chem`` extra), so that the
orbital kernels of :mod:`qmckit.systems.bspline_orbitals` can run on physical orbitals instead of
random or plane-wave ones.

Units: lengths in bohr, energies in hartree (E_h), orbitals in bohr^(-3/2) normalised over the cell.

Structure (:func:`tio2_cell`). The CONVENTIONAL cubic cell of fluorite TiO2, 4 formula units, 12 atoms:
Ti at the fcc sites (0,0,0), (0,½,½), (½,0,½), (½,½,0) and O at the eight (¼|¾, ¼|¾, ¼|¾) sites
(fractions of the cube edge a). It is used (rather than the 3-atom fcc primitive cell of the paper) so
that the B-spline grid is a cubic grid of a cubic cell. Lattice constant: a = 4.87 Å
(:data:`LATTICE_CONSTANT_ANGSTROM`), the value assumed in the project's notes on study 003 (§7.3) for
their PySCF check. The study itself gives no lattice constant (notes §1.1, §8.4). For comparison,
Miloua et al., Comput. Mater. Sci. 50, 2142 (2011) (FP-LAPW) quote d(Ti–O) = 2.06 Å for fluorite
TiO2, i.e. a = 4·2.06/√3 ≈ 4.76 Å. The value matters little for an orbital-evaluation workload;
pass ``lattice_constant`` (bohr) to use another.

DFT (:func:`tio2_dft_orbitals`). Restricted Kohn–Sham at the Γ point only, so the orbitals are real.
Defaults: GTH pseudopotentials (``gth-pbe``: Ti q12, O q6, so 96 valence electrons and 48 doubly
occupied orbitals per cubic cell), the ``gth-dzvp-molopt-sr`` basis (208 functions), PBE, PySCF's
multigrid Coulomb/XC integration with a 100 E_h kinetic-energy cutoff for the density, and a level
shift of 0.1 E_h to damp the early charge sloshing. (With the minimal basis ``gth-szv-molopt-sr`` the
highest occupied and lowest empty levels at Γ are nearly degenerate in this cell and the integer-occupation
SCF oscillates without converging, so it is not the default. With the
default basis, Γ-only sampling gives a Kohn–Sham gap of about 0.84 eV at Γ. At a 150 E_h cutoff the
total energy moves by about 4 mE_h, 0.3 mE_h per atom.) Γ-only sampling of a 12-atom cell is a poor
Brillouin-zone sample for the energy, but the orbitals are what a Γ-point QMC calculation of this
cell would use. The SCF (about 20 cycles) took 140–190 s on the project's 2-core VM while other
jobs shared it.

Orbitals on a grid. The 48 occupied orbitals are sampled at the n³ points i/n of the cell with PySCF's
lattice-summed atomic-orbital evaluation (``Cell.pbc_eval_gto``, in chunks, with progress
reports). Their B-spline coefficients are fitted with :func:`~qmckit.systems.bspline_orbitals.fit_coefficients`
(exact interpolation at the grid points). Accuracy of the spline, measured against PySCF at 2000
random points of the cell (the largest |ψ| there is about 0.47 bohr^(-3/2), the rms 0.036); "rel"
is the worst orbital's max error over its own max |ψ|:

    grid   max |error|   rms error   rel     coefficients (float32, 48 orbitals)
    24³    5–7e-2        1.0e-3      16 %     2.7 MB   (the cached grid)
    32³    1.2e-2        3.0e-4       5 %     6.3 MB
    48³    1.4e-3        3.2e-5     0.6 %    21 MB
    64³    5.1e-4        7.7e-6     0.15 %   50 MB

At 24³ the largest errors are in the O 2p valence orbitals (relative rms error up to 6 %), then Ti 3p
(3 %); Ti 3s and O 2s are within 1 %. Use at least 48³ when the values feed a QMC calculation; 24³ is
enough for plots and kernel timings.

Cache. ``data/tio2_dft_orbitals.npz`` holds the occupied MO coefficients (basis functions × 48),
all orbital energies, and the float32 spline coefficients on the 24³ grid (2.7 MB raw). The JSON
sidecar ``data/tio2_dft_orbitals.json`` records how they were made (PySCF version, basis,
pseudopotential, functional, cutoff, grid, SCF energy, HOMO/LUMO, the measured spline error, date).
:func:`tio2_dft_orbitals` with the default settings loads the spline coefficients from the cache and
does not need PySCF. With another grid or precision, and the same DFT settings, it reuses the cached
MO coefficients and only samples and fits again, which takes seconds (needs PySCF). With other DFT
settings it runs the SCF (minutes). ``python -m qmckit.systems.tio2_dft --write-cache`` regenerates
the cache.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .bspline_orbitals import BsplineOrbitals, check_grid, check_precision, dtype_for, fit_coefficients, grid_points
from .gaussian_basis import CHEM_EXTRA_HINT, PySCFMissing, require_pyscf
from ..resources import data_dir

BOHR_ANGSTROM = 0.529177210903  # CODATA 2018, Å per bohr
LATTICE_CONSTANT_ANGSTROM = 4.87  # notes on study 003, §7.3 (assumed there); see the module docstring
LATTICE_CONSTANT = LATTICE_CONSTANT_ANGSTROM / BOHR_ANGSTROM  # bohr (≈ 9.2030)

DEFAULT_BASIS = "gth-dzvp-molopt-sr"
DEFAULT_XC = "pbe"
DEFAULT_KE_CUTOFF = 100.0  # E_h, plane-wave cutoff of the density grid
DEFAULT_GRID = 24  # the cached spline grid (float32 coefficients ≤ 3 MB)
DEFAULT_PRECISION = "f32"
PSEUDO_FOR_XC = {"pbe": "gth-pbe", "lda": "gth-pade", "pade": "gth-pade", "lda,vwn": "gth-pade", "blyp": "gth-blyp"}
VALENCE = {"Ti": 12, "O": 6}  # GTH q12 (Ne core) and q6 pseudopotentials

DATA_DIR = data_dir()
CACHE_NPZ = DATA_DIR / "tio2_dft_orbitals.npz"
CACHE_JSON = DATA_DIR / "tio2_dft_orbitals.json"
CACHE_LIMIT_BYTES = 3_000_000  # spline coefficients are cached only below this size

__all__ = ["LATTICE_CONSTANT", "LATTICE_CONSTANT_ANGSTROM", "TiO2Cell", "TiO2Orbitals", "tio2_cell", "pyscf_cell",
           "tio2_dft_orbitals", "orbital_on_plane", "plane_points", "plane_geometry", "atoms_on_plane",
           "spline_error", "write_cache", "run_scf", "sample_orbitals", "ao_values", "require_pyscf_pbc",
           "PySCFMissing"]

AO_CHUNK = 20_000  # grid points per PySCF AO evaluation (208 functions × 8 B × 20k ≈ 33 MB)

# Fractional coordinates of the conventional fluorite cell: Ti on fcc sites, O on the 8 quarter sites.
_FCC = np.array([[0.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
_O_SITES = np.array([[x, y, z] for x in (0.25, 0.75) for y in (0.25, 0.75) for z in (0.25, 0.75)])


# --------------------------------------------------------------------------------------------
# structure
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class TiO2Cell:
    """The conventional cubic cell of fluorite-type TiO2 (Fm-3m), 4 formula units.

    lattice          (3, 3) lattice vectors as rows, in bohr (a cube of edge ``lattice_constant``)
    symbols          ("Ti", "Ti", "Ti", "Ti", "O", …): 4 Ti then 8 O
    fractional       (12, 3) fractional coordinates (rows), in [0, 1)
    lattice_constant cube edge a in bohr
    """

    lattice: np.ndarray
    symbols: tuple
    fractional: np.ndarray
    lattice_constant: float

    @property
    def positions(self) -> np.ndarray:
        """Cartesian positions (12, 3) in bohr."""
        return self.fractional @ self.lattice

    @property
    def volume(self) -> float:
        """Cell volume in bohr³ (a³)."""
        return float(abs(np.linalg.det(self.lattice)))

    @property
    def n_atoms(self) -> int:
        return len(self.symbols)

    @property
    def n_valence_electrons(self) -> int:
        """Valence electrons with GTH q12 Ti and q6 O pseudopotentials (96)."""
        return sum(VALENCE[s] for s in self.symbols)


def tio2_cell(lattice_constant: float = LATTICE_CONSTANT) -> TiO2Cell:
    """The 12-atom conventional cubic cell of fluorite TiO2 with cube edge ``lattice_constant`` (bohr).

    Ti at (0,0,0), (0,½,½), (½,0,½), (½,½,0); O at all (¼|¾, ¼|¾, ¼|¾) (fractions of the edge): each
    Ti has 8 O neighbours at a√3/4, each O 4 Ti. Default a = 4.87 Å (:data:`LATTICE_CONSTANT`).
    """
    if isinstance(lattice_constant, (bool, np.bool_)) or not isinstance(lattice_constant, (int, float, np.integer,
                                                                                            np.floating)) \
            or not math.isfinite(lattice_constant) or lattice_constant <= 0:
        raise ValueError(f"lattice_constant must be a positive number of bohr, got {lattice_constant!r}")
    a = float(lattice_constant)
    frac = np.vstack([_FCC, _O_SITES])
    return TiO2Cell(a * np.eye(3), ("Ti",) * 4 + ("O",) * 8, frac, a)


# --------------------------------------------------------------------------------------------
# PySCF
# --------------------------------------------------------------------------------------------
def require_pyscf_pbc():
    """Import PySCF's periodic code, or raise :class:`PySCFMissing` with one line naming the extra."""
    message = f"TiO2 DFT orbitals need PySCF's periodic code, the optional 'chem' extra: {CHEM_EXTRA_HINT}"
    try:
        pyscf = require_pyscf()
        import pyscf.pbc.dft  # noqa: F401
        import pyscf.pbc.gto  # noqa: F401
    except (PySCFMissing, ImportError):
        raise PySCFMissing(message) from None
    return pyscf


def _normalise_xc(xc: str) -> str:
    if not isinstance(xc, str) or xc.lower() not in PSEUDO_FOR_XC:
        raise ValueError(f"xc must be one of {', '.join(PSEUDO_FOR_XC)}, got {xc!r}")
    return xc.lower()


def _check_finite(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _check_positive(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def pyscf_cell(lattice_constant: float = LATTICE_CONSTANT, basis: str = DEFAULT_BASIS, xc: str = DEFAULT_XC,
               ke_cutoff: float = DEFAULT_KE_CUTOFF, verbose: int = 0):
    """The PySCF ``pbc.gto.Cell`` of :func:`tio2_cell` with GTH pseudopotentials matching ``xc``.

    Coordinates are given in bohr (``unit="B"``); ``ke_cutoff`` (E_h) fixes the density grid.
    """
    require_pyscf_pbc()
    from pyscf.pbc import gto

    xc = _normalise_xc(xc)
    ke_cutoff = _check_positive("ke_cutoff", ke_cutoff)
    structure = tio2_cell(lattice_constant)
    cell = gto.Cell()
    cell.a = structure.lattice
    cell.atom = [(s, tuple(float(x) for x in r)) for s, r in zip(structure.symbols, structure.positions)]
    cell.unit = "B"
    cell.basis = basis
    cell.pseudo = PSEUDO_FOR_XC[xc]
    cell.ke_cutoff = ke_cutoff
    cell.verbose = verbose
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PySCF suggests basis-set-exchange for unknown names
            cell.build()
    except (KeyError, RuntimeError, ValueError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"basis {basis!r} with pseudopotential {PSEUDO_FOR_XC[xc]!r} is not usable for Ti and O "
                         f"({detail})") from None
    return cell


def _reporter(progress):
    """``progress``: None (silent), True (a text bar on stderr) or a callable(stage, done, total)."""
    if progress is None or progress is False:
        return lambda stage, done, total: None
    if callable(progress):
        return progress

    def text(stage, done, total):
        if total:
            width = 30
            filled = int(width * done / total)
            bar = "#" * filled + "." * (width - filled)
            end = "\n" if done >= total else ""
            print(f"\rqmckit: {stage} [{bar}] {done}/{total}", end=end, file=sys.stderr, flush=True)
        else:
            print(f"qmckit: {stage} ({done})", file=sys.stderr, flush=True)
    return text


def run_scf(cell, xc: str = DEFAULT_XC, conv_tol: float = 1e-8, max_cycles: int = 60, level_shift: float = 0.1,
            progress=None):
    """Γ-point restricted Kohn–Sham SCF (multigrid) of a PySCF ``cell``; returns the converged ``mf``.

    Raises RuntimeError when the SCF does not converge. ``progress(stage, done, total)`` is called after
    every cycle with ``total = max_cycles``.
    """
    require_pyscf_pbc()
    from pyscf.pbc import dft

    report = _reporter(progress)
    mf = dft.RKS(cell, xc=_normalise_xc(xc))
    if hasattr(mf, "multigrid_numint"):
        mf = mf.multigrid_numint()
    else:  # older PySCF
        from pyscf.pbc.dft import multigrid
        mf.with_df = multigrid.MultiGridFFTDF(cell)
    mf.conv_tol = conv_tol
    mf.max_cycle = max_cycles
    mf.level_shift = level_shift
    mf.verbose = cell.verbose
    cycles = [0]

    def callback(env):
        cycles[0] += 1
        report(f"SCF cycle, E = {env.get('e_tot', float('nan')):.6f} E_h", cycles[0], max_cycles)

    mf.callback = callback
    mf.kernel()
    if not mf.converged:
        raise RuntimeError(f"the TiO2 SCF did not converge in {max_cycles} cycles (basis {cell.basis!r}, xc {xc!r})")
    if cycles[0] < max_cycles:
        report("SCF converged", max_cycles, max_cycles)
    return mf


def ao_values(cell, points, chunk: int = AO_CHUNK, progress=None, stage="atomic orbitals") -> np.ndarray:
    """Lattice-summed (Γ-point) atomic orbitals (P, n_basis) of a PySCF ``cell`` at ``points`` (P, 3) bohr."""
    report = _reporter(progress)
    points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    out = np.empty((len(points), cell.nao), dtype=np.float64)
    n_chunks = max(1, -(-len(points) // chunk))
    for k in range(n_chunks):
        sl = slice(k * chunk, (k + 1) * chunk)
        values = cell.pbc_eval_gto("GTOval", points[sl])
        out[sl] = np.real(values)
        report(stage, k + 1, n_chunks)
    return out


def sample_orbitals(cell, mo_coeff, grid, progress=None) -> np.ndarray:
    """Orbital values (n1, n2, n3, L) at the grid points i_d/n_d of ``cell`` (the input of
    :func:`~qmckit.systems.bspline_orbitals.fit_coefficients`); ``mo_coeff`` is (n_basis, L)."""
    grid = check_grid(grid)
    points = grid_points(cell.lattice_vectors(), grid).reshape(-1, 3)
    report = _reporter(progress)
    mo_coeff = np.asarray(mo_coeff, dtype=np.float64)
    out = np.empty((len(points), mo_coeff.shape[1]))
    n_chunks = max(1, -(-len(points) // AO_CHUNK))
    for k in range(n_chunks):
        sl = slice(k * AO_CHUNK, (k + 1) * AO_CHUNK)
        out[sl] = np.real(cell.pbc_eval_gto("GTOval", points[sl])) @ mo_coeff
        report(f"sampling orbitals on {grid[0]}×{grid[1]}×{grid[2]}", k + 1, n_chunks)
    return out.reshape(*grid, mo_coeff.shape[1])


# --------------------------------------------------------------------------------------------
# result and cache
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class TiO2Orbitals:
    """Occupied Γ-point Kohn–Sham orbitals of cubic TiO2 as B-splines, and how they were made.

    orbitals        :class:`BsplineOrbitals`, L = ``n_occupied`` real orbitals over ``structure.lattice``,
                    lowest orbital energy first, normalised over the cell (bohr^(-3/2))
    structure       :class:`TiO2Cell` (bohr)
    mo_coeff        (n_basis, L) PySCF MO coefficients of the occupied orbitals (Γ point, real)
    mo_energy       (n_basis,) all Kohn–Sham orbital energies in E_h, ascending
    n_occupied      doubly occupied orbitals (48)
    n_electrons     valence electrons (96)
    scf_energy      total SCF energy per cubic cell in E_h (Γ point; pseudopotential valence energy)
    basis, xc, pseudo, ke_cutoff (E_h), grid (n1, n2, n3), precision ("f32"/"f64")
    source          "cache" (spline coefficients loaded), "cached SCF" (MOs loaded, spline fitted now)
                    or "computed" (SCF run now)
    metadata        the JSON sidecar's contents for cached results, else what would be written
    """

    orbitals: BsplineOrbitals
    structure: TiO2Cell
    mo_coeff: np.ndarray
    mo_energy: np.ndarray
    n_occupied: int
    n_electrons: int
    scf_energy: float
    basis: str
    xc: str
    pseudo: str
    ke_cutoff: float
    grid: tuple
    precision: str
    source: str
    metadata: dict = field(default_factory=dict)

    @property
    def homo(self) -> float:
        """Highest occupied orbital energy (E_h)."""
        return float(self.mo_energy[self.n_occupied - 1])

    @property
    def lumo(self) -> float:
        """Lowest unoccupied orbital energy (E_h), NaN when the basis has no virtual orbitals."""
        return float(self.mo_energy[self.n_occupied]) if len(self.mo_energy) > self.n_occupied else float("nan")

    def pyscf_cell(self, verbose: int = 0):
        """The PySCF cell these orbitals belong to (for evaluating them with PySCF)."""
        return pyscf_cell(self.structure.lattice_constant, self.basis, self.xc, self.ke_cutoff, verbose)

    def pyscf_values(self, points, cell=None) -> np.ndarray:
        """The occupied orbitals (P, L) at ``points`` (P, 3) bohr evaluated by PySCF (no spline)."""
        cell = self.pyscf_cell() if cell is None else cell
        return ao_values(cell, points) @ self.mo_coeff


def _settings(lattice_constant, basis, xc, ke_cutoff) -> dict:
    return {"lattice_constant_bohr": float(lattice_constant), "basis": str(basis).lower(), "xc": _normalise_xc(xc),
            "pseudo": PSEUDO_FOR_XC[_normalise_xc(xc)], "ke_cutoff_hartree": float(ke_cutoff), "kpoint": "gamma"}


def _read_cache(npz_path=CACHE_NPZ, json_path=CACHE_JSON):
    """(metadata, arrays) of the cache, or None when it is absent."""
    npz_path, json_path = Path(npz_path), Path(json_path)
    if not (npz_path.is_file() and json_path.is_file()):
        return None
    meta = json.loads(json_path.read_text())
    with np.load(npz_path) as data:
        arrays = {k: data[k] for k in data.files}
    return meta, arrays


def _matches(meta, settings) -> bool:
    for key, value in settings.items():
        if key not in meta:
            return False
        if isinstance(value, float):
            if not math.isclose(float(meta[key]), value, rel_tol=1e-9, abs_tol=1e-12):
                return False
        elif meta[key] != value:
            return False
    return True


def tio2_dft_orbitals(grid=DEFAULT_GRID, basis: str = DEFAULT_BASIS, xc: str = DEFAULT_XC,
                      lattice_constant: float = LATTICE_CONSTANT, ke_cutoff: float = DEFAULT_KE_CUTOFF,
                      precision: str = DEFAULT_PRECISION, use_cache: bool = True, progress=None,
                      cache_npz=CACHE_NPZ, cache_json=CACHE_JSON) -> TiO2Orbitals:
    """The occupied Γ-point Kohn–Sham orbitals of cubic fluorite TiO2 as B-spline orbitals.

    grid              spline grid (an integer n for n³, or three integers) over the cubic cell
    basis, xc         PySCF GTH basis and functional ("pbe" → gth-pbe, "lda"/"pade" → gth-pade pseudopotentials)
    lattice_constant  cube edge in bohr (default 4.87 Å)
    ke_cutoff         density-grid cutoff in E_h
    precision         "f32" or "f64" spline coefficients
    use_cache         read ``data/tio2_dft_orbitals.*`` when its settings match (see the module docstring)
    progress          None, True (text bar on stderr) or callable(stage, done, total)

    Returns :class:`TiO2Orbitals`. Needs PySCF (the ``chem`` extra) unless the cached spline matches
    ``grid`` and ``precision``; raises :class:`PySCFMissing` with one line otherwise.
    """
    grid = check_grid(grid)
    precision = check_precision(precision)
    settings = _settings(lattice_constant, basis, xc, _check_positive("ke_cutoff", ke_cutoff))
    structure = tio2_cell(lattice_constant)
    cached = _read_cache(cache_npz, cache_json) if use_cache else None
    if cached is not None and _matches(cached[0], settings):
        meta, arrays = cached
        common = dict(structure=structure, mo_coeff=arrays["mo_coeff"], mo_energy=arrays["mo_energy"],
                      n_occupied=int(meta["n_occupied"]), n_electrons=int(meta["n_electrons"]),
                      scf_energy=float(meta["scf_energy_hartree"]), basis=settings["basis"], xc=settings["xc"],
                      pseudo=settings["pseudo"], ke_cutoff=settings["ke_cutoff_hartree"], grid=grid,
                      precision=precision, metadata=meta)
        if "coefficients" in arrays and tuple(meta["grid"]) == grid and meta["precision"] == precision:
            coeffs = np.ascontiguousarray(arrays["coefficients"], dtype=dtype_for(precision, False))
            return TiO2Orbitals(orbitals=BsplineOrbitals(coeffs, structure.lattice), source="cache", **common)
        cell = pyscf_cell(lattice_constant, basis, xc, ke_cutoff)
        values = sample_orbitals(cell, arrays["mo_coeff"], grid, progress)
        orbitals = BsplineOrbitals(fit_coefficients(values, dtype=dtype_for(precision, False)), structure.lattice)
        return TiO2Orbitals(orbitals=orbitals, source="cached SCF", **common)
    return _compute(structure, settings, grid, precision, progress)


def _compute(structure, settings, grid, precision, progress, verbose=0) -> TiO2Orbitals:
    pyscf = require_pyscf_pbc()
    cell = pyscf_cell(settings["lattice_constant_bohr"], settings["basis"], settings["xc"],
                      settings["ke_cutoff_hartree"], verbose)
    n_electrons = int(cell.nelectron)
    if n_electrons % 2:
        raise ValueError(f"the cell has an odd number of electrons ({n_electrons}); a closed shell is needed")
    n_occ = n_electrons // 2
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    start = time.perf_counter()
    mf = run_scf(cell, settings["xc"], progress=progress)
    scf_wall = time.perf_counter() - start
    mo_coeff = np.ascontiguousarray(np.real_if_close(mf.mo_coeff[:, :n_occ]), dtype=np.float64)
    mo_energy = np.asarray(mf.mo_energy, dtype=np.float64)
    values = sample_orbitals(cell, mo_coeff, grid, progress)
    orbitals = BsplineOrbitals(fit_coefficients(values, dtype=dtype_for(precision, False)), structure.lattice)
    meta = dict(settings)
    meta.update({
        "description": "Occupied Γ-point Kohn–Sham orbitals of fluorite-type TiO2 (conventional 12-atom cubic "
                       "cell) as periodic cubic B-spline coefficients; made by qmckit.systems.tio2_dft",
        "lattice_constant_angstrom": settings["lattice_constant_bohr"] * BOHR_ANGSTROM,
        "lattice_constant_source": "notes on study 003 (Uejima & Maezono 2012), §7.3: a = 4.87 Å assumed",
        "pyscf_version": pyscf.__version__, "n_basis": int(cell.nao), "n_electrons": n_electrons,
        "n_occupied": n_occ, "scf_energy_hartree": float(mf.e_tot), "converged": bool(mf.converged),
        "conv_tol": float(mf.conv_tol), "level_shift": float(mf.level_shift), "integration": "multigrid",
        "homo_hartree": float(mo_energy[n_occ - 1]),
        "lumo_hartree": float(mo_energy[n_occ]) if len(mo_energy) > n_occ else None,
        "scf_wall_s": round(scf_wall, 1),
        "machine": f"{os.cpu_count()} CPUs, 1-minute load average {load:.1f} when the SCF started",
        "grid": list(grid), "precision": precision,
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
    })
    return TiO2Orbitals(orbitals=orbitals, structure=structure, mo_coeff=mo_coeff, mo_energy=mo_energy,
                        n_occupied=n_occ, n_electrons=n_electrons, scf_energy=float(mf.e_tot),
                        basis=settings["basis"], xc=settings["xc"], pseudo=settings["pseudo"],
                        ke_cutoff=settings["ke_cutoff_hartree"], grid=grid, precision=precision,
                        source="computed", metadata=meta)


def spline_error(result: TiO2Orbitals, n_points: int = 2000, seed: int = 0, cell=None) -> dict:
    """Max and rms |spline − PySCF| (bohr^(-3/2)) over ``n_points`` uniform random points of the cell."""
    rng = np.random.default_rng(seed)
    points = rng.random((n_points, 3)) @ result.structure.lattice
    reference = result.pyscf_values(points, cell)
    err = np.abs(result.orbitals.values(points).astype(np.float64) - reference)
    return {"points": int(n_points), "seed": int(seed), "max_abs": float(err.max()),
            "rms": float(np.sqrt(np.mean(err ** 2))), "max_abs_psi": float(np.abs(reference).max()),
            "rms_psi": float(np.sqrt(np.mean(reference ** 2)))}


def write_cache(result: TiO2Orbitals, npz_path=CACHE_NPZ, json_path=CACHE_JSON, limit_bytes: int = CACHE_LIMIT_BYTES,
                error: dict | None = None) -> dict:
    """Write the MO coefficients, orbital energies and (when ≤ ``limit_bytes``) the spline coefficients of
    ``result`` to ``npz_path`` (compressed) and the description to ``json_path``; returns the description."""
    coeffs = result.orbitals.coefficients
    arrays = {"mo_coeff": result.mo_coeff, "mo_energy": result.mo_energy}
    meta = dict(result.metadata)
    if coeffs.nbytes <= limit_bytes:
        arrays["coefficients"] = coeffs
        meta["coefficients"] = {"shape": list(coeffs.shape), "dtype": str(coeffs.dtype), "layout": "coalesced",
                                "convention": "qmckit.systems.bspline_orbitals (standard cubic B-spline, grid points "
                                              "i/n of the cell, orbital index fastest)"}
    else:
        meta.pop("grid", None)
        meta.pop("precision", None)
    if error is not None:
        meta["spline_error_vs_pyscf"] = error
    meta["arrays"] = {"mo_coeff": "occupied MO coefficients (n_basis, n_occupied), Γ point, real",
                      "mo_energy": "all Kohn–Sham orbital energies (n_basis,), hartree",
                      **({"coefficients": "spline coefficients (n1, n2, n3, n_occupied)"}
                         if "coefficients" in arrays else {})}
    meta["regenerate"] = "python -m qmckit.systems.tio2_dft --write-cache"
    Path(npz_path).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(npz_path, **arrays)
    meta["npz_bytes"] = Path(npz_path).stat().st_size
    Path(json_path).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return meta


# --------------------------------------------------------------------------------------------
# plotting helpers
# --------------------------------------------------------------------------------------------
NAMED_PLANES = {
    # name: (origin, u, v) in fractions of the lattice vectors
    "110": ((0.0, 0.0, 0.0), (1.0, 1.0, 0.0), (0.0, 0.0, 1.0)),  # Ti and O, Ti–O bonds in the plane
    "001": ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),  # Ti only; offset a/4 gives the O layer
    "100": ((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    "010": ((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)),
}


def plane_geometry(cell, plane="110", offset: float = 0.0):
    """(origin, u, v) in bohr of a plane of ``cell`` (3×3, rows = lattice vectors).

    ``plane`` is a name in :data:`NAMED_PLANES` (origin, u, v given there in fractions of the lattice
    vectors) or an explicit (origin, u, v) in bohr. ``offset`` (bohr) moves the plane along its unit
    normal u × v / |u × v| (e.g. a/4 puts the "001" plane through an O layer).
    """
    cell = np.asarray(cell, dtype=np.float64)
    if isinstance(plane, str):
        if plane not in NAMED_PLANES:
            raise ValueError(f"plane must be one of {', '.join(NAMED_PLANES)} or (origin, u, v) in bohr, got {plane!r}")
        origin, u, v = (np.asarray(x, dtype=np.float64) @ cell for x in NAMED_PLANES[plane])
    else:
        try:
            origin, u, v = (np.asarray(x, dtype=np.float64).reshape(3) for x in plane)
        except (TypeError, ValueError):
            raise ValueError(f"plane must be a name ({', '.join(NAMED_PLANES)}) or (origin, u, v), three 3-vectors "
                             f"in bohr, got {plane!r}") from None
    normal = np.cross(u, v)
    if not np.linalg.norm(normal) > 1e-12:
        raise ValueError("plane vectors u and v must not be parallel")
    offset = _check_finite("offset", offset)
    return origin + offset * normal / np.linalg.norm(normal), u, v


def plane_points(cell, plane="110", n: int = 64, offset: float = 0.0) -> np.ndarray:
    """Points (n, n, 3) in bohr: ``points[i, j] = origin + s_i u + t_j v`` with s, t = linspace(0, 1, n)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer ≥ 2, got {n!r}")
    origin, u, v = plane_geometry(cell, plane, offset)
    s = np.linspace(0.0, 1.0, n)
    return origin + s[:, None, None] * u + s[None, :, None] * v


def orbital_on_plane(orbitals, index: int, plane="110", n: int = 64, offset: float = 0.0) -> np.ndarray:
    """Values (n, n) of orbital ``index`` on a plane (bohr^(-3/2)); ``values[i, j]`` is at
    origin + s_i u + t_j v (:func:`plane_points`).

    ``orbitals`` is a :class:`BsplineOrbitals` or a :class:`TiO2Orbitals`. To plot with the first plane
    vector to the right: ``plt.imshow(values.T, origin="lower", extent=(0, |u|, 0, |v|))``. The default
    "110" plane (spanned by a₁ + a₂ and a₃ through a Ti site) contains Ti and O atoms.
    """
    if isinstance(orbitals, TiO2Orbitals):
        orbitals = orbitals.orbitals
    if not isinstance(orbitals, BsplineOrbitals):
        raise ValueError(f"orbitals must be BsplineOrbitals or TiO2Orbitals, got {type(orbitals).__name__}")
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)) \
            or not -orbitals.n_orbitals <= index < orbitals.n_orbitals:
        raise ValueError(f"index must be an integer in [0, {orbitals.n_orbitals}), got {index!r}")
    points = plane_points(orbitals.cell, plane, n, offset)
    values = orbitals.with_layout("coalesced").values(points.reshape(-1, 3))
    return values[:, index].reshape(n, n).astype(np.float64)


def atoms_on_plane(structure: TiO2Cell, plane="110", offset: float = 0.0, tol: float = 1e-6):
    """Atoms (and periodic images) lying in the plotted plane patch: a list of (symbol, s·|u|, t·|v|)
    in bohr, for marking atoms on an :func:`orbital_on_plane` image."""
    origin, u, v = plane_geometry(structure.lattice, plane, offset)
    normal = np.cross(u, v)
    normal /= np.linalg.norm(normal)
    basis = np.stack([u, v, normal], axis=1)  # columns
    out = []
    for shift in np.stack(np.meshgrid(*(np.arange(-1, 3),) * 3, indexing="ij"), -1).reshape(-1, 3):
        for sym, frac in zip(structure.symbols, structure.fractional):
            r = (frac + shift) @ structure.lattice - origin
            s, t, h = np.linalg.solve(basis, r)
            if abs(h) < tol and -tol <= s <= 1 + tol and -tol <= t <= 1 + tol:
                out.append((sym, float(s * np.linalg.norm(u)), float(t * np.linalg.norm(v))))
    return sorted(set(out), key=lambda x: (x[0], x[1], x[2]))


# --------------------------------------------------------------------------------------------
# command line: regenerate the cache
# --------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qmckit.systems.tio2_dft",
        description="Compute the TiO2 Γ-point DFT orbitals and (re)write the cache in data/.")
    parser.add_argument("--write-cache", action="store_true", help="write data/tio2_dft_orbitals.{npz,json}")
    parser.add_argument("--grid", type=int, default=DEFAULT_GRID)
    parser.add_argument("--verbose", type=int, default=0, help="PySCF verbosity")
    args = parser.parse_args(argv)
    try:
        require_pyscf_pbc()
    except PySCFMissing as exc:
        print(f"qmckit: {exc}", file=sys.stderr)
        return 2
    settings = _settings(LATTICE_CONSTANT, DEFAULT_BASIS, DEFAULT_XC, DEFAULT_KE_CUTOFF)
    result = _compute(tio2_cell(), settings, check_grid(args.grid), DEFAULT_PRECISION, True, args.verbose)
    error = spline_error(result, n_points=2000, seed=2012)
    print(json.dumps({"scf_energy_hartree": result.scf_energy, "n_occupied": result.n_occupied,
                      "scf_wall_s": result.metadata["scf_wall_s"], "spline_error": error}, indent=2))
    if args.write_cache:
        meta = write_cache(result, error=error)
        print(f"wrote {CACHE_NPZ} ({meta['npz_bytes']} bytes) and {CACHE_JSON}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
