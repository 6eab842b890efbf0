"""The CUDA boson sweep (qmckit.backends.cuda_bec) against its CPU twin, under numba's CUDA simulator.

numba reads NUMBA_ENABLE_CUDASIM when it is first imported, and other tests in this process import
numba without it. So the simulator work runs in ONE child process (this file run as a script with
NUMBA_ENABLE_CUDASIM=1) that prints its measurements as JSON; the tests below assert on them.

Twin test: the same walkers (positions and per-walker xoroshiro128+ states) go through
qmckit.methods.vmc.VMC (the CPU driver) and through CudaBosonSweeper, one layout and dtype at a
time; the kernels draw exactly the CPU's random numbers in the CPU's order, so positions, local
energies after every sweep, per-walker accepted counts and the final RNG states must agree:
float64 to round-off, float32 to its precision, decisions and streams exactly. The CPU accepted
counts are read off the positions (every particle gets one proposal per sweep, so a sweep's
accepted moves are the particles that moved). Sizes are tiny: the simulator runs every GPU thread
as a Python thread.
"""
from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from _simulator import simulator_results

MARKER = "CUDA_BEC_RESULTS="
cuda = None  # numba.cuda, imported only in the simulator child
N_SWEEPS = 3
LAM = math.sqrt(8.0)
# (n, a, alpha, walkers): interacting and non-interacting, plus the edge cases N = 1 and 2
SYSTEMS = {"free": (5, 0.0, 0.45, 4), "hard": (5, 0.4, 0.45, 4), "exact": (4, 0.0, 0.5, 3),
           "one": (1, 0.3, 0.45, 3), "two": (2, 0.5, 0.45, 3)}
# (system, sampler, layout, dtype, threads per block)
CASES = [(s, sampler, layout, dtype, tpb)
         for s in ("free", "hard") for sampler in ("drift", "brute")
         for layout, dtype, tpb in (("thread", "float64", 4), ("thread", "float32", 2), ("block", "float64", 4),
                                    ("block", "float32", 8))]
CASES += [("exact", "drift", "thread", "float32", 4), ("exact", "brute", "block", "float32", 2),
          ("one", "drift", "thread", "float64", 4), ("one", "drift", "block", "float64", 2),
          ("two", "drift", "thread", "float64", 4), ("two", "brute", "block", "float64", 4)]
DT, STEP = 0.1, 0.8


# --------------------------------------------------------------------------------------------
# child process (NUMBA_ENABLE_CUDASIM=1)
# --------------------------------------------------------------------------------------------
def _child() -> dict:
    import warnings

    # the simulator runs xoroshiro's wrapping uint64 arithmetic on numpy scalars, which warn
    warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)
    from qmckit import rng
    from qmckit.methods.vmc import VMC
    from qmckit.systems.bec import TrappedBosons
    from qmckit.walkers import Walkers
    from qmckit.backends import cuda_bec

    out = {"simulated": cuda_bec.simulated(), "available": cuda_bec.available(), "cases": [], "errors": {}}

    def make(key):
        n, a, alpha, W = SYSTEMS[key]
        system = TrappedBosons(n=n, lam=LAM, a=a, alpha=alpha)
        pos = system.initial_positions(W, np.random.default_rng(100 + n))
        return system, Walkers.from_positions(pos, 7 + n, system.cache_size())

    cpu_cache = {}

    def cpu(key, sampler):
        if (key, sampler) not in cpu_cache:
            system, walkers = make(key)
            w = walkers.copy()
            vmc = VMC(system, w, sampler=sampler, dt=DT, step=STEP)
            energies = np.empty((N_SWEEPS, w.n_walkers))
            accepted = np.zeros(w.n_walkers, dtype=np.int64)
            diffusion = np.zeros((2, w.n_walkers))
            for s in range(N_SWEEPS):
                before = w.positions.copy()
                energies[s] = vmc.sweep(1)[0][0]
                accepted += np.any(w.positions != before, axis=2).sum(axis=1)
                diffusion += vmc.last_diffusion
            cpu_cache[key, sampler] = (w, energies, accepted, diffusion)
        return cpu_cache[key, sampler]

    for key, sampler, layout, dtype, tpb in CASES:
        system, walkers = make(key)
        w_cpu, e_cpu, acc_cpu, diff_cpu = cpu(key, sampler)
        w = walkers.copy()
        sweeper = cuda_bec.CudaBosonSweeper(system, w, sampler=sampler, dt=DT, step=STEP, layout=layout,
                                            dtype=np.dtype(dtype), threads_per_block=tpb)
        sweeper.track_diffusion = True  # DMC's kernel variant (the split cases below run VMC's)
        energies, acceptance = sweeper.sweep(N_SWEEPS)
        sweeper.to_host()
        out["cases"].append({
            "case": [key, sampler, layout, dtype, tpb],
            "energy_scale": float(np.abs(e_cpu).max()),
            "d_energy": float(np.abs(energies - e_cpu).max()),
            "d_pos": float(np.abs(w.positions - w_cpu.positions).max()),
            "acc_gpu": sweeper.last_accepted.tolist(), "acc_cpu": acc_cpu.tolist(),
            "acceptance": acceptance,
            "rng_equal": bool(np.array_equal(w.rng_states, w_cpu.rng_states)),
            "energies": energies.tolist(),
            "cache_err": float(np.abs(w.caches - w_cpu.caches)[:, :3 * system.n_particles].max()),
            "diff_gpu": sweeper.last_diffusion.tolist(), "diff_cpu": diff_cpu.tolist(),
        })

    # continuity: sweeps split over calls (walkers stay on the device; the block layout rebuilds its
    # gradient cache per launch) and a measure=False call in between
    for layout in ("thread", "block"):
        system, walkers = make("hard")
        w_cpu, e_cpu, acc_cpu, _ = cpu("hard", "drift")
        w = walkers.copy()
        sweeper = cuda_bec.CudaBosonSweeper(system, w, sampler="drift", dt=DT, layout=layout, threads_per_block=4)
        e1, _ = sweeper.sweep(1, measure=False)
        acc1 = sweeper.last_accepted.copy()
        e2, _ = sweeper.sweep(N_SWEEPS - 1)
        sweeper.to_host()
        out["cases"].append({
            "case": ["hard", "drift", layout + "-split", "float64", 4],
            "energy_scale": float(np.abs(e_cpu).max()),
            "d_energy": float(np.abs(e2 - e_cpu[1:]).max()),
            "d_pos": float(np.abs(w.positions - w_cpu.positions).max()),
            "acc_gpu": (acc1 + sweeper.last_accepted).tolist(), "acc_cpu": acc_cpu.tolist(),
            "acceptance": None, "rng_equal": bool(np.array_equal(w.rng_states, w_cpu.rng_states)),
            "energies": [], "cache_err": 0.0, "e1_rows": len(e1), "diffusion": sweeper.last_diffusion,
        })

    # the device RNG twin: the same uniforms (bit for bit) and normals as qmckit.rng; the kernel must
    # see numba.cuda as a module global (the simulator swaps module globals, not locals)
    globals()["cuda"] = importlib.import_module("numba.cuda")
    from qmckit.backends import cuda_rng

    @cuda.jit
    def draw(states, uni, nor):
        w = cuda.grid(1)
        if w < states.shape[1]:
            st = cuda.local.array((1, 2), np.uint64)
            st[0, 0] = states[0, w]
            st[0, 1] = states[1, w]
            for k in range(uni.shape[1]):
                uni[w, k] = cuda_rng.uniform(st, 0)
            for k in range(nor.shape[1] // 2):
                z0, z1 = cuda_rng.normal_pair(st, 0)
                nor[w, 2 * k] = z0
                nor[w, 2 * k + 1] = z1
            states[0, w] = st[0, 0]
            states[1, w] = st[0, 1]

    states = rng.seed_states(5, 3)
    d_states = cuda.to_device(np.ascontiguousarray(states.T))
    uni = np.zeros((3, 5))
    nor = np.zeros((3, 4))
    draw[1, 4](d_states, uni, nor)
    cpu_uni = np.zeros((3, 5))
    cpu_nor = np.zeros((3, 4))
    ref = states.copy()
    for w in range(3):
        rng.uniforms(ref, w, cpu_uni[w])
    for w in range(3):
        for k in range(2):
            cpu_nor[w, 2 * k], cpu_nor[w, 2 * k + 1] = _cpu_normal_pair(ref, w)
    out["rng"] = {"uniform_equal": bool(np.array_equal(uni, cpu_uni)),
                  "normal_err": float(np.abs(nor - cpu_nor).max()),
                  "state_equal": bool(np.array_equal(d_states.copy_to_host().T, ref))}

    # argument checking (before anything touches the device)
    system, walkers = make("hard")
    bad = {"sampler": dict(sampler="metropolis"), "layout": dict(layout="warp"), "dt": dict(dt=0.0),
           "step": dict(step=-1.0), "dtype": dict(dtype=np.float16), "threads": dict(layout="block", threads_per_block=6)}
    for name, kwargs in bad.items():
        try:
            cuda_bec.CudaBosonSweeper(system, walkers.copy(), **kwargs)
            out["errors"][name] = None
        except ValueError as exc:
            out["errors"][name] = str(exc)
    big = TrappedBosons(n=800, lam=LAM, a=0.0, alpha=0.5)
    big_walkers = Walkers.from_positions(np.zeros((1, 800, 3)), 1, 0)
    try:
        cuda_bec.CudaBosonSweeper(big, big_walkers, layout="block", threads_per_block=128)
        out["errors"]["shared"] = None
    except ValueError as exc:
        out["errors"]["shared"] = str(exc)
    out["auto_layout"] = [cuda_bec.CudaBosonSweeper(system, walkers.copy()).layout,
                          cuda_bec.CudaBosonSweeper(big, big_walkers, dtype=np.float32).layout]
    return out


def _cpu_normal_pair(states, w):
    from qmckit import rng

    return rng.normal_pair(states, w)


# --------------------------------------------------------------------------------------------
# tests (parent process)
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sim():
    return simulator_results(__file__, MARKER, timeout=600)


def test_import_without_gpu():
    from qmckit.backends import cuda_bec

    assert cuda_bec.available() is False  # no GPU on development and CI machines
    sweeper_doc = cuda_bec.CudaBosonSweeper.__doc__
    assert "CpuSampler.sweep" in sweeper_doc


def test_import_without_numba_cuda():
    code = ("import sys; sys.modules['numba.cuda'] = None\n"
            "from qmckit.backends import cuda_bec\n"
            "assert cuda_bec.available() is False\n"
            "print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr


def test_simulator_is_not_a_gpu(sim):
    assert sim["simulated"] is True
    assert sim["available"] is False


def test_device_rng_is_qmckit_rng(sim):
    assert sim["rng"]["uniform_equal"]
    assert sim["rng"]["state_equal"]
    assert sim["rng"]["normal_err"] < 1e-15


def _ids(case):
    return "-".join(str(x) for x in case)


@pytest.mark.parametrize("index", range(len(CASES) + 2),
                         ids=[_ids(c) for c in CASES] + ["hard-drift-thread-split", "hard-drift-block-split"])
def test_twin_agrees_with_cpu_driver(sim, index):
    result = sim["cases"][index]
    key, sampler, layout, dtype, tpb = result["case"]
    scale = max(1.0, result["energy_scale"])
    # decisions and random streams: exactly the CPU's
    assert result["acc_gpu"] == result["acc_cpu"], result
    assert result["rng_equal"], result
    if dtype == "float64":
        assert result["d_energy"] < 1e-11 * scale, result
        assert result["d_pos"] < 1e-12, result
        assert result["cache_err"] < 1e-10, result  # to_host rebuilt the CPU caches
    else:
        assert result["d_energy"] < 1e-4 * scale, result
        assert result["d_pos"] < 1e-5, result
    assert 0 < sum(result["acc_gpu"])  # something moved
    if key == "exact":  # ψ_T is the exact ground state: E_L = N (2 + λ)/2 for every walker, every sweep
        n = SYSTEMS[key][0]
        assert np.allclose(result["energies"], n * (2 + LAM) / 2, rtol=1e-6, atol=0)
    if result["acceptance"] is not None:
        n, _, _, W = SYSTEMS[key]
        assert result["acceptance"] == pytest.approx(sum(result["acc_gpu"]) / (N_SWEEPS * n * W))
    if "diff_gpu" in result:  # the track_diffusion variant: the CPU's diffusion sums (DMC's τ_eff)
        gpu, cpu = np.array(result["diff_gpu"]), np.array(result["diff_cpu"])
        if sampler == "brute":
            assert not gpu.any() and not cpu.any()
        else:
            assert (cpu[0] > 0).all() and (cpu[1] <= cpu[0]).all()
            assert np.abs(gpu - cpu).max() < (1e-12 if dtype == "float64" else 1e-4) * cpu.max(), result
    else:
        assert result["diffusion"] is None  # VMC's kernels do not track


def test_interacting_cases_reject_some_moves(sim):
    """The hard-core cases must exercise rejections (the acceptance branch both ways)."""
    for result in sim["cases"]:
        if result["case"][0] == "hard":
            n, _, _, W = SYSTEMS["hard"]
            assert 0 < sum(result["acc_gpu"]) < N_SWEEPS * n * W, result


def test_split_sweeps_skip_measuring(sim):
    split = [r for r in sim["cases"] if r["case"][2].endswith("-split")]
    assert len(split) == 2 and all(r["e1_rows"] == 0 for r in split)


def test_argument_checks(sim):
    errors = sim["errors"]
    for name in ("sampler", "layout", "dt", "step", "dtype", "threads", "shared"):
        assert errors[name], name
    assert "shared memory" in errors["shared"]
    assert sim["auto_layout"] == ["thread", "block"]


if __name__ == "__main__":  # the simulator child
    print(MARKER + json.dumps(_child()))
