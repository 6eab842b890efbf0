#!/usr/bin/env python
"""Study 000's lattice RVB VMC on a GPU against the CPU: Tables 6.2/6.3's workload, one run on a lent GPU machine.

Workload (Table 6.1): tilted clusters L = 5, 9, 15 (N_s = L² + 1), hole doping x = 0.1 (N_e = 24, 74, 204),
t = 1, J = 0.3, Δ = 1.5, μ = 0; 32 Markov chains, 5000 equilibration + 5000 accumulation sweeps of N_e
proposals each, one local-energy measurement after every accumulation sweep; A⁻¹ refreshed every
``--refresh-every`` sweeps and after each launch (default 100, the qmckit default since 2026-11-23; the
2026-11-22 records rebuilt every sweep; the thesis never rebuilt): the CPU rebuilds it by Gauss–Jordan, the
GPU (from 2026-11-26, lattice_chains_h100v10) corrects it by one Newton–Schulz step against the matrix built
afresh (lattice_cuda.refine).

Stages (each skipped, never truncated, once the ``--budget`` is spent; the JSON is rewritten after each):

  twin      GPU kernel vs CPU kernel on the same chains and streams (20 sweeps, 32 chains; L = 5 and 9, and
            L = 15 with three T_P/bfactor layouts, i.e. three register caps, and the default layouts of
            L = 5, 9, 15): counts, configurations and
            streams identical?, max |ΔA⁻¹|, max |ΔE|; also one proposal at a time and the CPU's two-step
            swap updates;
  gpu       the full workload on the GPU (one launch per phase; synchronize + perf_counter around each
            launch, compile excluded by a warm-up; median of ``--repeats``); energies per site
            (chain means ± std/√W), acceptance, A⁻¹ drift; Sherman–Morrison FLOP/s vs the fp64 peak;
            with proposals in batches of 8 and an accepted swap as one rank-2 pass (the defaults, "gpu"),
            one proposal at a time ("gpu_batch1"), and a swap as the CPU's two Sherman–Morrison steps
            ("gpu_sequential", swap_update="sequential");
  cpu1      one CPU core (numba.set_num_threads(1)), the 32 chains one after another, at
            ``--sweeps-scale`` × the sweep counts, from the GPU's equilibrated configurations, extrapolated
            linearly to 5000 + 5000 sweeps (marked "extrapolated" in every table);
  cpuall    all CPU cores (numba prange over the 32 chains), likewise at ``--sweeps-scale-all``;
  norefresh the GPU without periodic rebuilds (refresh_every = 0, the thesis's algorithm);
  (``--algorithm thesis|tracked|both``, default both: the twin and gpu stages run the thesis kernel and/or the
  tracked one (F and G kept up to date between moves, O(1) hop and O(M) swap ratios), the tracked one also with
  refresh_every = 10; the other stages stay on the thesis algorithm)
  phases    L = 5, 9, 15, batch 8 and 1: thread 0's clock cycles per sweep by phase (draws, batch sums,
            decisions, updates, rebuilds, measurements; lattice_cuda.CYCLE_PHASES), at ``--scan-scale``;
            batch 8 with two-step swap updates; and batch 8 with the draws split (parse, derive; the
            cycle_details build);
  layout    L = 15: T_P ∈ {1, 2, 4, 8} × bfactor ∈ {1, 2, 4, 8, 16, 32}, at ``--layout-scale`` × the sweeps;
  chains    L = 15 (and 9): 32, 132, 264, 528, 1056 chains: chain·sweeps per second, at ``--scan-scale``.

The thesis's times (i7-2600 one core, 32 chains in sequence; Tesla M2070, bfactor 8 and 16) are printed
beside ours, with the goals: L = 15 in ≤ 2.5 s on one H100, and ≤ 156 s per chain on one CPU core (the
thesis's single-chain C++ time) at L = 15. A full run takes about 6 minutes on an H100 machine with
16 CPU cores (compiles ≈ 50 s; writes lattice_chains_<device>_<date>.json and .md to --out).

Usage
  python benchmarks/lattice_chains.py [--out benchmarks/results] [--budget 450] [--sweeps-scale 0.02]
  NUMBA_ENABLE_CUDASIM=1 python benchmarks/lattice_chains.py --smoke --out /tmp/lc   # no GPU: tiny sizes
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one BLAS thread per chain
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numba  # noqa: E402

from qmckit.backends import lattice_cuda as lc  # noqa: E402
from qmckit.backends.lattice_chains import (HOPS_ACCEPTED, HOPS_PROPOSED, REBUILDS, REFRESH_EVERY, SWAPS_ACCEPTED,  # noqa: E402
                                            SWAPS_PROPOSED, CpuChains)
from qmckit.rng import seed_states  # noqa: E402
from qmckit.systems.lattice_rvb import LatticeRVB  # noqa: E402
from _common import Budget, cpu_model, log  # noqa: E402

warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)
warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")

PARAMS = dict(kind="tilted", doping=0.1, J=0.3, delta=1.5, mu=0.0)
N_EQ, N_ACC, CHAINS = 5000, 5000, 32
THESIS = {  # study 000, Tables 6.2/6.3 (wall-clock s, 32 chains) and 4.4–4.6 (one chain)
    "cpu_i7_2600_one_core_32_chains_s": {5: 22.66, 9: 287.13, 15: 4992.24},
    "cpu_i7_2600_one_chain_s": {5: 0.70, 9: 9.07, 15: 156.02},
    "gpu_m2070_bfactor8_s": {5: 3.19, 9: 17.37, 15: 309.72},
    "gpu_m2070_bfactor16_s": {5: 2.48, 9: 14.44, 15: 256.83},
}
GOALS = {"gpu_L15_32_chains_s": 2.5, "cpu_one_core_per_chain_L15_s": 156.02}
PEAKS = {  # fp64, TFLOP/s: NVIDIA datasheets
    "H100 SXM": (34.0, 67.0, "NVIDIA H100 Tensor Core GPU datasheet (SXM5): FP64 34 TFLOPS, FP64 Tensor Core 67 TFLOPS"),
    "H100 PCIe": (26.0, 51.0, "NVIDIA H100 datasheet (PCIe): FP64 26 TFLOPS, FP64 Tensor Core 51 TFLOPS"),
    "H200": (34.0, 67.0, "NVIDIA H200 datasheet: FP64 34 TFLOPS, FP64 Tensor Core 67 TFLOPS"),
}
FP64_FMA_PER_SM_CLK = {(9, 0): 64, (8, 0): 32, (7, 0): 32}  # full-rate fp64 parts (H100/A100/V100)


# --------------------------------------------------------------------------------------------
# machine
# --------------------------------------------------------------------------------------------
def cpu_info():
    model = cpu_model()
    return {"model": model, "cores": os.cpu_count(), "numba_threads": int(numba.config.NUMBA_NUM_THREADS)}


def gpu_info():
    info = {"simulated": lc.simulated(), "available": lc.available()}
    if info["simulated"]:
        info["name"] = "CUDA simulator"
        info["peak_fp64_tflops"], info["peak_fp64_tensor_tflops"], info["peak_source"] = PEAKS["H100 SXM"]
        info["peak_source"] += " (the simulator has no figures; H100 SXM assumed for the format only)"
        return info
    from numba import cuda

    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    info.update(name=name, compute_capability=list(dev.compute_capability), sms=int(dev.MULTIPROCESSOR_COUNT),
                clock_khz=int(dev.CLOCK_RATE), shared_per_block=int(dev.MAX_SHARED_MEMORY_PER_BLOCK))
    for attr in ("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"):
        try:
            info[attr.lower()] = int(getattr(dev, attr))
        except Exception:  # noqa: BLE001
            pass
    try:
        info["memory_gib"] = round(cuda.current_context().get_memory_info()[1] / 2 ** 30, 1)
    except Exception:  # noqa: BLE001
        pass
    fma = FP64_FMA_PER_SM_CLK.get(tuple(dev.compute_capability))
    if fma:
        info["peak_fp64_from_clock_tflops"] = 2 * fma * info["sms"] * info["clock_khz"] * 1e3 / 1e12
    key = "H100 PCIe" if "H100" in name and "PCIe" in name else "H100 SXM" if "H100" in name else \
        "H200" if "H200" in name else None
    if key:
        info["peak_fp64_tflops"], info["peak_fp64_tensor_tflops"], info["peak_source"] = PEAKS[key]
    elif fma:
        info["peak_fp64_tflops"] = info["peak_fp64_from_clock_tflops"]
        info["peak_source"] = f"{fma} fp64 FMA/clock/SM × SMs × boost clock (not a datasheet figure)"
    return info


def device_tag(info):
    if info["simulated"]:
        return "cudasim"
    name = info.get("name", "gpu").lower()
    for tag in ("h100", "h200", "a100", "v100"):
        if tag in name:
            return tag
    return "".join(ch if ch.isalnum() else "-" for ch in name).strip("-") or "gpu"


# --------------------------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------------------------
_STARTS = {}


def start(L, chains, seed=13213):
    """System, start configurations and streams of ``chains`` chains (the first k of a larger set are reused)."""
    system = LatticeRVB(L=L, **PARAMS)
    have = _STARTS.get(L)
    if have is None or have[1]["up_site"].shape[0] < chains:
        rng_seq, stream_seq = np.random.SeedSequence(seed + L).spawn(2)
        state = system.random_configurations(chains, np.random.default_rng(rng_seq))
        _STARTS[L] = (system, state, seed_states(stream_seq, chains))
    system, state, states = _STARTS[L]
    return system, {k: np.array(v[:chains]) for k, v in state.items()}, np.array(states[:chains])


def sync():
    if not lc.simulated():
        from numba import cuda

        cuda.synchronize()


def gpu_phase(chains, n, measure):
    """One launch of ``n`` sweeps, timed (synchronize + perf_counter); counts/drift collected as sweep() does."""
    sync()
    t0 = time.perf_counter()
    energies, counts, drift = chains.launch(n, measure)
    sync()
    elapsed = time.perf_counter() - t0
    chains.counts += counts.copy_to_host()
    np.maximum(chains.drift, drift.copy_to_host(), out=chains.drift)
    return elapsed, (energies.copy_to_host()[:, :n] if measure else None)


def energy_summary(system, energies):
    """Chain means of the energy per site over the measured sweeps: mean ± std/√W (W chains)."""
    per_site = (energies[..., 0] + energies[..., 1]) / system.n_sites
    means = per_site.mean(axis=1)
    w = len(means)
    err = float(means.std(ddof=1) / math.sqrt(w)) if w > 1 else float("nan")
    return {"energy_per_site": float(means.mean()), "error": err, "chains": w, "sweeps": int(per_site.shape[1]),
            "kinetic_per_site": float((energies[..., 0] / system.n_sites).mean()),
            "exchange_per_site": float((energies[..., 1] / system.n_sites).mean()),
            "double_occupancy_per_site": float((energies[..., 2] / system.n_sites).mean())}


def flop_counts(system, counts, n_measured, n_rebuilds):
    """Floating-point work of a run (multiply + add = 2 flops): Sherman–Morrison steps 4M² each (one per
    accepted hop, two per accepted swap); all kernel work adds the ratios (2M per hop proposal, 2M² + 6M
    per swap proposal), the rebuilds (2M³ Gauss–Jordan) and the measurements (F and G: 4 N_s M²; a swap
    ratio of 2M per bond)."""
    m, n = system.size, system.n_sites
    c = counts.sum(axis=0)
    sm_steps = int(c[HOPS_ACCEPTED] + 2 * c[SWAPS_ACCEPTED])
    sm = 4.0 * m * m * sm_steps
    ratios = 2.0 * m * c[HOPS_PROPOSED] + (2.0 * m * m + 6 * m) * c[SWAPS_PROPOSED]
    rebuild = 2.0 * m ** 3 * n_rebuilds
    measure = (4.0 * n * m * m + 2.0 * m * len(system.cluster.bonds)) * n_measured
    return {"sm_steps": sm_steps, "sm_flop": sm, "all_flop": float(sm + ratios + rebuild + measure)}


def acceptance(counts):
    c = counts.sum(axis=0)
    return {"hops": float(c[HOPS_ACCEPTED] / max(c[HOPS_PROPOSED], 1)),
            "swaps": float(c[SWAPS_ACCEPTED] / max(c[SWAPS_PROPOSED], 1)),
            "all": float((c[HOPS_ACCEPTED] + c[SWAPS_ACCEPTED]) / max(c[HOPS_PROPOSED] + c[SWAPS_PROPOSED], 1)),
            "swap_share_of_proposals": float(c[SWAPS_PROPOSED] / max(c[HOPS_PROPOSED] + c[SWAPS_PROPOSED], 1)),
            "singular_swap_rebuilds": int(c[REBUILDS])}


def gpu_run(L, chains, n_eq, n_acc, refresh, tp=None, bf=None, keep_state=False, algorithm="thesis", batch=None,
            **options):
    """One timed run (equilibration, then measured sweeps); ``options`` go to CudaChains (swap_update, ...)."""
    system, state, states = start(L, chains)
    gpu = lc.CudaChains(system, state, states, refresh_every=refresh, threads_per_column=tp, bfactor=bf,
                        algorithm=algorithm, batch=batch if algorithm == "thesis" else None, **options)
    gpu.kernel_info()  # compiles (or fetches) this layout's kernel before the clock starts
    t_eq, _ = gpu_phase(gpu, n_eq, False)
    eq_state = (gpu.host_state(), gpu.states_to_host()) if keep_state else None
    t_acc, energies = gpu_phase(gpu, n_acc, True)
    return {"system": system, "chains": gpu, "t_eq": t_eq, "t_acc": t_acc, "energies": energies, "eq_state": eq_state}


def cpu_run(system, state, states, n_eq, n_acc, refresh):
    cpu = CpuChains(system, {k: np.array(v) for k, v in state.items()}, np.array(states), refresh_every=refresh)
    t0 = time.perf_counter()
    cpu.sweep(n_eq, measure=False)
    t1 = time.perf_counter()
    energies = cpu.sweep(n_acc, measure=True)
    t2 = time.perf_counter()
    return {"t_eq": t1 - t0, "t_acc": t2 - t1, "energies": energies, "chains": cpu}


def median(xs):
    return float(np.median(xs)) if xs else float("nan")


# --------------------------------------------------------------------------------------------
# stages
# --------------------------------------------------------------------------------------------
def stage_warmup(cfg, results):
    t0 = time.perf_counter()
    system, state, states = start(cfg["Ls"][0], 2)
    gpu = lc.CudaChains(system, state, states, refresh_every=1)
    gpu.sweep(1, measure=True)
    gpu.sweep(1, measure=False)
    sync()
    t1 = time.perf_counter()
    cpu = CpuChains(system, {k: np.array(v) for k, v in state.items()}, np.array(states), refresh_every=1)
    cpu.sweep(1, measure=True)
    t2 = time.perf_counter()
    results["compile_s"] = {"gpu": t1 - t0, "cpu": t2 - t1}
    results["kernel"] = {str(L): lc.CudaChains(*start(L, 1)).kernel_info() for L in cfg["Ls"]}
    if "tracked" in cfg["algorithms"]:
        results["kernel_tracked"] = {str(L): lc.CudaChains(*start(L, 1), algorithm="tracked").kernel_info()
                                     for L in cfg["Ls"]}


def stage_twin(cfg, results):
    out = {}
    jobs = [(L, layout, "thesis", None, None) for L, layout in cfg["twin_Ls"]] if "thesis" in cfg["algorithms"] else []
    if "thesis" in cfg["algorithms"]:  # one proposal at a time (the default batches them), and two-step swaps
        jobs += [(L, layout, "thesis", 1, None) for L, layout in cfg["twin_Ls"] if layout == (4, 8)]
        jobs += [(L, layout, "thesis", None, "sequential") for L, layout in cfg["twin_Ls"] if layout == (4, 8)]
    if "tracked" in cfg["algorithms"]:
        jobs += [(L, layout, "tracked", None, None) for L, layout in cfg["twin_Ls"] if layout == (4, 8)]
    for L, layout, algorithm, batch, swap_update in jobs:
        system, state, states = start(L, cfg["chains"])
        cpu = CpuChains(system, {k: np.array(v) for k, v in state.items()}, np.array(states), refresh_every=1,
                        algorithm=algorithm)
        gpu = lc.CudaChains(system, state, states, refresh_every=1, threads_per_column=layout[0], bfactor=layout[1],
                            algorithm=algorithm, batch=batch, swap_update=swap_update)
        e_cpu = cpu.sweep(cfg["twin_sweeps"], measure=True)
        e_gpu = gpu.sweep(cfg["twin_sweeps"], measure=True)
        host = gpu.host_state()
        key = f"{L}" if layout == (4, 8) else f"{L} (T_P={layout[0]}, bfactor={layout[1]})"
        if algorithm == "tracked":
            key = f"tracked {key}"
        elif batch == 1:
            key = f"batch 1: {key}"
        elif swap_update == "sequential":
            key = f"two-step swaps: {key}"
        out[key] = {"algorithm": algorithm, "batch": gpu.batch if algorithm == "thesis" else None,
            "chains": cfg["chains"], "sweeps": cfg["twin_sweeps"], "L": L, "T_P": layout[0], "bfactor": layout[1],
            "threads": gpu.threads, "max_registers": gpu.max_registers,
            "counts_equal": bool(np.array_equal(cpu.counts, gpu.counts)),
            "configurations_equal": all(bool(np.array_equal(host[k], cpu.state[k]))
                                        for k in ("up_site", "dn_site", "up_at", "dn_at")),
            "streams_equal": bool(np.array_equal(gpu.states_to_host(), cpu.states)),
            "max_abs_dainv": float(np.abs(host["ainv"] - cpu.state["ainv"]).max()),
            "max_abs_denergy": float(np.abs(e_gpu - e_cpu).max()),
            "max_abs_energy": float(np.abs(e_cpu[..., :2]).max()),
            "drift_max_gpu": float(gpu.drift.max()), "drift_max_cpu": float(cpu.drift.max()),
            "accepted_swaps": int(cpu.counts[:, SWAPS_ACCEPTED].sum()),
        }
        log(f"  twin {key}: {out[key]}")
    results["twin"] = out


GPU_RUNS = ("gpu", "gpu_batch1", "gpu_sequential", "gpu_tracked", "gpu_tracked_refresh10")


def gpu_variants(cfg):
    """(results key, algorithm, refresh_every, batch, CudaChains options) of the gpu stage's runs: the thesis
    algorithm with the defaults ("gpu": batches of 8, rank-2 swap updates), one proposal at a time
    ("gpu_batch1"), the CPU's two-step swap updates ("gpu_sequential"), the defaults with thread 0's clock counts
    compiled in ("gpu_cycles": what the phases stage times), the tracked one."""
    out = []
    if "thesis" in cfg["algorithms"]:
        out.append(("gpu", "thesis", cfg["refresh"], None, {}))
        out.append(("gpu_batch1", "thesis", cfg["refresh"], 1, {}))
        out.append(("gpu_sequential", "thesis", cfg["refresh"], None, {"swap_update": "sequential"}))
        out.append(("gpu_cycles", "thesis", cfg["refresh"], None, {"cycle_counts": True}))
    if "tracked" in cfg["algorithms"]:
        out.append(("gpu_tracked", "tracked", cfg["refresh"], None, {}))
        if cfg["refresh"] != 10:
            out.append(("gpu_tracked_refresh10", "tracked", 10, None, {}))
    return out


def stage_gpu(cfg, results, info):
    for key, algorithm, refresh, batch, options in gpu_variants(cfg):
        log(f"  [{key}] algorithm {algorithm}, refresh_every {refresh}, batch {batch}, {options}")
        stage_gpu_variant(cfg, results, info, key, algorithm, refresh, batch, **options)


def stage_gpu_variant(cfg, results, info, result_key, algorithm, refresh, batch=None, **options):
    out = {}
    cfg = dict(cfg, refresh=refresh)
    peak = info.get("peak_fp64_tflops")
    for L in cfg["Ls"]:
        reps = []
        keep = None
        for r in range(cfg["repeats"] if L < 15 else min(cfg["repeats"], 2)):
            run = gpu_run(L, cfg["chains"], cfg["n_eq"], cfg["n_acc"], cfg["refresh"], keep_state=(r == 0),
                          algorithm=algorithm, batch=batch, **options)
            reps.append(run)
            if r == 0:
                keep = run
        system, gpu = keep["system"], keep["chains"]
        t_eq = [x["t_eq"] for x in reps]
        t_acc = [x["t_acc"] for x in reps]
        total = [a + b for a, b in zip(t_eq, t_acc)]
        n_rebuilds = cfg["chains"] * ((cfg["n_eq"] // cfg["refresh"]) + (cfg["n_acc"] // cfg["refresh"])) \
            if cfg["refresh"] > 0 else 0
        flops = flop_counts(system, gpu.counts, cfg["chains"] * cfg["n_acc"], n_rebuilds)
        t_med = median(total)
        row = {"algorithm": algorithm, "L": L, "n_sites": system.n_sites, "n_electrons": system.n_electrons, "M": system.size,
               "chains": cfg["chains"], "sweeps": [cfg["n_eq"], cfg["n_acc"]], "refresh_every": cfg["refresh"],
               "threads": gpu.threads, "T_P": gpu.threads_per_column, "bfactor": gpu.bfactor,
               "batch": gpu.batch if algorithm == "thesis" else None, "swap_update": gpu.swap_update,
               "shared_bytes": gpu.shared_bytes, "t_eq_s": t_eq, "t_acc_s": t_acc, "t_total_s": total, "t_total_median_s": t_med,
               "chain_sweeps_per_s": cfg["chains"] * (cfg["n_eq"] + cfg["n_acc"]) / t_med,
               "proposals_per_s_per_chain": system.n_electrons * (cfg["n_eq"] + cfg["n_acc"]) / t_med,
               "acceptance": acceptance(gpu.counts), "drift_max": float(gpu.drift.max()),
               "energy": energy_summary(system, keep["energies"]), **flops,
               "sm_flop_per_s": flops["sm_flop"] / t_med, "all_flop_per_s": flops["all_flop"] / t_med}
        if peak:
            row["sm_fraction_of_peak"] = row["sm_flop_per_s"] / (peak * 1e12)
            row["all_fraction_of_peak"] = row["all_flop_per_s"] / (peak * 1e12)
            sms = info.get("sms")
            if sms:  # one block per chain: at most `chains` SMs busy
                row["all_fraction_of_busy_sm_peak"] = row["all_flop_per_s"] / (peak * 1e12 * min(1.0, cfg["chains"] / sms))
        if cfg["full"]:
            row["thesis_m2070_bfactor8_s"] = THESIS["gpu_m2070_bfactor8_s"].get(L)
            row["thesis_m2070_bfactor16_s"] = THESIS["gpu_m2070_bfactor16_s"].get(L)
        out[str(L)] = row
        if algorithm == "thesis" or L not in cfg["eq_states"]:
            cfg["eq_states"][L] = keep["eq_state"]
        log(f"  {result_key} L={L}: total {t_med:.3f} s (eq {median(t_eq):.3f} + acc {median(t_acc):.3f}), "
            f"E/N_s = {row['energy']['energy_per_site']:.5f} ± {row['energy']['error']:.5f}, "
            f"acc {row['acceptance']['all']:.3f}, SM {row['sm_flop_per_s'] / 1e9:.1f} GFLOP/s")
    if "15" in out and cfg["full"]:
        goals = results.setdefault("goals", {})
        tag = "" if result_key == "gpu" else result_key[3:]
        goals[f"gpu{tag}_L15_s"] = out["15"]["t_total_median_s"]
        goals["gpu_L15_goal_s"] = GOALS["gpu_L15_32_chains_s"]
        goals[f"gpu{tag}_L15_met"] = out["15"]["t_total_median_s"] <= GOALS["gpu_L15_32_chains_s"]
    results[result_key] = out


def stage_cpu(cfg, results, key, threads, scale, repeats_small):
    out = {}
    numba.set_num_threads(threads)
    try:
        for L in cfg["Ls"]:
            eq = cfg["eq_states"].get(L)
            system = LatticeRVB(L=L, **PARAMS)
            if eq is None:  # no GPU stage: start from the random configurations
                _, state, states = start(L, cfg["chains"])
                origin = "random start"
            else:
                state, states = eq
                origin = "the GPU's configurations after its 5000 equilibration sweeps"
            n_eq = max(1, round(cfg["n_eq"] * scale))
            n_acc = max(1, round(cfg["n_acc"] * scale))
            reps = repeats_small if system.size < 60 else 1
            runs = [cpu_run(system, state, states, n_eq, n_acc, cfg["refresh"]) for _ in range(reps)]
            t_eq = median([r["t_eq"] for r in runs])
            t_acc = median([r["t_acc"] for r in runs])
            f_eq, f_acc = cfg["n_eq"] / n_eq, cfg["n_acc"] / n_acc
            full = t_eq * f_eq + t_acc * f_acc
            row = {"L": L, "threads": threads, "chains": cfg["chains"], "start": origin,
                   "measured_sweeps": [n_eq, n_acc], "measured_t_eq_s": [r["t_eq"] for r in runs],
                   "measured_t_acc_s": [r["t_acc"] for r in runs],
                   "extrapolated": (f_eq != 1.0 or f_acc != 1.0),
                   "t_total_s": full,
                   "acceptance": acceptance(runs[0]["chains"].counts),
                   "energy_short_run": energy_summary(system, runs[0]["energies"])}
            if threads == 1:
                row["t_per_chain_s"] = full / cfg["chains"]
                if cfg["full"]:
                    row["thesis_i7_2600_s"] = THESIS["cpu_i7_2600_one_core_32_chains_s"].get(L)
                    row["thesis_i7_2600_one_chain_s"] = THESIS["cpu_i7_2600_one_chain_s"].get(L)
            g = results.get("gpu", {}).get(str(L))
            if g:
                row["gpu_speedup"] = full / g["t_total_median_s"]
            out[str(L)] = row
            log(f"  {key} L={L}: {full:.2f} s for {cfg['n_eq']}+{cfg['n_acc']} sweeps"
                f"{' (extrapolated from ' + str(n_eq) + '+' + str(n_acc) + ')' if row['extrapolated'] else ''}")
    finally:
        numba.set_num_threads(int(numba.config.NUMBA_NUM_THREADS))
    results[key] = out
    if key == "cpu_one_core" and "15" in out and cfg["full"]:
        goals = results.setdefault("goals", {})
        goals["cpu_one_core_per_chain_L15_s"] = out["15"]["t_per_chain_s"]
        goals["cpu_one_core_per_chain_L15_goal_s"] = GOALS["cpu_one_core_per_chain_L15_s"]
        goals["cpu_one_core_per_chain_L15_met"] = out["15"]["t_per_chain_s"] <= GOALS["cpu_one_core_per_chain_L15_s"]
        goals["cpu_one_core_per_chain_L15_extrapolated"] = out["15"]["extrapolated"]


def stage_norefresh(cfg, results):
    out = {}
    for L in cfg["Ls"][:1] if cfg["smoke"] else cfg["Ls"]:
        run = gpu_run(L, cfg["chains"], cfg["n_eq"], cfg["n_acc"], 0)
        out[str(L)] = {"t_total_s": run["t_eq"] + run["t_acc"], "t_eq_s": run["t_eq"], "t_acc_s": run["t_acc"],
                       "energy": energy_summary(run["system"], run["energies"])}
        log(f"  no rebuild L={L}: {out[str(L)]['t_total_s']:.3f} s")
    results["gpu_no_rebuild"] = out


def stage_phases(cfg, results):
    """Where a chain's time goes: thread 0's clock cycles by phase (lattice_cuda.CYCLE_PHASES; the kernels built
    with ``cycle_counts``, not the production one), per sweep, for batch 8 and 1, at ``--scan-scale`` × the sweeps (equilibration and accumulation each);
    then batch 8 with the CPU's two-step swap updates (``swap_update="sequential"``), and batch 8 with the
    kernel that also counts the draws' parse and derive parts (``cycle_details``, lattice_cuda.CYCLE_DETAILS)."""
    out = {}
    for L in cfg["Ls"]:
        for batch, details, swap_update in ((8, False, None), (1, False, None), (8, False, "sequential"),
                                            (8, True, None)):
            n = max(1, round(cfg["n_eq"] * cfg["scan_scale"]))
            run = gpu_run(L, cfg["chains"], n, n, cfg["refresh"], batch=batch, cycle_counts=True,
                          cycle_details=details, swap_update=swap_update)
            gpu = run["chains"]
            counted = {k: float(v.mean()) / (2 * n) for k, v in gpu.cycle_counts(details=True).items()}
            cycles = {k: counted[k] for k in lc.CYCLE_PHASES}
            total = sum(cycles.values())
            t = run["t_eq"] + run["t_acc"]
            row = {"L": L, "batch": batch, "details_build": details, "swap_update": gpu.swap_update,
                   "sweeps": [n, n], "t_s": t,
                   "t_per_sweep_us": 1e6 * t / (2 * n), "cycles_per_sweep": cycles, "cycles_per_sweep_total": total,
                   "clock_ghz_implied": total * 2 * n / t / 1e9,
                   "proposals_per_sweep": gpu.moves_per_sweep, "acceptance": acceptance(gpu.counts)}
            if details:
                row["draw_cycles_per_sweep"] = {k: counted[k] for k in lc.CYCLE_DETAILS}
            build = " (details build)" if details else (" (two-step swaps)" if swap_update == "sequential" else "")
            key = f"{L}/{batch}" + ("/details" if details else "") + ("/sequential" if swap_update == "sequential" else "")
            out[key] = row
            log(f"  phases L={L} batch={batch}{build}: {1e6 * t / (2 * n):.1f} µs per sweep; cycles per sweep "
                + ", ".join(f"{k} {v:.0f}" for k, v in counted.items()))
    results["phases"] = out


def stage_layout(cfg, results, budget):
    L = cfg["scan_L"]
    n_eq = max(1, round(cfg["n_eq"] * cfg["layout_scale"]))
    n_acc = max(1, round(cfg["n_acc"] * cfg["layout_scale"]))
    rows = []
    for tp in cfg["tps"]:
        for bf in cfg["bfs"]:
            if budget.left() < 10:
                break
            try:
                run = gpu_run(L, cfg["chains"], n_eq, n_acc, cfg["refresh"], tp=tp, bf=bf)
            except ValueError as exc:
                rows.append({"T_P": tp, "bfactor": bf, "error": str(exc)})
                continue
            t = run["t_eq"] + run["t_acc"]
            full = t * (cfg["n_eq"] + cfg["n_acc"]) / (n_eq + n_acc)
            rows.append({"T_P": tp, "bfactor": bf, "threads": run["chains"].threads,
                         "max_registers": run["chains"].max_registers, "t_s": t,
                         "t_full_extrapolated_s": full, "chain_sweeps_per_s": cfg["chains"] * (n_eq + n_acc) / t})
            log(f"  layout L={L} T_P={tp} bfactor={bf}: {t:.3f} s ({full:.2f} s extrapolated to the full run)")
    results["layout_scan"] = {"L": L, "chains": cfg["chains"], "sweeps": [n_eq, n_acc], "rows": rows}


def stage_chains(cfg, results, budget):
    out = {}
    for L in cfg["chain_Ls"]:
        n_eq = max(1, round(cfg["n_eq"] * cfg["scan_scale"]))
        n_acc = max(1, round(cfg["n_acc"] * cfg["scan_scale"]))
        rows = []
        for w in cfg["chain_counts"]:
            if budget.left() < 15:
                break
            run = gpu_run(L, w, n_eq, n_acc, cfg["refresh"])
            t = run["t_eq"] + run["t_acc"]
            rows.append({"chains": w, "t_s": t, "chain_sweeps_per_s": w * (n_eq + n_acc) / t,
                         "threads": run["chains"].threads, "max_registers": run["chains"].max_registers,
                         "proposals_per_s": w * (n_eq + n_acc) * run["system"].n_electrons / t})
            log(f"  chains L={L} W={w}: {t:.3f} s, {rows[-1]['chain_sweeps_per_s']:.0f} chain·sweeps/s")
        out[str(L)] = {"sweeps": [n_eq, n_acc], "rows": rows}
    results["chain_scan"] = out


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def fmt(x, digits=2):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def markdown(results):
    lines = []
    m = results["machine"]
    lines.append(f"# Lattice RVB VMC chains (study 000), {results['date']}")
    lines.append("")
    lines.append(f"GPU: {m['gpu'].get('name')}; CPU: {m['cpu']['model']} ({m['cpu']['cores']} cores); "
                 f"{CHAINS if not results['config']['smoke'] else results['config']['chains']} chains, "
                 f"sweeps {results['config']['n_eq']} + {results['config']['n_acc']}, refresh_every "
                 f"{results['config']['refresh']}")
    lines.append("")
    gpu, one, allc = results.get("gpu", {}), results.get("cpu_one_core", {}), results.get("cpu_all_cores", {})
    if gpu:
        lines.append("| L | N_s | N_e | M | threads | GPU (s) | M2070 bf8 / bf16 (s) | CPU 1 core (s)* | i7-2600 1 core (s) "
                     "| CPU all cores (s)* | GPU vs 1 core | E/N_s (t) | acceptance | SM GFLOP/s (% fp64 peak) |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for key, g in gpu.items():
            o, a = one.get(key, {}), allc.get(key, {})
            e = g["energy"]
            pct = 100 * g.get("sm_fraction_of_peak", float("nan"))
            lines.append(
                f"| {g['L']} | {g['n_sites']} | {g['n_electrons']} | {g['M']} | {g['threads']} | {fmt(g['t_total_median_s'], 3)} "
                f"| {fmt(g.get('thesis_m2070_bfactor8_s'))} / {fmt(g.get('thesis_m2070_bfactor16_s'))} "
                f"| {fmt(o.get('t_total_s'))} | {fmt(o.get('thesis_i7_2600_s'))} | {fmt(a.get('t_total_s'))} "
                f"| {fmt(o.get('gpu_speedup'), 1)} | {e['energy_per_site']:.5f} ± {e['error']:.5f} "
                f"| {g['acceptance']['all']:.3f} | {g['sm_flop_per_s'] / 1e9:.1f} ({fmt(pct, 3)} %) |")
        lines.append("")
        ext = [k for k, v in {**{f'1 core L={k}': v for k, v in one.items()},
                              **{f'all cores L={k}': v for k, v in allc.items()}}.items() if v.get("extrapolated")]
        lines.append("\\* CPU times EXTRAPOLATED linearly from reduced sweep counts (" +
                     ", ".join(f"{k}: {v['measured_sweeps'][0]}+{v['measured_sweeps'][1]} sweeps"
                               for k, v in {**{f'1 core L={k}': v for k, v in one.items()},
                                            **{f'all cores L={k}': v for k, v in allc.items()}}.items()) +
                     ") to the full sweep counts, starting from the GPU's equilibrated configurations."
                     if ext else "CPU times measured at the full sweep counts.")
        lines.append(f"fp64 peak assumed: {m['gpu'].get('peak_fp64_tflops')} TFLOP/s ({m['gpu'].get('peak_source')}); "
                     "SM FLOP/s = 4M² per Sherman–Morrison step (one per accepted hop, two per accepted swap) / GPU time.")
        lines.append("")
    variants = [(k, results[k]) for k in GPU_RUNS if results.get(k)]
    if variants:
        lines.append("GPU algorithms (32 chains unless smoke; total s = median of repeats; E/N_s = chain mean ± std/√W):")
        lines.append("")
        lines.append("| run | L | algorithm | refresh_every | threads | shared B | GPU (s) | E/N_s (t) | acceptance | drift max |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for key, rows in variants:
            for g in rows.values():
                e = g["energy"]
                lines.append(f"| {key} | {g['L']} | {g.get('algorithm', 'thesis')} | {g['refresh_every']} | {g['threads']} "
                             f"| {g['shared_bytes']} | {fmt(g['t_total_median_s'], 3)} "
                             f"| {e['energy_per_site']:.5f} ± {e['error']:.5f} | {g['acceptance']['all']:.3f} "
                             f"| {g['drift_max']:.1e} |")
        lines.append("")
    goals = results.get("goals")
    if goals:
        lines.append("Goals: " + "; ".join(f"{k} = {v}" for k, v in goals.items()))
        lines.append("")
    twin = results.get("twin")
    if twin:
        lines.append("| twin L | chains × sweeps | counts equal | configurations equal | streams equal | max abs ΔA⁻¹ "
                     "| max abs ΔE (t) |")
        lines.append("|---|---|---|---|---|---|---|")
        for key, t in twin.items():
            lines.append(f"| {key} | {t['chains']} × {t['sweeps']} | {t['counts_equal']} | {t['configurations_equal']} "
                         f"| {t['streams_equal']} | {t['max_abs_dainv']:.2e} | {t['max_abs_denergy']:.2e} |")
        lines.append("")
    nr = results.get("gpu_no_rebuild")
    if nr:
        lines.append("GPU without periodic rebuilds (refresh_every = 0): " +
                     ", ".join(f"L={k}: {fmt(v['t_total_s'], 3)} s" for k, v in nr.items()))
        lines.append("")
    ph = results.get("phases")
    if ph:
        names = list(next(iter(ph.values()))["cycles_per_sweep"])
        lines.append("Where a chain's time goes: thread 0's clock cycles per sweep by phase (barrier waits included; "
                     "half the sweeps measured), 32 chains:")
        lines.append("")
        parts = next((list(r["draw_cycles_per_sweep"]) for r in ph.values() if "draw_cycles_per_sweep" in r), [])
        lines.append("| L | batch | sweeps | µs per sweep | " + " | ".join(names) + " | total |"
                     + "".join(f" of draws, {k.split(': ')[-1]} |" for k in parts))
        lines.append("|---|---|---|---|" + "---|" * (len(names) + 1 + len(parts)))
        for r in ph.values():
            c = r["cycles_per_sweep"]
            d = r.get("draw_cycles_per_sweep", {})
            batch = (f"{r['batch']} (details build)" if r.get("details_build")
                     else f"{r['batch']} (two-step swaps)" if r.get("swap_update") == "sequential" else r["batch"])
            lines.append(f"| {r['L']} | {batch} | {r['sweeps'][0]}+{r['sweeps'][1]} | {r['t_per_sweep_us']:.1f} | "
                         + " | ".join(f"{c[k]:.0f}" for k in names) + f" | {r['cycles_per_sweep_total']:.0f} |"
                         + "".join(f" {d[k]:.0f} |" if k in d else " |" for k in parts))
        lines.append("")
    lay = results.get("layout_scan")
    if lay and lay["rows"]:
        lines.append(f"Layout scan, L = {lay['L']}, {lay['chains']} chains, {lay['sweeps'][0]}+{lay['sweeps'][1]} sweeps "
                     "(full-run seconds extrapolated):")
        lines.append("")
        bfs = sorted({r["bfactor"] for r in lay["rows"]})
        lines.append("| T_P \\ bfactor | " + " | ".join(map(str, bfs)) + " |")
        lines.append("|---|" + "---|" * len(bfs))
        for tp in sorted({r["T_P"] for r in lay["rows"]}):
            cells = []
            for bf in bfs:
                r = next((r for r in lay["rows"] if r["T_P"] == tp and r["bfactor"] == bf), None)
                cells.append("–" if r is None or "error" in r else f"{r['t_full_extrapolated_s']:.2f}")
            lines.append(f"| {tp} | " + " | ".join(cells) + " |")
        lines.append("")
    cs = results.get("chain_scan")
    if cs:
        for key, v in cs.items():
            lines.append(f"Chain scan, L = {key}, {v['sweeps'][0]}+{v['sweeps'][1]} sweeps: " +
                         ", ".join(f"W={r['chains']}: {r['chain_sweeps_per_s']:.0f} chain·sweeps/s" for r in v["rows"]))
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    ap.add_argument("--budget", type=float, default=450.0, help="seconds; later stages are skipped when spent")
    ap.add_argument("--sweeps-scale", type=float, default=0.02, help="CPU one-core sweeps as a fraction of 5000+5000")
    ap.add_argument("--sweeps-scale-all", type=float, default=0.1, help="CPU all-cores sweeps fraction")
    ap.add_argument("--scan-scale", type=float, default=0.1, help="GPU chain-count scan sweeps fraction")
    ap.add_argument("--layout-scale", type=float, default=0.05, help="GPU T_P × bfactor scan sweeps fraction")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--refresh-every", type=int, default=REFRESH_EVERY)
    ap.add_argument("--stages", default="twin,gpu,cpu1,cpuall,norefresh,phases,layout,chains")
    ap.add_argument("--algorithm", choices=("thesis", "tracked", "both"), default="both",
                    help="chain algorithm(s) of the twin and gpu stages (the others run the thesis algorithm)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (for the CUDA simulator)")
    args = ap.parse_args(argv)
    if not (lc.simulated() or lc.available()):
        sys.exit("no CUDA GPU here: run on the GPU machine, or with NUMBA_ENABLE_CUDASIM=1 --smoke")
    if lc.simulated():
        sys.setswitchinterval(1e-4)  # the simulator polls its threads holding the GIL
    budget = Budget(args.budget)
    smoke = args.smoke
    cfg = {
        "smoke": smoke, "full": not smoke, "refresh": args.refresh_every,
        "Ls": (3, 5) if smoke else (5, 9, 15), "chains": 2 if smoke else CHAINS,
        "n_eq": 2 if smoke else N_EQ, "n_acc": 2 if smoke else N_ACC,
        "repeats": 1 if smoke else args.repeats,
        "twin_Ls": ((3, (4, 8)), (3, (2, 4))) if smoke else ((5, (4, 8)), (9, (4, 8)), (15, (4, 8)), (15, (2, 8)),
                                                                (5, (4, 4)), (9, (4, 4)), (15, (2, 2)),
                                                                (15, (8, 16))),
        "twin_sweeps": 2 if smoke else 20,
        "scan_L": 3 if smoke else 15, "tps": (1, 2) if smoke else (1, 2, 4, 8),
        "bfs": (4, 8) if smoke else (1, 2, 4, 8, 16, 32), "scan_scale": 1.0 if smoke else args.scan_scale,
        "layout_scale": 1.0 if smoke else args.layout_scale,
        "chain_Ls": (3,) if smoke else (15, 9), "chain_counts": (2, 3) if smoke else (32, 132, 264, 528, 1056),
        "eq_states": {},
        "algorithms": ("thesis", "tracked") if args.algorithm == "both" else (args.algorithm,),
    }
    scale1 = 1.0 if smoke else args.sweeps_scale
    scale_all = 1.0 if smoke else args.sweeps_scale_all
    info = gpu_info()
    date = datetime.date.today().isoformat()
    tag = device_tag(info)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"lattice_chains_{tag}_{date}.json"
    results = {
        "benchmark": "lattice_chains", "date": date, "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "machine": {"gpu": info, "cpu": cpu_info(), "host": platform.node(), "python": platform.python_version(),
                    "numba": numba.__version__, "numpy": np.__version__},
        "config": {k: v for k, v in cfg.items() if k != "eq_states"} | {"sweeps_scale": scale1,
                                                                         "sweeps_scale_all": scale_all,
                                                                         "params": PARAMS},
        "thesis": {k: {str(L): v for L, v in d.items()} for k, d in THESIS.items()}, "goal_values": GOALS,
        "notes": ["GPU times: one launch per phase, synchronize + perf_counter, compile excluded (warm-up), "
                  "median of repeats; chains start from the same random configurations each repeat.",
                  "CPU times at reduced sweep counts are EXTRAPOLATED linearly (time × full/measured sweeps, per "
                  "phase), from the GPU's configurations after its equilibration.",
                  "Energy per site: chain means over the accumulation sweeps, mean ± std/√W (W chains)."],
        "stages_done": [], "stages_skipped": [], "errors": {},
    }
    try:
        import numba_cuda

        results["machine"]["numba_cuda"] = getattr(numba_cuda, "__version__", "?")
    except ImportError:
        pass

    def save():
        path.write_text(json.dumps(results, indent=1, default=float))

    def run_stage(name, fn):
        if budget.left() <= 5:
            results["stages_skipped"].append(name)
            log(f"[{name}] skipped: budget spent")
            return
        log(f"[{name}] start ({budget.left():.0f} s left)")
        t0 = time.perf_counter()
        try:
            fn()
            results["stages_done"].append(name)
        except Exception as exc:  # noqa: BLE001
            results["errors"][name] = "".join(traceback.format_exception(exc))[-4000:]
            log(f"[{name}] FAILED: {exc!r}")
        results.setdefault("stage_s", {})[name] = time.perf_counter() - t0
        save()

    stages = set(args.stages.split(","))
    run_stage("warmup", lambda: stage_warmup(cfg, results))
    if "twin" in stages:
        run_stage("twin", lambda: stage_twin(cfg, results))
    if "gpu" in stages:
        run_stage("gpu", lambda: stage_gpu(cfg, results, info))
    if "cpu1" in stages:
        run_stage("cpu1", lambda: stage_cpu(cfg, results, "cpu_one_core", 1, scale1, 3))
    if "cpuall" in stages:
        run_stage("cpuall", lambda: stage_cpu(cfg, results, "cpu_all_cores", int(numba.config.NUMBA_NUM_THREADS),
                                              scale_all, 3))
    if "norefresh" in stages:
        run_stage("norefresh", lambda: stage_norefresh(cfg, results))
    if "phases" in stages:
        run_stage("phases", lambda: stage_phases(cfg, results))
    if "layout" in stages:
        run_stage("layout", lambda: stage_layout(cfg, results, budget))
    if "chains" in stages:
        run_stage("chains", lambda: stage_chains(cfg, results, budget))
    results["wall_s"] = time.perf_counter() - budget.t0
    save()
    text = markdown(results)
    path.with_suffix(".md").write_text(text + "\n")
    log("")
    log(text)
    log(f"\nwrote {path} and {path.with_suffix('.md')}")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
