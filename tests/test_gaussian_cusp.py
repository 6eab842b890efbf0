"""The nuclear cusp correction of Gaussian orbitals (qmckit.systems.gaussian_cusp) as the molecule kernels
apply it: unchanged outside the spheres, continuous with two derivatives at r_c, the Kato slope at the
nucleus, derivatives against finite differences, and a local energy that stays finite at a nucleus."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyscf")

from qmckit.systems import molecule as M  # noqa: E402
from qmckit.systems.gaussian_cusp import default_radius  # noqa: E402


def _rows(system, point, order=2):
    N, n, atoms, C, basis = M._layout(system.kernel_params)
    nbf = C.shape[0]
    val, grad, lap = np.zeros(n), np.zeros((n, 3)), np.zeros(n)
    M._orbitals(basis, C, *point, val, grad, lap, np.zeros(nbf), np.zeros((nbf, 3)), np.zeros(nbf), order)
    return val, grad, lap


@pytest.fixture(scope="module")
def water():
    return (M.Molecule(xyz="h2o", jastrow_en=False),
            M.Molecule(xyz="h2o", jastrow_en=False, cusp=True))


@pytest.fixture(scope="module")
def neon():
    return M.Molecule(xyz="ne", jastrow=False), M.Molecule(xyz="ne", jastrow=False, cusp=True)


def _unit(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def test_needs_the_en_jastrow_off():
    with pytest.raises(ValueError, match="jastrow_en=False"):
        M.MoleculeParams(xyz="h2", cusp=True)
    assert M.MoleculeParams(xyz="h2", cusp=True, jastrow=False).cusp


def test_orbitals_unchanged_outside_the_spheres(water):
    plain, corrected = water
    point = plain.coordinates[0] + 1.3 * default_radius(8.0) * np.array([0.0, 0.6, 0.8])
    for a, b in zip(_rows(plain, point), _rows(corrected, point)):
        assert np.array_equal(a, b)


def test_continuous_with_two_derivatives_at_rc(water):
    _, corrected = water
    rng = np.random.default_rng(1)
    for centre, Z in zip(corrected.coordinates, corrected.charges):
        rc = default_radius(Z)
        u = _unit(rng)
        inside = _rows(corrected, centre + rc * (1 - 1e-7) * u)
        outside = _rows(corrected, centre + rc * (1 + 1e-7) * u)
        for k, tol in enumerate((1e-6, 1e-5, 1e-4)):
            scale = max(np.abs(outside[k]).max(), 1.0)
            assert np.abs(inside[k] - outside[k]).max() < tol * scale, (Z, k)


def test_kato_cusp_of_the_spherical_average(neon):
    plain, corrected = neon
    Z = 10.0
    r = 1e-6
    directions = np.vstack([np.eye(3), -np.eye(3)])
    phi0 = _rows(corrected, np.zeros(3), order=0)[0]
    average = np.mean([_rows(corrected, r * d, order=0)[0] for d in directions], axis=0)
    slope = (average - phi0) / r
    s_like = np.abs(phi0) > 1e-3 * np.abs(phi0).max()  # the p orbitals vanish at the nucleus
    assert s_like.sum() == 2  # 1s and 2s of Ne
    assert np.allclose(slope[s_like], -Z * phi0[s_like], rtol=1e-3)
    # the orbital keeps its value at the nucleus, and the Gaussian one had no cusp at all
    assert np.allclose(phi0, _rows(plain, np.zeros(3), order=0)[0], rtol=1e-12, atol=1e-14)
    plain_average = np.mean([_rows(plain, r * d, order=0)[0] for d in directions], axis=0)
    assert np.all(np.abs(plain_average - _rows(plain, np.zeros(3), order=0)[0])[s_like] / r < 1e-3 * Z * np.abs(phi0[s_like]))


@pytest.mark.parametrize("which", ["ne", "h2o-O", "h2o-H"])
def test_gradient_and_laplacian_match_finite_differences_inside(which, neon, water):
    system = neon[1] if which == "ne" else water[1]
    atom = 1 if which == "h2o-H" else 0
    centre, Z = system.coordinates[atom], system.charges[atom]
    rng = np.random.default_rng(2)
    for fraction in (0.2, 0.5, 0.9):
        x = centre + fraction * default_radius(Z) * _unit(rng)
        val, grad, lap = _rows(system, x)
        h = 1e-5 * default_radius(Z)
        fd_lap = -6.0 * val
        for c in range(3):
            step = np.zeros(3)
            step[c] = h
            plus, minus = _rows(system, x + step, 0)[0], _rows(system, x - step, 0)[0]
            assert np.allclose((plus - minus) / (2 * h), grad[:, c], rtol=1e-5, atol=1e-6 * np.abs(grad).max())
            fd_lap += plus + minus
        assert np.allclose(fd_lap / h ** 2, lap, rtol=1e-3, atol=1e-4 * np.abs(lap).max())


def test_local_energy_stays_finite_at_the_nucleus(neon):
    energies = {}
    for system in neon:
        k, p = system.kernels, system.kernel_params
        R = system.initial_positions(1, np.random.default_rng(5))[0]
        values = []
        for r in (1e-3, 1e-6, 1e-9):
            R[0] = np.array([r, 0.0, 0.0])
            values.append(k.local_energy(R.copy(), p, np.zeros(system.cache_size())))
        energies[system.params.cusp] = values
    # Gaussian orbitals: E_L ~ −Z/r, a million hartree apart; corrected: the −Z/r cancels and E_L has a limit
    assert energies[False][0] - energies[False][1] > 1e6
    assert abs(energies[True][0] - energies[True][1]) < 5.0 and abs(energies[True][1] - energies[True][2]) < 1e-2


def test_cli_cusp_turns_the_en_jastrow_off(capsys):
    import json

    from qmckit.cli import main

    assert main(["run", "molecule", "--xyz", "h2", "--basis", "cc-pvdz", "--cusp", "--walkers", "10", "--steps", "20",
                 "--json"]) == 0
    params = json.loads(capsys.readouterr().out)["params"]
    assert params["cusp"] is True and params["jastrow_en"] is False and params["jastrow_ee"] is True
