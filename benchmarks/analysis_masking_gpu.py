#!/usr/bin/env python
"""Load masking in qmckit's own Run (issue 31): trapped bosons and liquid ⁴He sampled on the GPU while the CPU
histograms the distribution of pair distances (O(N²) per walker), synchronously and with ``analysis="async"``, over analysis
periods m (``density_every``); each async/sync wall-time ratio against the modified Amdahl model's prediction from the
sync run's own profile.

Model (study 004, Eqs. 11 and 13, per analysis period): the sync run spends t_G (the sampling of m sweeps, its
copies, the measurements: all the main thread does besides) then t_A (one histogram); the async run spends
max(t_G, t_A). From the sync run's profile, with n histograms,

    T_async ≈ T_sync − (n − b) · min(t̄_G, t̄_A),    t̄_G = (T_sync − density)/n,  t̄_A = density/n,

where b is the number of blocks: the run waits for the histogram at the end of each block (so that the block's density
is complete when it is recorded and checkpointed), and that last histogram of a block overlaps nothing. The predicted
ratio is T_async/T_sync; the runs here are one block each, as a long production block is. The runs also check that
async gives the sync estimates and density bit for bit.

    python benchmarks/analysis_masking_gpu.py [--n 500 --walkers 512 --steps 128 --every 16,64]
    python benchmarks/analysis_masking_gpu.py --steps 1024 --every 128,256 --helium-steps 1024 --helium-every 64,128 \
        --cpu-steps 256 --cpu-every 16 --reps 6 --budget 480
    python benchmarks/analysis_masking_gpu.py --cases bec --every "" --sweep-rows r:1024:64,pair:96:8 --reps 2
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/analysis_masking_gpu.py --smoke     # the script under the simulator

The same runs for liquid ⁴He (N = 64, minimum-image pair distances), and the shortest period of each on the
host's CPU cores (the CPU figure of the same run). Writes $OUT (or benchmarks/results)/
analysis_masking_gpu_<cases>_<date>.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from _common import Budget, results_stem  # noqa: E402
from qmckit.perf import report  # noqa: E402
from qmckit.perf.run_profile import device_description  # noqa: E402
from qmckit.runs import RunConfig, make_run  # noqa: E402


def predicted_ratio(profile: dict, blocks: int) -> float:
    """T_async/T_sync from the sync run's phases over ``blocks`` blocks (see the module docstring)."""
    n = profile["phases"]["density"]["calls"]
    t_a = profile["phases"]["density"]["seconds"] / n
    t_g = (profile["total_s"] - profile["phases"]["density"]["seconds"]) / n  # all the main thread does besides
    return (profile["total_s"] - (n - blocks) * min(t_g, t_a)) / profile["total_s"]


def own_histogram_agreement(row: dict, blocks: int = 1) -> list:
    """measured/model − 1 of each async run of ``row``, the model fed with that run's own histogram time (its profile's
    "masked" seconds) instead of the sync run's: t̄_G from the sync run, t̄_A' from the async run. This separates the
    masking (does the async run take what max(t_G, t_A) says?) from a change of the histogram's own speed between runs,
    which no prediction from the sync run can foresee."""
    p = row["sync_profile"]
    n = p["phases"]["density"]["calls"]
    t_g = (p["total_s"] - p["phases"]["density"]["seconds"]) / n
    out = []
    for wall, profile in zip(row["async_walls"], row["async_profiles"]):
        t_a = profile["masked"]["seconds"] / n
        out.append(wall / (n * (t_g + t_a) - (n - blocks) * min(t_g, t_a)) - 1.0)
    return out


def histogram_seconds(row: dict) -> dict:
    """The histograms' time of each run of ``row`` (s): the sync runs' "density" phase and the async runs' "masked"
    seconds (in the analysis thread), so a record shows whether the histogram itself ran slower in one mode (the
    host's single-core speed drifts from second to second: experiments/histogram_core_map_2026-11-27.txt)."""
    return {"sync": [p["phases"]["density"]["seconds"] for p in row.get("sync_profiles", [row["sync_profile"]])],
            "async": [p["masked"]["seconds"] for p in row["async_profiles"]]}


def cases(args) -> dict:
    """The runs, by name: BEC N bosons (pair distances, O(N²) per walker) and liquid ⁴He (minimum-image pair
    distances, g(r)'s histogram), both VMC on the GPU."""
    bec = dict(system="bec", params=dict(n=args.n, lam=8 ** 0.5, a=0.00433, alpha=0.5), walkers=args.walkers,
               steps=args.steps, equilibration=20, seed=5, density="pair", density_bins=100)
    bec["every"] = args.every
    helium = dict(every=args.helium_every, system="helium", params=dict(n=args.helium_n), sampler="gauss", step=0.81,
                  target_acceptance=0.37, walkers=args.helium_walkers, steps=args.helium_steps or args.steps,
                  equilibration=20, seed=7,
                  density="pair", density_bins=100)
    if args.smoke:
        bec.update(params=dict(n=4, lam=8 ** 0.5, a=0.00433, alpha=0.5), walkers=4, steps=4, equilibration=2)
        helium.update(params=dict(n=8), walkers=2, steps=4, equilibration=2)
    return {f"helium N = {helium['params']['n']}": helium, f"bec N = {bec['params']['n']}": bec}


def timed_pair(base: dict, backend: str, m: int, reps: int, steps: int) -> dict:
    """The sync and async runs of ``base`` (``steps`` measured sweeps) with the histogram every ``m`` sweeps, ``reps``
    times each, interleaved (so that a drift of the host's speed hits both): one row with the median wall times, their
    ratio, and the model's ratio from the profile of the median sync run."""
    walls, results = {"sync": [], "async": []}, {"sync": [], "async": []}
    for _ in range(reps):
        for mode in ("sync", "async"):
            run = make_run(RunConfig(**{**base, "steps": steps}, backend=backend, density_every=m, block=steps,
                                     analysis=mode))
            t0 = time.perf_counter()
            results[mode].append(run.run())
            walls[mode].append(time.perf_counter() - t0)

    def numbers(result):  # as text, where NaN equals NaN (a one-block run has no error bars)
        return json.dumps([result["estimates"], result["density"]], sort_keys=True)

    same = len({numbers(r) for mode in results for r in results[mode]}) == 1
    median = {mode: float(np.median(walls[mode])) for mode in walls}
    middle = results["sync"][int(np.argsort(walls["sync"])[len(walls["sync"]) // 2])]
    ratio = median["async"] / median["sync"]
    model = predicted_ratio(middle["profile"], blocks=1)
    row = {"backend": backend, "density": base["density"], "m": m, "steps": steps, "reps": reps, "same_numbers": same,
           "sync_s": median["sync"],
            "async_s": median["async"], "sync_walls": walls["sync"], "async_walls": walls["async"], "ratio": ratio,
            "model": model, "agreement": ratio / model - 1.0, "sync_profile": middle["profile"],
            "sync_result": {k: v for k, v in middle.items() if k != "density"},  # what qmckit.perf.report reads
            "sync_profiles": [r["profile"] for r in results["sync"]],
            "async_profiles": [r["profile"] for r in results["async"]]}
    row["own_histogram_agreement"] = own_histogram_agreement(row)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="bosons")
    parser.add_argument("--walkers", type=int, default=512)
    parser.add_argument("--helium-n", type=int, default=64, help="helium atoms")
    parser.add_argument("--helium-walkers", type=int, default=4224)
    parser.add_argument("--steps", type=int, default=128, help="measured sweeps per run")
    parser.add_argument("--helium-steps", type=int, default=None, help="helium's measured sweeps (default --steps)")
    parser.add_argument("--cpu-steps", type=int, default=None, help="measured sweeps of the CPU rows (default: the "
                        "case's)")
    parser.add_argument("--cpu-every", type=int, default=None, help="the CPU rows' period m (default: each case's "
                        "shortest)")
    parser.add_argument("--every", default="16,64", help="the bosons' analysis periods m (density_every; \"\": none)")
    parser.add_argument("--helium-every", default="1,4,16", help="helium's analysis periods m")
    parser.add_argument("--sweep-rows", default="", help="the bosons with a density measured every sweep (m = 1), "
                        "as kind:gpu_steps:cpu_steps, comma-separated (e.g. r:1024:128,pair:32:32): the run profiled "
                        "as it comes, whose model gives the optimal analysis period")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds; no new run starts after them")
    parser.add_argument("--cases", default="helium,bec", help="which runs: helium, bec (comma-separated)")
    parser.add_argument("--reps", type=int, default=3, help="runs of each mode on the GPU, medians quoted (the CPU "
                        "rows: one)")
    parser.add_argument("--remodel", default=None, help="a record (.json) of this benchmark: recompute its model "
                        "column from the recorded sync profiles and rewrite it (no runs)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, e.g. under the CUDA simulator")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.smoke:
        args.every = args.helium_every = "1,2"
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        from qmckit import runs

        runs.cuda_available = lambda system, sampler="drift": True  # the simulator stands in for the GPU
    if args.remodel:
        record = json.loads(Path(args.remodel).read_text())
        for r in record["rows"]:  # the model again, from each row's recorded sync profile
            r["model"] = predicted_ratio(r["sync_profile"], blocks=1)
            r["agreement"] = r["ratio"] / r["model"] - 1.0
            r["own_histogram_agreement"] = own_histogram_agreement(r)
        record["remodelled"] = "python benchmarks/analysis_masking_gpu.py " + shlex.join(sys.argv[1:])
        write(record, Path(args.remodel).with_suffix(""), max(r["reps"] for r in record["rows"]))
        return
    budget = Budget(args.budget)
    rows = []
    chosen = {name: base for name, base in cases(args).items() if name.split()[0] in args.cases.split(",")}
    for name, base in chosen.items():
        periods = [int(x) for x in base.pop("every").split(",") if x]
        # the CPU figure of the same run: every core of the host, the shortest period (the heaviest analysis)
        plan = [(base, "cuda", m, base["steps"]) for m in periods]
        if periods:
            plan.append((base, "cpu", args.cpu_every or periods[0], args.cpu_steps or base["steps"]))
        for spec in filter(None, args.sweep_rows.split(",") if name.startswith("bec") else []):
            kind, gpu_steps, cpu_steps = spec.split(":")
            plan += [({**base, "density": kind}, "cuda", 1, int(gpu_steps)),
                     ({**base, "density": kind}, "cpu", 1, int(cpu_steps))]
        compiled = set()
        for case, backend, m, steps in plan:
            if budget.left() < 0:
                print(f"budget spent: {name} {backend} {case['density']} m = {m} not run", flush=True)
                continue
            if (backend, case["density"]) not in compiled:  # compiles the backend's kernels outside the timing
                make_run(RunConfig(**{**case, "steps": 2, "equilibration": 2}, backend=backend)).run()
                compiled.add((backend, case["density"]))
            rows.append({"case": name, **timed_pair(case, backend, m, args.reps if backend == "cuda" else 1, steps)})
            r = rows[-1]
            print(f"{name} {backend} {case['density']} m = {m}: sync {r['sync_s']:.3f} s, async {r['async_s']:.3f} s, ratio "
                  f"{r['ratio']:.3f}, model {r['model']:.3f}, same numbers {r['same_numbers']}", flush=True)
    record = {"benchmark": "analysis_masking_gpu", "date": date.today().isoformat(),
              "device": device_description("cuda"), "host": device_description("cpu"),
              "command": "python benchmarks/analysis_masking_gpu.py " + shlex.join(sys.argv[1:]),
              "config": {name: cases(args)[name] for name in chosen}, "reps": args.reps, "rows": rows}
    sweep = "_every_sweep" if args.sweep_rows else ""
    write(record, results_stem(f"analysis_masking_gpu_{'_'.join(args.cases.split(','))}{sweep}_{record['date']}"),
          args.reps)


def write(record: dict, stem: Path, reps: int) -> None:
    """The record as ``stem``.json and a table as ``stem``.md."""
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    remodelled = f" Model column from `{record['remodelled']}`." if record.get("remodelled") else ""
    lines = [f"# Load masking in the Run: pair distances on the CPU beside the GPU sampler ({record['date']})", "",
             f"Device: {record['device']}; host: {record['host']}. Command: `{record['command']}`.{remodelled} "
             "The measured sweeps of each run in one block, the density histogram (column density: r the one-body radial "
             "density, pair the pair distances) every m sweeps; medians of "
             f"{reps} interleaved runs of each mode on the GPU; the cpu rows are the same runs on the host's cores "
             "(one run each).", "",
             "Model: from the median sync run's phases (the prediction). Own histogram: the same model with each async "
             "run's own histogram time, measured/model − 1 per async run (the masking alone, without the change of the "
             "histogram's speed from run to run).", "",
             "Histogram (s): the histograms' time in each mode's runs, median [lowest, highest] (sync: on the main "
             "thread between sweeps; async: in the analysis thread beside the sampler).", "",
             "α, m_opt: `qmckit.perf.report` of the median sync run: one histogram's time over one sweep's, and the "
             "analysis period (sweeps, at least 1) that minimises the time per independent sample, analysing after the "
             "sweeps (√(2 m_c α), m_c from the energy's τ) and beside them (α).", "",
             "| case | density | backend | sweeps | m | runs | sync (s) | async (s) | async/sync | model | "
             "measured/model − 1 | own histogram: measured/model − 1 | histogram (s), sync | histogram (s), async | "
             "α | m_opt after / beside | same numbers |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---|---|"]

    def spread(xs):
        return f"{np.median(xs):.2f} [{min(xs):.2f}, {max(xs):.2f}]"

    for r in record["rows"]:
        model = report(r["sync_result"]) if "sync_result" in r else None
        optimum = (f"{model.alpha:.3g} | {max(1.0, model.m_opt_sequential):.3g} / {max(1.0, model.m_opt_masked):.3g}"
                   if model is not None and model.alpha is not None else " | ")
        lines.append(f"| {r['case']} | {r.get('density', 'pair')} | {r['backend']} | {r.get('steps', '')} | {r['m']} | "
                     f"{r['reps']} | "
                     f"{r['sync_s']:.3f} | "
                     f"{r['async_s']:.3f} | {r['ratio']:.3f} | {r['model']:.3f} | {100 * r['agreement']:+.1f} % | "
                     f"{', '.join(f'{100 * x:+.1f} %' for x in r.get('own_histogram_agreement', []))} | "
                     f"{spread(histogram_seconds(r)['sync'])} | {spread(histogram_seconds(r)['async'])} | "
                     f"{optimum} | {r['same_numbers']} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")

if __name__ == "__main__":
    main()
