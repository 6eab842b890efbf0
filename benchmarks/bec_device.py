"""Trapped bosons on the lent GPU machine: B4 (N = 500) VMC and DMC on the GPU, and the
full-precision Table 7.2 (B1–B3) on the machine's CPU cores.

    python benchmarks/bec_device.py b4 [--budget 420]      # GPU
    python benchmarks/bec_device.py table                  # CPU, all cores, --precision full

Writes markdown and JSON into $OUT (or ./device_out) and prints a summary table last.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from qmckit.runs import RunConfig, make_run, time_step_series  # noqa: E402
from qmckit.stats import extrapolate, format_value_error  # noqa: E402
from qmckit.studies import bec  # noqa: E402

OUT = Path(os.environ.get("OUT", "device_out"))
B4 = dict(n=500, lam=2.8284271247461903, a=0.15155, alpha=0.7687)


def machine() -> dict:
    info = {"host": socket.gethostname(), "date": date.today().isoformat(), "python": platform.python_version(),
            "cpu_count": os.cpu_count()}
    try:
        from numba import cuda

        name = cuda.get_current_device().name if cuda.is_available() else None
        info["gpu"] = name.decode() if isinstance(name, bytes) else name
    except Exception as err:  # noqa: BLE001 - report, do not die
        info["gpu"] = f"unavailable ({err})"
    return info


def run_b4(args) -> dict:
    out = {"machine": machine(), "params": B4}
    start = time.perf_counter()
    if args.no_vmc:
        return run_b4_dmc(args, out, start, None)
    vmc_cfg = RunConfig(system="bec", params=B4, method="vmc", backend=args.backend, walkers=args.vmc_walkers,
                        steps=args.vmc_steps, dt=0.02, equilibration=300, block=100, seed=500)
    run = make_run(vmc_cfg)
    result = run.run(lambda d, t: print(f"[b4 vmc] block {d}/{t} at {time.perf_counter() - start:.0f} s", flush=True))
    out["vmc"] = {"config": {k: v for k, v in vmc_cfg.__dict__.items()}, "result": result}
    e = result["estimates"]["energy_per_particle"]
    v = result["estimates"]["energy_variance"]
    print(f"[b4 vmc] E/N = {format_value_error(e['mean'], e['error'])} (Nilsen 2005: 11.12109(14)), τ = {e['tau']:.1f}, "
          f"Var(E_L) = {v['mean']:.4g}, acceptance {result['acceptance']:.3f}, wall {result['wall_s']:.0f} s, "
          f"backend {result['backend']}", flush=True)
    return run_b4_dmc(args, out, start, result)


def run_b4_dmc(args, out, start, result) -> dict:
    dmc_start = time.perf_counter()
    base = RunConfig(system="bec", params=B4, method="dmc", backend=args.backend, walkers=args.dmc_walkers, steps=1,
                     seed=501, energy_cap=args.energy_cap)
    series = []
    for dt in args.dts:
        result_dt = time_step_series(base, [dt], args.dmc_time)[0]
        series.append(result_dt)
        e_dt = result_dt["estimates"]["energy_per_particle"]
        print(f"[b4 dmc] Δτ = {dt}: E/N = {format_value_error(e_dt['mean'], e_dt['error'])}, population "
              f"{result_dt['estimates']['population']['mean']:.0f}, cap hits {result_dt['population_cap_hits']}, "
              f"E_cut {result_dt['energy_cut']}, "
              f"wall {result_dt['wall_s']:.0f} s (total {time.perf_counter() - start:.0f} s)", flush=True)
    dts = np.array([r["dt"] for r in series])
    energies = np.array([r["estimates"]["energy_per_particle"]["mean"] for r in series])
    errors = np.array([r["estimates"]["energy_per_particle"]["error"] for r in series])
    fit = extrapolate(dts, energies, errors, order=1, n_points=3) if len(dts) >= 3 else None
    out["dmc"] = {"dts": dts.tolist(), "energy": energies.tolist(), "error": errors.tolist(),
                  "population": [r["estimates"]["population"]["mean"] for r in series],
                  "linear3": fit and {"energy": fit.energy, "error": fit.error, "chi2_dof": fit.reduced_chi2},
                  "wall_s": time.perf_counter() - dmc_start, "results": series}
    out["wall_s"] = time.perf_counter() - start
    lines = [f"# B4 (N = 500, λ = √8, a = 0.15155, α = 0.7687) on {out['machine'].get('gpu')} — {out['machine']['date']}",
             "", f"- host {out['machine']['host']}, {out['machine']['cpu_count']} CPU cores, Python "
             f"{out['machine']['python']}; backend {series[0]['backend']}; command `python benchmarks/bec_device.py b4`",
             "", "| quantity | qmckit | published | pull | wall |", "|---|---|---|---:|---:|"]
    if result is not None:
        e = result["estimates"]["energy_per_particle"]
        lines.append(f"| VMC E/N (Δτ = 0.02, exact MH, {args.vmc_walkers} walkers × {args.vmc_steps} sweeps) "
                     f"| {format_value_error(e['mean'], e['error'])} | 11.12109(14) (Nilsen 2005); 11.116(1) (thesis) "
                     f"| {(e['mean'] - 11.12109) / np.hypot(e['error'], 0.00014):+.1f} | {result['wall_s']:.0f} s |")
    for dt, en, er in zip(dts, energies, errors):
        lines.append(f"| DMC E/N at Δτ = {dt:g} ({args.dmc_walkers} walkers, {args.dmc_time} time units, "
                     f"energy cap {args.energy_cap}) "
                     f"| {format_value_error(en, er)} | | | |")
    if fit is not None:
        lines.append(f"| DMC E/N, Δτ → 0 (linear, 3 points) | {format_value_error(fit.energy, fit.error)} "
                     f"| 10.9132(30) (thesis); 11.0961(69) (Nilsen 2004) "
                     f"| {(fit.energy - 10.9132) / np.hypot(fit.error, 0.003):+.1f} | {out['dmc']['wall_s']:.0f} s |")
    out["markdown"] = "\n".join(lines)
    return out


def run_table(args) -> dict:
    start = time.perf_counter()
    result = bec.reproduce_table72(args.precision, sets=tuple(args.sets.split(",")),
                                   progress=lambda m: print(f"[table] {m} at {time.perf_counter() - start:.0f} s",
                                                            flush=True))
    result["machine"] = machine()
    result["wall_s"] = time.perf_counter() - start
    result["markdown"] = (f"# Table 7.2 reproduction, precision `{args.precision}` — {result['machine']['date']}, "
                          f"{result['machine']['cpu_count']} CPU cores ({result['machine']['host']}), "
                          f"{result['wall_s']:.0f} s\n\n" + bec.markdown_table(result))
    OUT.mkdir(parents=True, exist_ok=True)
    bec.figure(result).savefig(OUT / f"table72_{args.precision}.png", dpi=120)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="job", required=True)
    b4 = sub.add_parser("b4")
    b4.add_argument("--backend", default="cuda")
    b4.add_argument("--no-vmc", action="store_true", help="DMC only")
    b4.add_argument("--vmc-walkers", type=int, default=8192)
    b4.add_argument("--vmc-steps", type=int, default=2000)
    b4.add_argument("--dmc-walkers", type=int, default=4096)
    b4.add_argument("--dmc-time", type=float, default=2.0)
    b4.add_argument("--energy-cap", type=lambda t: {"zen": True, "off": False}.get(t) if t in ("zen", "off") else float(t),
                    default=8.0, help="c (default 8): cut E_L − E_T at max(Zen, c σ₀); zen: Zen alone; off")
    b4.add_argument("--dts", type=lambda s: [float(x) for x in s.split(",")], default=[0.01, 0.005, 0.0025])
    table = sub.add_parser("table")
    table.add_argument("--precision", default="full")
    table.add_argument("--sets", default="B1,B2,B3")
    args = parser.parse_args()
    result = run_b4(args) if args.job == "b4" else run_table(args)
    OUT.mkdir(parents=True, exist_ok=True)
    stem = f"bec_{args.job}_{result['machine']['date']}" + (f"_cap{args.energy_cap}" if args.job == "b4" else "")
    (OUT / f"{stem}.json").write_text(json.dumps(result, indent=1, default=str))
    (OUT / f"{stem}.md").write_text(result["markdown"] + "\n")
    print(result["markdown"])


if __name__ == "__main__":
    main()
