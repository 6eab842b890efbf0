"""Gaussian-basis molecules (study 001): basis kernels against PySCF, the Slater–Jastrow kernels against
finite differences, the incremental cache against a rebuild, bare-determinant VMC against the RHF
energy (the must-show), the Jastrow lowering H2 below RHF, the optional-dependency behaviour, the CLI.
(Fixed-node DMC of H2 against its exact energy: tests/test_dmc_exact.py.)

Sizes: with QMCKIT_FAST=1 (the default under pytest, see conftest.py) the bare-determinant checks run
160 walkers × 4000 sweeps (about 12 s each on the 2-core CI machine): H2O −76.00(4) E_h, Ne −128.58(17)
E_h against RHF/cc-pVDZ −76.0271 and −128.4889 E_h. The variance of E_L is large for a Gaussian
determinant (no nuclear cusps; heavy tails), so QMCKIT_FAST=0 runs 200 walkers × 40 000 sweeps:
H2O −76.011(12) E_h, Ne −128.489(24) E_h (same seed; 15 and 8 min on a busy 2-core machine).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

pyscf = pytest.importorskip("pyscf")
from pyscf import gto  # noqa: E402

from qmckit.methods.vmc import VMC  # noqa: E402
from qmckit.runs import RunConfig, make_run  # noqa: E402
from qmckit.systems import make_system  # noqa: E402
from qmckit.systems.gaussian_basis import (GaussianBasis, basis_derivatives, basis_values, eval_point,  # noqa: E402
                                           from_pyscf, orbital_values)
from qmckit.systems.molecule import (DATA_DIR, Molecule, MoleculeParams, cache_views, builtin_molecules,  # noqa: E402
                                     read_xyz, rhf_solution)
from qmckit.walkers import Walkers  # noqa: E402

FAST = os.environ.get("QMCKIT_FAST", "1").strip().lower() not in ("", "0", "false", "no", "off")  # as widgets.fast_mode
QMCKIT = [sys.executable, "-m", "qmckit.cli"]
WATER = "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692"


def mole(atom, basis, cart=True):
    return gto.M(atom=atom, basis=basis, cart=cart, verbose=0)


def random_points(n, seed=0, scale=1.5):
    return np.random.default_rng(seed).normal(size=(n, 3)) * scale


# --- the basis: values, gradients and Laplacians against PySCF --------------------------------
@pytest.mark.parametrize("atom, basis", [(WATER, "cc-pvdz"), ("Ne 0 0 0", "cc-pvtz"),
                                         ("C 0 0 0; O 0 0 1.13", "cc-pvqz"),
                                         ("N 0 0 0; H 0 0.94 0.3; H 0.8 -0.47 0.3; H -0.8 -0.47 0.3", "6-31g**")])
def test_basis_values_gradients_laplacians_match_pyscf(atom, basis):
    mol = mole(atom, basis)
    b = from_pyscf(mol)
    assert b.n_basis == mol.nao_nr() and b.packed[1] == b.n_basis
    points = np.vstack([random_points(150), mol.atom_coords() + 1e-3])  # also right beside each nucleus
    values = basis_values(b, points)
    assert np.abs(values - mol.eval_gto("GTOval_cart", points)).max() < 1e-12
    d = basis_derivatives(b, points)
    assert np.array_equal(d[:, 0], values)
    grad_ref = mol.eval_gto("GTOval_ip_cart", points)  # (3, P, nao)
    assert np.abs(d[:, 1:4].transpose(1, 0, 2) - grad_ref).max() < 1e-11
    second = mol.eval_gto("GTOval_cart_deriv2", points)  # value, 3 first, 6 second derivatives
    lap_ref = second[4] + second[7] + second[9]
    assert np.allclose(d[:, 4], lap_ref, rtol=1e-12, atol=1e-10)
    # the Laplacian by finite differences of the values (4th order), away from the tightest functions
    far = points[:20]
    h = 1e-3
    lap_fd = -3 * 30 * basis_values(b, far) / 12
    for k in range(3):
        for step, weight in ((2 * h, -1), (h, 16), (-h, 16), (-2 * h, -1)):
            shifted = far.copy()
            shifted[:, k] += step
            lap_fd += weight * basis_values(b, shifted) / 12
    lap_fd /= h * h
    assert np.allclose(basis_derivatives(b, far)[:, 4], lap_fd, rtol=1e-6, atol=1e-6)


def test_single_point_kernel_and_batched_gemm_agree():
    mol = mole(WATER, "cc-pvdz")
    b = from_pyscf(mol)
    points = random_points(7, seed=1)
    nbf = b.n_basis
    val, grad, lap = np.empty(nbf), np.empty((nbf, 3)), np.empty(nbf)
    d = basis_derivatives(b, points)
    for k, (x, y, z) in enumerate(points):
        eval_point(b.packed, x, y, z, val, grad, lap, 2)
        assert np.array_equal(val, d[k, 0]) and np.array_equal(grad.T, d[k, 1:4]) and np.array_equal(lap, d[k, 4])
    C = np.random.default_rng(2).normal(size=(nbf, 5))
    phi = orbital_values(b, points, C)
    assert np.allclose(phi, mol.eval_gto("GTOval_cart", points) @ C, rtol=1e-12, atol=1e-12)
    all5 = orbital_values(b, points, C, derivatives=True)
    assert all5.shape == (7, 5, 5) and np.allclose(all5, np.einsum("pqm,mj->pqj", d, C), rtol=1e-12, atol=1e-12)
    # a rebuilt basis from the structured arrays packs to the same vector
    again = GaussianBasis.from_arrays(b.centres, b.l, b.prim_start, b.exponents, b.coefficients, b.atom)
    assert np.array_equal(again.packed, b.packed)


def test_float32_orbital_contraction_stays_within_its_rounding_bound():
    """The GPU's dtype=float32 contraction (``_orbitals_f32``) against the float64 one at points around H2O with
    RHF/cc-pVDZ coefficients: every value, gradient and Laplacian within γ_{K+2} Σ_μ |B_μ||C_μj| (inputs rounded to
    float32, K-term float32 sums), the error really float32's (a float64 product would be ~1e-16), and the rows those
    of study 001's emulated float32 product (qmckit.precision's sequential float32 GEMM) bit for bit."""
    from qmckit.precision import U32, U64
    from qmckit.studies.precision_energy import orbital_rows
    from qmckit.systems.molecule import _layout, _orbitals, _orbitals_f32

    system = Molecule(xyz="h2o", basis="cc-pvdz", cusp=False)
    _, _, _, C, basis = _layout(system.kernel_params)
    nbf, n = C.shape
    gamma = (nbf + 2) * U32 / (1 - (nbf + 2) * U32)
    gamma64 = nbf * U64 / (1 - nbf * U64)  # the float64 reference's own error
    points = random_points(20, seed=3)
    values, gradients, laplacians = orbital_rows(system, points[None], "f32")
    worst = 0.0
    for k, (x, y, z) in enumerate(points):
        rows = {}
        for name, f in (("f64", _orbitals), ("f32", _orbitals_f32)):
            val, grad, lap = np.empty(n), np.empty((n, 3)), np.empty(n)
            BV, BG, BL = np.empty(nbf), np.empty((nbf, 3)), np.empty(nbf)
            f(basis, C, x, y, z, val, grad, lap, BV, BG, BL, 2)
            rows[name] = np.column_stack([val, grad, lap])  # (n, 5)
        scale = (np.abs(np.column_stack([BV, BG, BL])).T @ np.abs(C)).T  # (n, 5): Σ_μ |B_μ||C_μj| per row kind
        error = np.abs(rows["f32"] - rows["f64"])
        assert np.all(error <= (gamma + gamma64) * scale), (x, y, z)
        worst = max(worst, float((error / scale).max()))
        assert np.array_equal(rows["f32"], np.column_stack([values[0, k], gradients[0, k], laplacians[0, k]]))
    assert worst > 1e-9, worst


def test_spherical_mole_is_refused():
    with pytest.raises(ValueError, match="cart=True"):
        from_pyscf(mole(WATER, "cc-pvdz", cart=False))


# --- parameters, geometry, RHF ------------------------------------------------------------------
def test_params_validation_names_the_parameter(tmp_path):
    p = MoleculeParams()
    assert (p.xyz, p.basis, p.charge, p.jastrow, p.n_electrons) == ("h2o", "cc-pvdz", 0, True, 10)
    assert {"h2o", "ne", "h2", "acetic-acid"} <= set(builtin_molecules())
    bad = tmp_path / "bad.xyz"
    bad.write_text("2\ncomment\nO 0 0 0\n")
    for kwargs, name in (({"xyz": "/nonexistent/water.xyz"}, "xyz"), ({"xyz": str(bad)}, "xyz"),
                         ({"xyz": "Xx 0 0 0"}, "xyz"), ({"xyz": "O 0 0"}, "xyz"), ({"basis": ""}, "basis"),
                         ({"charge": 1}, "charge"), ({"charge": 1.0}, "charge"), ({"xyz": "h2", "charge": 2}, "charge"),
                         ({"jastrow": 1}, "jastrow"), ({"jastrow_en": "no"}, "jastrow_en"),
                         ({"beta_ee": -1.0}, "beta_ee"), ({"beta_en": 0.0}, "beta_en"),
                         ({"beta_en": float("nan")}, "beta_en")):
        with pytest.raises(ValueError, match=f"^{name} "):
            MoleculeParams(**kwargs)
    with pytest.raises(ValueError, match="^basis 'no-such-basis'"):
        Molecule(xyz="h2", basis="no-such-basis")


def test_xyz_files_inline_strings_and_builtins_give_the_same_geometry(tmp_path):
    path = tmp_path / "water.xyz"
    path.write_text("3\nwater\nO 0.0 0.0 0.1173\nH 0.0 0.7572 -0.4692\nH 0.0 -0.7572 -0.4692\n")
    from_file = MoleculeParams(xyz=str(path))
    assert from_file.atoms == read_xyz(path) == MoleculeParams(xyz="h2o").atoms == MoleculeParams(xyz=WATER).atoms
    assert from_file.xyz.startswith("O 0.0 0.0 0.1173; H")  # a file is replaced by its inline geometry
    assert MoleculeParams(xyz=from_file.xyz) == from_file  # and the inline form is stable
    m = Molecule(xyz=str(path), jastrow=False)
    mol = mole(WATER, "cc-pvdz")
    assert np.allclose(m.coordinates, mol.atom_coords(), atol=1e-12)
    assert m.nuclear_repulsion == pytest.approx(mol.energy_nuc(), abs=1e-10)
    for name in builtin_molecules():
        lines = (DATA_DIR / f"{name}.xyz").read_text().splitlines()
        assert int(lines[0]) == len(read_xyz(DATA_DIR / f"{name}.xyz"))
        assert name == "ne" or "http" in lines[1] or "J. Chem. Phys." in lines[1]  # the comment line cites the source


def test_rhf_is_cached_and_matches_pyscf():
    from pyscf import scf

    m = Molecule(xyz="h2o", jastrow=False)
    assert Molecule(xyz="h2o", beta_ee=2.0).rhf is m.rhf  # computed once per (geometry, basis, charge)
    assert rhf_solution(m.params.atoms, "cc-pvdz", 0) is m.rhf
    mf = scf.RHF(mole(WATER, "cc-pvdz"))
    mf.verbose = 0
    assert m.rhf_energy == pytest.approx(mf.kernel(), abs=1e-8)
    assert m.n_particles == 10 and m.n_up == 5 and m.mo_coefficients.shape == (25, 5)
    assert m.energy_key == "energy" and m.energy_scale() == 1.0 and m.capabilities.gpu.endswith("CudaMoleculeSweeper")
    assert m.kernel_params[8] == 0.0 and m.for_dmc().kernel_params[8] == 1.0 and m.for_dmc().params == m.params
    assert make_system("molecule", xyz="h2o", jastrow=False).rhf is m.rhf


def test_acetic_acid_has_the_sizes_of_study_001_fig_7():
    # Fig. 7 of Anderson et al. (2007): acetic acid, 32 electrons, 80 basis functions (cc-pVDZ, Cartesian d)
    m = Molecule(xyz="acetic-acid", jastrow=False)
    assert (m.n_particles, m.n_basis) == (32, 80)
    R = m.initial_positions(1, np.random.default_rng(1))[0]
    assert np.isfinite(m.kernels.local_energy(R, m.kernel_params, np.zeros(m.cache_size())))


# --- the incremental cache and the batched orbital rows (finite differences: tests/test_conformance.py) ---
def equilibrated(system, n_walkers, seed, sweeps=40, dt=0.02):
    walkers = Walkers.from_positions(system.initial_positions(n_walkers, np.random.default_rng(seed)), seed,
                                     system.cache_size())
    vmc = VMC(system, walkers, sampler="drift", dt=dt)
    vmc.sweep(sweeps, measure=False)
    return vmc


@pytest.mark.parametrize("xyz", ["h2o", "ne"])
def test_incremental_cache_equals_recompute_after_many_moves(xyz):
    system = Molecule(xyz=xyz)
    vmc = equilibrated(system, 4, seed=9, sweeps=5)
    _, acceptance = vmc.sweep(60, measure=False)  # 600 single-electron moves per walker, no rebuild
    assert acceptance > 0.5
    k, p = system.kernels, system.kernel_params
    N, n, nbf = system.n_particles, system.n_up, system.n_basis
    for R, cache in zip(vmc.walkers.positions, vmc.walkers.caches):
        fresh = np.zeros_like(cache)
        k.recompute(R, p, fresh)
        # T (inverses), DPHI (orbital gradients) and JG (Jastrow gradients) are kept up to date;
        # OL and the rest are scratch that recompute fills
        kept, rebuilt = cache_views(cache, N, n, nbf), cache_views(fresh, N, n, nbf)
        for index in (0, 1, 3):  # T, DPHI, JG
            a, b = kept[index], rebuilt[index]
            assert np.allclose(a, b, rtol=1e-8, atol=1e-8 * (1 + np.abs(b).max())), index
        e_inc = k.local_energy(R.copy(), p, cache.copy())
        assert e_inc == pytest.approx(k.local_energy(R.copy(), p, fresh), abs=1e-10)
        # the batched path (all electrons in one GEMM) gives the orbital rows the kernels use
        rows = system.orbitals(R, derivatives=True)  # (N, 5, n)
        T, DPHI, OL = rebuilt[0], rebuilt[1], rebuilt[2]
        assert np.allclose(rows[:, 1:4].transpose(0, 2, 1), DPHI, rtol=1e-12, atol=1e-12)
        assert np.allclose(rows[:, 4], OL, rtol=1e-12, atol=1e-12)
        for s in range(2):
            D = rows[s * n:(s + 1) * n, 0]  # Slater matrix D[k, j] = φ_j(r_k) of spin block s
            assert np.allclose(T[s * n:(s + 1) * n], np.linalg.inv(D).T, rtol=1e-8, atol=1e-8)


def _as_layout_1(row, N, n):
    """A molecule cache row (layout 2: the Slater–Jastrow core's T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP, then
    OL, EG, …) rewritten in layout 1, the order before the core was shared: T, DPHI, OL, JG, U, DU, CO, CN, EG,
    META, MAT, LAP, … (the tail from BV on is where it was)."""
    sizes = dict(T=N * n, DPHI=3 * N * n, JG=3 * N, U=n, DU=3 * n, CO=N, CN=N, META=1, MAT=n * n, LAP=n, OL=N * n, EG=3)
    parts, o = {}, 0
    for name, size in sizes.items():
        parts[name] = row[o:o + size]
        o += size
    order = ("T", "DPHI", "OL", "JG", "U", "DU", "CO", "CN", "EG", "META", "MAT", "LAP")
    return np.concatenate([parts[name] for name in order] + [row[o:]])


@pytest.mark.parametrize("declared", ["missing", "current"])
def test_a_checkpoint_of_the_old_cache_layout_resumes_with_the_uninterrupted_numbers(declared, tmp_path):
    import h5py

    from qmckit.runs import resume_run

    config = RunConfig(system="molecule", params=dict(xyz="h2o", basis="sto-3g"), walkers=4, steps=12, block=4,
                       equilibration=6, dt=0.02, seed=4)
    whole = make_run(config).run()
    paused = make_run(config, checkpoint_path=tmp_path / "run.h5")
    stop = __import__("threading").Event()
    for _ in paused.blocks(stop):
        stop.set()
    system = paused.system
    N, n = system.n_particles, system.n_up
    # what a checkpoint written before cache_layout 2 holds: the rows in the old order under a valid FLAG (a
    # layout-2 reader would take their orbital Laplacians OL from what was JG, U, …) and no cache_layout attribute
    with h5py.File(tmp_path / "run.h5", "r+") as f:
        caches = np.array(f["walkers/caches"])
        f["walkers/caches"][...] = np.array([_as_layout_1(row, N, n) for row in caches])
        if declared == "missing":
            del f.attrs["cache_layout"]
    resumed = resume_run(tmp_path / "run.h5").run()
    if declared == "missing":  # an old checkpoint: the rows are rebuilt from the positions
        assert resumed["estimates"] == whole["estimates"]
    else:  # the control: rows declared current are trusted, and the old order gives other energies
        assert resumed["estimates"]["energy"]["mean"] != whole["estimates"]["energy"]["mean"]


# --- the must-show: bare-determinant VMC equals the RHF energy ----------------------------------
# (walkers, sweeps, dt, largest accepted error bar in E_h). E_L of a Gaussian determinant has heavy
# tails (−Z/r beside a nucleus, 1/d beside a node): the error bar of a short run is itself uncertain,
# e.g. 0.05–0.17 E_h for Ne at this size over five seeds, hence the loose bounds on it.
BARE_SIZES = {"h2o": (160, 4000, 0.02, 0.08), "ne": (160, 4000, 0.01, 0.2)} if FAST else \
    {"h2o": (200, 40000, 0.02, 0.02), "ne": (200, 40000, 0.01, 0.03)}


@pytest.mark.parametrize("xyz", ["h2o", "ne"])
def test_bare_determinant_vmc_equals_the_rhf_energy(xyz):
    walkers, steps, dt, max_error = BARE_SIZES[xyz]
    run = make_run(RunConfig(system="molecule", params=dict(xyz=xyz, basis="cc-pvdz", jastrow=False),
                             walkers=walkers, steps=steps, dt=dt, seed=2007))
    run.run()
    energy = run.estimates()["energy"]
    e_rhf = run.system.rhf_energy
    assert 0 < energy.error < max_error, energy
    assert abs(energy.mean - e_rhf) < 3 * energy.error, (energy, e_rhf)


def test_jastrow_lowers_the_h2_energy_below_rhf():
    # β_ee = 1 suits two electrons (the default β_ee = 4 is chosen for H2O and Ne and gains only
    # about 6 mE_h here, too little to resolve in a short run)
    estimates = {}
    for jastrow in (False, True):
        run = make_run(RunConfig(system="molecule", params=dict(xyz="h2", jastrow=jastrow, beta_ee=1.0), walkers=100,
                                 steps=3000 if FAST else 20000, dt=0.05, seed=11))
        run.run()
        estimates[jastrow] = run.estimates()
    e_rhf = run.system.rhf_energy
    bare, correlated = estimates[False]["energy"], estimates[True]["energy"]
    assert abs(bare.mean - e_rhf) < 3 * bare.error
    assert correlated.mean + 3 * correlated.error < e_rhf, (correlated, e_rhf)
    assert correlated.mean > -1.1744757 - 3 * correlated.error  # variational: above the exact energy
    assert estimates[True]["energy_variance"].mean < estimates[False]["energy_variance"].mean


def test_the_polynomial_jastrow_is_optimised_and_refuses_study_002s_green_function():
    """H2 in cc-pVDZ with the polynomial terms freed: the linear method lowers the energy of the Padé-only start
    (−1.144(10) E_h) by more than 2σ, staying above the exact −1.17447 (its ∂ ln ψ/∂c are exact), and study 002's
    all-particle Green's function, which knows only the Padé terms, is refused up front while the polynomial is on."""
    from qmckit.methods.optimizers import optimize
    from qmckit.systems import make_system

    start = make_system("molecule", xyz="h2", basis="cc-pvdz", beta_ee=1.0)
    result = optimize(start, ("c_ee2", "c_ee3", "c_en2", "c_en3"), steps=4, n_walkers=60, n_samples=50, seed=3)
    first, best = result.history[0].energy, result.estimates["energy"]
    assert any(result.params.values())
    assert best.mean < first.mean - 2 * np.hypot(best.error, first.error), (best, first)
    assert best.mean > -1.1744757 - 3 * best.error
    with pytest.raises(ValueError, match="green 'all'.*needs capability 'green_all'"):
        RunConfig(system="molecule", params=dict(xyz="h2", basis="sto-3g", c_ee2=0.3), green="all", sampler="drift")


# --- optional dependency and the command line ----------------------------------------------------
BLOCK_PYSCF = "import sys; sys.modules['pyscf'] = None; "


def test_qmckit_and_atoms_work_without_pyscf_and_molecules_name_the_extra():
    code = BLOCK_PYSCF + ("import qmckit\nfrom qmckit.systems import make_system\n"
                          "make_system('atom', element='He')\n"
                          "try:\n    make_system('molecule', xyz='h2')\nexcept ImportError as e:\n    print(e)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "chem" in res.stdout and "pyscf" in res.stdout.lower()
    res = subprocess.run([sys.executable, "-c", BLOCK_PYSCF + "from qmckit.cli import main; "
                          "sys.exit(main(['run', 'molecule', '--xyz', 'h2']))"], capture_output=True, text=True,
                         timeout=120)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "chem" in lines[0] and "Traceback" not in res.stderr


@pytest.mark.parametrize("args, flag", [(["--xyz", "/nonexistent/mol.xyz"], "--xyz"), (["--xyz", "Qq 0 0 0"], "--xyz"),
                                        (["--basis", "no-such-basis"], "--basis"), (["--charge", "1"], "--charge"),
                                        (["--beta-ee", "-1"], "--beta-ee"), (["--beta-en", "0"], "--beta-en")])
def test_cli_bad_input_exits_2_with_one_line(args, flag):
    res = subprocess.run([*QMCKIT, "run", "molecule", *args], capture_output=True, text=True, timeout=120)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert flag in lines[0] and res.stdout == ""


def test_cli_json_contract_with_a_builtin_molecule():
    res = subprocess.run([*QMCKIT, "run", "molecule", "--xyz", "h2", "--basis", "cc-pvdz", "--no-jastrow",
                          "--walkers", "20", "--steps", "200", "--seed", "1", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert {"system", "method", "params", "seed", "backend", "estimates", "acceptance", "wall_s"} <= set(out)
    assert out["system"] == "molecule" and out["params"]["xyz"] == "h2" and out["params"]["jastrow"] is False
    assert out["estimates"]["energy"]["mean"] == pytest.approx(-1.1287, abs=0.1)
