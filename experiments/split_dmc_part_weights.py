"""Do the parts of a split DMC run need the weights they carry? (issue 27)

Every part of a split DMC run (``qmckit.scans.split``) renormalises its branching, ⌊W_k q/Σq + u⌋, so its population
stays at its share W_k, and carries the weight Σq/W_k that the renormalisation takes out as a weight Π_k of all its
walkers. This runs free bosons (N = 10, λ = 1, a = 0, α = 0.3: VMC at 1.7, DMC exactly 1.5 ħω per particle), Δτ = 0.01,
200 walkers, 3000 steps in blocks of 20, ``--seeds`` seeds of each of:

* one process (qmckit's DMC, the population free and held by the E_T feedback);
* one part (``split_run(config, 1)``);
* ten parts of 20 walkers, weights carried (as ``split_run`` does);
* ten parts of 20 walkers, weights dropped (every part weighted alike: ``log_weight`` zeroed).

Reports the mean over seeds, its error (scatter of the means / √seeds) and the mean error bar of one run.

    python experiments/split_dmc_part_weights.py [--seeds 6]
"""
import argparse
import warnings

import numpy as np

import qmckit.scans.split as split
from qmckit.runs import RunConfig, make_run


def dropped_block(block):
    def without_weights(self, *args):
        out = block(self, *args)
        out["log_weight"] = [0.0] * len(out["log_weight"])
        return out
    return without_weights


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=6)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    block = split.DMCPart.block
    for label, parts, weights in (("one process", 0, True), ("one part", 1, True),
                                  ("ten parts, weights carried", 10, True), ("ten parts, weights dropped", 10, False)):
        split.DMCPart.block = block if weights else dropped_block(block)
        means, errors = [], []
        for seed in range(args.seeds):
            config = RunConfig(system="bec", params=dict(n=10, lam=1.0, a=0.0, alpha=0.3), method="dmc", dt=0.01,
                               walkers=200, steps=3000, block=20, seed=seed)
            result = make_run(config).run() if parts == 0 else split.split_run(config, parts)
            e = result["estimates"]["energy_per_particle"]
            means.append(e["mean"])
            errors.append(e["error"])
        error = np.std(means, ddof=1) / np.sqrt(args.seeds)
        print(f"| {label} | {np.mean(means):.5f}({round(1e5 * error)}) | {(np.mean(means) - 1.5) / error:+.1f} | "
              f"{np.mean(errors):.5f} |", flush=True)
    split.DMCPart.block = block


if __name__ == "__main__":
    main()
