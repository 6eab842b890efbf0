"""Would a fixed population (a comb to W walkers at every step) serve DMC as well as integer branching ⌊q + u⌋?

A split DMC run whose parts kept fixed populations would never wait for its largest part (issue 27). This checks
the statistics of the comb in one process first: free bosons (N = 10, λ = 1, a = 0, α = 0.4: DMC's exact answer is
1.5 ħω per particle), Δτ = 0.01, 400 walkers, ``--steps`` recorded steps, ``--seeds`` seeds of each:

* branch: qmckit's DMC as it is (⌊q + u⌋ per walker, the population free and held by the E_T feedback);
* comb: every step draws exactly 400 children by a comb of 400 teeth over the weights q (one uniform from the
  branching stream): systematic resampling, the expected count of each walker 400 q / Σq;
* stratified: exactly 400 children, one independent uniform per tooth (stratified resampling);
* renormalised: ⌊400 q / Σq + u⌋ per walker with independent u: the population is 400 on average and free to
  fluctuate by rounding only (a few per cent), the weights renormalised every step as by the comb.

Reports the mean over seeds, the scatter of the means (the honest error of one run) and the mean error bar.

    python experiments/dmc_comb_branching.py [--steps 6000 --seeds 8 --modes branch,comb,stratified,renormalised]
"""
import argparse
import warnings

import numpy as np

import qmckit.methods.dmc as dmc_module
from qmckit import rng
from qmckit.runs import RunConfig, make_run


def comb_counts(q, n, u):
    edges = np.cumsum(q)
    owner = np.minimum(np.searchsorted(edges, (u + np.arange(n)) * (edges[-1] / n), side="right"), q.size - 1)
    return np.bincount(owner, minlength=q.size).astype(np.int64)


def comb(states, q, counts):
    u = np.empty(1)
    rng.uniforms(states, 0, u)
    counts[:] = comb_counts(q, 400, float(u[0]))


GENERATOR = np.random.default_rng(123)  # the stratified and renormalised modes' own uniforms


def stratified(states, q, counts):
    edges = np.cumsum(q)
    teeth = (GENERATOR.random(400) + np.arange(400)) * (edges[-1] / 400)
    counts[:] = np.bincount(np.minimum(np.searchsorted(edges, teeth, side="right"), q.size - 1), minlength=q.size)


def renormalised(states, q, counts):
    counts[:] = np.floor(400 * q / q.sum() + GENERATOR.random(q.size)).astype(np.int64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--modes", default="branch,comb,stratified,renormalised")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    original = rng.branch_counts
    modes = {"branch": original, "comb": comb, "stratified": stratified, "renormalised": renormalised}
    for mode in args.modes.split(","):
        dmc_module._rng.branch_counts = modes[mode]
        means, errors = [], []
        for seed in range(args.seeds):
            config = RunConfig(system="bec", params=dict(n=10, lam=1.0, a=0.0, alpha=0.4), method="dmc", dt=0.01,
                               walkers=400, steps=args.steps, seed=seed)
            e = make_run(config).run()["estimates"]["energy_per_particle"]
            means.append(e["mean"])
            errors.append(e["error"])
        print(f"{mode}: mean {np.mean(means):.5f}, scatter of the means {np.std(means, ddof=1):.5f}, "
              f"mean error bar {np.mean(errors):.5f} ({args.seeds} seeds × {args.steps} steps)")
    dmc_module._rng.branch_counts = original


if __name__ == "__main__":
    main()
