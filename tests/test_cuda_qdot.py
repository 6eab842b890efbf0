"""The quantum dot's GPU sampler (qmckit.backends.cuda_qdot) against its CPU twin, under numba's CUDA simulator.

Same walkers and random streams through the CPU sampler and the GPU sweeper, sweep by sweep: the same
accepted moves and streams, positions to 1e-12, local energies to 1e-10 relative, and the incremental
device caches equal to a CPU rebuild; 2D and 3D, drift and brute samplers, VMC and fixed node. Then one
DMC run through the Run on both backends gives the same populations and energies.
"""
import json
import os
import sys

import numpy as np
import pytest

MARKER = "CUDA_QDOT_RESULTS="
# (n, dim, omega, alpha, beta, sampler, fixed node, walkers, sweeps)
CASES = [(6, 2, 1.0, 0.93, 0.55, "drift", False, 3, 2), (2, 3, 0.5, 0.95, 0.2, "brute", False, 3, 2),
         (8, 3, 1.0, 0.9, 0.3, "drift", True, 2, 1)]


def _child() -> dict:
    import warnings

    warnings.simplefilter("ignore")
    from qmckit import runs
    from qmckit.backends.cuda_qdot import CudaQdotSweeper
    from qmckit.methods.vmc import VMC
    from qmckit.runs import RunConfig, make_run
    from qmckit.systems.qdot import QuantumDot
    from qmckit.walkers import Walkers

    out = {"cases": []}
    for n, dim, omega, alpha, beta, sampler, fixed_node, W, sweeps in CASES:
        system = QuantumDot(n=n, dim=dim, omega=omega, alpha=alpha, beta=beta)
        if fixed_node:
            system = system.for_dmc()
        start = Walkers.from_positions(system.initial_positions(W, np.random.default_rng(n)), 7 + n,
                                       system.cache_size())
        cpu = VMC(system, start.copy(), sampler=sampler, dt=0.05, step=0.8)
        gpu = CudaQdotSweeper(system, start.copy(), sampler=sampler, dt=0.05, step=0.8, threads_per_block=32)
        row = {"case": [n, dim, sampler, fixed_node], "accept": [], "dpos": 0.0, "de": 0.0, "dcache": 0.0}
        for _ in range(sweeps):
            e_cpu, _ = cpu.sweep(1)
            e_gpu, _ = gpu.sweep(1)
            row["accept"].append([int(x) for x in gpu.last_accepted])
            caches = gpu.caches_to_host()
            walkers = gpu.to_host(recompute_caches=False)
            row["dpos"] = max(row["dpos"], float(np.abs(walkers.positions - cpu.walkers.positions).max()))
            row["de"] = max(row["de"], float(np.abs(e_gpu - e_cpu).max() / np.abs(e_cpu).max()))
            row["streams_equal"] = bool(np.array_equal(walkers.rng_states, cpu.walkers.rng_states))
            cpu.recompute()  # the CPU's measured sweep rebuilt its cache; compare T, DPHI, JG with it
            nT = n * (n // 2) * (1 + dim) + n * dim
            row["dcache"] = max(row["dcache"], float(np.abs(caches[:, :nT] - cpu.walkers.caches[:, :nT]).max()))
        out["cases"].append(row)

    runs.cuda_available = lambda system, sampler="drift": True  # the simulator stands in for the GPU
    config = dict(system="qdot", method="dmc", params=dict(n=2, dim=2, omega=1.0, alpha=0.97, beta=0.35),
                  walkers=4, steps=3, equilibration=2, dmc_equilibration=1, block=3, dt=0.1, seed=3)  # rejects some moves
    out["dmc"] = {b: make_run(RunConfig(**config, backend=b)).run() for b in ("cpu", "cuda")}
    return out


if __name__ == "__main__" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    print(MARKER + json.dumps(_child()))


@pytest.fixture(scope="module")
def sim():
    sys.path.insert(0, os.path.dirname(__file__))
    from _simulator import simulator_results

    return simulator_results(__file__, MARKER, timeout=900)


@pytest.mark.parametrize("k", range(len(CASES)))
def test_gpu_sweeps_are_the_cpu_twins(sim, k):
    row = sim["cases"][k]
    assert row["streams_equal"], row
    assert row["dpos"] < 1e-12 and row["de"] < 1e-10 and row["dcache"] < 1e-9, row
    assert sum(map(sum, row["accept"])) > 0  # moves were accepted, so the comparison saw updates


def test_dmc_through_the_run_on_the_gpu_gives_the_cpu_numbers(sim):
    cpu, gpu = sim["dmc"]["cpu"], sim["dmc"]["cuda"]
    assert gpu["backend"] == "cuda" and cpu["backend"] == "cpu"
    assert gpu["walkers_final"] == cpu["walkers_final"] and gpu["killed"] == cpu["killed"]
    for name, est in cpu["estimates"].items():
        assert gpu["estimates"][name]["mean"] == pytest.approx(est["mean"], rel=1e-10), name
    assert gpu["tau_eff"] == pytest.approx(cpu["tau_eff"], rel=1e-12) and cpu["tau_eff"] < cpu["dt"]


def test_registration_and_import_without_a_gpu():
    from qmckit.backends import cuda_qdot
    from qmckit.systems.qdot import QuantumDot

    assert QuantumDot.capabilities.gpu == "qmckit.backends.cuda_qdot:CudaQdotSweeper"
    assert cuda_qdot.available() is False
