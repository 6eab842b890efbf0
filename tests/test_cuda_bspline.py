"""Study 003's GPU B-spline kernels (qmckit.backends.cuda_bspline) against their CPU twins
(qmckit.systems.bspline_orbitals) under numba's CUDA simulator, at tiny sizes.

The simulator work runs in ONE child process (this file run as a script with NUMBA_ENABLE_CUDASIM=1,
because numba reads that variable at first import) that prints its measurements as JSON.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from qmckit.backends import cuda_bspline as cb
from qmckit.systems import bspline_orbitals as bo

MARKER = "CUDA_BSPLINE_RESULTS="
SKEW = np.array([[8.0, 0.0, 0.0], [1.5, 9.0, 0.0], [0.5, -1.0, 10.0]])  # triclinic: mixed second derivatives
GRID, N_ORB, N_EL = (6, 7, 8), 5, 4
TOL = {"f64": 1e-12, "f32": 1e-5}
# every precision × kind with 4 threads per block (more orbitals than threads: the loops over l), and the
# default launch (64 threads) once: the simulator runs each thread in Python, so threads cost seconds
CASES = [("f64", True, None)] + [(p, c, 4) for p in ("f64", "f32") for c in (False, True)]


def _case_id(precision, complex_, threads):
    return f"{precision}-{'complex' if complex_ else 'real'}-{'T' + str(threads) if threads else 'default'}"


def _rel(a, b):
    """Normwise relative difference max|a − b| / max|b|."""
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(np.asarray(b)).max(), 1e-300))


# --------------------------------------------------------------------------------------------
# child process (NUMBA_ENABLE_CUDASIM=1)
# --------------------------------------------------------------------------------------------
def _child() -> dict:
    import warnings

    warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")
    out = {"simulated": cb.simulated(), "available": cb.available(), "cases": {}}
    rng = np.random.default_rng(3)
    positions = rng.uniform(-0.5, 1.5, size=(N_EL, 3)) @ SKEW  # also outside the home cell
    for precision, complex_, threads in CASES:
        orbitals = bo.BsplineOrbitals.random(GRID, N_ORB, cell=SKEW, precision=precision, complex=complex_, seed=5)
        ref_v, ref_g, ref_l = orbitals.evaluate(positions)
        ref_values = orbitals.values(positions)
        ref_unc = orbitals.with_layout("uncoalesced").evaluate(positions)[0]
        ref_pe = orbitals.evaluate_per_electron(positions)[0]
        gpu = cb.CudaBspline(orbitals, threads=threads)
        v = gpu.values(positions)
        vu = gpu.values_uncoalesced(positions)
        vp = gpu.values_per_electron(positions)
        ev, eg, el = gpu.evaluate(positions)
        # an orbital set given in the uncoalesced layout gives the same
        v_from_unc = cb.CudaBspline(orbitals.with_layout("uncoalesced"), threads=threads).values(positions)
        # orbitals split over blocks (chunk 3: two or four blocks per electron, the last one partial) and
        # (re, im) pair loads; only with 4 threads per block (the simulator is slow)
        chunked = cb.CudaBspline(orbitals, threads=threads, chunk=3)
        cv = cev = ceg = cel = pairs = pairs_chunked = None
        if threads:
            cv = chunked.values(positions)
            cev, ceg, cel = chunked.evaluate(positions)
            if gpu.n_real % 2 == 0:
                pairs = _rel(gpu.values_pairs(positions), ref_values)
                pairs_chunked = _rel(chunked.values_pairs(positions), ref_values)
            else:
                with pytest.raises(ValueError, match="even number of real orbitals"):
                    gpu.values_pairs(positions)
                pairs = pairs_chunked = "refused"
        kinds = [k for k in cb.KINDS if k != "values_pairs" or gpu.n_real % 2 == 0]
        times = {} if (precision, complex_, threads) != ("f64", True, 4) else {  # the timing path, once
            f"{kind}-{tr}": gpu.time(kind, positions, repeats=1, transfers=tr, chunk=2 if tr else None)
            for kind in kinds for tr in (True, False)}
        out["cases"][_case_id(precision, complex_, threads)] = {
            "dtypes": [str(a.dtype) for a in (v, vu, vp, ev, eg, el)], "ref_dtype": str(orbitals.dtype),
            "shapes": [list(a.shape) for a in (v, vu, vp, ev, eg, el)],
            "values": _rel(v, ref_values), "values_vs_evaluate": _rel(v, ref_v),
            "uncoalesced": _rel(vu, ref_unc), "per_electron": _rel(vp, ref_pe),
            "vgl_values": _rel(ev, ref_v), "vgl_gradients": _rel(eg, ref_g), "vgl_laplacians": _rel(el, ref_l),
            "from_uncoalesced": _rel(v_from_unc, ref_values),
            "chunked_values": _rel(cv, ref_values) if threads else 0.0,
            "chunked_vgl": max(_rel(cev, ref_v), _rel(ceg, ref_g), _rel(cel, ref_l)) if threads else 0.0,
            "pairs": pairs, "pairs_chunked": pairs_chunked,
            "times_are_floats": all(isinstance(t, float) for t in times.values()), "n_times": len(times),
            "threads": gpu.threads, "n_real": gpu.n_real}
    # plane waves: the GPU values interpolate the exact orbitals
    pw = bo.plane_wave_orbitals(SKEW, 4, complex=True)
    spline = pw.bspline(8)
    exact = pw.evaluate(positions)[0]
    out["plane_wave_error"] = float(np.abs(cb.CudaBspline(spline).values(positions) - exact).max())
    out["plane_wave_cpu_error"] = float(np.abs(spline.values(positions) - exact).max())
    return out


if __name__ == "__main__" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    print(MARKER + json.dumps(_child()))
    sys.exit(0)


@pytest.fixture(scope="module")
def sim():
    from _simulator import simulator_results

    return simulator_results(__file__, MARKER)


# --------------------------------------------------------------------------------------------
# no CUDA needed here
# --------------------------------------------------------------------------------------------
def test_import_needs_no_cuda_and_no_gpu_here():
    from _simulator import import_without_simulator

    imported, available = import_without_simulator("qmckit.backends.cuda_bspline")
    assert imported is False  # importing the module does not import numba.cuda
    assert available == "False"  # no GPU on this machine


def test_default_threads():
    assert cb.default_threads(5) == 64 and cb.default_threads(112) == 128 and cb.default_threads(768) == 256


# --------------------------------------------------------------------------------------------
# simulator: GPU kernels == CPU kernels
# --------------------------------------------------------------------------------------------
def test_simulator_is_not_available(sim):
    assert sim["simulated"] is True and sim["available"] is False


@pytest.mark.parametrize("precision,complex_,threads", CASES, ids=[_case_id(*c) for c in CASES])
def test_gpu_equals_cpu(sim, precision, complex_, threads):
    case = sim["cases"][_case_id(precision, complex_, threads)]
    tol = TOL[precision]
    assert all(d == case["ref_dtype"] for d in case["dtypes"])
    L = N_ORB
    assert case["shapes"] == [[N_EL, L]] * 4 + [[N_EL, 3, L], [N_EL, L]]
    for key in ("values", "values_vs_evaluate", "uncoalesced", "per_electron", "vgl_values", "vgl_gradients",
                "vgl_laplacians", "from_uncoalesced", "chunked_values", "chunked_vgl"):
        assert case[key] <= tol, (key, case[key])
    if not threads:  # chunks and pairs are checked with 4 threads per block only
        assert case["pairs"] is None
    elif complex_:  # L' even: (re, im) pair loads give the same numbers
        assert case["pairs"] <= tol and case["pairs_chunked"] <= tol
    else:  # L' = 5 odd: refused with a one-line error
        assert case["pairs"] == case["pairs_chunked"] == "refused"
    if (precision, complex_, threads) == ("f64", True, 4):  # every kind timed, with and without transfers
        assert case["n_times"] == 2 * len(cb.KINDS) and case["times_are_floats"]
    assert case["n_real"] == (2 if complex_ else 1) * L
    assert case["threads"] == (threads or 64)


def test_gpu_values_interpolate_plane_waves(sim):
    assert sim["plane_wave_error"] < 0.05  # 8 points per axis, lowest plane waves
    assert abs(sim["plane_wave_error"] - sim["plane_wave_cpu_error"]) < 1e-12


def test_rejects_bad_arguments():
    orbitals = bo.BsplineOrbitals.random(6, 2, precision="f32")
    with pytest.raises(ValueError, match="orbitals"):
        cb.CudaBspline(np.zeros((6, 6, 6, 2)))
    with pytest.raises(ValueError, match="threads"):
        cb.CudaBspline(orbitals, threads=2)
    with pytest.raises(ValueError, match="chunk"):
        cb.CudaBspline(orbitals, chunk=0)
