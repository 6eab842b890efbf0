#!/usr/bin/env python
"""Does the pair-distance histogram run slower on the main thread than in a worker, and how much do identical
masking runs scatter on the GPU machine's host? (issue 31; a one-off diagnostic of analysis_masking_gpu.py's rows)

Trapped bosons N = 500, 512 walkers on the GPU: one histogram of the walkers' pair distances three times on the main
thread and in a worker thread, then the same 128-sweep run (histogram every 16 sweeps) sync, async, sync, async.

    python experiments/histogram_thread_timing.py
"""
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qmckit.observables import DensityHistogram  # noqa: E402
from qmckit.runs import RunConfig, make_run  # noqa: E402

warnings.filterwarnings("ignore")
base = dict(system="bec", params=dict(n=500, lam=8 ** 0.5, a=0.00433, alpha=0.5), walkers=512, steps=16, equilibration=2,
            seed=5, density="pair", density_bins=100, backend="cuda", density_every=16, block=16)
run = make_run(RunConfig(**base))
run.run()
pos = run.walkers.positions.copy()
print("contiguous", run.walkers.positions.flags["C_CONTIGUOUS"], run.walkers.positions.strides)
h = DensityHistogram("pair", 100, 10.0)
h.add(pos[:2])
pool = ThreadPoolExecutor(1)
for trial in range(3):
    t = time.perf_counter(); h.add(pos); tm = time.perf_counter() - t
    t = time.perf_counter(); pool.submit(h.add, pos).result(); tw = time.perf_counter() - t
    t = time.perf_counter(); h.add(run.walkers.positions); tr = time.perf_counter() - t
    print(f"main {tm:.3f} worker {tw:.3f} main-on-walkers {tr:.3f}", flush=True)
for mode in ("sync", "async", "sync", "async"):
    r = make_run(RunConfig(**{**base, "steps": 128, "block": 128, "equilibration": 20}, analysis=mode))
    t = time.perf_counter(); res = r.run(); dt = time.perf_counter() - t
    ph = res["profile"]["phases"]
    print(mode, f"{dt:.3f}", {k: round(v["seconds"], 3) for k, v in ph.items()}, res["profile"].get("masked"), flush=True)
