#!/usr/bin/env python
"""One-off experiment (issue 25): are DMC error bars honest, and how does the population feedback time change them?

He atom (study 002's ψ_T with the e–n cusp factor, nodeless, so DMC is exact up to Δτ and population bias),
fixed-node DMC on the CPU, 500 walkers, Δτ = 0.01, 8000 recorded steps, for seeds 0–11 and each feedback
time τ_fb of the E_T feedback (``DMC.feedback_time`` = ``reference_time``; qmckit's default is 0.1). For each
τ_fb: the mean of the 12 run means against the exact −2.903724 E_h, the scatter (standard deviation) of the
run means, the median quoted error bar, and their ratio (honest error bars give a ratio near 1; with 12
runs the scatter itself is uncertain by about 21 %).

    python experiments/dmc_feedback_errors.py 0.1 1.0     # τ_fb values; writes nothing, prints a table row each
"""
import sys
import warnings

import numpy as np

from qmckit.runs import RunConfig, make_run

EXACT = -2.903724


def row(feedback: float, seeds=range(12)) -> str:
    means, errors, half = [], [], []
    for seed in seeds:
        run = make_run(RunConfig(system="atom", params=dict(element="He", en_cusp=True), method="dmc", walkers=500,
                                 steps=8000, dt=0.01, seed=seed, backend="cpu"))
        run.equilibrate()
        run.dmc.feedback_time = run.dmc.reference_time = feedback
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run.run()
        energy = run.estimates()["energy"]
        means.append(energy.mean)
        errors.append(energy.error)
    means, errors = np.array(means), np.array(errors)
    scatter = means.std(ddof=1)
    return (f"| {feedback:g} | {means.mean():.5f} ± {scatter / np.sqrt(means.size):.5f} | "
            f"{(means.mean() - EXACT) / (scatter / np.sqrt(means.size)):+.1f} | {scatter:.5f} | "
            f"{np.median(errors):.5f} | {scatter / np.median(errors):.2f} |")


if __name__ == "__main__":
    print("| τ_fb | mean of 12 runs (E_h) | (mean − exact)/σ | scatter of run means | median quoted error | "
          "scatter / quoted |")
    print("|---:|---|---:|---:|---:|---:|")
    for value in sys.argv[1:] or ["0.1", "1.0"]:
        print(row(float(value)), flush=True)
