"""The tiled GPU GEMM of qmckit.backends.cuda_gemm against its CPU twins, under numba's CUDA simulator.

numba reads NUMBA_ENABLE_CUDASIM when it is first imported, and other tests in this process import
numba without it. So the simulator work runs in ONE child process (this file run as a script with
NUMBA_ENABLE_CUDASIM=1) that prints its measurements as JSON; the tests below assert on them.
Sizes are tiny (37 × 45 × 29 and smaller: every GPU thread is a Python thread there), chosen so
that no dimension is a multiple of any tile: partial tiles in M, N and K, several blocks.

What is checked (u32 = 2**-24, u64 = 2**-53, |A||B| the product of absolute values, per element):
* ``f64``: |C − exact| ≤ γ_K(u64)·|A||B| (exact: qmckit.precision.matmul_ref, Dot2) and
  |C − numpy| ≤ 2 γ_K(u64)·|A||B| — numpy's BLAS sums in another order, so no bitwise claim.
* ``f32``: |C − exact| ≤ γ_K(u32)·|A||B|. Under the simulator cuda.fma rounds twice, so the kernel
  equals qmckit.precision.matmul_f32 bit for bit here; on a GPU (one rounding) only the bound holds.
* ``kahan32``: |C − exact| ≤ (3 u32 + 4 K u32²)·|A||B|, and the result equals the CPU twin
  matmul_kahan_f32_tiled (the GPU's tile order) and qmckit.precision.matmul_kahan_f32 BIT FOR BIT
  for every tile (the compensation is carried across K tiles, so the order is k = 0 … K−1).
* The compensation is alive: 1 + (K−1)·1e-8 summed in float32 gives exactly 1 without Kahan and
  the correctly rounded value with it.
* Device arrays in and out, a host ``out``, argument errors.
The PTX of the real kernels (no fma, no local memory, explicit .rn in the Kahan kernel) is checked
where NVVM is installed (not on CI: that test skips).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from _simulator import simulator_results

MARKER = "CUDA_GEMM_RESULTS="
SHAPE = (37, 45, 29)  # M, K, N: not a multiple of any tile
SMALL_TILE = (32, 16, 8, 4, 2)  # bm, bn, bk, tm, tn: 64 threads, a 2 × 2 grid on SHAPE, 5 full K tiles + 5
ODD_TILE = (12, 4, 6, 3, 2)  # 8 threads, not a multiple of bk: the general tile-load path; 8 × 4 blocks


# --------------------------------------------------------------------------------------------
# child process (NUMBA_ENABLE_CUDASIM=1)
# --------------------------------------------------------------------------------------------
def _child() -> dict:
    try:
        from numba import cuda
    except Exception as exc:  # noqa: BLE001 - no numba-cuda: the parent skips
        return {"skip": f"numba.cuda cannot be imported: {exc!r}"}
    from qmckit import precision as P
    from qmckit.backends import cuda_gemm as G

    out = {"simulated": G.simulated(), "available": G.available(), "cases": [], "errors": {}}
    rng = np.random.default_rng(2007)
    M, K, N = SHAPE

    def case(kind, A, B, tile, label):
        tile_obj = G.Tile(*tile) if isinstance(tile, tuple) else tile
        C = G.matmul(A, B, kind, tile=tile_obj)
        tile_obj = tile_obj or G.default_tile(np.shape(B)[1], kind)  # record the tile that ran
        f32 = kind != "f64"
        A_ = np.asarray(A, np.float32 if f32 else np.float64)
        B_ = np.asarray(B, np.float32 if f32 else np.float64)
        ref = P.matmul_ref(A_, B_)
        abs_ab = np.abs(A_.astype(np.float64)) @ np.abs(B_.astype(np.float64))
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.where(abs_ab > 0, np.abs(C - ref) / abs_ab, 0.0)
        row = {"kind": kind, "label": label, "tile": str(tile_obj), "shape": [A_.shape[0], A_.shape[1], B_.shape[1]],
               "dtype": str(C.dtype), "out_shape": list(C.shape), "max_scaled_err": float(scaled.max()),
               "bound": G.error_bound(kind, A_.shape[1]), "finite": bool(np.isfinite(C).all())}
        if kind == "f64":
            with np.errstate(divide="ignore", invalid="ignore"):
                row["max_scaled_vs_numpy"] = float(np.where(abs_ab > 0, np.abs(C - A_ @ B_) / abs_ab, 0.0).max())
        elif kind == "f32":
            row["equal_precision_f32"] = bool(np.array_equal(C, P.matmul_f32(A_, B_)))
        else:
            bk = tile_obj.bk if isinstance(tile_obj, G.Tile) else G.TILES[tile_obj].bk
            row["equal_tiled_twin"] = bool(np.array_equal(C, G.matmul_kahan_f32_tiled(A_, B_, bk)))
            row["equal_precision_kahan"] = bool(np.array_equal(C, P.matmul_kahan_f32(A_, B_)))
        out["cases"].append(row)
        return C

    basis_A, basis_B = P.gaussian_basis_like(M, K, rng, N)  # positive, decaying A; signed B: cancellation
    normal_A, normal_B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    uni_A, uni_B = P.uniform_pair(M, K, rng, N)
    for kind in ("f64", "f32", "kahan32"):
        case(kind, basis_A, basis_B, SMALL_TILE, "basis small-tile")
        case(kind, normal_A, normal_B, None, "normal default-tile")
        case(kind, basis_A[:19, :20], basis_B[:20, :11], ODD_TILE, "basis odd-tile")
    case("f64", uni_A, uni_B, SMALL_TILE, "uniform small-tile")
    case("kahan32", uni_A, uni_B, SMALL_TILE, "uniform small-tile")
    for name in G.TILES:  # every preset once (bitwise twin for each)
        if name != G.default_tile(N):
            case("kahan32", basis_A, basis_B, name, f"basis preset {name}")
    # edge shapes with the small tile: K < bk, K a multiple of bk, K = 1, single row / column
    for (m, k, n) in ((5, 3, 7), (33, 16, 17), (3, 1, 2), (1, 45, 29), (37, 45, 1)):
        A = rng.standard_normal((m, k))
        B = rng.standard_normal((k, n))
        for kind in ("f64", "f32", "kahan32"):
            case(kind, A, B, SMALL_TILE, f"edge {m}x{k}x{n}")
    # K = 0 and an empty output
    out["k0"] = {kind: G.matmul(np.ones((4, 0)), np.ones((0, 3)), kind, tile=G.Tile(*SMALL_TILE)).tolist()
                 for kind in G.KINDS}
    out["empty_shape"] = list(G.matmul(np.ones((0, 5)), np.ones((5, 3)), "f32").shape)

    # the compensation survives compilation: 1 + (K − 1)·1e-8 (each term below half an ulp of 1)
    Kc = 301
    a = np.full((1, Kc), 1e-8, np.float32)
    a[0, 0] = 1.0
    b = np.ones((Kc, 2), np.float32)
    exact = float(P.matmul_ref(a, b)[0, 0])
    tiny = G.Tile(2, 2, 8, 1, 1)
    out["compensation"] = {"exact": exact, "exact_f32": float(np.float32(exact)),
                           "f32": float(G.matmul(a, b, "f32", tile=tiny)[0, 0]),
                           "kahan32": float(G.matmul(a, b, "kahan32", tile=tiny)[0, 0]),
                           "cpu_kahan": float(P.matmul_kahan_f32(a, b)[0, 0])}

    # device arrays in and out, a host out, mixed inputs: all the same numbers as the host path
    m, k, n = 9, 10, 7
    A32 = np.ascontiguousarray(basis_A[:m, :k], np.float32)
    B32 = np.ascontiguousarray(basis_B[:k, :n], np.float32)
    small = G.Tile(*SMALL_TILE)
    host = G.matmul(A32, B32, "kahan32", tile=small)
    dA, dB = cuda.to_device(A32), cuda.to_device(B32)
    dC = cuda.device_array((m, n), np.float32)
    ret = G.matmul(dA, dB, "kahan32", out=dC, tile=small)
    fresh = G.matmul(dA, dB, "kahan32", tile=small)
    mixed = G.matmul(A32, dB, "kahan32", tile=small)
    host_out = np.zeros((m, n), np.float32)
    ret_host = G.matmul(A32, B32, "kahan32", out=host_out, tile=small)
    out["device"] = {"returns_out": ret is dC, "out_equal": bool(np.array_equal(dC.copy_to_host(), host)),
                     "fresh_is_device": hasattr(fresh, "copy_to_host"),
                     "fresh_equal": bool(np.array_equal(fresh.copy_to_host(), host)),
                     "mixed_equal": bool(np.array_equal(mixed.copy_to_host(), host)),
                     "host_out_returned": ret_host is host_out,
                     "host_out_equal": bool(np.array_equal(host_out, host))}

    # argument checks
    bad = {
        "kind": lambda: G.matmul(A32, B32, "f16"),
        "inner": lambda: G.matmul(A32, B32.T, "f32"),
        "ndim": lambda: G.matmul(A32[0], B32, "f32"),
        "device_dtype": lambda: G.matmul(cuda.to_device(A32.astype(np.float64)), dB, "kahan32"),
        "tile_name": lambda: G.matmul(A32, B32, "f32", tile="64x64"),
        "tile_threads": lambda: G.matmul(A32, B32, "f32", tile=G.Tile(32, 16, 3, 4, 2)),
        "tile_shared": lambda: G.matmul(A32, B32, "f64", tile=G.Tile(512, 128, 16, 16, 8)),
        "out_shape": lambda: G.matmul(A32, B32, "f32", out=np.zeros((m, n + 1), np.float32)),
        "out_dtype": lambda: G.matmul(A32, B32, "f32", out=np.zeros((m, n), np.float64)),
    }
    for name, call in bad.items():
        try:
            call()
            out["errors"][name] = None
        except ValueError as exc:
            out["errors"][name] = str(exc)
    return out


# --------------------------------------------------------------------------------------------
# tests (parent process)
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sim():
    result = simulator_results(__file__, MARKER, timeout=600)
    if "skip" in result:
        pytest.skip(result["skip"])
    return result


def test_import_without_numba_cuda():
    code = ("import sys; sys.modules['numba.cuda'] = None\n"
            "import numpy as np\n"
            "from qmckit.backends import cuda_gemm as G\n"
            "assert G.available() is False\n"
            "C = G.matmul_kahan_f32_tiled(np.ones((3, 5)), np.ones((5, 2)), 4)\n"
            "assert C.dtype == np.float32 and (C == 5).all()\n"
            "print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr


def test_simulator_is_not_a_gpu(sim):
    assert sim["simulated"] is True
    assert sim["available"] is False


def test_every_case_within_its_bound(sim):
    u64 = 2.0 ** -53  # the reference's own rounding (Dot2 result stored in float64)
    assert len(sim["cases"]) >= 20
    for r in sim["cases"]:
        assert r["finite"], r
        assert r["out_shape"] == [r["shape"][0], r["shape"][2]], r
        assert r["dtype"] == ("float64" if r["kind"] == "f64" else "float32"), r
        assert r["max_scaled_err"] <= r["bound"] + u64, r


def test_f64_agrees_with_numpy(sim):
    from qmckit.backends.cuda_gemm import error_bound

    rows = [r for r in sim["cases"] if r["kind"] == "f64"]
    assert rows
    for r in rows:
        assert r["max_scaled_vs_numpy"] <= 2 * error_bound("f64", r["shape"][1]), r


def test_f64_is_float64_accurate(sim):
    """Not merely within the (loose) γ_K bound: a few units of u64."""
    for r in sim["cases"]:
        if r["kind"] == "f64":
            assert r["max_scaled_err"] < 8 * 2.0 ** -53, r


def test_kahan32_equals_cpu_twins_bitwise(sim):
    rows = [r for r in sim["cases"] if r["kind"] == "kahan32"]
    assert len(rows) >= 10
    tiles = {r["tile"] for r in rows}
    assert len(tiles) >= 5  # the small tile, every preset, the tiny ones
    for r in rows:
        assert r["equal_tiled_twin"], r
        assert r["equal_precision_kahan"], r


def test_kahan32_error_is_flat_and_small(sim):
    """Kahan stays within ~3 u32 of |A||B| whatever K; here well below the plain-f32 bound."""
    u32 = 2.0 ** -24
    for r in sim["cases"]:
        if r["kind"] == "kahan32":
            assert r["max_scaled_err"] <= 3 * u32 + 4 * r["shape"][1] * u32 ** 2 + 2.0 ** -53, r


def test_f32_equals_sequential_cpu_under_simulator(sim):
    """The simulator's cuda.fma rounds the product and the sum separately: then the kernel's
    per-element order (k = 0 … K−1) gives qmckit.precision.matmul_f32 exactly."""
    rows = [r for r in sim["cases"] if r["kind"] == "f32"]
    assert rows
    assert all(r["equal_precision_f32"] for r in rows), rows


def test_zero_inner_length_and_empty_output(sim):
    for kind, C in sim["k0"].items():
        assert C == [[0.0] * 3] * 4, kind
    assert sim["empty_shape"] == [0, 3]


def test_compensation_survives(sim):
    comp = sim["compensation"]
    assert comp["f32"] == 1.0  # every 1e-8 lost against 1: the plain sum never moves
    assert comp["kahan32"] == comp["cpu_kahan"]
    assert abs(comp["kahan32"] - comp["exact"]) <= 2.0 ** -24 * comp["exact"]
    assert comp["kahan32"] > 1.0


def test_device_arrays(sim):
    dev = sim["device"]
    assert all(dev.values()), dev


def test_argument_checks(sim):
    errors = sim["errors"]
    for name, message in errors.items():
        assert message, name
    assert "kind" in errors["kind"] and "inner" in errors["inner"]
    assert "float32" in errors["device_dtype"]
    assert "threads" in errors["tile_threads"]
    assert "shared memory" in errors["tile_shared"]


# --------------------------------------------------------------------------------------------
# no simulator needed
# --------------------------------------------------------------------------------------------
def test_tiled_cpu_twin_is_sequential_kahan():
    from qmckit import precision as P
    from qmckit.backends.cuda_gemm import TILES, matmul_kahan_f32_tiled

    rng = np.random.default_rng(5)
    A, B = P.gaussian_basis_like(23, 77, rng, 9)
    seq = P.matmul_kahan_f32(A, B)
    for tile in (1, 3, 8, 16, 76, 77, 200, "128x64", TILES["256x16"]):
        assert np.array_equal(matmul_kahan_f32_tiled(A, B, tile), seq), tile
    with pytest.raises(ValueError):
        matmul_kahan_f32_tiled(A, B, 0)
    with pytest.raises(ValueError):
        matmul_kahan_f32_tiled(A, B.T, 8)


def test_presets_valid_and_default_choice():
    from qmckit.backends.cuda_gemm import DTYPES, TILES, Tile, default_tile

    for name, tile in TILES.items():
        for dtype in set(DTYPES.values()):
            assert tile.validate(dtype) is tile, name
        assert tile.threads in (128, 256)
    assert default_tile(15) == "256x16"  # acetic-acid sized: 16 orbitals
    assert default_tile(16) == "256x16"
    assert default_tile(120) == "128x64"  # 240 electrons: 120 of 128 computed columns useful
    assert default_tile(4096) in ("128x64", "128x128")
    for n in range(1, 300):
        assert default_tile(n) in TILES
    with pytest.raises(ValueError):
        Tile(64, 64, 16, 3, 4).validate()


def test_error_bounds():
    from qmckit.backends.cuda_gemm import U32, U64, error_bound

    assert error_bound("kahan32", 1000) == pytest.approx(3 * U32 + 4000 * U32 ** 2)
    assert error_bound("f32", 10) == pytest.approx(10 * U32, rel=1e-5)
    assert error_bound("f64", 10) == pytest.approx(10 * U64, rel=1e-12)
    with pytest.raises(ValueError):
        error_bound("bf16", 3)


PTX_MARKER = "CUDA_GEMM_PTX="


def test_ptx_when_nvvm_is_installed():
    """Compile the real kernels to PTX (no GPU needed, but NVVM/NVRTC must be installed: skipped on
    CI). Kahan: explicit mul.rn/sub.rn/add.rn, no fma; f32/f64: fma; none of them uses local
    memory (the accumulators are registers) or flushes subnormals."""
    code = f"""
import json, re
out = {{}}
try:
    from qmckit.backends import cuda_gemm as G
    for kind in G.KINDS:
        text = G.ptx(kind, "128x64")
        out[kind] = {{k: len(re.findall(p, text)) for k, p in (
            ("fma32", r"fma\\.rn\\.f32"), ("fma64", r"fma\\.rn\\.f64"), ("mul_rn", r"mul\\.rn\\.f32"),
            ("add_rn", r"add\\.rn\\.f32"), ("sub_rn", r"sub\\.rn\\.f32"), ("plain_mul", r"\\bmul\\.f32"),
            ("plain_add", r"\\b(?:add|sub)\\.f32"), ("local", r"\\.local"), ("ftz", r"\\.ftz"),
            ("bar", r"bar\\.sync"))}}
except Exception as exc:
    out = {{"skip": f"no PTX here: {{type(exc).__name__}}: {{str(exc)[:200]}}"}}
print("{PTX_MARKER}" + json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(PTX_MARKER)]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    res = json.loads(lines[-1][len(PTX_MARKER):])
    if "skip" in res:
        pytest.skip(res["skip"])
    k = res["kahan32"]
    q = 8 * 8  # outputs per thread of the 128x64 preset; two copies (full and partial K tile)
    assert k["mul_rn"] == 2 * q and k["add_rn"] == 2 * q and k["sub_rn"] == 3 * 2 * q, k
    assert k["fma32"] == 0 and k["plain_mul"] == 0 and k["plain_add"] == 0, k
    assert res["f32"]["fma32"] == 2 * q and res["f64"]["fma64"] == 2 * q, res
    for kind, counts in res.items():
        assert counts["local"] == 0 and counts["ftz"] == 0, (kind, counts)
        assert counts["bar"] >= 2, (kind, counts)


if __name__ == "__main__":  # the simulator child
    print(MARKER + json.dumps(_child()))
