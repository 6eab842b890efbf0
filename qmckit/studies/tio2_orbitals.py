"""Study 003 (Uejima & Maezono 2012, B-spline orbitals of TiO2 on a GTX 480): its published numbers,
the accuracy study of the blip basis, and the tables the notebook sets beside the paper's.

Units: lengths in bohr, times in ms, bandwidths in GB/s (10⁹ B/s), energies in hartree.

The recorded GPU run (``benchmarks/orbitals.py`` on an H100, copied to
``data/bspline_orbitals_timings.json``) is read by :func:`load_timings`; :func:`timing_rows` sets it
beside Tables II/VII/VIII. Nothing here needs a GPU.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..systems import bspline_orbitals as bo
from ..resources import data_dir

DATA = data_dir()
TIMINGS = DATA / "bspline_orbitals_timings.json"

# Study 003, Table VIII (ms per MC step, transfers included; (0a) CPU one core of an i7-920, double;
# GPU GTX 480, single) and Table XI (kernel-only (3) at N=1536 = 3.26 − 1.20 ms of transfers).
# N = 648 has only (3) (Table II).
PAPER = {
    "Si": {"cpu_ms": 2.77, "coalesced_ms": 0.17, "uncoalesced_ms": 0.43, "per_electron_ms": 6.76,
           "coalesced_kernel_ms": None},
    "TiO2-648": {"cpu_ms": 20.21, "coalesced_ms": 0.82, "uncoalesced_ms": None, "per_electron_ms": None,
                 "coalesced_kernel_ms": None},
    "TiO2-1536": {"cpu_ms": 100.00, "coalesced_ms": 3.26, "uncoalesced_ms": 17.83, "per_electron_ms": 68.03,
                  "coalesced_kernel_ms": 2.06},
}
# Table VII: acceleration of the kernel part over (0a), per implementation
TABLE_VII = {"per_electron": {"Si": 0.41, "TiO2-1536": 1.47}, "uncoalesced": {"Si": 6.39, "TiO2-1536": 5.61},
             "coalesced": {"Si": 16.58, "TiO2-1536": 30.67}}
# Table XI: transfers of implementation (3), µs (CPU→GPU s and Θ, GPU→CPU ψ, total)
TABLE_XI = {216: (16.8, 19.5, 29.1, 71.9), 648: (18.8, 32.0, 290.9, 405.1), 1536: (25.5, 131.1, 1046.6, 1203.2)}
# Table IX: VMC energy of Si 3×3×3 (N = 216), hartree per primitive cell, 10⁶ MC steps
TABLE_IX = {"(0a) CPU/PbP double": (-7.9590865, 0.0001749), "(1) GPU/PbP single": (-7.9589381, 0.0001754),
            "(0b) CPU/Q.S. double": (-7.9591560, 0.0001755), "(2,3) GPU/Q.S. single": (-7.9592106, 0.0001698)}
GTX480_BANDWIDTH_GB_S = 177.4   # the paper's peak; its profiler measured 153 GB/s (86 %) for (3)
GTX480_MEASURED_GB_S = 153.0
CHEMICAL_ACCURACY = 1e-3        # hartree per primitive cell (003's criterion)


def convergence(cell, n_orbitals=9, grids=(16, 24, 32, 48), n_points=400, complex=True, seed=3) -> dict:
    """Accuracy of B-spline interpolation of the lowest plane waves of ``cell`` (bohr) against the
    exact orbitals, as the grid is refined.

    Returns {"grids", "spacing" (bohr, the longest lattice vector / n), "errors" (len(grids), 3): max
    |error| of values, gradients, Laplacians at ``n_points`` random points (inside and outside the home
    cell), "scale" (3,): max |φ|, |∇φ|, |∇²φ|, "orders" (3,): the fitted log-log slopes, expected 4, 3, 2}.
    """
    pw = bo.plane_wave_orbitals(cell, n_orbitals, complex=complex)
    x = np.random.default_rng(seed).uniform(-0.5, 1.5, size=(n_points, 3)) @ pw.cell
    exact = pw.evaluate(x)
    errors = np.array([[np.abs(a - b).max() for a, b in zip(pw.bspline(n).evaluate(x), exact)] for n in grids])
    orders = -np.polyfit(np.log(grids), np.log(errors), 1)[0]
    return {"grids": list(grids), "spacing": np.linalg.norm(pw.cell, axis=1).max() / np.asarray(grids, float),
            "errors": errors, "scale": np.array([np.abs(e).max() for e in exact]), "orders": orders}


def load_timings(path=TIMINGS) -> dict:
    """The recorded GPU/CPU timing report of ``benchmarks/orbitals.py`` (JSON as written there)."""
    return json.loads(Path(path).read_text())


def timing_rows(report: dict) -> list[dict]:
    """One row per (size, precision): our times next to the paper's (ms), speed-ups, bandwidth.

    Keys: size, precision, paper_cpu, cpu_1, cpu_all, paper_gpu (coalesced, with transfers),
    gpu_xfer, gpu_kernel, paper_kernel, speedup_kernel_1 (our CPU one core / our GPU kernel; the paper's
    Table VII quantity), paper_speedup (Table VII), speedup_xfer_1, gb_s, fraction_of_copy, config.
    """
    rows = []
    for r in report["results"]:
        g, c, d = r.get("gpu", {}), r.get("cpu", {}), r.get("derived", {})
        p = PAPER.get(r["size"], {})
        rows.append({
            "size": r["size"], "precision": r["precision"], "electrons": r["electrons"], "orbitals": r["orbitals"],
            "paper_cpu": p.get("cpu_ms"), "cpu_1": c.get("values_1_ms"), "cpu_all": c.get("values_all_ms"),
            "paper_gpu": p.get("coalesced_ms"), "paper_kernel": p.get("coalesced_kernel_ms"),
            "gpu_xfer": g.get("values_transfers_ms"), "gpu_kernel": g.get("values_kernel_ms"),
            "uncoalesced_kernel": g.get("values_uncoalesced_kernel_ms"),
            "per_electron_kernel": g.get("values_per_electron_kernel_ms"),
            "speedup_kernel_1": d.get("speedup_kernel_vs_cpu_1"),
            "paper_speedup": TABLE_VII["coalesced"].get(r["size"]),
            "speedup_xfer_1": d.get("speedup_vs_cpu_1"),
            "gb_s": d.get("values_gb_s"), "fraction_of_copy": d.get("values_fraction_of_copy"),
            "config": g.get("config_values")})
    return rows


# ``qmckit reproduce tio2`` and notebooks/tio2_orbitals.ipynb (§1.1, §2, §4):
#   grids/points: the convergence study; sizes: Table II systems timed on this CPU (one core, complex f64 values,
#   study 003's CPU column (0a)); qsu: electrons per spin of the jellium model, sweeps per scheme
PRESETS = {
    "fast": {"grids": (8, 12, 16, 24), "points": 100, "sizes": ("Si", "TiO2-648"), "qsu": (7, 2000)},
    "full": {"grids": (8, 12, 16, 24, 32, 48), "points": 400, "sizes": ("Si", "TiO2-648", "TiO2-1536"),
             "qsu": (19, 40000)},
}
# a Si fcc primitive cell (a = 10.26 bohr) and a triclinic cell (bohr) for the convergence study
CELLS = {"Si fcc primitive cell": 0.5 * 10.26 * np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]),
         "triclinic cell": np.array([[8.0, 0.0, 0.0], [1.5, 9.0, 0.0], [0.5, -1.0, 10.0]])}
EXPECTED_ORDERS = (4, 3, 2)  # values, gradients, Laplacians of a cubic B-spline interpolant: O(h⁴), O(h³), O(h²)


def time_table_ii(size: str, repeats: int = 3, seed: int = 0) -> dict:
    """One Table II system's N × L orbital values on one core of this CPU (complex, double: study 003's (0a)),
    median ms, next to the paper's (0a) on an i7-920 core."""
    s = bo.TABLE_II_SIZES[size]
    row = bo.time_evaluation(s["electrons"], s["orbitals"], s["grid"], precision="f64", complex=True, repeats=repeats,
                             threads=1, seed=seed, values_only=True)
    return {"size": size, "electrons": s["electrons"], "orbitals": s["orbitals"], "grid": list(s["grid"]),
            "ms": 1e3 * row["median_s"], "gb_s": row["bytes_per_s"] / 1e9, "paper_cpu_ms": PAPER[size]["cpu_ms"],
            "paper_gpu_ms": PAPER[size]["coalesced_ms"]}


def reproduce(precision: str = "fast", seed: int = 3, progress=None) -> dict:
    """``qmckit reproduce tio2``: Table II timed on this CPU beside the paper's and the recorded GPU run, the h⁴
    convergence of the B-spline interpolant, and the bias of the quasi-simultaneous updating readings on jellium."""
    from . import updating_schemes as us
    from .reports import check_precision

    check_precision(precision, PRESETS)
    pre = PRESETS[precision]
    out = {"seed": seed, "preset": pre, "table_ii": []}
    for size in pre["sizes"]:
        if progress:
            progress(f"Table II, {size}: orbital values on one core")
        out["table_ii"].append(time_table_ii(size, seed=seed))
    recorded = load_timings()
    out["table_ii_recorded"] = {"device": recorded["device"]["name"], "date": recorded["date"],
                                "rows": [{k: r[k] for k in ("size", "precision", "cpu_1", "gpu_kernel", "gpu_xfer",
                                                             "fraction_of_copy")} for r in timing_rows(recorded)]}
    if progress:
        progress("h⁴ convergence of the B-spline orbitals")
    out["convergence"] = {name: convergence(cell, 9, grids=pre["grids"], n_points=pre["points"], seed=seed)
                          for name, cell in CELLS.items()}
    n_per_spin, sweeps = pre["qsu"]
    if progress:
        progress(f"updating schemes on jellium, N = {2 * n_per_spin}, {sweeps} sweeps per scheme")
    model = us.FreeElectronModel(n_per_spin=n_per_spin)
    qsu = us.compare_schemes(model, sweeps=sweeps, fast=precision == "fast", seed=2026 + seed - 3)
    out["qsu"] = {"electrons": model.n_electrons, "exact_energy_per_electron": model.exact_energy_per_electron(),
                  "sweeps": sweeps, "table": us.format_table(qsu),
                  "rows": [{k: r[k] for k in ("scheme", "label", "energy", "error", "bias_per_cell",
                                              "bias_per_cell_error",
                                              "bias_sigma")} for r in qsu["rows"]]}
    return out


def markdown(result: dict) -> str:
    """Table II on this machine, the convergence orders and the updating schemes' bias, as markdown."""
    from ..stats import format_value_error as fmt

    machine = result.get("machine", {})
    lines = [f"Study 003: B-spline orbitals of TiO2 (precision preset `{result['precision']}`).", "",
             f"**Table II on this machine** ({machine.get('cpu', '?')}, one core, complex double values: the paper's "
             "CPU column (0a) ran on one i7-920 core; its GPU column is the GTX 480 with transfers):", "",
             "| system | N | L | grid | this CPU (ms) | GB/s | paper CPU (ms) | this CPU / paper CPU "
             "| paper GPU (ms) |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in result["table_ii"]:
        lines.append(f"| {r['size']} | {r['electrons']} | {r['orbitals']} | {r['grid'][0]}³ | {r['ms']:.3g} | "
                     f"{r['gb_s']:.1f} | {r['paper_cpu_ms']} | {r['ms'] / r['paper_cpu_ms']:.2f} | "
                     f"{r['paper_gpu_ms']} |")
    rec = result["table_ii_recorded"]
    lines += ["", f"Recorded on {rec['device']} ({rec['date']}, `data/bspline_orbitals_timings.json`): "
              + "; ".join(f"{r['size']} {r['precision']} kernel {r['gpu_kernel']:.3g} ms "
                          f"({r['fraction_of_copy']:.0%} of the copy bandwidth)"
                          for r in rec["rows"] if r["gpu_kernel"] is not None) + ".",
              "", "**Convergence** of the interpolant of the 9 lowest plane waves (max error against the grid "
                  "spacing h; expected orders 4, 3, 2):", "",
              "| cell | grids | values | gradients | Laplacians |", "|---|---|---:|---:|---:|"]
    for name, c in result["convergence"].items():
        lines.append(f"| {name} | {', '.join(map(str, c['grids']))} | "
                     + " | ".join(f"{o:.2f}" for o in c["orders"]) + " |")
    qsu = result["qsu"]
    lines += ["", f"**Quasi-simultaneous updating** on jellium (r_s = 2, N = {qsu['electrons']}, exact E/N = "
                  f"{qsu['exact_energy_per_electron']:.6f} Ha, {qsu['sweeps']} sweeps per scheme). "
                  "The paper's Table IX "
                  "found no difference between particle-by-particle and Q.S. (Si, "
                  f"{fmt(*TABLE_IX['(0a) CPU/PbP double'])} against {fmt(*TABLE_IX['(0b) CPU/Q.S. double'])} Ha per "
                  "cell); against an exact answer the literal reading of its Eq. 11 is biased:", "", qsu["table"]]
    return "\n".join(lines)


def figure(result: dict):
    """Left: convergence against h; right: the schemes' bias in Ha per Si cell."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.2), layout="constrained")
    ax_c, ax_q = fig.subplots(1, 2)
    name, c = next(iter(result["convergence"].items()))
    spacing, errors, scale = (np.asarray(c[k]) for k in ("spacing", "errors", "scale"))
    for k, (label, order) in enumerate(zip(("values", "gradients", "Laplacians"), EXPECTED_ORDERS)):
        rel = errors[:, k] / scale[k]
        ax_c.loglog(spacing, rel, "o-", label=f"{label}: slope {c['orders'][k]:.2f} (expected {order})")
        ax_c.loglog(spacing, rel[-1] * (spacing / spacing[-1]) ** order, ":", color="0.6")
    ax_c.set(xlabel="grid spacing h (bohr)", ylabel="max error / max |exact|", title=name)
    ax_c.legend(fontsize=8)
    rows = result["qsu"]["rows"]
    y = np.arange(len(rows))
    ax_q.errorbar([r["bias_per_cell"] for r in rows], y, xerr=[r["bias_per_cell_error"] for r in rows], fmt="o")
    ax_q.axvspan(-CHEMICAL_ACCURACY, CHEMICAL_ACCURACY, color="0.9", zorder=0, label="±10⁻³ Ha per cell")
    ax_q.axvline(0, color="k", lw=0.8)
    ax_q.set_xscale("symlog", linthresh=1e-3)
    ax_q.set_yticks(y, [r["label"] for r in rows], fontsize=8)
    ax_q.set(xlabel="bias against the exact energy (Ha per Si cell)",
             title=f"updating schemes, jellium N = {result['qsu']['electrons']}")
    ax_q.legend(fontsize=8)
    return fig
