#!/usr/bin/env python
"""Should a CPU-only async run leave a core to the analysis thread? (issue 31; a one-off experiment)

On the GPU machine's 16-core host the async CPU rows of ``benchmarks/analysis_masking_gpu.py`` showed the sampler's own
phases growing by about a fifth while the analysis thread ran (helium: sampling 3.2 → 4.0 s, measurements 6.4 → 7.6 s),
so the run saved less than the two-device model says. A parallel region ends with its slowest thread, and one of the
sampler's threads shares its core with the analysis. This runs trapped bosons N = 300, 128 walkers, the pair histogram
every sweep, sync and async, with the sampler on all numba threads and on one fewer, and checks that the thread count
changes no number (the estimates and the density, bit for bit).

    python experiments/cpu_async_threads.py            # writes experiments/cpu_async_threads_<date>.md
"""
import json
import os
import platform
import sys
import time
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402

from qmckit.runs import RunConfig, make_run  # noqa: E402

warnings.filterwarnings("ignore")
BASE = dict(system="bec", params=dict(n=300, lam=8 ** 0.5, a=0.00433, alpha=0.5), walkers=128, steps=64,
            equilibration=4, seed=5, density="pair", density_bins=100, backend="cpu", density_every=1, block=64)


def main() -> None:
    cores = numba.config.NUMBA_NUM_THREADS
    make_run(RunConfig(**{**BASE, "steps": 2, "equilibration": 2})).run()  # compiles outside the timing
    lines, numbers = [], set()
    cases = [(cores, "sync"), (max(1, cores - 1), "sync"), (cores, "async"), (max(1, cores - 1), "async")]
    for rep in range(3):
        for threads, mode in cases:
            numba.set_num_threads(threads)
            run = make_run(RunConfig(**BASE, analysis=mode))
            t0 = time.perf_counter()
            out = run.run()
            wall = time.perf_counter() - t0
            numbers.add(json.dumps([out["estimates"], out["density"]], sort_keys=True))
            phases = {k: round(v["seconds"], 3) for k, v in out["profile"]["phases"].items()}
            masked = out["profile"].get("masked", {}).get("seconds")
            lines.append(f"| {rep} | {mode} | {threads} | {wall:.3f} | {phases.get('sampling', 0):.3f} | "
                         f"{phases.get('density', 0):.3f} | {'' if masked is None else f'{masked:.3f}'} |")
            print(lines[-1], flush=True)
    numba.set_num_threads(cores)
    text = "\n".join([
        f"# A CPU-only async run: the sampler on all threads or one fewer ({date.today().isoformat()})", "",
        f"`python experiments/cpu_async_threads.py` on `{platform.node()}` ({os.cpu_count()} cores, {cores} numba "
        f"threads), Python {platform.python_version()}, numba {numba.__version__}. Trapped bosons N = 300, 128 walkers, "
        "64 sweeps, the pair histogram every sweep; three rounds of the four cases.", "",
        "| round | analysis | sampler threads | wall (s) | sampling (s) | density on the main thread (s) | "
        "histogram in the worker (s) |", "|---:|---|---:|---:|---:|---:|---:|", *lines, "",
        f"Same numbers for every thread count and mode: {len(numbers) == 1}.", ""])
    out_path = Path(__file__).with_name(f"cpu_async_threads_{date.today().isoformat()}.md")
    out_path.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
