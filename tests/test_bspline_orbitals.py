"""B-spline (blip) orbital sets (qmckit.systems.bspline_orbitals, study 003): interpolation, convergence on
plane waves, derivatives, layouts, precision, validation, ``qmckit bench orbitals``."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from qmckit.studies.tio2_orbitals import convergence
from qmckit.systems import bspline_orbitals as bo

ORTHO = np.diag([7.0, 8.0, 9.0])
SKEW = np.array([[8.0, 0.0, 0.0], [1.5, 9.0, 0.0], [0.5, -1.0, 10.0]])  # triclinic: mixed second derivatives
FCC = 0.5 * 10.26 * np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])  # Si primitive cell, bohr


def _points(cell, n, seed=0):
    return np.random.default_rng(seed).uniform(-0.5, 1.5, size=(n, 3)) @ cell  # also outside the home cell


@pytest.mark.parametrize("cell", [ORTHO, SKEW], ids=["ortho", "skew"])
@pytest.mark.parametrize("kind", [np.float64, np.complex128])
def test_interpolation_reproduces_grid_values(cell, kind):
    rng = np.random.default_rng(1)
    grid = (6, 7, 9)
    values = rng.normal(size=(*grid, 3)).astype(kind)
    if kind is np.complex128:
        values += 1j * rng.normal(size=values.shape)
    orbitals = bo.BsplineOrbitals.from_grid_values(cell, values)
    assert orbitals.dtype == kind and orbitals.grid == grid and orbitals.n_orbitals == 3
    pts = bo.grid_points(cell, grid).reshape(-1, 3)
    for shift in (np.zeros(3), cell[0] - 2 * cell[2]):  # periodic images too
        got = orbitals.evaluate(pts + shift)[0].reshape(values.shape)
        assert np.abs(got - values).max() < 1e-12


def test_plane_wave_orbitals_are_exact_and_ordered():
    pw = bo.plane_wave_orbitals(SKEW, 7)
    assert pw.kinds.tolist() == [0, 0, 1, 0, 1, 0, 1] and pw.millers[0].tolist() == [0, 0, 0]
    g = np.linalg.norm(pw.g_vectors, axis=1)
    assert np.all(np.diff(g[::2]) >= -1e-12)
    pwc = bo.plane_wave_orbitals(ORTHO, 7, complex=True)
    assert pwc.millers.tolist()[:3] == [[0, 0, 0], [0, 0, -1], [0, 0, 1]]  # 9 bohr is the longest side
    for p in (pw, pwc):
        x = _points(p.cell, 5)
        v, grad, lap = p.evaluate(x)
        assert np.allclose(p.evaluate(x + p.cell[1])[0], v, atol=1e-12)  # periodic
        h = 1e-4
        for k in range(3):
            dx = np.zeros(3)
            dx[k] = h
            fd = (p.evaluate(x + dx)[0] - p.evaluate(x - dx)[0]) / (2 * h)
            assert np.abs(fd - grad[:, k]).max() < 1e-7
        assert np.allclose(lap, -np.sum(p.g_vectors ** 2, axis=1) * v)


@pytest.mark.parametrize("cell,complex_", [(ORTHO, False), (FCC, True)], ids=["ortho-real", "fcc-complex"])
def test_plane_waves_converge_at_cubic_spline_rates(cell, complex_):
    study = convergence(cell, 9, grids=(16, 24, 32, 48), n_points=400, complex=complex_, seed=3)
    errors, scale = study["errors"], study["scale"]     # scale: max |φ|, |∇φ|, |∇²φ| of the exact orbitals
    assert np.all(np.diff(errors, axis=0) < 0)          # every error falls with every refinement
    assert np.all(errors[-1] < np.array([1e-5, 1e-4, 1e-2]) * scale)  # and is small on the finest grid
    for k, order in enumerate((4, 3, 2)):               # values h⁴, gradients h³, Laplacians h²
        assert abs(study["orders"][k] - order) < 0.2, (k, study["orders"][k])


@pytest.mark.parametrize("cell", [SKEW, FCC], ids=["skew", "fcc"])
@pytest.mark.parametrize("complex_", [False, True])
def test_derivatives_match_finite_differences_of_the_spline(cell, complex_):
    orbitals = bo.BsplineOrbitals.random((5, 6, 7), 4, cell=cell, complex=complex_, seed=2)
    x = _points(cell, 20, seed=4)
    v, grad, lap = orbitals.evaluate(x)
    h1, h2 = 1e-5, 1e-3
    fd_lap = -6 * v
    for k in range(3):
        dx = np.zeros(3)
        dx[k] = h1
        fd = (orbitals.evaluate(x + dx)[0] - orbitals.evaluate(x - dx)[0]) / (2 * h1)
        assert np.abs(fd - grad[:, k]).max() < 1e-6 * np.abs(grad).max()
        dx[k] = h2
        fd_lap = fd_lap + orbitals.evaluate(x + dx)[0] + orbitals.evaluate(x - dx)[0]
    assert np.abs(fd_lap / h2 ** 2 - lap).max() < 1e-6 * np.abs(lap).max()


@pytest.mark.parametrize("precision,complex_", [("f64", True), ("f32", False)])  # each extra dtype: seconds of compiling
def test_coalesced_uncoalesced_and_per_electron_agree_exactly(precision, complex_):
    orbitals = bo.BsplineOrbitals.random((5, 4, 6), 7, cell=SKEW, precision=precision, complex=complex_, seed=5)
    uncoalesced = orbitals.with_layout("uncoalesced")
    assert uncoalesced.coefficients.shape == (7, 5, 4, 6) and uncoalesced.grid == (5, 4, 6)
    assert np.array_equal(uncoalesced.with_layout("coalesced").coefficients, orbitals.coefficients)
    x = _points(SKEW, 30, seed=6)
    reference = orbitals.evaluate(x)
    assert all(a.dtype == orbitals.dtype for a in reference)
    for result in (uncoalesced.evaluate(x), orbitals.evaluate_per_electron(x), uncoalesced.evaluate_per_electron(x)):
        for a, b in zip(result, reference):
            assert np.array_equal(a, b)
    assert np.array_equal(orbitals.values(x), reference[0])  # the values-only kernel (study 003's)
    if complex_ and precision == "f64":  # the raw kernel on complex arrays (the class passes real views)
        out = orbitals.allocate(len(x))
        bo.evaluate(orbitals.coefficients, orbitals.cell_inverse, x, *out)
        for a, b in zip(out, reference):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("complex_", [False, True])
def test_float32_close_to_float64(complex_):
    pw = bo.plane_wave_orbitals(FCC, 12, complex=complex_)
    f64 = pw.bspline(20)
    f32 = f64.astype("f32")
    assert f32.dtype == (np.complex64 if complex_ else np.float32) and f32.precision == "f32"
    x = _points(FCC, 200, seed=7)
    for a, b, tol in zip(f32.evaluate(x), f64.evaluate(x), (1e-6, 1e-6, 5e-6)):
        # Laplacian weights sum to zero over the 64 points: the cancellation costs a few more ulps
        assert np.abs(a - b).max() < tol * np.abs(b).max()


def test_table_ii_sizes_and_counts():
    assert {k: (v["electrons"], v["orbitals"]) for k, v in bo.TABLE_II_SIZES.items()} == {
        "Si": (216, 56), "TiO2-648": (648, 168), "TiO2-1536": (1536, 384)}
    assert all(50 <= n <= 60 for v in bo.TABLE_II_SIZES.values() for n in v["grid"])
    # study 003's Table XII rule: 1536 × 384 × 64 × 2 × 2 = 1.51e8 flop for the values
    assert bo.flops_per_evaluation(1536, 384) / 5 == pytest.approx(1.51e8, rel=1e-2)
    assert bo.coefficient_bytes(1536, 384, "f32") == 1536 * 384 * 64 * 8


def test_validation_errors_name_the_parameter():
    good = np.zeros((4, 4, 4, 2))
    for kwargs, name in (({"coefficients": np.zeros((4, 4, 4))}, "coefficients"),
                         ({"coefficients": np.zeros((3, 4, 4, 2))}, "coefficients"),
                         ({"coefficients": good.astype(np.int64)}, "coefficients"),
                         ({"cell": np.zeros((3, 3))}, "cell"), ({"cell": np.eye(2)}, "cell"),
                         ({"layout": "rows"}, "layout")):
        with pytest.raises(ValueError, match=f"^{name}"):
            bo.BsplineOrbitals(**({"coefficients": good, "cell": ORTHO} | kwargs))
    orbitals = bo.BsplineOrbitals(good, 5.0)
    assert np.allclose(orbitals.cell, 5 * np.eye(3))
    with pytest.raises(ValueError, match="^positions"):
        orbitals.evaluate(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="^out"):
        orbitals.evaluate(np.zeros((3, 3)), out=orbitals.allocate(2))
    for call, name in ((lambda: bo.plane_wave_orbitals(ORTHO, 0), "n_orbitals"),
                       (lambda: bo.BsplineOrbitals.random(3, 2), "grid"),
                       (lambda: bo.BsplineOrbitals.random(8, 2, precision="f16"), "precision"),
                       (lambda: bo.time_evaluation(0, 2, 8), "n_electrons"),
                       (lambda: bo.time_evaluation(4, 2, 8, repeats=0), "repeats"),
                       (lambda: bo.fit_coefficients(np.zeros((4, 4))), "values")):
        with pytest.raises(ValueError, match=f"^{name}"):
            call()


def test_time_evaluation_reports_rates():
    row = bo.time_evaluation(8, 4, (6, 6, 6), precision="f32", repeats=2)
    assert row["dtype"] == "complex64" and row["median_s"] > 0
    assert row["bytes_per_s"] == pytest.approx(8 * 4 * 64 * 8 / row["median_s"])
    assert row["gflops"] == pytest.approx(5 * row["paper_gflops"])


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "qmckit", "bench", "orbitals", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_bench_orbitals(capsys):
    res = _cli("--electrons", "16", "--orbitals", "8", "--grid", "8,9,10", "--precision", "f64",
               "--layout", "uncoalesced", "--repeats", "2", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["study"] == "orbitals" and out["grid"] == [8, 9, 10] and out["dtype"] == "complex128"
    assert out["layout"] == "uncoalesced" and out["median_s"] > 0 and out["gflops"] > 0 and out["bytes_per_s"] > 0
    res = _cli("--grid", "3")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--grid" in res.stderr and res.stdout == ""
    # the rest in-process (a subprocess costs a second of imports each)
    from qmckit.cli import main

    assert main(["bench", "orbitals", "--electrons", "4", "--orbitals", "2", "--grid", "6", "--real",
                 "--repeats", "1"]) == 0
    assert "float64" in capsys.readouterr().out
    assert main(["bench", "orbitals", "--electrons", "4", "--orbitals", "2", "--grid", "6", "--values-only",
                 "--repeats", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["quantities"] == "values" and row["gflops"] == pytest.approx(row["paper_gflops"])
    for args, flag in ((("--electrons", "0"), "--electrons"), (("--grid", "8,8"), "--grid"),
                       (("--grid", "x"), "--grid"), (("--precision", "f16"), "--precision"),
                       (("--layout", "rows"), "--layout"), (("--repeats", "0"), "--repeats"),
                       (("--threads", "0"), "--threads"), (("--grid", "100000"), "--grid"),
                       (("--values-only", "--layout", "uncoalesced"), "--layout")):
        try:
            status = main(["bench", "orbitals", *args])
        except SystemExit as exc:  # argparse
            status = exc.code
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert status == 2 and len(lines) == 1 and flag in lines[0], (args, err)
