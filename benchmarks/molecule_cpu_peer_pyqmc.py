#!/usr/bin/env python
"""The molecule sampler's CPU peer (issue 30): PyQMC 0.8.1's VMC on all host cores, through its ``client=`` executor,
on H2O with the geometry and basis of ``molecule_gpu.py``, in walker-steps per second (one walker-step = every
electron moved once with drift–diffusion and Metropolis–Hastings, plus one local energy: PyQMC's ``vmc`` step with its
``EnergyAccumulator``, as ours).

PyQMC's wave function is its default ``generate_wf(mol, mf)``: the RHF determinant (the same ``build_mole`` as
qmckit's, Cartesian functions) times its JastrowSpin factor (e–n cusp and 4 PolyPade e–n functions per nucleus and
spin, 3 e–e functions per spin pair), at its starting coefficients. qmckit's closest forms are the e–e Padé factor
with RHF orbitals ("plain") or with cusp-corrected orbitals ("cusp"); PyQMC's factor costs a little more per move.

Each configuration count runs PyQMC's ``vmc`` for ``--steps`` steps after ``--warmup`` steps: on one core
(``client=None``) and on all cores (a ``ProcessPoolExecutor`` of ``os.cpu_count()`` processes, ``npartitions`` the
same; each process single-threaded). Δt = 0.02 (our H2O VMC time step). Medians of ``--reps`` runs.

    pip install pyqmc==0.8.1     # benchmark only; not a qmckit dependency
    python benchmarks/molecule_cpu_peer_pyqmc.py [--basis cc-pvtz] [--configs 4096] [--steps 10]

Writes $OUT (or benchmarks/results)/molecule_cpu_peer_pyqmc_<date>.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from pathlib import Path

for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one thread per process, workers too
    os.environ[name] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np  # noqa: E402

from _common import cpu_model, log, results_stem  # noqa: E402

TSTEP = 0.02


def wave_function(basis: str):
    """(mol, PyQMC wave function, E_RHF) for H2O in ``basis``."""
    import pyqmc.api as pyq

    from optimize_molecule_pyqmc import _mole

    mol, mf, energy = _mole(basis)
    wf, _ = pyq.generate_wf(mol, mf)
    return mol, wf, energy


def timed_vmc(mol, wf, configs, steps: int, client, workers: int) -> tuple[float, object]:
    """Seconds of ``steps`` PyQMC VMC steps with E_L every step, and the configurations after them."""
    import pyqmc.api as pyq

    t0 = time.perf_counter()
    _, configs = pyq.vmc(wf, configs, tstep=TSTEP, nblocks=1, nsteps_per_block=steps,
                         accumulators={"energy": pyq.EnergyAccumulator(mol)}, client=client,
                         npartitions=workers if client is not None else None)
    return time.perf_counter() - t0, configs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--basis", default="cc-pvtz")
    parser.add_argument("--configs", default="4096", help="configurations on all cores (comma-separated)")
    parser.add_argument("--one-core-configs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import importlib.metadata as md

    import pyqmc.api as pyq

    mol, wf, e_rhf = wave_function(args.basis)
    cores = os.cpu_count()
    rows = []
    cases = [(1, args.one_core_configs)] + [(cores, int(n)) for n in args.configs.split(",")]
    with ProcessPoolExecutor(max_workers=cores) as pool:
        for workers, n in cases:
            client = pool if workers > 1 else None
            np.random.seed(7)
            configs = pyq.initial_guess(mol, n)
            _, configs = timed_vmc(mol, wf, configs, args.warmup, client, workers)  # workers start, imports load
            times = []
            for _ in range(args.reps):
                t, configs = timed_vmc(mol, wf, configs, args.steps, client, workers)
                times.append(t)
            median = float(np.median(times))
            rows.append({"workers": workers, "configs": n, "steps": args.steps, "times_s": times, "median_s": median,
                         "walker_steps_per_s": n * args.steps / median})
            log(f"pyqmc {args.basis} {workers} workers, {n} configurations: {rows[-1]['walker_steps_per_s']:.3e} "
                "walker-steps/s")
    record = {"benchmark": "molecule_cpu_peer_pyqmc", "date": date.today().isoformat(), "pyqmc": md.version("pyqmc"),
              "python": platform.python_version(), "host_cpu": cpu_model(), "cores": cores, "basis": args.basis,
              "e_rhf": e_rhf, "tstep": TSTEP,
              "command": "python benchmarks/molecule_cpu_peer_pyqmc.py " + " ".join(sys.argv[1:]), "rows": rows}
    stem = results_stem(f"molecule_cpu_peer_pyqmc_{record['date']}")
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    lines = [f"# PyQMC {record['pyqmc']} on the host's cores: the molecule sampler's CPU peer ({record['date']})", "",
             f"Host: {record['host_cpu']}, {cores} cores; Python {record['python']}. Command: `{record['command']}`. "
             f"H2O/{args.basis} (Cartesian), PyQMC's default Slater × JastrowSpin at its starting coefficients, "
             f"E_RHF {e_rhf:.6f} E_h; Δt = {TSTEP}; one walker-step = every electron moved once + one E_L; medians of "
             f"{args.reps} runs of {args.steps} steps.", "",
             "| processes | configurations | median s | walker-steps/s |", "|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['workers']} | {r['configs']} | {r['median_s']:.3f} | {r['walker_steps_per_s']:.3e} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    log("\n".join(lines))


if __name__ == "__main__":
    main()
