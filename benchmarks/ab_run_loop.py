"""A/B of the Run loop on the GPU between two source trees: same seed → same numbers, and the wall time of whole runs.

Each case runs through ``make_run(...).run()`` (system, sampler and kernels as a user gets them), every variant in
its own process (compiled outside the clock), interleaved and alternating which tree goes first; then a cProfile
of each tree's He DMC run. Used for the change that cut runs into pieces (issue 26).

    git archive <old-rev> qmckit | tar -x -C .ab/old
    python benchmarks/ab_run_loop.py --old .ab/old      # on a GPU machine; writes $OUT/run_pieces_ab.json
"""
import argparse
import json, os, statistics, subprocess, sys, time
CASES = {
    "he_dmc": dict(system="atom", params=dict(element="He"), method="dmc", dt=0.01, walkers=16384, steps=1000,
                   dmc_equilibration=50, seed=5, backend="cuda"),
    "be_dmc": dict(system="atom", params=dict(element="Be"), method="dmc", dt=0.01, walkers=8192, steps=600,
                   dmc_equilibration=50, seed=5, backend="cuda"),
}
CHILD = r'''
import json, sys, time
from qmckit.runs import RunConfig, make_run
cfg = json.loads(sys.argv[1])
make_run(RunConfig(**{**cfg, "steps": 20, "walkers": 256})).run()  # compile outside the clock
t = time.perf_counter(); r = make_run(RunConfig(**cfg)).run(); wall = time.perf_counter() - t
key = next(iter(r["estimates"]))
print("RESULT" + json.dumps({"wall": wall, "mean": r["estimates"][key]["mean"], "error": r["estimates"][key]["error"],
                             "acceptance": r["acceptance"]}))
'''
def child(tree, cfg):
    env = dict(os.environ, PYTHONPATH=f"{tree}:/tmp/site")
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], env=env, capture_output=True, text=True)
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT")]
    if not line:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(line[0][6:])
parser = argparse.ArgumentParser()
parser.add_argument("--old", required=True, help="the other source tree (a folder holding qmckit/)")
parser.add_argument("--reps", type=int, default=4)
args = parser.parse_args()
OLD = os.path.abspath(args.old)
res = {}
for name, cfg in CASES.items():
    runs = {"old": [], "new": []}
    for rep in range(args.reps):
        pair = (("old", OLD), ("new", os.getcwd()))
        for label, tree in (pair if rep % 2 == 0 else pair[::-1]):
            runs[label].append(child(tree, cfg))
    same = all(a["mean"] == b["mean"] and a["error"] == b["error"] and a["acceptance"] == b["acceptance"]
               for a, b in zip(runs["old"], runs["new"]))
    med = {k: statistics.median(r["wall"] for r in v) for k, v in runs.items()}
    res[name] = {"same_numbers": same, "median_wall_s": med, "ratio_new_old": med["new"] / med["old"],
                 "walls": {k: [r["wall"] for r in v] for k, v in runs.items()}, "energy": runs["new"][0]["mean"]}
    print(name, json.dumps(res[name]), flush=True)
os.makedirs(os.environ.get("OUT", "."), exist_ok=True)
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "run_pieces_ab.json"), "w"), indent=1)

# where the new tree's DMC spends its time
PROF = CHILD.replace('t = time.perf_counter(); r = make_run(RunConfig(**cfg)).run()',
                     'import cProfile, pstats; pr = cProfile.Profile(); t = time.perf_counter(); pr.enable(); '
                     'r = make_run(RunConfig(**cfg)).run(); pr.disable(); '
                     'pstats.Stats(pr).sort_stats("tottime").print_stats(18)')
for tree in (os.getcwd(), OLD):
    env = dict(os.environ, PYTHONPATH=f"{tree}:/tmp/site")
    out = subprocess.run([sys.executable, "-c", PROF, json.dumps(CASES["he_dmc"])], env=env,
                         capture_output=True, text=True)
    print("PROFILE", tree, out.stdout[-3500:])
