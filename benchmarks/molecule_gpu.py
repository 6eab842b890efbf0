#!/usr/bin/env python
"""Molecules on the GPU (issue 30): the thread-per-walker sampler :mod:`qmckit.backends.cuda_molecule` against its
CPU twin and against the host's CPU cores, in one run.

1. **Twins** on the device: the same walkers and random streams through the CPU sampler (``VMC``) and the GPU
   sweeper, sweep by sweep: accepted moves per walker, final random states, positions and local energies. Cases:
   H2O/cc-pVDZ with cusp-corrected orbitals and the polynomial Jastrow (drift, VMC), and Ne/cc-pVTZ fixed-node with
   the moves near the nucleus.
2. **VMC throughput**: walker-steps per second (one walker-step = every electron proposed once, drift–diffusion with
   exact Metropolis–Hastings, plus one local energy) for ``--molecules`` (default H2O/cc-pVDZ, H2O/cc-pVTZ and
   Ne/cc-pVTZ) in each of ``--forms`` (cusp: cusp-corrected orbitals; plain: RHF orbitals; both with the e–e Padé
   Jastrow only), on the GPU over walker counts (median of ``--reps`` launches after a warm-up launch; the launch is
   timed to its end by synchronising) and on the host CPU with 1 and all numba threads (``VMC.sweep``, median of
   ``--reps``). A molecule whose nuclei, orbitals and basis exceed the kernels' constant memory is recorded as not
   fitting. ``--roofline`` adds the orbital phase against study 001's batched-GEMM roofline and cuBLAS
   (:func:`orbital_roofline`).
3. **DMC through the Run**: ``make_run(RunConfig(system="molecule", method="dmc", backend=…))`` for
   ``--dmc-molecules`` (default H2O/cc-pVDZ, with cusp-corrected orbitals where ``--forms`` has cusp) on the GPU
   (``--dmc-walkers``) and on all CPU cores (1024 walkers): DMC steps per second and walker-steps per second (the Run's wall time, branching and estimators
   included).
4. **float32 against float64** (``--precision``, xyz/basis/form items): the ``dtype=float32`` variant (the orbital
   contraction in float32, :func:`qmckit.systems.molecule._orbitals_f32`) beside the float64 kernels from the same
   walkers and seed: walker-steps/s of each, the VMC energy of each run (reblocked walker averages), their difference
   (the two runs share walkers and random numbers, so it is reblocked as one paired series), and the energy error per
   configuration: E_L of the float32 kernel against float64 at the float32 run's final configurations
   (the GPU's float64 kernel where the molecule fits it, else the CPU's ``evaluate_configurations`` on ≤ 2048 of
   them).

    python benchmarks/molecule_gpu.py [--rhf-cache .rhf_cache_device.pkl] [--tag h100]
    python benchmarks/molecule_gpu.py --molecules acetic-acid/cc-pvdz,benzene/cc-pvdz --forms plain --skip twins

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

from _common import Budget, cpu_model, log, results_stem  # noqa: E402

CUSP = dict(cusp=True, jastrow_en=False)
TWINS = [("h2o/cc-pvdz, cusp, polynomial Jastrow, VMC", dict(xyz="h2o", basis="cc-pvdz", c_ee2=0.2, c_en3=-0.1) | CUSP,
          False, False, 256, 3),
         ("ne/cc-pvtz, cusp, fixed node, moves near the nucleus", dict(xyz="ne", basis="cc-pvtz") | CUSP, True, True,
          128, 2)]
THROUGHPUT = "h2o/cc-pvdz,h2o/cc-pvtz,ne/cc-pvtz"
DT = {"h2o": 0.02, "ne": 0.01}  # VMC time steps, bohr²/ħ-ish (E_h⁻¹); other molecules: DT_DEFAULT
DT_DEFAULT = 0.01
FORMS = {"cusp": CUSP, "plain": dict(cusp=False, jastrow_en=False)}  # plain: RHF orbitals and the e–e Padé factor


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


def gpu_throughput(xyz, basis, walker_counts, reps, form="cusp") -> list:
    from numba import cuda

    from qmckit.backends import cuda_atom
    from qmckit.backends.cuda_molecule import CudaMoleculeSweeper
    from qmckit.systems.molecule import Molecule

    system = Molecule(xyz=xyz, basis=basis, **FORMS[form])
    if not CudaMoleculeSweeper.fits(system):
        log(f"gpu {xyz}/{basis} ({form}): {CudaMoleculeSweeper.frozen_bytes(system)} bytes of constants do not fit")
        return [{"molecule": f"{xyz}/{basis}", "form": form, "n_basis": system.n_basis, "walkers": None,
                 "fits": False, "frozen_bytes": CudaMoleculeSweeper.frozen_bytes(system)}]
    rows = []
    for W in walker_counts:
        sweeper = CudaMoleculeSweeper(system, walkers_for(system, W, 7), sampler="drift", dt=DT.get(xyz, DT_DEFAULT))
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
        rows.append({"molecule": f"{xyz}/{basis}", "form": form, "electrons": system.n_particles,
                     "n_basis": system.n_basis, "walkers": W, "sweeps": n,
                     "times_s": times, "median_s": med, "walker_steps_per_s": W * n / med,
                     "energy_mean": float(e.mean()), "registers": cuda_atom._regs(k),
                     "local_bytes": cuda_atom._local_bytes(k)})
        log(f"gpu {xyz}/{basis} W={W}: {W * n / med:.3e} walker-steps/s (n={n}, regs {rows[-1]['registers']}, "
            f"local {rows[-1]['local_bytes']} B), ⟨E_L⟩ = {e.mean():.4f}")
    return rows


def precision(item: str, W: int, sweeps: int, reps: int) -> dict:
    """float32 against float64 orbital contraction for one ``xyz/basis/form`` item: throughput, VMC energies and the
    per-configuration energy error (see the module docstring, part 4)."""
    from numba import cuda

    from qmckit.backends.cuda_molecule import CudaMoleculeSweeper
    from qmckit.samplers.cpu import evaluate_configurations
    from qmckit.stats.blocking import estimate
    from qmckit.systems.molecule import Molecule

    xyz, basis, form = item.split("/")
    system = Molecule(xyz=xyz, basis=basis, **FORMS[form])
    row = {"molecule": f"{xyz}/{basis}", "form": form, "electrons": system.n_particles, "n_basis": system.n_basis,
           "walkers": W, "sweeps": sweeps, "runs": {}}
    start = walkers_for(system, W, 7)
    sweepers, walker_averages = {}, {}
    for dtype in ("float64", "float32"):
        row["runs"][dtype] = run = {"frozen_bytes": CudaMoleculeSweeper.frozen_bytes(system, dtype),
                                    "fits": CudaMoleculeSweeper.fits(system, dtype)}
        if not run["fits"]:
            log(f"precision {item} {dtype}: {run['frozen_bytes']} bytes of constants do not fit")
            continue
        sweepers[dtype] = sw = CudaMoleculeSweeper(system, start.copy(), sampler="drift", dt=DT.get(xyz, DT_DEFAULT),
                                                   dtype=dtype)
        sw.sweep(max(20, sweeps // 5), measure=False)  # compile and equilibrate
        cuda.synchronize()
        times, series = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            energies = sw.launch(sweeps, measure=True)
            cuda.synchronize()
            times.append(time.perf_counter() - t0)
            series.append(energies.copy_to_host()[:sweeps, :W].mean(axis=1))  # the walker average per sweep
        walker_averages[dtype] = np.concatenate(series)
        e = estimate(walker_averages[dtype])
        run.update(times_s=times, median_s=float(np.median(times)),
                   walker_steps_per_s=W * sweeps / float(np.median(times)), energy=e.mean, energy_error=e.error,
                   registers=sw.registers())
        log(f"precision {item} {dtype}: {run['walker_steps_per_s']:.3e} walker-steps/s, E = {e.mean:.5f} ± "
            f"{e.error:.5f}")
    if "float32" not in sweepers:
        return row
    walkers = sweepers["float32"].to_host(recompute_caches=False)
    e32 = sweepers["float32"].local_energies()
    if "float64" in sweepers:
        reference = CudaMoleculeSweeper(system, walkers.copy(), sampler="drift", dtype="float64")
        e64, row["reference"] = reference.local_energies(), "GPU float64 kernel"
    else:
        m = min(W, 2048)
        _, e64 = evaluate_configurations(system, walkers.positions[:m])
        e32, row["reference"] = e32[:m], f"CPU float64 evaluate_configurations, {m} configurations"
    d = e32 - e64
    rel = np.abs(d) / np.abs(e64)
    row["energy_error"] = {"configurations": int(d.size), "median_rel": float(np.median(rel)),
                           "p90_rel": float(np.quantile(rel, 0.9)), "max_rel": float(rel.max()),
                           "mean_signed_Eh": float(d.mean()), "mean_signed_se_Eh": float(d.std(ddof=1) / np.sqrt(d.size)),
                           "median_abs_Eh": float(np.median(np.abs(d)))}
    r = row["runs"]
    if "walker_steps_per_s" in r["float64"]:
        row["speedup_f32"] = r["float32"]["walker_steps_per_s"] / r["float64"]["walker_steps_per_s"]
        paired = estimate(walker_averages["float32"] - walker_averages["float64"])  # correlated runs: one series
        row["energy_difference"] = {"mean": paired.mean, "error": paired.error}
    log(f"precision {item}: {row}")
    return row


def orbital_roofline(row: dict, reps: int) -> dict:
    """The orbital phase of a measured VMC row against the roofline of study 001's batched orbital GEMM.

    Per walker-step each of the N electrons is proposed once, and the move evaluates its value, gradient and
    Laplacian rows (5 quantities) of all n = N/2 occupied orbitals from the K basis functions: 2·5·N·K·n flops, the
    flops of 001's product A (M = W·5·N, K) × C (K, n) per walker-step of W walkers. Our kernel fuses that product
    into the move (the basis rows never reach memory), so its orbital flop rate is bounded below by the whole step's:
    walker-steps/s × 2·5·N·K·n (the step also evaluates the basis functions, the Jastrow factor, the determinant
    updates and E_L). The roofline is that of the unfused product: min(FP64 peak, arithmetic intensity × HBM
    bandwidth) (``orbital_gemm_device.roofline_gflops``), and cuBLAS's DGEMM (CuPy) of the same product, timed here
    on random operands, shows what a library reaches on it."""
    from numba import cuda

    from orbital_gemm_device import device_info, flops, roofline_gflops, time_calls

    dev = device_info(cuda)
    N, K, W = row["electrons"], row["n_basis"], row["walkers"]
    n, M = N // 2, W * 5 * N
    achieved = row["walker_steps_per_s"] * flops(5 * N, K, n) / 1e9
    roof, intensity = roofline_gflops("f64", M, K, n, dev)
    out = {"molecule": row["molecule"], "form": row["form"], "walkers": W, "M": M, "K": K, "N": n,
           "flops_per_walker_step": flops(5 * N, K, n), "fused_gflops_lower_bound": achieved,
           "roofline_gflops": roof, "intensity_flop_per_byte": intensity, "fraction_of_roofline_lower_bound":
           achieved / roof, "peak_f64_gflops": dev["peak_gflops"]["f64"], "hbm_gb_s": dev["peak_hbm_gb_s"]}
    try:
        import cupy

        rng = cupy.random.default_rng(1)
        A, C = rng.standard_normal((M, K)), rng.standard_normal((K, n))
        timing = time_calls(lambda: cupy.matmul(A, C), cupy.cuda.Device().synchronize, max(reps, 5), 2e-3, False)
        out["cublas_gflops"] = flops(M, K, n) / timing["median_s"] / 1e9
        out["cublas_fraction_of_roofline"] = out["cublas_gflops"] / roof
        del A, C
    except Exception as error:  # noqa: BLE001  (no CuPy, or no room: the bound stands alone)
        out["cublas_error"] = repr(error)
    log(f"orbital phase {row['molecule']} ({row['form']}) W={W}: ≥ {achieved:.0f} GFLOP/s fused, roofline "
        f"{roof:.0f} ({achieved / roof:.1%}), cuBLAS {out.get('cublas_gflops', float('nan')):.0f}")
    return out


def cpu_throughput(xyz, basis, threads, reps, form="cusp") -> dict:
    import numba

    from qmckit.methods.vmc import VMC
    from qmckit.systems.molecule import Molecule

    system = Molecule(xyz=xyz, basis=basis, **FORMS[form])
    numba.set_num_threads(threads)
    W = 32 * threads
    vmc = VMC(system, walkers_for(system, W, 7), sampler="drift", dt=DT.get(xyz, DT_DEFAULT))
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
    row = {"molecule": f"{xyz}/{basis}", "form": form, "threads": threads, "walkers": W, "sweeps": n, "times_s": times,
           "median_s": med, "walker_steps_per_s": W * n / med}
    log(f"cpu {xyz}/{basis} {threads} threads: {row['walker_steps_per_s']:.3e} walker-steps/s")
    return row


def dmc_through_run(backend, walkers, steps, threads, molecule="h2o/cc-pvdz", form="cusp") -> dict:
    import numba

    from qmckit.runs import RunConfig, make_run

    numba.set_num_threads(threads)
    xyz, basis = molecule.split("/")
    config = RunConfig(system="molecule", params=dict(xyz=xyz, basis=basis) | FORMS[form], method="dmc",
                       backend=backend, walkers=walkers, steps=steps, equilibration=50, dmc_equilibration=50,
                       dt=0.005, seed=3)
    make_run(dataclasses.replace(config, steps=2, equilibration=2, dmc_equilibration=2)).run()  # compiles the kernels
    run = make_run(config)
    t0 = time.perf_counter()
    result = run.run()
    wall = time.perf_counter() - t0
    e = result["estimates"]["energy"]
    total_steps = steps + 50  # DMC steps (the VMC equilibration sweeps are counted apart)
    row = {"molecule": molecule, "form": form, "backend": backend, "threads": threads, "walkers": walkers,
           "dmc_steps": total_steps, "wall_s": wall,
           "dmc_steps_per_s": total_steps / wall, "walker_steps_per_s": total_steps * walkers / wall,
           "energy": {"mean": e["mean"], "error": e["error"]}, "tau_eff": result["tau_eff"],
           "walkers_final": result["walkers_final"]}
    log(f"dmc {backend}: {row}")
    return row


def markdown(record) -> str:
    lines = [f"# Molecules on the GPU: thread-per-walker sampler ({record['date']}, {record['device']})", "",
             f"Host: {record['host_cpu']}, {record['cores']} cores; Python {record['python']}. Command: "
             f"`{record['command']}`. RHF orbitals (cc-pVXZ, Cartesian; cusp-corrected where the form says cusp), e–e Padé Jastrow; drift "
             "sampler with exact Metropolis–Hastings; one walker-step = every electron proposed once + one E_L.", "",
             "## Twins on the device (same walkers and streams)", "",
             "| case | W × sweeps | accept-count mismatches | streams equal | max abs Δr (bohr) | max rel ΔE_L | "
             "registers (sweep, energy) |", "|---|---|---:|---|---:|---:|---|"]
    for r in record["twins"]:
        lines.append(f"| {r['case']} | {r['walkers']} × {r['sweeps']} | {r['accept_mismatch']} | {r['streams_equal']} | "
                     f"{r['dpos']:.1e} | {r['de_rel']:.1e} | {r['registers']} |")
    lines += ["", "## VMC throughput (walker-steps/s, medians)", "",
              "Form: cusp = cusp-corrected orbitals, plain = RHF orbitals; both with the e–e Padé Jastrow only.", "",
              "| molecule | form | N_e | n_basis | CPU 1 thread | CPU all threads | GPU best (W) | GPU / 1 thread | "
              "GPU / all threads |", "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for mol, form in dict.fromkeys((r["molecule"], r.get("form", "cusp")) for r in record["gpu"]):
        g = [r for r in record["gpu"] if r["molecule"] == mol and r.get("form", "cusp") == form]
        if not g[0].get("fits", True):
            lines.append(f"| {mol} | {form} | | {g[0]['n_basis']} | | | does not fit ({g[0]['frozen_bytes']} B of "
                         "constants) | | |")
            continue
        c = {r["threads"]: r["walker_steps_per_s"] for r in record["cpu"]
             if r["molecule"] == mol and r.get("form", "cusp") == form}
        best = max(g, key=lambda r: r["walker_steps_per_s"])
        one, many = c.get(1, float("nan")), c.get(max(c), float("nan")) if c else float("nan")
        lines.append(f"| {mol} | {form} | {best.get('electrons', '')} | {best['n_basis']} | {one:.3e} | "
                     f"{many:.3e} ({max(c) if c else '–'}) | {best['walker_steps_per_s']:.3e} ({best['walkers']}) | "
                     f"{best['walker_steps_per_s'] / one:.0f}× | {best['walker_steps_per_s'] / many:.1f}× |")
    lines += ["", "GPU over walker counts:", "", "| molecule | W | sweeps per launch | median s | walker-steps/s | "
              "registers | local bytes | ⟨E_L⟩ |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in [r for r in record["gpu"] if r.get("fits", True)]:
        lines.append(f"| {r['molecule']} ({r.get('form', 'cusp')}) | {r['walkers']} | "
                     f"{r['sweeps']} | {r['median_s']:.3f} | "
                     f"{r['walker_steps_per_s']:.3e} | {r['registers']} | {r['local_bytes']} | "
                     f"{'–' if r['energy_mean'] is None else format(r['energy_mean'], '.3f')} |")
    if record.get("roofline"):
        lines += ["", "## The orbital phase against the batched-GEMM roofline (study 001's product, FP64)", "",
                  "Fused: our kernel's orbital flops per second, a lower bound (walker-steps/s × 2·5·N·K·n, the whole "
                  "step counted as orbital work). Roofline: min(FP64 peak, intensity × HBM bandwidth) of the unfused "
                  "product A (W·5·N × K) · C (K × n); cuBLAS: CuPy's DGEMM of that product, random operands.", "",
                  "| molecule | W | M × K × n | flop/walker-step | fused ≥ GFLOP/s | roofline GFLOP/s | fused/roofline ≥ "
                  "| cuBLAS GFLOP/s | cuBLAS/roofline |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
        for r in record["roofline"]:
            lines.append(f"| {r['molecule']} ({r['form']}) | {r['walkers']} | {r['M']} × {r['K']} × {r['N']} | "
                         f"{r['flops_per_walker_step']:.0f} | {r['fused_gflops_lower_bound']:.0f} | "
                         f"{r['roofline_gflops']:.0f} | {r['fraction_of_roofline_lower_bound']:.1%} | "
                         f"{r.get('cublas_gflops', float('nan')):.0f} | "
                         f"{r.get('cublas_fraction_of_roofline', float('nan')):.1%} |")
    if record.get("dmc"):
        lines += ["", "## DMC through the Run (Δτ = 0.005, 50 + measured steps, compilation outside the timing)", "",
                  "| molecule | form | backend | threads | W | DMC steps | wall s | DMC steps/s | walker-steps/s | E (E_h) | "
                  "τ_eff |", "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]
        for r in record["dmc"]:
            lines.append(f"| {r.get('molecule', 'h2o/cc-pvdz')} | {r.get('form', 'cusp')} | {r['backend']} | {r['threads']} | {r['walkers']} | {r['dmc_steps']} | {r['wall_s']:.1f} | "
                         f"{r['dmc_steps_per_s']:.1f} | {r['walker_steps_per_s']:.3e} | "
                         f"{r['energy']['mean']:.4f} ± {r['energy']['error']:.4f} | {r['tau_eff']:.5f} |")
    if record.get("precision"):
        lines += ["", "## float32 against float64 (the orbital contraction in float32, everything else float64)", "",
                  "Same start and seed for both; walker-steps/s are medians of the launches; E: all sweeps' walker "
                  "averages, reblocked; ΔE: f32 − f64 reblocked as one paired series (the runs share walkers and "
                  "random numbers). Energy error: E_L of the float32 kernel against the float64 reference at the "
                  "float32 run's final configurations (relative per configuration; the signed mean with its standard "
                  "error is the bias).", "",
                  "| molecule | form | W | constants f64 / f32 (B) | f64 walker-steps/s | f32 walker-steps/s | f32/f64 | "
                  "E f64 | E f32 | ΔE (paired) | median rel. error | 90th pct | max | mean ΔE_L (E_h) | reference |",
                  "|---|---|---:|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|---|"]
        for r in record["precision"]:
            f64, f32, err = r["runs"]["float64"], r["runs"]["float32"], r.get("energy_error", {})

            def speed(run):
                return f"{run['walker_steps_per_s']:.3e}" if "walker_steps_per_s" in run else "does not fit"

            def energy(run):
                return f"{run['energy']:.4f} ± {run['energy_error']:.4f}" if "energy" in run else "–"

            def paired(row):
                d = row.get("energy_difference")
                return f"{d['mean']:+.1e} ± {d['error']:.1e}" if d else "–"

            lines.append(
                f"| {r['molecule']} | {r['form']} | {r['walkers']} | {f64['frozen_bytes']} / {f32['frozen_bytes']} | "
                f"{speed(f64)} | {speed(f32)} | {r.get('speedup_f32', float('nan')):.2f} | {energy(f64)} | "
                f"{energy(f32)} | {paired(r)} | "
                f"{err.get('median_rel', float('nan')):.1e} | {err.get('p90_rel', float('nan')):.1e} | "
                f"{err.get('max_rel', float('nan')):.1e} | {err.get('mean_signed_Eh', float('nan')):+.1e} ± "
                f"{err.get('mean_signed_se_Eh', float('nan')):.1e} | {r.get('reference', '–')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rhf-cache", default=None)
    parser.add_argument("--tag", default="gpu")
    parser.add_argument("--walkers", default="4096,16384,65536", help="GPU walker counts")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: twins, throughput, dmc")
    parser.add_argument("--molecules", default=THROUGHPUT, help="comma-separated xyz/basis for the VMC throughput")
    parser.add_argument("--forms", default="cusp", help="comma-separated trial-function forms: cusp, plain")
    parser.add_argument("--dmc-molecules", default="h2o/cc-pvdz", help="comma-separated xyz/basis for DMC")
    parser.add_argument("--dmc-steps", default="1000,300", help="measured DMC steps on the GPU, on the CPU")
    parser.add_argument("--dmc-walkers", default="16384", help="DMC's GPU walker counts, comma-separated (CPU: 1024)")
    parser.add_argument("--roofline", action="store_true", help="the orbital phase of each molecule's best GPU row "
                        "against the batched-GEMM roofline and cuBLAS (CuPy)")
    parser.add_argument("--precision", default="", help="comma-separated xyz/basis/form items: float32 against "
                        "float64 (part 4), at the largest of --walkers")
    parser.add_argument("--precision-sweeps", type=int, default=500, help="sweeps per timed launch in part 4")
    parser.add_argument("--no-cpu", action="store_true", help="the GPU only (the CPU figures recorded elsewhere)")
    parser.add_argument("--budget", type=float, default=1e9, help="seconds; no new measurement starts after them")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (a check of the script, e.g. under the "
                        "CUDA simulator)")
    args = parser.parse_args()
    gpu_steps, cpu_steps = (int(x) for x in args.dmc_steps.split(","))
    twins = TWINS
    dmc_sizes = [("cuda", (int(w), gpu_steps)) for w in args.dmc_walkers.split(",")] + [("cpu", (1024, cpu_steps))]
    if args.smoke:
        twins = [case[:4] + (2, 1) for case in TWINS]
        args.walkers, args.reps, dmc_sizes = "2", 1, [("cuda", (2, 2)), ("cpu", (2, 2))]
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
    budget = Budget(args.budget)

    def within_budget(what: str) -> bool:
        if budget.left() > 0:
            return True
        log(f"budget spent: {what} not measured")
        return False

    if "throughput" not in skip:
        for molecule in args.molecules.split(","):
            xyz, basis = molecule.split("/")
            for form in args.forms.split(","):
                if not within_budget(f"{molecule} ({form})"):
                    continue
                rows = gpu_throughput(xyz, basis, [int(w) for w in args.walkers.split(",")], args.reps, form)
                record["gpu"] += rows
                if args.roofline and rows[0].get("fits", True):
                    record.setdefault("roofline", []).append(
                        orbital_roofline(max(rows, key=lambda r: r["walker_steps_per_s"]), args.reps))
                if rows[0].get("fits", True) and not args.no_cpu:
                    record["cpu"] += [cpu_throughput(xyz, basis, t, args.reps, form) for t in (1, cores)]
    if "dmc" not in skip:
        for molecule in args.dmc_molecules.split(","):
            form = "cusp" if "cusp" in args.forms.split(",") else "plain"
            for backend, sizes in dmc_sizes:
                if (backend == "cpu" and args.no_cpu) or not within_budget(f"DMC {molecule} {backend}"):
                    continue
                try:
                    record["dmc"].append(dmc_through_run(backend, *sizes, cores, molecule, form))
                except ValueError as error:  # a molecule too large for the GPU kernels' constants
                    log(f"DMC {molecule} {backend}: {error}")
    for item in filter(None, args.precision.split(",")):
        if within_budget(f"precision {item}"):
            record.setdefault("precision", []).append(
                precision(item, max(int(w) for w in args.walkers.split(",")), 2 if args.smoke else args.precision_sweeps,
                          args.reps))
    record["wall_s"] = time.perf_counter() - t_start
    stem = results_stem(f"molecule_gpu_{args.tag}_{record['date']}")
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    stem.with_suffix(".md").write_text(markdown(record))
    log(markdown(record))


if __name__ == "__main__":
    main()
