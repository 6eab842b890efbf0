#!/usr/bin/env python
"""Physics, not speed: the population-control bias of qmckit's DMC, E(1/W), for the He atom (issue 25).

He with study 002's ψ_T and the e–n cusp factor (nodeless: DMC is exact but for Δτ and the population bias),
Δτ = 0.01, target populations W = 25 … 5000 at the same total work (walkers × steps), for the population
feedback times τ_fb = 0.1 (qmckit's default) and 1. Population control biases the energy by about a / W: the
feedback correlates E_T with the population, and so the weights with the energy. Writes
``data/dmc_population_bias.json`` (what ``notebooks/atoms.ipynb`` plots) with the command, machine and date.

    python benchmarks/dmc_population_bias.py            # ≈ 6 min on one core of the 2-core VM
    python benchmarks/dmc_population_bias.py --quick    # 10× less work, writes nothing
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from datetime import date
from pathlib import Path

import numpy as np

from qmckit.runs import RunConfig, make_run

REPO = Path(__file__).resolve().parents[1]
EXACT = -2.903724  # E_h
POPULATIONS = (10, 25, 50, 200, 1000, 5000)
FEEDBACK_TIMES = (0.1, 1.0)
WALKER_STEPS = 10_000_000  # per point: walkers × recorded steps
DT = 0.01


def point(walkers: int, feedback: float, walker_steps: int, seed: int) -> dict:
    steps = max(200, walker_steps // walkers)
    run = make_run(RunConfig(system="atom", params=dict(element="He", en_cusp=True), method="dmc", walkers=walkers,
                             steps=steps, dt=DT, seed=seed, backend="cpu", feedback_time=feedback,
                             dmc_equilibration=max(100, int(2 / DT))))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run.run()
    energy = result["estimates"]["energy"]
    return {"walkers": walkers, "feedback_time": feedback, "steps": steps, "energy": energy["mean"],
            "error": energy["error"], "tau": energy["tau"], "population": result["estimates"]["population"]["mean"],
            "wall_s": time.perf_counter() - start}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10× less work per point; writes nothing")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args(argv)
    work = WALKER_STEPS // (10 if args.quick else 1)
    rows = []
    for feedback in FEEDBACK_TIMES:
        for k, walkers in enumerate(POPULATIONS):
            rows.append(point(walkers, feedback, work, args.seed + k))
            r = rows[-1]
            print(f"τ_fb = {feedback:<4g} W = {walkers:5d}: E = {r['energy']:.5f} ± {r['error']:.5f} "
                  f"({(r['energy'] - EXACT) / r['error']:+.1f} σ from exact), {r['steps']} steps, {r['wall_s']:.0f} s",
                  flush=True)
    fits = {}
    for feedback in FEEDBACK_TIMES:
        sel = [r for r in rows if r["feedback_time"] == feedback]
        x = np.array([1.0 / r["walkers"] for r in sel])
        y, s = np.array([r["energy"] for r in sel]), np.array([r["error"] for r in sel])
        A = np.vstack([np.ones_like(x), x]).T / s[:, None]
        coef, *_ = np.linalg.lstsq(A, y / s, rcond=None)
        cov = np.linalg.inv(A.T @ A)
        chi2 = float(np.sum(((A @ coef) - y / s) ** 2))
        fits[str(feedback)] = {"intercept": float(coef[0]), "intercept_error": float(np.sqrt(cov[0, 0])),
                               "slope": float(coef[1]), "slope_error": float(np.sqrt(cov[1, 1])), "chi2": chi2,
                               "dof": len(sel) - 2}
        f = fits[str(feedback)]
        print(f"τ_fb = {feedback:g}: E(1/W) = {f['intercept']:.5f}({f['intercept_error']:.5f}) + "
              f"({f['slope']:.4f} ± {f['slope_error']:.4f}) / W, χ² = {chi2:.1f} for {f['dof']} dof")
    if args.quick:
        return 0
    out = {"description": "He atom DMC (qmckit, CPU): energy against the target population, same work per point",
           "command": "python benchmarks/dmc_population_bias.py", "date": date.today().isoformat(),
           "machine": f"{platform.node()} ({os.cpu_count()} cores; {platform.processor() or platform.machine()})",
           "system": {"element": "He", "en_cusp": True}, "dt": DT, "walker_steps_per_point": work,
           "exact": EXACT, "points": rows, "fits": fits}
    path = REPO / "data" / "dmc_population_bias.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("written", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
