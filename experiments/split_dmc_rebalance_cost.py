"""What moving walkers between the parts of a split DMC run costs on GPUs (issue 27): study 002's B4 (N = 500 bosons),
``--walkers`` per part, Δτ = 0.01.

1. In one process on one GPU: the time of a DMC step of a part, and of ``give(n)`` then ``receive`` (the device-side
   ``take_last``/``append`` of :class:`qmckit.samplers.cuda.CudaSampler`), medians of 5.
2. On a Dask cluster of one worker per GPU (2 GPUs), two parts as actors: a give on one GPU's part then a receive
   on the other's through this process (what ``split_run`` does), of one walker and of ``--move``, medians of 5.

    python experiments/split_dmc_rebalance_cost.py [--walkers 4096 --move 600]

Prints a JSON record (machine, date, the times in seconds).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from dataclasses import asdict
from datetime import date

B4 = dict(n=500, lam=2.8284271247461903, a=0.15155, alpha=0.7687)


def timed(fn, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--walkers", type=int, default=4096)
    parser.add_argument("--move", type=int, default=600)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from numba import cuda

    from qmckit.runs import RunConfig
    from qmckit.scans.execute import start_executor
    from qmckit.scans.split import DMCPart

    config = asdict(RunConfig(system="bec", params=B4, method="dmc", backend="cuda", dt=0.01, walkers=args.walkers,
                              steps=10, block=5, equilibration=2, dmc_equilibration=2, seed=3))
    out = {"date": str(date.today()), "gpus": [str(g.name) for g in cuda.gpus], "walkers": args.walkers,
           "move": args.move, "command": f"python experiments/split_dmc_rebalance_cost.py --walkers {args.walkers} "
           f"--move {args.move}"}
    part = DMCPart(config, args.walkers, args.walkers, 1)
    part.equilibrate()
    dmc = part.run.dmc
    dmc.step(feedback=False)
    out["dmc_step_s"] = timed(lambda: dmc.step(feedback=False))
    out["in_process_give_receive_s"] = timed(lambda: part.receive(part.give(args.move)))
    del part, dmc

    client, close = start_executor(gpus=2)
    try:
        workers = sorted(client.scheduler_info()["workers"])
        actors = [client.submit(DMCPart, config, args.walkers, args.walkers, k, actor=True, workers=[w],
                                allow_other_workers=False).result() for k, w in enumerate(workers)]
        for a in actors:
            a.equilibrate().result()
        def move(n):
            actors[1].receive(actors[0].give(n).result()).result()
            actors[0].receive(actors[1].give(n).result()).result()
        move(args.move)
        out["actor_give_receive_1_s"] = timed(lambda: move(1)) / 2
        out["actor_give_receive_s"] = timed(lambda: move(args.move)) / 2
    finally:
        close()
    print("RECORD " + json.dumps(out))


if __name__ == "__main__":
    main()
