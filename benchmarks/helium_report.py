#!/usr/bin/env python
"""Merge the recorded device runs of ``benchmarks/helium_gpu.py`` into ``data/helium4_recorded.json``
(what the notebooks read) and a markdown report ``benchmarks/results/helium_gpu_h100_2026-11-23.md``.

Inputs (benchmarks/results/, all from NVIDIA H100 80GB HBM3 machines with 16 host cores):
  helium_gpu_h100v18_2026-11-26.json        twins, speed N = 64 … 40960 with the CPU of the same host, FMA
                                            probes (the kernels auto picks: packed — several chains per warp —
                                            for N ≤ 512; hybrid where 3N coordinates do not fit in shared memory
                                            but a third of the atoms do), and the packed kernel's twins and its
                                            lanes/block scan against the one-chain-per-block kernel (N = 64 …
                                            1000), with each packed chain's coordinates padded off the others'
                                            shared-memory banks. helium_gpu_h100v16_… is the run before that
                                            padding, helium_gpu_h100v17_… the padding with its stride computed
                                            by a device copy of the host function (float64 packed 8–66 % slower:
                                            84 registers and the pair loop's loads no longer issued early);
                                            helium_gpu_h100v14_… and helium_gpu_h100packed2_… are the
                                            same stages before the float32 fold without a separate |d|, the
                                            32-bit float64 high-word compare and the packed kernel's 32-bit
                                            stream loop and masks; helium_gpu_h100packed_… the run before two
                                            atoms per trip became its float64 default; helium_packed_scan_…md
                                            adds atoms per trip
  helium_gpu_h100v12_2026-11-26.json        the hybrid kernel's twins, the memory modes at N = 10240 and 40960
                                            (hybrid, split, global in one run) and the CPU there
  helium_finite_size_h100_2026-11-26.json   E, V, T against ρ (N = 1000) and N (ρ₀), S(k) at small k: the
                                            canonical-ensemble finite-size correction
  helium_gpu_h100v11_2026-11-23.json        time-to-error, pair-loop variants with their SASS
                                            counts, FMA probes (current kernel: folded minimum images, w(r) =
                                            r⁻⁵ + (L − r)⁻⁵ from rsqrt with a clamp as cut-off and scaled once
                                            after the block sum; in float64 the fold and clamp by high-word
                                            integer compares and rsqrt without libdevice's slow-path check;
                                            one barrier per microupdate; unsigned 32-bit indices; four atoms per
                                            trip in float64 shared memory; x, y in shared and z in global memory
                                            where only 2N coordinates fit; random numbers in batches of 32
                                            microupdates with ln ξ formed there. helium_gpu_h100v8_… is the
                                            kernel before the float64 changes and the single barrier, h100v7_…
                                            the one before the ln ξ decision)
  helium_gpu_h100v8bw_2026-11-23.json       DRAM and L2 read bandwidth (CUDA C probes)
  helium_ncu_n40960_h100_2026-11-23.txt     Nsight Compute memory counters of the float32 N = 40960 kernel (v8)
  helium_ncu_f64_n40960_h100_2026-11-23.txt the same counters of the float64 N = 40960 kernel (v11's)
  helium_gpu_h100v3masking_2026-11-23.json  load masking, both panels of 004's Fig. 3 (N = 512, 8 chains;
                                            the kernel before the two-atom loop)
  helium_gpu_sample_h100_2026-11-22.json    sample run (float64; the same pair terms, rint images)
  helium_sample_b3067_h100_2026-11-22.json  sample run at b = 3.067 Å (and 3.07 again), 4224 chains
  helium_bscan_dmc_h100_2026-11-22.json     sample-run b scan (GPU) and DMC series (host CPUs)
  helium_dmc_dt004_h100host_2026-11-22.json DMC N = 64 at Δτ = 0.004 K⁻¹ (host CPUs)
  helium_gpu_h100_seqopt_2026-11-22.json    Eq. 12: t σ² vs m with synchronous CPU analysis (previous kernel)

Usage: python benchmarks/helium_report.py
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qmckit.backends.helium_chains import hybrid_atoms  # noqa: E402
from qmckit.perf import fit_a_plus_b_over_m, fit_masked_threshold  # noqa: E402
from qmckit.stats import extrapolate  # noqa: E402
from qmckit.studies import helium4  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
NOMINAL_PEAK = {"float64": 33.5e12, "float32": 66.9e12}  # H100 SXM non-tensor FMA, NVIDIA datasheet
K20 = {40960: 418.0}  # ms per macroupdate per chain (study 004)


def load(name):
    return json.loads((RESULTS / name).read_text())


def fit_sequential_optimum(seq: dict) -> dict:
    """Fit t σ²(m) = C (t_G + t_A/m)(m + 2 m_c) (Eqs. 10–11 at fixed total work; t_G, t_A measured) for
    C and m_c, in log space with relative weights √(2/K) (K analyses): its optimum √(2 m_c t_A/t_G)."""
    t_g, t_a = seq["t_G_s"], seq["t_A_s"]
    m = np.array([r["m"] for r in seq["rows"]], dtype=float)
    y = np.log([r["t_sigma2_s_mK2"] for r in seq["rows"]])
    w = np.array([r["analyses"] for r in seq["rows"]]) / 2.0
    best = None
    for m_c in np.linspace(0.0, 5.0, 2001):
        f = np.log((t_g + t_a / m) * (m + 2 * m_c))
        log_c = np.sum(w * (y - f)) / w.sum()
        chi2 = float(np.sum(w * (y - f - log_c) ** 2))
        if best is None or chi2 < best[0]:
            best = (chi2, m_c)
    chi2, m_c = best
    return {"m_c_fit": m_c, "m_opt_fit": math.sqrt(2 * m_c * t_a / t_g), "chi2_per_dof": chi2 / (len(m) - 2)}


def memory_roof(speed: list, dtype: str) -> dict:
    """The N = 40960 kernel against its memory roof: the read bandwidths measured in CUDA C
    (helium_gpu_h100v8bw) and the DRAM traffic Nsight Compute measured for one macroupdate
    (helium_ncu_n40960_h100_2026-11-23.txt: float32, 132 chains, kernel of record v8, the section
    counters; helium_ncu_f64_n40960_h100_2026-11-23.txt: float64, 132 chains, the metrics). The
    profiler locks the clocks, so its bytes per pair evaluation, not its seconds, are carried over to
    the record's fastest unprofiled launch."""
    bandwidth = load("helium_gpu_h100v8bw_2026-11-23.json")["memory_bandwidth"]
    if dtype == "float32":
        text = (RESULTS / "helium_ncu_n40960_h100_2026-11-23.txt").read_text()
        tbps = float(re.search(r"Memory Throughput\s+Tbyte/s\s+([0-9.]+)", text).group(1))
        seconds = float(re.search(r"Duration\s+s\s+([0-9.]+)", text).group(1))
        dram_bytes = tbps * 1e12 * seconds
        l2_hit = float(re.search(r"L2 Hit Rate\s+%\s+([0-9.]+)", text).group(1))
        l1_hit = float(re.search(r"L1/TEX Hit Rate\s+%\s+([0-9.]+)", text).group(1))
    else:
        text = (RESULTS / "helium_ncu_f64_n40960_h100_2026-11-23.txt").read_text()
        dram_bytes = (1e12 * float(re.search(r"dram__bytes_read.sum\s+Tbyte\s+([0-9.]+)", text).group(1))
                      + 1e6 * float(re.search(r"dram__bytes_write.sum\s+Mbyte\s+([0-9.]+)", text).group(1)))
        l2_hit = float(re.search(r"lts__t_sector_hit_rate.pct\s+%\s+([0-9.]+)", text).group(1))
        l1_hit = float(re.search(r"l1tex__t_sector_hit_rate.pct\s+%\s+([0-9.]+)", text).group(1))
    n, profiled_chains = 40960, 132
    per_evaluation = dram_bytes / (2 * (n - 1) * n * profiled_chains)
    row = next(r for r in speed if r["n"] == n and r["dtype"] == dtype)
    bytes_per_s = per_evaluation * row["pair_evaluations_per_s"]
    return {"n": n, "dtype": dtype, "profiled_chains": profiled_chains, "chains": row["walkers"], "threads": row["threads"],
            "dram_read_bytes_per_s": bandwidth["dram"]["bytes_per_s"], "l2_read_bytes_per_s": bandwidth["l2"]["bytes_per_s"],
            "dram_bytes_per_macroupdate": dram_bytes, "dram_bytes_per_evaluation": per_evaluation,
            "l1_hit_percent": l1_hit, "l2_hit_percent": l2_hit, "dram_bytes_per_s": bytes_per_s,
            "fraction_of_dram_roof": bytes_per_s / bandwidth["dram"]["bytes_per_s"]}


def build() -> dict:
    main, speed_run, memory_run, packed_run, sample, masking, scan_dmc, dmc004 = (load(f"{stem}.json") for stem in (
        "helium_gpu_h100v11_2026-11-23", "helium_gpu_h100v18_2026-11-26", "helium_gpu_h100v12_2026-11-26",
        "helium_gpu_h100v18_2026-11-26", "helium_gpu_sample_h100_2026-11-22",
        "helium_gpu_h100v3masking_2026-11-23", "helium_bscan_dmc_h100_2026-11-22", "helium_dmc_dt004_h100host_2026-11-22"))
    main["sample_run"] = sample["sample_run"]
    b3067 = load("helium_sample_b3067_h100_2026-11-22.json")["3.067"]
    seq = load("helium_gpu_h100_seqopt_2026-11-22.json")["sequential_optimum"]
    seq = seq | fit_sequential_optimum(seq)
    # the faster FMA probe (the run's own speed stage divided by numba's, which is loop-bound in float32)
    peaks = {k: max(v["numba"]["flops"], (v["cuda_c"] or {}).get("flops", 0.0)) for k, v in speed_run["fma_probes"].items()}
    speed = []
    cpu = {(r["n"], r["threads"]): r for r in speed_run["speed"]["cpu"] + memory_run["memory_modes_cpu"]}
    for dtype in ("float64", "float32"):
        for r in speed_run["speed"]["gpu"]:
            if r["dtype"] != dtype:
                continue
            one, full = cpu.get((r["n"], 1)), cpu.get((r["n"], 16))
            speed.append({"n": r["n"], "dtype": dtype, "walkers": r["walkers"], "threads": r["threads"],
                          "memory": r["memory"],
                          "ms_per_macroupdate_per_chain": 1e3 * r["s_per_macroupdate_per_chain"],
                          "pair_evaluations_per_s": r["pair_evaluations_per_s"],
                          "fraction_measured_peak": r["pair_evaluations_per_s"] * 30 / peaks[dtype],
                          "fraction_nominal_peak": r["pair_evaluations_per_s"] * 30 / NOMINAL_PEAK[dtype],
                          "cpu_1_thread_ms": 1e3 * one["s_per_macroupdate_per_chain"] if one else None,
                          "cpu_16_threads_ms": 1e3 * full["s_per_macroupdate_per_chain"] if full else None})
    dmc_rows = dmc004["dmc"][:1] + scan_dmc["dmc"]
    series = {}
    for r in dmc_rows:
        series.setdefault(r["n"], {})[r["dt"]] = r["estimate"]
    dmc = {}
    for n, by_dt in sorted(series.items()):
        dts = np.array(sorted(by_dt))
        entry = {"dt": dts.tolist(), "energy": [by_dt[d]["mean"] for d in dts], "error": [by_dt[d]["error"] for d in dts]}
        usable = dts[dts <= 0.002]
        if len(usable) >= 2:
            fit = extrapolate(usable, [by_dt[d]["mean"] for d in usable], [by_dt[d]["error"] for d in usable],
                              order=1, n_points=None)
            entry["extrapolated"] = {"energy": fit.energy, "error": fit.error, "dts": usable.tolist(),
                                     "chi2": fit.chi2, "dof": fit.dof}
        dmc[str(n)] = entry
    rows = masking["masking"]["rows"]
    ms = np.array([r["m"] for r in rows if r["mode"] == "sync"])
    sync = np.array([r["total_s"] for r in rows if r["mode"] == "sync"])
    async_ = np.array([r["total_s"] for r in rows if r["mode"] == "async"])
    inv, thr = fit_a_plus_b_over_m(ms, sync), fit_masked_threshold(ms, async_)
    right = masking["masking_gpu_energy"]
    rows_r = right["rows"]
    m_r = np.array([r["m"] for r in rows_r if r["cpu_work"] == "none"])
    idle = np.array([r["total_s"] for r in rows_r if r["cpu_work"] == "none"])
    g_r = np.array([r["total_s"] for r in rows_r if r["cpu_work"] == "g(r)"])
    green = fit_a_plus_b_over_m(m_r, idle)
    # g(r) of writeout k runs while the GPU generates and measures writeout k + 1: hidden once
    # m t_G + t_E ≥ t_g(r)
    masked_from = (right["t_gr_s"] - right["t_E_s"]) / right["t_G_s"]
    variants = [{k: r.get(k, 2) for k in ("n", "dtype", "min_image", "inverse", "unroll", "walkers",
                                          "s_per_macroupdate_per_chain", "pair_evaluations_per_s", "roofline_fraction")}
                for r in main["variants"]["rows"]]
    scan = [{"b": r["b"], "acceptance": r["acceptance"],
             **{k: [v["mean"], v["error"]] for k, v in r["estimates"].items()}} for r in scan_dmc["sample_b_scan"]]
    b_fit = {}
    for key in ("potential_energy_per_particle", "kinetic_energy_per_particle"):
        bs = np.array([r["b"] for r in scan])
        values = np.array([r[key][0] for r in scan])
        target = helium4.PUBLISHED["sample_run"][key][0]
        near = np.argsort(np.abs(bs - 3.067))[:3]
        slope, intercept = np.polyfit(bs[near], values[near], 1)
        b_fit[key] = (target - intercept) / slope
    return {
        "source": "benchmarks/helium_report.py from benchmarks/results/helium_*_2026-11-2[23].json",
        "device": speed_run["device"]["name"], "host_cpu": speed_run["cpu"], "date": speed_run["date"],
        "measured_peak_flops": peaks, "nominal_peak_flops": NOMINAL_PEAK, "flop_per_pair_evaluation": 30,
        "twins": speed_run["twins"] + memory_run["hybrid_twins"] + packed_run["packed_twins"], "speed": speed,
        "memory_modes": [{k: r.get(k) for k in ("n", "dtype", "memory", "threads", "unroll", "lanes", "walkers")}
                         | {"ms_per_macroupdate_per_chain": 1e3 * r["s_per_macroupdate_per_chain"],
                            "fraction_measured_peak": r["pair_evaluations_per_s"] * 30 / peaks[r["dtype"]]}
                         for r in memory_run["memory_modes"] + packed_run["packed_modes"]],
        "finite_size": load("helium_finite_size_h100_2026-11-26.json"),
        "time_to_error": [{k: r.get(k) for k in ("n", "walkers", "backend", "m", "dtype", "threads", "t_sigma2_s_mK2",
                                                  "wall_s", "t_generate_s", "t_analyse_s")}
                          | {"energy_per_particle": [r["energy_per_particle"]["mean"], r["energy_per_particle"]["error"],
                                                     r["energy_per_particle"]["tau"]]}
                          for r in main["time_to_error"]],
        "sample_run": {k: main["sample_run"][k] for k in ("n", "b", "walkers", "analyses", "m", "equilibration",
                                                            "acceptance", "estimates", "wall_s")}
        | {"comparison": main["sample_run"]["comparison"]},
        "sample_b_scan": scan, "b_reproducing_edat": b_fit,
        "sample_run_b3067": {k: b3067[k] for k in ("n", "b", "walkers", "analyses", "m", "equilibration", "acceptance",
                                                   "estimates", "wall_s", "comparison")},
        "masking": {k: masking["masking"][k] for k in ("n", "walkers", "total_macroupdates", "t_G_s", "t_A_s", "alpha")}
        | {"m": ms.tolist(), "sync_s": sync.tolist(), "async_s": async_.tolist(),
           "sync_fit": {"a": inv.a, "a_err": inv.a_err, "b": inv.b, "b_err": inv.b_err},
           "async_threshold": {"m": thr.threshold, "low": thr.threshold_low, "high": thr.threshold_high}},
        "masking_gpu_energy": {k: right[k] for k in ("n", "walkers", "total_macroupdates", "t_G_s", "t_E_s", "t_gr_s")}
        | {"m": m_r.tolist(), "cpu_idle_s": idle.tolist(), "cpu_g_of_r_s": g_r.tolist(),
           "idle_fit": {"a": green.a, "a_err": green.a_err, "b": green.b, "b_err": green.b_err},
           "masked_from_m": masked_from},
        "pair_term_variants": variants, "ptx_generate_shared": main["variants"]["ptx_generate_shared"],
        "sass_generate_shared": main["variants"]["sass_generate_shared"],
        "fma_probes": main["fma_probes"],
        "dmc": {"tail_corrected": True, "walkers": 512, "n": dmc},
        "sequential_optimum": seq,
        # float64 only: float32 N = 40960 runs hybrid since 2026-11-26 (half its atoms from shared memory), at
        # 31 % of the FMA peak; the float32 Nsight Compute counters are of the global-memory kernel
        "memory_roof_n40960": {"float64": memory_roof(speed, "float64")},
    }


def roofline_summary(d: dict) -> str:
    """Which N reach 30 % of the measured peak, and the L2 traffic of the global-memory path."""
    lines = []
    for dtype, size in (("float32", 4), ("float64", 8)):
        rows = sorted((r for r in d["speed"] if r["dtype"] == dtype), key=lambda r: r["n"])
        met = [r["n"] for r in rows if r["fraction_measured_peak"] >= 0.3]
        big = rows[-1]
        fractions = ", ".join(f"{r['n']} ({r['memory']}): {100 * r['fraction_measured_peak']:.0f} %" for r in rows)
        shared = hybrid_atoms(big["n"], size) / big["n"] if big["memory"] == "hybrid" else 0.0
        lines.append(f"{dtype}: {fractions}; ≥ 30 % of the measured peak at N = {', '.join(map(str, met)) or 'none'}. "
                     f"At N = {big['n']} ({big['memory']} kernel) {100 * (1 - shared):.0f} % of the atoms live in global "
                     f"memory: every microupdate reads their {3 * size} B per atom through L1 and L2, "
                     f"{big['pair_evaluations_per_s'] / 2 * 3 * size * (1 - shared) / 1e12:.1f} TB/s requested over the GPU.")
    for dtype, size in (("float64", 8),):
        roof = d["memory_roof_n40960"][dtype]
        lines.append(
            f"On the memory side ({dtype}, N = {roof['n']}, {roof['chains']} chains of {roof['threads']} threads): Nsight "
            f"Compute counts {roof['dram_bytes_per_evaluation']:.1f} B of DRAM traffic per pair evaluation of the "
            f"{3 * size / 2:.0f} B read (profiled with {roof['profiled_chains']} chains: L1 hits {roof['l1_hit_percent']:.0f} %, "
            f"L2 hits {roof['l2_hit_percent']:.0f} %; the chains' {3 * size * roof['n'] * roof['profiled_chains'] / 1e6:.0f} MB "
            f"of coordinates exceed the 50 MB L2), {roof['dram_bytes_per_s'] / 1e12:.2f} TB/s at the unprofiled speed: "
            f"{100 * roof['fraction_of_dram_roof']:.0f} % of the measured DRAM read bandwidth "
            f"({roof['dram_read_bytes_per_s'] / 1e12:.2f} TB/s; L2 {roof['l2_read_bytes_per_s'] / 1e12:.1f} TB/s). Its "
            f"arithmetic intensity, {30 / roof['dram_bytes_per_evaluation']:.1f} flop per DRAM byte, is below the ridge "
            f"point ({d['measured_peak_flops'][dtype] / roof['dram_read_bytes_per_s']:.0f} flop/B), so the roofline there "
            f"is the memory roof, and the kernel reaches {100 * roof['fraction_of_dram_roof']:.0f} % of it.")
    return "**Roofline (goal ≥ 30 %).** " + " ".join(lines)


def markdown(d: dict) -> str:
    out = [f"# Liquid ⁴He (study 004) on one {d['device']} — {d['date']}", "",
           "Produced by `benchmarks/helium_gpu.py` (device runs) and merged by `benchmarks/helium_report.py`. "
           "float32 kernels use fastmath (approximate ÷, √ and rsqrt, 2 ulp); float64 ones are IEEE but for rsqrt "
           "(libdevice's estimate and Newton step without its slow-path check: the same bits, 1 ulp). "
           f"Host CPU: {d['host_cpu']['model']}, {d['host_cpu']['cores']} cores. Pair evaluation = one u(r) "
           "(minimum image, r², two inverses, powers; 30 flop with √ and ÷ counted as one). Measured peak: the "
           f"faster of two dependent-free FMA probes (see below), {d['measured_peak_flops']['float64'] / 1e12:.1f} "
           f"TFLOP/s (float64) and {d['measured_peak_flops']['float32'] / 1e12:.1f} TFLOP/s (float32); nominal "
           "33.5 / 66.9.", "",
           "## Twins (GPU generation kernel vs CPU kernel, same walkers and streams)", "",
           "| N | memory | threads | atoms per trip | macroupdates | accept mismatches | streams equal | max abs Δr (Å) |",
           "|---:|---|---:|---:|---:|---:|---|---:|"]
    for r in d["twins"]:
        if "memory" in r:
            out.append(f"| {r['n']} | {r['memory']} | {r['threads']} | {r.get('unroll', 2)} | {r['macro']} | "
                       f"{r['accept_mismatch']} | {r['states_equal']} | {r['max_dpos']:.1e} |")
    out += ["", "float32 vs float64 (same streams): " + "; ".join(
        f"N = {r['n']}{' (' + r['kernel'] + ' kernel)' if 'kernel' in r else ''}: max abs Δr {r['float32_max_dpos']:.1e} Å, "
        f"{r['float32_accept_mismatch']} accept mismatches"
        + (f"; energy kernel vs CPU estimators {r['energy_max_rel']:.1e} relative" if "energy_max_rel" in r else "")
        for r in d["twins"] if "float32_max_dpos" in r),
        "", "## Generation speed: time per macroupdate per chain (best chain count and block size)", "",
        "| N | dtype | memory | chains | threads | GPU ms | pair eval/s | % measured peak | % nominal peak | CPU 1 thread ms | "
        "CPU 16 threads ms | GPU / 1 thread | GPU / 16 threads |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(d["speed"], key=lambda r: (r["n"], r["dtype"])):
        one, full = r["cpu_1_thread_ms"], r["cpu_16_threads_ms"]
        ratio = lambda c: f"{c / r['ms_per_macroupdate_per_chain']:.0f}×" if c else "–"  # noqa: E731
        out.append(f"| {r['n']} | {r['dtype']} | {r['memory']} | {r['walkers']} | {r['threads']} | "
                   f"{r['ms_per_macroupdate_per_chain']:.4g} | "
                   f"{r['pair_evaluations_per_s']:.3e} | {100 * r['fraction_measured_peak']:.1f} | "
                   f"{100 * r['fraction_nominal_peak']:.1f} | {one:.4g} | {full:.4g} | {ratio(one)} | {ratio(full)} |"
                   if one else
                   f"| {r['n']} | {r['dtype']} | {r['memory']} | {r['walkers']} | {r['threads']} | "
                   f"{r['ms_per_macroupdate_per_chain']:.4g} | "
                   f"{r['pair_evaluations_per_s']:.3e} | {100 * r['fraction_measured_peak']:.1f} | "
                   f"{100 * r['fraction_nominal_peak']:.1f} | – | – | – | – |")
    best_40960 = min((r for r in d["speed"] if r["n"] == 40960), key=lambda r: r["ms_per_macroupdate_per_chain"])
    out += ["", "(CPU 16-thread figures at N ≤ 256 are per chain of 16 chains run together for a few hundred microupdates, "
            "where starting the thread pool costs more than the work.)", "",
            f"N = 40960: {best_40960['ms_per_macroupdate_per_chain']:.1f} ms per macroupdate per chain "
            f"({best_40960['dtype']}); study 004's K20: 418 ms ({418 / best_40960['ms_per_macroupdate_per_chain']:.0f}× faster). "
            "Goal ≤ 10 ms.", "", roofline_summary(d), "",
            "## Kernel layouts compared (helium_gpu_h100v12 for N = 10240 and 40960, hybrid: the first "
            f"{hybrid_atoms(10240, 8)} (float64) or {hybrid_atoms(40960, 4)} (float32) atoms in shared memory; "
            "helium_gpu_h100v18 for N ≤ 1000, packed: `lanes` lanes per chain, 32/lanes chains per warp, "
            "against the one-chain-per-block shared kernel; default atoms per trip)", "",
            "| N | dtype | memory | threads | lanes | atoms per trip | chains | ms per macroupdate per chain | "
            "% measured peak |", "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in d["memory_modes"]:
        out.append(f"| {r['n']} | {r['dtype']} | {r['memory']} | {r['threads']} | {r['lanes'] or '–'} | "
                   f"{r['unroll'] or 'default'} | {r['walkers']} | {r['ms_per_macroupdate_per_chain']:.4g} | "
                   f"{100 * r['fraction_measured_peak']:.1f} |")
    out += ["", "## Time to error: t σ² of E/N (tail corrected), analysis every m macroupdates", "",
            "| N | backend | dtype | chains | m | E/N (K) | τ (analyses) | t σ² (s·mK²) |", "|---:|---|---|---:|---:|---|---:|---:|"]
    for r in d["time_to_error"]:
        e = r["energy_per_particle"]
        out.append(f"| {r['n']} | {r['backend']} | {r.get('dtype') or 'float64'} | {r['walkers']} | {r['m']} | "
                   f"{e[0]:.4f}({1e4 * e[1]:.0f}) | {e[2]:.2f} | {r['t_sigma2_s_mK2']:.3g} |")
    out += ["", "Study 004: 130 s·mK² (K20) and 200 s·mK² (M2090) at N = 512. Goal ≤ 3 s·mK².", "",
            "## Sample run (N = 1000, b = 3.07 Å, no tail, m = 4)", "",
            "| observable | qmckit (GPU) | e.dat (mean of rows 1, 19, 20) | pull |", "|---|---|---|---:|"]
    for row in d["sample_run"]["comparison"]:
        out.append(f"| {row['observable']} | {row['mean']:.4f}({1e4 * row['error']:.0f}) | "
                   f"{row['published']:.4f}({1e4 * row['published_error']:.0f}) | {row['pull']:+.1f}σ |")
    out += ["", f"acceptance {d['sample_run']['acceptance']:.4f} (e.dat 0.3723); {d['sample_run']['walkers']} chains × "
            f"{d['sample_run']['analyses']} analyses in {d['sample_run']['wall_s']:.0f} s.", "",
            "b scan (same run length, 1056 chains × 100 analyses): V/N and T/N move with b where E/N is stationary.", "",
            "| b (Å) | E/N | V/N | T/N | acceptance |", "|---:|---|---|---|---:|"]
    for r in d["sample_b_scan"]:
        f = lambda key: f"{r[key][0]:.4f}({1e4 * r[key][1]:.0f})"  # noqa: E731
        out.append(f"| {r['b']} | {f('energy_per_particle')} | {f('potential_energy_per_particle')} | "
                   f"{f('kinetic_energy_per_particle')} | {r['acceptance']:.3f} |")
    bf = d["b_reproducing_edat"]
    out += ["", f"e.dat's V/N is reproduced at b = {bf['potential_energy_per_particle']:.4f} Å and its T/N at "
            f"b = {bf['kinetic_energy_per_particle']:.4f} Å: both say b ≈ 3.067 Å, 0.1 % below the printed 0.307 nm; "
            "E/N is flat there, so it agrees at 3.07. The same run at b = 3.067 Å:", "",
            "| observable | qmckit (GPU), b = 3.067 Å | e.dat | pull |", "|---|---|---|---:|"]
    for row in d["sample_run_b3067"]["comparison"]:
        out.append(f"| {row['observable']} | {row['mean']:.4f}({1e4 * row['error']:.0f}) | "
                   f"{row['published']:.4f}({1e4 * row['published_error']:.0f}) | {row['pull']:+.1f}σ |")
    out += ["", "## Load masking (N = 512, 8 chains, 840 macroupdates)", ""]
    m = d["masking"]
    out += [f"t_G = {1e3 * m['t_G_s']:.3f} ms per macroupdate (all chains, GPU), t_A = {1e3 * m['t_A_s']:.2f} ms per "
            f"analysis (energies + g(r) of every chain on 16 CPU threads), α = t_A/t_G = {m['alpha']:.1f}. "
            f"Synchronous: a + b/m with a = {m['sync_fit']['a']:.3f}({1e3 * m['sync_fit']['a_err']:.0f}) s, "
            f"b = {m['sync_fit']['b']:.2f}({1e2 * m['sync_fit']['b_err']:.0f}) s. Asynchronous: flat above "
            f"m* = {m['async_threshold']['m']:.1f} (±1σ {m['async_threshold']['low']:.1f}–{m['async_threshold']['high']:.1f}); "
            f"Eq. 14 predicts m_opt = α = {m['alpha']:.1f}.", "", "| m | sync (s) | async (s) |", "|---:|---:|---:|"]
    for mm, s, a in zip(m["m"], m["sync_s"], m["async_s"]):
        out.append(f"| {mm} | {s:.3f} | {a:.3f} |")
    r = d["masking_gpu_energy"]
    out += ["", "## 004's Fig. 3, right panel: energies on the GPU, g(r) on the CPU (N = 512, 8 chains, 840 macroupdates)", "",
            f"Every writeout the GPU also runs the energy kernel (t_E = {1e3 * r['t_E_s']:.2f} ms for 8 chains); the CPU "
            f"either idles (green) or computes g(r) of the previous writeout (blue, t_g(r) = {1e3 * r['t_gr_s']:.1f} ms on 16 "
            f"threads) while the GPU works on the next. t_G = {1e3 * r['t_G_s']:.3f} ms per macroupdate. Green fits "
            f"a + b/m with a = {r['idle_fit']['a']:.3f}({1e3 * r['idle_fit']['a_err']:.0f}) s (840 t_G = "
            f"{840 * r['t_G_s']:.3f} s) and b = {r['idle_fit']['b']:.3f}({1e3 * r['idle_fit']['b_err']:.0f}) s (840 t_E = "
            f"{840 * r['t_E_s']:.3f} s): the energy term falls as 1/m. g(r) is hidden once m t_G + t_E ≥ t_g(r), "
            f"m ≥ {r['masked_from_m']:.1f}; 004: \"for m > 20 … completely masked\".", "",
            "| m | GPU energy, CPU idle (s) | GPU energy, CPU g(r) (s) | excess |", "|---:|---:|---:|---:|"]
    for mm, a, b in zip(r["m"], r["cpu_idle_s"], r["cpu_g_of_r_s"]):
        out.append(f"| {mm} | {a:.3f} | {b:.3f} | {100 * (b - a) / a:+.1f} % |")
    out += ["", "## Forms of the pair term (same chains and launches, the default block sizes of "
            "helium_chains.default_threads; N = 10240 runs split in float64: x and y in shared memory, z in global)", "",
            "Minimum image: fold = min(|d|, L − |d|), fold_select = the same with a compare and select, high_word = "
            "fold_select with its compare and the cut-off's on the high 32 bits (integer pipe, float64 only), select = the "
            "signed image by two compares, rint = d − L rint(d/L). Inverse: rsqrt = 1/r and 1/(L − r) from "
            "reciprocal square roots with r² clamped to (L/2)² as the cut-off; divide = √ and one division (the "
            "kernel before, now with the same clamp).", "",
            "| N | dtype | image | inverse | atoms per trip | chains | ms per macroupdate per chain | pair eval/s | % measured peak |",
            "|---:|---|---|---|---:|---:|---:|---:|---:|"]
    for v in d["pair_term_variants"]:
        out.append(f"| {v['n']} | {v['dtype']} | {v['min_image']} | {v['inverse']} | {v['unroll']} | {v['walkers']} | "
                   f"{1e3 * v['s_per_macroupdate_per_chain']:.4g} | {v['pair_evaluations_per_s']:.3e} | "
                   f"{100 * v['roofline_fraction']:.1f} |")
    probes = d["fma_probes"]
    loops = {key: v["pair_loop"] for key, v in d["sass_generate_shared"].items()
             if "error" not in v.get("pair_loop", {"error": ""}) and "rsqrt" in key}
    out += ["", "The kernels use fold/rsqrt in float32 and high_word/rsqrt in float64 (float64 has no min "
            "instruction on sm_90; its NaN-propagating emulation costs about eight instructions, and its compares go "
            "to the FP64 pipe, which the pair term keeps busy). Float64's rsqrt is libdevice's hardware estimate "
            "(PTX rsqrt.approx.ftz.f64, inline assembly) and its Newton step, without the range check that "
            "branched to a slow path twice per pair evaluation. Besides the pair "
            "term, this kernel takes the random numbers in batches of 32 microupdates (thread 0 steps the stream, "
            "lane b of warp 0 turns microupdate b's numbers into j, δ and ln ξ), where one thread used to compute "
            "Box–Muller's log, √, cos and sin, and the decision's exp, between two barriers of every microupdate; "
            "now every thread compares ln ξ with 2Δu after the block sum's barrier, the one barrier per "
            "microupdate, and the moved atom's owner stores it. It indexes with unsigned "
            "32-bit integers (no negative-index wrap-around). Pair changes sum w = r⁻⁵ + (L − r)⁻⁵ and scale by −½b⁵ "
            "once after the block sum. The pair loop in SASS (static counts): "
            + "; ".join(f"{key}: {loop['instructions_per_evaluation']:.1f} instructions per pair evaluation, "
                        f"{loop['fp64_pipe_per_evaluation']:.0f} on the FP64 pipe"
                        for key, loop in loops.items()) + ". Float32 was 33 in helium_gpu_h100v6_2026-11-23, "
            "about 46 before that; float64 was 77 instructions, 32 on the FP64 pipe, in helium_gpu_h100v8_2026-11-23 "
            "(SASS read offline with benchmarks/sass_offline.py gives the same counts as on the device). These are "
            "helium_gpu_h100v11's kernels. Since helium_gpu_h100v16 (offline counts, 2026-11-26): float32/fold/rsqrt/2 "
            "28.0, float64/high_word/rsqrt/4 45.9 and /2 49.8 (still 28 on the FP64 pipe) — float32 writes |d| as PTX "
            "abs.f32, which ptxas folds into the add L − |d| and the min (fastmath's abs.ftz.f32 stayed an instruction "
            "of its own), and clamps r² with one min; float64 masks the high word's sign in 32 bits (numba compared "
            "it in 64). The packed kernel's loop is 30.5 and 49.8; it also steps the stream with 32-bit indices and "
            "takes k mod G and j mod G by masks (a 64-bit remainder per microupdate before).", "",
            "**FMA probes** (the peak the fractions above use is the faster): " + "; ".join(
                f"{dtype}: numba {v['numba']['flops'] / 1e12:.1f}, CUDA C (CuPy NVRTC, 16 chains per thread) "
                f"{v['cuda_c']['flops'] / 1e12:.1f} TFLOP/s" for dtype, v in probes.items()) + ". numba's float32 "
            "loop runs at about half the hardware's rate: its range() loop keeps a 64-bit trip count and five "
            "integer instructions per 8 FMAs (PTX and SASS read on the device), which is why the pair loop of the "
            "generation kernel now counts in 32 bits and takes two atoms per trip. Records before 2026-11-23 divided "
            "by numba's probe and overstated the fractions about 1.8× in float32."]
    q = d["sequential_optimum"]
    out += ["", f"## Eq. 12: synchronous analysis every m macroupdates (N = {q['n']}, {q['walkers']} chains on the GPU, "
            f"energies of every chain on 16 CPU threads, {q['total_macroupdates']} macroupdates per m)", "",
            f"t_G = {1e3 * q['t_G_s']:.3f} ms, t_A = {1e3 * q['t_A_s']:.1f} ms, α = {q['alpha']:.1f}; m_c = τ_int − ½ of the "
            f"m = 1 series = {q['m_c']:.2f} → Eq. 12 m_opt = √(2 m_c α) = {q['m_opt_eq12']:.1f}. A fit of "
            f"t σ² = C (t_G + t_A/m)(m + 2 m_c) to the points gives m_c = {q['m_c_fit']:.2f} and m_opt = "
            f"{q['m_opt_fit']:.1f} (ratio {q['m_opt_eq12'] / q['m_opt_fit']:.2f}; χ²/dof {q['chi2_per_dof']:.1f} with "
            f"√(2/K) relative weights, so the error estimates scatter more than that); the raw minimum is at "
            f"m = {q['m_best_measured']}: t σ² is flat within its noise from m = 3 to 16.", "",
            "| m | analyses | wall (s) | E/N (K) | τ | t σ² (s·mK²) |", "|---:|---:|---:|---|---:|---:|"]
    for r in q["rows"]:
        out.append(f"| {r['m']} | {r['analyses']} | {r['wall_s']:.2f} | {r['mean']:.4f}({1e4 * r['error']:.0f}) | "
                   f"{r['tau']:.2f} | {r['t_sigma2_s_mK2']:.0f} |")
    out += ["", "## DMC (host CPUs, 512 walkers, tail corrected, generic drift–diffusion driver)", "",
            "| N | Δτ (K⁻¹) | E/N (K) |", "|---:|---:|---|"]
    for n, e in d["dmc"]["n"].items():
        for dt, en, er in zip(e["dt"], e["energy"], e["error"]):
            out.append(f"| {n} | {dt} | {en:.4f}({1e4 * er:.0f}) |")
        if "extrapolated" in e:
            x = e["extrapolated"]
            out.append(f"| {n} | → 0 (linear through {', '.join(map(str, x['dts']))}) | "
                       f"**{x['energy']:.3f}({1e3 * x['error']:.0f})** |")
    out += ["", "Literature: DMC with HFD-B(HE) at this density, Boronat & Casulleras, PRB 49, 8920 (1994): −7.267(13) K "
            "(unverified, see data/helium4.json); experiment ≈ −7.17 K."]
    return "\n".join(out) + "\n"


def main():
    data = build()
    (REPO / "data" / "helium4_recorded.json").write_text(json.dumps(data, indent=1, default=float))
    text = markdown(data)
    (RESULTS / "helium_gpu_h100_2026-11-26.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
