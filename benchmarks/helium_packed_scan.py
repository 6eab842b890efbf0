#!/usr/bin/env python
"""The packed kernel's remaining knobs at small N on a GPU: lanes per chain, atoms per trip (unroll), block
size; prints one line per launch configuration (time per macroupdate per chain, % of the FMA peak given).

    python benchmarks/helium_packed_scan.py --peak64 30.6e12 --peak32 59.5e12
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from qmckit.studies import helium4  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peak64", type=float, required=True, help="measured float64 FMA peak, FLOP/s")
    ap.add_argument("--peak32", type=float, required=True, help="measured float32 FMA peak, FLOP/s")
    ap.add_argument("--sizes", default="64,128")
    ap.add_argument("--chains-per-sm", default="128", help="comma-separated chains per SM (W = this × SMs)")
    ap.add_argument("--lanes", default="2,4,8,16")
    ap.add_argument("--unroll", default="2,4")
    ap.add_argument("--threads", default="64,128,256")
    ap.add_argument("--dtypes", default="float64,float32")
    args = ap.parse_args(argv)
    from numba import cuda

    device = cuda.get_current_device()
    sms = device.MULTIPROCESSOR_COUNT
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    print(f"<!-- {name}, {datetime.date.today().isoformat()}: benchmarks/helium_packed_scan.py {' '.join(argv or sys.argv[1:])}")
    import numba

    threads = numba.get_num_threads()
    # one chain in the CPU kernel's prange on the full pool: 1.8 ms per macroupdate at N = 64 on a 2-core VM, 0.021 alone
    numba.set_num_threads(1)
    for n in (int(x) for x in args.sizes.split(",")):  # the CPU backend in the same run: one chain on one core
        cpu = helium4.time_generation(n, 1, backend="cpu", n_macro=4, repeats=3)
        print(f"     CPU (host, one core, float64) N = {n}: {1e3 * cpu['s_per_macroupdate_per_chain']:.4f} ms per macroupdate")
    numba.set_num_threads(threads)
    print("-->")
    print("| N | dtype | lanes | unroll | threads | chains | ms per macroupdate per chain | % FMA peak |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for n in (int(x) for x in args.sizes.split(",")):
        ints = lambda text: [int(x) for x in text.split(",")]  # noqa: E731
        for dtype, lanes, unroll, threads, per_sm in itertools.product(
                args.dtypes.split(","), ints(args.lanes), ints(args.unroll), ints(args.threads), ints(args.chains_per_sm)):
            if n < 4 * lanes or n > 64 * lanes:
                continue
            walkers = per_sm * sms
            try:
                r = helium4.time_generation(n, walkers, backend="cuda", n_macro=max(1, int(4e9 / (2 * n * n * walkers))),
                                            repeats=3, threads=threads, dtype=np.dtype(dtype), memory="packed",
                                            lanes=lanes, unroll=unroll)
            except Exception as exc:  # noqa: BLE001  (shared memory or registers exceeded)
                print(f"| {n} | {dtype} | {lanes} | {unroll} | {threads} | {walkers} | {type(exc).__name__} | |")
                continue
            peak = args.peak64 if dtype == "float64" else args.peak32
            print(f"| {n} | {dtype} | {lanes} | {unroll} | {threads} | {walkers} | "
                  f"{1e3 * r['s_per_macroupdate_per_chain']:.3e} | {100 * r['pair_evaluations_per_s'] * 30 / peak:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
