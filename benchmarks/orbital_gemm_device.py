#!/usr/bin/env python
"""Batched orbital evaluation of study 001 on a GPU: qmckit.backends.cuda_gemm against cuBLAS and the CPU.

The product is 001's batched orbital evaluation (§2.5 of the study notes): A (M, K) holds the basis
values of all electrons of all walkers, M = W walkers × Q quantities (value, ∂x, ∂y, ∂z, ∇²) ×
N_e electrons; B (K, N) the MO coefficients, K basis functions, N = N_e/2 occupied orbitals (RHF,
one B for all walkers). Sizes follow 001's Fig. 7 molecules (N_e, N_bf) plus one beyond them and a
large square product. Operands are synthetic with the statistics of a basis matrix (positive
Gaussian values spanning many decades, some float32-subnormal; signed normal coefficients), as
qmckit.precision.gaussian_basis_like.

One run (~2–3 min on an H100; every measurement catches its own exceptions and the run goes on):

  per size:
    GPU  qmckit kernels f64, f32, kahan32 (default tile), cuBLAS f32 and f64 through CuPy (PyTorch
         if CuPy cannot be imported; TF32 off): median of ≥ 10 timings after warm-up, each timing
         cuda.synchronize + perf_counter around enough back-to-back calls to last ≥ 2 ms (data
         resident on the GPU, no transfers; for the smallest products the time per call is bounded
         below by the Python launch cost, measured separately as "launch floor")
    CPU  numpy BLAS float32 and float64, all cores and one thread (threadpoolctl; skipped if absent),
         median of up to 10 (fewer where one call is long: the count is in the table)
    accuracy on a subset of rows (all elements of those rows) against the exact product of the same
         inputs (qmckit.precision.matmul_ref, Dot2): max |ΔC|/(|A||B|) in units of u (2^-24 for
         float32 results, 2^-53 for float64), normwise max|ΔC|/max|C|, median elementwise relative
         error; the kahan32 result compared BIT FOR BIT with its CPU twin
         (qmckit.precision.matmul_kahan_f32)
  then, as far as the time budget allows: every tile preset of every kind (tile scan)
  and checks: Kahan compensation alive on the device (1 + 300·1e-8), the launch floor.

Figures: GFLOP/s = 2·M·K·N / t; "of cuBLAS" = t_cuBLAS / t of the same precision (kahan32 against
cuBLAS f32); roofline = min(compute peak, arithmetic intensity × HBM bandwidth) with compute peak
= SMs × clock × 256 flop/clk (FP32 FMA), × 128 (FP64 FMA, CUDA cores; cuBLAS DGEMM also uses the
FP64 tensor cores, so it can exceed it), and for Kahan one term = 5 FP32 instructions (mul, sub,
add, sub, sub) for 2 counted flops: SMs × clock × 128 × 2/5; bytes = (MK + KN + MN) × itemsize.

Usage (on the device machine: numba-cuda needs the carried NumPy 2.4 wheel, see DESIGN.md)
  python3 benchmarks/orbital_gemm_device.py [--budget 160] [--out DIR]
  NUMBA_ENABLE_CUDASIM=1 python benchmarks/orbital_gemm_device.py --quick --out /tmp/x   # smoke test
Writes $OUT/orbital_gemm_<gpu>_<date>.{md,json} (or --out, else ./device_out); the JSON is rewritten
after every stage, so a crash keeps what was measured.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import socket
import statistics
import sys
import time
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")  # cuBLAS float32 must be float32, not TF32

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numba  # noqa: E402

from qmckit import precision as P  # noqa: E402
from qmckit.backends import cuda_gemm as G  # noqa: E402
from _common import Budget, cpu_model, log  # noqa: E402

warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")  # numba's under-utilisation hint, small cases
warnings.filterwarnings("ignore", message=".*[Hh]ost array.*")

U = {"f32": 2.0 ** -24, "f64": 2.0 ** -53}
KAHAN_INSTR = 5  # FP32 instructions per Kahan term


# --------------------------------------------------------------------------------------------
# machine
# --------------------------------------------------------------------------------------------
def device_info(cuda):
    info = {"simulated": G.simulated(), "name": "CUDA simulator" if G.simulated() else None}
    if not info["simulated"]:
        try:
            dev = cuda.get_current_device()
            name = dev.name
            info["name"] = name.decode() if isinstance(name, bytes) else str(name)
            info["compute_capability"] = list(dev.compute_capability)
            info["sms"] = int(dev.MULTIPROCESSOR_COUNT)
            info["clock_khz"] = int(dev.CLOCK_RATE)
            info["memory_clock_khz"] = int(dev.MEMORY_CLOCK_RATE)
            info["memory_bus_bits"] = int(dev.GLOBAL_MEMORY_BUS_WIDTH)
            info["memory_gib"] = round(cuda.current_context().get_memory_info()[1] / 2 ** 30, 1)
        except Exception as exc:  # noqa: BLE001
            info["error"] = repr(exc)
    sms, clock = info.get("sms"), info.get("clock_khz")
    if sms and clock:
        hz = sms * clock * 1e3
        info["peak_source"] = "SMs × clock × flop/clk (FP32 256, FP64 128; Kahan 128·2/5)"
    else:
        hz = 132 * 1.98e9  # H100 SXM nominal
        info["peak_source"] = "H100 SXM nominal (device attributes unavailable)"
    info["peak_gflops"] = {"f32": hz * 256 / 1e9, "f64": hz * 128 / 1e9, "kahan32": hz * 128 * 2 / KAHAN_INSTR / 1e9}
    if info.get("memory_clock_khz") and info.get("memory_bus_bits"):
        info["peak_hbm_gb_s"] = 2 * info["memory_clock_khz"] * 1e3 * info["memory_bus_bits"] / 8 / 1e9
    else:
        info["peak_hbm_gb_s"] = 3350.0
    return info


def cpu_info():
    model = cpu_model()
    info = {"model": model, "cores": os.cpu_count()}
    try:
        import threadpoolctl

        info["blas"] = [{k: p.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
                        for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
    except Exception as exc:  # noqa: BLE001
        info["blas"] = f"threadpoolctl unavailable ({type(exc).__name__})"
    return info


def versions(cuda):
    out = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}
    try:
        import importlib.metadata as md

        out["numba-cuda"] = md.version("numba-cuda")
    except Exception:  # noqa: BLE001
        pass
    if not G.simulated():
        try:
            from numba.cuda.cudadrv.driver import driver

            out["cuda_driver"] = ".".join(map(str, driver.get_version()))
        except Exception:  # noqa: BLE001
            pass
        try:
            out["cuda_runtime"] = ".".join(map(str, cuda.runtime.get_version()))
        except Exception:  # noqa: BLE001
            pass
    return out


# --------------------------------------------------------------------------------------------
# operands
# --------------------------------------------------------------------------------------------
@numba.njit(parallel=True, cache=True)
def _basis_values(electrons, centres, alpha, norm):
    A = np.empty((electrons.shape[0], centres.shape[0]))
    for i in numba.prange(electrons.shape[0]):
        for j in range(centres.shape[0]):
            dx = electrons[i, 0] - centres[j, 0]
            dy = electrons[i, 1] - centres[j, 1]
            dz = electrons[i, 2] - centres[j, 2]
            A[i, j] = norm[j] * np.exp(-alpha[j] * (dx * dx + dy * dy + dz * dz))
    return A


def basis_operands(M, K, N, rng, radius=3.0, exponents=(0.05, 50.0)):
    """float64 (A, B) with the statistics of qmckit.precision.gaussian_basis_like (signed B):
    normalised s Gaussians with centres in a ball of ``radius`` bohr and log-uniform exponents,
    electrons at a random centre plus a normal offset; B normal(0, 1)."""
    u = rng.standard_normal((K, 3))
    centres = radius * rng.random(K)[:, None] ** (1.0 / 3.0) * u / np.linalg.norm(u, axis=1)[:, None]
    alpha = np.exp(rng.uniform(np.log(exponents[0]), np.log(exponents[1]), K))
    norm = (2.0 * alpha / np.pi) ** 0.75
    electrons = centres[rng.integers(0, K, M)] + rng.standard_normal((M, 3))
    A = _basis_values(electrons, centres, alpha, norm)
    B = rng.standard_normal((K, N))
    return A, B


def square_operands(n, rng):
    return rng.random((n, n)), rng.standard_normal((n, n))


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------
def time_calls(fn, sync, reps, min_time, simulated):
    """Median seconds per call of ``fn`` (after one warm-up call) over ``reps`` timings, each of
    enough back-to-back calls to last ``min_time``."""
    t0 = time.perf_counter()
    fn()
    sync()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = 1 if simulated else max(1, min(1000, int(math.ceil(min_time / one))))
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / inner)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "reps": reps,
            "calls_per_timing": inner, "first_call_s": first}


def cpu_time(fn, reps_max, budget_s):
    t0 = time.perf_counter()
    fn()
    warm = time.perf_counter() - t0
    reps = int(max(1, min(reps_max, budget_s / max(warm, 1e-6))))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "reps": reps}


class CuBLAS:
    """cuBLAS GEMM through CuPy, else PyTorch (TF32 off in both)."""

    def __init__(self):
        self.lib = None
        self.error = None
        errors = []
        try:
            import cupy as cp

            cp.cuda.runtime.getDeviceCount()
            self.cp, self.lib = cp, "cupy " + cp.__version__
            return
        except Exception as exc:  # noqa: BLE001
            errors.append(f"cupy: {type(exc).__name__}: {exc}")
        try:
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
            self.torch, self.lib = torch, "torch " + torch.__version__
        except Exception as exc:  # noqa: BLE001
            errors.append(f"torch: {type(exc).__name__}: {exc}")
            self.error = "; ".join(errors)

    def setup(self, A, B):
        """(call, sync, fetch) for C = A @ B on the device."""
        M, N = A.shape[0], B.shape[1]
        if self.lib.startswith("cupy"):
            cp = self.cp
            a, b = cp.asarray(A), cp.asarray(B)
            c = cp.empty((M, N), dtype=A.dtype)
            try:
                cp.matmul(a, b, out=c)
                call = lambda: cp.matmul(a, b, out=c)  # noqa: E731
                fetch = lambda: cp.asnumpy(c)  # noqa: E731
            except TypeError:  # a CuPy without out= for matmul: keep the last result
                held = [c]
                call = lambda: held.__setitem__(0, cp.matmul(a, b))  # noqa: E731
                fetch = lambda: cp.asnumpy(held[0])  # noqa: E731
            return call, cp.cuda.Device().synchronize, fetch, (a, b, c)
        torch = self.torch
        a, b = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
        c = torch.empty((M, N), dtype=a.dtype, device="cuda")
        return (lambda: torch.matmul(a, b, out=c)), torch.cuda.synchronize, (lambda: c.cpu().numpy()), (a, b, c)

    def release(self):
        try:
            if self.lib and self.lib.startswith("cupy"):
                self.cp.get_default_memory_pool().free_all_blocks()
            elif self.lib:
                self.torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001
            pass


# --------------------------------------------------------------------------------------------
# accuracy
# --------------------------------------------------------------------------------------------
def errors(C_rows, ref, abs_ab, unit):
    diff = np.abs(np.asarray(C_rows, np.float64) - ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(abs_ab > 0, diff / abs_ab, 0.0)
        rel = diff[ref != 0] / np.abs(ref[ref != 0])
    return {"max_scaled_u": float(scaled.max() / unit), "normwise": float(diff.max() / max(np.abs(ref).max(), 1e-300)),
            "median_rel": float(np.median(rel)) if rel.size else float("nan")}


def flops(M, K, N):
    return 2.0 * M * K * N


def roofline_gflops(kind, M, K, N, dev):
    item = 8 if kind == "f64" else 4
    bytes_ = (M * K + K * N + M * N) * item
    ai = flops(M, K, N) / bytes_
    return min(dev["peak_gflops"][kind], ai * dev["peak_hbm_gb_s"]), ai


# --------------------------------------------------------------------------------------------
# one size
# --------------------------------------------------------------------------------------------
def run_case(case, cuda, blas, dev, args, budget, report):
    name, M, K, N = case["name"], case["M"], case["K"], case["N"]
    row = {**case, "gflop": flops(M, K, N) / 1e9, "gpu": {}, "cpu": {}, "accuracy": {}, "tiles": {}}
    report["cases"].append(row)
    sim = G.simulated()
    rng = np.random.default_rng(case.get("seed", 1))
    t0 = time.perf_counter()
    A64, B64 = square_operands(M, rng) if case.get("square") else basis_operands(M, K, N, rng)
    A32, B32 = A64.astype(np.float32), B64.astype(np.float32)
    row["subnormal_fraction_A32"] = float(np.mean((A32 != 0) & (np.abs(A32) < np.finfo(np.float32).tiny)))
    row["zero_fraction_A32"] = float(np.mean(A32 == 0))
    row["setup_s"] = round(time.perf_counter() - t0, 2)
    log(f"\n## {name}: M={M} K={K} N={N} ({row['gflop']:.3g} GFLOP); A32 subnormal {row['subnormal_fraction_A32']:.2%}, "
        f"zero {row['zero_fraction_A32']:.2%}")
    host = {"f64": (A64, B64), "f32": (A32, B32), "kahan32": (A32, B32)}
    # rows for the accuracy checks: all their elements against the exact product
    n_rows = int(min(M, max(2, args.ref_work // (K * N))))
    rows = np.unique(np.linspace(0, M - 1, n_rows).astype(np.int64))
    row["accuracy_rows"] = int(rows.size)
    results = {}

    def measure(label, call, sync, fetch, kind):
        if budget.left() < 5:
            row["gpu"][label] = {"skipped": "budget"}
            return
        try:
            t = time_calls(call, sync, args.reps, args.min_time, sim)
            t["gflops"] = flops(M, K, N) / t["median_s"] / 1e9
            roof, ai = roofline_gflops(kind, M, K, N, dev)
            t["roofline_gflops"], t["intensity"] = roof, ai
            t["of_roofline"] = t["gflops"] / roof
            row["gpu"][label] = t
            results[label] = fetch()
            log(f"  {label:14s} {1e3 * t['median_s']:9.3f} ms  {t['gflops']:9.1f} GFLOP/s  "
                f"({100 * t['of_roofline']:.1f}% of roofline {roof:.0f}; {t['calls_per_timing']} calls/timing)")
        except Exception as exc:  # noqa: BLE001
            row["gpu"][label] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"  {label}: FAILED {row['gpu'][label]['error']}")
            traceback.print_exc()

    # ---- cuBLAS
    if blas.lib is None:
        row["gpu"]["cublas f32"] = row["gpu"]["cublas f64"] = {"error": blas.error}
    else:
        for prec, (A, B) in (("f32", (A32, B32)), ("f64", (A64, B64))):
            try:
                call, sync, fetch, keep = blas.setup(A, B)
                measure(f"cublas {prec}", call, sync, fetch, prec)
                del keep
            except Exception as exc:  # noqa: BLE001
                row["gpu"][f"cublas {prec}"] = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"  cublas {prec}: FAILED {exc!r}")
        blas.release()

    # ---- qmckit kernels, default tile
    device_arrays = {}
    for kind in G.KINDS:
        tile = G.default_tile(N, kind)
        try:
            A, B = host[kind]
            dtype = G.DTYPES[kind]
            if dtype not in device_arrays:
                device_arrays[dtype] = (cuda.to_device(A), cuda.to_device(B), cuda.device_array((M, N), dtype))
            dA, dB, dC = device_arrays[dtype]
            measure(f"qmckit {kind}", lambda: G.matmul(dA, dB, kind, out=dC, tile=tile), cuda.synchronize,
                    dC.copy_to_host, kind)
            if isinstance(row["gpu"].get(f"qmckit {kind}"), dict):
                row["gpu"][f"qmckit {kind}"]["tile"] = tile
                row["gpu"][f"qmckit {kind}"]["registers"] = registers(kind, tile)
        except Exception as exc:  # noqa: BLE001
            row["gpu"][f"qmckit {kind}"] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"  qmckit {kind}: FAILED {exc!r}")
            traceback.print_exc()
    row["_device_arrays"] = device_arrays  # kept for the tile scan, dropped before saving

    # ---- CPU (numpy BLAS)
    try:
        import threadpoolctl
    except Exception:  # noqa: BLE001
        threadpoolctl = None
    for prec, (A, B) in (("f32", (A32, B32)), ("f64", (A64, B64))):
        C = np.empty((M, N), A.dtype)
        for threads in ("all", 1):
            label = f"numpy {prec} {threads}{' threads' if threads == 'all' else ' thread'}"
            if budget.left() < 8:
                row["cpu"][label] = {"skipped": "budget"}
                continue
            if threads == 1 and threadpoolctl is None:
                row["cpu"][label] = {"skipped": "threadpoolctl not installed"}
                continue
            try:
                def call(A=A, B=B, C=C):
                    np.matmul(A, B, out=C)

                if threads == 1:
                    with threadpoolctl.threadpool_limits(1, user_api="blas"):
                        t = cpu_time(call, args.reps, args.cpu_budget)
                else:
                    t = cpu_time(call, args.reps, args.cpu_budget)
                t["gflops"] = flops(M, K, N) / t["median_s"] / 1e9
                row["cpu"][label] = t
                results[label] = C.copy()
                log(f"  {label:20s} {1e3 * t['median_s']:9.3f} ms  {t['gflops']:9.1f} GFLOP/s  (median of {t['reps']})")
            except Exception as exc:  # noqa: BLE001
                row["cpu"][label] = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"  {label}: FAILED {exc!r}")

    # ---- accuracy on the chosen rows
    try:
        refs = {}
        for prec, (A, B) in (("f32", (A32, B32)), ("f64", (A64, B64))):
            Ar = np.ascontiguousarray(A[rows])
            refs[prec] = (P.matmul_ref(Ar, B), np.abs(Ar.astype(np.float64)) @ np.abs(B.astype(np.float64)))
        for label, C in results.items():
            prec = "f64" if "f64" in label else "f32"
            ref, abs_ab = refs[prec]
            row["accuracy"][label] = errors(C[rows], ref, abs_ab, U[prec])
        if "qmckit kahan32" in results:
            twin = P.matmul_kahan_f32(np.ascontiguousarray(A32[rows]), B32)
            got = results["qmckit kahan32"][rows]
            row["accuracy"]["qmckit kahan32"]["bitwise_cpu_twin"] = bool(np.array_equal(got, twin))
            row["accuracy"]["qmckit kahan32"]["elements_differing_from_twin"] = int(np.sum(got != twin))
        if "qmckit f32" in results:
            seq = P.matmul_f32(np.ascontiguousarray(A32[rows]), B32)
            row["accuracy"]["qmckit f32"]["fraction_equal_sequential_cpu"] = float(np.mean(results["qmckit f32"][rows] == seq))
        for label, acc in row["accuracy"].items():
            log(f"  accuracy {label:22s} max|ΔC|/(|A||B|) = {acc['max_scaled_u']:.3g} u, normwise {acc['normwise']:.2e}, "
                f"median rel {acc['median_rel']:.2e}"
                + (f", bitwise = CPU twin: {acc['bitwise_cpu_twin']}" if "bitwise_cpu_twin" in acc else ""))
    except Exception as exc:  # noqa: BLE001
        row["accuracy"]["error"] = f"{type(exc).__name__}: {exc}"
        log(f"  accuracy: FAILED {exc!r}")
        traceback.print_exc()


def registers(kind, tile):
    if G.simulated():
        return None
    try:
        regs = G.kernel(kind, G.TILES[tile]).get_regs_per_thread()
        return regs if isinstance(regs, int) else max(regs.values())
    except Exception:  # noqa: BLE001
        return None


def tile_scan(row, cuda, args, budget, dev):
    """Every preset of every kind on this size (the default tile's figure is already measured)."""
    arrays = row.get("_device_arrays") or {}
    M, K, N = row["M"], row["K"], row["N"]
    sim = G.simulated()
    for kind in G.KINDS:
        if G.DTYPES[kind] not in arrays:
            continue
        dA, dB, dC = arrays[G.DTYPES[kind]]
        for tile in G.TILES:
            if tile == G.default_tile(N, kind):
                t = row["gpu"].get(f"qmckit {kind}", {})
                if "gflops" in t:
                    row["tiles"][f"{kind} {tile}"] = {"gflops": t["gflops"], "median_s": t["median_s"], "default": True}
                continue
            if budget.left() < 12:
                row["tiles"][f"{kind} {tile}"] = {"skipped": "budget"}
                continue
            try:
                t = time_calls(lambda: G.matmul(dA, dB, kind, out=dC, tile=tile), cuda.synchronize, args.reps,
                               args.min_time, sim)
                t["gflops"] = flops(M, K, N) / t["median_s"] / 1e9
                t["registers"] = registers(kind, tile)
                row["tiles"][f"{kind} {tile}"] = t
                log(f"  scan {row['name']:14s} {kind:8s} {tile:8s} {t['gflops']:9.1f} GFLOP/s (regs {t['registers']})")
            except Exception as exc:  # noqa: BLE001
                row["tiles"][f"{kind} {tile}"] = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"  scan {kind} {tile}: FAILED {exc!r}")


def checks(cuda, report):
    """Kahan compensation alive on the device; the launch floor of matmul()."""
    out = {}
    try:
        K = 301
        a = np.full((1, K), 1e-8, np.float32)
        a[0, 0] = 1.0
        b = np.ones((K, 2), np.float32)
        exact = float(P.matmul_ref(a, b)[0, 0])
        out["compensation"] = {"exact": exact, "f32": float(G.matmul(a, b, "f32")[0, 0]),
                               "kahan32": float(G.matmul(a, b, "kahan32")[0, 0]),
                               "cpu_kahan": float(P.matmul_kahan_f32(a, b)[0, 0])}
        c = out["compensation"]
        c["alive"] = bool(c["kahan32"] == c["cpu_kahan"] and abs(c["kahan32"] - exact) <= 2 ** -24 * exact
                          and c["f32"] == 1.0)
        log(f"# compensation check (1 + 300·1e-8): f32 {c['f32']!r}, kahan32 {c['kahan32']!r}, exact {exact!r}: "
            f"alive = {c['alive']}")
    except Exception as exc:  # noqa: BLE001
        out["compensation"] = {"error": f"{type(exc).__name__}: {exc}"}
        traceback.print_exc()
    try:
        dA = cuda.to_device(np.ones((128, 16), np.float32))
        dB = cuda.to_device(np.ones((16, 16), np.float32))
        dC = cuda.device_array((128, 16), np.float32)
        t = time_calls(lambda: G.matmul(dA, dB, "f32", out=dC), cuda.synchronize, 5, 0.02, G.simulated())
        out["launch_floor_s"] = t["median_s"]
        log(f"# launch floor (matmul() of 128×16×16, device arrays): {1e6 * t['median_s']:.1f} µs per call")
    except Exception as exc:  # noqa: BLE001
        out["launch_floor"] = {"error": f"{type(exc).__name__}: {exc}"}
        traceback.print_exc()
    report["checks"] = out


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def fmt(x, spec=".1f"):
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def markdown(report):
    dev, cpu = report["device"], report["cpu"]
    peaks = dev["peak_gflops"]
    lines = [f"# Batched orbital GEMM (study 001) — {dev.get('name')} — {report['date']}", "",
             f"- host {report['host']}; GPU {dev.get('name')} (cc {dev.get('compute_capability')}, {dev.get('sms')} SMs, "
             f"{dev.get('clock_khz')} kHz, {dev.get('memory_gib')} GiB); simulated: {dev.get('simulated')}",
             f"- CPU {cpu['model']}, {cpu['cores']} logical cores; BLAS {cpu.get('blas')}",
             f"- versions: {report['versions']}; cuBLAS through {report.get('cublas')}",
             f"- command `{report['command']}`; total {report.get('wall_s', 0):.0f} s",
             f"- shapes: M = W·Q·N_e (W = {report['walkers']} walkers, Q = {report['quantities']} quantities), "
             "K = N_bf, N = N_e/2; synthetic basis-like A (positive, many decades), signed normal B",
             f"- roofline: min(peak, intensity × {dev['peak_hbm_gb_s']:.0f} GB/s), peaks FP32 {peaks['f32']:.0f}, "
             f"FP64 {peaks['f64']:.0f}, Kahan {peaks['kahan32']:.0f} GFLOP/s ({dev.get('peak_source')})",
             f"- GPU times: median of {report['reps']} timings after warm-up, sync + perf_counter around ≥ "
             f"{1e3 * report['min_time']:.0f} ms of back-to-back calls, operands on the device; CPU: numpy BLAS, "
             "median of up to 10", "",
             "## Throughput (GFLOP/s) and accuracy", "",
             "| case | M × K × N | GFLOP | kernel | ms | GFLOP/s | % roofline | of cuBLAS | vs CPU all | vs CPU 1 | "
             "max err/(u·\\|A\\|\\|B\\|) | normwise | median rel | bitwise twin |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in report["cases"]:
        shape = f"{row['M']} × {row['K']} × {row['N']}"
        if "gpu" not in row:  # skipped for the budget, or failed before measuring
            lines.append(f"| {row['name']} | {shape} | | {row.get('skipped') or row.get('error')} | | | | | | | | | | |")
            continue
        first = True
        for label in ("qmckit f64", "cublas f64", "qmckit f32", "qmckit kahan32", "cublas f32",
                      "numpy f64 all threads", "numpy f64 1 thread", "numpy f32 all threads", "numpy f32 1 thread"):
            t = row["gpu"].get(label) or row["cpu"].get(label)
            if t is None:
                continue
            head = f"| {row['name']} | {shape} | {row['gflop']:.3g} " if first else "| | | "
            first = False
            if "gflops" not in t:
                lines.append(head + f"| {label} | {t.get('error') or t.get('skipped')} | | | | | | | | | |")
                continue
            prec = "f64" if "f64" in label else "f32"
            cub = row["gpu"].get(f"cublas {prec}", {})
            cpu_all = row["cpu"].get(f"numpy {prec} all threads", {})
            cpu_one = row["cpu"].get(f"numpy {prec} 1 thread", {})
            of_cublas = cub.get("median_s") / t["median_s"] if "median_s" in cub and label.startswith("qmckit") else None
            vs_all = cpu_all.get("median_s") / t["median_s"] if "median_s" in cpu_all and not label.startswith("numpy") else None
            vs_one = cpu_one.get("median_s") / t["median_s"] if "median_s" in cpu_one and not label.startswith("numpy") else None
            acc = row["accuracy"].get(label, {}) if isinstance(row["accuracy"], dict) else {}
            tile = f" ({t['tile']})" if t.get("tile") else ""
            twin = acc.get("bitwise_cpu_twin")
            lines.append(head + f"| {label}{tile} | {1e3 * t['median_s']:.3f} | {t['gflops']:.1f} | "
                         f"{fmt(100 * t['of_roofline'] if 'of_roofline' in t else None)} | "
                         f"{fmt(of_cublas and 100 * of_cublas, '.0f')}{'%' if of_cublas else ''} | "
                         f"{fmt(vs_all, '.1f')} | {fmt(vs_one, '.0f')} | {fmt(acc.get('max_scaled_u'), '.3g')} | "
                         f"{fmt(acc.get('normwise'), '.1e')} | {fmt(acc.get('median_rel'), '.1e')} | "
                         f"{'' if twin is None else ('yes' if twin else 'NO (%d differ)' % acc.get('elements_differing_from_twin', -1))} |")
    lines += ["", "Columns: *of cuBLAS* = t(cuBLAS, same precision; f32 for kahan32) / t; *vs CPU* = t(numpy BLAS, "
              "same precision) / t; errors on the rows checked (all their elements) against the exact product of "
              "the same inputs (Dot2), u = 2^-24 for float32 results and 2^-53 for float64; bounds: f32 ≤ K u, "
              "kahan32 ≤ 3 u + 4 K u², f64 ≤ K u. *bitwise twin*: kahan32 equals qmckit.precision.matmul_kahan_f32 "
              "on those rows bit for bit."]
    scan = [(row, key, t) for row in report["cases"] for key, t in row.get("tiles", {}).items()]
    if scan:
        lines += ["", "## Tile scan (GFLOP/s; * = default tile)", "",
                  "| case | " + " | ".join(f"{k} {t}" for k in G.KINDS for t in G.TILES) + " |",
                  "|---|" + "---:|" * (len(G.KINDS) * len(G.TILES))]
        for row in (r for r in report["cases"] if "gpu" in r):
            cells = []
            for kind in G.KINDS:
                for tile in G.TILES:
                    t = row.get("tiles", {}).get(f"{kind} {tile}", {})
                    cells.append(f"{t['gflops']:.0f}{'*' if t.get('default') else ''}" if "gflops" in t
                                 else ("–" if not t else "skip" if "skipped" in t else "err"))
            lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    chk = report.get("checks", {})
    comp = chk.get("compensation", {})
    lines += ["", "## Checks", "",
              f"- Kahan compensation on the device, 1 + 300·1e-8 in float32: f32 {comp.get('f32')!r}, kahan32 "
              f"{comp.get('kahan32')!r} (exact {comp.get('exact')!r}; CPU twin {comp.get('cpu_kahan')!r}): alive = "
              f"{comp.get('alive', comp.get('error'))}",
              f"- launch floor: {fmt(chk.get('launch_floor_s') and 1e6 * chk['launch_floor_s'])} µs per "
              "matmul() call on device arrays (the smallest products are bounded by it)"]
    return "\n".join(lines) + "\n"


def clean(obj):
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    return obj


def save(report, out_dir, stem, md=None):
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{stem}.json").write_text(json.dumps(clean(report), indent=1, default=str))
        if md is not None:
            (out_dir / f"{stem}.md").write_text(md)
    except OSError as exc:
        log(f"# could not write to {out_dir}: {exc}")


# --------------------------------------------------------------------------------------------
FIG7 = [("acetic acid", 32, 80), ("benzaldehyde", 56, 150), ("azobenzene", 96, 326), ("HMX", 152, 516),
        ("240 e (beyond 001)", 240, 720)]


def plan(args):
    if args.quick:
        W, Q = 2, 5
        mols = [("tiny 4 e", 4, 10), ("tiny 6 e", 6, 17)]
        square = 33
    else:
        W, Q = args.walkers, args.quantities
        mols = FIG7
        square = args.square
    cases = [{"name": n, "N_e": ne, "M": W * Q * ne, "K": k, "N": ne // 2, "seed": i + 1}
             for i, (n, ne, k) in enumerate(mols)]
    if square:
        cases.append({"name": f"square {square}", "M": square, "K": square, "N": square, "square": True, "seed": 99})
    return W, Q, cases


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test, e.g. under the simulator)")
    parser.add_argument("--budget", type=float, default=None, help="seconds for the whole run (default 160, quick 150)")
    parser.add_argument("--out", default=None, help="output folder (default $OUT, else ./device_out)")
    parser.add_argument("--walkers", type=int, default=128)
    parser.add_argument("--quantities", type=int, default=5, help="rows per electron (value, ∇, ∇²: 5)")
    parser.add_argument("--square", type=int, default=4096, help="side of the square case (0: none)")
    parser.add_argument("--reps", type=int, default=None, help="timings per figure (default 10, quick 2)")
    args = parser.parse_args(argv)
    args.reps = args.reps or (2 if args.quick else 10)
    args.min_time = 0.0 if args.quick else 2e-3
    args.cpu_budget = 0.5 if args.quick else 1.5
    args.ref_work = 2e5 if args.quick else 3e7
    budget = Budget(args.budget or (150 if args.quick else 160))
    from numba import cuda

    report = {"date": datetime.date.today().isoformat(), "host": socket.gethostname(),
              "command": "python " + " ".join([Path(sys.argv[0]).name] + sys.argv[1:]) if argv is None else str(argv),
              "reps": args.reps, "min_time": args.min_time}
    report["device"] = dev = device_info(cuda)
    report["cpu"] = cpu_info()
    report["versions"] = versions(cuda)
    log(f"# device {dev}")
    log(f"# cpu {report['cpu']}")
    blas = CuBLAS() if not G.simulated() else None
    if blas is None:
        blas = CuBLAS.__new__(CuBLAS)
        blas.lib, blas.error = None, "not under the simulator"
    report["cublas"] = blas.lib or blas.error
    report["versions"]["cublas_via"] = blas.lib
    log(f"# versions {report['versions']}; cuBLAS: {report['cublas']}")
    gpu = re.sub(r"[^A-Za-z0-9.-]+", "_", (dev.get("name") or "gpu").replace("NVIDIA ", "")).strip("_") or "gpu"
    stem = f"orbital_gemm_{'quick_' if args.quick else ''}{gpu}_{report['date']}"
    out_dir = Path(args.out or os.environ.get("OUT") or "device_out")
    W, Q, cases = plan(args)
    report["walkers"], report["quantities"], report["cases"] = W, Q, []

    checks(cuda, report)
    save(report, out_dir, stem)
    for case in cases:
        if budget.left() < 15:
            report["cases"].append({**case, "skipped": "budget"})
            log(f"## {case['name']}: skipped (budget)")
            continue
        try:
            run_case(case, cuda, blas, dev, args, budget, report)
        except Exception as exc:  # noqa: BLE001
            report["cases"].append({**case, "error": f"{type(exc).__name__}: {exc}"})
            log(f"## {case['name']}: FAILED {exc!r}")
            traceback.print_exc()
        save(report, out_dir, stem)
    log(f"\n# main figures done at {budget.elapsed():.0f} s; tile scan while the budget lasts")
    for row in report["cases"]:
        if "gpu" not in row:
            continue
        if args.quick and row is not report["cases"][0]:
            row.pop("_device_arrays", None)
            continue
        try:
            tile_scan(row, cuda, args, budget, dev)
        except Exception as exc:  # noqa: BLE001
            log(f"# tile scan {row['name']}: FAILED {exc!r}")
            traceback.print_exc()
        row.pop("_device_arrays", None)
        save(report, out_dir, stem)
    report["wall_s"] = budget.elapsed()
    try:
        md = markdown(report)
    except Exception:  # noqa: BLE001 - the JSON is written already
        traceback.print_exc()
        save(report, out_dir, stem)
        return 1
    save(report, out_dir, stem, md)
    log("\n" + md)
    log(f"# wrote {out_dir / stem}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
