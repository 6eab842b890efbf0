"""Study 004's generation kernels (qmckit.backends.helium_chains): the CPU kernel against exact
recomputation, and the GPU kernels against the CPU twin under numba's CUDA simulator.

The simulator work runs in ONE child process (this file run as a script with NUMBA_ENABLE_CUDASIM=1,
because numba reads that variable at first import) that prints its measurements as JSON.
"""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest

from qmckit import rng
from qmckit.backends import helium_chains as hc
from qmckit.systems import helium

MARKER = "HELIUM_CHAINS_RESULTS="
N_ATOMS, WALKERS, MACRO, SIGMA, SEED = 20, 2, 2, 0.8, 7
N_UNROLLED = 100  # 3·32 + 4 atoms for 32 threads: threads 0–3 make one trip of four atoms


def _start(n=N_ATOMS, walkers=WALKERS, b=3.07, seed=SEED):
    system = helium.Helium(n=n, b=b)
    positions = system.initial_positions(walkers, np.random.default_rng(seed))
    return system, positions, rng.seed_states(seed + 1, walkers)


# --------------------------------------------------------------------------------------------
# child process (NUMBA_ENABLE_CUDASIM=1)
# --------------------------------------------------------------------------------------------
def _child() -> dict:
    import warnings

    warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)
    warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")
    from numba import cuda

    out = {"simulated": hc.simulated(), "runs": {}}
    system, positions, states = _start()
    cpu = hc.HeliumChainsCPU(system, positions, states, SIGMA)
    cpu.generate(MACRO)
    # N = 20 in shared memory (only the single-atom remainder of the pair loop runs, T = 32 > N), and
    # N = 100 > 3T split (x and y in shared memory, z in global memory: the global kernel is the same loop
    # on three global arrays), where the trips of four atoms run too (the two-atom trips are the same code
    # without the second pair of terms); and hybrid at N = 20, atoms 0–11 in shared and 12–19 in global
    # memory (each segment's loop, the moved atom's load and store in either)
    big_system, big_positions, big_states = _start(n=N_UNROLLED, walkers=1)
    big_cpu = hc.HeliumChainsCPU(big_system, big_positions, big_states, SIGMA)
    big_cpu.generate(1)
    # the packed kernel: 8 chains of 4 lanes in one warp, with writeouts every macroupdate
    many_system, many_positions, many_states = _start(walkers=8)
    many_cpu = hc.HeliumChainsCPU(many_system, many_positions, many_states, SIGMA)
    many_cpu.generate(MACRO)
    packed = hc.HeliumChains(many_system, many_positions, many_states, SIGMA, threads=32, memory="packed", lanes=4)
    packed_slots = cuda.to_device(np.full((MACRO, 8, 3, N_ATOMS), -1.0))
    packed.generate(MACRO, out=packed_slots, m_write=1)
    out["runs"]["packed"] = {
        "max_dpos": float(np.abs(packed.positions() - many_cpu.positions()).max()),
        "states_equal": bool(np.array_equal(packed.states_to_host(), many_cpu.states)),
        "accepted_gpu": packed.accepted.copy_to_host().tolist(), "accepted_cpu": many_cpu.accepted.tolist()}
    # float32 (chains padded to another stride than in float64): the float64 CPU chain to float32 rounding
    packed32 = hc.HeliumChains(many_system, many_positions, many_states, SIGMA, threads=32, memory="packed", lanes=4,
                               dtype=np.float32)
    packed32.generate(MACRO)
    out["runs"]["packed_f32"] = {
        "max_dpos": float(np.abs(packed32.positions() - many_cpu.positions()).max()),
        "states_equal": bool(np.array_equal(packed32.states_to_host(), many_cpu.states)),
        "accepted_gpu": packed32.accepted.copy_to_host().tolist(), "accepted_cpu": many_cpu.accepted.tolist()}
    # auto: packed when the walkers fill whole blocks (8 chains of 8 lanes in 64 threads), else shared
    out["auto_layouts"] = [(c.memory, c.threads, c.lanes) for c in (
        hc.HeliumChains(many_system, many_positions, many_states, SIGMA),
        hc.HeliumChains(system, positions, states, SIGMA))]
    out["packed_last_writeout_dpos"] = float(np.abs(packed_slots.copy_to_host()[-1].transpose(0, 2, 1)
                                                    - many_cpu.positions()).max())
    for name, chains, ref, macro, options in (
            ("shared", (system, positions, states), cpu, MACRO, {"memory": "shared"}),
            ("hybrid", (system, positions, states), cpu, MACRO, {"memory": "hybrid", "shared_atoms": 12}),
            ("split_unroll4", (big_system, big_positions, big_states), big_cpu, 1, {"memory": "split", "unroll": 4})):
        gpu = hc.HeliumChains(*chains, SIGMA, threads=32, **options)
        gpu.generate(macro)
        out["runs"][name] = {
            "max_dpos": float(np.abs(gpu.positions() - ref.positions()).max()),
            "states_equal": bool(np.array_equal(gpu.states_to_host(), ref.states)),
            "accepted_gpu": gpu.accepted.copy_to_host().tolist(), "accepted_cpu": ref.accepted.tolist()}
    single = hc.HeliumChains(system, positions, states, SIGMA, threads=32, dtype=np.float32)
    single.generate(1)
    ref = hc.HeliumChainsCPU(system, positions, states, SIGMA)
    ref.generate(1)
    out["float32_max_dpos"] = float(np.abs(single.positions() - ref.positions()).max())
    # writeouts every macroupdate into a host-visible array (from both segments of the hybrid kernel)
    gpu = hc.HeliumChains(system, positions, states, SIGMA, threads=32, memory="hybrid", shared_atoms=12)
    slots = cuda.to_device(np.full((MACRO, WALKERS, 3, N_ATOMS), -1.0))
    gpu.generate(MACRO, out=slots, m_write=1)
    written = slots.copy_to_host()
    step = hc.HeliumChainsCPU(system, positions, states, SIGMA)
    step.generate(1)
    out["writeout_dpos"] = [float(np.abs(written[0].transpose(0, 2, 1) - step.positions()).max())]
    step.generate(1)
    out["writeout_dpos"].append(float(np.abs(written[1].transpose(0, 2, 1) - step.positions()).max()))
    # analysis kernels on the generated configurations
    final = cpu.positions()
    gpu_e = hc.HeliumChains(system, final, states, SIGMA, threads=32)
    out["energies_gpu"] = gpu_e.energies().tolist()
    out["energies_cpu"] = system.measure(final).tolist()
    counts = gpu_e.pair_counts(bins=30)
    out["pair_counts_gpu"] = counts.sum(axis=0).tolist()
    return out


if __name__ == "__main__" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    print(MARKER + json.dumps(_child()))
    sys.exit(0)


@pytest.fixture(scope="module")
def sim():
    from _simulator import simulator_results

    return simulator_results(__file__, MARKER)


# --------------------------------------------------------------------------------------------
# CPU kernel: exact
# --------------------------------------------------------------------------------------------
def test_pair_change_sum_equals_log_psi_difference():
    system, positions, _ = _start()
    R = positions[0] % system.box
    constants = hc.chain_constants(system.box, system.params.b)
    p = system.kernel_params
    moved = R.copy()
    moved[5] += (0.3, -0.7, 0.45)
    box, inv_box, half2, b5 = constants
    w_change = sum(hc._pair_change_cpu(*R[5], *moved[5], *R[i], box, inv_box, half2, 0.5, 1.0)
                   for i in range(len(R)) if i != 5)
    total = -0.5 * b5 * w_change  # u = b⁵(2/L)⁵ − ½b⁵w
    exact = helium.log_psi(moved, p) - helium.log_psi(R, p)
    assert abs(total - exact) < 1e-11 * max(1.0, abs(exact))


def test_minimum_image_forms_agree_inside_the_box():
    # the GPU kernels' minimum images (fold with a min or a select, the defaults; compare-and-select;
    # rint) give the same
    # |image| for every difference of two positions in [0, L), in float64 and in float32
    box = 14.3
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        a, b = (rng.uniform(0, box, 2000).astype(dtype) for _ in range(2))
        L, half, inv = dtype(box), dtype(0.5 * box), dtype(1.0 / box)
        d = a - b
        fold = np.array([hc._image(x, L, inv, half) for x in d])
        fold_select = np.array([hc._image_fold_select(x, L, inv, half) for x in d])
        select = np.array([hc._image_select(x, L, inv, half) for x in d])
        rint = d - L * np.rint(d * inv)
        # fold_select returns ±|image| (only squares are used)
        assert np.array_equal(fold, np.abs(select)) and np.array_equal(fold, np.abs(fold_select))
        # equal except exactly at |d| = L/2 (where the pair term is cut off anyway)
        away = np.abs(np.abs(d) - half) > 1e-5
        assert np.array_equal(select[away], rint[away])
        assert np.all(fold <= half * (1 + 1e-6))


def test_high_word_thresholds_move_pairs_only_where_w_is_flat():
    # the float64 GPU kernel compares high words (helium_chains._high_word_forms): |d| ≥ L/2 and
    # r² ≥ (L/2)² become |d| ≥ h and r² ≥ c with the low words of L/2 and (L/2)² zeroed. Mirror of the
    # integer compare on NumPy bits: it is that threshold, and the pairs it moves hardly change w
    def high(x):
        return (np.asarray(x, dtype=np.float64).view(np.uint64) >> np.uint64(32)).astype(np.uint32)

    def floor_to_high(x):
        return np.float64(x).view(np.uint64) & np.uint64(0xFFFFFFFF00000000)

    rng = np.random.default_rng(11)
    for n in (64, 1000, 40960):
        box = helium.Helium(n=n).box

        def w(r2):
            return hc._w_cut(r2, box, (0.5 * box) ** 2, 1.0)

        h = floor_to_high(0.5 * box).view(np.float64)
        c = floor_to_high((0.5 * box) ** 2).view(np.float64)
        assert 0 < 0.5 * box - h < 2.0 ** -20 * box and 0 < (0.5 * box) ** 2 - c < 2.0 ** -20 * box ** 2
        d = np.concatenate([rng.uniform(-box, box, 4000), h * (1 + np.array([-1e-16, 0.0, 1e-16]))])
        assert np.array_equal((high(d) & np.uint32(0x7FFFFFFF)) >= high(0.5 * box), np.abs(d) >= h)
        assert np.array_equal(high(d * d) < high((0.5 * box) ** 2), d * d < c)
        # a component folded at |d| = h lands beyond L/2 and r² = c is cut off: w(L/2) instead of w at h or
        # √c, where w is flat (w′(L/2) = 0), a change below 1e-11 of w(L/2)
        edge = w((0.5 * box) ** 2)
        assert abs(w(h * h) - edge) < 1e-11 * edge and abs(w(c) - edge) < 1e-11 * edge


def test_pair_term_forms_agree_and_vanish_beyond_the_cut_off():
    # w(r) = r⁻⁵ + (L − r)⁻⁵ by rsqrt (the default) and by square root and division, both with r²
    # clamped, for r from 0.8 Å to beyond L/2; every r past the cut-off gives the same bits, so pair
    # changes there are exactly 0, and u = b⁵(2/L)⁵ − ½b⁵w vanishes at L/2
    box, b = 14.3, 3.07
    box, inv_box, half2, b5 = hc.chain_constants(box, b)
    r = np.linspace(0.8, 0.8 * box, 3001)
    exact = np.minimum(r, box / 2) ** -5.0 + (box - np.minimum(r, box / 2)) ** -5.0
    for form in (hc._w_cut, hc._w_cut_divide):
        w = np.array([form(x * x, box, half2, 1.0) for x in r])
        assert np.max(np.abs(w - exact)) < 1e-13 * np.max(exact), form.__name__
        beyond = w[r >= box / 2]
        assert np.all(beyond == beyond[0])
        assert abs(b5 * (2 / box) ** 5 - 0.5 * b5 * beyond[0]) < 1e-15


def test_cpu_chain_is_reproducible_and_stays_in_the_box():
    system, positions, states = _start()
    a = hc.HeliumChainsCPU(system, positions, states, SIGMA)
    b = hc.HeliumChainsCPU(system, positions, states, SIGMA)
    a.generate(3)
    b.generate(1)
    b.generate(2)
    assert np.array_equal(a.positions(), b.positions()) and np.array_equal(a.states, b.states)
    assert a.positions().min() >= 0 and a.positions().max() < system.box
    assert 0.2 < a.acceptance < 0.7


def test_ideal_gas_chain_accepts_every_move():
    system, positions, states = _start(b=0.0)
    chains = hc.HeliumChainsCPU(system, positions, states, 2.0)
    chains.generate(2)
    assert chains.acceptance == 1.0


def test_cpu_chain_samples_the_same_distribution_as_the_vmc_driver():
    """⟨V⟩/N from the generation kernel and from qmckit.methods.vmc (brute sampler), N = 32: within 4σ."""
    from qmckit.stats import estimate

    system = helium.Helium(n=32, b=3.07)
    pos = system.initial_positions(8, np.random.default_rng(3))
    chains = hc.HeliumChainsCPU(system, pos, rng.seed_states(4, 8), hc.step_for_acceptance(0.37))
    chains.generate(100)
    samples = []
    for _ in range(600):
        chains.generate(1)
        samples.append(chains.energies()[:, 1].mean() / 32)
    mine = estimate(np.array(samples))

    from qmckit.runs import RunConfig, make_run

    run = make_run(RunConfig(system="helium", params={"n": 32}, sampler="brute", step=2.8, target_acceptance=0.37,
                             walkers=8, steps=600, equilibration=100, seed=5))
    theirs = run.run()["estimates"]["potential_energy_per_particle"]
    z = (mine.mean - theirs["mean"]) / math.hypot(mine.error, theirs["error"])
    assert abs(z) < 4, (mine, theirs)


def test_step_for_acceptance_reads_the_table():
    assert abs(hc.step_for_acceptance(0.377) - 0.80) < 1e-12
    assert hc.step_for_acceptance(0.30) > hc.step_for_acceptance(0.5)


def test_default_launch_settings_are_valid_blocks():
    # every default block is whole warps within CUDA's limit
    for single, memory, sizes in ((True, "shared", (64, 1000, 1952, 4096, 17000)), (False, "shared", (64, 512, 1000, 8000)),
                                  (True, "global", (40960,)), (False, "split", (10240,)), (False, "hybrid", (10240, 40960)),
                                  (True, "hybrid", (40960,)), (False, "global", (40960,))):
        for n in sizes:
            threads = hc.default_threads(n, single, memory)
            assert threads % 32 == 0 and 32 <= threads <= 1024
            assert hc.default_unroll(single, memory) in hc.UNROLLS


def test_bad_options_raise_clear_errors():
    system, positions, states = _start()
    with pytest.raises(ValueError, match="threads"):
        hc.HeliumChains(system, positions, states, SIGMA, threads=48)
    with pytest.raises(ValueError, match="memory must be auto, shared, split, hybrid, packed, global"):
        hc.HeliumChains(system, positions, states, SIGMA, memory="texture")
    with pytest.raises(ValueError, match=r"shared_atoms must be in \[1, 20\]"):
        hc.HeliumChains(system, positions, states, SIGMA, memory="hybrid", shared_atoms=21)
    with pytest.raises(ValueError, match="shared_atoms goes with memory hybrid"):
        hc.HeliumChains(system, positions, states, SIGMA, memory="shared", shared_atoms=10)
    with pytest.raises(ValueError, match="walkers must be a multiple of the 8 chains per block"):
        hc.HeliumChains(system, positions, states, SIGMA, threads=32, memory="packed", lanes=4)
    with pytest.raises(ValueError, match="lanes must be a power of two"):
        hc.HeliumChains(system, positions, states, SIGMA, memory="packed", lanes=3)


def test_auto_packs_small_systems_when_the_walkers_fill_whole_blocks(sim):
    assert [tuple(x) for x in sim["auto_layouts"]] == [("packed", 64, 8), ("shared", 32, None)]
    assert hc.auto_memory(512, 8) == "packed" and hc.auto_memory(1000, 8) == "shared"
    assert hc.auto_memory(512, 4) == "packed" and hc.auto_memory(1000, 4) == "shared"
    assert hc.default_lanes(64, single=False) == 8 and hc.default_lanes(64, single=True) == 4
    assert hc.default_lanes(512, single=False) == 32 and hc.default_lanes(512, single=True) == 16


def _banks(stride, itemsize, lanes):
    """Per wavefront (the warp for 4-byte loads, each half-warp for 8-byte ones): the banks (4-byte) or bank
    pairs (8-byte) of the 32 lanes' loads of atom i + l of their chains, chain g starting g·stride elements in."""
    period, width = (32, 32) if itemsize == 4 else (16, 16)
    lanes_ = [(t // lanes, t % lanes) for t in range(32)]
    return [sorted((stride * g + l) % period for g, l in lanes_[h:h + width]) for h in range(0, 32, width)]


@pytest.mark.parametrize("itemsize", [4, 8])
@pytest.mark.parametrize("n", [20, 64, 100, 128, 256, 512])
def test_packed_chains_read_their_atoms_from_distinct_banks(n, itemsize):
    """A warp's 32/G chains load atom i + l of their own coordinates in one instruction: with the chains 3N
    elements apart (3N a multiple of 32 words at N = 64 … 512) every chain's lane l hit the same bank, an
    8-way conflict at N = 64 with 4 lanes; packed_chain_stride pads the stride so that no two lanes of a
    wavefront share a bank."""
    for lanes in (2, 4, 8, 16, 32):
        stride = hc.packed_chain_stride(n, itemsize, lanes)
        assert 3 * n <= stride < 3 * n + 32
        for banks in _banks(stride, itemsize, lanes):
            assert len(set(banks)) == len(banks), (n, itemsize, lanes, banks)
    # the unpadded layout conflicts (the test can fail): 8 chains of 4 lanes at N = 64 share 4 banks
    if n == 64 and itemsize == 4:
        assert len(set(_banks(3 * n, itemsize, 4)[0])) == 4
    # the block's shared memory holds the padded chains
    threads, lanes = 64, 4
    draws = threads * (hc.DRAWS_PER_PROPOSAL + hc.RAW_PER_PROPOSAL) * 8
    assert hc.packed_shared_bytes(n, itemsize, threads, lanes) == \
        draws + (threads // lanes) * hc.packed_chain_stride(n, itemsize, lanes) * itemsize


def test_hybrid_kernel_keeps_as_many_atoms_in_shared_memory_as_fit():
    # float64 N = 10240: 9546 atoms (224 KB) in shared memory, the other 694 (16.3 KB) fit L1's 28 KB
    assert hc.hybrid_atoms(10240, 8) == 9546 and hc.hybrid_atoms(40960, 4) == 19093
    assert 3 * 8 * hc.hybrid_atoms(10240, 8) + hc.STATIC_SHARED_BYTES <= 227 * 1024
    assert hc.hybrid_atoms(500, 8) == 500


# --------------------------------------------------------------------------------------------
# GPU kernels: twins under the simulator
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["shared", "hybrid", "split_unroll4", "packed"])
def test_gpu_generation_equals_cpu_twin(sim, case):
    run = sim["runs"][case]
    assert run["accepted_gpu"] == run["accepted_cpu"]
    assert run["states_equal"]
    assert run["max_dpos"] < 1e-12


def test_float32_packed_chains_follow_the_float64_cpu_chains(sim):
    run = sim["runs"]["packed_f32"]
    assert run["accepted_gpu"] == run["accepted_cpu"]
    assert run["states_equal"]
    assert run["max_dpos"] < 1e-4  # Å: float32 positions in a box of ~14 Å


def test_gpu_float32_stays_close_to_float64(sim):
    assert sim["float32_max_dpos"] < 1e-4


def test_writeouts_hold_the_configuration_after_each_macroupdate(sim):
    assert max(sim["writeout_dpos"]) < 1e-12
    assert sim["packed_last_writeout_dpos"] < 1e-12


def test_gpu_energy_kernel_equals_cpu_estimators(sim):
    gpu, cpu = np.array(sim["energies_gpu"]), np.array(sim["energies_cpu"])
    assert np.allclose(gpu, cpu, rtol=1e-10, atol=1e-9)


def test_gpu_pair_histogram_counts_every_pair_inside_half_the_box(sim):
    system, positions, states = _start()
    chains = hc.HeliumChainsCPU(system, positions, states, SIGMA)
    chains.generate(MACRO)
    counts = np.zeros((WALKERS, 30))
    helium._pair_histograms(chains.positions(), system.box, 0.5 * system.box, counts)
    assert np.array_equal(np.array(sim["pair_counts_gpu"]), counts.sum(axis=0))
