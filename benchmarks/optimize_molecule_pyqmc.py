#!/usr/bin/env python
"""H2O / cc-pVDZ Jastrow optimisation: qmckit's linear method against PyQMC 0.8.1's ``line_minimization``, side by
side in one run on this machine (issue 29).

Both codes start from the same RHF determinant (``build_mole``: the geometry of ``data/molecules/h2o.xyz``,
cc-pVDZ with Cartesian functions) and optimise only their Jastrow factors, then run the same plain VMC at the
parameters they return (``--walkers`` walkers, 100 equilibration steps, ``--vmc-steps`` steps with E_L every step,
reblocked). Each side runs in its own single-threaded subprocess (NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS=1), at most
``--jobs`` at a time:

* ``pyqmc``: PyQMC's OPTIMIZE recipe as its documentation runs it. ``generate_wf(mol, mf)`` (Slater × JastrowSpin:
  e–n cusp terms for every nucleus, 4 PolyPade e–n functions per nucleus and spin, 3 e–e functions per spin pair;
  33 free coefficients), ``gradient_generator`` and ``line_minimization`` with their defaults (1000 configurations,
  10 × 10 VMC steps of Δt = 0.5 per iteration, an SR direction and a 40-point correlated-sampling line search).
  The run takes ``--pyqmc-iterations`` iterations (PyQMC's default is 30). PyQMC returns the last iteration's
  parameters.
* ``qmckit cusp``: ``Molecule(cusp=True, jastrow_en=False)``: cusp-corrected orbitals, the e–e Padé term and the
  polynomial e–e and e–n terms; it frees β_ee, c_ee2, c_ee3, c_en2 and c_en3 (5 parameters).
* ``qmckit Padé``: the e–n Padé term restores the cusps instead; it frees β_ee, β_en and the four c's
  (6 parameters).

  Both qmckit runs call ``optimize(method="linear")`` for at most ``--qmckit-steps`` steps, with 1000 walkers ×
  100 samples per step (the samples double when noise dominates, up to 4×). They return the best of the last five
  parameter sets by correlated sampling.

The wall time of an optimisation excludes the RHF and the final VMC. The record gives PyQMC's per-iteration
energies (its own estimate during the VMC of that iteration) and qmckit's per-step energies.

    pip install pyqmc==0.8.1          # benchmark only; not a qmckit dependency
    python benchmarks/optimize_molecule_pyqmc.py [--jobs 2]

Writes $OUT (or benchmarks/results)/optimize_molecule_pyqmc_<date>.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

from _common import cpu_model, log, results_stem

REPO = Path(__file__).resolve().parents[1]
ONE_THREAD_ENV = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
PYQMC_VERSION = "0.8.1"
EQUILIBRATION = 100
QMCKIT_CASES = {  # label: (molecule parameters, freed parameters)
    "qmckit cusp": (dict(cusp=True, jastrow_en=False), ("beta_ee", "c_ee2", "c_ee3", "c_en2", "c_en3")),
    "qmckit Padé": ({}, ("beta_ee", "beta_en", "c_ee2", "c_ee3", "c_en2", "c_en3")),
}


def _mole(basis: str = "cc-pvdz"):
    """(PySCF Mole, its converged RHF, E_RHF in E_h) for H2O of data/molecules/h2o.xyz in ``basis`` (Cartesian)."""
    from pyscf import scf

    from qmckit.systems.molecule import DATA_DIR, build_mole, read_xyz

    mol = build_mole(read_xyz(DATA_DIR / "h2o.xyz"), basis)
    mf = scf.RHF(mol)
    mf.verbose = 0
    mf.conv_tol = 1e-10
    return mol, mf, float(mf.kernel())


def _summary(energies, energies2) -> dict:
    """Reblocked energy of per-step walker means, and the variance of E_L over all samples."""
    import numpy as np

    from qmckit.stats import estimate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = estimate(np.asarray(energies))
    return {"mean": est.mean, "error": est.error, "tau_steps": est.tau,
            "variance": float(np.mean(energies2) - np.mean(energies) ** 2)}


def pyqmc_worker(spec: dict) -> dict:
    import importlib.metadata as md

    import numpy as np
    import pyqmc.api as pyq

    mol, mf, e_rhf = _mole()
    out = {"code": "pyqmc", "version": md.version("pyqmc"), "e_rhf": e_rhf}
    wf, to_opt = pyq.generate_wf(mol, mf)
    out["free_parameters"] = int(sum(int(np.sum(v)) for v in to_opt.values()))
    np.random.seed(spec["seed"])
    configs = pyq.initial_guess(mol, spec["walkers"])
    accumulator = pyq.gradient_generator(mol, wf, to_opt)
    t0 = time.perf_counter()
    wf, history = pyq.line_minimization(wf, configs, accumulator, max_iterations=spec["iterations"])
    out["wall_s"] = time.perf_counter() - t0
    out["steps"] = len(history)
    out["history"] = [{"step": int(h["iteration"]), "energy": float(h["energy"]), "error": float(h["energy_error"]),
                       "step_length": float(h["est_min"])} for h in history]
    energy = pyq.EnergyAccumulator(mol)

    class Moments:  # the walker mean of E_L and E_L² each step, from PyQMC's own EnergyAccumulator
        def avg(self, configs, wf):
            e = np.asarray(energy(configs, wf)["total"]).real
            return {"total": float(np.mean(e)), "total2": float(np.mean(e * e))}

    configs = pyq.initial_guess(mol, spec["walkers"])
    _, configs = pyq.vmc(wf, configs, nblocks=1, nsteps_per_block=EQUILIBRATION, accumulators={})
    t0 = time.perf_counter()
    df, _ = pyq.vmc(wf, configs, nblocks=spec["vmc_steps"], nsteps_per_block=1, accumulators={"e": Moments()})
    out["vmc"] = _summary(df["etotal"], df["etotal2"]) | {"wall_s": time.perf_counter() - t0, "dt": 0.5}
    return out


def qmckit_worker(spec: dict) -> dict:
    import numpy as np

    from qmckit import RunConfig
    from qmckit.methods.optimizers import optimize
    from qmckit.runs import make_run
    from qmckit.systems import make_system

    _, _, e_rhf = _mole()
    start, freed = QMCKIT_CASES[spec["case"]]
    params = dict(xyz="h2o", basis="cc-pvdz") | start
    system = make_system("molecule", **params)
    out = {"code": spec["case"], "e_rhf": e_rhf, "free_parameters": len(freed), "start": params}
    t0 = time.perf_counter()
    result = optimize(system, freed, method="linear", steps=spec["steps"], n_walkers=spec["walkers"],
                      n_samples=100, max_samples=400, seed=spec["seed"])
    out["wall_s"] = time.perf_counter() - t0
    out["steps"] = len(result.history)
    out["stopped"] = result.stopped
    out["params"] = result.params
    out["history"] = [{"step": s.step, "energy": s.energy.mean, "error": s.energy.error, "variance": s.variance,
                       "samples": s.samples, "accepted": s.accepted, "note": s.note} for s in result.history]
    out["correlated"] = result.estimates["energy"].to_dict()
    final = params | result.params
    t0 = time.perf_counter()
    run = make_run(RunConfig(system="molecule", params=final, walkers=spec["walkers"], steps=spec["vmc_steps"],
                             equilibration=EQUILIBRATION, seed=spec["seed"] + 1))
    report = run.run()
    e, v = report["estimates"]["energy"], report["estimates"]["energy_variance"]
    out["vmc"] = {"mean": e["mean"], "error": e["error"], "tau_steps": e["tau"], "variance": v["mean"],
                  "wall_s": time.perf_counter() - t0, "dt": report["dt"]}
    out["samples_total"] = int(np.sum([s.samples for s in result.history]))
    return out


def run_worker(spec: dict, timeout: float) -> dict:
    env = dict(os.environ) | {k: "1" for k in ONE_THREAD_ENV}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, str(Path(__file__).resolve()), "_worker", json.dumps(spec)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return {"code": spec["case"], "error": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:]) | {"process_wall_s": time.perf_counter() - t0}
    tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-8:]
    return {"code": spec["case"], "error": f"exit {proc.returncode}: " + " | ".join(tail)}


def markdown(record: dict) -> str:
    lines = [f"# H2O / cc-pVDZ Jastrow optimisation: qmckit against PyQMC ({record['date']})", "",
             f"Machine: {record['machine']}, {record['cores']} cores, Python {record['python']}; each code in its own "
             f"single-threaded process, {record['jobs']} at a time. Command: `{record['command']}`. "
             f"E_RHF = {record['rows'][0].get('e_rhf', float('nan')):.6f} E_h (PySCF, both sides).", "",
             "Energy and variance: an independent VMC at the returned parameters "
             f"({record['walkers']} walkers, {EQUILIBRATION} equilibration steps, {record['vmc_steps']} steps, "
             "E_L every step, reblocked). Wall time: the optimisation alone, one core.", "",
             "| code | Jastrow (free parameters) | steps | wall (s) | s/step | E (E_h) | σ² of E_L (E_h²) | "
             "E − E_RHF |",
             "|---|---|---:|---:|---:|---|---:|---:|"]
    jastrows = {"pyqmc": "QWalk JastrowSpin, e–n cusp terms, PolyPade e–n (4/nucleus/spin) and e–e (3/spin pair)",
                "qmckit cusp": "cusp-corrected orbitals; e–e Padé β_ee; polynomial c_ee2, c_ee3, c_en2, c_en3",
                "qmckit Padé": "e–e and e–n Padé β_ee, β_en; polynomial c_ee2, c_ee3, c_en2, c_en3"}
    for r in record["rows"]:
        if "error" in r:
            lines.append(f"| {r['code']} | – | – | – | – | {r['error']} | – | – |")
            continue
        v = r["vmc"]
        name = f"PyQMC {r['version']} line_minimization" if r["code"] == "pyqmc" else f"{r['code']} linear method"
        lines.append(f"| {name} | {jastrows[r['code']]} ({r['free_parameters']}) | {r['steps']} | {r['wall_s']:.0f} | "
                     f"{r['wall_s'] / r['steps']:.1f} | {v['mean']:.4f} ± {v['error']:.4f} | {v['variance']:.2f} | "
                     f"{v['mean'] - r['e_rhf']:+.4f} |")
    lines += ["", "Per-step energies during the optimisation (each code's own estimate at that step: PyQMC's is the mean "
              "of its iteration's VMC, 1000 configurations × 10 × 10 steps of Δt = 0.5, with its standard error; "
              "qmckit's the step's sample mean with a jackknife error):", ""]
    for r in record["rows"]:
        if "history" in r:
            lines.append(f"- {r['code']}: " + ", ".join(f"{h['energy']:.3f}" for h in r["history"]))
        if "params" in r:
            lines.append("  - returned: " + ", ".join(f"{k} = {v:.4f}" for k, v in r["params"].items())
                         + f"; correlated-sampling E = {r['correlated']['mean']:.4f} ± {r['correlated']['error']:.4f}"
                         + f"; {r['samples_total']} samples in all; stopped: {r['stopped']}")
    if record.get("note"):
        lines += ["", record["note"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="subprocesses at a time (one core each)")
    parser.add_argument("--walkers", type=int, default=1000)
    parser.add_argument("--pyqmc-iterations", type=int, default=30)
    parser.add_argument("--qmckit-steps", type=int, default=20)
    parser.add_argument("--vmc-steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per subprocess")
    args = parser.parse_args()
    try:
        import importlib.metadata as md

        version = md.version("pyqmc")
    except Exception:  # noqa: BLE001
        sys.exit(f"PyQMC is not installed: pip install pyqmc=={PYQMC_VERSION} (benchmark only)")
    if version != PYQMC_VERSION:
        log(f"# WARNING: PyQMC {version} installed; this comparison was set up for {PYQMC_VERSION}")
    base = {"walkers": args.walkers, "vmc_steps": args.vmc_steps, "seed": args.seed}
    specs = [base | {"case": "pyqmc", "iterations": args.pyqmc_iterations}]
    specs += [base | {"case": case, "steps": args.qmckit_steps} for case in QMCKIT_CASES]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(lambda spec: run_worker(spec, args.timeout), specs))
    for r in rows:
        log(r.get("code"), {k: r[k] for k in ("steps", "wall_s", "vmc", "error") if k in r})
    command = ("python benchmarks/optimize_molecule_pyqmc.py " + " ".join(sys.argv[1:])).strip()
    record = {"benchmark": "optimize_molecule_pyqmc", "date": date.today().isoformat(), "machine": cpu_model(),
              "cores": os.cpu_count(), "python": platform.python_version(), "command": command, "jobs": args.jobs,
              "walkers": args.walkers, "vmc_steps": args.vmc_steps, "rows": rows}
    stem = results_stem(f"optimize_molecule_pyqmc_{record['date']}")
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    stem.with_suffix(".md").write_text(markdown(record))
    log(f"written {stem}.json and .md")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "_worker":
        spec = json.loads(sys.argv[2])
        worker = pyqmc_worker if spec["case"] == "pyqmc" else qmckit_worker
        print("\nRESULT " + json.dumps(worker(spec)), flush=True)
    else:
        main()
