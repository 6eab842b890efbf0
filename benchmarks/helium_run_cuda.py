#!/usr/bin/env python
"""Liquid ⁴He through the one Run on the GPU: ``RunConfig(system="helium", backend="cuda")`` against its CPU twin.

Runs the same seeded VMC run (sampler ``gauss``, study 004's move; HeliumChains on the GPU, HeliumChainsCPU
on the host) on both backends and compares acceptance, random streams, positions and estimates; then times
``qmckit run helium --backend cuda`` at a production size, with the CPU backend of the same host for the
same work (both through the Run: equilibration, blocks, energies and observables every sweep).

    python benchmarks/helium_run_cuda.py [--out DIR]      # the device machine; files to $OUT
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


def run(backend: str, **settings):
    from qmckit.runs import RunConfig, make_run

    config = RunConfig(system="helium", sampler="gauss", backend=backend, **settings)
    start = time.perf_counter()
    run_ = make_run(config)
    result = run_.run()
    run_.vmc.sync()
    return result, run_, time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "benchmarks/results"))
    ap.add_argument("--tag", default="h100")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes under the CUDA simulator")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    if args.smoke:
        from qmckit import runs

        runs.cuda_available = lambda system, sampler="drift": True
    from numba import cuda

    device = "CUDA simulator" if args.smoke else cuda.get_current_device().name
    device = device.decode() if isinstance(device, bytes) else device
    out = {"device": device, "host": platform.node(), "cpus": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d"), "command": "python benchmarks/helium_run_cuda.py"}

    # twins: the same seeded run on both backends
    twin = dict(params=dict(n=8 if args.smoke else 64), step=0.81, target_acceptance=0.37,
                walkers=2 if args.smoke else 64, steps=4 if args.smoke else 40, equilibration=2 if args.smoke else 20,
                block=2 if args.smoke else 10, seed=2026)
    (cpu, cpu_run, _), (gpu, gpu_run, _) = run("cpu", **twin), run("cuda", **twin)
    out["twin"] = {
        "settings": twin,
        "acceptance": [cpu["acceptance"], gpu["acceptance"]],
        "states_equal": bool(np.array_equal(cpu_run.walkers.rng_states, gpu_run.walkers.rng_states)),
        "max_dpos": float(np.abs(cpu_run.walkers.positions - gpu_run.walkers.positions).max()),
        "estimates": {k: [cpu["estimates"][k]["mean"], gpu["estimates"][k]["mean"]] for k in cpu["estimates"]},
        "max_rel_estimate": max(abs(gpu["estimates"][k]["mean"] - v["mean"]) / abs(v["mean"])
                                for k, v in cpu["estimates"].items()),
    }
    print(json.dumps(out["twin"], indent=1), flush=True)

    # speed: the same Run on the GPU (many chains) and the CPU backend (16 host cores) for the same work
    timing = {}
    for n, walkers, steps in (((8, 2, 2),) if args.smoke else ((64, 4224, 200), (512, 1056, 100))):
        row = {}
        for backend in ("cuda", "cpu"):  # a one-sweep run first: compilation stays out of the timing
            run(backend, params=dict(n=n), walkers=min(walkers, 64), steps=1, equilibration=0, seed=1)
        for backend in ("cuda", "cpu"):
            w = walkers if backend == "cuda" else min(walkers, 64)
            equilibration = 2 if args.smoke else 20
            result, _, wall = run(backend, params=dict(n=n), step=0.81, target_acceptance=0.37, walkers=w,
                                  steps=steps, equilibration=equilibration, seed=7)
            sweeps = w * (steps + equilibration)
            row[backend] = {"walkers": w, "steps": steps, "wall_s": wall, "run_wall_s": result["wall_s"],
                            "s_per_sweep_per_chain": result["wall_s"] / sweeps,
                            "energy_per_particle": result["estimates"]["energy_per_particle"],
                            "acceptance": result["acceptance"]}
            print(n, backend, row[backend], flush=True)
        row["speedup_per_chain_sweep"] = (row["cpu"]["s_per_sweep_per_chain"]
                                          / row["cuda"]["s_per_sweep_per_chain"])
        timing[n] = row
    out["speed"] = timing
    path = Path(args.out) / f"helium_run_cuda_{args.tag}_{out['date']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
