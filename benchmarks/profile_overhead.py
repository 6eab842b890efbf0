#!/usr/bin/env python
"""What the Run's phase timers cost (issue 31), two ways, on this machine's CPU:

* A/B: the same seeded runs with the timers on (``RunTimer``, every run's default) and off (``NullTimer``, which still
  reads the clock but records nothing), alternating; the difference of the medians;
* count × cost: the phase entries the run made (its profile's calls) times what one entry costs at most (a
  ``timed_sweep`` around a sampler that does nothing: two clock reads, a ``getattr`` and two dictionary updates,
  against the bare call), divided by the run's wall time. This bounds the whole cost, clock reads included.

Runs: the defaults of ``qmckit run`` (200 walkers, 1000 steps) for bec N = 10 VMC and DMC, and He DMC, whose
DMC steps are the shortest work between two timer calls (a sweep of 200 two-electron walkers).

    python benchmarks/profile_overhead.py [--reps 9]

Writes $OUT (or benchmarks/results)/profile_overhead_<date>.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import date

import numpy as np
from _common import cpu_model, results_stem

from qmckit.perf.run_profile import NullTimer, RunTimer, timed_sweep
from qmckit.runs import RunConfig, make_run

CASES = [("bec N=10 VMC", dict(system="bec", params=dict(n=10))),
         ("bec N=10 DMC", dict(system="bec", params=dict(n=10), method="dmc")),
         ("He DMC", dict(system="atom", params=dict(element="He"), method="dmc"))]


def timed(config: RunConfig, timer) -> tuple[float, int]:
    """(wall seconds of the whole run, phase entries it made)."""
    run = make_run(config)
    run.timer = timer
    start = time.perf_counter()
    run.run()
    return time.perf_counter() - start, sum(run.timer.counts.values())


class _Idle:
    """A sampler whose sweep does nothing."""

    def sweep(self, n, measure=True):
        return None


def entry_cost(n: int = 200_000) -> float:
    """Seconds one timed_sweep adds to a call (median of 5 loops of ``n``)."""
    idle, timer, costs = _Idle(), RunTimer(), []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            idle.sweep(1)
        bare = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(n):
            timed_sweep(timer, idle, 1)
        costs.append((time.perf_counter() - start - bare) / n)
    return float(np.median(costs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    rows = []
    cost = entry_cost()
    print(f"one phase entry: {1e9 * cost:.0f} ns", flush=True)
    for label, fields in CASES:
        config = RunConfig(**fields, seed=3)
        timed(config, RunTimer())  # compile and warm up
        on, off, entries = [], [], 0
        for _ in range(args.reps):  # alternating, so that a drift of the machine's speed hits both alike
            wall, entries = timed(config, RunTimer())
            on.append(wall)
            off.append(timed(config, NullTimer())[0])
        med_on, med_off = float(np.median(on)), float(np.median(off))
        rows.append({"case": label, "config": fields, "walkers": config.walkers, "steps": config.steps,
                     "on_s": on, "off_s": off, "median_on_s": med_on, "median_off_s": med_off,
                     "overhead": med_on / med_off - 1.0, "entries": entries, "bound": entries * cost / med_on})
        print(f"{label}: on {med_on:.4f} s, off {med_off:.4f} s, A/B {100 * rows[-1]['overhead']:+.2f} %, "
              f"{entries} entries × cost: {100 * rows[-1]['bound']:.3f} %", flush=True)
    record = {"benchmark": "profile_overhead", "date": date.today().isoformat(), "machine": cpu_model(),
              "cores": os.cpu_count(), "python": platform.python_version(),
              "command": f"python benchmarks/profile_overhead.py --reps {args.reps}", "limit": 0.01,
              "entry_cost_s": cost, "rows": rows}
    stem = results_stem(f"profile_overhead_{record['date']}")
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    lines = [f"# What the phase timers cost ({record['date']})", "",
             f"Machine: {record['machine']}, {record['cores']} cores, Python {record['python']}. Command: "
             f"`{record['command']}`. Each run whole (set-up, equilibration, blocks, result), the same seed, timers on "
             "(`RunTimer`) and off (`NullTimer`) alternating; medians of the repetitions. Limit: 1 % of a default run.",
             "", f"One phase entry (a timed_sweep around a sampler that does nothing, less the bare call) costs "
             f"{1e9 * cost:.0f} ns.", "",
             "| run | walkers × steps | median on (s) | median off (s) | A/B | phase entries | entries × cost | ≤ 1 % |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        worst = max(r["overhead"], r["bound"])
        lines.append(f"| {r['case']} | {r['walkers']} × {r['steps']} | {r['median_on_s']:.4f} | {r['median_off_s']:.4f} | "
                     f"{100 * r['overhead']:+.2f} % | {r['entries']} | {100 * r['bound']:.3f} % | "
                     f"{'yes' if worst <= 0.01 else 'no'} |")
    lines += ["", "The A/B difference of two medians also carries the machine's run-to-run noise (the spread of the "
              "repetitions is in the JSON); entries × cost bounds what the timers add, clock reads included."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"written {stem}.json and .md")


if __name__ == "__main__":
    main()
