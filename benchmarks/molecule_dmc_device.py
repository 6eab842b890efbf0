"""Fixed-node DMC with RHF nodes (qmckit.systems.molecule: PySCF RHF determinant in a Gaussian basis ×
Padé–Jastrow with the e–e and e–n cusps) on the CPU cores of a large host: Δτ series for Ne, Be and H2O,
with a linear Δτ → 0 extrapolation per system.

    python benchmarks/molecule_dmc_device.py [--walkers 2000] [--budget 480] [--rhf-cache FILE]
        [--plan "ne/cc-pvtz:0.004,0.002;be/cc-pvtz:0.02,0.01,0.005"]

The RHF node of Ne is (nearly) the Hartree–Fock node whose fixed-node energy the literature puts near
−128.92 E_h; study 002's hydrogenic determinant has a different node (notebooks/atoms.ipynb §4).
``--rhf-cache`` loads RHF solutions pickled by ``--write-rhf-cache`` on a machine with PySCF, so the
run needs no PySCF. Writes $OUT/molecule_dmc_<date>.{md,json} and prints the table last. Energies in
hartree, times in ħ/E_h.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import shlex
import sys
import time
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from atom_dmc_device import add_dmc_options, dmc_point  # noqa: E402
from qmckit.stats import extrapolate, format_value_error  # noqa: E402
from qmckit.systems import molecule  # noqa: E402
from qmckit.systems.atom import REFERENCE_ENERGIES  # noqa: E402

OUT = Path(os.environ.get("OUT", "device_out"))
DATA = Path(__file__).resolve().parents[1] / "data" / "atoms.json"
warnings.filterwarnings("ignore", message="reblock:")
GEOMETRY = {"be": "Be 0 0 0"}  # names that are not built-in molecules
PLAN = "ne/cc-pvtz:0.004,0.002;be/cc-pvtz:0.02,0.01,0.005;h2o/cc-pvdz:0.01,0.005"


def parse_plan(text):
    """'ne/cc-pvtz:0.004,0.002;…' → [(name, basis, (Δτ, …)), …]"""
    plan = []
    for item in text.split(";"):
        system, dts = item.split(":")
        name, basis = system.split("/")
        plan.append((name, basis, tuple(float(x) for x in dts.split(","))))
    return plan


def hf_node_reference(name):
    """(E, σ) of the HF-node FN-DMC run recorded in data/atoms.json for Be and Ne (CASINO run logs), else None."""
    atoms = json.loads(DATA.read_text())["atoms"]
    entry = atoms.get(name.capitalize(), {}).get("fn_dmc_hf_nodes")
    return None if not entry else tuple(entry["casino"])


def run_rate(params, dt, backend, walkers, steps, args) -> dict:
    """Walker-steps per second of a whole DMC Run (``steps`` measured steps after 20 VMC sweeps and 20 DMC steps; a
    two-step run first, so that compilation stays out): walkers × (steps + 20) / wall."""
    from qmckit.runs import RunConfig, make_run

    config = dict(system="molecule", params=params, method="dmc", backend=backend, walkers=walkers, dt=dt,
                  equilibration=20, dmc_equilibration=20, seed=args.seed, nuclear_moves=args.nuclear_moves,
                  effective_time_step=args.effective_time_step, feedback_time=args.feedback_time)
    make_run(RunConfig(**config, steps=2)).run()
    start = time.perf_counter()
    result = make_run(RunConfig(**config, steps=steps)).run()
    wall = time.perf_counter() - start
    return {"backend": backend, "walkers": walkers, "steps": steps, "dt": dt, "wall_s": wall,
            "walker_steps_per_s": walkers * (steps + 20) / wall, "profile": result["profile"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--walkers", type=int, default=2000)
    parser.add_argument("--equilibrate", type=float, default=3.0, help="DMC equilibration, ħ/E_h")
    parser.add_argument("--measure", type=float, default=8.0, help="measured time per point, ħ/E_h")
    parser.add_argument("--budget", type=float, default=480.0, help="seconds; points that would start later are skipped")
    parser.add_argument("--plan", default=PLAN)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--backend", default="cpu")
    add_dmc_options(parser)
    parser.add_argument("--rhf-cache", default=None, help="pickled RHF solutions to load (no PySCF needed)")
    parser.add_argument("--write-rhf-cache", default=None, help="compute the plan's RHF solutions and pickle them")
    parser.add_argument("--cusp", action="store_true",
                        help="cusp-corrected orbitals (qmckit.systems.gaussian_cusp) instead of the e–n Jastrow factor")
    parser.add_argument("--tag", default="", help="suffix of the output file names")
    parser.add_argument("--rates", default="", help="GPU_W:GPU_STEPS,CPU_W:CPU_STEPS: after the series, the whole "
                        "Run's walker-steps/s at each system's smallest Δτ on backend cuda and on all CPU cores")
    args = parser.parse_args()
    plan = parse_plan(args.plan)
    if args.write_rhf_cache:
        for name, basis, _ in plan:
            molecule.Molecule(xyz=GEOMETRY.get(name, name), basis=basis)
        Path(args.write_rhf_cache).write_bytes(pickle.dumps(molecule._RHF_CACHE))
        print(f"wrote {len(molecule._RHF_CACHE)} RHF solutions to {args.write_rhf_cache}")
        return
    if args.rhf_cache:
        molecule._RHF_CACHE.update(pickle.loads(Path(args.rhf_cache).read_bytes()))
    import numba

    start = time.perf_counter()
    points, skipped = [], []
    for name, basis, dts in plan:
        for dt in dts:
            if time.perf_counter() - start > args.budget:
                skipped.append((name, basis, dt))
                continue
            params = {"xyz": GEOMETRY.get(name, name), "basis": basis}
            if args.cusp:
                params |= {"cusp": True, "jastrow_en": False}
            try:
                p = dmc_point("molecule", params, dt, 8.0, args)
            except Exception as err:  # noqa: BLE001 - report and go on
                print(f"[molecule dmc] {name}/{basis} Δτ = {dt}: FAILED {err!r}", flush=True)
                continue
            p |= {"name": name, "basis": basis,
                  "rhf_energy": molecule.Molecule(**params).rhf_energy}
            points.append(p)
            print(f"[molecule dmc] {name}/{basis} Δτ = {dt}: E = {format_value_error(p['energy'], p['error'])} "
                  f"(τ {p['tau']:.0f}), pop {p['population']:.0f}, acc {p['acceptance']:.4f}, "
                  f"trace {np.round(p['trace'], 4).tolist()}, {p['wall_s']:.0f} s (total {time.perf_counter() - start:.0f} s)",
                  flush=True)
    lines = [f"# Fixed-node DMC with RHF nodes (molecule system) — {date.today().isoformat()}", "",
             f"{args.walkers} walkers, {args.equilibrate} ħ/E_h of DMC equilibration and {args.measure} ħ/E_h measured per "
             f"point, energy cut 8 σ₀, {'cusp-corrected orbitals, no e–n Jastrow' if args.cusp else 'e–n Padé Jastrow'}, "
             f"{'UNR moves near the nuclei' if args.nuclear_moves else 'plain drift moves'}, branching with "
             f"{'τ_eff' if args.effective_time_step else 'Δτ'}, backend {args.backend} with {numba.get_num_threads()} numba "
             f"threads on {os.cpu_count()} cores; command "
             f"`{shlex.join(['python', 'benchmarks/molecule_dmc_device.py', *sys.argv[1:]])}`.", "",
             "| system | Δτ | E (E_h) | E_RHF | population | acceptance | wall |", "|---|---:|---:|---:|---:|---:|---:|"]
    for p in points:
        lines.append(f"| {p['name']}/{p['basis']} | {p['dt']} | {format_value_error(p['energy'], p['error'])} | "
                     f"{p['rhf_energy']:.6f} | {p['population']:.0f} | {p['acceptance']:.4f} | {p['wall_s']:.0f} s |")
    fits = {}
    for name, basis, _ in plan:
        sel = [p for p in points if p["name"] == name and p["basis"] == basis]
        if len(sel) < 2:
            continue
        fit = extrapolate(np.array([p["dt"] for p in sel]), np.array([p["energy"] for p in sel]),
                          np.array([p["error"] for p in sel]), order=1, n_points=None)
        ref = hf_node_reference(name)
        exact = REFERENCE_ENERGIES.get(name.capitalize(), {}).get("exact", (None,))[0]
        fits[f"{name}/{basis}"] = {"energy": fit.energy, "error": fit.error, "chi2_dof": fit.reduced_chi2,
                                   "hf_node_reference": ref, "exact": exact}
        lines.append(f"| {name}/{basis} | → 0 (linear, {len(sel)} points) | {format_value_error(fit.energy, fit.error)} | "
                     f"HF-node ref {ref[0] if ref else '–'}, exact {exact if exact else '–'} | | | |")
    if skipped:
        lines.append(f"\nskipped for the budget: {skipped}")
    rates = []
    if args.rates:
        (gw, gs), (cw, cs) = ([int(x) for x in part.split(":")] for part in args.rates.split(","))
        for name, basis, dts in plan:
            params = {"xyz": GEOMETRY.get(name, name), "basis": basis} | (
                {"cusp": True, "jastrow_en": False} if args.cusp else {})
            pair = [run_rate(params, min(dts), "cuda", gw, gs, args), run_rate(params, min(dts), "cpu", cw, cs, args)]
            rates.append({"system": f"{name}/{basis}", "runs": pair,
                          "speedup": pair[0]["walker_steps_per_s"] / pair[1]["walker_steps_per_s"]})
        lines += ["", "Speed of the whole Run (DMC, compilation outside; walker-steps/s = walkers × (steps + 20 "
                  "DMC equilibration steps) / wall, 20 VMC sweeps included), in this run:", "",
                  "| system | Δτ | backend | walkers | steps | wall | walker-steps/s |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for r in rates:
            for x in r["runs"]:
                lines.append(f"| {r['system']} | {x['dt']} | {x['backend']} | {x['walkers']} | {x['steps']} | "
                             f"{x['wall_s']:.1f} s | {x['walker_steps_per_s']:.3e} |")
            lines.append(f"| {r['system']} | | GPU / {numba.get_num_threads()} cores | | | | "
                         f"**{r['speedup']:.1f}×** |")
    out = {"date": date.today().isoformat(), "args": vars(args), "cores": os.cpu_count(),
           "numba_threads": numba.get_num_threads(), "points": points, "fits": fits, "skipped": skipped, "rates": rates,
           "markdown": "\n".join(lines)}
    OUT.mkdir(parents=True, exist_ok=True)
    stem = f"molecule_dmc_{out['date']}" + (f"_{args.tag}" if args.tag else "")
    (OUT / f"{stem}.json").write_text(json.dumps(out, indent=1, default=str))
    (OUT / f"{stem}.md").write_text(out["markdown"] + "\n")
    print(out["markdown"])


if __name__ == "__main__":
    main()
