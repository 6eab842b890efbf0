#!/usr/bin/env python
"""Physics, not speed: the population-control bias of qmckit's DMC, E(1/W), for the He atom and bosons B2 (issue 25).

He with study 002's ψ_T and the e–n cusp factor (nodeless: DMC is exact but for Δτ and the population bias),
Δτ = 0.01, target populations W = 25 … 5000 at the same total work (walkers × steps), for the population
feedback times τ_fb = 0.1 (qmckit's default) and 1. Population control biases the energy by about a / W: the
feedback correlates E_T with the population, and so the weights with the energy. Writes
``data/dmc_population_bias.json`` (what ``notebooks/atoms.ipynb`` plots) with the command, machine and date.

    python benchmarks/dmc_population_bias.py            # ≈ 6 min on one core of the 2-core VM
    python benchmarks/dmc_population_bias.py --quick    # 10× less work, writes nothing
    python benchmarks/dmc_population_bias.py --system b2    # study 002's set B2 (N = 20 bosons, energy per particle
        # in ħω_⊥) at W = 50 … 5000, τ_fb = 0.1: data/dmc_population_bias_b2.json (--backend cuda: on the GPU)
    python benchmarks/dmc_population_bias.py --system toy   # one boson, poor ψ_T, τ_fb = 0.05 (≈ 4 min):
        # data/dmc_population_bias_toy.json, the reference of tests/test_dmc_population_bias.py
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
DT = 0.01
_B2 = {k: v for k, v in json.loads((REPO / "data" / "bec_table72.json").read_text())["sets"]["B2"].items()
       if k in ("n", "lam", "a", "alpha")}
# name → (system, params, reference energy and its source, populations, feedback times, walker-steps per point, Δτ)
STUDIES = {
    "he": ("atom", dict(element="He", en_cusp=True), -2.903724, "exact (Pekeris)", (10, 25, 50, 200, 1000, 5000),
           (0.1, 1.0), 10_000_000, DT),
    "b2": ("bec", _B2, 3.34524, "DMC of study 002's thesis, 3.34524(24) ħω_⊥ per particle", (50, 200, 1000, 5000),
           (0.1,), 10_000_000, DT),
    # one boson in an isotropic trap with a poor Gaussian (α = 0.3; VMC 1.7) and a tight population leash: a bias
    # large enough to resolve in seconds, the reference of tests/test_dmc_population_bias.py
    "toy": ("bec", dict(n=1, lam=1.0, a=0.0, alpha=0.3), 1.5, "exact: (2 + λ)/2 ħω per particle",
            (10, 30, 100, 1000), (0.05,), 20_000_000, 0.05),
}


def point(study: str, walkers: int, feedback: float, walker_steps: int, seed: int, backend: str) -> dict:
    system, params = STUDIES[study][:2]
    dt = STUDIES[study][-1]
    steps = max(200, walker_steps // walkers)
    run = make_run(RunConfig(system=system, params=params, method="dmc", walkers=walkers,
                             steps=steps, dt=dt, seed=seed, backend=backend, feedback_time=feedback,
                             dmc_equilibration=max(100, int(2 / dt)), block=max(1, steps // 50)))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run.run()
    energy = result["estimates"][run.system.energy_key]
    return {"walkers": walkers, "feedback_time": feedback, "steps": steps, "energy": energy["mean"],
            "error": energy["error"], "tau": energy["tau"], "population": result["estimates"]["population"]["mean"],
            "wall_s": time.perf_counter() - start}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10× less work per point; writes nothing")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--system", choices=tuple(STUDIES), default="he")
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    args = ap.parse_args(argv)
    system, params, EXACT, reference, populations, feedback_times, walker_steps, dt = STUDIES[args.system]
    work = walker_steps // (10 if args.quick else 1)
    rows = []
    for feedback in feedback_times:
        for k, walkers in enumerate(populations):
            rows.append(point(args.system, walkers, feedback, work, args.seed + k, args.backend))
            r = rows[-1]
            print(f"τ_fb = {feedback:<4g} W = {walkers:5d}: E = {r['energy']:.5f} ± {r['error']:.5f} "
                  f"({(r['energy'] - EXACT) / r['error']:+.1f} σ from the reference), {r['steps']} steps, "
                  f"{r['wall_s']:.0f} s",
                  flush=True)
    fits = {}
    for feedback in feedback_times:
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
    command = "python benchmarks/dmc_population_bias.py" + ("" if args.system == "he" else
                                                            f" --system {args.system} --backend {args.backend}")
    out = {"description": f"{system} {params} DMC (qmckit, backend {args.backend}): energy against the target "
                          "population, same work per point",
           "command": command, "date": date.today().isoformat(),
           "machine": f"{platform.node()} ({os.cpu_count()} cores; {platform.processor() or platform.machine()})",
           "system": params, "dt": dt, "walker_steps_per_point": work, "backend": args.backend,
           "exact": EXACT, "reference": reference, "points": rows, "fits": fits}
    path = REPO / "data" / ("dmc_population_bias.json" if args.system == "he" else
                            f"dmc_population_bias_{args.system}.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("written", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
