"""Fixed-node DMC of the atoms He, Be, Ne on the GPU (study 002's trial functions): Δτ series with
long equilibration, the branching-cut variants, and the energy trace that shows how long the walkers
take to relax from the VMC to the DMC distribution.

    python benchmarks/atom_dmc_device.py [--walkers 16384] [--budget 480]

Writes $OUT/atom_dmc_<date>.{md,json} and prints a table last. Energies in hartree.
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

from qmckit.methods.dmc import FEEDBACK_TIME  # noqa: E402
from qmckit.runs import RunConfig, make_run  # noqa: E402
from qmckit.stats import extrapolate, format_value_error  # noqa: E402
from qmckit.systems.atom import REFERENCE_ENERGIES  # noqa: E402

OUT = Path(os.environ.get("OUT", "device_out"))
warnings.filterwarnings("ignore", message="reblock:")

# (element, Δτ values, energy caps) in the order they run; the budget cuts from the end
PLAN = [
    ("He", (0.04, 0.02, 0.01), (8.0,)),
    ("Be", (0.02, 0.01, 0.005), (8.0,)),
    ("Be", (0.01,), (True, False)),
    ("Ne", (0.005, 0.0025), (8.0,)),
]


def add_dmc_options(parser) -> None:
    """--feedback-time (the DMC population feedback τ_fb in ħ/E_h), --no-tau-eff (branch with Δτ, not τ_eff) and
    --nuclear-moves (Umrigar–Nightingale–Runge moves near the nuclei): the DMC options :func:`dmc_point` reads."""
    parser.add_argument("--feedback-time", dest="feedback_time", type=float, default=FEEDBACK_TIME,
                        help=f"DMC population feedback time τ_fb, ħ/E_h (qmckit's default {FEEDBACK_TIME})")
    parser.add_argument("--no-tau-eff", dest="effective_time_step", action="store_false",
                        help="branch with Δτ itself, not the effective time step τ_eff")
    parser.add_argument("--nuclear-moves", dest="nuclear_moves", action="store_true",
                        help="drift moves near the nuclei by Umrigar–Nightingale–Runge 1993")


def run_point(element, dt, cap, args):
    params = {"element": element, "en_cusp": True} if args.en_cusp else {"element": element}
    return dmc_point("atom", params, dt, cap, args) | {"element": element}


def dmc_point(system, params, dt, cap, args):
    """One fixed-node DMC point: ``args.equilibrate`` and ``args.measure`` in ħ/E_h, ``args.walkers``,
    ``args.backend``, ``args.seed``. Returns the estimates, branching counters and a 10-chunk trace."""
    cfg = RunConfig(system=system, params=params, method="dmc", backend=args.backend,
                    walkers=args.walkers, dt=dt, steps=max(1, round(args.measure / dt)),
                    dmc_equilibration=round(args.equilibrate / dt), seed=args.seed, energy_cap=cap,
                    feedback_time=args.feedback_time, effective_time_step=args.effective_time_step,
                    nuclear_moves=args.nuclear_moves)
    start = time.perf_counter()
    run = make_run(cfg)
    result = run.run()
    series = run.energy_series()
    # trace: mean mixed energy per tenth of the measured time (relaxation shows as a drift)
    trace = [float(chunk.mean()) for chunk in np.array_split(series, 10)]
    e = result["estimates"]["energy"]
    return {"dt": dt, "cap": cap, "energy": e["mean"], "error": e["error"], "tau": e["tau"],
            "population": result["estimates"]["population"]["mean"], "acceptance": result["acceptance"],
            "energy_cut": result["energy_cut"], "killed": result["killed"], "copied": result["copied"],
            "tau_eff": result["tau_eff"], "effective_time_step": result["effective_time_step"],
            "trace": trace, "wall_s": time.perf_counter() - start, "backend": result["backend"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--walkers", type=int, default=16384)
    parser.add_argument("--equilibrate", type=float, default=10.0, help="DMC equilibration, ħ/E_h")
    parser.add_argument("--measure", type=float, default=20.0, help="measured time per point, ħ/E_h")
    parser.add_argument("--budget", type=float, default=480.0, help="seconds; points that would overrun are skipped")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--en-cusp", action="store_true", help="trial functions with the e–n cusp factor")
    parser.add_argument("--tag", default="", help="suffix of the output file names")
    add_dmc_options(parser)
    parser.add_argument("--plan", default=None,
                        help='e.g. "Ne:0.0025,0.00125:8;Be:0.01:zen,off" (element:Δτ list:cap list; cap zen, off or c)')
    args = parser.parse_args()
    plan = PLAN if args.plan is None else [
        (el, tuple(float(x) for x in dts.split(",")),
         tuple({"zen": True, "off": False}.get(c, None) if c in ("zen", "off") else float(c) for c in caps.split(",")))
        for el, dts, caps in (item.split(":") for item in args.plan.split(";"))]
    start = time.perf_counter()
    points, skipped = [], []
    for element, dts, caps in plan:
        for cap in caps:
            for dt in dts:
                if time.perf_counter() - start > args.budget:
                    skipped.append((element, dt, cap))
                    continue
                try:
                    p = run_point(element, dt, cap, args)
                except Exception as err:  # noqa: BLE001 - report and go on
                    print(f"[atom dmc] {element} Δτ = {dt} cap {cap}: FAILED {err!r}", flush=True)
                    continue
                points.append(p)
                print(f"[atom dmc] {element} Δτ = {dt} cap {cap}: E = {format_value_error(p['energy'], p['error'])} "
                      f"(τ {p['tau']:.0f}), pop {p['population']:.0f}, acc {p['acceptance']:.4f}, cut {p['energy_cut']}, "
                      f"trace {np.round(p['trace'], 4).tolist()}, {p['wall_s']:.0f} s (total {time.perf_counter() - start:.0f} s)",
                      flush=True)
    lines = [f"# Fixed-node DMC of atoms on the GPU — {date.today().isoformat()}", "",
             f"{args.walkers} walkers, {args.equilibrate} ħ/E_h of DMC equilibration and {args.measure} ħ/E_h measured per "
             f"point, backend {points[0]['backend'] if points else '?'}, e–n cusp factor {'on' if args.en_cusp else 'off'}, "
             f"feedback time {args.feedback_time}, branching with {'τ_eff' if args.effective_time_step else 'Δτ'}, "
             f"{'UNR moves near the nucleus' if args.nuclear_moves else 'plain drift moves'}; "
             f"command `{shlex.join(['python', 'benchmarks/atom_dmc_device.py', *sys.argv[1:]])}`.", "",
             "| atom | Δτ | cut | E (E_h) | population | acceptance | τ_eff/Δτ | wall |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for p in points:
        lines.append(f"| {p['element']} | {p['dt']} | {p['cap']} | {format_value_error(p['energy'], p['error'])} | "
                     f"{p['population']:.0f} | {p['acceptance']:.4f} | {p['tau_eff'] / p['dt']:.4f} | {p['wall_s']:.0f} s |")
    fits = {}
    for element in ("He", "Be", "Ne"):
        sel = [p for p in points if p["element"] == element and p["cap"] == 8.0]
        if len(sel) >= 2:
            fit = extrapolate(np.array([p["dt"] for p in sel]), np.array([p["energy"] for p in sel]),
                              np.array([p["error"] for p in sel]), order=1, n_points=None)
            slope, slope_error = float(fit.coefficients[1]), float(np.sqrt(fit.covariance[1, 1]))
            fits[element] = {"energy": fit.energy, "error": fit.error, "chi2_dof": fit.reduced_chi2,
                             "slope": slope, "slope_error": slope_error}
            exact = REFERENCE_ENERGIES[element]["exact"][0]
            lines.append(f"| {element} | → 0 (linear, {len(sel)} points) | 8 | {format_value_error(fit.energy, fit.error)} | "
                         f"exact {exact} | slope {format_value_error(slope, slope_error)} E_h/(ħ/E_h) | | |")
    if skipped:
        lines.append(f"\nskipped for the budget: {skipped}")
    out = {"date": date.today().isoformat(), "args": vars(args), "points": points, "fits": fits, "skipped": skipped,
           "markdown": "\n".join(lines)}
    OUT.mkdir(parents=True, exist_ok=True)
    stem = f"atom_dmc_{out['date']}" + (f"_{args.tag}" if args.tag else "")
    (OUT / f"{stem}.json").write_text(json.dumps(out, indent=1, default=str))
    (OUT / f"{stem}.md").write_text(out["markdown"] + "\n")
    print(out["markdown"])


if __name__ == "__main__":
    main()
