"""Study 000's GPU chain kernel (qmckit.backends.lattice_cuda) against its CPU twin
(qmckit.backends.lattice_chains) under numba's CUDA simulator, at tiny sizes.

The simulator work runs in ONE child process (this file run as a script with NUMBA_ENABLE_CUDASIM=1,
because numba reads that variable at first import, so the rest of the test suite never sees it); the
child prints its measurements as JSON. The simulator runs every CUDA thread as a Python thread and
polls them while holding the GIL, so the child shortens the interpreter's switch interval: barriers
then cost ~0.1 ms instead of the default 5 ms.
"""
from __future__ import annotations

import json
import os
import sys
import types

import numpy as np
import pytest

from qmckit import rng
from qmckit.backends import lattice_cuda as lc
from qmckit.systems.lattice_rvb import LatticeRVB

MARKER = "LATTICE_CUDA_RESULTS="

# name: (system parameters, chains, plan of (sweeps, measure), refresh_every, T_P, bfactor[, CudaChains options]);
# the proposals go 8 at a time (lattice_cuda.BATCH) and the measurements to snapshot blocks (measure_on="grid")
# unless a case says otherwise
CASES = {
    "twin": (dict(L=3, doping=0.2), 3, [(2, False), (3, True)], 1, 4, 8),
    "single": (dict(L=3, doping=0.2), 3, [(2, False), (3, True)], 1, 4, 8, {"batch": 1}),  # one proposal at a time
    "in_chain": (dict(L=3, doping=0.2), 2, [(1, False), (3, True)], 2, 4, 8, {"measure_on": "chain"}),
    # measured sweeps one chain launch at a time (two snapshot buffers in turn; rebuilds on the call's schedule);
    # the CPU's two-step swaps, so that the drifts at the rebuilds are the CPU's to rounding (~1e-16)
    "chunked": (dict(L=3, doping=0.2), 2, [(1, False), (5, True)], 2, 4, 8,
                {"snapshot_buffer_bytes": 1, "swap_update": "sequential"}),
    "layout": (dict(L=3, doping=0.2), 2, [(3, True)], 1, 2, 4),
    "wide": (dict(L=3, doping=0.2), 1, [(2, True)], 1, 8, 32),  # 64 threads, 3 row rounds of 32
    "free": (dict(L=5, doping=0.6, free=True, J=0.0), 1, [(1, False), (2, True)], 2, 16, 2),  # 96 threads
    "square": (dict(kind="square", L=4, doping=0.125), 2, [(1, False), (2, True)], 1, 4, 8),
    # M = 13 with T_P = 1: column sums of 8 + 4 + 1 terms, updates of 4-element trips, tile products of 4 k
    "unrolled": (dict(L=5, doping=0.1), 1, [(1, True)], 1, 1, 4),
    # an accepted swap as the CPU's two Sherman–Morrison steps (the cases above take the default, one rank-2 pass:
    # the same chain, to rounding)
    "sequential": (dict(L=3, doping=0.2), 3, [(2, False), (3, True)], 1, 4, 8, {"swap_update": "sequential"}),
    "rank2_unrolled": (dict(L=5, doping=0.1), 2, [(1, False), (2, True)], 0, 1, 4, {"swap_update": "rank2"}),  # no rebuild
    # rank-2 swaps one proposal at a time (the one-at-a-time path's numbers)
    "rank2_single": (dict(L=3, doping=0.2), 3, [(2, False), (3, True)], 0, 4, 8, {"swap_update": "rank2", "batch": 1}),
    # the kernels that count clock cycles by phase, and also the draws' parts (the clock reads are no-ops here, the
    # details kernel's layout is not)
    "cycles": (dict(L=3, doping=0.2), 2, [(1, False), (2, True)], 1, 4, 8, {"cycle_counts": True}),
    "details": (dict(L=3, doping=0.2), 2, [(1, False), (2, True)], 1, 4, 8, {"cycle_details": True}),
}

# the tracked algorithm (F and G kept up to date): GPU kernel vs the tracked CPU kernel, same layout
TRACKED_CASES = {
    "tracked_twin": (dict(L=3, doping=0.2), 3, [(2, False), (3, True)], 2, 4, 8),  # the last sweep not rebuilt
    "tracked_norefresh": (dict(L=3, doping=0.2), 2, [(4, True)], 0, 4, 8),
    "tracked_wide": (dict(L=3, doping=0.2), 1, [(2, True)], 1, 8, 32),  # 64 threads
    "tracked_square": (dict(kind="square", L=4, doping=0.125), 2, [(1, False), (2, True)], 0, 4, 8),
    "tracked_free": (dict(L=5, doping=0.6, free=True, J=0.0), 1, [(1, False), (2, True)], 2, 16, 2),  # 96 threads
}


def _start(params, chains, seed=11):
    from qmckit.rng import seed_states

    system = LatticeRVB(**params)
    state = system.random_configurations(chains, np.random.default_rng(seed))
    return system, state, seed_states(seed + 1, chains)


def _copy(state):
    return {key: np.array(value) for key, value in state.items()}


# --------------------------------------------------------------------------------------------
# child process (NUMBA_ENABLE_CUDASIM=1)
# --------------------------------------------------------------------------------------------
def _child() -> dict:
    import warnings

    warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)
    warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")
    sys.setswitchinterval(1e-4)
    from qmckit.backends.lattice_chains import CpuChains

    out = {"simulated": lc.simulated(), "available": lc.available(), "cases": {}}
    for name, (params, chains, plan, refresh, tp, bf, *options) in CASES.items():
        system, state, states = _start(params, chains)
        cpu = CpuChains(system, _copy(state), states.copy(), refresh_every=refresh)
        options = dict(options[0]) if options else {}
        buffer_bytes = options.pop("snapshot_buffer_bytes", None)
        gpu = lc.CudaChains(system, _copy(state), states.copy(), refresh_every=refresh, threads_per_column=tp,
                            bfactor=bf, **options)
        if buffer_bytes is not None:
            gpu.snapshot_buffer_bytes = buffer_bytes
        e_cpu, e_gpu = [], []
        for step, (n, measure) in enumerate(plan):
            e_cpu.append(cpu.sweep(n, measure))
            e_gpu.append(gpu.sweep(n, measure))
            if step == 0 and len(plan) > 1:  # LatticeRun zeroes the counts in place after equilibration
                cpu.counts[:] = 0
                gpu.counts[:] = 0
        e_cpu, e_gpu = np.concatenate(e_cpu, axis=1), np.concatenate(e_gpu, axis=1)
        host = gpu.host_state()
        case = {
            "threads": gpu.threads, "batch": gpu.batch, "measure_on": gpu.measure_on,
            "counts_cpu": cpu.counts.tolist(), "counts_gpu": gpu.counts.tolist(),
            "sites_equal": {key: bool(np.array_equal(host[key], cpu.state[key]))
                            for key in ("up_site", "dn_site", "up_at", "dn_at")},
            "states_equal": bool(np.array_equal(gpu.states_to_host(), cpu.states)),
            "max_dainv": float(np.abs(host["ainv"] - cpu.state["ainv"]).max()),
            "max_denergy": float(np.abs(e_gpu - e_cpu).max()) if e_cpu.size else 0.0,
            "energy_shape": [list(e_cpu.shape), list(e_gpu.shape)],
            "drift_cpu": cpu.drift.tolist(), "drift_gpu": gpu.drift.tolist(),
            "total_energy_gpu": (e_gpu[..., 0] + e_gpu[..., 1]).ravel().tolist(),
            "max_denergies_now": float(np.abs(gpu.energies() - cpu.energies()).max()),
            "counts_after_energies": gpu.counts.tolist(),
        }
        out["cases"][name] = case
    out["tracked"] = {}
    for name, (params, chains, plan, refresh, tp, bf) in TRACKED_CASES.items():
        system, state, states = _start(params, chains)
        cpu = CpuChains(system, _copy(state), states.copy(), refresh_every=refresh, algorithm="tracked")
        thesis = CpuChains(system, _copy(state), states.copy(), refresh_every=refresh)
        gpu = lc.CudaChains(system, _copy(state), states.copy(), refresh_every=refresh, threads_per_column=tp,
                            bfactor=bf, algorithm="tracked")
        e_cpu, e_gpu = [], []
        for n, measure in plan:
            e_cpu.append(cpu.sweep(n, measure))
            e_gpu.append(gpu.sweep(n, measure))
            thesis.sweep(n, measure)
        e_cpu, e_gpu = np.concatenate(e_cpu, axis=1), np.concatenate(e_gpu, axis=1)
        host = gpu.host_state()
        out["tracked"][name] = {
            "threads": gpu.threads,
            "counts_cpu": cpu.counts.tolist(), "counts_gpu": gpu.counts.tolist(), "counts_thesis": thesis.counts.tolist(),
            "sites_equal": {key: bool(np.array_equal(host[key], cpu.state[key]))
                            for key in ("up_site", "dn_site", "up_at", "dn_at")},
            "states_equal": bool(np.array_equal(gpu.states_to_host(), cpu.states)),
            "max_dainv": float(np.abs(host["ainv"] - cpu.state["ainv"]).max()),
            "max_denergy": float(np.abs(e_gpu - e_cpu).max()) if e_cpu.size else 0.0,
            "energy_shape": [list(e_cpu.shape), list(e_gpu.shape)],
            "drift_gpu": gpu.drift.tolist(),
            "total_energy_gpu": (e_gpu[..., 0] + e_gpu[..., 1]).ravel().tolist(),
            "max_denergies_now": float(np.abs(gpu.energies() - cpu.energies()).max()),
            "counts_after_energies": gpu.counts.tolist(),
        }
    return out


if __name__ == "__main__" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    print(MARKER + json.dumps(_child()))
    sys.exit(0)


@pytest.fixture(scope="module")
def sim():
    from _simulator import simulator_results

    return simulator_results(__file__, MARKER)


# --------------------------------------------------------------------------------------------
# without the simulator
# --------------------------------------------------------------------------------------------
def test_import_needs_no_cuda_and_available_never_raises():
    from _simulator import import_without_simulator

    imported, available = import_without_simulator("qmckit.backends.lattice_cuda")
    assert imported is False and available in ("True", "False")  # a bool
    assert isinstance(lc.available(), bool)


def test_no_gpu_here_means_not_available():
    try:
        from numba import cuda

        gpu = bool(cuda.is_available()) and not lc.simulated()
    except Exception:
        gpu = False
    assert lc.available() is gpu


def test_block_sizes_follow_study_000():
    """Table 5.5: T_P = 4 gives 64, 160 and 416 threads per chain at L = 5, 9, 15 (x = 0.1)."""
    sizes = [LatticeRVB(L=L, doping=0.1).size for L in (5, 9, 15)]
    assert sizes == [13, 38, 103]  # N_p + the Γ ghost
    assert [lc.block_threads(m) for m in sizes] == [64, 160, 416]
    assert lc.block_threads(103, 8, 16) == 832 and lc.block_threads(5, 1, 32) == 32
    # A⁻¹ of L = 15 needs the shared-memory opt-in (> 48 KB) and fits an H100 block (227 KB)
    assert lc.DEFAULT_SHARED_BYTES < 8 * 103 * 103 < lc.SHARED_LIMIT_BYTES


def test_bad_options_raise_clear_errors():
    system, state, states = _start(dict(L=3, doping=0.2), 2)
    with pytest.raises(ValueError, match="threads_per_column"):
        lc.CudaChains(system, state, states, threads_per_column=3)
    with pytest.raises(ValueError, match="bfactor"):
        lc.CudaChains(system, state, states, bfactor=64)
    big = LatticeRVB(L=15, doping=0.1)
    with pytest.raises(ValueError, match="threads per block"):
        lc.CudaChains(big, {}, np.zeros((1, 2), np.uint64), threads_per_column=16)
    for bad in (4, 0, True):
        with pytest.raises(ValueError, match="batch must be 1 or 8"):
            lc.CudaChains(system, state, states, batch=bad)
    with pytest.raises(ValueError, match="measure_on must be one of grid, chain"):
        lc.CudaChains(system, state, states, measure_on="host")
    with pytest.raises(ValueError, match="swap_update must be one of sequential, rank2"):
        lc.CudaChains(system, state, states, swap_update="woodbury")
    with pytest.raises(ValueError, match="swap_update='rank2' is a form of the thesis kernel"):
        lc.CudaChains(system, state, states, algorithm="tracked", swap_update="rank2")
    for option in ("cycle_counts", "cycle_details"):
        with pytest.raises(ValueError, match="need the thesis kernel"):
            lc.CudaChains(system, state, states, algorithm="tracked", **{option: True})
    with pytest.raises(ValueError, match="count no clock cycles"):  # the production kernel reads no clock
        lc.CudaChains.cycle_counts(types.SimpleNamespace(cycle_counts=False))
    # the timed kernels keep their shared-memory layout (L = 15 at 224 threads: the lattice_chains_h100v7 record's
    # 133656 B); the details one has two more cycle counts
    assert lc.shared_bytes(103, 226, 224) == 133656
    assert lc.shared_bytes(103, 226, 224, details=True) == 133656 + 16


def test_default_layouts_cover_every_row_in_one_pass():
    """bfactor: the largest divisor of a warp with threads / bfactor ≥ M (the study's L = 5, 9, 15: 4, 4, 2), so that
    a down update's row groups cover A⁻¹ at once; the registers: 255 while a scheduler holds at most two warps."""
    for size, expected in ((13, 4), (38, 4), (103, 2), (4, 8)):
        tp = lc.default_threads_per_column(size)
        bf = lc.default_bfactor(size, tp)
        assert bf == expected
        threads = lc.block_threads(size, tp, bf)
        assert threads // bf >= size and (bf == 32 or threads // (2 * bf) < size)
    assert lc.default_bfactor(200, 1) == 1  # 224 threads cannot give two per row: one
    assert [lc.default_max_registers(t) for t in (64, 224, 256, 288, 416, 832)] == [255, 255, 255, 168, 128, 72]


def test_parse_jumps_start_each_lane_group_its_draws_on():
    """parse_batch's lanes G·m … G·m + G − 1 start from the stream G·m draws on: the jumps it is given are
    rng.jump_masks of G, 2G, … (the masks themselves are checked against stepping in test_walkers)."""
    jumps = lc.parse_jumps()
    group = lc.PARSE_GROUP
    assert 32 % group == 0 and jumps.dtype == np.uint64
    assert jumps.shape == (max(32 // group - 1, 1), 128, 2)
    for m in range(1, 32 // group):
        assert np.array_equal(jumps[m - 1], rng.jump_masks(m * group))


@pytest.mark.parametrize("size", [3, 13, 38, 103, 104, 117])
def test_batch_rows_are_padded_to_whole_steps_on_distinct_banks(size):
    """A batch row holds M values and the zero padding up to the next multiple of 4 (one tensor-core k step);
    its stride is 4 mod 16 doubles, so the 8 rows × 4 columns a warp reads per step spread evenly over the banks."""
    ld = lc.batch_stride(size)
    assert ld >= -(-size // 4) * 4 and ld % 16 == 4 and ld - size < 20
    banks = {((row * ld + col) * 2) % 32 for row in range(8) for col in range(4)}
    assert len(banks) == 16  # 32 doubles, two on each of the 16 bank pairs: two wavefronts, the least for 256 B


# --------------------------------------------------------------------------------------------
# the GPU kernel against its CPU twin (simulator)
# --------------------------------------------------------------------------------------------
def test_simulator_child_sees_no_gpu(sim):
    assert sim["simulated"] and not sim["available"]


@pytest.mark.parametrize("name", list(CASES))
def test_gpu_chain_equals_cpu_twin(sim, name):
    case = sim["cases"][name]
    assert case["counts_gpu"] == case["counts_cpu"]
    assert all(case["sites_equal"].values()), case["sites_equal"]
    assert case["states_equal"]
    assert case["max_dainv"] < 1e-10
    assert case["energy_shape"][0] == case["energy_shape"][1]
    assert case["max_denergy"] < 1e-10
    assert case["max_denergies_now"] < 1e-10
    assert case["counts_after_energies"] == case["counts_gpu"]  # energies() moves nothing
    assert max(case["drift_gpu"]) < 1e-10 and max(case["drift_cpu"]) < 1e-10


def test_the_twin_cases_exercise_hops_and_swaps(sim):
    for name in ("twin", "single", "in_chain", "chunked", "layout", "wide", "square", "unrolled", "sequential",
                 "rank2_unrolled", "rank2_single"):
        counts = np.array(sim["cases"][name]["counts_gpu"]).sum(axis=0)
        assert counts[1] > 0 and counts[3] > 0, (name, counts)  # accepted hops and accepted swaps
    free = np.array(sim["cases"]["free"]["counts_gpu"]).sum(axis=0)
    assert free[2] == 0 and free[1] > 0  # unprojected: no swaps, only hops (onto any site)
    # a swap whose single steps are both singular: the CPU rebuilds A⁻¹, swap_update="rank2" (the default) takes
    # the order-free rank-2 form; rank2_single has no periodic rebuild, so its A⁻¹ above is that form's
    for name in ("twin", "sequential", "rank2_single"):
        assert np.array(sim["cases"][name]["counts_gpu"]).sum(axis=0)[4] > 0, name


def test_measured_sweeps_in_one_sweep_launches_keep_the_rebuild_schedule(sim):
    """Five measured sweeps as five chain launches (snapshots measured by measure_snapshots_gpu in between): the
    rebuilds fall on the call's sweeps 2 and 4 and after its last, as on the CPU, so the drifts are the same."""
    case = sim["cases"]["chunked"]
    assert case["energy_shape"] == [[2, 5, 3], [2, 5, 3]]
    assert np.allclose(case["drift_gpu"], case["drift_cpu"], rtol=1e-6, atol=0)


def test_counts_restart_after_zeroing_in_place(sim):
    """The twin case zeroes counts after its unmeasured sweeps: what is left is 3 sweeps × N_e proposals."""
    counts = np.array(sim["cases"]["twin"]["counts_gpu"])
    n_e = LatticeRVB(**CASES["twin"][0]).n_electrons
    assert np.all(counts[:, 0] + counts[:, 2] == 3 * n_e)


def test_free_fermions_have_the_fermi_sea_energy_on_the_gpu(sim):
    system = LatticeRVB(**CASES["free"][0])
    energies = np.array(sim["cases"]["free"]["total_energy_gpu"])
    assert np.allclose(energies, system.fermi_sea_energy(), atol=1e-9)


def test_layouts_cover_several_block_shapes(sim):
    """Other T_P/bfactor (checked against the CPU above) and block sizes: 32, 64 and 96 threads (not a power of 2)."""
    assert [sim["cases"][name]["threads"] for name in ("twin", "layout", "wide", "free")] == [32, 32, 64, 96]


# --------------------------------------------------------------------------------------------
# the tracked algorithm's kernel against the tracked CPU kernel (simulator)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(TRACKED_CASES))
def test_tracked_gpu_chain_equals_tracked_cpu_twin(sim, name):
    case = sim["tracked"][name]
    assert case["counts_gpu"] == case["counts_cpu"] == case["counts_thesis"]
    assert all(case["sites_equal"].values()), case["sites_equal"]
    assert case["states_equal"]
    assert case["max_dainv"] < 1e-10
    assert case["energy_shape"][0] == case["energy_shape"][1]
    assert case["max_denergy"] < 1e-10
    assert case["max_denergies_now"] < 1e-10
    assert case["counts_after_energies"] == case["counts_gpu"]
    assert max(case["drift_gpu"]) < 1e-10


def test_tracked_cases_exercise_hops_and_swaps(sim):
    for name in ("tracked_twin", "tracked_norefresh", "tracked_wide", "tracked_square"):
        counts = np.array(sim["tracked"][name]["counts_gpu"]).sum(axis=0)
        assert counts[1] > 0 and counts[3] > 0, (name, counts)
    assert [sim["tracked"][name]["threads"] for name in ("tracked_twin", "tracked_wide", "tracked_free")] == [32, 64, 96]
    system = LatticeRVB(**TRACKED_CASES["tracked_free"][0])
    energies = np.array(sim["tracked"]["tracked_free"]["total_energy_gpu"])
    assert np.allclose(energies, system.fermi_sea_energy(), atol=1e-9)


def test_tracked_option_is_checked():
    system, state, states = _start(dict(L=3, doping=0.2), 1)
    with pytest.raises(ValueError, match="algorithm"):
        lc.CudaChains(system, state, states, algorithm="fast")
    # the tracked kernel's shared memory at L = 15 fits an H100 block
    big = LatticeRVB(L=15, doping=0.1)
    assert lc.shared_bytes_tracked(big.size, big.n_sites, 416) < lc.SHARED_LIMIT_BYTES
