#!/usr/bin/env python
"""GPU VMC sweep for trapped hard-sphere bosons (qmckit.backends.cuda_bec): correctness on the
device against the CPU twin, throughput, the CPU backend in the same run, and a flop roofline.

One run on a lent GPU machine, ~5 minutes (each part has a time budget and is skipped, not
truncated, when the budget is spent; every case catches its own exceptions):

  (b) correctness: the same walkers and RNG states through the CPU driver (qmckit.methods.vmc.VMC)
      and the GPU kernel, 3 sweeps, W = 64, N = 10 (thread and block layouts, drift and brute)
      and N = 100 (block and thread, drift), float64 and float32: max |ΔE_L| (abs and rel.),
      max |Δr|, the number of (sweep, walker) accepted counts that differ (≥ the number of
      flipped accept/reject decisions), walkers whose trajectory diverged, equal RNG streams;
      plus the zero-variance check at α = ½, a = 0 (E_L/N = (2 + λ)/2 exactly).
  (c) GPU throughput, drift sampler, measure=True (one MC cycle = one walker doing N
      single-particle moves + one local energy): N = 20, 100, 500, both layouts, float64 and
      float32, walkers enough to fill the GPU. Warm-up (compile + equilibration sweeps), then
      sweeps per timing calibrated to ≈ 0.25 s, median of 5 timings with CUDA events.
  (d) CPU backend (numba, parallel over walkers) in the same process: all cores and one thread
      (numba.set_num_threads(1)), same N; the GPU/CPU ratios.
  (e) pair evaluations per second and the fraction of a stated FP64/FP32 peak under a stated
      flop count per pair.
  (+) scans if time is left: walkers (thread layout, N = 20) and threads per block (block
      layout, N = 100, 500).
  (f) a markdown table on stdout and, with the raw numbers as JSON, in $OUT (or ./gpu_out).

Usage
  python benchmarks/bec_throughput.py                 # full run on a GPU
  NUMBA_ENABLE_CUDASIM=1 python benchmarks/bec_throughput.py --quick    # smoke test without a GPU
  python benchmarks/bec_throughput.py --budget 240    # total time budget in seconds (default 330)

Definitions (counted, not measured, work; the same as benchmarks/vmc_throughput.py):
  cycles/s       W · n_sweeps / t
  pair evals/s   cycles/s · (N(N−1) + N(N−1)/2): each single-particle move N−1 pairs (the moved
                 particle against the others), each local energy N(N−1)/2 pairs
  flop model     (sqrt and division counted as ONE flop each, like the thesis's "87 operations";
                 on the GPU each is really a multi-instruction sequence, so the fractions below
                 understate how busy the FP units are): per moved-particle pair 62 flops in the
                 thread layout (old and new distance, ratio, new gradient, and the next particle's
                 gradient, which this layout recomputes), 48 + 18·acceptance in the block layout
                 (ratio, new gradient, cached-gradient update on acceptance); per local-energy
                 pair 44 (each unordered pair is visited from both ends, 22 each).
  peak           SMs × boost clock × 128 flop/clk (FP64, non-tensor FMA) or × 256 (FP32), from the
                 device's attributes; H100 SXM: 132 × 1.98 GHz → 33.5 / 66.9 TFLOP/s.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import socket
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numba  # noqa: E402

from qmckit.backends import cuda_bec  # noqa: E402
from qmckit.methods.vmc import VMC  # noqa: E402
from qmckit.systems.bec import TrappedBosons  # noqa: E402
from qmckit.walkers import Walkers  # noqa: E402
from _common import Budget, cpu_model, log  # noqa: E402

warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)  # simulator uint64
warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")  # numba's under-utilisation hint, small cases

LAM, A_CORE, ALPHA = math.sqrt(8.0), 0.15155, 0.7687  # B4-like, as benchmarks/vmc_throughput.py
DT = 0.01
FLOPS_MOVE_THREAD = 62
FLOPS_MOVE_BLOCK, FLOPS_ACCEPT_BLOCK = 48, 18
FLOPS_ENERGY_PAIR = 44


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def system_for(n, a=A_CORE, alpha=ALPHA):
    return TrappedBosons(n=n, lam=LAM, a=a, alpha=alpha)


_POOLS = {}


def walkers_for(system, W, seed, pool_size):
    """W walkers tiled from a pool of independent starting configurations, fresh RNG streams."""
    key = (system.params, pool_size)
    if key not in _POOLS:
        _POOLS[key] = system.initial_positions(pool_size, np.random.default_rng(1000 + system.n_particles))
    pool = _POOLS[key]
    positions = pool[np.arange(W) % len(pool)]
    return Walkers.from_positions(positions, seed, system.cache_size())


def pairs_per_cycle(n):
    return n * (n - 1) * 1.5


def flops_per_cycle(n, layout, acceptance):
    move = FLOPS_MOVE_THREAD if layout == "thread" else FLOPS_MOVE_BLOCK + FLOPS_ACCEPT_BLOCK * acceptance
    return n * (n - 1) * move + n * (n - 1) / 2 * FLOPS_ENERGY_PAIR


def device_info(cuda):
    info = {"simulated": cuda_bec.simulated(), "name": "CUDA simulator" if cuda_bec.simulated() else None}
    if info["simulated"]:
        info["peak_fp64_tflops"], info["peak_fp32_tflops"] = 33.5, 66.9  # H100 SXM nominal, for the format only
        info["peak_hbm_tb_s"] = 3.35
        info["peak_source"] = "H100 SXM nominal, the simulator has no figures"
        return info

    def attempt(key, get):
        try:
            info[key] = get()
        except Exception as exc:  # noqa: BLE001
            info.setdefault("errors", []).append(f"{key}: {exc!r}")

    dev = None
    try:
        dev = cuda.get_current_device()
    except Exception as exc:  # noqa: BLE001
        info["errors"] = [f"device: {exc!r}"]
    if dev is not None:
        attempt("name", lambda: dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name))
        attempt("compute_capability", lambda: list(dev.compute_capability))
        attempt("sms", lambda: int(dev.MULTIPROCESSOR_COUNT))
        attempt("clock_khz", lambda: int(dev.CLOCK_RATE))
        attempt("shared_per_block", lambda: int(dev.MAX_SHARED_MEMORY_PER_BLOCK))
        attempt("memory_gib", lambda: round(cuda.current_context().get_memory_info()[1] / 2**30, 1))
        attempt("memory_clock_khz", lambda: int(dev.MEMORY_CLOCK_RATE))
        attempt("memory_bus_bits", lambda: int(dev.GLOBAL_MEMORY_BUS_WIDTH))
    if info.get("memory_clock_khz") and info.get("memory_bus_bits"):
        info["peak_hbm_tb_s"] = 2 * info["memory_clock_khz"] * 1e3 * info["memory_bus_bits"] / 8 / 1e12
    else:
        info["peak_hbm_tb_s"] = 3.35  # H100 SXM nominal
    sms, clock = info.get("sms"), info.get("clock_khz")
    if sms and clock:
        info["peak_fp64_tflops"] = sms * clock * 1e3 * 128 / 1e12
        info["peak_fp32_tflops"] = sms * clock * 1e3 * 256 / 1e12
        info["peak_source"] = "SMs × clock × 128 (FP64) / 256 (FP32) flop/clk"
    else:
        info["peak_fp64_tflops"], info["peak_fp32_tflops"] = 33.5, 66.9
        info["peak_source"] = "H100 SXM nominal (device attributes unavailable)"
    return info


def cpu_info():
    model = cpu_model()
    return {"model": model, "cores": os.cpu_count(), "numba_threads": numba.get_num_threads()}


# --------------------------------------------------------------------------------------------
# (b) correctness
# --------------------------------------------------------------------------------------------
def cpu_twin(system, walkers, sampler, n_sweeps, step):
    w = walkers.copy()
    vmc = VMC(system, w, sampler=sampler, dt=DT, step=step)
    energies = np.empty((n_sweeps, w.n_walkers))
    accepted = np.zeros((n_sweeps, w.n_walkers), dtype=np.int64)
    for s in range(n_sweeps):
        before = w.positions.copy()
        energies[s] = vmc.sweep(1)[0][0]
        accepted[s] = np.any(w.positions != before, axis=2).sum(axis=1)  # one proposal per particle
    return w, energies, accepted


def gpu_twin(system, walkers, sampler, n_sweeps, step, layout, dtype, threads=None):
    w = walkers.copy()
    sweeper = cuda_bec.CudaBosonSweeper(system, w, sampler=sampler, dt=DT, step=step, layout=layout, dtype=dtype,
                                        threads_per_block=threads)
    energies = np.empty((n_sweeps, w.n_walkers))
    accepted = np.zeros((n_sweeps, w.n_walkers), dtype=np.int64)
    for s in range(n_sweeps):
        energies[s] = sweeper.sweep(1)[0][0]
        accepted[s] = sweeper.last_accepted
    sweeper.to_host(recompute_caches=False)
    return w, energies, accepted, sweeper


def correctness(cases, W, n_sweeps, budget, results):
    log(f"\n## (b) GPU vs CPU twin: W = {W}, {n_sweeps} sweeps, B4-like (λ = √8, a = {A_CORE}, α = {ALPHA}), Δt = {DT}")
    cpu_cache = {}
    for n, sampler, layout, dtype in cases:
        if budget.left() < 20:
            results.append({"case": [n, sampler, layout, dtype], "skipped": "budget"})
            continue
        row = {"N": n, "W": W, "sampler": sampler, "layout": layout, "dtype": dtype, "sweeps": n_sweeps}
        try:
            system = system_for(n)
            walkers = walkers_for(system, W, seed=2024 + n, pool_size=W)
            step = 1.0 / math.sqrt(n)
            t0 = time.perf_counter()
            if (n, sampler) not in cpu_cache:
                cpu_cache[n, sampler] = cpu_twin(system, walkers, sampler, n_sweeps, step)
            wc, ec, ac = cpu_cache[n, sampler]
            wg, eg, ag, sweeper = gpu_twin(system, walkers, sampler, n_sweeps, step, layout, np.dtype(dtype))
            dpos_w = np.abs(wg.positions - wc.positions).max(axis=(1, 2))
            tol = 1e-6 if dtype == "float64" else 1e-3
            row.update({
                "threads": sweeper.threads,
                "max_abs_dE": float(np.abs(eg - ec).max()),
                "max_rel_dE": float((np.abs(eg - ec) / np.abs(ec)).max()),
                "median_rel_dE": float(np.median(np.abs(eg - ec) / np.abs(ec))),
                "max_abs_dpos": float(dpos_w.max()),
                "median_abs_dpos": float(np.median(dpos_w)),
                "accept_count_mismatches": int(np.abs(ag - ac).sum()),
                "walkers_diverged": int((dpos_w > tol).sum()),
                "rng_streams_equal": bool(np.array_equal(wg.rng_states, wc.rng_states)),
                "acceptance": float(ag.sum() / (n_sweeps * W * n)),
                "seconds": round(time.perf_counter() - t0, 2),
            })
            log(f"N={n:4d} {sampler:5s} {layout:6s} {dtype:7s} B={sweeper.threads:3d}: max|ΔE| {row['max_abs_dE']:.2e} "
                f"(rel {row['max_rel_dE']:.1e}, median {row['median_rel_dE']:.1e}), max|Δr| {row['max_abs_dpos']:.2e}, "
                f"accept-count mismatches {row['accept_count_mismatches']}, diverged walkers {row['walkers_diverged']}, "
                f"streams equal {row['rng_streams_equal']}, acc {row['acceptance']:.3f}")
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"{type(exc).__name__}: {exc}"
            log(f"N={n} {sampler} {layout} {dtype}: FAILED {row['error']}")
            traceback.print_exc()
        results.append(row)


def zero_variance(n, W, dtypes, budget, results):
    """ψ_T exact (a = 0, α = ½): every local energy is N(2 + λ)/2."""
    exact = (2 + LAM) / 2
    for dtype in dtypes:
        for layout in ("thread", "block"):
            if budget.left() < 15:
                continue
            row = {"check": "zero-variance", "N": n, "W": W, "layout": layout, "dtype": dtype}
            try:
                system = system_for(n, a=0.0, alpha=0.5)
                walkers = walkers_for(system, W, seed=7, pool_size=W)
                sweeper = cuda_bec.CudaBosonSweeper(system, walkers, dt=0.05, layout=layout, dtype=np.dtype(dtype))
                energies, acc = sweeper.sweep(3)
                row["max_abs_dE_per_particle"] = float(np.abs(energies / n - exact).max())
                row["acceptance"] = float(acc)
                log(f"zero variance N={n} {layout:6s} {dtype}: max |E_L/N − (2+λ)/2| = {row['max_abs_dE_per_particle']:.2e}")
            except Exception as exc:  # noqa: BLE001
                row["error"] = f"{type(exc).__name__}: {exc}"
                log(f"zero variance {layout} {dtype}: FAILED {row['error']}")
                traceback.print_exc()
            results.append(row)


# --------------------------------------------------------------------------------------------
# (c) GPU timing
# --------------------------------------------------------------------------------------------
def time_gpu(cuda, n, W, layout, dtype, threads, reps, target_s, budget, case_budget, peak, pool_size,
             max_energy_bytes=256 * 2**20, warm_sweeps=5):
    row = {"N": n, "W": W, "layout": layout, "dtype": dtype, "sampler": "drift"}
    t_case = time.perf_counter()
    system = system_for(n)
    walkers = walkers_for(system, W, seed=99 + n, pool_size=pool_size)
    sweeper = cuda_bec.CudaBosonSweeper(system, walkers, sampler="drift", dt=DT, layout=layout, dtype=np.dtype(dtype),
                                        threads_per_block=threads)
    row["threads"] = sweeper.threads
    row["shared_bytes"] = sweeper.shared_bytes
    simulated = cuda_bec.simulated()

    def timed(n_sweeps):
        if simulated:  # events carry no time in the simulator
            t0 = time.perf_counter()
            sweeper.launch(n_sweeps)
            cuda.synchronize()
            return time.perf_counter() - t0
        start, end = cuda.event(), cuda.event()
        start.record()
        sweeper.launch(n_sweeps)
        end.record()
        end.synchronize()
        return cuda.event_elapsed_time(start, end) / 1e3

    t0 = time.perf_counter()
    sweeper.launch(1)  # compiles on first use
    cuda.synchronize()
    row["first_launch_s"] = round(time.perf_counter() - t0, 3)
    t1 = timed(1)
    per_sweep = max(t1, 1e-6)
    # equilibrate a little (and warm up), within a tenth of the case budget
    n_warm = int(min(warm_sweeps, max(1, 0.1 * case_budget / per_sweep)))
    per_sweep = max(timed(n_warm) / n_warm, 1e-7)
    row_bytes = W * np.dtype(dtype).itemsize
    n_max = max(1, int(max_energy_bytes // row_bytes))
    n_sweeps = int(min(n_max, max(1, round(target_s / per_sweep))))
    # keep within the case budget: reps + 1 timings
    n_sweeps = int(max(1, min(n_sweeps, (case_budget - (time.perf_counter() - t_case)) / ((reps + 1) * per_sweep))))
    times = []
    for _ in range(reps):
        if budget.left() < 2:
            break
        times.append(timed(n_sweeps))
    energies = sweeper.launch(1).copy_to_host()[0]
    acc_counts = sweeper._accepted.copy_to_host()
    acceptance = float(acc_counts.sum() / (W * n))
    times = np.array(times)
    med = float(np.median(times))
    cycles = W * n_sweeps / med
    flops = cycles * flops_per_cycle(n, layout, acceptance)
    peak_tf = peak["peak_fp64_tflops"] if dtype == "float64" else peak["peak_fp32_tflops"]
    row.update({
        "sweeps_per_timing": n_sweeps, "times_s": [float(t) for t in times], "median_s": med,
        "min_s": float(times.min()), "max_s": float(times.max()),
        "cycles_per_s": cycles, "pair_evals_per_s": cycles * pairs_per_cycle(n),
        "model_flops_per_s": flops, "peak_tflops": peak_tf, "fraction_of_peak": flops / (peak_tf * 1e12),
        "acceptance": acceptance, "E_per_N": float(np.mean(energies) / n),
        # thread layout: coordinates of the other particle, read from global memory per pair (3 per moved pair,
        # 3 per ordered E_L pair); the block layout reads them from shared memory
        "global_bytes_requested_per_s": (cycles * 6 * n * (n - 1) * np.dtype(dtype).itemsize
                                         if layout == "thread" else None),
        "case_seconds": round(time.perf_counter() - t_case, 2),
    })
    try:
        kernel = cuda_bec.kernels(dtype)[sweeper.layout]
        row["registers"] = int(list(kernel.get_regs_per_thread().values())[0]) if not simulated else None
    except Exception:  # noqa: BLE001
        row["registers"] = None
    return row


def gpu_timings(cuda, plan, reps, target_s, budget, case_budget, peak, results, label="main"):
    for n, W, layout, dtype, threads, pool in plan:
        if budget.left() < case_budget + 5:
            results.append({"N": n, "W": W, "layout": layout, "dtype": dtype, "skipped": "budget", "set": label})
            log(f"[{label}] N={n} W={W} {layout} {dtype}: skipped (budget)")
            continue
        try:
            row = time_gpu(cuda, n, W, layout, dtype, threads, reps, target_s, budget, case_budget, peak, pool)
            row["set"] = label
            log(f"[{label}] N={n:4d} W={W:6d} {layout:6s} {dtype:7s} B={row['threads']:3d} regs={row['registers']}: "
                f"{row['cycles_per_s']:.3e} cycles/s, {row['pair_evals_per_s']:.3e} pairs/s, "
                f"{row['model_flops_per_s'] / 1e9:.0f} GFLOP/s = {100 * row['fraction_of_peak']:.1f}% of "
                f"{row['peak_tflops']:.1f} TF, global loads requested "
                f"{fmt(row['global_bytes_requested_per_s'] and row['global_bytes_requested_per_s'] / 1e12, '.2f')} TB/s, "
                f"median {1e3 * row['median_s']:.1f} ms × {len(row['times_s'])} "
                f"({row['sweeps_per_timing']} sweeps), acc {row['acceptance']:.3f}, E/N {row['E_per_N']:.3f}, "
                f"first launch {row['first_launch_s']} s")
        except Exception as exc:  # noqa: BLE001
            row = {"N": n, "W": W, "layout": layout, "dtype": dtype, "set": label, "error": f"{type(exc).__name__}: {exc}"}
            log(f"[{label}] N={n} W={W} {layout} {dtype}: FAILED {row['error']}")
            traceback.print_exc()
        results.append(row)


# --------------------------------------------------------------------------------------------
# (d) CPU timing
# --------------------------------------------------------------------------------------------
def time_cpu(n, W, threads, reps, target_s, case_budget, pool_size):
    numba.set_num_threads(threads)
    system = system_for(n)
    walkers = walkers_for(system, W, seed=5 + n, pool_size=pool_size)
    t_case = time.perf_counter()
    vmc = VMC(system, walkers, sampler="drift", dt=DT)
    vmc.sweep(1)  # compile (disk-cached after the first run)
    n_cal, t_cal = 1, 0.0
    while True:  # calibrate: grow the sweep count until a call takes ≥ 1/8 of the target
        t0 = time.perf_counter()
        vmc.sweep(n_cal)
        t_cal = time.perf_counter() - t0
        if t_cal >= target_s / 8 or time.perf_counter() - t_case > case_budget / 3:
            break
        n_cal *= 4
    per_sweep = max(t_cal / n_cal, 1e-7)
    n_sweeps = int(max(1, min(round(target_s / per_sweep),
                              (case_budget - (time.perf_counter() - t_case)) / ((reps + 0.5) * per_sweep))))
    times, acc, energies = [], 0.0, None
    for _ in range(reps):
        t0 = time.perf_counter()
        energies, acc = vmc.sweep(n_sweeps)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    cycles = W * n_sweeps / med
    return {"N": n, "W": W, "threads": threads, "sweeps_per_timing": n_sweeps, "times_s": times, "median_s": med,
            "min_s": float(min(times)), "max_s": float(max(times)), "cycles_per_s": cycles,
            "pair_evals_per_s": cycles * pairs_per_cycle(n), "acceptance": float(acc),
            "E_per_N": float(np.mean(energies) / n)}


def cpu_timings(plan, reps, target_s, budget, case_budget, results):
    all_threads = numba.config.NUMBA_NUM_THREADS
    for n, W_par, W_one, pool in plan:
        for threads, W in ((all_threads, W_par), (1, W_one)):
            if budget.left() < case_budget + 5:
                results.append({"N": n, "W": W, "threads": threads, "skipped": "budget"})
                log(f"[cpu] N={n} threads={threads}: skipped (budget)")
                continue
            try:
                row = time_cpu(n, W, threads, reps, target_s, case_budget, pool)
                log(f"[cpu] N={n:4d} W={W:5d} threads={threads:3d}: {row['cycles_per_s']:.3e} cycles/s, "
                    f"{row['pair_evals_per_s']:.3e} pairs/s, median {1e3 * row['median_s']:.1f} ms "
                    f"({row['sweeps_per_timing']} sweeps), acc {row['acceptance']:.3f}, E/N {row['E_per_N']:.3f}")
            except Exception as exc:  # noqa: BLE001
                row = {"N": n, "W": W, "threads": threads, "error": f"{type(exc).__name__}: {exc}"}
                log(f"[cpu] N={n} threads={threads}: FAILED {row['error']}")
                traceback.print_exc()
            results.append(row)
    numba.set_num_threads(all_threads)


# --------------------------------------------------------------------------------------------
# (f) report
# --------------------------------------------------------------------------------------------
def fmt(x, spec=".3e"):
    return "–" if x is None else format(x, spec)


def markdown(report):
    dev, cpu = report["device"], report["cpu"]
    lines = [f"# GPU VMC sweep, trapped bosons — {report['date']} on {report['host']}", "",
             f"- GPU: {dev.get('name')} (cc {dev.get('compute_capability')}, {dev.get('sms')} SMs, "
             f"{dev.get('clock_khz')} kHz, {dev.get('memory_gib')} GiB); simulated: {dev.get('simulated')}",
             f"- CPU: {cpu['model']}, {cpu['cores']} logical cores, numba threads {cpu['numba_threads']}",
             f"- versions: {report['versions']}",
             f"- command: `{report['command']}`; total {report['wall_s']:.0f} s",
             f"- system: B4-like λ = √8, a = {A_CORE}, α = {ALPHA}; drift sampler Δt = {DT}, drift cap on; "
             "measure=True (one cycle = N moves + one E_L per walker)",
             f"- peak (stated roofline): FP64 {dev['peak_fp64_tflops']:.1f} TFLOP/s, FP32 {dev['peak_fp32_tflops']:.1f} "
             f"TFLOP/s ({dev.get('peak_source', '')}); flop model per moved pair: thread "
             f"{FLOPS_MOVE_THREAD}, block {FLOPS_MOVE_BLOCK} + {FLOPS_ACCEPT_BLOCK}·acc; per E_L pair {FLOPS_ENERGY_PAIR} "
             "(sqrt, div = 1 flop); loads TB/s (thread layout only) = global-memory coordinate loads the kernel "
             f"requests (6·N(N−1)·sizeof per cycle; mostly served by L1/L2), against HBM {dev['peak_hbm_tb_s']:.2f} TB/s",
             "",
             "## Correctness (GPU vs CPU twin, same walkers and RNG streams)", "",
             "| N | W | sampler | layout | dtype | B | max abs ΔE_L | max rel ΔE_L | max abs Δr | accept-count mismatches | "
             "diverged walkers | streams equal |",
             "|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in report["correctness"]:
        if "max_abs_dE" in r:
            lines.append(f"| {r['N']} | {r['W']} | {r['sampler']} | {r['layout']} | {r['dtype']} | {r['threads']} | "
                         f"{r['max_abs_dE']:.2e} | {r['max_rel_dE']:.1e} | {r['max_abs_dpos']:.2e} | "
                         f"{r['accept_count_mismatches']} | {r['walkers_diverged']} | {r['rng_streams_equal']} |")
        else:
            lines.append(f"| {r.get('N')} | {r.get('W')} | {r.get('sampler')} | {r.get('layout')} | {r.get('dtype')} | "
                         f"| {r.get('error') or r.get('skipped')} | | | | | |")
    for r in report["zero_variance"]:
        lines.append(f"\nZero variance (a = 0, α = ½) N = {r['N']} {r['layout']} {r['dtype']}: max |E_L/N − (2+λ)/2| = "
                     f"{fmt(r.get('max_abs_dE_per_particle'), '.2e')} {r.get('error', '')}")
    cpu_best = {}
    for r in report["cpu"]["timings"]:
        if "cycles_per_s" in r:
            cpu_best[(r["N"], r["threads"] == 1)] = r["cycles_per_s"]
    lines += ["", "## Throughput (GPU, drift sampler)", "",
              "| N | W | layout | dtype | B | regs | median ms (min–max) | cycles/s | pair evals/s | model GFLOP/s | "
              "% of peak | loads TB/s | GPU/CPU all cores | GPU/CPU 1 thread | acc | E/N |",
              "|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["gpu"]:
        if "cycles_per_s" not in r:
            lines.append(f"| {r['N']} | {r['W']} | {r['layout']} | {r['dtype']} | | | {r.get('error') or r.get('skipped')} "
                         f"| | | | | | | | | |")
            continue
        par = cpu_best.get((r["N"], False))
        one = cpu_best.get((r["N"], True))
        lines.append(f"| {r['N']} | {r['W']} | {r['layout']}{'' if r['set'] == 'main' else ' (' + r['set'] + ')'} | "
                     f"{r['dtype']} | {r['threads']} | {r.get('registers') or '–'} | {1e3 * r['median_s']:.2f} "
                     f"({1e3 * r['min_s']:.2f}–{1e3 * r['max_s']:.2f}) | {r['cycles_per_s']:.3e} | "
                     f"{r['pair_evals_per_s']:.3e} | {r['model_flops_per_s'] / 1e9:.0f} | "
                     f"{100 * r['fraction_of_peak']:.1f} | "
                     f"{fmt(r.get('global_bytes_requested_per_s') and r['global_bytes_requested_per_s'] / 1e12, '.2f')} | "
                     f"{fmt(par and r['cycles_per_s'] / par, '.1f')} | "
                     f"{fmt(one and r['cycles_per_s'] / one, '.0f')} | {r['acceptance']:.3f} | {r['E_per_N']:.3f} |")
    lines += ["", "Best GPU figure per N and dtype against the CPU backend (float64) of this machine:", ""]
    for n in sorted({r["N"] for r in report["gpu"]}):
        for dtype in ("float64", "float32"):
            rows = [r for r in report["gpu"] if r["N"] == n and r["dtype"] == dtype and "cycles_per_s" in r]
            if not rows:
                continue
            best = max(rows, key=lambda r: r["cycles_per_s"])
            par, one = cpu_best.get((n, False)), cpu_best.get((n, True))
            lines.append(f"- N = {n}, {dtype}: {best['cycles_per_s']:.3e} cycles/s ({best['layout']}, W = {best['W']}, "
                         f"B = {best['threads']}) = {fmt(par and best['cycles_per_s'] / par, '.1f')}× the CPU on all "
                         f"cores, {fmt(one and best['cycles_per_s'] / one, '.0f')}× one CPU thread; "
                         f"{100 * best['fraction_of_peak']:.1f}% of the stated {dtype[5:]}-bit peak")
    lines += ["", "## CPU backend (numba, float64, same process)", "",
              "| N | W | threads | median ms (min–max) | sweeps/timing | cycles/s | pair evals/s | acc | E/N |",
              "|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in report["cpu"]["timings"]:
        if "cycles_per_s" in r:
            lines.append(f"| {r['N']} | {r['W']} | {r['threads']} | {1e3 * r['median_s']:.1f} ({1e3 * r['min_s']:.1f}–"
                         f"{1e3 * r['max_s']:.1f}) | {r['sweeps_per_timing']} | {r['cycles_per_s']:.3e} | "
                         f"{r['pair_evals_per_s']:.3e} | {r['acceptance']:.3f} | {r['E_per_N']:.3f} |")
        else:
            lines.append(f"| {r['N']} | {r['W']} | {r['threads']} | {r.get('error') or r.get('skipped')} | | | | | |")
    lines += ["", "Definitions: cycles/s = W·sweeps/t (one cycle = N single-particle moves + one local energy); "
              "pair evals/cycle = N(N−1) + N(N−1)/2; model GFLOP/s = cycles/s × flop model (see header); GPU time "
              "from CUDA events around one kernel launch of `sweeps/timing` sweeps (no host transfers), median of "
              f"{report['reps']}; CPU time = wall clock of VMC.sweep (median of {report['reps']}). GPU/CPU ratios use "
              "the CPU figure of the same N (float64) for both GPU dtypes."]
    lines += ["", "## Study 002's figures (historical hardware, for orientation only)", "",
              "Nikolaisen 2011, Tables 7.4/7.5 and §7.5 (10³ MC cycles/s, double precision unless stated): "
              "N = 20: MontePython reference (Opteron 2218, 1 core) 0.67; OpenCL CPU (Phenom II 1090T, 6 cores) "
              "25.9; OpenCL GPU (Radeon HD 5870) 121 (200 double / 307 float in Table 7.5, doubt D7). "
              "N = 100: CPU 0.524, GPU 4.2. This run's best N = 20 GPU figure is "
              f"{fmt(_best(report, 20) / 121e3, '.0f')}× the thesis's 121 × 10³."]
    return "\n".join(lines) + "\n"


def _best(report, n):
    rates = [r["cycles_per_s"] for r in report["gpu"] if r.get("N") == n and "cycles_per_s" in r]
    return max(rates) if rates else float("nan")


# --------------------------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test, e.g. under the simulator)")
    parser.add_argument("--budget", type=float, default=None, help="total seconds (default 330, quick 100)")
    parser.add_argument("--out", default=None, help="output folder (default $OUT, else ./gpu_out)")
    args = parser.parse_args(argv)
    budget = Budget(args.budget if args.budget else (100 if args.quick else 330))
    from numba import cuda

    out_dir = Path(args.out or os.environ.get("OUT") or "gpu_out")
    report = {"date": datetime.date.today().isoformat(), "host": socket.gethostname(),
              "command": "python " + " ".join([Path(sys.argv[0]).name] + sys.argv[1:]) if argv is None else str(argv),
              "versions": f"Python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}"}
    try:
        import importlib.metadata as md

        report["versions"] += f", numba-cuda {md.version('numba-cuda')}"
    except Exception:  # noqa: BLE001
        pass
    dev = device_info(cuda)
    report["device"] = dev
    report["cpu"] = cpu_info()
    log(f"# device: {dev.get('name')}  cc={dev.get('compute_capability')} SMs={dev.get('sms')} "
        f"clock={dev.get('clock_khz')} kHz mem={dev.get('memory_gib')} GiB simulated={dev['simulated']}")
    log(f"# cpu: {report['cpu']}")
    log(f"# {report['versions']}; cuda_bec.available() = {cuda_bec.available()}")
    if not dev["simulated"] and not cuda_bec.available():
        log("# WARNING: no usable GPU; the GPU parts will fail and be reported as errors")

    quick = args.quick
    stem = f"bec_throughput_{'quick_' if quick else ''}{report['host']}_{report['date']}"
    report["reps"] = 2 if quick else 5
    reps = 2 if quick else 5
    target_s = 0.02 if quick else 0.25
    # (b) correctness
    report["correctness"], report["zero_variance"] = [], []
    if quick:
        corr = [(5, "drift", "thread", "float64"), (5, "drift", "block", "float64"), (5, "brute", "thread", "float64"),
                (5, "drift", "thread", "float32"), (5, "drift", "block", "float32")]
        correctness(corr, 4, 2, budget, report["correctness"])
        zero_variance(4, 3, ["float64"], budget, report["zero_variance"])
    else:
        corr = [(n, "drift", layout, dtype) for n in (10, 100) for layout in ("thread", "block")
                for dtype in ("float64", "float32")]
        corr += [(10, "brute", layout, "float64") for layout in ("thread", "block")]
        correctness(corr, 64, 3, budget, report["correctness"])
        zero_variance(20, 256, ["float64", "float32"], budget, report["zero_variance"])
    log(f"# correctness done at {budget.elapsed():.0f} s")
    save(report, out_dir, stem)

    # (c) GPU timings: (N, W, layout, dtype, threads, pool)
    if quick:
        plan = [(4, 8, "thread", dt, 4, 8) for dt in ("float64", "float32")]
        plan += [(6, 2, "block", dt, 4, 2) for dt in ("float64", "float32")]
        case_budget = 6
    else:
        plan = []
        for dtype in ("float64", "float32"):
            plan += [(20, 1 << 16, "thread", dtype, 128, 512), (20, 1 << 14, "block", dtype, None, 512),
                     (100, 1 << 15, "thread", dtype, 128, 128), (100, 1 << 14, "block", dtype, None, 128),
                     (500, 1 << 13, "thread", dtype, 64, 16), (500, 1 << 13, "block", dtype, None, 16)]
        case_budget = 12
    report["gpu"] = []
    gpu_timings(cuda, plan, reps, target_s, budget, case_budget, dev, report["gpu"])
    log(f"# GPU timings done at {budget.elapsed():.0f} s")
    save(report, out_dir, stem)

    # (d) CPU timings: (N, W all cores, W one thread, pool)
    cpu_plan = [(4, 16, 4, 8), (6, 8, 2, 2)] if quick else [(20, 4096, 256, 512), (100, 1024, 64, 128),
                                                          (500, 128, 16, 16)]
    report["cpu"]["timings"] = []
    cpu_timings(cpu_plan, reps, 0.05 if quick else 0.3, budget, 6 if quick else 14, report["cpu"]["timings"])
    log(f"# CPU timings done at {budget.elapsed():.0f} s")
    save(report, out_dir, stem)

    # (+) scans, as long as the budget lasts
    if not quick:
        scan = [(20, W, "thread", "float64", 128, 512) for W in (1 << 10, 1 << 12, 1 << 14, 1 << 17)]
        scan += [(20, 1 << 16, "thread", "float64", tpb, 512) for tpb in (64, 256)]
        scan += [(100, 1 << 14, "block", "float64", B, 128) for B in (32, 128)]
        scan += [(500, 1 << 13, "block", "float64", B, 16) for B in (64, 256)]
        scan += [(20, 1 << 17, "thread", "float32", 128, 512)]
        gpu_timings(cuda, scan, reps, 0.15, budget, 8, dev, report["gpu"], label="scan")
    report["wall_s"] = budget.elapsed()
    save(report, out_dir, stem)
    try:
        md_text = markdown(report)
    except Exception:  # noqa: BLE001 - the JSON is written already
        traceback.print_exc()
        return 1
    log("\n" + md_text)
    try:
        (out_dir / f"{stem}.md").write_text(md_text)
        log(f"# wrote {out_dir / stem}.md and .json")
    except OSError as exc:
        log(f"# could not write {out_dir / stem}.md: {exc}")
    return 0


def save(report, out_dir, stem):
    """Write the JSON so far (after every stage: a crash or a time-out keeps what was measured)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str))
    except OSError as exc:
        log(f"# could not write {out_dir / stem}.json: {exc}")


if __name__ == "__main__":
    sys.exit(main())
