"""What DMC's effective time step costs on the GPU, and whether the GPU's τ_eff is the CPU's.

DMC branches with τ_eff = Δτ Σ R²_accepted / Σ R²_proposed (:mod:`qmckit.methods.dmc`), so its sweeps sum the
squared diffusion displacement of every move. On the GPU that is a kernel variant (``track_diffusion``); VMC
keeps the kernels it had. For every walker kernel DMC runs on the GPU this script

1. times one DMC sweep (``sampler.sweep(1)``: the launch, the energies and, when tracking, the diffusion sums
   back to the host) with the VMC kernel and with the tracking kernel, interleaved in one process, and gives
   the median of each, their ratio, both kernels' registers per thread and the host CPU's sweep of the same
   walkers (all cores, and the ratio);
   (the "UNR" row: both with the moves near the nucleus, RunConfig(nuclear_moves=True));
2. runs a short DMC on the GPU and on the CPU from one seed (the twins): the populations must be equal, the
   energies agree to 1e-9 relative and τ_eff to 1e-12.

    python benchmarks/dmc_diffusion_tracking.py [--reps 21] [--walkers 16384]

Writes $OUT/dmc_diffusion_tracking_<date>.{md,json} and prints the table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from qmckit.runs import RunConfig, make_run  # noqa: E402
from qmckit.samplers import make_sampler  # noqa: E402
from qmckit.systems import make_system  # noqa: E402
from qmckit.walkers import Walkers  # noqa: E402

OUT = Path(os.environ.get("OUT", "device_out"))
warnings.filterwarnings("ignore", message="reblock:")
_B2 = dict(n=20, lam=1.0, a=0.433, alpha=0.46)  # study 002's set B2 (data/bec_table72.json)
_B4 = dict(n=500, lam=2.8284271247461903, a=0.15155, alpha=0.7687)  # set B4: the block-per-walker kernel

# (label, system, params, Δτ, walkers for the timing (None: --walkers), VMC equilibration sweeps of the twins)
CASES = [
    ("He, e–n cusp factor", "atom", dict(element="He", en_cusp=True), 0.01, None, 20),
    ("He", "atom", dict(element="He"), 0.01, None, 20),
    ("Be", "atom", dict(element="Be"), 0.01, None, 20),
    ("He, UNR moves near the nucleus", "atom", dict(element="He", en_cusp=True), 0.01, None, 20),
    ("quantum dot N = 6, 2D", "qdot", dict(n=6, dim=2, omega=1.0), 0.01, None, 20),
    ("bosons B2 (N = 20, thread per walker)", "bec", _B2, 0.01, None, 20),
    ("bosons B4 (N = 500, block per walker)", "bec", _B4, 0.01, 2000, 400),  # 20 sweeps: the population dies
]


def sweep_seconds(sampler, track: bool) -> float:
    sampler.track_diffusion = track
    start = time.perf_counter()
    sampler.sweep(1)  # copies the energies (and the diffusion sums) back: the sweep has finished
    return time.perf_counter() - start


def time_case(system, walkers: int, dt: float, reps: int, cpu_reps: int, nuclear_moves: bool = False) -> dict:
    start = Walkers.from_positions(system.initial_positions(walkers, np.random.default_rng(1)), 2, 0)
    gpu = make_sampler(system.for_dmc(), start.copy(), "cuda", sampler="drift", dt=dt, nuclear_moves=nuclear_moves)
    for track in (False, True, False, True):  # compile both variants and equilibrate a little
        sweep_seconds(gpu, track)
    times = {False: [], True: []}
    for k in range(reps):  # interleaved, alternating which goes first
        for track in ((False, True) if k % 2 == 0 else (True, False)):
            times[track].append(sweep_seconds(gpu, track))
    from qmckit.backends import cuda_atom, cuda_bec

    sweeper = gpu._sweeper
    if isinstance(sweeper, cuda_bec.CudaBosonSweeper):
        kernel_sets = {"vmc": cuda_bec.kernels(sweeper.dtype), "track": cuda_bec.kernels(sweeper.dtype, True)}
        registers = {k: cuda_atom._regs(v[sweeper.layout]) for k, v in kernel_sets.items()}
    else:
        registers = {k: cuda_atom._regs(sweeper._select_kernels(track)["sweep"])
                     for k, track in (("vmc", False), ("track", True))}
    host = Walkers.from_positions(system.initial_positions(walkers, np.random.default_rng(1)), 2, system.cache_size())
    cpu = make_sampler(system.for_dmc(), host, "cpu", sampler="drift", dt=dt, nuclear_moves=nuclear_moves)
    cpu.sweep(1)  # compile
    cpu_times = []
    for _ in range(cpu_reps):
        start_s = time.perf_counter()
        cpu.sweep(1)
        cpu_times.append(time.perf_counter() - start_s)
    vmc, track = statistics.median(times[False]), statistics.median(times[True])
    cpu_s = statistics.median(cpu_times)
    return {"walkers": walkers, "layout": getattr(sweeper, "layout", "thread"), "vmc_kernel_s": vmc,
            "tracking_kernel_s": track, "ratio": track / vmc, "registers": registers, "cpu_s": cpu_s,
            "cpu_over_gpu": cpu_s / track, "all_vmc_s": times[False], "all_tracking_s": times[True]}


def twin_case(name: str, params: dict, dt: float, equilibration: int, nuclear_moves: bool = False) -> dict:
    results = {}
    for backend in ("cuda", "cpu"):
        cfg = RunConfig(system=name, params=params, method="dmc", backend=backend, walkers=64, steps=40,
                        equilibration=equilibration, dmc_equilibration=10, block=20, dt=dt, seed=5,
                        nuclear_moves=nuclear_moves)
        run = make_run(cfg)
        result = run.run()
        results[backend] = {"tau_eff": result["tau_eff"], "population": run.series_of("population").tolist(),
                            "energy": run.series_of("mixed_energy").tolist()}
    g, c = results["cuda"], results["cpu"]
    e_g, e_c = np.array(g["energy"]), np.array(c["energy"])
    return {"tau_eff_gpu": g["tau_eff"], "tau_eff_cpu": c["tau_eff"], "tau_eff_over_dt": c["tau_eff"] / dt,
            "d_tau_eff_rel": abs(g["tau_eff"] - c["tau_eff"]) / c["tau_eff"],
            "populations_equal": g["population"] == c["population"],
            "d_energy_rel": float(np.max(np.abs(e_g - e_c) / np.abs(e_c))) if len(e_c) == len(e_g) else None}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--walkers", type=int, default=16384, help="walkers of the timings (at most; N = 500: 2000)")
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--cpu-reps", type=int, default=3)
    args = parser.parse_args()
    from numba import cuda

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        device = "numba's CUDA simulator (a smoke test: no timing means anything)"
    else:
        device = cuda.get_current_device().name
        device = device.decode() if isinstance(device, bytes) else device
    rows = []
    for label, name, params, dt, walkers, equilibration in CASES:
        system = make_system(name, **params)
        row = {"case": label, "system": name, "params": params, "dt": dt}
        t0 = time.perf_counter()
        unr = "UNR" in label
        row |= time_case(system, min(walkers or args.walkers, args.walkers), dt, args.reps, args.cpu_reps, unr)
        row |= twin_case(name, params, dt, equilibration, unr)
        row["case_s"] = time.perf_counter() - t0
        rows.append(row)
        print(f"[tracking] {label}: VMC kernel {row['vmc_kernel_s'] * 1e3:.3f} ms, tracking {row['tracking_kernel_s'] * 1e3:.3f}"
              f" ms ({row['ratio']:.3f}), registers {row['registers']}, CPU {row['cpu_s'] * 1e3:.1f} ms; twins: τ_eff/Δτ "
              f"{row['tau_eff_over_dt']:.5f}, d {row['d_tau_eff_rel']:.1e}, populations equal {row['populations_equal']}, "
              f"dE {row['d_energy_rel']}", flush=True)
    lines = [f"# DMC's diffusion tracking (τ_eff) on the GPU — {date.today().isoformat()}", "",
             f"Device {device}; host {platform.processor() or platform.machine()} with {os.cpu_count()} logical CPUs "
             f"(the CPU column: the same sweep on all of them). Median of {args.reps} DMC sweeps (`sampler.sweep(1)`, "
             f"with the copies back) per kernel, interleaved; CPU median of {args.cpu_reps}. Command "
             "`python benchmarks/dmc_diffusion_tracking.py`.", "",
             "| kernel | walkers | layout | VMC kernel (ms) | tracking kernel (ms) | ratio | registers VMC → tracking | "
             "CPU sweep (ms) | CPU / GPU | twins: τ_eff/Δτ | twins: τ_eff rel. diff | populations equal | energies rel. diff |",
             "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        reg = r["registers"]
        lines.append(f"| {r['case']} | {r['walkers']} | {r['layout']} | {r['vmc_kernel_s'] * 1e3:.3f} | "
                     f"{r['tracking_kernel_s'] * 1e3:.3f} | {r['ratio']:.3f} | {reg.get('vmc')} → {reg.get('track')} | "
                     f"{r['cpu_s'] * 1e3:.1f} | {r['cpu_over_gpu']:.1f} | {r['tau_eff_over_dt']:.5f} | "
                     f"{r['d_tau_eff_rel']:.1e} | {r['populations_equal']} | {r['d_energy_rel']:.1e} |")
    out = {"date": date.today().isoformat(), "device": device, "args": vars(args), "rows": rows,
           "markdown": "\n".join(lines)}
    OUT.mkdir(parents=True, exist_ok=True)
    stem = f"dmc_diffusion_tracking_{out['date']}"
    (OUT / f"{stem}.json").write_text(json.dumps(out, indent=1, default=str))
    (OUT / f"{stem}.md").write_text(out["markdown"] + "\n")
    print(out["markdown"])


if __name__ == "__main__":
    main()
