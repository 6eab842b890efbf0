"""Cubic (fluorite) TiO2 DFT orbitals as B-splines (qmckit.systems.tio2_dft, study 003 notes §7.3).

The checks use the cached SCF in data/tio2_dft_orbitals.{npz,json} and never rerun the SCF (it takes
minutes); PySCF is used only to build the cell and to evaluate the atomic orbitals at points, which
takes seconds. Every reference value is computed here, independently of the spline:

* spline vs PySCF: PySCF's lattice-summed atomic orbitals times the cached MO coefficients at random
  off-grid points (and PySCF's lattice sum itself against an explicit sum over images of the
  molecular orbitals of ``cell.to_mol()``);
* orthonormality: trapezoid quadrature over the periodic cell, and the MOs against PySCF's overlap
  matrix;
* electron count: GTH valence charges (Ti q12, O q6) against the occupied-orbital count and the
  integrated density.

Tolerances come from measured errors (module docstring of tio2_dft: 24³ grid, max |Δψ| ≈ 0.05–0.067,
rms ≈ 1.0e-3 bohr^-3/2; 32³: max ≈ 0.013–0.016, rms ≈ 3e-4), with a margin of about 1.5–2.

Set QMCKIT_TIO2_SCF_CHECK=1 to also rebuild the Kohn–Sham Fock matrix from the cached orbitals and
check the cached SCF energy and orbital energies (about 15 s more, so not part of the default run).
"""
import json
import math
import os

import numpy as np
import pytest

from qmckit.systems import tio2_dft as T
from qmckit.systems.bspline_orbitals import grid_points

ANGSTROM_PER_BOHR = 0.529177210903
HAS_CACHE = T.CACHE_NPZ.is_file() and T.CACHE_JSON.is_file()

try:
    T.require_pyscf_pbc()
    HAS_PYSCF = True
except T.PySCFMissing:
    HAS_PYSCF = False

needs_pyscf = pytest.mark.skipif(not HAS_PYSCF, reason="PySCF (the 'chem' extra) is not installed")
needs_cache = pytest.mark.skipif(not HAS_CACHE, reason="data/tio2_dft_orbitals.* is missing")


@pytest.fixture(scope="module")
def cached():
    if not HAS_CACHE:
        pytest.skip("data/tio2_dft_orbitals.* is missing")
    return T.tio2_dft_orbitals()


@pytest.fixture(scope="module")
def cell(cached):
    if not HAS_PYSCF:
        pytest.skip("PySCF (the 'chem' extra) is not installed")
    return cached.pyscf_cell()


@pytest.fixture(scope="module")
def finer(cached):
    """The same orbitals fitted on a 32³ grid from the cached MO coefficients (seconds, no SCF)."""
    if not HAS_PYSCF:
        pytest.skip("PySCF (the 'chem' extra) is not installed")
    return T.tio2_dft_orbitals(grid=32)


def _random_points(lattice, n, seed):
    return np.random.default_rng(seed).random((n, 3)) @ lattice


def _quadrature_overlap(orbitals, lattice, m, shift):
    """(V/m³) Σ_points ψ_k ψ_l on the m³ grid of the cell displaced by ``shift`` grid spacings."""
    points = grid_points(lattice, m).reshape(-1, 3) + (shift / m) * lattice.sum(axis=0)
    psi = orbitals.values(points).astype(np.float64)
    return psi.T @ psi * abs(np.linalg.det(lattice)) / len(points)


# ---------------------------------------------------------------------------------------------
# structure (no PySCF needed)
# ---------------------------------------------------------------------------------------------
def test_cell_stoichiometry_volume_and_coordination():
    s = T.tio2_cell()
    a = 4.87 / ANGSTROM_PER_BOHR
    assert s.lattice_constant == pytest.approx(a, rel=1e-12)
    assert s.volume == pytest.approx(a ** 3, rel=1e-12)  # ≈ 779.4 bohr³ = 115.5 Å³
    assert s.volume * ANGSTROM_PER_BOHR ** 3 == pytest.approx(4.87 ** 3, rel=1e-12)
    assert s.symbols.count("Ti") == 4 and s.symbols.count("O") == 8  # TiO2, 4 formula units
    # all positions distinct modulo the lattice
    frac = np.mod(s.fractional, 1.0)
    assert len({tuple(np.round(f, 9)) for f in frac}) == 12
    # fcc centring: the structure is invariant under (½,½,0), (½,0,½), (0,½,½)
    for t in ([0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]):
        for sym in ("Ti", "O"):
            sites = {tuple(np.round(np.mod(f, 1.0), 9)) for f, x in zip(frac, s.symbols) if x == sym}
            moved = {tuple(np.round(np.mod(np.array(f) + t, 1.0), 9)) for f in sites}
            assert moved == sites
    # coordination: Ti 8 O at a√3/4, O 4 Ti at a√3/4 (minimum-image distances)
    pos = s.positions
    d_nn = a * math.sqrt(3) / 4
    for i, si in enumerate(s.symbols):
        d = []
        for j, sj in enumerate(s.symbols):
            if sj == si:
                continue
            diff = pos[j] - pos[i]
            diff -= a * np.round(diff / a)
            d.append(np.linalg.norm(diff))
        d = np.array(d)
        assert d.min() == pytest.approx(d_nn, rel=1e-12)
        assert np.sum(np.isclose(d, d_nn, rtol=1e-9)) == (8 if si == "Ti" else 4)
    assert s.n_valence_electrons == 4 * 12 + 8 * 6


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="lattice_constant"):
        T.tio2_cell(-1.0)
    with pytest.raises(ValueError, match="xc"):
        T.tio2_dft_orbitals(xc="b3lyp-d3")
    with pytest.raises(ValueError, match="grid"):
        T.tio2_dft_orbitals(grid=2)
    with pytest.raises(ValueError, match="plane"):
        T.plane_points(T.tio2_cell().lattice, plane="111")


@needs_cache
def test_cache_is_small_and_described(cached):
    meta = json.loads(T.CACHE_JSON.read_text())
    assert T.CACHE_NPZ.stat().st_size <= 3_000_000
    assert meta["npz_bytes"] == T.CACHE_NPZ.stat().st_size
    for key in ("pyscf_version", "basis", "xc", "pseudo", "grid", "scf_energy_hartree", "date", "ke_cutoff_hartree"):
        assert key in meta
    assert cached.source == "cache"
    assert cached.orbitals.coefficients.shape == (*meta["grid"], meta["n_occupied"])
    assert cached.orbitals.dtype == np.float32 and not cached.orbitals.is_complex
    assert np.allclose(cached.orbitals.cell, T.tio2_cell().lattice)
    assert cached.mo_coeff.shape == (meta["n_basis"], meta["n_occupied"])
    assert np.all(np.diff(cached.mo_energy) >= -1e-12)  # ascending
    assert cached.homo == pytest.approx(meta["homo_hartree"]) and cached.homo < cached.lumo


# ---------------------------------------------------------------------------------------------
# against PySCF
# ---------------------------------------------------------------------------------------------
@needs_pyscf
def test_electron_count(cached, cell):
    valence = {"Ti": 12, "O": 6}  # GTH-PBE q12 / q6
    expected = sum(valence[cell.atom_symbol(i)] for i in range(cell.natm))
    assert expected == 96
    assert cell.nelectron == expected
    assert int(round(cell.atom_charges().sum())) == expected  # PySCF's pseudopotential valence charges
    assert 2 * cached.n_occupied == expected == cached.n_electrons
    assert cached.orbitals.n_orbitals == cached.n_occupied


@needs_pyscf
def test_pyscf_lattice_sum_matches_explicit_images(cached, cell):
    """Cell.pbc_eval_gto (used to sample the orbitals) equals Σ_T χ_mol(r − T) over images T."""
    points = _random_points(cached.structure.lattice, 60, seed=11)
    mol = cell.to_mol()
    lattice = cell.lattice_vectors()
    explicit = 0.0
    images = range(-2, 3)  # smallest exponent 0.077 bohr⁻²: images ≥ 2a away contribute < 1e-11
    for i in images:
        for j in images:
            for k in images:
                explicit = explicit + mol.eval_gto("GTOval", points - np.array([i, j, k]) @ lattice)
    assert np.abs(T.ao_values(cell, points) - explicit).max() < 1e-9


@needs_pyscf
def test_spline_reproduces_pyscf_off_grid(cached, cell):
    points = _random_points(cached.structure.lattice, 1500, seed=2024)
    reference = T.ao_values(cell, points) @ cached.mo_coeff
    spline = cached.orbitals.values(points).astype(np.float64)
    err = np.abs(spline - reference)
    rms_ref = np.sqrt(np.mean(reference ** 2))  # ≈ 0.035 bohr^-3/2
    assert np.sqrt(np.mean(err ** 2)) < 2e-3  # measured ≈ 1.0e-3 (24³ grid)
    assert np.sqrt(np.mean(err ** 2)) < 0.06 * rms_ref
    assert err.max() < 0.1  # measured 0.047–0.067 over several seeds; max |ψ| ≈ 0.47
    # and the spline interpolates: at its own grid points it equals PySCF to float32 rounding
    nodes = grid_points(cached.structure.lattice, cached.grid).reshape(-1, 3)[::97]
    node_ref = T.ao_values(cell, nodes) @ cached.mo_coeff
    assert np.abs(cached.orbitals.values(nodes) - node_ref).max() < 2e-5


@needs_pyscf
def test_finer_grid_from_cached_orbitals_converges(cached, cell, finer):
    assert finer.source == "cached SCF" and finer.grid == (32, 32, 32)
    points = _random_points(cached.structure.lattice, 1500, seed=2025)
    reference = T.ao_values(cell, points) @ cached.mo_coeff
    err24 = np.abs(cached.orbitals.values(points) - reference)
    err32 = np.abs(finer.orbitals.values(points) - reference)
    rms24, rms32 = np.sqrt(np.mean(err24 ** 2)), np.sqrt(np.mean(err32 ** 2))
    assert rms32 < 6e-4 and err32.max() < 0.03  # measured ≈ 3e-4 and 0.013–0.016
    assert rms24 / rms32 > 2.3  # cubic-spline h⁴ convergence: (32/24)⁴ ≈ 3.2


@needs_pyscf
def test_orbitals_are_orthonormal(cached, cell, finer):
    # the PySCF MO coefficients, exactly: Cᵀ S C = 1 with S the Γ-point (lattice-summed) overlap
    s = cell.pbc_intor("int1e_ovlp")
    c = cached.mo_coeff
    assert np.abs(c.T @ s @ c - np.eye(cached.n_occupied)).max() < 1e-10
    lattice = cached.structure.lattice
    eye = np.eye(cached.n_occupied)
    # quadrature on the spline's own grid nodes (= PySCF's values there): periodic trapezoid rule,
    # spectrally accurate for the true orbitals; measured 4.6e-3 on 24³ and 3.3e-4 on 32³
    assert np.abs(_quadrature_overlap(cached.orbitals, lattice, 24, 0.0) - eye).max() < 1e-2
    assert np.abs(_quadrature_overlap(finer.orbitals, lattice, 32, 0.0) - eye).max() < 1e-3
    # the spline functions themselves, off the nodes (half-spacing-shifted 48³ grid): the spline
    # smooths the sharpest features near the nuclei a little; measured 9.2e-3 (24³) and 1.6e-3 (32³)
    s24 = _quadrature_overlap(cached.orbitals, lattice, 48, 0.5)
    s32 = _quadrature_overlap(finer.orbitals, lattice, 48, 0.5)
    assert np.abs(s24 - eye).max() < 2e-2
    assert np.abs(s32 - eye).max() < 4e-3
    # electrons in the cell: 2 Σ ∫|ψ|² = 96 (measured 95.59 for the 24³ spline)
    assert 2 * np.trace(s32) == pytest.approx(cached.n_electrons, rel=3e-3)


@needs_pyscf
def test_orbital_on_plane_matches_pyscf(cached, cell, finer):
    n = 24
    lattice = cached.structure.lattice
    a = cached.structure.lattice_constant
    points = T.plane_points(lattice, "110", n)
    assert np.allclose(points[-1, 0], [a, a, 0.0]) and np.allclose(points[0, -1], [0.0, 0.0, a])
    reference = T.ao_values(cell, points.reshape(-1, 3)) @ cached.mo_coeff
    # the plane passes through Ti and O centres, where the orbitals vary fastest;
    # relative rms error per orbital measured: up to 8.7 % (24³ spline), 4.0 % (32³)
    for orbitals, rel_tol, abs_tol in ((cached, 0.15, 0.1), (finer, 0.07, 0.045)):
        for index in (0, 5, 30, 47):  # Ti 3s, Ti 3p, an O 2p, the highest occupied
            values = T.orbital_on_plane(orbitals, index, plane="110", n=n)
            assert values.shape == (n, n)
            ref = reference[:, index].reshape(n, n)
            err = values - ref
            assert np.sqrt(np.mean(err ** 2)) < rel_tol * np.sqrt(np.mean(ref ** 2))
            assert np.abs(err).max() < abs_tol
    # the plane really is the one sampled: equal to the spline at plane_points
    spline = cached.orbitals.values(points.reshape(-1, 3))[:, 7].reshape(n, n)
    assert np.array_equal(T.orbital_on_plane(cached.orbitals, 7, "110", n), spline.astype(np.float64))
    # plane through an O layer: offset a/4 along the (001) normal
    atoms = T.atoms_on_plane(cached.structure, "001", offset=a / 4)
    assert {sym for sym, _, _ in atoms} == {"O"} and len(atoms) == 4
    with pytest.raises(ValueError, match="index"):
        T.orbital_on_plane(cached, cached.n_occupied, n=4)


@needs_cache
def test_missing_pyscf_gives_one_line_error(cached, monkeypatch):
    def missing():
        raise T.PySCFMissing("no pyscf")

    monkeypatch.setattr(T, "require_pyscf", missing)
    assert T.tio2_dft_orbitals().source == "cache"  # the cached spline needs no PySCF
    with pytest.raises(T.PySCFMissing) as info:
        T.tio2_dft_orbitals(grid=20)
    message = str(info.value)
    assert "\n" not in message and "chem" in message and "TiO2" in message


@needs_pyscf
@pytest.mark.skipif(os.environ.get("QMCKIT_TIO2_SCF_CHECK") != "1", reason="set QMCKIT_TIO2_SCF_CHECK=1 (≈15 s)")
def test_cached_orbitals_are_the_scf_solution(cached, cell):
    from pyscf.pbc import dft

    mf = dft.RKS(cell, xc=cached.xc).multigrid_numint()
    c = cached.mo_coeff
    dm = 2.0 * c @ c.T
    h = mf.get_hcore()
    veff = mf.get_veff(cell, dm)
    assert mf.energy_tot(dm, h, veff) == pytest.approx(cached.scf_energy, abs=1e-6)
    fock = h + veff
    eps = np.diag(c.T @ fock @ c)
    assert np.abs(eps - cached.mo_energy[:cached.n_occupied]).max() < 1e-3
    s = cell.pbc_intor("int1e_ovlp")
    assert np.abs(fock @ c - s @ c * eps).max() < 1e-3  # converged to conv_tol 1e-8 in the energy
