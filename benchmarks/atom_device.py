#!/usr/bin/env python
"""Atoms He, Be, Ne on the GPU (qmckit.backends.cuda_atom, one thread per walker, float64): twin
check on the device, throughput against the CPU backend in the same run, and VMC energies.

One run on a lent GPU machine, < 4 minutes on an H100 (every stage has a time budget and is
skipped, not truncated, when the budget is spent; every case catches its own exceptions and the
JSON is rewritten after every stage):

  (a) equilibrated starting pools on the CPU backend (all cores; also compiles the CPU kernels);
  (b) twin check: the same walkers and RNG states through the CPU driver (qmckit.methods.vmc.VMC)
      and the GPU sweeper, W = 64, 3 sweeps, He/Be/Ne, VMC and fixed node (Atom.for_dmc()):
      max |ΔE_L|, max |Δr|, accept-count mismatches (per sweep and walker), diverged walkers,
      equal RNG streams, the incremental caches (Sherman–Morrison inverses, orbital and Jastrow
      gradients) after 3 sweeps without measuring, device local energies; plus 10 fixed-node DMC
      steps of Be with CudaVMC as DMC's driver against the CPU DMC (populations, mixed energies);
  (c) GPU throughput, drift sampler, measure=True (one MC cycle = one walker doing N
      single-electron moves + one local energy): W = 2^10 … 2^16 per atom; sweeps per timing
      calibrated to ≈ 0.15 s; median of 5 timings with CUDA events around one launch;
  (d) the CPU backend (numba, parallel over walkers) in the same process: all cores and one
      thread (numba.set_num_threads(1)), at smaller W; GPU/CPU ratios;
  (e) a VMC energy per atom on the GPU through RunConfig/make_run (backend "cuda"), 16384
      walkers × 500 sweeps after 200 of equilibration (scaled down if the measured throughput
      says it would not fit), next to study 002's Table 7.1, Sandsdalen's and the exact energies;
  (f) a markdown table on stdout and in $OUT/atom_gpu_<date>.md, the raw numbers in .json.

Usage
  python benchmarks/atom_device.py                       # full run on a GPU
  NUMBA_ENABLE_CUDASIM=1 python benchmarks/atom_device.py --quick   # smoke test without a GPU
  python benchmarks/atom_device.py --budget 200          # total budget in seconds (default 225)

Definitions
  cycles/s       W · sweeps / t (one cycle = N single-electron moves + one local energy)
  moves/s        cycles/s · N (walker-moves: single-electron proposals per second)
  flop model     counted by hand from the kernels (sqrt, exp, log, division = 1 flop each, an FMA = 2):
                 per move: gradient 6n+3, drift caps 16, Box–Muller and proposal 39, orbitals at the
                 proposal (:func:`orbital_flops`), ratio and new gradient 8n+3, Jastrow 40 per other
                 electron, acceptance 20; on acceptance Sherman–Morrison 4n²+3n and Jastrow-gradient
                 update 24 per other electron; per local energy: cache rebuild (N orbitals, two
                 Gauss–Jordan inversions 4n³, 22 per pair) and the energy (N orbitals with
                 Laplacians, 10n+25 per electron, 18 per pair). Indicative only: the exp/sqrt/div
                 sequences take many instructions on the GPU, so the fraction understates how busy
                 the FP64 units are.
  peak           SMs × boost clock × 128 flop/clk (FP64, non-tensor FMA), from the device's attributes.
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
for path in (str(REPO), str(REPO / "benchmarks")):
    if path not in sys.path:
        sys.path.insert(0, path)

import numba  # noqa: E402

from atoms_throughput import time_gpu_case  # noqa: E402
from bec_throughput import Budget, cpu_info, device_info  # noqa: E402
from qmckit.backends import cuda_atom  # noqa: E402
from qmckit.methods.vmc import VMC  # noqa: E402
from qmckit.systems.atom import REFERENCE_ENERGIES, Atom, cache_views  # noqa: E402
from qmckit.walkers import Walkers  # noqa: E402
from _common import log  # noqa: E402

warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)  # simulator uint64
warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")  # numba's under-utilisation hint, small cases

ELEMENTS = ("He", "Be", "Ne")
DT = {"He": 0.05, "Be": 0.02, "Ne": 0.01}  # drift time steps (exact MH: no time-step bias in VMC)
# study 002, Table 7.3 (10³ MC cycles/s; HD 5870 GPU vs one Phenom II core running the C++ reference)
THESIS_KMCS = {"He": (15553, 230), "Be": (4056, 33), "Ne": (466, 2.6)}


def fmt(x, spec):
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def orbital_flops(n, lap):
    f = 8 + 6 + (3 if lap else 0)  # r, 1/r; 1s value and gradient (+ Laplacian)
    if n > 1:
        f += 14 + 4 + (6 if lap else 0) + (n - 2) * (8 + (2 if lap else 0))
    return f


def flops_per_cycle(N, acceptance):
    n = N // 2
    move = (6 * n + 3) + 16 + 39 + orbital_flops(n, False) + (8 * n + 3) + 40 * (N - 1) + 20
    move += acceptance * (4 * n * n + 3 * n + 24 * (N - 1))
    pairs = N * (N - 1) / 2
    energy = N * orbital_flops(n, False) + 2 * 4 * n ** 3 + 22 * pairs
    energy += N * (orbital_flops(n, True) + 10 * n + 25) + 18 * pairs
    return N * move + energy


def core(cache_rows, N):
    """T, DPHI and JG of every cache row (the part of the cache that persists between moves)."""
    return np.array([np.concatenate([v.ravel() for v in cache_views(row, N)[:3]]) for row in cache_rows])


# --------------------------------------------------------------------------------------------
# (a) pools
# --------------------------------------------------------------------------------------------
def make_pools(size, sweeps, budget, report):
    pools = {}
    for el in ELEMENTS:
        t0 = time.perf_counter()
        system = Atom(element=el)
        walkers = Walkers.from_positions(system.initial_positions(size, np.random.default_rng(1000 + system.z)),
                                         77 + system.z, system.cache_size())
        try:
            vmc = VMC(system, walkers, dt=DT[el])
            _, acc = vmc.sweep(sweeps, measure=False)
            report["pools"][el] = {"size": size, "sweeps": sweeps, "acceptance": float(acc),
                                   "seconds": round(time.perf_counter() - t0, 2)}
            log(f"[pool] {el}: {size} walkers × {sweeps} sweeps on the CPU, acceptance {acc:.3f}, "
                f"{time.perf_counter() - t0:.1f} s (includes compiling the CPU kernels the first time)")
        except Exception as exc:  # noqa: BLE001
            report["pools"][el] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"[pool] {el}: FAILED {exc!r} (using the crude starting positions)")
            traceback.print_exc()
        pools[el] = walkers.positions.copy()
    return pools


def walkers_from(pool, W, seed, cache_size, fast_streams=False):
    """W walkers tiled from ``pool``; ``fast_streams``: raw 64-bit seeds from one generator instead of
    qmckit's SeedSequence per walker (which takes seconds for 2^16 walkers; fine for timing)."""
    positions = pool[np.arange(W) % len(pool)]
    if not fast_streams:
        return Walkers.from_positions(positions, seed, cache_size)
    states = np.random.default_rng(seed).bit_generator.random_raw(size=(W, 2)).astype(np.uint64)
    states[:, 0] |= np.uint64(1)  # never the all-zero state
    return Walkers(np.ascontiguousarray(positions), np.zeros((W, cache_size)), np.ones(W), states)


# --------------------------------------------------------------------------------------------
# (b) twin check
# --------------------------------------------------------------------------------------------
def twin_vmc(el, fixed_node, pool, W, n_sweeps):
    system = Atom(element=el)
    if fixed_node:
        system = system.for_dmc()
    N = system.n_particles
    walkers = walkers_from(pool, W, 500 + system.z + 7 * fixed_node, system.cache_size())
    # CPU, one measured sweep at a time
    wc = walkers.copy()
    vmc = VMC(system, wc, dt=DT[el])
    ec = np.empty((n_sweeps, W))
    ac = np.zeros((n_sweeps, W), dtype=np.int64)
    for s in range(n_sweeps):
        before = wc.positions.copy()
        ec[s] = vmc.sweep(1)[0][0]
        ac[s] = np.any(wc.positions != before, axis=2).sum(axis=1)
    # GPU, the same
    wg = walkers.copy()
    sweeper = cuda_atom.CudaAtomSweeper(system, wg, dt=DT[el])
    eg = np.empty((n_sweeps, W))
    ag = np.zeros((n_sweeps, W), dtype=np.int64)
    for s in range(n_sweeps):
        eg[s] = sweeper.sweep(1)[0][0]
        ag[s] = sweeper.last_accepted
    sweeper.to_host(recompute_caches=False)
    dpos_w = np.abs(wg.positions - wc.positions).max(axis=(1, 2))
    # incremental caches: n_sweeps without measuring from freshly built caches, on both sides
    wc2 = walkers.copy()
    VMC(system, wc2, dt=DT[el]).sweep(n_sweeps, measure=False)
    wg2 = walkers.copy()
    s2 = cuda_atom.CudaAtomSweeper(system, wg2, dt=DT[el])
    s2.sweep(n_sweeps, measure=False)
    gpu_cache = core(s2.caches_to_host(), N)
    s2.to_host(recompute_caches=False)
    cpu_cache = core(wc2.caches, N)
    cache_dev = np.abs(gpu_cache - cpu_cache) / np.maximum(1.0, np.abs(cpu_cache))
    # device local energies at the pool configurations
    w3 = walkers.copy()
    e_dev = cuda_atom.CudaAtomSweeper(system, w3, dt=DT[el]).local_energies()
    e_host = VMC(system, walkers.copy(), dt=DT[el]).local_energies()
    return {
        "element": el, "fixed_node": fixed_node, "W": W, "sweeps": n_sweeps, "dt": DT[el],
        "max_abs_dE": float(np.abs(eg - ec).max()),
        "max_rel_dE": float((np.abs(eg - ec) / np.abs(ec)).max()),
        "max_abs_dpos": float(dpos_w.max()),
        "median_abs_dpos": float(np.median(dpos_w)),
        "accept_count_mismatches": int(np.abs(ag - ac).sum()),
        "walkers_diverged": int((dpos_w > 1e-6).sum()),
        "rng_streams_equal": bool(np.array_equal(wg.rng_states, wc.rng_states)),
        "acceptance": float(ag.sum() / (n_sweeps * W * N)),
        "no_measure_max_rel_dcache": float(cache_dev.max()),
        "no_measure_max_abs_dpos": float(np.abs(wg2.positions - wc2.positions).max()),
        "local_energy_max_abs_dE": float(np.abs(e_dev - e_host).max()),
    }


def twin_dmc(pool, W, steps):
    from qmckit.samplers.cuda import CudaSampler as CudaVMC
    from qmckit.methods.dmc import DMC

    system = Atom(element="Be")
    dt = 0.01

    def make(gpu):
        walkers = walkers_from(pool, W, 31, 0 if gpu else system.cache_size())
        driver = CudaVMC(system.for_dmc(), walkers, sampler="drift", dt=dt) if gpu else None
        return DMC(system, walkers, dt=dt, driver=driver, seed=5)

    gpu, cpu = make(True), make(False)
    mismatched_steps, d_mixed, branched = 0, 0.0, 0
    for _ in range(steps):
        rg, rc = gpu.step(), cpu.step()
        mismatched_steps += (rg.population, rg.killed, rg.copied) != (rc.population, rc.killed, rc.copied)
        d_mixed = max(d_mixed, abs(rg.mixed_energy - rc.mixed_energy))
        branched += rc.killed + rc.copied
    gpu.driver.sync()
    same_shape = gpu.walkers.positions.shape == cpu.walkers.positions.shape
    return {"element": "Be", "fixed_node": True, "W": W, "steps": steps, "dt": dt, "branching_events": branched,
            "mismatched_steps": int(mismatched_steps), "max_abs_d_mixed_energy": float(d_mixed),
            "max_abs_dpos": float(np.abs(gpu.walkers.positions - cpu.walkers.positions).max()) if same_shape else None,
            "rng_streams_equal": bool(same_shape and np.array_equal(gpu.walkers.rng_states, cpu.walkers.rng_states))}


def twin_check(pools, W, n_sweeps, dmc_W, dmc_steps, budget, report):
    log(f"\n## (b) GPU vs CPU twin: W = {W}, {n_sweeps} sweeps, drift sampler, Δt = {DT}")
    for el in ELEMENTS:
        for fixed_node in (False, True):
            if budget.left() < 30:
                report["twin"].append({"element": el, "fixed_node": fixed_node, "skipped": "budget"})
                continue
            t0 = time.perf_counter()
            try:
                row = twin_vmc(el, fixed_node, pools[el], W, n_sweeps)
                row["seconds"] = round(time.perf_counter() - t0, 2)
                log(f"{el} {'fixed-node' if fixed_node else 'VMC       '}: max|ΔE_L| {row['max_abs_dE']:.2e} "
                    f"(rel {row['max_rel_dE']:.1e}), max|Δr| {row['max_abs_dpos']:.2e}, accept-count mismatches "
                    f"{row['accept_count_mismatches']}, diverged walkers {row['walkers_diverged']}, streams equal "
                    f"{row['rng_streams_equal']}, acc {row['acceptance']:.3f}; incremental cache max rel Δ "
                    f"{row['no_measure_max_rel_dcache']:.1e}; device E_L max|Δ| {row['local_energy_max_abs_dE']:.1e}"
                    f" ({row['seconds']} s)")
            except Exception as exc:  # noqa: BLE001
                row = {"element": el, "fixed_node": fixed_node, "error": f"{type(exc).__name__}: {exc}"}
                log(f"{el} fixed_node={fixed_node}: FAILED {row['error']}")
                traceback.print_exc()
            report["twin"].append(row)
    if budget.left() < 30:
        report["twin_dmc"] = {"skipped": "budget"}
        return
    t0 = time.perf_counter()
    try:
        row = twin_dmc(pools["Be"], dmc_W, dmc_steps)
        row["seconds"] = round(time.perf_counter() - t0, 2)
        log(f"DMC Be fixed node, {dmc_W} walkers × {dmc_steps} steps (Δτ = {row['dt']}): branching events "
            f"{row['branching_events']}, steps with different population/killed/copied {row['mismatched_steps']}, "
            f"max|ΔE_mixed| {row['max_abs_d_mixed_energy']:.2e}, max|Δr| {fmt(row['max_abs_dpos'], '.2e')}, "
            f"streams equal {row['rng_streams_equal']} ({row['seconds']} s)")
    except Exception as exc:  # noqa: BLE001
        row = {"error": f"{type(exc).__name__}: {exc}"}
        log(f"DMC twin: FAILED {row['error']}")
        traceback.print_exc()
    report["twin_dmc"] = row


# --------------------------------------------------------------------------------------------
# (c) GPU throughput
# --------------------------------------------------------------------------------------------
def time_gpu(cuda, el, W, pool, reps, target_s, case_budget, peak, max_energy_bytes=256 * 2**20):
    """One GPU throughput case, timed by :func:`atoms_throughput.time_gpu_case` (CUDA events around one
    launch, buffers allocated outside the events), plus this script's flop model and FP64 fraction."""
    row = time_gpu_case(cuda, el, W, None, pool, reps, target_s, case_budget, max_energy_bytes)
    flops = row["cycles_per_s"] * flops_per_cycle(row["N"], row["acceptance"])
    row.update(model_flops_per_s=flops, fraction_of_fp64_peak=flops / (peak["peak_fp64_tflops"] * 1e12))
    return row


def gpu_timings(cuda, pools, sizes, reps, target_s, budget, case_budget, peak, results):
    log(f"\n## (c) GPU throughput (drift, measure=True), median of {reps}")
    for el in ELEMENTS:
        for W in sizes:
            if budget.left() < case_budget + 60:  # keep time for the CPU and the energies
                results.append({"element": el, "W": W, "skipped": "budget"})
                log(f"[gpu] {el} W={W}: skipped (budget)")
                continue
            try:
                row = time_gpu(cuda, el, W, pools[el], reps, target_s, case_budget, peak)
                log(f"[gpu] {el} W={W:6d} B={row['threads']} regs={row['registers']}: {row['cycles_per_s']:.3e} "
                    f"cycles/s, {row['moves_per_s']:.3e} moves/s, {row['model_flops_per_s'] / 1e9:.0f} model GFLOP/s "
                    f"= {100 * row['fraction_of_fp64_peak']:.1f}% FP64 peak, median {1e3 * row['median_s']:.1f} ms × "
                    f"{len(row['times_s'])} ({row['sweeps_per_timing']} sweeps), acc {row['acceptance']:.3f}, "
                    f"<E_L> {row['mean_E_L']:.3f}, first launch {row['first_launch_s']} s")
            except Exception as exc:  # noqa: BLE001
                row = {"element": el, "W": W, "error": f"{type(exc).__name__}: {exc}"}
                log(f"[gpu] {el} W={W}: FAILED {row['error']}")
                traceback.print_exc()
            results.append(row)


# --------------------------------------------------------------------------------------------
# (d) CPU timing
# --------------------------------------------------------------------------------------------
def time_cpu(el, W, threads, pool, reps, target_s, case_budget):
    numba.set_num_threads(threads)
    system = Atom(element=el)
    N = system.n_particles
    t_case = time.perf_counter()
    vmc = VMC(system, walkers_from(pool, W, 700 + W, system.cache_size(), fast_streams=True), dt=DT[el])
    vmc.sweep(1)
    n_cal, t_cal = 1, 0.0
    while True:  # grow the sweep count until a call takes ≥ 1/8 of the target
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
    return {"element": el, "N": N, "W": W, "threads": threads, "sweeps_per_timing": n_sweeps, "times_s": times,
            "median_s": med, "min_s": float(min(times)), "max_s": float(max(times)), "cycles_per_s": cycles,
            "moves_per_s": cycles * N, "acceptance": float(acc), "mean_E_L": float(np.mean(energies))}


def cpu_timings(pools, plan, reps, target_s, budget, case_budget, results):
    all_threads = numba.config.NUMBA_NUM_THREADS
    log(f"\n## (d) CPU backend (numba, {all_threads} threads and 1), median of {reps}")
    for el in ELEMENTS:
        W_all, W_one = plan[el]
        for threads, W in ((all_threads, W_all), (1, W_one)):
            if budget.left() < case_budget + 40:
                results.append({"element": el, "W": W, "threads": threads, "skipped": "budget"})
                log(f"[cpu] {el} threads={threads}: skipped (budget)")
                continue
            try:
                row = time_cpu(el, W, threads, pools[el], reps, target_s, case_budget)
                log(f"[cpu] {el} W={W:5d} threads={threads:3d}: {row['cycles_per_s']:.3e} cycles/s, "
                    f"{row['moves_per_s']:.3e} moves/s, median {1e3 * row['median_s']:.1f} ms "
                    f"({row['sweeps_per_timing']} sweeps), acc {row['acceptance']:.3f}, <E_L> {row['mean_E_L']:.3f}")
            except Exception as exc:  # noqa: BLE001
                row = {"element": el, "W": W, "threads": threads, "error": f"{type(exc).__name__}: {exc}"}
                log(f"[cpu] {el} threads={threads}: FAILED {row['error']}")
                traceback.print_exc()
            results.append(row)
    numba.set_num_threads(all_threads)


# --------------------------------------------------------------------------------------------
# (e) VMC energies on the GPU
# --------------------------------------------------------------------------------------------
def energies_on_gpu(W, steps, equilibration, budget, report):
    from qmckit.runs import RunConfig, make_run

    log(f"\n## (e) VMC energies on the GPU: RunConfig(backend='cuda'), {W} walkers × {steps} sweeps "
        f"after {equilibration}")
    if cuda_atom.simulated():  # the simulator is no GPU: let RunConfig's availability check pass
        from qmckit.samplers import cuda as cuda_driver

        cuda_driver.cuda_available = lambda system: True
    for k, el in enumerate(ELEMENTS):
        left = budget.left() - 5
        share = left / (len(ELEMENTS) - k)
        # the GPU rate measured at the W nearest this one (with ~40% for host work: energies, reblocking)
        rows = [r for r in report["gpu"] if r.get("element") == el and "cycles_per_s" in r]
        rate = min(rows, key=lambda r: abs(math.log(r["W"] / W)))["cycles_per_s"] if rows else None
        n_steps, n_equil = steps, equilibration
        if rate:
            need = 1.4 * W * (steps + equilibration) / rate + 8
            if need > share:
                scale = max(0.0, (share - 8) / (need - 8))
                n_steps, n_equil = max(20, int(steps * scale)), max(20, int(equilibration * scale))
        if share < 15 or rate is None:  # without a measured rate the run could take any time
            report["energies"].append({"element": el, "skipped": "budget" if share < 15 else "no GPU throughput"})
            log(f"[energy] {el}: skipped")
            continue
        t0 = time.perf_counter()
        try:
            cfg = RunConfig(system="atom", params={"element": el}, method="vmc", backend="cuda", walkers=W,
                            steps=n_steps, equilibration=n_equil, dt=DT[el], seed=2011)
            run = make_run(cfg)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # reblocking warnings of short (quick) series
                result = run.run()
            e = result["estimates"]["energy"]
            ref = REFERENCE_ENERGIES[el]
            thesis, thesis_err = ref["thesis"]
            row = {"element": el, "backend": result["backend"], "W": W, "steps": n_steps, "equilibration": n_equil,
                   "dt": DT[el], "energy": e["mean"], "error": e["error"], "tau": e["tau"],
                   "variance": result["estimates"]["energy_variance"]["mean"], "acceptance": result["acceptance"],
                   "wall_s": round(time.perf_counter() - t0, 2), "thesis": [thesis, thesis_err],
                   "sandsdalen": ref["sandsdalen"][0], "exact": ref["exact"][0],
                   "pull_vs_thesis": (e["mean"] - thesis) / math.hypot(e["error"], thesis_err)}
            log(f"[energy] {el}: E = {e['mean']:.5f} ± {e['error']:.5f} E_h (τ {e['tau']:.1f}, Var {row['variance']:.3f},"
                f" acc {row['acceptance']:.3f}); thesis {thesis} ± {thesis_err}, pull {row['pull_vs_thesis']:+.1f}; "
                f"Sandsdalen {ref['sandsdalen'][0]}; exact {ref['exact'][0]}; {row['wall_s']} s")
        except Exception as exc:  # noqa: BLE001
            row = {"element": el, "error": f"{type(exc).__name__}: {exc}"}
            log(f"[energy] {el}: FAILED {row['error']}")
            traceback.print_exc()
        report["energies"].append(row)


# --------------------------------------------------------------------------------------------
# (f) report
# --------------------------------------------------------------------------------------------
def _best(rows, el, **match):
    rows = [r for r in rows if r.get("element") == el and "cycles_per_s" in r
            and all(r.get(k) == v for k, v in match.items())]
    return max(rows, key=lambda r: r["cycles_per_s"]) if rows else None


def markdown(report) -> str:
    dev = report["device"]
    lines = [f"# Atoms He, Be, Ne on the GPU (one thread per walker, float64) — {report['date']} on {report['host']}",
             "",
             f"- GPU: {dev.get('name')} (cc {dev.get('compute_capability')}, {dev.get('sms')} SMs, "
             f"{dev.get('clock_khz')} kHz); simulated: {dev['simulated']}",
             f"- CPU: {report['cpu']['model']}, {report['cpu']['cores']} logical cores, numba threads "
             f"{report['cpu']['numba_threads']}",
             f"- versions: {report['versions']}",
             f"- command: `{report['command']}`; total {report.get('wall_s', float('nan')):.0f} s",
             f"- drift sampler, exact Metropolis–Hastings, drift cap on, Δt = {DT}; one cycle = N single-electron "
             "moves + one local energy (with a cache rebuild); FP64 peak "
             f"{dev.get('peak_fp64_tflops', float('nan')):.1f} TFLOP/s ({dev.get('peak_source')})",
             "", "## Twin check (GPU vs CPU driver, same walkers and RNG streams)", "",
             "| atom | mode | W | sweeps | max abs ΔE_L | max rel ΔE_L | max abs Δr | accept-count mismatches | "
             "diverged walkers | streams equal | incremental cache max rel Δ | device E_L max abs Δ |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in report["twin"]:
        mode = "fixed node" if r.get("fixed_node") else "VMC"
        if "max_abs_dE" in r:
            lines.append(f"| {r['element']} | {mode} | {r['W']} | {r['sweeps']} | {r['max_abs_dE']:.2e} | "
                         f"{r['max_rel_dE']:.1e} | {r['max_abs_dpos']:.2e} | {r['accept_count_mismatches']} | "
                         f"{r['walkers_diverged']} | {r['rng_streams_equal']} | {r['no_measure_max_rel_dcache']:.1e} | "
                         f"{r['local_energy_max_abs_dE']:.1e} |")
        else:
            lines.append(f"| {r['element']} | {mode} | | | {r.get('error') or r.get('skipped')} | | | | | | | |")
    d = report.get("twin_dmc") or {}
    if "mismatched_steps" in d:
        lines += ["", f"DMC (Be, fixed node, Δτ = {d['dt']}, {d['W']} walkers × {d['steps']} steps, CudaVMC as "
                      f"DMC's driver vs the CPU DMC): {d['branching_events']} branching events, "
                      f"{d['mismatched_steps']} steps with a different population/killed/copied, max |ΔE_mixed| "
                      f"{d['max_abs_d_mixed_energy']:.2e}, max |Δr| {fmt(d['max_abs_dpos'], '.2e')}, streams equal "
                      f"{d['rng_streams_equal']}."]
    elif d:
        lines += ["", f"DMC twin: {d.get('error') or d.get('skipped')}"]
    lines += ["", "## Throughput on the GPU", "",
              "| atom | N | W | B | regs | median ms (min–max) | sweeps/timing | cycles/s | moves/s | model GFLOP/s | "
              "% FP64 peak | acc | ⟨E_L⟩ |",
              "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["gpu"]:
        if "cycles_per_s" in r:
            lines.append(f"| {r['element']} | {r['N']} | {r['W']} | {r['threads']} | {fmt(r['registers'], 'd')} | "
                         f"{1e3 * r['median_s']:.2f} ({1e3 * r['min_s']:.2f}–{1e3 * r['max_s']:.2f}) | "
                         f"{r['sweeps_per_timing']} | {r['cycles_per_s']:.3e} | {r['moves_per_s']:.3e} | "
                         f"{r['model_flops_per_s'] / 1e9:.0f} | {100 * r['fraction_of_fp64_peak']:.1f} | "
                         f"{r['acceptance']:.3f} | {r['mean_E_L']:.3f} |")
        else:
            lines.append(f"| {r['element']} | | {r['W']} | | | {r.get('error') or r.get('skipped')} | | | | | | | |")
    lines += ["", "## CPU backend (numba, float64, same process)", "",
              "| atom | W | threads | median ms (min–max) | sweeps/timing | cycles/s | moves/s | acc | ⟨E_L⟩ |",
              "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in report["cpu"]["timings"]:
        if "cycles_per_s" in r:
            lines.append(f"| {r['element']} | {r['W']} | {r['threads']} | {1e3 * r['median_s']:.1f} "
                         f"({1e3 * r['min_s']:.1f}–{1e3 * r['max_s']:.1f}) | {r['sweeps_per_timing']} | "
                         f"{r['cycles_per_s']:.3e} | {r['moves_per_s']:.3e} | {r['acceptance']:.3f} | "
                         f"{r['mean_E_L']:.3f} |")
        else:
            lines.append(f"| {r['element']} | {r['W']} | {r['threads']} | {r.get('error') or r.get('skipped')} "
                         "| | | | | |")
    all_threads = report["cpu"]["numba_threads"]
    lines += ["", "## GPU against the CPU backend of this machine (best GPU W), and study 002's Table 7.3", "",
              "| atom | GPU cycles/s (W) | CPU all cores cycles/s | CPU 1 thread cycles/s | GPU / all cores | "
              "GPU / 1 thread | thesis GPU kMC/s (× its 1-core C++) |",
              "|---|---|---:|---:|---:|---:|---|"]
    for el in ELEMENTS:
        g = _best(report["gpu"], el)
        par = _best(report["cpu"]["timings"], el, threads=all_threads)
        one = _best(report["cpu"]["timings"], el, threads=1)
        gpu_rate = g and g["cycles_per_s"]
        thesis_gpu, thesis_ref = THESIS_KMCS[el]
        lines.append(f"| {el} | {fmt(gpu_rate, '.3e')} ({g and g['W']}) | {fmt(par and par['cycles_per_s'], '.3e')} | "
                     f"{fmt(one and one['cycles_per_s'], '.3e')} | "
                     f"{fmt(gpu_rate and par and gpu_rate / par['cycles_per_s'], '.1f')} | "
                     f"{fmt(gpu_rate and one and gpu_rate / one['cycles_per_s'], '.0f')} | "
                     f"{thesis_gpu} ({thesis_gpu / thesis_ref:.0f}×) |")
    lines += ["", "## VMC energies on the GPU (E_h)", "",
              "| atom | qmckit GPU VMC | τ | Var E_L | acc | walkers × sweeps (equil.), Δt | thesis Table 7.1 | pull | "
              "Sandsdalen 2010 | exact | wall |",
              "|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|"]
    for r in report["energies"]:
        if "energy" in r:
            lines.append(f"| {r['element']} | {r['energy']:.5f} ± {r['error']:.5f} | {r['tau']:.1f} | "
                         f"{r['variance']:.3f} | {r['acceptance']:.3f} | {r['W']} × {r['steps']} ({r['equilibration']}), "
                         f"{r['dt']} | {r['thesis'][0]} ± {r['thesis'][1]} | {r['pull_vs_thesis']:+.1f} | "
                         f"{r['sandsdalen']} | {r['exact']} | {r['wall_s']:.0f} s |")
        else:
            lines.append(f"| {r['element']} | {r.get('error') or r.get('skipped')} | | | | | | | | | |")
    lines += ["", "Definitions: cycles/s = W·sweeps/t; moves/s = cycles/s · N; GPU time from CUDA events around one "
              "launch of `sweeps/timing` sweeps (no host transfers), CPU time = wall clock of VMC.sweep; model "
              "GFLOP/s = cycles/s × the hand-counted flop model in the script's header (indicative). Study 002's "
              "figures are for 2011 hardware (Radeon HD 5870, Phenom II), for orientation only."]
    return "\n".join(lines) + "\n"


def save(report, out_dir, stem):
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str))
    except OSError as exc:
        log(f"# could not write {out_dir / stem}.json: {exc}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test, e.g. under the simulator)")
    parser.add_argument("--budget", type=float, default=None, help="total seconds (default 225, quick 200)")
    parser.add_argument("--out", default=None, help="output folder (default $OUT, else ./gpu_out)")
    args = parser.parse_args(argv)
    budget = Budget(args.budget if args.budget else (200 if args.quick else 225))
    from numba import cuda

    quick = args.quick
    out_dir = Path(args.out or os.environ.get("OUT") or "gpu_out")
    date = datetime.date.today().isoformat()
    report = {"date": date, "host": socket.gethostname(),
              "command": "python benchmarks/atom_device.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "versions": f"Python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}",
              "pools": {}, "twin": [], "twin_dmc": None, "gpu": [], "energies": []}
    try:
        import importlib.metadata as md

        report["versions"] += f", numba-cuda {md.version('numba-cuda')}"
    except Exception:  # noqa: BLE001
        pass
    stem = f"atom_gpu_{'quick_' if quick else ''}{date}"
    try:
        report["device"] = device_info(cuda)
    except Exception as exc:  # noqa: BLE001
        report["device"] = {"simulated": cuda_atom.simulated(), "name": None, "errors": [repr(exc)],
                            "peak_fp64_tflops": 33.5, "peak_source": "H100 SXM nominal"}
    report["cpu"] = cpu_info()
    dev = report["device"]
    log(f"# device: {dev.get('name')} cc={dev.get('compute_capability')} SMs={dev.get('sms')} "
        f"simulated={dev['simulated']}; cpu: {report['cpu']}; {report['versions']}; "
        f"cuda_atom.available() = {cuda_atom.available()}")
    if not dev["simulated"] and not cuda_atom.available():
        log("# WARNING: no usable GPU; the GPU parts will fail and be reported as errors")

    reps = 2 if quick else 5
    # (a) pools
    pools = make_pools(8 if quick else 1024, 2 if quick else 100, budget, report)
    log(f"# pools done at {budget.elapsed():.0f} s")
    # (b) twin check
    if quick:
        twin_check(pools, 2, 1, 4, 2, budget, report)
    else:
        twin_check(pools, 64, 3, 256, 10, budget, report)
    log(f"# twin check done at {budget.elapsed():.0f} s")
    save(report, out_dir, stem)
    # (c) GPU
    sizes = [4, 8] if quick else [1 << k for k in range(10, 17)]
    gpu_timings(cuda, pools, sizes, reps, 0.01 if quick else 0.15, budget, 6 if quick else 8, dev, report["gpu"])
    log(f"# GPU timings done at {budget.elapsed():.0f} s")
    save(report, out_dir, stem)
    # (d) CPU
    plan = ({el: (8, 4) for el in ELEMENTS} if quick else {"He": (8192, 512), "Be": (4096, 256), "Ne": (2048, 128)})
    report["cpu"]["timings"] = []
    cpu_timings(pools, plan, reps, 0.02 if quick else 0.25, budget, 4 if quick else 6, report["cpu"]["timings"])
    log(f"# CPU timings done at {budget.elapsed():.0f} s")
    save(report, out_dir, stem)
    # (e) energies
    energies_on_gpu(8 if quick else 16384, 4 if quick else 500, 2 if quick else 200, budget, report)
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
        log(f"# wrote {out_dir / stem}.md and .json ({budget.elapsed():.0f} s)")
    except OSError as exc:
        log(f"# could not write {out_dir / stem}.md: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
