#!/usr/bin/env python
"""Where the host's time goes in a GPU DMC step (issue 30): line_profiler over the functions of one step.

The Ne/cc-pVTZ fixed-node run of issue 30's Δτ series (cusp-corrected orbitals, moves near the nucleus, Δτ = 0.0005,
16384 walkers), 20 VMC sweeps, 20 DMC equilibration and 400 measured steps after a two-step run that compiles the
kernels. Kernel launches are asynchronous, so a kernel's time shows where the host first waits for it (the copy of
the energies in ``sweep``). A one-off measurement, not a benchmark; needs line_profiler (a CPython 3.12 wheel).

    python experiments/dmc_step_lines_gpu.py --rhf-cache .rhf_cache_device.pkl

Writes $OUT (or experiments)/dmc_step_lines_gpu_<date>.txt.
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import os
import pickle
import sys
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from line_profiler import LineProfiler  # noqa: E402

from qmckit.backends.cuda_atom import CudaAtomSweeper  # noqa: E402
from qmckit.methods.dmc import DMC  # noqa: E402
from qmckit.perf import run_profile  # noqa: E402
from qmckit.runs import DMCRun, RunConfig, make_run  # noqa: E402
from qmckit.samplers.cuda import CudaSampler  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rhf-cache", default=None, help="pickled RHF solutions (no PySCF needed)")
    parser.add_argument("--walkers", type=int, default=16384)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.rhf_cache:
        from qmckit.systems import molecule

        molecule._RHF_CACHE.update(pickle.loads(Path(args.rhf_cache).read_bytes()))
    config = RunConfig(system="molecule", params=dict(xyz="ne", basis="cc-pvtz", cusp=True, jastrow_en=False),
                       method="dmc", backend="cuda", walkers=args.walkers, steps=args.steps, equilibration=20,
                       dmc_equilibration=20, dt=0.0005, seed=13, nuclear_moves=True)
    make_run(dataclasses.replace(config, steps=2, equilibration=2, dmc_equilibration=2)).run()  # compiles
    profiler = LineProfiler(DMC.step, DMC.branch, CudaSampler.branch, CudaAtomSweeper.branch_forked,
                            CudaAtomSweeper.sweep, CudaAtomSweeper.launch, run_profile.timed_sweep,
                            DMCRun._sweep_pieces)
    run = make_run(config)
    profiler.enable()
    result = run.run()
    profiler.disable()
    text = io.StringIO()
    profiler.print_stats(stream=text, output_unit=1e-6)
    header = (f"# {date.today().isoformat()}, {result['profile']['device']}: {config}\n"
              f"# run wall {result['wall_s']:.2f} s for {args.steps + 20} DMC steps (line_profiler on)\n")
    out = Path(os.environ.get("OUT", Path(__file__).parent)) / f"dmc_step_lines_gpu_{date.today().isoformat()}.txt"
    out.write_text(header + text.getvalue())
    print(header + text.getvalue())


if __name__ == "__main__":
    main()
