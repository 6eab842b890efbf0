#!/usr/bin/env python
"""One helium generation launch to profile (Nsight Compute on the device): N atoms, W chains, float64 or
float32, the default kernel for N; the second launch of ``generate(m)`` is the one to profile
(``ncu --launch-skip 1 --launch-count 1``).

    ncu --kernel-name regex:generate_ --launch-skip 1 --launch-count 1 --section WarpStateStats \\
        python benchmarks/helium_profile_target.py --n 64 --walkers 4224 --dtype float64 --macro 20
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from qmckit.studies import helium4  # noqa: E402
from qmckit.systems import helium  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--walkers", type=int, default=4224)
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--macro", type=int, default=20, help="macroupdates per launch")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    chains = helium4.make_chains(helium.Helium(n=args.n), args.walkers, seed=1, backend="cuda",
                                 dtype=np.dtype(args.dtype), threads=args.threads)
    for _ in range(2):
        chains.generate(args.macro)
        chains.synchronize()
    print(f"N = {args.n}, {args.walkers} chains of {chains.threads} threads, {args.dtype}, memory {chains.memory}: "
          f"acceptance {chains.acceptance:.3f}")


if __name__ == "__main__":
    main()
