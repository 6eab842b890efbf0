#!/usr/bin/env python
"""Study 003 (Uejima & Maezono 2012) on a GPU: B-spline orbital evaluation per MC step,
qmckit.backends.cuda_bspline against the CPU kernels of qmckit.systems.bspline_orbitals.

Workload: the three sizes of 003's Table II (Si N=216 L=56 50³; TiO2 N=648 L=168 56³; TiO2 N=1536
L=384 60³), complex orbitals (the paper's setting), random coefficients (timing does not depend on
them), N electrons at uniform random points of a 10-bohr cube. One MC step of 003's quasi-simultaneous
update = all N × L orbital values at one configuration (003's Eq. 6 kernel); V+G+L = values,
gradients and Laplacians in one launch (not in the paper). Precisions f32 (complex64, the paper's
GPU) and f64 (complex128, the paper's CPU).

Per size and precision:
  GPU   coalesced (003's implementation 3: block = electron, threads over l, orbital index fastest),
        uncoalesced (layout (L, n1, n2, n3), threads over l, strided reads; the layout of 003's (1)/(2)),
        per-electron (one launch per electron, host loop; 003's (1) launched per electron too),
        V+G+L coalesced. CUDA events, median of --repeats; "kernel" = launch(es) only, data on the
        device; "+transfers" = upload of the N positions (float64, pinned) + kernel + download of all
        results into pinned host memory (003's Table VIII/II GPU times include transfers). Coefficient
        upload is never timed. Launch configuration: the best of a kernel-only scan of threads per
        block × orbitals per block ("chunk": the grid becomes N × ⌈L'/chunk⌉) for the coalesced
        values kernel, in both load widths (one real per load, or (re, im) pairs as one 8/16-byte
        load), and for V+G+L; the uncoalesced and per-electron kernels use the values kernel's threads.
  CPU   qmckit.systems.bspline_orbitals.time_evaluation (coalesced, numba), values only and V+G+L,
        one thread and all cores of the host, same run.
Bandwidth: the device's MEASURED copy bandwidth (device-to-device copy of a --copy-gib buffer, CUDA
events, (bytes read + written) / time) and the achieved bandwidth = coefficient bytes of one step
(coefficient_bytes: N × L × 64 × itemsize; the same for V+G+L) / kernel time, as a fraction of it.
Caches can make the achieved figure exceed DRAM traffic (electrons share grid points).
Goals (TiO2 N=1536, L=384, f32 complex): coalesced values kernel ≥ 70 % of the measured copy
bandwidth, ≈ 0.1 ms per step; CPU one core (f64, values) faster than the paper's CPU column (100 ms).

Usage (device machine; numba-cuda needs the carried NumPy 2.4 wheel, see DESIGN.md):
  python benchmarks/orbitals.py [--out DIR] [--repeats 20] [--sizes Si,TiO2-648,TiO2-1536]
  NUMBA_ENABLE_CUDASIM=1 python benchmarks/orbitals.py --smoke --out /tmp/orb     # tiny, simulator
Writes orbitals_<device>_<date>.{json,md} into --out (default $OUT, else benchmarks/results); the
JSON is rewritten after every measurement, so a crash keeps what was measured. ≈ 2–3 min on an H100.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import re
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numba  # noqa: E402

from qmckit.backends import cuda_bspline as cb  # noqa: E402
from qmckit.studies.tio2_orbitals import PAPER  # noqa: E402
from qmckit.systems import bspline_orbitals as bo  # noqa: E402
from _common import cpu_model, log  # noqa: E402

warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")
warnings.filterwarnings("ignore", message=".*[Hh]ost array.*")

SMOKE_SIZES = {"tiny": {"system": "smoke test", "electrons": 4, "orbitals": 3, "grid": (6, 6, 6),
                        "cpu_ms": None, "gpu_ms": None}}
GOAL = {"size": "TiO2-1536", "precision": "f32", "fraction": 0.70, "ms": 0.1, "ms_pass": 0.15}
CELL = 10.0


def device_info(cuda):
    info = {"simulated": cb.simulated(), "name": "CUDA simulator" if cb.simulated() else None}
    if not info["simulated"]:
        try:
            dev = cuda.get_current_device()
            name = dev.name
            info["name"] = name.decode() if isinstance(name, bytes) else str(name)
            info["compute_capability"] = list(dev.compute_capability)
            info["sms"] = int(dev.MULTIPROCESSOR_COUNT)
            info["memory_gib"] = round(cuda.current_context().get_memory_info()[1] / 2 ** 30, 1)
            clock, bus = int(dev.MEMORY_CLOCK_RATE), int(dev.GLOBAL_MEMORY_BUS_WIDTH)
            info["nominal_hbm_gb_s"] = 2 * clock * 1e3 * bus / 8 / 1e9
        except Exception as exc:  # noqa: BLE001
            info["error"] = repr(exc)
    return info


def device_tag(info):
    if info.get("simulated"):
        return "simulator"
    name = (info.get("name") or "gpu").lower()
    m = re.search(r"\b([a-z]{1,2}\d{2,4})\b", name)
    return m.group(1) if m else re.sub(r"[^a-z0-9]+", "-", name).strip("-")


def cpu_info():
    model = cpu_model()
    return {"model": model, "cores": os.cpu_count(), "numba_threads": numba.config.NUMBA_NUM_THREADS}


def versions():
    out = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}
    try:
        import importlib.metadata as md

        out["numba-cuda"] = md.version("numba-cuda")
    except Exception:  # noqa: BLE001
        pass
    return out


def free_bytes(cuda):
    if cb.simulated():
        return None
    try:
        return int(cuda.current_context().get_memory_info()[0])
    except Exception:  # noqa: BLE001
        return None


def ms(seconds):
    return None if seconds is None or seconds <= 0 else seconds * 1e3


def save(report, out_dir, stem, md=None):
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str))
        if md is not None:
            (out_dir / f"{stem}.md").write_text(md)
    except OSError as exc:
        log(f"# could not write to {out_dir}: {exc}")


# --------------------------------------------------------------------------------------------
# measurements
# --------------------------------------------------------------------------------------------
def _config_label(kind, T, chunk):
    return f"{kind} T={T} chunk={'all' if chunk is None else chunk}"


def gpu_case(orbitals, positions, repeats, thread_scan, chunk_scan, simulated):
    """All GPU timings of one orbital set (seconds; simulator: meaningless negatives).

    Launch configurations are scanned kernel-only: threads per block × orbitals per block (chunk, None =
    all) for the coalesced values kernel in both load widths (``values``: one real per thread and load,
    ``values_pairs``: (re, im) pairs) and for V+G+L. The fastest values configuration is "the coalesced
    kernel" of the tables (its kind, threads and chunk are reported); the uncoalesced and per-electron
    kernels use its thread count, one block per electron."""
    out = {}
    gpu = cb.CudaBspline(orbitals)
    n_real = gpu.n_real
    candidates = sorted({t for t in thread_scan if t >= 32 and t <= 1024} | {cb.default_threads(n_real)}
                        | ({min(1024, 32 * ((n_real + 31) // 32))} if n_real >= 64 else set()))
    scans = {"values": {}, "vgl": {}}
    families = {"values": ("values", "values_pairs") if n_real % 2 == 0 else ("values",), "vgl": ("vgl",)}
    for family, kinds in families.items():
        for kind in kinds:
            per_thread = 2 if kind == "values_pairs" else 1
            for T in candidates:
                for chunk in (None, *chunk_scan):
                    if chunk is not None and (chunk >= n_real or chunk < T * per_thread):
                        continue  # one block anyway, or idle threads
                    scans[family][(kind, T, chunk)] = gpu.time(kind, positions, repeats=max(3, repeats // 2),
                                                               transfers=False, threads=T, chunk=chunk)
    best = {fam: (min(sc, key=sc.get) if not simulated else (families[fam][0], gpu.threads, None))
            for fam, sc in scans.items()}
    out["config_values"] = {"kind": best["values"][0], "threads": int(best["values"][1]), "chunk": best["values"][2]}
    out["config_vgl"] = {"kind": "vgl", "threads": int(best["vgl"][1]), "chunk": best["vgl"][2]}
    out["threads_values"], out["threads_vgl"] = int(best["values"][1]), int(best["vgl"][1])
    out["launch_scan_ms"] = {fam: {_config_label(*k): ms(v) for k, v in sorted(sc.items(), key=lambda kv: kv[1])}
                             for fam, sc in scans.items()}
    for kind in cb.KINDS:
        if kind == "values_pairs":
            continue  # timed as "values" when it is the fastest coalesced variant
        cfg = out["config_vgl"] if kind == "vgl" else out["config_values"]
        run_kind = cfg["kind"] if kind == "values" else kind
        chunk = cfg["chunk"] if kind in ("values", "vgl") else None
        reps = max(3, repeats // 4) if kind == "values_per_electron" else repeats
        for transfers in (False, True):
            key = f"{kind}_{'transfers' if transfers else 'kernel'}_ms"
            try:
                out[key] = ms(gpu.time(run_kind, positions, repeats=reps, transfers=transfers,
                                       threads=cfg["threads"], chunk=chunk))
            except Exception as exc:  # noqa: BLE001
                out[key] = None
                out[f"{key}_error"] = repr(exc)
                log(f"#   {key} failed: {exc!r}")
    out["coefficient_table_bytes"] = gpu.coefficient_table_bytes()
    # correctness at the timed size: a few electrons against the CPU kernel, every values variant
    sub = positions[:8]
    ref = orbitals.values(sub)
    scale = np.abs(ref).max()
    out["max_rel_diff_vs_cpu"] = float(np.abs(gpu.values(sub) - ref).max() / scale)
    if n_real % 2 == 0:
        out["max_rel_diff_pairs_vs_cpu"] = float(np.abs(gpu.values_pairs(sub) - ref).max() / scale)
    del gpu
    gc.collect()
    return out


def cpu_case(size, precision, repeats):
    out = {}
    for quantities, values_only in (("values", True), ("vgl", False)):
        for label, threads in (("1", 1), ("all", None)):
            r = bo.time_evaluation(size["electrons"], size["orbitals"], size["grid"], precision=precision,
                                   layout="coalesced", complex=True, repeats=repeats, threads=threads,
                                   cell=CELL, values_only=values_only)
            out[f"{quantities}_{label}_ms"] = r["median_s"] * 1e3
            out[f"{quantities}_{label}_threads"] = r["threads"]
    return out


def derived(name, size, precision, g, c, copy_bw):
    n, L = size["electrons"], size["orbitals"]
    nbytes = bo.coefficient_bytes(n, L, precision, True)
    d = {"coefficient_bytes_per_step": nbytes}
    for kind in ("values", "vgl", "values_uncoalesced"):
        t = g.get(f"{kind}_kernel_ms")
        bw = nbytes / (t * 1e-3) if t else None
        d[f"{kind}_gb_s"] = None if bw is None else bw / 1e9
        d[f"{kind}_fraction_of_copy"] = None if (bw is None or not copy_bw) else bw / copy_bw
    t_k, t_t = g.get("values_kernel_ms"), g.get("values_transfers_ms")
    d["values_transfer_share"] = None if not (t_k and t_t) else (t_t - t_k) / t_t
    t_pe = g.get("values_per_electron_kernel_ms")
    d["per_launch_us"] = None if not (t_pe and t_k) else (t_pe - t_k) * 1e3 / n
    for label in ("1", "all"):
        cpu = c.get(f"values_{label}_ms")
        d[f"speedup_vs_cpu_{label}"] = None if not (cpu and t_t) else cpu / t_t
        d[f"speedup_kernel_vs_cpu_{label}"] = None if not (cpu and t_k) else cpu / t_k
    paper = PAPER.get(name, {})
    d["paper_cpu_over_our_cpu_1"] = (None if not (paper.get("cpu_ms") and c.get("values_1_ms"))
                                     else paper["cpu_ms"] / c["values_1_ms"])
    return d


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def f(x, fmt="{:.3g}"):
    return "–" if x is None else fmt.format(x)


def _cfg(cfg):
    if not cfg:
        return "–"
    return f"{cfg['kind']}, {cfg['threads']}, {'all' if cfg['chunk'] is None else cfg['chunk']}"


def markdown(report):
    dev, L = report["device"], []
    L.append(f"# Study 003 B-spline orbitals on {dev.get('name')} ({report['date']})\n")
    L.append(f"- command: `{report['command']}`; total {report.get('total_s', 0):.0f} s")
    L.append(f"- device: {json.dumps(dev)}")
    L.append(f"- host CPU: {report['cpu']['model']}, {report['cpu']['cores']} cores; versions {json.dumps(report['versions'])}")
    cb_ = report.get("copy_bandwidth") or {}
    if (cb_.get("bytes_per_s") or 0) > 0:
        L.append(f"- measured device-to-device copy bandwidth: {cb_['bytes_per_s'] / 1e9:.0f} GB/s "
                 f"({cb_['bytes'] / 2 ** 30:.2f} GiB buffer, read + written / median time)")
    L.append("- complex orbitals (paper's setting), random coefficients, N electrons at random points; time per MC step "
             "= one configuration's N × L values (V+G+L: values, gradients, Laplacians). GPU 'kernel' = launch(es) "
             "only; '+xfer' adds the upload of N positions and the download of the results (pinned host memory); "
             "coefficient upload excluded. CUDA events, medians.")
    if dev.get("simulated"):
        L.append("- **simulator run: times are meaningless (the simulator records no time)**")
    L.append("")
    L.append("| size | prec | coalesced kernel / +xfer (ms) | uncoalesced kernel / +xfer | per-electron kernel / +xfer | "
             "V+G+L kernel / +xfer | CPU values 1 core / all | CPU V+G+L 1 core / all | GB/s values (of copy) | "
             "GB/s V+G+L (of copy) | coalesced kernel: variant, threads, chunk / V+G+L |")
    L.append("|" + "---|" * 11)
    for r in report["results"]:
        g, c, d = r.get("gpu", {}), r.get("cpu", {}), r.get("derived", {})
        L.append(
            f"| {r['size']} (N={r['electrons']}, L={r['orbitals']}, {r['grid'][0]}³) | {r['precision']} | "
            f"{f(g.get('values_kernel_ms'))} / {f(g.get('values_transfers_ms'))} | "
            f"{f(g.get('values_uncoalesced_kernel_ms'))} / {f(g.get('values_uncoalesced_transfers_ms'))} | "
            f"{f(g.get('values_per_electron_kernel_ms'))} / {f(g.get('values_per_electron_transfers_ms'))} | "
            f"{f(g.get('vgl_kernel_ms'))} / {f(g.get('vgl_transfers_ms'))} | "
            f"{f(c.get('values_1_ms'))} / {f(c.get('values_all_ms'))} | {f(c.get('vgl_1_ms'))} / {f(c.get('vgl_all_ms'))} | "
            f"{f(d.get('values_gb_s'), '{:.0f}')} ({f(d.get('values_fraction_of_copy'), '{:.0%}')}) | "
            f"{f(d.get('vgl_gb_s'), '{:.0f}')} ({f(d.get('vgl_fraction_of_copy'), '{:.0%}')}) | "
            f"{_cfg(g.get('config_values'))} / {_cfg(g.get('config_vgl'))} |")
    L.append("\n## Beside the paper (Table VIII/II; GTX 480 single precision, transfers included; CPU = one i7-920 core, double)\n")
    L.append("| size | prec | paper CPU | our CPU 1 core / all | paper (3) coalesced | ours +xfer / kernel | paper (2) | "
             "our uncoalesced +xfer | paper (1) per-electron | our per-electron +xfer | our speedup vs 1 core / all "
             "(+xfer) | transfer share | per launch (µs) |")
    L.append("|" + "---|" * 13)
    for r in report["results"]:
        g, c, d = r.get("gpu", {}), r.get("cpu", {}), r.get("derived", {})
        p = PAPER.get(r["size"], {})
        kern = f" (kernel {p['coalesced_kernel_ms']})" if p.get("coalesced_kernel_ms") else ""
        L.append(
            f"| {r['size']} | {r['precision']} | {f(p.get('cpu_ms'))} | {f(c.get('values_1_ms'))} / {f(c.get('values_all_ms'))} | "
            f"{f(p.get('coalesced_ms'))}{kern} | {f(g.get('values_transfers_ms'))} / {f(g.get('values_kernel_ms'))} | "
            f"{f(p.get('uncoalesced_ms'))} | {f(g.get('values_uncoalesced_transfers_ms'))} | {f(p.get('per_electron_ms'))} | "
            f"{f(g.get('values_per_electron_transfers_ms'))} | {f(d.get('speedup_vs_cpu_1'), '{:.1f}')} / "
            f"{f(d.get('speedup_vs_cpu_all'), '{:.1f}')} | {f(d.get('values_transfer_share'), '{:.0%}')} | "
            f"{f(d.get('per_launch_us'), '{:.1f}')} |")
    L.append("\n## Launch scans (kernel only, ms; five fastest values configurations and the slowest)\n")
    for r in report["results"]:
        scan = (r.get("gpu") or {}).get("launch_scan_ms", {}).get("values") or {}
        items = list(scan.items())
        if items:
            shown = items[:5] + ([items[-1]] if len(items) > 5 else [])
            L.append(f"- {r['size']} {r['precision']}: " + "; ".join(f"{k} {f(v)}" for k, v in shown))
    goal = report.get("goal")
    if goal:
        L.append("\n## Goal\n")
        for k, v in goal.items():
            L.append(f"- {k}: {v}")
    if report.get("errors"):
        L.append("\n## Errors\n")
        L += [f"- {e}" for e in report["errors"]]
    L.append("")
    return "\n".join(L)


def goal_summary(report):
    r = next((r for r in report["results"] if r["size"] == GOAL["size"] and r["precision"] == GOAL["precision"]), None)
    if r is None:
        return None
    g, d = r.get("gpu", {}), r.get("derived", {})
    frac, t = d.get("values_fraction_of_copy"), g.get("values_kernel_ms")
    cpu64 = next((x.get("cpu", {}).get("values_1_ms") for x in report["results"]
                  if x["size"] == GOAL["size"] and x["precision"] == "f64"), None)
    return {
        "bandwidth (coalesced values kernel, f32 complex, N=1536 L=384)":
            f"{f(frac, '{:.1%}')} of the measured copy bandwidth (goal ≥ {GOAL['fraction']:.0%}): "
            f"{'PASS' if frac and frac >= GOAL['fraction'] else 'FAIL'}",
        "time per step (kernel)": f"{f(t)} ms (goal ≈ {GOAL['ms']} ms, pass ≤ {GOAL['ms_pass']} ms): "
                                  f"{'PASS' if t and t <= GOAL['ms_pass'] else 'FAIL'}",
        "CPU one core (f64 values) vs paper's CPU 100 ms": f"{f(cpu64)} ms: "
                                                            f"{'PASS' if cpu64 and cpu64 < 100.0 else 'FAIL'}",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None, help="output folder (default $OUT, else benchmarks/results)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (simulator smoke test)")
    parser.add_argument("--sizes", default=",".join(bo.TABLE_II_SIZES), help="comma-separated Table II sizes")
    parser.add_argument("--precisions", default="f32,f64")
    parser.add_argument("--repeats", type=int, default=20, help="GPU timings per median")
    parser.add_argument("--cpu-repeats", type=int, default=3)
    parser.add_argument("--copy-gib", type=float, default=1.0, help="buffer of the copy-bandwidth measurement")
    parser.add_argument("--threads", default="64,128,256,512", help="threads-per-block scan (plus L' and default)")
    parser.add_argument("--chunks", default="64,128,256,512", help="orbitals-per-block scan (besides all)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()

    cuda = cb._cuda()
    info = device_info(cuda)
    simulated = info["simulated"]
    if not simulated and not cb.available():
        log("# no CUDA GPU here (set NUMBA_ENABLE_CUDASIM=1 for a simulator smoke run)")
        return 2
    if args.smoke:
        sizes = SMOKE_SIZES
        repeats, cpu_repeats, copy_bytes, thread_scan, chunk_scan = 2, 1, 1 << 20, (64,), (2,)
    else:
        sizes = {k: bo.TABLE_II_SIZES[k] for k in args.sizes.split(",")}
        repeats, cpu_repeats = args.repeats, args.cpu_repeats
        copy_bytes, thread_scan = int(args.copy_gib * 2 ** 30), tuple(int(t) for t in args.threads.split(","))
        chunk_scan = tuple(int(c) for c in args.chunks.split(",") if c)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    out_dir = Path(args.out or os.environ.get("OUT") or REPO / "benchmarks" / "results")
    stem = f"orbitals_{device_tag(info)}_{date}"
    report = {"study": "003", "date": date, "command": "python " + " ".join([sys.argv[0], *(argv or sys.argv[1:])]),
              "device": info, "cpu": cpu_info(), "versions": versions(), "complex": True, "cell_bohr": CELL,
              "definitions": {
                  "step": "one configuration's N × L orbital values (values kinds) or values+gradients+Laplacians (vgl)",
                  "kernel_ms": "CUDA events around the launch(es) only, positions and results resident on the device",
                  "transfers_ms": "CUDA events around upload of N×3 float64 positions (pinned) + launch(es) + download "
                                  "of all results to pinned host memory; coefficient upload never included",
                  "gb_s": "coefficient_bytes(N, L, precision, complex=True) / kernel time",
                  "copy_bandwidth": "device-to-device copy, (bytes read + written) / median time, CUDA events",
                  "cpu": "bspline_orbitals.time_evaluation, coalesced, numba, median; '1' = one thread, 'all' = all cores"},
              "paper": PAPER, "results": [], "errors": []}
    log(f"# {info.get('name')}; out {out_dir / stem}.{{json,md}}")

    try:
        report["copy_bandwidth"] = cb.measured_copy_bandwidth(copy_bytes, repeats=10 if not simulated else 1)
        log(f"# copy bandwidth {report['copy_bandwidth']['bytes_per_s'] / 1e9:.0f} GB/s")
    except Exception as exc:  # noqa: BLE001
        report["copy_bandwidth"] = None
        report["errors"].append(f"copy bandwidth: {exc!r}")
    gc.collect()
    copy_bw = (report["copy_bandwidth"] or {}).get("bytes_per_s")
    copy_bw = copy_bw if copy_bw is not None and copy_bw > 0 else None  # the simulator times nothing
    save(report, out_dir, stem)

    for name, size in sizes.items():
        n, L, grid = size["electrons"], size["orbitals"], tuple(size["grid"])
        base = None
        for precision in args.precisions.split(","):
            row = {"size": name, "system": size["system"], "electrons": n, "orbitals": L, "grid": list(grid),
                   "precision": precision}
            ts = time.perf_counter()
            try:
                need = 2 * bo.coefficient_bytes(1, L, precision, True) / 64 * np.prod(grid) + 3 * n * L * 16 * 5
                free = free_bytes(cuda)
                if free is not None and need > 0.8 * free:
                    raise MemoryError(f"needs {need / 2 ** 30:.1f} GiB of {free / 2 ** 30:.1f} GiB free")
                if base is None:
                    base = bo.BsplineOrbitals.random(grid, L, cell=CELL, precision="f64", complex=True, seed=0)
                orbitals = base.astype(precision)
                positions = np.random.default_rng(1).random((n, 3)) @ orbitals.cell
                row["gpu"] = gpu_case(orbitals, positions, repeats, thread_scan, chunk_scan, simulated)
                del orbitals
                gc.collect()
            except Exception as exc:  # noqa: BLE001
                row["gpu"] = {}
                report["errors"].append(f"{name} {precision} GPU: {exc!r}")
                log(traceback.format_exc())
            try:
                row["cpu"] = cpu_case(size, precision, cpu_repeats)
            except Exception as exc:  # noqa: BLE001
                row["cpu"] = {}
                report["errors"].append(f"{name} {precision} CPU: {exc!r}")
                log(traceback.format_exc())
            row["derived"] = derived(name, size, precision, row["gpu"], row["cpu"], copy_bw)
            row["seconds"] = time.perf_counter() - ts
            report["results"].append(row)
            g, c, d = row["gpu"], row["cpu"], row["derived"]
            log(f"# {name} {precision}: coalesced {f(g.get('values_kernel_ms'))} ms kernel / "
                f"{f(g.get('values_transfers_ms'))} ms +xfer ({f(d.get('values_fraction_of_copy'), '{:.0%}')} of copy), "
                f"uncoalesced {f(g.get('values_uncoalesced_kernel_ms'))}, per-electron "
                f"{f(g.get('values_per_electron_kernel_ms'))}, vgl {f(g.get('vgl_kernel_ms'))}; CPU 1 core "
                f"{f(c.get('values_1_ms'))} / all {f(c.get('values_all_ms'))} ms; max rel diff "
                f"{f(g.get('max_rel_diff_vs_cpu'))} [{row['seconds']:.0f} s]")
            save(report, out_dir, stem)
        del base
        gc.collect()

    report["goal"] = goal_summary(report)
    report["total_s"] = time.perf_counter() - t0
    save(report, out_dir, stem, markdown(report))
    log(markdown(report))
    log(f"# wrote {out_dir / stem}.json and .md ({report['total_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
