#!/usr/bin/env python
"""One lattice chain launch to profile (Nsight Compute on the device): Table 6.1's parameters at L, 32 chains,
``--sweeps`` unmeasured sweeps; the second launch is the one to profile (``ncu --launch-skip 1 --launch-count 1``).

    ncu --kernel-name regex:run_chains --launch-skip 1 --launch-count 1 --section WarpStateStats \\
        python benchmarks/lattice_profile_target.py --L 15 --batch 8 --sweeps 20
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from qmckit.backends import lattice_cuda as lc  # noqa: E402
from qmckit.rng import seed_states  # noqa: E402
from qmckit.systems.lattice_rvb import LatticeRVB  # noqa: E402

PARAMS = dict(doping=0.1, J=0.3, delta=1.5, mu=0.0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--L", type=int, default=15)
    ap.add_argument("--chains", type=int, default=32)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--measure", action="store_true")
    args = ap.parse_args(argv)
    system = LatticeRVB(L=args.L, **PARAMS)
    state = system.random_configurations(args.chains, np.random.default_rng(1))
    chains = lc.CudaChains(system, state, seed_states(2, args.chains), batch=args.batch)
    for _ in range(2):
        chains.sweep(args.sweeps, measure=args.measure)
    print(f"L = {args.L}, {args.chains} chains of {chains.threads} threads, batch {chains.batch}: "
          f"cycles per sweep {({k: round(float(v.mean()) / (2 * args.sweeps)) for k, v in chains.cycle_counts().items()})}")


if __name__ == "__main__":
    main()
