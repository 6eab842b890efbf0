#!/usr/bin/env python
"""Study 001 target T3: relative error of the local energy E_L with the orbital product in float32.

For each molecule (RHF/cc-pVDZ orbitals, Cartesian d, Slater–Jastrow ψ_T with the module's default
Jastrow) this samples configurations from |ψ_T|² by a short VMC run and compares E_L computed with the
batched product (basis values, ∂x, ∂y, ∂z, ∇²) × (MO coefficients) done in

  f32                    float32, round to nearest
  Kahan f32              float32 with Kahan-compensated sums (001's KSF)
  f32 truncating         every product and sum rounded toward zero (2006-GPU emulation)
  Kahan f32 truncating   KSF on that emulated GPU
  f32 inputs (diag.)     inputs rounded to float32, products and sums in float64 (the floor)
  f64 (validation)       float64 in the kernel's order: must be exactly 0

against the all-float64 E_L of qmckit.systems.molecule (everything but the product in float64).
See qmckit.studies.precision_energy.

Usage
  python benchmarks/local_energy_precision.py               # 5 molecules, 200 configurations each
  python benchmarks/local_energy_precision.py --quick       # H2O and Ne, 20 configurations, writes nothing
  python benchmarks/local_energy_precision.py --configurations 100 --out /tmp/lep
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
import sys
import time
from pathlib import Path

# PySCF's threaded SCF gives MO coefficients that differ in the last bits from process to process;
# one thread makes a run with a given seed reproducible bit for bit (set before numpy/PySCF load)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from qmckit.studies.precision_energy import (ARITHMETICS, DIAGNOSTICS, PUBLISHED_RELATIVE_ERROR,  # noqa: E402
                                             local_energy_precision)

MOLECULES = ("h2o", "ne", "acetic-acid", "glycine", "benzoic-acid")
NAMES = {"h2o": "H2O", "ne": "Ne", "acetic-acid": "acetic acid", "glycine": "glycine",
         "benzoic-acid": "benzoic acid"}
SHORT = {"f32": "f32", "kahan_f32": "Kahan f32", "truncating_f32": "f32 trunc.",
         "kahan_truncating_f32": "Kahan trunc.", "f32_inputs": "f32 inputs", "f64": "f64"}
COLUMNS = ARITHMETICS + ("f32_inputs",)


def machine_info():
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba
    try:
        import pyscf
        pyscf_version = pyscf.__version__
    except ImportError:
        pyscf_version = "missing"
    return {"hostname": socket.gethostname(), "cpu_model": model, "cores": os.cpu_count(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
            "platform": platform.platform(), "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "pyscf": pyscf_version}


def table(results, stat):
    head = "| molecule | N_e | N_bf | " + " | ".join(SHORT[a] for a in COLUMNS) + " | f64 (validation) | 001 (KSF) |"
    lines = [head, "|---|---:|---:|" + "---:|" * (len(COLUMNS) + 2)]
    for r in results:
        cells = " | ".join(f"{r['errors'][a][stat]:.2e}" for a in COLUMNS)
        lines.append(f"| {NAMES.get(r['molecule'], r['molecule'])} | {r['n_electrons']} | {r['n_basis']} | {cells} "
                     f"| {r['errors']['f64'][stat]:.0e} | ≈ 1e-6 |")
    return lines


def findings(results):
    def span(key, stat="median"):
        v = [r["errors"][key][stat] for r in results]
        return f"{min(v):.1e}–{max(v):.1e}"

    ratio = [r["errors"]["truncating_f32"]["median"] / r["errors"]["kahan_truncating_f32"]["median"] for r in results]
    med = [r["errors"][k]["median"] for r in results for k in ("kahan_f32", "kahan_truncating_f32")]
    return [
        f"- With KSF the median relative error of E_L is {span('kahan_f32')} (round to nearest) and "
        f"{span('kahan_truncating_f32')} (truncating), 90th percentile {span('kahan_f32', 'p90')} and "
        f"{span('kahan_truncating_f32', 'p90')}: flat across the molecules, as 001 says, but "
        f"{PUBLISHED_RELATIVE_ERROR / max(med):.0f}–{PUBLISHED_RELATIVE_ERROR / min(med):.0f}× (median) below 001's "
        "≈ 1e-6, and about 2× above the floor set by rounding the inputs to float32 alone "
        f"({span('f32_inputs')}).",
        f"- Without KSF: round to nearest {span('f32')} (median), truncating {span('truncating_f32')} "
        f"(median; 90th percentile {span('truncating_f32', 'p90')}): the truncating product without KSF "
        "comes closest to 001's 1e-6 scale, in its tail; KSF cuts its median error "
        f"{min(ratio):.0f}–{max(ratio):.0f}×.",
        "- So the float32 product alone does not explain 001's 1e-6. The remaining float32 stages of "
        "001's pipeline (basis functions evaluated in float32 on the GPU, the e–e Jastrow kernels, "
        "non-IEEE exp/division of the 7800 GTX) are not emulated here; 001 also does not say whether "
        f"1e-6 is a mean, median or maximum (our maxima over {results[0]['configurations']} configurations, "
        f"KSF: {span('kahan_f32', 'max')} round to nearest, {span('kahan_truncating_f32', 'max')} truncating).",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configurations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="output directory (default benchmarks/results, not with --quick)")
    args = ap.parse_args(argv)
    molecules = ("h2o", "ne") if args.quick else MOLECULES
    configurations = 20 if args.quick else args.configurations
    machine = machine_info()
    today = datetime.date.today().isoformat()
    start = time.perf_counter()
    results = []
    for name in molecules:
        t0 = time.perf_counter()
        r = local_energy_precision(name, basis="cc-pvdz", configurations=configurations, seed=args.seed,
                                   jastrow=True, arithmetics=ARITHMETICS + DIAGNOSTICS)
        r["wall_s"] = time.perf_counter() - t0
        results.append(r)
        print(f"{name:13s} N={r['n_electrons']:3d} Nbf={r['n_basis']:4d}  " +
              "  ".join(f"{SHORT[a]} {r['errors'][a]['median']:.2e}/{r['errors'][a]['p90']:.2e}"
                        for a in COLUMNS + ("f64",)) + f"  ({r['wall_s']:.1f} s)", flush=True)
        if r["errors"]["f64"]["max"] > 1e-14:
            print(f"  WARNING: the f64 path does not reproduce the module's E_L ({r['errors']['f64']['max']:.1e})",
                  file=sys.stderr)
    wall = time.perf_counter() - start
    if args.quick and args.out is None:
        return 0
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    host = machine["hostname"]
    stem = f"local_energy_precision_{host}_{today}"
    s0 = results[0]["sampling"]
    lines = [
        f"# Study 001 T3: relative error of E_L with the orbital product in float32, {today} on {host}",
        "",
        f"- machine: {machine['cpu_model']}, {machine['cores']} cores, hostname `{host}`, {machine['platform']}",
        f"- versions: Python {machine['python']}, numpy {machine['numpy']}, numba {machine['numba']}, "
        f"PySCF {machine['pyscf']}",
        f"- command: `python benchmarks/local_energy_precision.py"
        f"{'' if configurations == 200 else f' --configurations {configurations}'}"
        f"{'' if args.seed == 1 else f' --seed {args.seed}'}` (wall time {wall:.0f} s)",
        f"- {configurations} configurations per molecule, seed {args.seed}: a VMC run (qmckit.runs, CPU, drift "
        f"sampler, Δt = {s0['dt']}) of {s0['walkers']} walkers from |ψ_T|², {s0['equilibration_sweeps']} "
        f"equilibration sweeps, then all walkers every {s0['spacing_sweeps']} sweeps",
        "- ψ_T: RHF/cc-pVDZ (Cartesian d, PySCF) Slater determinants × the module's Padé–Jastrow "
        "(β_ee = 4, β_en = 300 bohr⁻¹); function `qmckit.studies.precision_energy.local_energy_precision`",
        f"- OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} (PySCF's threaded SCF changes the MO "
        "coefficients in the last bits from process to process; with one thread the run is reproducible bit "
        "for bit)",
        "- CPU only; all float32 kernels are exactly emulated IEEE operations, so the numbers measure "
        "arithmetic and do not depend on the machine.",
        "",
        "## What is in float32",
        "",
        "Only the batched orbital product of 001's Algorithm 1: (basis values, ∂x, ∂y, ∂z, ∇²) × (MO "
        "coefficients), (C·N·5) × N_bf @ N_bf × N/2, with the kernels of `qmckit.precision` (inputs rounded "
        "to float32, then products and sums in the named arithmetic). The basis functions are evaluated in "
        "float64 and rounded; the Slater inverses, Jastrow, potential and the E_L assembly are the module's "
        "float64 `local_energy`, fed with the float32 orbital rows (`local_energy_from_orbitals`). 001's "
        "pipeline also evaluated the basis functions in float32 on the GPU; that is not emulated here.",
        "",
        "- *f32*: float32 round to nearest; *Kahan f32*: Kahan-compensated sums (001's KSF); *f32 trunc.*: "
        "every product and sum rounded toward zero (2006 GPU, 7800 GTX, emulated); *Kahan trunc.*: KSF on "
        "that GPU; *f32 inputs*: inputs rounded to float32, products and sums in float64 (the floor set "
        "by float32 storage of basis values and coefficients alone).",
        "- *f64 (validation)*: the same path with a float64 product summed in the kernel's order: it must "
        "give exactly the module's E_L (it does: 0 for every configuration).",
        "- error = |E_L(arith) − E_L(f64)| / |E_L(f64)| per configuration; 001 gives ≈ 1e-6 with KSF for "
        "all its molecules (mean/median/max not stated; no number without KSF).",
        "",
        "## Reading",
        "",
        *findings(results),
        "",
        "## Median relative error of E_L",
        "",
        *table(results, "median"),
        "",
        "## 90th percentile",
        "",
        *table(results, "p90"),
        "",
        "## Mean and maximum; median absolute error; bias",
        "",
        "| molecule | ⟨E_L⟩ (E_h) | E_RHF (E_h) | acceptance | " +
        " | ".join(f"{SHORT[a]} mean / max" for a in COLUMNS) + " | " +
        " | ".join(f"{SHORT[a]} median abs. (E_h)" for a in ("f32", "kahan_f32")) +
        " | f32 trunc. mean signed rel. |",
        "|---|---:|---:|---:|" + "---:|" * (len(COLUMNS) + 3),
    ]
    for r in results:
        e = r["errors"]
        lines.append(
            f"| {NAMES.get(r['molecule'], r['molecule'])} | {r['E_L_mean']:.3f} | {r['E_RHF']:.6f} | "
            f"{r['sampling']['acceptance']:.3f} | " +
            " | ".join(f"{e[a]['mean']:.1e} / {e[a]['max']:.1e}" for a in COLUMNS) + " | " +
            " | ".join(f"{e[a]['median_abs_Eh']:.1e}" for a in ("f32", "kahan_f32")) +
            f" | {e['truncating_f32']['mean_signed_rel']:+.1e} |")
    lines += ["", "## Timing (s)", "",
              "| molecule | sampling | " + " | ".join(SHORT[a] for a in COLUMNS + ("f64",)) + " | total |",
              "|---|---:|" + "---:|" * (len(COLUMNS) + 2)]
    for r in results:
        t = r["timing_s"]
        lines.append(f"| {NAMES.get(r['molecule'], r['molecule'])} | {t['sampling']:.1f} | " +
                     " | ".join(f"{t[a]:.1f}" for a in COLUMNS + ("f64",)) + f" | {r['wall_s']:.1f} |")
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    payload = {"study": "001 T3", "date": today, "machine": machine, "configurations": configurations,
               "seed": args.seed, "wall_s": wall, "published_relative_error_ksf": PUBLISHED_RELATIVE_ERROR,
               "results": results}
    (out / f"{stem}.json").write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {out / stem}.md and .json ({wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
