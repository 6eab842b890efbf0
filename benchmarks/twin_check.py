"""GPU kernels against their CPU twin at a chosen N (the benchmark's own twin runs N = 10 and 100).

    python benchmarks/twin_check.py --n 500 --walkers 64 --sweeps 3

Prints one line per case: max |ΔE_L|, max |Δr|, accept-count mismatches, equal RNG streams.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bec_throughput as bt  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--walkers", type=int, default=64)
    parser.add_argument("--sweeps", type=int, default=3)
    args = parser.parse_args()
    cases = [(args.n, "drift", "block", "float64"), (args.n, "drift", "block", "float32"),
             (args.n, "drift", "thread", "float64"), (args.n, "brute", "block", "float64")]
    results = []
    bt.correctness(cases, args.walkers, args.sweeps, bt.Budget(400), results)
    bad = [r for r in results if "error" in r or r.get("walkers_diverged", 1) or r.get("accept_count_mismatches", 1)
           or not r.get("rng_streams_equal", False)]
    print(f"twin check N = {args.n}: {len(results) - len(bad)}/{len(results)} cases identical in decisions")


if __name__ == "__main__":
    main()
