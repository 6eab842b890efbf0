#!/usr/bin/env python
"""Liquid ⁴He VMC (study 004, McMillan b = 3.07 Å): the measurements behind the canonical-ensemble
(Lebowitz–Percus) finite-size correction E_N/N = e(ρ) − S(0) ρ ε″(ρ) / (2N), ε = ρ e (issue 5). One run
on a GPU machine (or a small CPU run with --smoke).

Stages (the JSON is rewritten after each):

  eos        E/N, V/N, T_lap/N, T_grad/N (tail-corrected) at N = 1000 for densities 0.85 … 1.15 ρ₀ at
             fixed b: the curvature of the energy density ε(ρ) = ρ e(ρ) at fixed ψ (fixed b);
  structure  S(k) on the smallest shells of the N = 1000 box at ρ₀ (mean and error over batches of
             configurations): S(0) of the |ψ|² "classical fluid" by extrapolating S(k) = S₀ + a k² + c k⁴;
  sizes      E/N, V/N, T_lap/N at ρ₀ for N = 64 … 1000 (tail-corrected), the separate 1/N terms of V and T.

Usage
  python benchmarks/helium_finite_size.py --out DIR [--tag h100] [--stages eos,structure,sizes]
  python benchmarks/helium_finite_size.py --smoke --out /tmp/x     # CPU, tiny sizes
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for path in (str(REPO), str(REPO / "benchmarks")):
    if path not in sys.path:
        sys.path.insert(0, path)

from _common import log  # noqa: E402
from bec_throughput import cpu_info  # noqa: E402
from qmckit.stats import estimate  # noqa: E402
from qmckit.studies import helium4  # noqa: E402
from qmckit.systems import helium  # noqa: E402

RHO0 = helium.EQUILIBRIUM_DENSITY
DENSITY_FACTORS = (0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15)


def run_point(backend: str, n: int, density: float, walkers: int, analyses: int, m: int, equilibration: int,
              seed: int) -> dict:
    """Tail-corrected per-particle estimates (mean, error) of one VMC run at (N, ρ), b = 3.07 Å."""
    system = helium.Helium(n=n, density=density, b=3.07, tail=True)
    chains = helium4.make_chains(system, walkers, seed=seed, backend=backend)
    start = time.perf_counter()
    run = helium4.analysed_run(chains, analyses, m, equilibration)
    row = {"n": n, "density": density, "walkers": walkers, "analyses": analyses, "m": m,
           "equilibration": equilibration, "acceptance": run["acceptance"], "tail_per_particle": system.tail,
           "wall_s": time.perf_counter() - start}
    for name, series in run["series"].items():
        e = estimate(series)
        row[name] = [e.mean, e.error]
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tag", default="h100")
    ap.add_argument("--stages", default="eos,structure,sizes")
    ap.add_argument("--smoke", action="store_true", help="CPU, tiny sizes (checks the script, not the physics)")
    args = ap.parse_args(argv)
    smoke = args.smoke
    backend = "cpu" if smoke else "cuda"
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    date = datetime.date.today().isoformat()
    out_path = out_dir / f"helium_finite_size_{args.tag}_{date}.json"
    results = {"date": date, "cpu": cpu_info(), "backend": backend, "smoke": smoke, "b": 3.07, "rho0": RHO0}
    if not smoke:
        from numba import cuda

        d = cuda.get_current_device()
        results["device"] = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
        sms = d.MULTIPROCESSOR_COUNT
    else:
        sms = 1
    stages = args.stages.split(",")

    def save():
        out_path.write_text(json.dumps(results, indent=1, default=float))

    if "eos" in stages:
        rows = []
        n = 32 if smoke else 1000
        for k, factor in enumerate(DENSITY_FACTORS[2:5] if smoke else DENSITY_FACTORS):
            rows.append(run_point(backend, n, factor * RHO0, 2 if smoke else 8 * sms, 20 if smoke else 240, 4,
                                  10 if smoke else 200, seed=100 + k))
            log(f"eos ρ = {rows[-1]['density']:.5f}: E/N = {rows[-1]['energy_per_particle']}, {rows[-1]['wall_s']:.1f} s")
            results["eos"] = rows
            save()

    if "structure" in stages:
        n = 32 if smoke else 1000
        walkers = 2 if smoke else 32 * sms
        batches, per_batch, m = (4, 2, 2) if smoke else (24, 1, 4)
        system = helium.Helium(n=n, b=3.07)
        chains = helium4.make_chains(system, walkers, seed=7, backend=backend)
        start = time.perf_counter()
        chains.generate(10 if smoke else 300)
        values = []
        for _ in range(batches):
            configs = []
            for _ in range(per_batch):
                chains.generate(m)
                configs.append(chains.positions())
            k, s = helium.structure_factor(np.concatenate(configs), system.box, n_max=3)
            values.append(s)
        values = np.array(values)
        results["structure"] = {"n": n, "walkers": walkers, "batches": batches, "configurations_per_batch":
                                per_batch * walkers, "m": m, "k": k.tolist(), "s": values.mean(axis=0).tolist(),
                                "error": (values.std(axis=0, ddof=1) / np.sqrt(batches)).tolist(),
                                "wall_s": time.perf_counter() - start}
        log("structure", {f"{a:.3f}": f"{b:.4f}" for a, b in zip(k, values.mean(axis=0))})
        save()

    if "sizes" in stages:
        rows = []
        for n in ((16, 32) if smoke else (64, 128, 256, 512, 1000)):
            walkers = 2 if smoke else 32 * sms
            rows.append(run_point(backend, n, RHO0, walkers, 20 if smoke else 400, 4, 10 if smoke else 300,
                                  seed=200 + n))
            log(f"size N = {n}: E/N = {rows[-1]['energy_per_particle']}, V/N = {rows[-1]['potential_energy_per_particle']}, "
                f"{rows[-1]['wall_s']:.1f} s")
            results["sizes"] = rows
            save()
    log(f"wrote {out_path}")


if __name__ == "__main__":
    main()
