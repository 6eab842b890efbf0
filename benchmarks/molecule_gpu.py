#!/usr/bin/env python
"""Molecules on the GPU (issue 30): the thread-per-walker sampler :mod:`qmckit.backends.cuda_molecule` against its
CPU twin and against the host's CPU cores, in one run.

1. **Twins** on the device: the same walkers and random streams through the CPU sampler (``VMC``) and the GPU
   sweeper, sweep by sweep: accepted moves per walker, final random states, positions and local energies. Cases:
   H2O/cc-pVDZ with cusp-corrected orbitals and the polynomial Jastrow (drift, VMC), and Ne/cc-pVTZ fixed-node with
   the moves near the nucleus.
2. **VMC throughput**: walker-steps per second (one walker-step = every electron proposed once, drift–diffusion with
   exact Metropolis–Hastings, plus one local energy) for H2O/cc-pVDZ, H2O/cc-pVTZ and Ne/cc-pVTZ (cusp-corrected
   orbitals, e–e Padé Jastrow), on the GPU over walker counts (median of ``--reps`` launches after a warm-up
   launch; the launch is timed to its end by synchronising) and on the host CPU with 1 and all numba threads
   (``VMC.sweep``, median of ``--reps``).
3. **DMC through the Run**: ``make_run(RunConfig(system="molecule", method="dmc", backend=…))`` for H2O/cc-pVDZ
   (cusp) on the GPU and on all CPU cores: DMC steps per second and walker-steps per second (the Run's wall time,
   branching and estimators included).

    python benchmarks/molecule_gpu.py [--rhf-cache .rhf_cache_device.pkl] [--tag h100]

``--rhf-cache`` loads RHF solutions pickled on a machine with PySCF (the GPU host has none). Writes
$OUT (or benchmarks/results)/molecule_gpu_<tag>_<date>.{json,md}.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import platform
import sys
import time
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np  # noqa: E402

from _common import cpu_model, log, results_stem  # noqa: E402

CUSP = dict(cusp=True, jastrow_en=False)
TWINS = [("h2o/cc-pvdz, cusp, polynomial Jastrow, VMC", dict(xyz="h2o", basis="cc-pvdz", c_ee2=0.2, c_en3=-0.1) | CUSP,
          False, False, 256, 3),
         ("ne/cc-pvtz, cusp, fixed node, moves near the nucleus", dict(xyz="ne", basis="cc-pvtz") | CUSP, True, True,
          128, 2)]
THROUGHPUT = [("h2o", "cc-pvdz"), ("h2o", "cc-pvtz"), ("ne", "cc-pvtz")]
DT = {"h2o": 0.02, "ne": 0.01}


def walkers_for(system, W, seed):
    from qmckit.walkers import Walkers

    return Walkers.from_positions(system.initial_positions(W, np.random.default_rng(seed)), seed, system.cache_size())


def twin(label, params, fixed_node, nuclear, W, sweeps) -> dict:
    from qmckit.backends.cuda_molecule import CudaMoleculeSweeper
    from qmckit.methods.vmc import VMC
    from qmckit.systems.molecule import Molecule

    system = Molecule(**params)
    system = system.for_dmc() if fixed_node else system
    start = walkers_for(system, W, 5)
    dt = 0.01 if fixed_node else 0.02
    cpu = VMC(system, start.copy(), sampler="drift", dt=dt, nuclear_moves=nuclear)
    gpu = CudaMoleculeSweeper(system, start.copy(), sampler="drift", dt=dt, nuclear_moves=nuclear)
    row = {"case": label, "walkers": W, "sweeps": sweeps, "accept_mismatch": 0, "dpos": 0.0, "de_rel": 0.0}
    before = start.positions.copy()
    for _ in range(sweeps):
        e_cpu, _ = cpu.sweep(1)
        e_gpu, _ = gpu.sweep(1)
        walkers = gpu.to_host(recompute_caches=False)
        moved_cpu = (np.abs(cpu.walkers.positions - before).max(axis=2) > 0).sum(axis=1)
        row["accept_mismatch"] += int(np.sum(moved_cpu != gpu.last_accepted))
        row["dpos"] = max(row["dpos"], float(np.abs(walkers.positions - cpu.walkers.positions).max()))
        row["de_rel"] = max(row["de_rel"], float(np.abs(e_gpu - e_cpu).max() / np.abs(e_cpu).max()))
        row["streams_equal"] = bool(np.array_equal(walkers.rng_states, cpu.walkers.rng_states))
        before = cpu.walkers.positions.copy()
    row["acceptance"] = float(gpu.last_accepted.sum() / (W * system.n_particles))
    row["registers"] = gpu.registers()
    log(f"twin {label}: {row}")
    return row


def gpu_throughput(xyz, basis, walker_counts, reps) -> list:
    from numba import cuda

    from qmckit.backends import cuda_atom
    from qmckit.backends.cuda_molecule import CudaMoleculeSweeper
    from qmckit.systems.molecule import Molecule

    system = Molecule(xyz=xyz, basis=basis, **CUSP)
    rows = []
    for W in walker_counts:
        sweeper = CudaMoleculeSweeper(system, walkers_for(system, W, 7), sampler="drift", dt=DT[xyz])
        sweeper.sweep(20, measure=False)  # compile (first W only) and equilibrate a little
        n = 2
        while True:  # a launch of at least 0.2 s
            t0 = time.perf_counter()
            sweeper.launch(n, measure=True)
            cuda.synchronize()
            t = time.perf_counter() - t0
            if t > 0.2 or n >= 4096 or W <= 2:
                break
            n *= 2
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            energies = sweeper.launch(n, measure=True)
            cuda.synchronize()
            times.append(time.perf_counter() - t0)
        e = energies.copy_to_host()[:n, :W]  # the device block has capacity columns beyond W
        med = float(np.median(times))
        k = sweeper._k["sweep"]
        rows.append({"molecule": f"{xyz}/{basis}", "n_basis": system.n_basis, "walkers": W, "sweeps": n,
                     "times_s": times, "median_s": med, "walker_steps_per_s": W * n / med,
                     "energy_mean": float(e.mean()), "registers": cuda_atom._regs(k),
                     "local_bytes": cuda_atom._local_bytes(k)})
        log(f"gpu {xyz}/{basis} W={W}: {W * n / med:.3e} walker-steps/s (n={n}, regs {rows[-1]['registers']}, "
            f"local {rows[-1]['local_bytes']} B), ⟨E_L⟩ = {e.mean():.4f}")
    return rows


def cpu_throughput(xyz, basis, threads, reps) -> dict:
    import numba

    from qmckit.methods.vmc import VMC
    from qmckit.systems.molecule import Molecule

    system = Molecule(xyz=xyz, basis=basis, **CUSP)
    numba.set_num_threads(threads)
    W = 32 * threads
    vmc = VMC(system, walkers_for(system, W, 7), sampler="drift", dt=DT[xyz])
    vmc.sweep(5, measure=False)
    n = 2
    while True:
        t0 = time.perf_counter()
        vmc.sweep(n, measure=True)
        t = time.perf_counter() - t0
        if t > 0.5 or n >= 4096:
            break
        n *= 2
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        vmc.sweep(n, measure=True)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    row = {"molecule": f"{xyz}/{basis}", "threads": threads, "walkers": W, "sweeps": n, "times_s": times,
           "median_s": med, "walker_steps_per_s": W * n / med}
    log(f"cpu {xyz}/{basis} {threads} threads: {row['walker_steps_per_s']:.3e} walker-steps/s")
    return row


def dmc_through_run(backend, walkers, steps, threads) -> dict:
    import numba

    from qmckit.runs import RunConfig, make_run

    numba.set_num_threads(threads)
    config = RunConfig(system="molecule", params=dict(xyz="h2o", basis="cc-pvdz") | CUSP, method="dmc",
                       backend=backend, walkers=walkers, steps=steps, equilibration=50, dmc_equilibration=50,
                       dt=0.005, seed=3)
    make_run(dataclasses.replace(config, steps=2, equilibration=2, dmc_equilibration=2)).run()  # compiles the kernels
    run = make_run(config)
    t0 = time.perf_counter()
    result = run.run()
    wall = time.perf_counter() - t0
    e = result["estimates"]["energy"]
    total_steps = steps + 50  # DMC steps (the VMC equilibration sweeps are counted apart)
    row = {"backend": backend, "threads": threads, "walkers": walkers, "dmc_steps": total_steps, "wall_s": wall,
           "dmc_steps_per_s": total_steps / wall, "walker_steps_per_s": total_steps * walkers / wall,
           "energy": {"mean": e["mean"], "error": e["error"]}, "tau_eff": result["tau_eff"],
           "walkers_final": result["walkers_final"]}
    log(f"dmc {backend}: {row}")
    return row


def markdown(record) -> str:
    lines = [f"# Molecules on the GPU: thread-per-walker sampler ({record['date']}, {record['device']})", "",
             f"Host: {record['host_cpu']}, {record['cores']} cores; Python {record['python']}. Command: "
             f"`{record['command']}`. Cusp-corrected RHF orbitals (cc-pVXZ, Cartesian), e–e Padé Jastrow; drift "
             "sampler with exact Metropolis–Hastings; one walker-step = every electron proposed once + one E_L.", "",
             "## Twins on the device (same walkers and streams)", "",
             "| case | W × sweeps | accept-count mismatches | streams equal | max abs Δr (bohr) | max rel ΔE_L | "
             "registers (sweep, energy) |", "|---|---|---:|---|---:|---:|---|"]
    for r in record["twins"]:
        lines.append(f"| {r['case']} | {r['walkers']} × {r['sweeps']} | {r['accept_mismatch']} | {r['streams_equal']} | "
                     f"{r['dpos']:.1e} | {r['de_rel']:.1e} | {r['registers']} |")
    lines += ["", "## VMC throughput (walker-steps/s, medians)", "",
              "| molecule | n_basis | CPU 1 thread | CPU all threads | GPU best (W) | GPU / 1 thread | GPU / all threads |",
              "|---|---:|---:|---:|---|---:|---:|"]
    for mol in dict.fromkeys(r["molecule"] for r in record["gpu"]):
        g = [r for r in record["gpu"] if r["molecule"] == mol]
        c = {r["threads"]: r["walker_steps_per_s"] for r in record["cpu"] if r["molecule"] == mol}
        best = max(g, key=lambda r: r["walker_steps_per_s"])
        one, many = c.get(1, float("nan")), c.get(max(c), float("nan")) if c else float("nan")
        lines.append(f"| {mol} | {best['n_basis']} | {one:.3e} | {many:.3e} ({max(c) if c else '–'}) | "
                     f"{best['walker_steps_per_s']:.3e} ({best['walkers']}) | {best['walker_steps_per_s'] / one:.0f}× | "
                     f"{best['walker_steps_per_s'] / many:.1f}× |")
    lines += ["", "GPU over walker counts:", "", "| molecule | W | sweeps per launch | median s | walker-steps/s | "
              "registers | local bytes | ⟨E_L⟩ |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in record["gpu"]:
        lines.append(f"| {r['molecule']} | {r['walkers']} | {r['sweeps']} | {r['median_s']:.3f} | "
                     f"{r['walker_steps_per_s']:.3e} | {r['registers']} | {r['local_bytes']} | "
                     f"{'–' if r['energy_mean'] is None else format(r['energy_mean'], '.3f')} |")
    if record.get("dmc"):
        lines += ["", "## DMC through the Run (H2O/cc-pVDZ, cusp, Δτ = 0.005, 50 + measured steps)", "",
                  "| backend | threads | W | DMC steps | wall s | DMC steps/s | walker-steps/s | E (E_h) | τ_eff |",
                  "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
        for r in record["dmc"]:
            lines.append(f"| {r['backend']} | {r['threads']} | {r['walkers']} | {r['dmc_steps']} | {r['wall_s']:.1f} | "
                         f"{r['dmc_steps_per_s']:.1f} | {r['walker_steps_per_s']:.3e} | "
                         f"{r['energy']['mean']:.4f} ± {r['energy']['error']:.4f} | {r['tau_eff']:.5f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rhf-cache", default=None)
    parser.add_argument("--tag", default="gpu")
    parser.add_argument("--walkers", default="4096,16384,65536", help="GPU walker counts")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: twins, throughput, dmc")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (a check of the script, e.g. under the "
                        "CUDA simulator)")
    args = parser.parse_args()
    twins, dmc_sizes = TWINS, ((16384, 1000), (1024, 300))
    if args.smoke:
        twins = [case[:4] + (2, 1) for case in TWINS]
        args.walkers, args.reps, dmc_sizes = "2", 1, ((2, 2), (2, 2))
    warnings.filterwarnings("ignore")
    if args.rhf_cache:
        from qmckit.systems import molecule

        molecule._RHF_CACHE.update(pickle.loads(Path(args.rhf_cache).read_bytes()))
    from numba import cuda

    skip = set(args.skip.split(","))
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        device = "CUDA simulator (times meaningless)"
        from qmckit import runs

        runs.cuda_available = lambda system, sampler="drift": True  # the simulator stands in for the GPU
    else:
        device = cuda.get_current_device().name
        device = device.decode() if isinstance(device, bytes) else str(device)
    cores = os.cpu_count()
    record = {"benchmark": "molecule_gpu", "date": date.today().isoformat(), "device": device, "host_cpu": cpu_model(),
              "cores": cores, "python": platform.python_version(),
              "command": "python benchmarks/molecule_gpu.py " + " ".join(sys.argv[1:]), "twins": [], "gpu": [],
              "cpu": [], "dmc": []}
    t_start = time.perf_counter()
    if "twins" not in skip:
        record["twins"] = [twin(*case) for case in twins]
    if "throughput" not in skip:
        for xyz, basis in THROUGHPUT:
            record["gpu"] += gpu_throughput(xyz, basis, [int(w) for w in args.walkers.split(",")], args.reps)
            record["cpu"] += [cpu_throughput(xyz, basis, t, args.reps) for t in (1, cores)]
    if "dmc" not in skip:
        record["dmc"] = [dmc_through_run("cuda", *dmc_sizes[0], cores), dmc_through_run("cpu", *dmc_sizes[1], cores)]
    record["wall_s"] = time.perf_counter() - t_start
    stem = results_stem(f"molecule_gpu_{args.tag}_{record['date']}")
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    stem.with_suffix(".md").write_text(markdown(record))
    log(markdown(record))


if __name__ == "__main__":
    main()
