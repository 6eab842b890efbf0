"""How well a scan spreads over Dask workers: CPU process workers, or one worker per GPU.

* ``--cpu``: the same points on a local cluster of 1 and of 2 process workers (one thread each, NUMBA_NUM_THREADS=1),
  the points sized to about ``--point-s`` seconds on one core. Overhead per point = (wall × workers / points − the
  mean time a point spends in its worker) / that mean: what the scheduler, transfers and the results store cost.
* ``--gpus``: a BEC VMC scan (N = 100, ``--points`` values of α, ``backend="cuda"``) on 1 and on 2 GPUs, one worker
  per GPU (``qmckit.scan(..., gpus=K)``); every worker runs one untimed point first (compiles or loads its
  kernels). Speed-up = wall(1 GPU) / wall(2 GPUs).

* ``--split-dmc``: one B4 DMC run (N = 500 bosons, ``--walkers`` in all, Δτ = 0.01, ``--steps`` steps in blocks of
  ``--block``) split over 1 and over 2 GPUs (``qmckit.scans.split_run``: a part per GPU worker, renormalised branching
  in each part with its weight carried, E_T set globally once per block); every worker first runs a tiny split run
  (kernels compiled or loaded). Speed-up = wall(1)/wall(2).

The scans check that the rows are the same whatever the number of workers (the seeds are the points'); the split run
checks that its energies on 1 and 2 GPUs agree within their error bars (other partitions: other random streams).

    python benchmarks/scan_scaling.py --cpu [--points 8 --point-s 1]
    python benchmarks/scan_scaling.py --gpus [--points 32 --walkers 16384 --steps 2000]
    python benchmarks/scan_scaling.py --split-dmc [--walkers 8192 --steps 200 --block 20]

Writes $OUT (or benchmarks/results)/scan_scaling_<cpu|gpu|split_dmc_w<walkers>>_<date>.json and prints the table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import date
from pathlib import Path

from _common import cpu_model


def timed_scan(grid, fixed, client, seed=1):
    import qmckit

    start = time.perf_counter()
    result = qmckit.scan("bec", grid, fixed, seed=seed, client=client)
    return time.perf_counter() - start, result


def estimates(result):
    return [r["estimates"] for r in result.rows]


def cpu(args) -> dict:
    from distributed import Client, LocalCluster

    # one point ≈ point_s on one core: VMC sweeps of N = 20 bosons cost about 1.5 µs per particle move here
    fixed = dict(n=20, lam=1.0, a=0.00433, walkers=100, steps=args.steps or 1800)
    grid = {"alpha": [round(0.46 + 0.005 * k, 4) for k in range(args.points)]}
    out = {"points": args.points, "fixed": fixed, "runs": {}}
    reference = None
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None, env={"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}) as cluster, \
                Client(cluster) as client:
            timed_scan({"alpha": grid["alpha"][:workers]}, fixed, client, seed=99)  # warm: compile in every worker
            walls = []
            for _ in range(args.repeats):
                wall, result = timed_scan(grid, fixed, client)
                walls.append(wall)
        per_point = statistics.mean(r["wall_s"] for r in result.rows)
        wall = statistics.median(walls)
        out["runs"][workers] = {"wall_s": wall, "walls_s": walls, "mean_point_s": per_point,
                                "overhead_per_point": (wall * workers / args.points - per_point) / per_point}
        reference = reference or estimates(result)
        out["runs"][workers]["same_rows_as_1_worker"] = estimates(result) == reference
    out["speedup_2_over_1"] = out["runs"][1]["wall_s"] / out["runs"][2]["wall_s"]
    return out


def gpus(args) -> dict:
    from qmckit.scans.execute import start_executor

    fixed = dict(n=100, lam=1.0, a=0.00433, walkers=args.walkers, steps=args.steps or 2000, backend="cuda")
    grid = {"alpha": [round(0.46 + 0.002 * k, 4) for k in range(args.points)]}
    out = {"points": args.points, "fixed": fixed, "runs": {}}
    reference = None
    for n in (1, 2):
        t0 = time.perf_counter()
        client, close = start_executor(gpus=n)
        try:
            print(f"{n} GPU(s): cluster up in {time.perf_counter() - t0:.1f} s", flush=True)
            warm = {"alpha": [0.4 + 0.001 * k for k in range(n)]}
            wall_warm, _ = timed_scan(warm, fixed | {"steps": 20}, client, seed=99)  # kernels compiled or loaded
            print(f"{n} GPU(s): warm-up (compilation) {wall_warm:.1f} s", flush=True)
            wall, result = timed_scan(grid, fixed, client)
            print(f"{n} GPU(s): {args.points} points in {wall:.1f} s", flush=True)
        finally:
            close()
        out["runs"][n] = {"wall_s": wall, "mean_point_s": statistics.mean(r["wall_s"] for r in result.rows)}
        reference = reference or estimates(result)
        out["runs"][n]["same_rows_as_1_gpu"] = estimates(result) == reference
    out["speedup_2_over_1"] = out["runs"][1]["wall_s"] / out["runs"][2]["wall_s"]
    return out


def split_dmc(args) -> dict:
    from dataclasses import replace

    from qmckit.runs import RunConfig
    from qmckit.scans.execute import start_executor
    from qmckit.scans.split import split_run

    b4 = dict(n=500, lam=2.8284271247461903, a=0.15155, alpha=0.7687)  # study 002's set B4
    config = RunConfig(system="bec", params=b4, method="dmc", backend="cuda", dt=0.01, walkers=args.walkers,
                       steps=args.steps or 200, block=args.block, seed=7)
    out = {"config": {k: v for k, v in vars(config).items() if k in (
        "params", "dt", "walkers", "steps", "block", "equilibration", "dmc_equilibration", "seed")}, "runs": {}}
    for n in (1, 2):
        t0 = time.perf_counter()
        client, close = start_executor(gpus=n)
        try:
            print(f"{n} GPU(s): cluster up in {time.perf_counter() - t0:.1f} s", flush=True)
            t0 = time.perf_counter()
            split_run(replace(config, walkers=64 * n, steps=4, block=2, equilibration=2, dmc_equilibration=2), n,
                      client)
            warm = time.perf_counter() - t0
            print(f"{n} GPU(s): warm-up (compilation) {warm:.1f} s", flush=True)
            t0 = time.perf_counter()
            result = split_run(config, n, client)
            wall = time.perf_counter() - t0
        finally:
            close()
        e = result["estimates"]["energy_per_particle"]
        print(f"{n} GPU(s): {wall:.1f} s, E/N = {e['mean']:.5f}({e['error']:.5f}), population "
              f"{result['estimates']['population']['mean']:.0f}, weights evened {result['resampled']} times, "
              f"{result['rebalanced']} walkers moved, in {result['rebalance_s']:.2f} s, load imbalance "
              f"{100 * result['load_imbalance']:.1f} %, weight efficiency {result['weight_efficiency']:.4f}",
              flush=True)
        walker_steps = float(result["population"].sum())
        out["runs"][n] = {"wall_s": wall, "warm_s": warm, "energy_per_particle": e,
                          "equilibration_s": result["equilibration_s"], "blocks_s": result["blocks_s"],
                          "walker_steps_per_s": walker_steps / result["blocks_s"],
                          "population": result["estimates"]["population"]["mean"], "tau_eff": result["tau_eff"],
                          "rebalanced": result["rebalanced"], "resampled": result["resampled"],
                          "rebalance_s": result["rebalance_s"], "load_imbalance": result["load_imbalance"],
                          "weight_efficiency": result["weight_efficiency"], "setup_s": result["setup_s"],
                          "calls_s": result["calls_s"],
                          "population_cap_hits": result["population_cap_hits"],
                          "acceptance": result["acceptance"]}
    e1, e2 = (out["runs"][n]["energy_per_particle"] for n in (1, 2))
    out["pull_2_against_1"] = (e2["mean"] - e1["mean"]) / (e1["error"] ** 2 + e2["error"] ** 2) ** 0.5
    out["speedup_2_over_1"] = out["runs"][1]["wall_s"] / out["runs"][2]["wall_s"]
    # the populations of the two runs differ (other random streams): the blocks' walker steps per second compare
    # the same work
    out["blocks_throughput_2_over_1"] = out["runs"][2]["walker_steps_per_s"] / out["runs"][1]["walker_steps_per_s"]
    out["equilibration_speedup_2_over_1"] = out["runs"][1]["equilibration_s"] / out["runs"][2]["equilibration_s"]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--cpu", action="store_true")
    mode.add_argument("--gpus", action="store_true")
    mode.add_argument("--split-dmc", action="store_true")
    parser.add_argument("--points", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--walkers", type=int, default=16384)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    args.points = args.points or (8 if args.cpu else 32)
    kind = "cpu" if args.cpu else "gpu" if args.gpus else "split_dmc"
    result = {"cpu": cpu, "gpu": gpus, "split_dmc": split_dmc}[kind](args)
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version()}
    if not args.cpu:
        from numba import cuda

        machine["gpus"] = [g.name.decode() if isinstance(g.name, bytes) else g.name for g in cuda.gpus]
    flags = {"cpu": f"--cpu --points {args.points}", "gpu": f"--gpus --points {args.points} --walkers {args.walkers}",
             "split_dmc": f"--split-dmc --walkers {args.walkers} --block {args.block}"}[kind]
    record = {"date": str(date.today()), "machine": machine, "command": "python benchmarks/scan_scaling.py "
              + flags + (f" --steps {args.steps}" if args.steps else ""), **result}
    folder = Path(os.environ.get("OUT", Path(__file__).parent / "results"))
    folder.mkdir(parents=True, exist_ok=True)
    size = f"_w{args.walkers}" if kind == "split_dmc" else ""
    path = folder / f"scan_scaling_{kind}{size}_{date.today()}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    for k, run in result["runs"].items():
        print(f"{k} worker(s): wall {run['wall_s']:.2f} s"
              + (f", mean point {run['mean_point_s']:.3f} s" if "mean_point_s" in run else "")
              + (f", overhead per point {100 * run['overhead_per_point']:+.1f} %"
                 if "overhead_per_point" in run else ""))
    print(f"speed-up 2 over 1: {result['speedup_2_over_1']:.3f}"
          + (f" (equilibration {result['equilibration_speedup_2_over_1']:.3f}, blocks' walker steps per second "
             f"{result['blocks_throughput_2_over_1']:.3f})" if kind == "split_dmc" else "") + f"; written {path}")


if __name__ == "__main__":
    main()
