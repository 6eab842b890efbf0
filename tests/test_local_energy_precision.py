"""Study 001 T3 (qmckit.studies.precision_energy): E_L with the orbital product in float32.

H2O in cc-pVDZ, 20 configurations from a short VMC run (seed 1). The thresholds come from the medians
measured for seeds 1–30 (20 configurations each): naive f32 1.4e-8 … 7.7e-8; Kahan f32 / naive f32
≤ 1.35; truncating / Kahan f32 ≥ 3.1; truncating / Kahan truncating ≥ 2.9; every float32 arithmetic
≥ 0.51 × the error of rounding the inputs alone. (The same seed does not give bit-identical
configurations in every process: PySCF's threaded SCF changes the MO coefficients in the last bits
unless OMP_NUM_THREADS=1, so the margins below are kept at 1.5× or more.)
"""
import numpy as np
import pytest

pytest.importorskip("pyscf")

from qmckit.studies.precision_energy import local_energies, local_energy_precision, sample_configurations  # noqa: E402
from qmckit.systems.molecule import Molecule, local_energy, local_energy_from_orbitals  # noqa: E402


@pytest.fixture(scope="module")
def h2o():
    return Molecule(xyz="h2o", basis="cc-pvdz")


@pytest.fixture(scope="module")
def positions(h2o):
    return sample_configurations(h2o, configurations=20, seed=1, walkers=10, equilibration=100)


@pytest.fixture(scope="module")
def result(h2o, positions):
    return local_energy_precision(h2o, positions=positions)


def test_configurations_come_from_vmc(h2o, positions):
    assert positions.shape == (20, 10, 3)
    assert np.all(np.isfinite(positions))
    # |ψ|²-distributed electrons sit within a few bohr of the molecule, not on a uniform box
    r = np.linalg.norm(positions - h2o.coordinates.mean(axis=0), axis=2)
    assert np.median(r) < 2.0


def test_f64_path_reproduces_module_energy(h2o, positions, result):
    reference = local_energies(h2o, positions)
    again = local_energies(h2o, positions, "f64")
    np.testing.assert_allclose(again, reference, rtol=1e-12, atol=0)
    assert result["errors"]["f64"]["max"] <= 1e-12


def test_hook_with_kernel_rows_is_local_energy(h2o, positions):
    """local_energy_from_orbitals with the module's own orbitals is local_energy; other rows change E_L."""
    p = h2o.kernel_params
    R = np.ascontiguousarray(positions[3])
    phi = h2o.orbitals(R, derivatives=True)  # (N, 5, n), numpy GEMM
    values, gradients, laplacians = phi[:, 0], phi[:, 1:4].transpose(0, 2, 1), phi[:, 4]
    e_ref = local_energy(R, p, np.zeros(h2o.cache_size()))
    e = local_energy_from_orbitals(R, p, values, gradients, laplacians)
    assert abs(e - e_ref) <= 1e-12 * abs(e_ref)
    e_bad = local_energy_from_orbitals(R, p, values, gradients, laplacians * 1.001)
    assert abs(e_bad - e_ref) > 1e-6 * abs(e_ref)
    with pytest.raises(ValueError):
        local_energy_from_orbitals(R, p, values[:, :-1], gradients, laplacians)


def test_float32_errors(result):
    e = {k: v["median"] for k, v in result["errors"].items()}
    assert 1e-9 <= e["f32"] <= 1e-4
    assert e["kahan_f32"] <= 2.0 * e["f32"]
    assert e["truncating_f32"] > 2.0 * e["kahan_f32"]
    assert e["truncating_f32"] > e["kahan_truncating_f32"]
    # no arithmetic beats the rounding of its float32 inputs by much
    for key in ("f32", "kahan_f32", "truncating_f32", "kahan_truncating_f32"):
        assert e[key] >= 0.2 * e["f32_inputs"] > 0
        assert result["errors"][key]["p90"] >= e[key]
