#!/usr/bin/env python
"""Study 001's Fig. 7 speedup table redone with qmckit: one all-electron VMC step of W walkers, phase by
phase (basis functions, orbital GEMM, Slater inverses, Jastrow, accept), on the CPU (numba, one thread
and all threads) and on the GPU (numba-cuda), for the seven Fig. 7 (N_e, N_bf) sizes.

Molecules are synthetic with the printed (N_e, N_bf) (qmckit.studies.speedup_001.synthetic_molecule);
the step is qmckit.backends.cuda_molecule_step (CpuStep / GpuStep; TwinStep is the GPU's CPU twin).

One run (≈ 3–4 min on an H100 host, compilation included; every stage catches its own exceptions and
the JSON is rewritten after each):

  1. CPU, in two child processes (numba, OpenMP and BLAS threads pinned by environment): all threads,
     then one thread; W_cpu walkers (default 32); per size the f32 pipeline (+ the Kahan GEMM on its
     operands) and the f64 pipeline; every phase and the whole step, interleaved, median of --reps.
  2. GPU: twin check (GpuStep vs TwinStep, same positions and streams, f64/f32/kahan32: max |Δ| per
     array per phase, accept decisions); then per size the f32 pipeline (+ qmckit Kahan GEMM and cuBLAS
     f32 through CuPy on the same operands) and the f64 pipeline (+ cuBLAS f64) with W_gpu walkers
     (default 256), each phase and the step timed as sync + perf_counter around ≥ 2 ms of
     back-to-back calls, median of --reps; the device→host copy of Φ and host→device copy of the
     positions (001's split: inversion on the CPU); then, as the budget allows, a walker-count sweep.
  3. Table: speedups per walker-step (CPU time per walker-step / GPU time per walker-step) next to
     001's Fig. 7 columns; Amdahl shares; each GPU phase as a fraction of a stated limit (GEMM: of
     cuBLAS; basis, layout, accept: bytes/s of HBM bandwidth; Slater, Jastrow: flop/s of FP64 peak).

Usage
  python benchmarks/molecule_speedup.py                      # device machine: files to $OUT
  python benchmarks/molecule_speedup.py --cpu-only --tag cpu_vm --out benchmarks/results   # CPU alone
  NUMBA_ENABLE_CUDASIM=1 python benchmarks/molecule_speedup.py --simulate --out /tmp/x      # GPU path, simulator
Writes <out>/molecule_speedup_<machine>_<date>.{md,json} (out: --out, else $OUT, else ./device_out).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import platform
import re
import socket
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for path in (str(REPO), str(REPO / "benchmarks")):
    if path not in sys.path:
        sys.path.insert(0, path)

import numba  # noqa: E402

from qmckit.backends import cuda_molecule_step as S  # noqa: E402
from qmckit.studies import speedup_001 as study  # noqa: E402
from _common import Budget, cpu_model, log  # noqa: E402


def cpu_info():
    model = cpu_model()
    info = {"model": model, "logical_cores": os.cpu_count()}
    try:
        info["load_average_at_start"] = list(os.getloadavg())
    except OSError:
        pass
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        info["numpy_blas"] = f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # noqa: BLE001
        pass
    return info


def versions():
    out = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}
    import importlib.metadata as md

    for pkg in ("numba-cuda", "cupy", "cupy-cuda12x", "cupy-cuda13x"):
        try:
            out[pkg] = md.version(pkg)
        except Exception:  # noqa: BLE001
            pass
    return out


# --------------------------------------------------------------------------------------------
# plan
# --------------------------------------------------------------------------------------------
TINY = [("tiny CH2", 8, 25), ("tiny C2H2", 14, 40)]
SMALL_CPU = ["Acetic acid", "Benzaldehyde", "[10]Annulene"]
SWEEP_SIZES = ["Benzaldehyde", "HMX"]


def plan(args):
    if args.simulate:
        sizes = TINY
    elif args.sizes:
        wanted = [s.strip().lower() for s in args.sizes.split(",")]
        sizes = [s for s in study.fig7_sizes() if s[0].lower() in wanted]
        if len(sizes) != len(wanted):
            raise SystemExit(f"--sizes: unknown name in {args.sizes!r}; known: "
                             f"{', '.join(s[0] for s in study.fig7_sizes())}")
    elif args.cpu_only:
        sizes = [s for s in study.fig7_sizes() if s[0] in SMALL_CPU]
    else:
        sizes = study.fig7_sizes()
    return sizes


# --------------------------------------------------------------------------------------------
# CPU
# --------------------------------------------------------------------------------------------
def run_cpu(args, sizes, budget, report):
    report["cpu_runs"] = {}
    for label, threads in (("all", None), ("one", 1)):
        if budget.left() < 20:
            report["cpu_runs"][label] = {"skipped": "budget"}
            continue
        log(f"# CPU, {'all threads' if threads is None else 'one thread'}: W = {args.cpu_walkers}, "
            f"{len(sizes)} sizes (child process)")
        t0 = time.perf_counter()
        try:
            share = 0.35 if label == "all" else 0.9  # of what is left for the CPU (compilation not counted)
            res = study.measure_cpu_subprocess(threads, sizes, walkers=args.cpu_walkers, reps=args.cpu_reps,
                                               seed=args.seed, tau=args.tau, min_time=args.cpu_min_time,
                                               budget_s=max(5.0, share * (budget.left() - args.gpu_reserve)),
                                               timeout=max(60.0, budget.left() + 60.0))
            for line in res.get("log", "").strip().splitlines()[-len(sizes) - 2:]:
                log(line)
            report["cpu_runs"][label] = res
            log(f"  done in {time.perf_counter() - t0:.0f} s (numba threads {res.get('numba_threads')})")
        except Exception as exc:  # noqa: BLE001
            report["cpu_runs"][label] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"  FAILED: {exc}")
        save(report, args)


# --------------------------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------------------------
def sim_threads(args):
    if args.simulate:
        return {"basis": 16, "layout": 64, "slater": 4, "pairs": 8, "accept": 8}
    return None


def sim_tile(args):
    if args.simulate:
        from qmckit.backends import cuda_gemm as G

        return G.Tile(32, 16, 8, 4, 2)
    return None


def twin_checks(args, report):
    out = {}
    try:
        mol = study.synthetic_molecule(8, 25, seed=3, formula="CH2") if args.simulate else \
            study.synthetic_molecule(32, 80, seed=3, name="Acetic acid")
        system = mol.step_system()
        W = 3 if args.simulate else 64
        pos = study.initial_positions(mol.coordinates, mol.charges, W, np.random.default_rng(5))
        for kind in S.KINDS:
            t0 = time.perf_counter()
            r = S.twin_check(system, pos, kind, seed=11, tau=0.002, steps=2, threads=sim_threads(args),
                             tile=sim_tile(args))
            worst = {}
            for ph, d in r["phases"].items():
                worst[ph] = max((v.get("rel", 0.0) for v in d.values() if "rel" in v), default=0.0)
            last = r["steps"][-1]
            worst["state after steps"] = max((v.get("rel", 0.0) for v in last.values() if "rel" in v), default=0.0)
            r["summary"] = {"max_rel_by_phase": worst,
                            "decisions_equal": all(v["equal"] for k, v in last.items() if k in ("nacc", "accepted")),
                            "bitwise_everything": all(v["equal"] for s in r["steps"] for v in s.values()),
                            "wall_s": time.perf_counter() - t0}
            out[kind] = r
            log(f"# twin {kind}: max rel |GPU − CPU twin| per phase "
                + ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
                + f"; decisions equal: {r['summary']['decisions_equal']} (accepted {r['accepted_gpu']} GPU, "
                  f"{r['accepted_cpu']} CPU); bitwise: {r['summary']['bitwise_everything']}")
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {exc}"
        log(f"# twin check FAILED: {exc!r}")
        traceback.print_exc()
    report["twin_check"] = out


class Cupy:
    def __init__(self, simulate):
        self.cp = None
        self.error = "not under the simulator" if simulate else None
        if simulate:
            return
        try:
            import cupy as cp

            cp.cuda.runtime.getDeviceCount()
            self.cp = cp
            self.version = cp.__version__
        except Exception as exc:  # noqa: BLE001
            self.error = f"{type(exc).__name__}: {exc}"

    def matmul_call(self, dA, dB, dC):
        cp = self.cp
        a, b, c = cp.asarray(dA), cp.asarray(dB), cp.asarray(dC)  # zero-copy views of the numba arrays
        cp.matmul(a, b, out=c)
        return lambda: cp.matmul(a, b, out=c)


def phase_work(system, W, kind):
    """Bytes and flops of each GPU phase per call (the denominators of the limit fractions)."""
    N, n, nbf, na = system.N, system.n, system.n_basis, system.atoms.shape[0]
    P = W * N
    it = S.DTYPES[kind].itemsize
    return {
        # basis: A rows (5·n_bf) + gradient scratch written (3·n_bf), scratch read back and rows written by
        # the layout kernel (3·n_bf each), in the kind's dtype
        "basis": {"bytes": P * nbf * (5 + 3 + 3 + 3) * it},
        "gemm": {"flops": 2.0 * P * 5 * nbf * n},
        # Gauss–Jordan: per column c, n·(n − c) updates of M and n·n of T (2 flops each); contraction 8 n²
        "slater": {"flops": 2 * W * (2.0 * (n ** 3 / 2 + n ** 3) + 8 * n * n)},
        # per electron: N − 1 pairs (≈ 30 flops with sqrt and one division counted as 1 each) + n_atoms
        "jastrow": {"flops": W * N * (N - 1 + na) * 30.0, "pairs": W * N * (N - 1 + na)},
        # accept: reads gD, lD, gU, lU, Ue, Ve, R, Rp, drift; writes vnew, terms, R, Rp, drift (float64)
        "accept": {"bytes": P * 8 * (3 + 1 + 3 + 1 + 1 + 1 + 3 + 3 + 3 + 3 + 3 + 3 + 3 + 3)},
    }


def gpu_limits(times, work, dev, cublas_ratio):
    """Fraction of a stated limit for each GPU phase (see phase_work)."""
    out = {}
    hbm = dev.get("peak_hbm_gb_s") or 3350.0
    f64 = (dev.get("peak_gflops") or {}).get("f64") or 33454.0
    for ph in S.PHASES:
        t = times.get(ph, {}).get("median_s")
        if not t:
            continue
        w = work[ph]
        if "bytes" in w:
            gbs = w["bytes"] / t / 1e9
            out[ph] = {"GB/s": gbs, "limit": f"HBM {hbm:.0f} GB/s", "fraction": gbs / hbm}
        elif ph == "gemm":
            gf = w["flops"] / t / 1e9
            out[ph] = {"GFLOP/s": gf, "limit": "cuBLAS (same shape and precision)", "fraction": cublas_ratio}
        else:
            gf = w["flops"] / t / 1e9
            out[ph] = {"GFLOP/s": gf, "limit": f"FP64 {f64:.0f} GFLOP/s", "fraction": gf / f64}
            if "pairs" in w:
                out[ph]["pairs_per_s"] = w["pairs"] / t
    return out


def run_gpu(args, sizes, budget, report):
    from numba import cuda

    import orbital_gemm_device as OG
    from qmckit.backends import cuda_gemm as G

    dev = OG.device_info(cuda)
    report["device"] = dev
    report["versions"].update({k: v for k, v in OG.versions(cuda).items() if k not in report["versions"]})
    log(f"# device {dev}")
    cp = Cupy(args.simulate)
    report["cublas"] = f"cupy {cp.version}" if cp.cp else cp.error
    twin_checks(args, report)
    save(report, args)
    gpu = {"walkers": args.walkers, "sizes": []}
    report["gpu"] = gpu
    for k, (name, ne, nbf) in enumerate(sizes):
        if budget.left() < args.sweep_reserve + 12:
            gpu["sizes"].append({"name": name, "skipped": "budget"})
            log(f"## GPU {name}: skipped (budget)")
            continue
        row = {"name": name, "n_electrons": ne, "n_basis": nbf, "walkers": args.walkers, "kinds": {}, "limits": {},
               "registers": {}}
        gpu["sizes"].append(row)
        try:
            mol = study.synthetic_molecule(ne, nbf, seed=args.seed + k, name=name)
            system = mol.step_system()
            row["n_atoms"], row["n_chunks"] = len(mol.symbols), int(system.chunks.shape[0])
            pos = study.initial_positions(mol.coordinates, mol.charges, args.walkers,
                                          np.random.default_rng(args.seed + 100 + k))
            for kind in ("f32", "f64"):
                t0 = time.perf_counter()
                g = S.GpuStep(system, pos, seed=args.seed, tau=args.tau, kind=kind, threads=sim_threads(args),
                              tile=sim_tile(args))
                g.start()
                g.synchronize()
                extra = {}
                if kind == "f32":
                    extra["gemm_kahan32"] = lambda g=g: G.matmul(g.A, g.B, "kahan32", out=g.Phi, tile=sim_tile(args))
                if cp.cp is not None:
                    extra["gemm_cublas"] = cp.matmul_call(g.A, g.B, g.Phi)
                t = study.time_phases(g, reps=args.reps, min_time=args.min_time, extra=extra)
                row["kinds"][kind] = t
                row["registers"][kind] = g.registers()
                ratio = (t["gemm_cublas"]["median_s"] / t["gemm"]["median_s"]) if "gemm_cublas" in t else None
                row["limits"][kind] = gpu_limits(t, phase_work(system, args.walkers, kind), dev, ratio)
                if kind == "f32" and "gemm_cublas" in t:
                    row["limits"][kind]["gemm_kahan32"] = {
                        "fraction": t["gemm_cublas"]["median_s"] / t["gemm_kahan32"]["median_s"],
                        "limit": "cuBLAS f32 (same shape)"}
                if kind == "f32":  # 001's split: Φ to the host for the inversion, new positions back
                    host_phi = np.empty(g.Phi.shape, g.Phi.dtype)
                    host_pos = np.ascontiguousarray(pos)
                    times = []
                    for _ in range(max(3, args.reps)):
                        g.synchronize()
                        t1 = time.perf_counter()
                        g.Phi.copy_to_host(host_phi)
                        g.Rp.copy_to_device(host_pos)
                        g.synchronize()
                        times.append(time.perf_counter() - t1)
                    row["transfer_s"] = statistics.median(times)
                    row["transfer_bytes"] = int(host_phi.nbytes + host_pos.nbytes)
                phases = " ".join(f"{p} {1e3 * t[p]['median_s']:.3f}" for p in S.PHASES)
                log(f"## GPU {name} {kind} W={args.walkers}: {phases} ms; step {1e3 * t['step']['median_s']:.3f} ms "
                    f"(Σ/step {t['phase_sum_over_step']:.2f})"
                    + (f"; Kahan GEMM {1e3 * t['gemm_kahan32']['median_s']:.3f} ms" if "gemm_kahan32" in t else "")
                    + (f"; cuBLAS {1e3 * t['gemm_cublas']['median_s']:.3f} ms" if "gemm_cublas" in t else "")
                    + f" [{time.perf_counter() - t0:.1f} s]")
                del g, extra
                gc.collect()
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"{type(exc).__name__}: {exc}"
            log(f"## GPU {name}: FAILED {exc!r}")
            traceback.print_exc()
        save(report, args)
    # walker-count sweep: the whole step per walker-step (f32)
    sweep = {"kind": "f32", "rows": []}
    report["walker_sweep"] = sweep
    names = [s for s in sizes if s[0] in SWEEP_SIZES] or sizes[:1]
    counts = (2, 4) if args.simulate else (16, 64, 256, 1024)
    for name, ne, nbf in names:
        k = [s[0] for s in sizes].index(name)
        mol = study.synthetic_molecule(ne, nbf, seed=args.seed + k, name=name)
        system = mol.step_system()
        for W in counts:
            if budget.left() < 10:
                sweep["rows"].append({"name": name, "walkers": W, "skipped": "budget"})
                continue
            try:
                pos = study.initial_positions(mol.coordinates, mol.charges, W, np.random.default_rng(7))
                g = S.GpuStep(system, pos, seed=args.seed, tau=args.tau, kind="f32", threads=sim_threads(args),
                              tile=sim_tile(args))
                g.start()
                t = study.time_phases(g, reps=args.reps, min_time=args.min_time, phases=(), whole=True)
                sweep["rows"].append({"name": name, "walkers": W, "step_s": t["step"]["median_s"],
                                      "per_walker_step_s": t["step"]["median_s"] / W})
                log(f"## sweep {name} W={W}: step {1e3 * t['step']['median_s']:.3f} ms = "
                    f"{1e6 * t['step']['median_s'] / W:.2f} µs per walker-step")
                del g
                gc.collect()
            except Exception as exc:  # noqa: BLE001
                sweep["rows"].append({"name": name, "walkers": W, "error": f"{type(exc).__name__}: {exc}"})
                log(f"## sweep {name} W={W}: FAILED {exc!r}")
        save(report, args)


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def fmt(x, spec=".2f"):
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def assemble(report):
    cpu = {label: res for label, res in report.get("cpu_runs", {}).items() if isinstance(res, dict) and "sizes" in res}
    if not cpu:
        return
    rows = study.speedup_rows(cpu, report.get("gpu"))
    report["table"] = rows
    report["trends"] = {label: study.trends(rows, label) for label in cpu}


def markdown(report):
    dev = report.get("device") or {}
    cpu = report["cpu"]
    runs = report.get("cpu_runs", {})
    gpu_name = dev.get("name") or "no GPU"
    lines = [f"# Study 001, Fig. 7 redone: speedup of a batched all-electron VMC step — {gpu_name} — {report['date']}",
             "",
             f"- host {report['host']}; CPU {cpu['model']}, {cpu['logical_cores']} logical cores, load average at start "
             f"{cpu.get('load_average_at_start')}; numpy BLAS {cpu.get('numpy_blas')}",
             f"- GPU: {gpu_name}" + (f" (cc {dev.get('compute_capability')}, {dev.get('sms')} SMs, "
                                    f"{dev.get('memory_gib')} GiB, simulated: {dev.get('simulated')})" if dev else ""),
             f"- versions: {report['versions']}; cuBLAS: {report.get('cublas', '–')}",
             f"- command `{report['command']}`; total {report.get('wall_s', 0):.0f} s",
             f"- walkers: CPU W = {report['cpu_walkers']} (numba threads: all = "
             f"{runs.get('all', {}).get('numba_threads', '–')}, one = {runs.get('one', {}).get('numba_threads', '–')}), "
             f"GPU W = {report['gpu_walkers'] or '–'}; τ = {report['tau']} bohr²; figures per walker-step",
             "- molecules: synthetic, the printed (N_e, N_bf) of 001's Fig. 7 (qmckit.studies.speedup_001); "
             "phases: basis (value, ∇, ∇² at W·N points), GEMM (W·N·5 × N_bf @ N_bf × N_e/2), Slater "
             "(Gauss–Jordan per walker and spin, ∇ ln D, ∇²D/D), Jastrow (e–e + e–n Padé, value, ∇, ∇², "
             "Coulomb potential), accept (E_L, drift, Metropolis–Hastings, next proposal)",
             "- timing: each phase and the whole step, interleaved rounds, median of "
             f"{report['reps']} (GPU) / {report['cpu_reps']} (CPU) rounds; GPU: sync + perf_counter around ≥ "
             f"{1e3 * report['min_time']:.0f} ms of back-to-back calls (launch overhead included where a kernel is "
             "shorter than its launch)",
             "- speedups: CPU time / GPU time per walker-step; *total std* / *total KSF*: CPU f32 pipeline vs GPU f32 "
             "pipeline with the standard / Kahan GEMM (001 compared both with single-precision ATLAS); *GEMM KSF*: "
             "CPU f32 BLAS vs GPU Kahan; *KSF penalty*: GPU total with Kahan / without; *total f64*: both pipelines "
             "in float64; *001's port*: basis, GEMM and Jastrow on the GPU, Slater and accept on the CPU, plus the "
             "copies of Φ to the host and the positions back", ""]
    starved = False
    for label in ("all", "one"):
        res = runs.get(label) or {}
        cw = [f"{r['name']} {r['cpu_over_wall']:.2f}" for r in res.get("sizes", []) if "cpu_over_wall" in r]
        threads = res.get("numba_threads") or 1
        starved |= any(r.get("cpu_over_wall", threads) < 0.8 * threads for r in res.get("sizes", []))
        if res.get("sizes"):
            lines.append(f"- CPU {'all threads' if label == 'all' else 'one thread'}: compile {res.get('compile_s', 0):.0f} s "
                         f"(not timed); cpu/wall per size (≈ the thread count when the cores were ours): {'; '.join(cw)}")
    if starved:
        lines.append("- **cpu/wall below the thread count: other load shared the cores during this run, so the CPU "
                     "figures are pessimistic wall-clock times (the all-threads ones most: a parallel region waits "
                     "for its slowest thread); compare the phase shares, not the absolute times**")
    lines.append("")
    tw = report.get("twin_check") or {}
    if tw:
        lines += ["## GPU vs CPU twin (same positions and random streams)", "",
                  "| kind | W | N_e | N_bf | max rel diff: basis | gemm | slater | jastrow | state after steps | "
                  "decisions equal | accepted GPU / CPU | bitwise |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
        for kind, r in tw.items():
            if not isinstance(r, dict) or "summary" not in r:
                lines.append(f"| {kind} | {r} |")
                continue
            m = r["summary"]["max_rel_by_phase"]
            lines.append(f"| {kind} | {r['walkers']} | {r['n_electrons']} | {r['n_basis']} | "
                         + " | ".join(fmt(m.get(k), ".1e") for k in ("basis", "gemm", "slater", "jastrow",
                                                                     "state after steps"))
                         + f" | {r['summary']['decisions_equal']} | {r['accepted_gpu']} / {r['accepted_cpu']} | "
                           f"{r['summary']['bitwise_everything']} |")
        lines += ["", "(max |GPU − twin| / max |twin| over each phase's arrays; the GPU contracts a·b + c into fma "
                  "and uses libdevice exp/log/sqrt, so agreement is to round-off, not bitwise, on a device)", ""]
    if report.get("table"):
        lines += ["## Speedups, times and Amdahl shares", "", study.markdown_tables(report["table"])]
        tr = report.get("trends") or {}
        for label, t in tr.items():
            if t:
                lines.append(f"- trends vs {'one thread' if label == 'one' else 'all threads'}: min(BF speedup / "
                             f"total) = {fmt(t.get('bf_over_total_min'))}; rank correlation Jastrow speedup vs N_e "
                             f"{fmt(t.get('jastrow_vs_ne_rank_corr'))}; KSF penalty vs N_e·N_bf "
                             f"{fmt(t.get('ksf_penalty_vs_size_rank_corr'))} (first, last "
                             f"{t.get('ksf_penalty_first_last')})")
        lines.append("")
    g = report.get("gpu") or {}
    lim_rows = [r for r in g.get("sizes", []) if r.get("limits")]
    if lim_rows:
        lines += ["## GPU phases against stated limits (f32 pipeline; f64 in the JSON)", "",
                  "| molecule | basis GB/s (% HBM) | GEMM f32 % of cuBLAS | GEMM Kahan % of cuBLAS f32 | "
                  "Slater GFLOP/s (% FP64) | Jastrow pairs/s (% FP64) | accept GB/s (% HBM) | registers |",
                  "|---|---:|---:|---:|---:|---:|---:|---|"]
        for r in lim_rows:
            L = r["limits"].get("f32", {})

            def pct(x):
                return fmt(100 * x, ".1f") + " %" if x is not None else "–"

            b, gm, gk, sl, ja, ac = (L.get(k, {}) for k in ("basis", "gemm", "gemm_kahan32", "slater", "jastrow", "accept"))
            lines.append(f"| {r['name']} | {fmt(b.get('GB/s'), '.0f')} ({pct(b.get('fraction'))}) | "
                         f"{pct(gm.get('fraction'))} | {pct(gk.get('fraction'))} | "
                         f"{fmt(sl.get('GFLOP/s'), '.0f')} ({pct(sl.get('fraction'))}) | "
                         f"{fmt(ja.get('pairs_per_s'), '.3g')} ({pct(ja.get('fraction'))}) | "
                         f"{fmt(ac.get('GB/s'), '.0f')} ({pct(ac.get('fraction'))}) | "
                         + ", ".join(f"{k} {v}" for k, v in (r.get('registers', {}).get('f32') or {}).items()) + " |")
        lines += ["", "Limits: basis = bytes written and re-read (A rows, gradient scratch, layout conversion) per "
                  "second vs the HBM peak; Slater = 3 n³ + 8 n² flops per matrix vs the FP64 peak; Jastrow ≈ 30 "
                  "flops per (electron, partner) pair vs the FP64 peak; accept = float64 bytes read and written.", ""]
    sw = report.get("walker_sweep") or {}
    if sw.get("rows"):
        lines += ["## GPU walker-count sweep (f32 step)", "", "| molecule | W | step ms | µs per walker-step |",
                  "|---|---:|---:|---:|"]
        for r in sw["rows"]:
            if "step_s" in r:
                lines.append(f"| {r['name']} | {r['walkers']} | {1e3 * r['step_s']:.3f} | {1e6 * r['per_walker_step_s']:.2f} |")
            else:
                lines.append(f"| {r['name']} | {r['walkers']} | {r.get('skipped') or r.get('error')} | |")
        lines.append("")
    lines += ["Reference: A. G. Anderson, W. A. Goddard III, P. Schröder, Comput. Phys. Commun. 177 (2007) 298, "
              "Fig. 7 (7800 GTX vs one 3 GHz Pentium 4 with ATLAS), `data/molecules_fig7.json`."]
    return "\n".join(lines) + "\n"


def clean(obj):
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def save(report, args, md=None):
    out_dir = Path(args.out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{report['stem']}.json").write_text(json.dumps(clean(report), indent=1, default=str))
        if md is not None:
            (out_dir / f"{report['stem']}.md").write_text(md)
    except OSError as exc:
        log(f"# could not write to {out_dir}: {exc}")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Study 001's Fig. 7 speedup table redone with qmckit "
                                     "(CPU and GPU phase timings of a batched all-electron VMC step).")
    parser.add_argument("--cpu-only", action="store_true", help="no GPU: CPU figures only (default sizes: the "
                        "three smallest Fig. 7 molecules)")
    parser.add_argument("--simulate", action="store_true", help="tiny sizes, for NUMBA_ENABLE_CUDASIM=1 (GPU path "
                        "under the CUDA simulator)")
    parser.add_argument("--sizes", default=None, help="comma-separated Fig. 7 names (default: all seven; "
                        "--cpu-only: the three smallest)")
    parser.add_argument("--walkers", type=int, default=None, help="GPU walkers (default 256; simulate 3)")
    parser.add_argument("--cpu-walkers", type=int, default=None, help="CPU walkers (default 32; simulate 3)")
    parser.add_argument("--reps", type=int, default=None, help="GPU timing rounds (default 5; simulate 1)")
    parser.add_argument("--cpu-reps", type=int, default=None, help="CPU timing rounds (default 3)")
    parser.add_argument("--tau", type=float, default=study.DEFAULT_TAU)
    parser.add_argument("--seed", type=int, default=2007)
    parser.add_argument("--budget", type=float, default=None, help="seconds for the whole run (default 225; "
                        "cpu-only 900)")
    parser.add_argument("--out", default=None, help="output folder (default $OUT, else ./device_out)")
    parser.add_argument("--tag", default=None, help="machine tag in the file name (default: GPU name, or cpu_<host>)")
    args = parser.parse_args(argv)
    if args.simulate and not numba.config.ENABLE_CUDASIM:
        raise SystemExit("--simulate needs NUMBA_ENABLE_CUDASIM=1 in the environment")
    if args.simulate:
        sys.setswitchinterval(1e-4)  # the simulator's block barriers wait on thread switches
    args.walkers = args.walkers or (3 if args.simulate else 256)
    args.cpu_walkers = args.cpu_walkers or (3 if args.simulate else 32)
    args.reps = args.reps or (1 if args.simulate else 5)
    args.cpu_reps = args.cpu_reps or (1 if args.simulate else 3)
    args.min_time = 0.0 if args.simulate else 2e-3
    args.cpu_min_time = 0.0 if args.simulate else 0.02
    args.gpu_reserve = 0.0 if args.cpu_only else (60.0 if args.simulate else 110.0)
    args.sweep_reserve = 0.0 if args.simulate else 20.0
    budget = Budget(args.budget or (900.0 if args.cpu_only else (600.0 if args.simulate else 225.0)))
    sizes = plan(args)
    date = datetime.date.today().isoformat()
    report = {"date": date, "host": socket.gethostname(),
              "command": "python " + " ".join([f"benchmarks/{Path(sys.argv[0]).name}"] + sys.argv[1:])
              if argv is None else str(argv),
              "cpu": cpu_info(), "versions": versions(), "sizes": [list(s) for s in sizes],
              "cpu_walkers": args.cpu_walkers, "gpu_walkers": None if args.cpu_only else args.walkers,
              "tau": args.tau, "reps": args.reps, "cpu_reps": args.cpu_reps, "min_time": args.min_time,
              "seed": args.seed}
    tag = args.tag
    if tag is None and not args.cpu_only:
        try:
            from numba import cuda

            name = "CUDA simulator" if S.simulated() else cuda.get_current_device().name
            name = name.decode() if isinstance(name, bytes) else str(name)
            tag = re.sub(r"[^A-Za-z0-9.-]+", "_", name.replace("NVIDIA ", "")).strip("_")
        except Exception:  # noqa: BLE001
            tag = "gpu"
    tag = tag or f"cpu_{socket.gethostname()}"
    report["stem"] = f"molecule_speedup_{'simulated_' if args.simulate and 'simul' not in tag else ''}{tag}_{date}"
    args.out_dir = args.out or os.environ.get("OUT") or "device_out"
    log(f"# {report['stem']}: sizes {sizes}; budget {budget.total:.0f} s")
    log(f"# cpu {report['cpu']}; versions {report['versions']}")
    run_cpu(args, sizes, budget, report)
    if not args.cpu_only:
        try:
            run_gpu(args, sizes, budget, report)
        except Exception as exc:  # noqa: BLE001
            report["gpu_error"] = f"{type(exc).__name__}: {exc}"
            log(f"# GPU part FAILED: {exc!r}")
            traceback.print_exc()
    report["wall_s"] = budget.elapsed()
    try:
        assemble(report)
        md = markdown(report)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        save(report, args)
        return 1
    save(report, args, md)
    log("\n" + md)
    log(f"# wrote {Path(args.out_dir) / report['stem']}.md and .json ({report['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
