#!/usr/bin/env python
"""Atom throughput (He, Be, Ne) on one CPU core, all cores and the GPU next to study 002's Table 7.3,
and a side-by-side of qmckit with PyQMC 0.8.1 (H2O, cc-pVDZ, same walkers) on one core.

Modes
-----
``cpu``    He, Be, Ne with the thesis's trial function (hydrogenic Slater determinant × Padé–Jastrow,
           α/β of Table 7.1: He 1.839/0.348, Be 3.925/0.109, Ne 9.546/0.177;
           :class:`qmckit.systems.atom.Atom`), drift sampler (exact Metropolis–Hastings, drift cap
           on; Δt = 0.05, 0.02, 0.01 as ``benchmarks/atom_device.py``): MC cycles/s on ONE thread
           (``numba.set_num_threads(1)``) and on all numba threads, Table 7.3's numbers beside them.
``gpu``    the same on the GPU (:class:`qmckit.backends.cuda_atom.CudaAtomSweeper`, one thread per
           walker, timed with CUDA events as ``benchmarks/atom_device.py``'s ``time_gpu`` does) over
           walker counts and threads per block (128, the sweeper's default, 64 and 32: with ~170
           registers per thread the block size decides how many warps fit on an SM), AND the ``cpu``
           figures measured in the same run, so the results file has both; goal check Ne ≥ 5e7
           cycles/s at the best (W, threads per block). ``--smoke`` runs tiny sizes, e.g. under
           ``NUMBA_ENABLE_CUDASIM=1`` without a GPU.
``pyqmc``  qmckit against PyQMC 0.8.1 (``pip install pyqmc==0.8.1``; not a qmckit dependency) on the
           same molecule (H2O, geometry ``data/molecules/h2o.xyz``), the same basis (cc-pVDZ with
           Cartesian d functions, ``cart=True``, 25 functions), the same RHF orbitals (PySCF,
           conv_tol 1e-10), the same walker count and time step, each code in its own subprocess
           with ONE thread (NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS=1 set before numpy is imported):
           walker-steps/s and the VMC energy with its error bar, for
             (a) the bare RHF determinant (both must agree with E_RHF within errors) and
             (b) Slater–Jastrow with each code's default, unoptimised Jastrow:
                 qmckit: exp(Σ_{i<j} a r_ij/(1 + 4 r_ij) − Σ_{i,A} Z_A r_iA/(1 + 300 r_iA)),
                         a = ½ (antiparallel), ¼ (parallel): Padé e–e and e–n cusp factors
                         (``Molecule`` defaults β_ee = 4, β_en = 300 bohr⁻¹);
                 PyQMC:  ``generate_wf(mol, mf)``'s JastrowSpin: e–n and e–e terms built from
                         QWalk's CutoffCuspFunction (γ = 24, r_cut = 7.5 bohr) with the cusp
                         coefficients Z_A (e–n) and −¼/−½/−¼ (↑↑/↑↓/↓↓ e–e), plus PolyPade basis
                         functions whose coefficients are all zero until optimised.
           Plus qmckit's H2O cycles/s on all cores (per-core all-electron cycles).
``all``    ``cpu`` then ``pyqmc`` (the default; about 4–5 minutes on a 2-core VM).

Units and definitions
---------------------
MC cycle (atoms; study 002's Table 7.3 unit, notes 002 §3.5): ONE walker moving each of its N
    electrons once — N single-electron drift–diffusion proposals, each accepted or rejected — plus
    one local-energy evaluation. W walkers stepping once count as W cycles. cycles/s = W·sweeps/t.
walker-step (molecule, the PyQMC comparison): every electron of one walker proposed once (N = 10
    single-electron moves for H2O) plus one local energy — the same thing as an MC cycle, and what
    one step of ``pyqmc.method.mc.vmc_worker`` does per walker (its loop ``for e in range(nelec)``,
    then the accumulators). walker-steps/s = W·steps/t. Per core = with one thread.
Timing: every figure is the MEDIAN of ``--reps`` (default 5, at least 3; 3 for the PyQMC side's
    larger walker counts) timings after a warm-up (compilation, equilibration) that is not timed;
    each timing runs enough sweeps to take about ``--target`` seconds (CPU atoms, default 0.6 s;
    2 s or at least one 10-step block for the H2O side-by-side). Wall clock; the process CPU time is
    recorded alongside: cpu/wall below 1 for one thread (below the thread count for all threads)
    means other load took cores away. The atoms' one-thread and all-thread timings are
    interleaved round-robin so that such load hits both alike (after an all-thread timing the idle
    OpenMP worker spins briefly, which can lift a one-thread row's cpu/wall a little above 1).
    Walkers: atoms 256 on one thread, max(256, 128 × threads) on all threads; GPU 2^12…2^17 (Ne:
    4096…65536, finer around the 16384 where the H100 peaked in ``atom_gpu_h100_2026-11-22``).
PyQMC steps run as ``vmc(wf, configs, tstep=Δt, nblocks=k, nsteps_per_block=10,
    accumulators={"energy": …})`` (its default block length of 10; ``vmc_worker`` rebuilds the
    wave function at the start of each block, part of PyQMC's normal operation). The energy is
    PyQMC's own ``EnergyAccumulator`` (its mean and mean square per block). qmckit: ``VMC.sweep``.
    Both energies: walker-averaged block means of 10 steps, error bar by Flyvbjerg–Petersen
    blocking (``qmckit.stats.estimate``) of that series.
Goals (issue 4): Ne ≥ 5e7 cycles/s on one H100; qmckit ≥ 3× PyQMC's per-core throughput.

Output: ``atoms_throughput_<mode>_<tag>_<date>.md`` and ``.json`` (``all`` writes the ``cpu`` and the
``pyqmc`` files) in ``--out``, else ``$OUT`` if set (the device machine), else ``benchmarks/results``;
``<tag>`` is ``--tag`` or the host name. ``--quick``/``--smoke`` write nothing unless ``--out`` is given.

Usage
  python benchmarks/atoms_throughput.py                 # cpu + pyqmc, writes benchmarks/results/
  python benchmarks/atoms_throughput.py cpu             # atoms on the CPU only
  python benchmarks/atoms_throughput.py pyqmc --walkers 1000,4000
  python benchmarks/atoms_throughput.py gpu --tag h100  # on a GPU machine (writes to $OUT if set)
  NUMBA_ENABLE_CUDASIM=1 python benchmarks/atoms_throughput.py gpu --smoke   # no GPU needed
  python benchmarks/atoms_throughput.py cpu --quick     # seconds; writes nothing unless --out
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path
from _common import Budget, log  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
ONE_THREAD_ENV = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                  "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

ELEMENTS = ("He", "Be", "Ne")
# study 002, Table 7.3: 10³ MC cycles/s. C++ reference (FYS4411 fullcase.cpp) on ONE Phenom II 1090T core
# (3.2 GHz), OpenCL on all 6 cores of that CPU, OpenCL on a Radeon HD 5870; double precision, 5120 walkers
TABLE_7_3 = {"He": {"cpp_1core": 230, "opencl_cpu_6cores": 1426, "opencl_gpu": 15553},
             "Be": {"cpp_1core": 33, "opencl_cpu_6cores": 348, "opencl_gpu": 4056},
             "Ne": {"cpp_1core": 2.6, "opencl_cpu_6cores": 39, "opencl_gpu": 466}}
DT_ATOM = {"He": 0.05, "Be": 0.02, "Ne": 0.01}  # as benchmarks/atom_device.py
GOAL_NE_GPU = 5e7
GOAL_PYQMC_RATIO = 3.0
H2O_DT = 0.02
PYQMC_VERSION = "0.8.1"
SOURCES = ("qmckit/systems/atom.py", "qmckit/systems/molecule.py", "qmckit/systems/gaussian_basis.py",
           "qmckit/systems/slater.py", "qmckit/backends/cpu_kernels.py", "qmckit/backends/cuda_atom.py", "qmckit/rng.py")


def source_hashes() -> dict:
    out = {}
    for rel in SOURCES:
        try:
            out[rel] = hashlib.sha256((REPO / rel).read_bytes()).hexdigest()[:12]
        except OSError:
            out[rel] = None
    return out


def machine_info() -> dict:
    model, mhz = platform.processor() or "unknown", None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and (model == "unknown" or not mhz):
                model = line.split(":", 1)[1].strip()
            if line.startswith("cpu MHz") and mhz is None:
                mhz = float(line.split(":", 1)[1])
    except OSError:
        pass
    info = {"hostname": socket.gethostname(), "cpu_model": model, "cpu_mhz": mhz, "cores_online": os.cpu_count(),
            "cores_usable": len(os.sched_getaffinity(0)), "platform": platform.platform(),
            "python": platform.python_version(), "qmckit_sources_sha256": source_hashes()}
    try:
        import llvmlite
        import numba
        import numpy as np

        info.update(numpy=np.__version__, numba=numba.__version__, llvmlite=llvmlite.__version__,
                    numba_threads=numba.config.NUMBA_NUM_THREADS)
    except Exception:  # noqa: BLE001
        pass
    return info


def fmt(x, spec=".3g"):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return format(x, spec)


def sci(x):
    return fmt(x, ".3e").replace("e+0", "e").replace("e+", "e") if x is not None else "–"


# ============================================================================================
# atoms on the CPU
# ============================================================================================
def atom_pool(el, size, sweeps):
    """Equilibrated starting positions (size, N, 3) for an element (all threads, drift sampler)."""
    import numpy as np

    from qmckit.methods.vmc import VMC
    from qmckit.systems.atom import Atom
    from qmckit.walkers import Walkers

    system = Atom(element=el)
    walkers = Walkers.from_positions(system.initial_positions(size, np.random.default_rng(1000 + system.z)),
                                     77 + system.z, system.cache_size())
    VMC(system, walkers, dt=DT_ATOM[el]).sweep(sweeps, measure=False)
    return walkers.positions.copy()


def tile_walkers(pool, W, seed, cache_size):
    """W walkers tiled from ``pool`` with independent raw 64-bit xoroshiro streams (fast for large W)."""
    import numpy as np

    from qmckit.walkers import Walkers

    positions = np.ascontiguousarray(pool[np.arange(W) % len(pool)])
    states = np.random.default_rng(seed).bit_generator.random_raw(size=(W, 2)).astype(np.uint64)
    states[:, 0] |= np.uint64(1)  # never the all-zero state
    return Walkers(positions, np.zeros((W, cache_size)), np.ones(W), states)


def time_atom_cpu(el, cases, pool, reps, target_s):
    """cycles/s of ``VMC.sweep(n, measure=True)`` for one element, one row per (threads, W) in ``cases``.

    Each case gets its own walkers and sweep count (calibrated to ≈ target_s); the ``reps`` timings of
    all cases are interleaved round-robin (numba.set_num_threads before each), so that load from
    elsewhere on the host hits them alike. Median of the timings."""
    import numba
    import numpy as np

    from qmckit.methods.vmc import VMC
    from qmckit.systems.atom import Atom

    system = Atom(element=el)
    N = system.n_particles
    runs = []
    for threads, W in cases:
        numba.set_num_threads(threads)
        vmc = VMC(system, tile_walkers(pool, W, 700 + W + threads, system.cache_size()), dt=DT_ATOM[el])
        vmc.sweep(2)  # warm-up (compiled already by the pool; refills the caches)
        n = 1
        while True:  # calibrate: grow until one call takes ≥ target/8
            t0 = time.perf_counter()
            vmc.sweep(n)
            t = time.perf_counter() - t0
            if t >= target_s / 8 or n >= 1 << 16:
                break
            n *= 4
        runs.append({"threads": threads, "W": W, "vmc": vmc, "n": max(1, round(n * target_s / max(t, 1e-9))),
                     "times": [], "cpus": [], "accs": [], "means": []})
    for _ in range(reps):
        for run in runs:
            numba.set_num_threads(run["threads"])
            c0, t0 = time.process_time(), time.perf_counter()
            energies, acc = run["vmc"].sweep(run["n"])
            run["times"].append(time.perf_counter() - t0)
            run["cpus"].append(time.process_time() - c0)
            run["accs"].append(float(acc))
            run["means"].append(float(np.mean(energies)))
    rows = []
    for run in runs:
        times, W, threads = run["times"], run["W"], run["threads"]
        med = float(np.median(times))
        cycles = W * run["n"] / med
        rows.append({"element": el, "N": N, "W": W, "threads": threads, "dt": DT_ATOM[el],
                     "sweeps_per_timing": run["n"], "times_s": times, "cpu_times_s": run["cpus"], "median_s": med,
                     "min_s": min(times), "max_s": max(times),
                     "cpu_over_wall": float(np.median(np.array(run["cpus"]) / np.array(times))),
                     "cycles_per_s": cycles, "cycles_per_s_per_thread": cycles / threads, "moves_per_s": cycles * N,
                     "acceptance": float(np.mean(run["accs"])), "mean_E_L": float(np.mean(run["means"]))})
    return rows


def atom_cpu(args, budget, report):
    import numba

    all_threads = numba.config.NUMBA_NUM_THREADS
    report["cpu_threads_all"] = all_threads
    rows = report.setdefault("atoms_cpu", [])
    pools = report.setdefault("_pools", {})
    log(f"\n## atoms on the CPU: one thread and {all_threads} threads (timings interleaved), drift sampler, "
        f"measure=True, median of {args.reps} × ≈{args.target} s")
    cases = [(1, args.walkers_one)]
    if all_threads > 1:
        cases.append((all_threads, max(args.walkers_one, args.walkers_per_thread * all_threads)))
    for el in ELEMENTS:
        if budget.left() < 2 * len(cases) * args.target * (args.reps + 2):
            rows += [{"element": el, "W": W, "threads": threads, "skipped": "budget"} for threads, W in cases]
            log(f"[cpu] {el}: skipped (budget)")
            continue
        t0 = time.perf_counter()
        numba.set_num_threads(all_threads)
        try:
            pools[el] = atom_pool(el, args.pool, args.pool_sweeps)
            log(f"[pool] {el}: {args.pool} walkers × {args.pool_sweeps} sweeps, {time.perf_counter() - t0:.1f} s "
                "(includes compiling the first time)")
            new = time_atom_cpu(el, cases, pools[el], args.reps, args.target)
        except Exception as exc:  # noqa: BLE001
            log(f"[cpu] {el}: FAILED {exc!r}")
            traceback.print_exc()
            rows.append({"element": el, "error": f"{type(exc).__name__}: {exc}"})
            continue
        finally:
            numba.set_num_threads(all_threads)
        for row in new:
            log(f"[cpu] {el} W={row['W']:5d} threads={row['threads']:3d}: {row['cycles_per_s']:.3e} cycles/s "
                f"({row['cycles_per_s_per_thread']:.3e} per thread), median {row['median_s']:.2f} s × {args.reps} "
                f"({row['sweeps_per_timing']} sweeps), cpu/wall {row['cpu_over_wall']:.2f}, "
                f"acc {row['acceptance']:.3f}, <E_L> {row['mean_E_L']:.3f}")
        rows += new


# ============================================================================================
# atoms on the GPU
# ============================================================================================
def time_gpu_case(cuda, el, W, threads, pool, reps, target_s, case_budget, max_energy_bytes=256 * 2**20):
    """GPU cycles/s of one (element, walkers, threads per block): ``atom_device.time_gpu``'s method (CUDA
    events around one launch of n sweeps, n calibrated to ≈ target_s, median of ``reps``) with the
    threads per block as a parameter, and with the energy arrays allocated before the timed launches
    (``launch`` allocates one per new sweep count; inside the events that cudaMalloc once inflated the
    calibration of the first case to a single sweep)."""
    import numpy as np

    from qmckit.backends import cuda_atom
    from qmckit.systems.atom import Atom

    t_case = time.perf_counter()
    system = Atom(element=el)
    N = system.n_particles
    sweeper = cuda_atom.CudaAtomSweeper(system, tile_walkers(pool, W, 900 + W, 0), dt=DT_ATOM[el],
                                        threads_per_block=threads)
    simulated = cuda_atom.simulated()

    def timed(n_sweeps):
        if simulated:  # events carry no time in the simulator
            t0 = time.perf_counter()
            sweeper.launch(n_sweeps)
            cuda.synchronize()
            return time.perf_counter() - t0
        start, end = cuda.event(), cuda.event()
        start.record()
        sweeper.launch(n_sweeps)
        end.record()
        end.synchronize()
        return cuda.event_elapsed_time(start, end) / 1e3

    t0 = time.perf_counter()
    sweeper.launch(1)  # compiles on first use
    cuda.synchronize()
    first = time.perf_counter() - t0
    sweeper.launch(2)  # allocates the 2-sweep energy array outside the timing
    cuda.synchronize()
    per_sweep = max(timed(2) / 2, 1e-7)
    n_max = max(1, int(max_energy_bytes // (W * 8)))
    n_sweeps = int(min(n_max, max(1, round(target_s / per_sweep))))
    n_sweeps = int(max(1, min(n_sweeps, (case_budget - (time.perf_counter() - t_case)) / ((reps + 1.5) * per_sweep))))
    sweeper.launch(n_sweeps)  # allocation and warm-up, not timed
    cuda.synchronize()
    times = [timed(n_sweeps) for _ in range(reps)]
    energies = sweeper.launch(1).copy_to_host()[0, :W]  # the device block has capacity columns beyond W
    acceptance = float(sweeper._accepted.copy_to_host()[:W].sum() / (W * N))
    med = float(np.median(times))
    cycles = W * n_sweeps / med
    row = {"element": el, "N": N, "W": W, "threads": sweeper.threads, "dt": DT_ATOM[el], "sweeps_per_timing": n_sweeps,
           "times_s": [float(t) for t in times], "median_s": med, "min_s": float(min(times)), "max_s": float(max(times)),
           "cycles_per_s": cycles, "moves_per_s": cycles * N, "acceptance": acceptance,
           "mean_E_L": float(np.mean(energies)), "first_launch_s": round(first, 3),
           "case_seconds": round(time.perf_counter() - t_case, 2)}
    try:
        row["registers"] = None if simulated else sweeper.registers()["sweep"]
    except Exception:  # noqa: BLE001
        row["registers"] = None
    return row


def atom_gpu(args, budget, report):
    """GPU cycles/s per element over walker counts and threads per block (CUDA events)."""
    sys.path.insert(0, str(BENCH))
    from bec_throughput import device_info  # benchmarks/bec_throughput.py: device attributes and FP64 peak

    from qmckit.backends import cuda_atom

    try:
        from numba import cuda
    except Exception as exc:  # noqa: BLE001
        report["device"] = {"error": repr(exc)}
        log(f"# numba.cuda unavailable: {exc!r}")
        return
    try:
        report["device"] = device_info(cuda)
    except Exception as exc:  # noqa: BLE001
        report["device"] = {"simulated": cuda_atom.simulated(), "name": None, "errors": [repr(exc)],
                            "peak_fp64_tflops": 33.5, "peak_source": "H100 SXM nominal"}
    dev = report["device"]
    dev["cuda_atom_available"] = cuda_atom.available()
    try:
        import importlib.metadata as md

        dev["numba_cuda"] = md.version("numba-cuda")
    except Exception:  # noqa: BLE001
        pass
    log(f"\n## atoms on the GPU: {dev.get('name')} (cc {dev.get('compute_capability')}, {dev.get('sms')} SMs), "
        f"simulated={dev.get('simulated')}, threads per block {args.gpu_threads}, median of {args.reps} CUDA-event "
        f"timings of ≈{args.gpu_target} s")
    if not dev.get("simulated") and not cuda_atom.available():
        log("# WARNING: no usable GPU; the GPU cases will fail and be reported as errors")
    rows = report.setdefault("atoms_gpu", [])
    pools = report.get("_pools", {})
    warmed = False
    for el in ("Ne", "Be", "He"):  # Ne first: the element of the goal, in case the budget runs out
        if el not in pools:
            try:
                pools[el] = atom_pool(el, args.pool, args.pool_sweeps)
            except Exception as exc:  # noqa: BLE001
                rows.append({"element": el, "error": f"pool: {type(exc).__name__}: {exc}"})
                continue
        if not warmed:  # compile the kernel and touch the device once, discarded
            try:
                time_gpu_case(cuda, el, args.gpu_sizes[0], args.gpu_threads[0], pools[el], 1, args.gpu_target / 4,
                              args.gpu_case_budget)
            except Exception as exc:  # noqa: BLE001
                log(f"[gpu] warm-up FAILED {exc!r}")
                traceback.print_exc()
            warmed = True
        sizes = args.gpu_sizes_ne if el == "Ne" else args.gpu_sizes
        for W in sizes:
            for threads in args.gpu_threads:
                if budget.left() < args.gpu_case_budget + 10:
                    rows.append({"element": el, "W": W, "threads": threads, "skipped": "budget"})
                    log(f"[gpu] {el} W={W} B={threads}: skipped (budget)")
                    continue
                try:
                    row = time_gpu_case(cuda, el, W, threads, pools[el], args.reps, args.gpu_target,
                                        args.gpu_case_budget)
                    log(f"[gpu] {el} W={W:6d} B={threads:3d} regs={row.get('registers')}: {row['cycles_per_s']:.3e} "
                        f"cycles/s, median {1e3 * row['median_s']:.2f} ms ({row['sweeps_per_timing']} sweeps), "
                        f"acc {row['acceptance']:.3f}, <E_L> {row['mean_E_L']:.3f}")
                except Exception as exc:  # noqa: BLE001
                    row = {"element": el, "W": W, "threads": threads, "error": f"{type(exc).__name__}: {exc}"}
                    log(f"[gpu] {el} W={W} B={threads}: FAILED {row['error']}")
                    traceback.print_exc()
                rows.append(row)
    order = {el: k for k, el in enumerate(ELEMENTS)}
    rows.sort(key=lambda r: (order.get(r.get("element"), 9), r.get("W", 0), -(r.get("threads") or 0)))


# ============================================================================================
# PyQMC side-by-side (each measurement in its own single-threaded subprocess)
# ============================================================================================
class _EnergyMoments:
    """PyQMC accumulator: PyQMC's own EnergyAccumulator, reduced to the walker mean of E_L and E_L²."""

    def __init__(self, mol):
        from pyqmc.api import EnergyAccumulator

        self.acc = EnergyAccumulator(mol)

    def avg(self, configs, wf):
        import numpy as np

        e = np.asarray(self.acc(configs, wf)["total"]).real
        return {"total": float(np.mean(e)), "total2": float(np.mean(e * e))}


def _h2o_atoms():
    from qmckit.systems.molecule import DATA_DIR, read_xyz

    return read_xyz(DATA_DIR / "h2o.xyz")


def worker(spec: dict) -> dict:
    """One measurement (runs in a subprocess; the parent set the thread variables)."""
    import numba
    import numpy as np

    code, wf_kind, W, dt = spec["code"], spec["wf"], int(spec["walkers"]), float(spec["dt"])
    block = int(spec["block"])
    out = {"spec": spec, "numba_threads": numba.get_num_threads(),
           "env": {k: os.environ.get(k) for k in ONE_THREAD_ENV}}
    try:
        from threadpoolctl import threadpool_info

        out["threadpools"] = [(p.get("internal_api"), p.get("num_threads")) for p in threadpool_info()]
    except Exception:  # noqa: BLE001
        pass
    t_setup = time.perf_counter()
    if code == "qmckit":
        from qmckit.methods.vmc import VMC
        from qmckit.systems.molecule import Molecule
        from qmckit.walkers import Walkers

        system = Molecule(xyz="h2o", basis="cc-pvdz", jastrow=wf_kind == "sj")
        out.update(e_rhf=system.rhf_energy, n_basis=system.n_basis, n_electrons=system.n_particles,
                   wavefunction=repr(system))
        walkers = Walkers.from_positions(system.initial_positions(W, np.random.default_rng(spec["seed"])),
                                         spec["seed"], system.cache_size())
        vmc = VMC(system, walkers, dt=dt)
        vmc.sweep(1, measure=True)  # compile (or load the numba cache)
        out["setup_s"] = time.perf_counter() - t_setup

        def equilibrate(n):
            return vmc.sweep(n, measure=False)[1]

        def measure(n):
            """n steps with the energy every step → (block means of E_L, of E_L², acceptance)."""
            energies, acc = vmc.sweep(n, measure=True)
            m1 = energies.mean(axis=1).reshape(-1, block).mean(axis=1)
            m2 = (energies * energies).mean(axis=1).reshape(-1, block).mean(axis=1)
            return m1, m2, acc
    else:
        import importlib.metadata as md

        import pyqmc.api as pyq
        from pyscf import scf

        from qmckit.systems.molecule import build_mole

        out["pyqmc"] = md.version("pyqmc")
        mol = build_mole(_h2o_atoms(), "cc-pvdz")  # cart=True, Å: exactly qmckit's Mole
        mf = scf.RHF(mol)
        mf.verbose = 0
        mf.conv_tol = 1e-10
        out["e_rhf"] = float(mf.kernel())
        out.update(n_basis=int(mol.nao_nr()), n_electrons=int(sum(mol.nelec)), cart=bool(mol.cart))
        if wf_kind == "sj":
            wf, _ = pyq.generate_wf(mol, mf)
            out["wavefunction"] = "MultiplyWF(Slater, JastrowSpin) from pyqmc.api.generate_wf(mol, mf)"
        else:
            wf, _ = pyq.generate_slater(mol, mf)
            out["wavefunction"] = "Slater from pyqmc.api.generate_slater(mol, mf)"
        np.random.seed(spec["seed"])
        state = {"configs": pyq.initial_guess(mol, W)}
        accumulators = {"energy": _EnergyMoments(mol)}
        out["setup_s"] = time.perf_counter() - t_setup

        def equilibrate(n):
            df, state["configs"] = pyq.vmc(wf, state["configs"], tstep=dt, nblocks=max(1, n // block),
                                           nsteps_per_block=block, accumulators={})
            return float(np.mean(df["acceptance"]))

        def measure(n):
            df, state["configs"] = pyq.vmc(wf, state["configs"], tstep=dt, nblocks=n // block,
                                           nsteps_per_block=block, accumulators=accumulators)
            return (np.asarray(df["energytotal"], dtype=float), np.asarray(df["energytotal2"], dtype=float),
                    float(np.mean(df["acceptance"])))

    # equilibration (timed separately, no energies)
    t0 = time.perf_counter()
    out["equilibration_acceptance"] = equilibrate(int(spec["equil"]))
    out["equilibration_s"] = time.perf_counter() - t0
    # calibration: one block with energies
    t0 = time.perf_counter()
    m1, m2, _ = measure(block)
    t_block = time.perf_counter() - t0
    series1, series2 = [m1], [m2]
    steps = max(block, int(round(spec["target_s"] / max(t_block, 1e-9))) * block)
    out["steps_per_timing"] = steps
    times, cpus, accs = [], [], []
    for _ in range(int(spec["reps"])):
        c0, t0 = time.process_time(), time.perf_counter()
        m1, m2, acc = measure(steps)
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        series1.append(m1)
        series2.append(m2)
        accs.append(acc)
    extra = int(spec["energy_steps"]) - int(spec["reps"]) * steps - block
    t0 = time.perf_counter()
    if extra >= block:
        m1, m2, acc = measure(extra // block * block)
        series1.append(m1)
        series2.append(m2)
    out["extra_energy_steps"] = max(0, extra // block * block)
    out["extra_energy_s"] = time.perf_counter() - t0
    e1, e2 = np.concatenate(series1), np.concatenate(series2)
    med = float(np.median(times))
    out.update(times_s=times, cpu_times_s=cpus, median_s=med,
               cpu_over_wall=float(np.median(np.array(cpus) / np.array(times))),
               walker_steps_per_s=W * steps / med, walker_steps_per_cpu_s=W * steps / float(np.median(cpus)),
               acceptance=float(np.mean(accs)), energy_blocks=e1.tolist(), energy2_blocks=e2.tolist(),
               energy_steps=int(e1.size * block))
    return out


def run_worker(spec: dict, one_thread: bool, timeout: float) -> dict:
    env = dict(os.environ)
    if one_thread:
        env.update({k: "1" for k in ONE_THREAD_ENV})
    else:
        for k in ONE_THREAD_ENV:
            env.pop(k, None)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, str(Path(__file__).resolve()), "_worker", json.dumps(spec)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return {"spec": spec, "error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
            result["process_wall_s"] = wall
            return result
    tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-8:]
    return {"spec": spec, "error": f"exit {proc.returncode}: " + " | ".join(tail)}


def summarise(result: dict) -> dict:
    """Energy estimate of a worker's block means (E_L and variance of E_L)."""
    import numpy as np

    from qmckit.stats import estimate

    if "energy_blocks" not in result:
        return result
    e1, e2 = np.array(result["energy_blocks"]), np.array(result["energy2_blocks"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = estimate(e1)
    result["energy"] = {"mean": est.mean, "error": est.error, "tau_blocks": est.tau, "n_blocks": int(e1.size)}
    result["variance"] = float(np.mean(e2) - np.mean(e1) ** 2)
    result["pull_vs_rhf"] = (est.mean - result["e_rhf"]) / est.error if est.error > 0 else None
    return result


def pyqmc_mode(args, budget, report):
    try:
        import importlib.metadata as md

        version = md.version("pyqmc")
    except Exception:  # noqa: BLE001
        version = None
    report["pyqmc_version"] = version
    if version is None:
        log(f"# PyQMC is not installed: pip install pyqmc=={PYQMC_VERSION} (not a qmckit dependency); "
            "skipping the side-by-side")
        report["pyqmc_error"] = "pyqmc not installed"
        return
    if version != PYQMC_VERSION:
        log(f"# WARNING: PyQMC {version} installed; this comparison was set up for {PYQMC_VERSION}")
    rows = report.setdefault("pyqmc", [])
    walker_counts = args.walkers
    log(f"\n## H2O/cc-pVDZ: qmckit vs PyQMC {version}, one thread each (subprocesses), Δt = {args.dt}, "
        f"walkers {walker_counts}, median of {args.reps} × ≈{args.pq_target} s")
    for wf in ("bare", "sj"):
        for k, W in enumerate(walker_counts):
            full = k == 0  # energies (long) at the first walker count only
            for code in ("qmckit", "pyqmc"):
                if budget.left() < 20:
                    rows.append({"spec": {"code": code, "wf": wf, "walkers": W}, "skipped": "budget"})
                    log(f"[{code} {wf} W={W}] skipped (budget)")
                    continue
                spec = {"code": code, "wf": wf, "walkers": W, "dt": args.dt, "block": 10, "seed": 2007 + W,
                        "equil": args.equil if full else args.equil_short,
                        "reps": args.reps if full else max(3, args.reps // 2),
                        "target_s": args.pq_target, "energy_steps": args.energy_steps[wf] if full else 0}
                result = summarise(run_worker(spec, True, timeout=max(60.0, budget.left())))
                rows.append(result)
                if "error" in result:
                    log(f"[{code} {wf} W={W}] FAILED: {result['error']}")
                    continue
                e = result.get("energy", {})
                log(f"[{code:6s} {wf:4s} W={W:5d}] {result['walker_steps_per_s']:9.0f} walker-steps/s "
                    f"(per CPU-s {result['walker_steps_per_cpu_s']:.0f}, cpu/wall {result['cpu_over_wall']:.2f}), "
                    f"{result['steps_per_timing']} steps/timing, acc {result['acceptance']:.3f}; "
                    f"E = {e.get('mean', float('nan')):.4f} ± {e.get('error', float('nan')):.4f} over "
                    f"{result['energy_steps']} steps, Var {result.get('variance', float('nan')):.2f}; "
                    f"E_RHF {result['e_rhf']:.6f}; numba threads {result['numba_threads']}; "
                    f"process {result['process_wall_s']:.0f} s")
    # qmckit's H2O all-electron cycles on all cores (per-core figure = total / threads)
    if budget.left() > 20:
        spec = {"code": "qmckit", "wf": "sj", "walkers": walker_counts[0], "dt": args.dt, "block": 10, "seed": 99,
                "equil": args.equil_short, "reps": args.reps, "target_s": args.pq_target, "energy_steps": 0}
        result = summarise(run_worker(spec, False, timeout=max(60.0, budget.left())))
        result["all_threads"] = True
        rows.append(result)
        if "error" not in result:
            log(f"[qmckit sj   W={walker_counts[0]:5d}, all {result['numba_threads']} threads] "
                f"{result['walker_steps_per_s']:.0f} walker-steps/s = "
                f"{result['walker_steps_per_s'] / result['numba_threads']:.0f} per thread")


# ============================================================================================
# reporting
# ============================================================================================
def _best(rows, el, **match):
    rows = [r for r in rows if r.get("element") == el and "cycles_per_s" in r
            and all(r.get(k) == v for k, v in match.items())]
    return max(rows, key=lambda r: r["cycles_per_s"]) if rows else None


def header_lines(report, title):
    m = report["machine"]
    return [f"# {title} — {report['date']} on {m['hostname']}", "",
            f"- machine: {m['cpu_model']} ({m['cpu_mhz']} MHz reported), {m['cores_online']} cores online "
            f"({m['cores_usable']} usable), `{m['hostname']}`, {m['platform']}",
            f"- versions: Python {m['python']}, numpy {m.get('numpy')}, numba {m.get('numba')} (llvmlite "
            f"{m.get('llvmlite')}), numba threads {m.get('numba_threads')}"
            + (f", PyQMC {report['pyqmc_version']}" if report.get("pyqmc_version") else ""),
            "- qmckit sources (sha256, 12 hex, as read at start): "
            + ", ".join(f"`{k.split('/')[-1]}` {v}" for k, v in m["qmckit_sources_sha256"].items()),
            f"- command: `{report['command']}`; total wall time {report.get('wall_s', float('nan')):.0f} s; "
            f"load average before/after {report['loadavg_before']} / {report.get('loadavg_after')}", ""]


def atoms_markdown(report) -> list:
    cpu = report.get("atoms_cpu", [])
    gpu = report.get("atoms_gpu", [])
    all_threads = report.get("cpu_threads_all")
    out = ["## Atoms He, Be, Ne (study 002's trial function, Table 7.1 α/β), drift sampler, float64", "",
           "One MC cycle = one walker moving each of its N electrons once (N single-electron drift–diffusion "
           "proposals with exact Metropolis–Hastings accept/reject) plus one local energy — Table 7.3's unit "
           f"(notes 002 §3.5). Δt = {DT_ATOM}. Medians of {report['reps']} timings after warm-up.", ""]
    if cpu:
        out += ["### CPU (numba, parallel over walkers)", "",
                "| atom | N | W | threads | cycles/s | per thread | moves/s | median s (min–max) | sweeps/timing "
                "| cpu/wall | acc | ⟨E_L⟩ |",
                "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
        for r in cpu:
            if "cycles_per_s" in r:
                out.append(f"| {r['element']} | {r['N']} | {r['W']} | {r['threads']} | {sci(r['cycles_per_s'])} | "
                           f"{sci(r['cycles_per_s_per_thread'])} | {sci(r['moves_per_s'])} | {r['median_s']:.2f} "
                           f"({r['min_s']:.2f}–{r['max_s']:.2f}) | {r['sweeps_per_timing']} | {r['cpu_over_wall']:.2f} | "
                           f"{r['acceptance']:.3f} | {r['mean_E_L']:.3f} |")
            else:
                out.append(f"| {r['element']} | | {r.get('W', '')} | {r.get('threads', '')} | "
                           f"{r.get('error') or r.get('skipped')} | | | | | | | |")
        out.append("")
    if gpu:
        out += ["### GPU (one thread per walker, CUDA events around one launch of n sweeps, as `atom_device.py`)", "",
                "| atom | N | W | threads/block | regs | cycles/s | median ms (min–max) | sweeps/timing | acc | ⟨E_L⟩ |",
                "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
        for r in gpu:
            if "cycles_per_s" in r:
                best = r is _best(gpu, r["element"])
                rate = f"**{sci(r['cycles_per_s'])}**" if best else sci(r["cycles_per_s"])
                out.append(f"| {r['element']} | {r['N']} | {r['W']} | {r['threads']} | {fmt(r.get('registers'), 'd')} | "
                           f"{rate} | {1e3 * r['median_s']:.2f} ({1e3 * r['min_s']:.2f}–"
                           f"{1e3 * r['max_s']:.2f}) | {r['sweeps_per_timing']} | {r['acceptance']:.3f} | "
                           f"{r['mean_E_L']:.3f} |")
            else:
                out.append(f"| {r['element']} | | {r.get('W', '')} | {r.get('threads', '')} | | "
                           f"{r.get('error') or r.get('skipped')} | | | | |")
        out += ["", "Bold: the best (W, threads per block) of each atom. Registers per thread fix how many warps fit on an "
                "SM (65536 registers; allocated per warp), and whole blocks must fit: fewer threads per block can fit "
                "more warps when the register count is high.", ""]
    starved = [r for r in cpu if "cpu_over_wall" in r and r["threads"] > 1 and r["cpu_over_wall"] < 0.75 * r["threads"]]
    if starved:
        out += [f"**Note:** the {all_threads}-thread timings ran at cpu/wall "
                + ", ".join(f"{r['cpu_over_wall']:.2f}" for r in starved)
                + f" instead of ≈ {all_threads}: other load on the host held cores, so those rows understate what the "
                "code does on an idle machine (time slicing did not touch the one-thread rows while their cpu/wall is ≈ 1).", ""]
    out += ["### Next to study 002's Table 7.3 (10³ MC cycles/s; 2011 hardware: one Phenom II 1090T core running "
            "the C++ reference, OpenCL on its 6 cores, OpenCL on a Radeon HD 5870)", "",
            f"| atom | qmckit 1 thread | qmckit {all_threads} threads (per thread) | qmckit GPU (best W, threads/block) | "
            "Table 7.3 C++ 1 core | Table 7.3 OpenCL CPU 6 cores | Table 7.3 OpenCL GPU | "
            "1 thread / C++ 1 core | GPU / OpenCL GPU |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for el in ELEMENTS:
        t = TABLE_7_3[el]
        one = _best(cpu, el, threads=1)
        par = _best(cpu, el, threads=all_threads) if all_threads and all_threads > 1 else None
        g = _best(gpu, el)
        k = 1e3
        out.append(
            f"| {el} | {fmt(one and one['cycles_per_s'] / k, '.4g')} | "
            + (f"{par['cycles_per_s'] / k:.4g} ({par['cycles_per_s_per_thread'] / k:.4g})" if par else "–")
            + f" | {(sci(g['cycles_per_s'] / k) + ' (W ' + str(g['W']) + ', B ' + str(g['threads']) + ')') if g else '–'} | "
            f"{t['cpp_1core']} | {t['opencl_cpu_6cores']} | {t['opencl_gpu']} | "
            f"{fmt(one and one['cycles_per_s'] / k / t['cpp_1core'], '.1f')}× | "
            f"{fmt(g and g['cycles_per_s'] / k / t['opencl_gpu'], '.0f')}{'×' if g else ''} |")
    out.append("")
    if gpu or report.get("mode") == "gpu":
        g = _best(gpu, "Ne")
        ok = g is not None and g["cycles_per_s"] >= GOAL_NE_GPU
        simulated = (report.get("device") or {}).get("simulated")
        out += [f"Goal Ne ≥ {GOAL_NE_GPU:.0e} cycles/s on one H100: "
                + (f"best {g['cycles_per_s']:.3e} at W = {g['W']}, {g['threads']} threads per block "
                   f"({g['cycles_per_s'] / GOAL_NE_GPU:.0%} of the goal) → **{'met' if ok else 'NOT met'}**"
                   if g else "no Ne GPU figure") + (" (simulator: not a measurement)" if simulated else "")
                + f"; device: {(report.get('device') or {}).get('name')}.", ""]
        par_ne = _best(cpu, "Ne", threads=all_threads)
        if g and par_ne:
            ratio = g["cycles_per_s"] / par_ne["cycles_per_s"]
            out += [f"Ne GPU / all {all_threads} CPU threads of this host: {ratio:.0f}×.", ""]
    return out


def pyqmc_markdown(report) -> list:
    rows = [r for r in report.get("pyqmc", []) if "walker_steps_per_s" in r and not r.get("all_threads")]
    if not rows and not report.get("pyqmc_error"):
        return []
    out = ["## H2O / cc-pVDZ (Cartesian, 25 functions), RHF orbitals: qmckit vs PyQMC, ONE thread each", ""]
    if report.get("pyqmc_error"):
        return out + [f"Not run: {report['pyqmc_error']}.", ""]
    e_rhf = rows[0]["e_rhf"]
    out += [f"Same geometry (`data/molecules/h2o.xyz`), basis (cc-pVDZ, `cart=True`), RHF (E_RHF = {e_rhf:.6f} E_h "
            "in both processes), walker count, Δt and drift-diffusion VMC with single-electron moves; each code in "
            "its own subprocess with NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS=1 set before numpy was imported. "
            "One walker-step = every electron of one walker proposed once + one local energy (= one all-electron "
            f"MC cycle). Time step Δt = {report.get('dt')} for both (exact Metropolis–Hastings in both; qmckit's "
            "drift cap is Umrigar's, PyQMC's limits |∇ln ψ| to 1). Medians of the timings (how many × how many steps "
            "in the table) after equilibration. Energies: walker-averaged block means of 10 steps, blocking error; the "
            "timed steps are part of the series (shown only for runs of more than 200 steps).", "",
            "| ψ_T | W | code | walker-steps/s | per CPU-s | cpu/wall | timings × steps | moves/s | acc | E (E_h) | "
            "Var E_L | E − E_RHF | steps (energy) | equil. steps |",
            "|---|---:|---|---:|---:|---:|---|---:|---:|---|---:|---|---:|---:|"]
    for r in rows:
        s = r["spec"]
        e = r.get("energy")
        energy = f"{e['mean']:.4f} ± {e['error']:.4f}" if e and r["energy_steps"] > 200 else "–"
        diff = "–"
        if e and r["energy_steps"] > 200:  # σ only where E_RHF is the expected value (the bare determinant)
            diff = f"{e['mean'] - e_rhf:+.4f}" + (f" ({r['pull_vs_rhf']:+.1f}σ)" if s["wf"] == "bare" and
                                                  r.get("pull_vs_rhf") is not None else "")
        var = fmt(r.get("variance"), ".1f") if r["energy_steps"] > 200 else "–"
        out.append(f"| {'bare det' if s['wf'] == 'bare' else 'Slater–Jastrow'} | {s['walkers']} | {s['code']} | "
                   f"{r['walker_steps_per_s']:.0f} | {r['walker_steps_per_cpu_s']:.0f} | {r['cpu_over_wall']:.2f} | "
                   f"{len(r['times_s'])} × {r['steps_per_timing']} | {sci(r['walker_steps_per_s'] * r['n_electrons'])} | "
                   f"{r['acceptance']:.3f} | {energy} | {var} | "
                   f"{diff} | {r['energy_steps']} | {s['equil']} |")
    out.append("")
    out += ["Per-core ratio qmckit / PyQMC (walker-steps per second, one thread each; range = slowest qmckit timing / "
            "fastest PyQMC … fastest / slowest):", "",
            "| ψ_T | W | qmckit | PyQMC | ratio (wall) | range | ratio (CPU time) | ≥ 3× |",
            "|---|---:|---:|---:|---:|---|---:|---|"]
    ratios = []
    for wf in ("bare", "sj"):
        for W in sorted({r["spec"]["walkers"] for r in rows}):
            q = next((r for r in rows if r["spec"]["code"] == "qmckit" and r["spec"]["wf"] == wf
                      and r["spec"]["walkers"] == W), None)
            p = next((r for r in rows if r["spec"]["code"] == "pyqmc" and r["spec"]["wf"] == wf
                      and r["spec"]["walkers"] == W), None)
            if not (q and p):
                continue
            steps_q, steps_p = q["steps_per_timing"] * W, p["steps_per_timing"] * W
            ratio = q["walker_steps_per_s"] / p["walker_steps_per_s"]
            lo = (steps_q / max(q["times_s"])) / (steps_p / min(p["times_s"]))
            hi = (steps_q / min(q["times_s"])) / (steps_p / max(p["times_s"]))
            ratio_cpu = q["walker_steps_per_cpu_s"] / p["walker_steps_per_cpu_s"]
            ratios.append((wf, W, ratio))
            out.append(f"| {'bare det' if wf == 'bare' else 'Slater–Jastrow'} | {W} | {q['walker_steps_per_s']:.0f} | "
                       f"{p['walker_steps_per_s']:.0f} | **{ratio:.1f}×** | {lo:.1f}–{hi:.1f} | {ratio_cpu:.1f}× | "
                       f"{'yes' if ratio >= GOAL_PYQMC_RATIO else 'NO'} |")
    out.append("")
    if ratios:
        worst = min(ratios, key=lambda t: t[2])
        out += [f"Goal ≥ {GOAL_PYQMC_RATIO:.0f}× PyQMC per core: **{'met' if worst[2] >= GOAL_PYQMC_RATIO else 'NOT met'}** "
                f"in every case (lowest: {worst[2]:.1f}×, {worst[0]}, W = {worst[1]}).", ""]
    allt = [r for r in report.get("pyqmc", []) if r.get("all_threads") and "walker_steps_per_s" in r]
    one = next((r for r in rows if r["spec"]["code"] == "qmckit" and r["spec"]["wf"] == "sj"), None)
    if allt or one:
        line = "qmckit H2O all-electron MC cycles (Slater–Jastrow, one cycle = 10 single-electron moves + one E_L): "
        if one:
            line += f"{one['walker_steps_per_s']:.3g}/s on one core"
        if allt:
            a = allt[0]
            line += (f"; {a['walker_steps_per_s']:.3g}/s on {a['numba_threads']} threads = "
                     f"{a['walker_steps_per_s'] / a['numba_threads']:.3g}/s per thread (W = {a['spec']['walkers']}; "
                     f"cpu/wall {a['cpu_over_wall']:.2f} — below {a['numba_threads']} means other load shared the cores; "
                     f"per CPU-second {a['walker_steps_per_cpu_s']:.3g})")
        out += [line + ".", ""]
    jas = next((r for r in rows if r["spec"]["wf"] == "sj" and r["spec"]["code"] == "qmckit"), None)
    jas_p = next((r for r in rows if r["spec"]["wf"] == "sj" and r["spec"]["code"] == "pyqmc"), None)
    out += ["Jastrow factors (neither optimised): "
            + (f"qmckit `{jas['wavefunction']}`: " if jas else "qmckit: ")
            + "exp(Σ_{i<j} a r_ij/(1 + 4 r_ij) − Σ_{i,A} Z_A r_iA/(1 + 300 r_iA)), a = ½ antiparallel, ¼ parallel "
            "(Padé e–e and e–n factors with the Kato cusps; short-ranged so that the RHF orbitals stay good); "
            + (f"PyQMC `{jas_p['wavefunction']}`: " if jas_p else "PyQMC: ")
            + "e–n Σ Z_A b(r_iA) and e–e Σ c_σσ' b(r_ij) with QWalk's cutoff cusp function "
              "b(r) = r_c[1/(3 + γ) − p(r/r_c)/(1 + γ p(r/r_c))], p(y) = ((y − 1)³ + 1)/3, γ = 24, r_c = 7.5 bohr, "
              "c = −¼ (↑↑, ↓↓), −½ (↑↓): the same cusps, a different shape; its PolyPade terms have zero "
              "coefficients until optimised. PyQMC's default Jastrow is the starting point of its optimiser (the "
              "OPTIMIZE recipe); unoptimised, its long-ranged e–n term (Z_A·b(r), b(0) − b(1 bohr) ≈ 0.23, so "
              "|ψ|² near the O nucleus is raised ≈ e^(2·8·0.23) ≈ 40× relative to 1 bohr) pulls the RHF density onto the "
              "nuclei (kinetic energy ≈ +170 E_h, e–n ≈ −280 E_h in a check run), hence its far higher SJ energy and "
              "variance. The SJ energies therefore only show that each code samples its own ψ_T; the bare-determinant "
              "energies are the like-for-like check (both must equal E_RHF within errors).", ""]
    return out


def write_report(report, out_dir, stem, title, sections=("atoms", "pyqmc")):
    lines = header_lines(report, title)
    if "atoms" in sections and (report.get("atoms_cpu") or report.get("atoms_gpu")):
        lines += atoms_markdown(report)
    if "pyqmc" in sections:
        lines += pyqmc_markdown(report)
    text = "\n".join(lines) + "\n"
    log("\n" + text)
    if out_dir is None:
        return
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        keep = {"atoms": ("atoms_cpu", "atoms_gpu", "device", "cpu_threads_all"),
                "pyqmc": ("pyqmc", "pyqmc_version", "pyqmc_error", "dt")}
        drop = {k for sec, keys in keep.items() if sec not in sections for k in keys}
        clean = {k: v for k, v in report.items() if not k.startswith("_") and k not in drop}
        (out_dir / f"{stem}.json").write_text(json.dumps(clean, indent=1, default=str))
        (out_dir / f"{stem}.md").write_text(text)
        log(f"# wrote {out_dir / stem}.md and .json")
    except OSError as exc:
        log(f"# could not write {out_dir / stem}: {exc}")


# ============================================================================================
# main
# ============================================================================================
def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", nargs="?", default="all", choices=("all", "cpu", "gpu", "pyqmc"))
    ap.add_argument("--quick", action="store_true", help="tiny sizes, seconds; writes nothing unless --out")
    ap.add_argument("--smoke", action="store_true", help="gpu mode: tiny sizes (for NUMBA_ENABLE_CUDASIM=1)")
    ap.add_argument("--out", type=Path, default=None,
                    help="results folder (default: $OUT if set, else benchmarks/results; none for --quick/--smoke)")
    ap.add_argument("--tag", default=None, help="machine label in the file names (default: the host name)")
    ap.add_argument("--reps", type=int, default=None, help="timings per figure (default 5, at least 3)")
    ap.add_argument("--target", type=float, default=None, help="seconds per CPU atom timing (default 0.6)")
    ap.add_argument("--budget", type=float, default=None, help="total seconds (default 600; gpu 420)")
    ap.add_argument("--walkers", default=None, help="pyqmc mode: walker counts, e.g. 1000,4000 (default 1000,4000)")
    ap.add_argument("--dt", type=float, default=H2O_DT, help=f"pyqmc mode: time step (default {H2O_DT})")
    ap.add_argument("--gpu-threads", default=None,
                    help="gpu mode: threads per block to scan, e.g. 128,64,32 (default; 128 is the sweeper's default)")
    args = ap.parse_args(argv)
    small = args.quick or args.smoke
    args.reps = max(1 if small else 3, args.reps or (2 if small else 5))
    args.target = args.target or (0.05 if small else 0.6)
    args.budget = args.budget or (420.0 if args.mode == "gpu" else 600.0)
    args.pool, args.pool_sweeps = (8, 4) if small else (512, 100)
    args.walkers_one, args.walkers_per_thread = (8, 4) if small else (256, 128)
    args.gpu_sizes = [4, 8] if small else [1 << k for k in range(12, 18)]
    args.gpu_sizes_ne = [4, 8] if small else [4096, 8192, 12288, 16384, 24576, 32768, 65536]
    args.gpu_target = 0.01 if small else 0.15
    args.gpu_case_budget = 6 if small else 10
    args.gpu_threads = [int(t) for t in (args.gpu_threads or ("128,32" if small else "128,64,32")).split(",")]
    args.walkers = [int(w) for w in (args.walkers or ("40,80" if small else "1000,4000")).split(",")]
    args.pq_target = 0.3 if small else 2.0
    args.equil, args.equil_short = (10, 10) if small else (100, 20)
    args.energy_steps = {"bare": 40, "sj": 40} if small else {"bare": 600, "sj": 300}
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_worker":
        warnings.filterwarnings("ignore")
        result = worker(json.loads(argv[1]))
        print("RESULT " + json.dumps(result, default=float), flush=True)
        return 0
    args = parse(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)  # simulator uint64
    warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")
    budget = Budget(args.budget)
    date = datetime.date.today().isoformat()
    report = {"mode": args.mode, "date": date, "machine": machine_info(),
              "command": "python benchmarks/atoms_throughput.py " + " ".join(argv),
              "reps": args.reps, "target_s": args.target, "loadavg_before": tuple(round(x, 2) for x in os.getloadavg())}
    out_dir = args.out or (None if (args.quick or args.smoke) else
                           (Path(os.environ["OUT"]) if os.environ.get("OUT") else BENCH / "results"))
    tag = args.tag or report["machine"]["hostname"]
    quick = "quick_" if (args.quick or args.smoke) else ""
    log(f"# atoms_throughput {args.mode} on {report['machine']['cpu_model']} ({report['machine']['hostname']}), "
        f"{report['machine']['cores_usable']} cores; budget {args.budget:.0f} s")

    def finish(stem, title, sections=("atoms", "pyqmc")):
        report["wall_s"] = budget.elapsed()
        report["loadavg_after"] = tuple(round(x, 2) for x in os.getloadavg())
        if source_hashes() != report["machine"]["qmckit_sources_sha256"]:
            report["warning"] = "qmckit sources changed on disk during the run"
            log("# WARNING: qmckit sources changed on disk during the run")
        write_report(report, out_dir, stem, title, sections)

    if args.mode == "gpu":
        atom_cpu(args, budget, report)  # the CPU figures of the same host, same run
        atom_gpu(args, budget, report)
        finish(f"atoms_throughput_gpu_{quick}{tag}_{date}", "Atoms He, Be, Ne: GPU and CPU throughput")
        return 0
    if args.mode in ("cpu", "all"):
        atom_cpu(args, budget, report)
        finish(f"atoms_throughput_cpu_{quick}{tag}_{date}", "Atoms He, Be, Ne: CPU throughput", ("atoms",))
    if args.mode in ("pyqmc", "all"):
        report["dt"] = args.dt
        report["loadavg_before"] = tuple(round(x, 2) for x in os.getloadavg())
        t0 = budget.elapsed()
        pyqmc_mode(args, budget, report)
        report["pyqmc_wall_s"] = budget.elapsed() - t0
        finish(f"atoms_throughput_pyqmc_{quick}{tag}_{date}", "qmckit vs PyQMC 0.8.1 (H2O, cc-pVDZ)", ("pyqmc",))
    return 0


if __name__ == "__main__":
    sys.exit(main())
