#!/usr/bin/env python
"""Is the pair histogram's speed a property of the thread or of the core it runs on? (issue 31; follows
histogram_interference.py, which found the analysis thread's histogram 19 % slower than the main thread's)

Trapped bosons N = 500, 512 walkers (positions from a short GPU run): one histogram of the walkers' pair distances,

  core map    in a worker thread pinned to each core in turn (os.sched_setaffinity on the thread), --rounds times:
              is any core steadily slower than the others?
  same core   on the main thread and in the worker, both pinned to one core, alternating: does the thread matter
              when the core does not change?
  unpinned    on the main thread and in the worker, no pinning, alternating, with the core each ran on (the
              "processor" field of /proc/self/task/TID/stat read right after): does the time follow the core?
  while GPU   the worker pinned to each core in turn while the main thread (pinned to core 0) runs GPU sweeps: does
              the thread waiting on the GPU slow a neighbouring core?

The thread's CPU time (time.thread_time) is printed beside the wall time: a thread that is descheduled (a shared
core, the host's steal) has CPU time < wall time; a thread that executes slower has both equal and longer.

    python experiments/histogram_core_map.py [--rounds 3] [--walkers 512] [--backend cuda]
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qmckit.observables import DensityHistogram  # noqa: E402
from qmckit.runs import RunConfig, make_run  # noqa: E402


def last_core() -> int:
    """The core this thread last ran on."""
    with open(f"/proc/self/task/{threading.get_native_id()}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--walkers", type=int, default=512)
    parser.add_argument("--backend", default="cuda")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    print("\n".join(l for l in lscpu.splitlines() if l.split(":")[0] in
                    ("Model name", "CPU(s)", "Thread(s) per core", "Hypervisor vendor", "NUMA node(s)")), flush=True)
    cores = sorted(os.sched_getaffinity(0))
    print("affinity", cores, flush=True)
    base = dict(system="bec", params=dict(n=500, lam=8 ** 0.5, a=0.00433, alpha=0.5), walkers=args.walkers,
                steps=16, equilibration=2, seed=5, density="pair", density_bins=100, backend=args.backend, density_every=16, block=16)
    run = make_run(RunConfig(**base))
    run.run()
    pos = run.walkers.positions.copy()
    h = DensityHistogram("pair", 100, 10.0)
    h.add(pos[:2])
    pool = ThreadPoolExecutor(1)

    def timed(pin=None):
        """(wall s, thread CPU s, core) of one histogram on the calling thread, pinned to ``pin`` if given."""
        if pin is not None:
            os.sched_setaffinity(0, {pin})
        t, c = time.perf_counter(), time.thread_time()
        h.add(pos)
        wall, cpu = time.perf_counter() - t, time.thread_time() - c
        core = last_core()
        if pin is not None:
            os.sched_setaffinity(0, cores)
        return wall, cpu, core

    def show(label, rows):
        walls = [r[0] for r in rows]
        print(f"{label}: median wall {statistics.median(walls):.3f} s, CPU/wall "
              f"{statistics.median(r[1] / r[0] for r in rows):.3f}; " +
              " ".join(f"{w:.3f}@{c}" for w, _, c in rows), flush=True)

    print("\n# core map (worker pinned to each core)", flush=True)
    per_core = {c: [] for c in cores}
    for r in range(args.rounds):
        for c in cores:
            per_core[c].append(pool.submit(timed, c).result())
    for c in cores:
        show(f"core {c:2d}", per_core[c])

    print("\n# same core: main and worker pinned to one core, alternating", flush=True)
    for c in (cores[0], cores[len(cores) // 2]):
        main_rows, worker_rows = [], []
        for r in range(2 * args.rounds):
            main_rows.append(timed(c))
            worker_rows.append(pool.submit(timed, c).result())
        show(f"core {c} main  ", main_rows)
        show(f"core {c} worker", worker_rows)

    print("\n# unpinned: main and worker alternating (time@core)", flush=True)
    main_rows, worker_rows = [], []
    for r in range(4 * args.rounds):
        main_rows.append(timed())
        worker_rows.append(pool.submit(timed).result())
    show("main  ", main_rows)
    show("worker", worker_rows)

    print("\n# while GPU: main thread pinned to core 0 runs GPU sweeps, worker pinned to each core", flush=True)
    os.sched_setaffinity(0, {cores[0]})
    busy = {}
    for c in cores[1:]:
        future = pool.submit(timed, c)
        while not future.done():
            run.vmc.sweep(16, measure=True)
        busy[c] = future.result()
    os.sched_setaffinity(0, cores)
    for c in cores[1:]:
        idle = statistics.median(r[0] for r in per_core[c])
        w, cpu, core = busy[c]
        print(f"core {c:2d}: {w:.3f} s (CPU/wall {cpu / w:.3f}) against {idle:.3f} s idle", flush=True)


if __name__ == "__main__":
    main()
