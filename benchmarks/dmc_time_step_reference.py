#!/usr/bin/env python
"""Physics, not speed: the long reference E(Δτ) series that ``tests/test_dmc_time_step.py`` checks a short one against.

The He atom with study 002's ψ_T (hydrogenic 1s orbitals with α = 1.839 ≠ Z, so the e–n cusp is not met and
the time-step error is large), fixed-node DMC (exact here: no nodes) on the CPU backend at Δτ = 0.1, 0.05 and
0.025 ħ/E_h, branching with τ_eff, population feedback τ_fb = 1 (whose error bars hold:
experiments/dmc_feedback_errors_2026-11-26.md). Writes ``data/dmc_time_step_he.json``: every point, the
unweighted linear fit E(Δτ) = E₀ + b Δτ with its propagated covariance, the command, machine and date.

    python benchmarks/dmc_time_step_reference.py            # ≈ 5 min on the 2-core VM
    python benchmarks/dmc_time_step_reference.py --quick    # 20× less work, writes nothing
    python benchmarks/dmc_time_step_reference.py --nuclear-moves   # the same with Umrigar–Nightingale–Runge moves
                                                                   # near the nucleus: data/dmc_time_step_he_unr.json
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
EXACT = -2.903724  # E_h (Pekeris)
PARAMS = dict(element="He")  # study 002's ψ_T without the e–n cusp factor
DTS = (0.1, 0.05, 0.025)
FEEDBACK_TIME = 1.0


def series(dts, walkers: int, time_units: float, seed: int, nuclear_moves: bool = False) -> list[dict]:
    """DMC at each Δτ: ``walkers`` walkers for ``time_units`` ħ/E_h measured after 2 ħ/E_h of DMC equilibration."""
    points = []
    for k, dt in enumerate(dts):
        steps = round(time_units / dt)
        run = make_run(RunConfig(system="atom", params=PARAMS, method="dmc", walkers=walkers, steps=steps, dt=dt,
                                 seed=seed + k, backend="cpu", feedback_time=FEEDBACK_TIME,
                                 dmc_equilibration=round(2.0 / dt), block=max(1, steps // 50),
                                 nuclear_moves=nuclear_moves))
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run.run()
        e = result["estimates"]["energy"]
        points.append({"dt": dt, "energy": e["mean"], "error": e["error"], "tau": e["tau"], "steps": steps,
                       "walkers": walkers, "tau_eff": result["tau_eff"], "acceptance": result["acceptance"],
                       "wall_s": time.perf_counter() - start})
    return points


def linear_fit(points) -> dict:
    """Unweighted least-squares line E(Δτ) = E₀ + b Δτ through the points, with E₀'s and b's errors propagated from
    the points' error bars, and the weighted χ²/dof of that line. Unweighted, so that the fit is the same linear map
    of the points for a short series and a long one: E(Δτ) is curved over this range (χ²/dof ≫ 1 for the long
    series), and a weighted fit would move with the error bars' ratios. E₀ is a summary of the series, not the
    Δτ → 0 limit."""
    x = np.array([p["dt"] for p in points])
    y = np.array([p["energy"] for p in points])
    s = np.array([p["error"] for p in points])
    design = np.vander(x, 2, increasing=True)  # columns 1, Δτ
    pinv = np.linalg.pinv(design)  # (2, n): coefficients = pinv @ y
    coefficients = pinv @ y
    covariance = pinv @ np.diag(s ** 2) @ pinv.T
    residual = (y - design @ coefficients) / s
    dof = len(x) - 2
    return {"intercept": float(coefficients[0]), "intercept_error": float(np.sqrt(covariance[0, 0])),
            "slope": float(coefficients[1]), "slope_error": float(np.sqrt(covariance[1, 1])),
            "covariance": covariance.tolist(), "chi2_dof": float(residual @ residual / dof) if dof > 0 else float("nan")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20× less work; writes nothing")
    ap.add_argument("--walkers", type=int, default=4000)
    ap.add_argument("--time", type=float, default=1000.0, help="measured ħ/E_h per point")
    ap.add_argument("--seed", type=int, default=1993)
    ap.add_argument("--nuclear-moves", action="store_true", help="UNR moves near the nucleus")
    args = ap.parse_args(argv)
    points = series(DTS, args.walkers, args.time / (20 if args.quick else 1), args.seed, args.nuclear_moves)
    fit = linear_fit(points)
    for p in points:
        print(f"Δτ = {p['dt']}: E = {p['energy']:.5f} ± {p['error']:.5f} (τ_eff/Δτ {p['tau_eff'] / p['dt']:.4f}, "
              f"{p['wall_s']:.0f} s)")
    print(f"E₀ = {fit['intercept']:.5f} ± {fit['intercept_error']:.5f} (exact {EXACT}), "
          f"slope {fit['slope']:.4f} ± {fit['slope_error']:.4f}, χ²/dof {fit['chi2_dof']:.2f}")
    if args.quick:
        return 0
    out = {"description": "He atom DMC E(Δτ) (qmckit, CPU), study 002's ψ_T without the e–n cusp factor, "
                          + ("UNR moves near the nucleus (tests/test_nuclear_moves.py)" if args.nuclear_moves else
                             "plain drift moves: the long reference series of tests/test_dmc_time_step.py"),
           "command": "python benchmarks/dmc_time_step_reference.py" + (" --nuclear-moves" if args.nuclear_moves else ""),
           "date": date.today().isoformat(), "nuclear_moves": args.nuclear_moves,
           "machine": f"{platform.node() or 'host'} ({os.cpu_count()} cores; {platform.machine()})",
           "system": PARAMS, "feedback_time": FEEDBACK_TIME, "effective_time_step": True, "exact": EXACT,
           "seed": args.seed, "points": points, "linear_fit": fit}
    path = REPO / "data" / ("dmc_time_step_he_unr.json" if args.nuclear_moves else "dmc_time_step_he.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("written", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
