#!/usr/bin/env python
"""Why does the pair histogram run slower in the analysis thread of an async run than on the main thread of a sync run?
(issue 31; a one-off diagnostic of analysis_masking_gpu.py's rows)

Trapped bosons N = 500, 512 walkers: one histogram of the walkers' pair distances (the Run's DensityHistogram "pair"),
timed in a worker thread while the main thread

  idle      waits for it (a lock: the main thread sleeps)
  main      - (the histogram on the main thread itself, the GPU idle: a sync run's analysis)
  python    runs a pure-Python busy loop (one more busy core; the histogram releases the GIL)
  gpu spin  runs GPU sweeps of the same walkers (CUDA's default wait: the waiting thread spins on a core)
  gpu block the same with the context's scheduling set to blocking sync (cuCtxSetFlags: the waiting thread sleeps)

interleaved over --rounds rounds; medians. Prints the host's CPU topology first (threads per core: a spinning thread
on the sibling of the histogram's core halves its speed).

    python experiments/histogram_interference.py [--rounds 5]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qmckit.observables import DensityHistogram  # noqa: E402
from qmckit.runs import RunConfig, make_run  # noqa: E402


def scheduling(blocking: bool) -> None:
    """The current context's wait: blocking sync (sleep) or automatic (spin while there are fewer contexts than
    cores)."""
    from cuda.bindings import driver as cu

    flag = cu.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC if blocking else cu.CUctx_flags.CU_CTX_SCHED_AUTO
    (err,) = cu.cuCtxSetFlags(flag)
    assert err == cu.CUresult.CUDA_SUCCESS, err


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    print(subprocess.run(["lscpu"], capture_output=True, text=True).stdout, flush=True)
    print("affinity", sorted(os.sched_getaffinity(0)), flush=True)
    base = dict(system="bec", params=dict(n=500, lam=8 ** 0.5, a=0.00433, alpha=0.5), walkers=512, steps=16,
                equilibration=2, seed=5, density="pair", density_bins=100, backend="cuda", density_every=16, block=16)
    run = make_run(RunConfig(**base))
    run.run()  # compiles, and leaves the GPU sampler warm
    pos = run.walkers.positions.copy()
    h = DensityHistogram("pair", 100, 10.0)
    h.add(pos[:2])
    pool = ThreadPoolExecutor(1)
    sweeps_per_call = 16  # about 65 ms of GPU work a call

    def in_worker(busy) -> float:
        def timed():
            t = time.perf_counter()
            h.add(pos)
            return time.perf_counter() - t

        future = pool.submit(timed)
        while busy is not None and not future.done():
            busy()
        return future.result()

    def python_loop():
        x = 0
        for _ in range(200_000):
            x += 1

    def gpu_sweeps():
        run.vmc.sweep(sweeps_per_call, measure=True)

    times = {k: [] for k in ("idle", "main", "python", "gpu spin", "gpu block")}
    for r in range(args.rounds):
        times["idle"].append(in_worker(None))
        t = time.perf_counter()
        h.add(pos)
        times["main"].append(time.perf_counter() - t)
        times["python"].append(in_worker(python_loop))
        times["gpu spin"].append(in_worker(gpu_sweeps))
        scheduling(True)
        times["gpu block"].append(in_worker(gpu_sweeps))
        scheduling(False)
        print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in times.items()), flush=True)
    print("medians (s): " + ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in times.items()), flush=True)
    # the GPU work itself, spin against blocking wait
    for blocking in (False, True):
        scheduling(blocking)
        t = time.perf_counter()
        for _ in range(10):
            gpu_sweeps()
        print(f"10 × {sweeps_per_call} sweeps, blocking={blocking}: {time.perf_counter() - t:.3f} s", flush=True)
    scheduling(False)


if __name__ == "__main__":
    main()
