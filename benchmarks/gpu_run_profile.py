#!/usr/bin/env python
"""Where a GPU run's time goes (issues 30 and 31): the profile of a whole ``make_run`` on the GPU, phase by phase,
with its modified Amdahl model (``qmckit.perf.report``).

The runs: H2O/cc-pVDZ with cusp-corrected orbitals, fixed-node DMC on the GPU, 16384 walkers, Δτ = 0.005; and Ne/cc-
pVTZ as in issue 30's Δτ series (Δτ = 0.0005, moves near the nucleus); each with 20 VMC equilibration sweeps, 20 DMC
equilibration steps and 400 measured steps, after a two-step run that compiles the kernels. ``--cprofile S`` adds the
host functions' own times over an S-step run. The GPU kernels' own time is measured with CUDA events (the profile's
"sampling"); the rest of each sweep call is "transfers".

    python benchmarks/gpu_run_profile.py --rhf-cache .rhf_cache_device.pkl [--cprofile 200] [--only ne/]

Writes $OUT (or benchmarks/results)/gpu_run_profile_<date>.{json,md}.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import sys
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qmckit  # noqa: E402
from _common import results_stem  # noqa: E402
from qmckit.perf.run_profile import format_profile  # noqa: E402
from qmckit.runs import RunConfig, make_run  # noqa: E402

CASES = {"molecule h2o/cc-pvdz cusp DMC, 16384 walkers": RunConfig(
    system="molecule", params=dict(xyz="h2o", basis="cc-pvdz", cusp=True, jastrow_en=False), method="dmc",
    backend="cuda", walkers=16384, steps=400, equilibration=20, dmc_equilibration=20, dt=0.005, seed=3),
    "molecule ne/cc-pvtz cusp DMC with moves near the nucleus, 16384 walkers, Δτ = 0.0005": RunConfig(
    system="molecule", params=dict(xyz="ne", basis="cc-pvtz", cusp=True, jastrow_en=False), method="dmc",
    backend="cuda", walkers=16384, steps=400, equilibration=20, dmc_equilibration=20, dt=0.0005, seed=13,
    nuclear_moves=True)}


def host_functions(config, steps: int, top: int = 20) -> str:
    """cProfile's tables of the ``top`` functions by own and by cumulative time over a run of ``steps`` measured steps
    (the host's side of a GPU run: launches, copies, branching; the kernels' time lands where the host waits for
    them)."""
    import cProfile
    import io
    import pstats

    run = make_run(dataclasses.replace(config, steps=steps))
    profiler = cProfile.Profile()
    profiler.enable()
    run.run()
    profiler.disable()
    text = io.StringIO()
    for order in ("tottime", "cumtime"):
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(top)
    return text.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rhf-cache", default=None, help="pickled RHF solutions (the GPU host has no PySCF)")
    parser.add_argument("--cprofile", type=int, default=0, help="also profile the host's functions over a run of this "
                        "many steps (cProfile; its own overhead stays out of the phase table)")
    parser.add_argument("--only", default="", help="run only the cases whose label contains this text")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.rhf_cache:
        from qmckit.systems import molecule

        molecule._RHF_CACHE.update(pickle.loads(Path(args.rhf_cache).read_bytes()))
    out, lines = {}, [f"# Where a GPU run's time goes ({date.today().isoformat()})", "",
                      "Command: `python benchmarks/gpu_run_profile.py " + " ".join(sys.argv[1:]) + "`.", ""]
    for label, config in CASES.items():
        if args.only not in label:
            continue
        make_run(dataclasses.replace(config, steps=2, equilibration=2, dmc_equilibration=2)).run()  # compiles
        result = make_run(config).run()
        model = qmckit.perf.report(result)
        out[label] = {"config": dataclasses.asdict(config), "profile": result["profile"], "model": model.as_dict(),
                      "wall_s": result["wall_s"], "energy": next(iter(result["estimates"].values()))}
        lines += [f"## {label}", "", "```", format_profile(result["profile"]), str(model), "```", ""]
        print("\n".join(lines[-5:-2]), flush=True)
        if args.cprofile:
            table = host_functions(config, args.cprofile)
            out[label]["host_functions"] = table
            lines += [f"Host functions by own time over {args.cprofile} steps (cProfile):", "", "```", table.strip(),
                      "```", ""]
            print(table, flush=True)
    stem = results_stem(f"gpu_run_profile_{date.today().isoformat()}")
    stem.with_suffix(".json").write_text(json.dumps(out, indent=1, default=str))
    stem.with_suffix(".md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
