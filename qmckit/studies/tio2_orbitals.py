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
