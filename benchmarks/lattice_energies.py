"""Study 000's physics numbers, which the thesis never reports: VMC energies per site of the projected
d-wave RVB state at its Table 6.1 parameters (t = 1, J = 0.3, x = 0.1, Δ = 1.5, μ = 0; 32 chains,
5000 + 5000 sweeps of N_e proposals, one measurement per sweep) for L = 5, 9, 15, and E(Δ) at L = 9.

    python benchmarks/lattice_energies.py                 # full statistics (CPU; ~10 min on 2 cores)
    python benchmarks/lattice_energies.py --quick         # 10× fewer sweeps

Writes data/lattice_rvb_recorded.json (with machine, date and wall times).
"""
import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from qmckit.studies import lattice_rvb as study

ROOT = Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10× fewer sweeps")
    parser.add_argument("--sizes", default="5,9,15")
    parser.add_argument("--scan-L", type=int, default=9)
    parser.add_argument("--out", default=str(ROOT / "data" / "lattice_rvb_recorded.json"))
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    record = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "date": datetime.date.today().isoformat(), "conventions": "qmckit.systems.lattice_rvb docstring",
              "table_61": [], "delta_scan": None}
    for L in (int(x) for x in args.sizes.split(",")):
        start = time.perf_counter()
        r = study.run_energy(L, chains=32, steps=5000 // scale, equilibration=5000 // scale, seed=13213)
        est = r["estimates"]
        row = {"L": L, "n_sites": r["n_sites"], "n_electrons": r["n_electrons"],
               **{k: [est[k]["mean"], est[k]["error"]] for k in ("energy_per_site", "kinetic_per_site",
                                                                  "exchange_per_site")},
               "tau_sweeps": est["energy_per_site"]["tau"], "acceptance": r["acceptance"], "hops": r["hops"],
               "swaps": r["swaps"], "inverse_drift": r["inverse_drift"], "inverse_rebuilds": r["inverse_rebuilds"],
               "chains": 32, "sweeps": [5000 // scale, 5000 // scale], "wall_s": time.perf_counter() - start}
        record["table_61"].append(row)
        print(f"L={L:3d}  E/N_s = {row['energy_per_site'][0]:.5f} ± {row['energy_per_site'][1]:.5f}  "
              f"kin {row['kinetic_per_site'][0]:.5f}  J {row['exchange_per_site'][0]:.5f}  "
              f"acc {row['acceptance']:.3f}  {row['wall_s']:.0f} s", flush=True)
    deltas = np.round(np.arange(0.2, 2.61, 0.2), 2)
    rows = study.energy_scan(deltas, L=args.scan_L, chains=32, steps=2000 // scale, equilibration=500 // scale, seed=1)
    lowest = min(rows, key=lambda r: r["energy"])["delta"]
    fit_rows = [r for r in rows if abs(r["delta"] - lowest) <= 0.61]  # a parabola only near the minimum
    d0, err = study.parabola_minimum([r["delta"] for r in fit_rows], [r["energy"] for r in fit_rows],
                                     [r["error"] for r in fit_rows])
    record["delta_scan"] = {"L": args.scan_L, "mu": 0.0, "J": 0.3, "doping": 0.1, "chains": 32,
                            "sweeps": [500 // scale, 2000 // scale],
                            "rows": [{"delta": r["delta"], "energy_per_site": [r["energy"], r["error"]]} for r in rows],
                            "minimum_delta": [d0, err],
                            "fit_range": [fit_rows[0]["delta"], fit_rows[-1]["delta"]]}
    for r in rows:
        print(f"Δ={r['delta']:.2f}  E/N_s = {r['energy']:.5f} ± {r['error']:.5f}", flush=True)
    print(f"minimum of the quadratic fit: Δ = {d0:.3f} ± {err:.3f}")
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print("written", args.out)


if __name__ == "__main__":
    main()
