#!/usr/bin/env python
"""Load masking in qmckit's own Run (issue 31): trapped bosons sampled on the GPU while the CPU histograms the
distribution of pair distances (O(N²) per walker), synchronously and with ``analysis="async"``, over analysis
periods m (``density_every``); each async/sync wall-time ratio against the modified Amdahl model's prediction from the
sync run's own profile.

Model (study 004, Eqs. 11 and 13, per analysis period): the sync run spends t_G (the sampling of m sweeps and its
copies) then t_A (one histogram); the async run spends max(t_G, t_A). From the sync run's profile, with n histograms,

    T_async ≈ T_sync − n · min(t̄_G, t̄_A),    t̄_G = (sampling + transfers)/n,  t̄_A = density/n,

and the predicted ratio is T_async/T_sync. The runs also check that async gives the sync estimates and density bit
for bit.

    python benchmarks/analysis_masking_gpu.py [--n 500 --walkers 2048 --steps 256 --every 1,4,16,64]
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/analysis_masking_gpu.py --smoke     # the script under the simulator

Writes $OUT (or benchmarks/results)/analysis_masking_gpu_<date>.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import results_stem  # noqa: E402
from qmckit.perf.run_profile import device_description  # noqa: E402
from qmckit.runs import RunConfig, make_run  # noqa: E402


def predicted_ratio(profile: dict) -> float:
    """T_async/T_sync from the sync run's phases (see the module docstring)."""
    phases = profile["phases"]
    n = phases["density"]["calls"]
    t_g = (phases["sampling"]["seconds"] + phases.get("transfers", {}).get("seconds", 0.0)) / n
    t_a = phases["density"]["seconds"] / n
    return (profile["total_s"] - n * min(t_g, t_a)) / profile["total_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="bosons")
    parser.add_argument("--walkers", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=256, help="measured sweeps per run")
    parser.add_argument("--every", default="1,4,16,64", help="analysis periods m (density_every)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, e.g. under the CUDA simulator")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.smoke:
        args.n, args.walkers, args.steps, args.every = 4, 4, 4, "1,2"
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        from qmckit import runs

        runs.cuda_available = lambda system, sampler="drift": True  # the simulator stands in for the GPU
    base = dict(system="bec", params=dict(n=args.n, lam=8 ** 0.5, a=0.00433, alpha=0.5), backend="cuda",
                walkers=args.walkers, steps=args.steps, equilibration=20, seed=5, density="pair", density_bins=100)
    make_run(RunConfig(**{**base, "steps": 2, "equilibration": 2})).run()  # compile
    rows = []
    for m in (int(x) for x in args.every.split(",")):
        out = {}
        for mode in ("sync", "async"):
            run = make_run(RunConfig(**base, density_every=m, block=max(m, args.steps // 4), analysis=mode))
            t0 = time.perf_counter()
            out[mode] = run.run()
            out[mode]["measured_wall_s"] = time.perf_counter() - t0
        same = out["sync"]["estimates"] == out["async"]["estimates"] and out["sync"]["density"] == out["async"]["density"]
        ratio = out["async"]["measured_wall_s"] / out["sync"]["measured_wall_s"]
        model = predicted_ratio(out["sync"]["profile"])
        rows.append({"m": m, "same_numbers": same, "sync_s": out["sync"]["measured_wall_s"],
                     "async_s": out["async"]["measured_wall_s"], "ratio": ratio, "model": model,
                     "agreement": ratio / model - 1.0, "sync_profile": out["sync"]["profile"],
                     "async_profile": out["async"]["profile"]})
        print(f"m = {m}: sync {rows[-1]['sync_s']:.3f} s, async {rows[-1]['async_s']:.3f} s, ratio {ratio:.3f}, "
              f"model {model:.3f}, same numbers {same}", flush=True)
    record = {"benchmark": "analysis_masking_gpu", "date": date.today().isoformat(),
              "device": device_description("cuda"), "host": device_description("cpu"),
              "command": "python benchmarks/analysis_masking_gpu.py " + " ".join(sys.argv[1:]),
              "config": base, "rows": rows}
    stem = results_stem(f"analysis_masking_gpu_{record['date']}")
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    lines = [f"# Load masking in the Run: pair distances on the CPU beside the GPU sampler ({record['date']})", "",
             f"Device: {record['device']}; host: {record['host']}. Command: `{record['command']}`. Bosons N = {args.n}, "
             f"{args.walkers} walkers, {args.steps} sweeps, the pair-distance histogram every m sweeps.", "",
             "| m | sync (s) | async (s) | async/sync | model | measured/model − 1 | same numbers |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['m']} | {r['sync_s']:.3f} | {r['async_s']:.3f} | {r['ratio']:.3f} | {r['model']:.3f} | "
                     f"{100 * r['agreement']:+.1f} % | {r['same_numbers']} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
