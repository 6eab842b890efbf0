#!/usr/bin/env python
"""Electrons in a quantum dot on the GPU (``qmckit.backends.cuda_qdot``): twins, speed, and a DMC run.

1. twins: the same walkers and streams through the CPU sampler and the GPU sweeper, sweep by sweep (2D N = 6,
   12, 20; 3D N = 8, 20; drift and brute): accepted moves, streams, positions, local energies;
2. speed: GPU MC cycles/s (one cycle = N single-electron moves + one local energy) over walker counts
   against the CPU backend of the same host on all its cores and on one thread;
3. physics: fixed-node DMC of 2D N = 6, ω = 1 through ``qmckit.runs`` on the GPU, against the published DMC
   energy 20.1597(2) (data/quantum_dots.json).

    python benchmarks/qdot_gpu.py [--out DIR] [--smoke]    # the device machine; files to $OUT
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "benchmarks/results"))
    ap.add_argument("--tag", default="h100")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes under the CUDA simulator")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import numba

    from qmckit import runs
    from qmckit.backends.cuda_qdot import CudaQdotSweeper
    from qmckit.methods.vmc import VMC
    from qmckit.runs import RunConfig, make_run
    from qmckit.systems.qdot import QuantumDot
    from qmckit.walkers import Walkers

    if args.smoke:
        runs.cuda_available = lambda system, sampler="drift": True
    out = {"date": time.strftime("%Y-%m-%d"), "host": platform.node(), "cpus": os.cpu_count(),
           "command": "python benchmarks/qdot_gpu.py", "numba": numba.__version__}
    if not args.smoke:
        from numba import cuda

        name = cuda.get_current_device().name
        out["device"] = name.decode() if isinstance(name, bytes) else name

    cases = [(6, 2, 0.93, 0.55), (12, 2, 0.9, 0.6), (20, 2, 0.87, 0.65), (8, 3, 0.9, 0.3), (20, 3, 0.85, 0.3)]
    if args.smoke:
        cases = cases[:1]
    twins = []
    for n, dim, alpha, beta in cases:
        for sampler in ("drift", "brute"):
            system = QuantumDot(n=n, dim=dim, omega=1.0, alpha=alpha, beta=beta)
            W, sweeps = (2, 1) if args.smoke else (64, 3)
            start = Walkers.from_positions(system.initial_positions(W, np.random.default_rng(n)), n, system.cache_size())
            cpu = VMC(system, start.copy(), sampler=sampler, dt=0.05, step=0.8)
            gpu = CudaQdotSweeper(system, start.copy(), sampler=sampler, dt=0.05, step=0.8)
            e_cpu, a_cpu = cpu.sweep(sweeps)
            e_gpu, a_gpu = gpu.sweep(sweeps)
            host = gpu.to_host(recompute_caches=False)
            twins.append({"n": n, "dim": dim, "sampler": sampler, "walkers": W, "sweeps": sweeps,
                          "acceptance": [float(a_cpu), float(a_gpu)],
                          "streams_equal": bool(np.array_equal(host.rng_states, cpu.walkers.rng_states)),
                          "max_dpos": float(np.abs(host.positions - cpu.walkers.positions).max()),
                          "max_rel_de": float(np.abs(e_gpu - e_cpu).max() / np.abs(e_cpu).max())})
            print("twin", twins[-1], flush=True)
    out["twins"] = twins

    speed = []
    for n, dim, alpha, beta in ([(6, 2, 0.93, 0.55)] if args.smoke else cases):
        system = QuantumDot(n=n, dim=dim, omega=1.0, alpha=alpha, beta=beta)
        rows = {}
        for label, backend, W in ([("gpu", "cuda", 2)] if args.smoke else
                                  [("gpu", "cuda", 16384), ("gpu", "cuda", 65536), ("cpu_all", "cpu", 1024)]):
            start = Walkers.from_positions(system.initial_positions(W, np.random.default_rng(1)), 1,
                                           0 if backend == "cuda" else system.cache_size())
            sampler = (CudaQdotSweeper(system, start, sampler="drift", dt=0.05) if backend == "cuda"
                       else VMC(system, start, sampler="drift", dt=0.05))
            sampler.sweep(2)  # compile and settle
            times, sweeps = [], (1 if args.smoke else (20 if backend == "cuda" else 4))
            for _ in range(3):
                t = time.perf_counter()
                sampler.sweep(sweeps)
                times.append(time.perf_counter() - t)
            rows[f"{label}_W{W}"] = {"walkers": W, "sweeps": sweeps, "median_s": float(np.median(times)),
                                     "cycles_per_s": W * sweeps / float(np.median(times))}
        row = {"n": n, "dim": dim, **rows}
        speed.append(row)
        print("speed", row, flush=True)
    out["speed"] = speed

    settings = dict(walkers=2, steps=2, equilibration=1, dmc_equilibration=1) if args.smoke else \
        dict(walkers=4096, steps=4000, dmc_equilibration=500)
    start = time.perf_counter()
    result = make_run(RunConfig(system="qdot", method="dmc", params=dict(n=6, dim=2, omega=1.0, alpha=0.93, beta=0.55),
                                dt=0.01, seed=11, backend="cuda", **settings)).run()
    out["dmc"] = {"settings": settings, "dt": 0.01, "energy": result["estimates"]["energy"],
                  "published": [20.1597, 2e-4], "wall_s": time.perf_counter() - start,
                  "acceptance": result["acceptance"]}
    print("dmc", out["dmc"], flush=True)
    path = Path(args.out) / f"qdot_gpu_{args.tag}_{out['date']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
