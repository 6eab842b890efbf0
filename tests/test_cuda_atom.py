"""The CUDA atom sweep (qmckit.backends.cuda_atom) against its CPU twin, under numba's CUDA simulator.

numba reads NUMBA_ENABLE_CUDASIM when it is first imported, and other tests in this process import
numba without it, so the simulator work runs in ONE child process (this file run as a script with
NUMBA_ENABLE_CUDASIM=1) that prints its measurements as JSON; the tests below assert on them.

Twin test: the same walkers (positions and per-walker xoroshiro128+ states) go through
qmckit.methods.vmc.VMC (the CPU driver) and through CudaAtomSweeper, for He and Be (4 walkers × 3
sweeps) and Ne (2 walkers × 1 sweep), in VMC and with the fixed-node flag (Atom.for_dmc()), drift
and brute samplers. The GPU draws the CPU's random numbers in the CPU's order, so the per-sweep
accepted counts, the final random states, positions, energies after every sweep and the incrementally
updated caches (transposed inverses, orbital gradients, Jastrow gradients) must agree. The CPU
per-sweep accepted counts are read off the positions (every electron gets one proposal per sweep,
so a sweep's accepted moves are the electrons that moved). Plus one DMC run (DMC with CudaVMC as its
driver against the CPU DMC, with branching) and a tiny VMC run through RunConfig/make_run with
backend cuda against the same run on the CPU.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from _simulator import simulator_results

MARKER = "CUDA_ATOM_RESULTS="
# element → (walkers, sweeps, seed of the start): Ne is ~100× the work of He per walker in the simulator
SIZES = {"He": (4, 3, 1), "Be": (4, 3, 2), "Ne": (2, 1, 2)}
DT, STEP = 0.1, 0.6
# (element, sampler, fixed node)
CASES = [(el, "drift", fn) for el in ("He", "Be", "Ne") for fn in (False, True)]
CASES += [("Be", "brute", False), ("Ne", "brute", True)]


# --------------------------------------------------------------------------------------------
# child process (NUMBA_ENABLE_CUDASIM=1)
# --------------------------------------------------------------------------------------------
def _child() -> dict:
    import warnings

    # the simulator runs xoroshiro's wrapping uint64 arithmetic on numpy scalars, which warn
    warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)
    warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")
    from qmckit.backends import cuda_atom
    from qmckit.samplers.cuda import CudaSampler as CudaVMC, sweeper_class
    from qmckit.methods.dmc import DMC
    from qmckit.methods.vmc import VMC
    from qmckit.systems import atom as atom_module
    from qmckit.systems.atom import Atom, cache_views
    from qmckit.walkers import Walkers

    out = {"simulated": cuda_atom.simulated(), "available": cuda_atom.available(), "cases": [], "errors": {}}

    def make(element, fixed_node):
        W, _, seed = SIZES[element]
        system = Atom(element=element)
        if fixed_node:
            system = system.for_dmc()
        pos = system.initial_positions(W, np.random.default_rng(seed))
        return system, Walkers.from_positions(pos, 10 + seed, system.cache_size())

    def cpu_run(system, walkers, sampler, n_sweeps):
        w = walkers.copy()
        vmc = VMC(system, w, sampler=sampler, dt=DT, step=STEP)
        energies = np.empty((n_sweeps, w.n_walkers))
        accepted = np.zeros((n_sweeps, w.n_walkers), dtype=np.int64)
        for s in range(n_sweeps):
            before = w.positions.copy()
            energies[s] = vmc.sweep(1)[0][0]
            accepted[s] = np.any(w.positions != before, axis=2).sum(axis=1)
        return w, energies, accepted

    def core(cache_rows, N):
        """T, DPHI and JG of every walker's cache row (the part that persists between moves)."""
        return np.array([np.concatenate([v.ravel() for v in cache_views(row, N)[:3]]) for row in cache_rows])

    for element, sampler, fixed_node in CASES:
        system, walkers = make(element, fixed_node)
        N = system.n_particles
        _, n_sweeps, _ = SIZES[element]
        w_cpu, e_cpu, acc_cpu = cpu_run(system, walkers, sampler, n_sweeps)
        # GPU: one sweep per call (per-sweep accepted counts) ...
        w = walkers.copy()
        sweeper = cuda_atom.CudaAtomSweeper(system, w, sampler=sampler, dt=DT, step=STEP, threads_per_block=2)
        energies = np.empty((n_sweeps, w.n_walkers))
        accepted = np.zeros((n_sweeps, w.n_walkers), dtype=np.int64)
        for s in range(n_sweeps):
            e, _ = sweeper.sweep(1)
            energies[s] = e[0]
            accepted[s] = sweeper.last_accepted
        sweeper.to_host()
        # ... and all sweeps in one launch
        w1 = walkers.copy()
        one = cuda_atom.CudaAtomSweeper(system, w1, sampler=sampler, dt=DT, step=STEP, threads_per_block=4)
        e_one, acceptance_one = one.sweep(n_sweeps)
        one.to_host()
        # the node flag must matter in the fixed-node cases with nodes (not He: 1×1 determinants)
        other, _ = make(element, not fixed_node)
        w_other, _, acc_other = cpu_run(other, walkers, sampler, n_sweeps)
        # incremental caches after sweeps without measuring (measuring rebuilds them on both sides)
        wc = walkers.copy()
        VMC(system, wc, sampler=sampler, dt=DT, step=STEP).sweep(n_sweeps, measure=False)
        wg = walkers.copy()
        sg = cuda_atom.CudaAtomSweeper(system, wg, sampler=sampler, dt=DT, step=STEP, threads_per_block=4)
        e_none, _ = sg.sweep(n_sweeps, measure=False)
        gpu_caches = core(sg.caches_to_host(), N)
        sg.to_host(recompute_caches=False)
        cpu_caches = core(wc.caches, N)
        out["cases"].append({
            "case": [element, sampler, fixed_node],
            "energy_scale": float(np.abs(e_cpu).max()),
            "d_energy": float(np.abs(energies - e_cpu).max()),
            "d_energy_one_launch": float(np.abs(e_one - e_cpu).max()),
            "d_pos": float(np.abs(w.positions - w_cpu.positions).max()),
            "d_pos_one_launch": float(np.abs(w1.positions - w_cpu.positions).max()),
            "acc_gpu": accepted.tolist(), "acc_cpu": acc_cpu.tolist(),
            "acc_one_launch": one.last_accepted.tolist(),
            "acceptance_one_launch": float(acceptance_one),
            "rng_equal": bool(np.array_equal(w.rng_states, w_cpu.rng_states)),
            "rng_equal_one_launch": bool(np.array_equal(w1.rng_states, w_cpu.rng_states)),
            "host_cache_err": float(np.abs(core(w.caches, N) - core(w_cpu.caches, N)).max()),  # to_host rebuilt them
            "flag_changed_trajectory": bool(np.abs(w_other.positions - w_cpu.positions).max() > 0),
            "no_measure_rows": len(e_none),
            "d_pos_no_measure": float(np.abs(wg.positions - wc.positions).max()),
            "cache_scale": float(np.abs(cpu_caches).max()),
            "d_cache_no_measure": float(np.abs(gpu_caches - cpu_caches).max()),
        })

    # device local energies and the rebuilt cache against the CPU (no moves)
    for element in ("He", "Be", "Ne"):
        system, walkers = make(element, False)
        sweeper = cuda_atom.CudaAtomSweeper(system, walkers.copy())
        vmc = VMC(system, walkers.copy())
        e_gpu = sweeper.local_energies()
        e_cpu = vmc.local_energies()
        out.setdefault("local_energies", {})[element] = {
            "d_energy": float(np.abs(e_gpu - e_cpu).max()),
            "d_cache": float(np.abs(core(sweeper.caches_to_host(), system.n_particles)
                                    - core(vmc.walkers.caches, system.n_particles)).max())}

    # the optional e–n cusp factor (AtomParams.en_cusp): local energies, and a Be drift twin with
    # its incremental caches (the factor's terms in test_move / accept_move)
    for element in ("He", "Be", "Ne"):
        W, _, seed = SIZES[element]
        system = Atom(element=element, en_cusp=True)
        walkers = Walkers.from_positions(system.initial_positions(W, np.random.default_rng(seed)), 10 + seed,
                                         system.cache_size())
        on = cuda_atom.CudaAtomSweeper(system, walkers.copy())
        off = cuda_atom.CudaAtomSweeper(Atom(element=element), walkers.copy())
        e_gpu, e_off = on.local_energies(), off.local_energies()
        e_cpu = VMC(system, walkers.copy()).local_energies()
        e_off_cpu = VMC(Atom(element=element), walkers.copy()).local_energies()
        # the compile-time switch: the variant without the e–n code ignores the run-time flag (its
        # code is gone), and the general kernel with the flag off gives the factor-free energies
        on._k = cuda_atom.kernels(en_cusp=False)
        e_dead = on.local_energies()
        off._k = cuda_atom.kernels(en_cusp=True)
        e_general_off = off.local_energies()
        out.setdefault("en_cusp", {})[element] = {"d_energy": float(np.abs(e_gpu - e_cpu).max()),
                                                  "d_on_off": float(np.abs(e_gpu - e_off).max()),
                                                  "d_off": float(np.abs(e_off - e_off_cpu).max()),
                                                  "d_dead_vs_off": float(np.abs(e_dead - e_off).max()),
                                                  "d_general_off": float(np.abs(e_general_off - e_off).max()),
                                                  "variants": [on.en_cusp_code, off.en_cusp_code]}
    d_on, d_off = cuda_atom.device_functions(True), cuda_atom.device_functions(False)
    out["variants"] = {
        "kernels_cached": cuda_atom.kernels() is cuda_atom.kernels(en_cusp=True) is cuda_atom.kernels(1),
        "kernels_distinct": cuda_atom.kernels(en_cusp=False) is not cuda_atom.kernels(en_cusp=True),
        "constant": [d_on["test_move"].py_func.__globals__["EN_CUSP_CODE"],
                     d_off["test_move"].py_func.__globals__["EN_CUSP_CODE"]],
        "shared_slater": d_on["invert"] is d_off["invert"],
        "cpu_constant": atom_module.EN_CUSP_CODE,
        "register_counts": cuda_atom.register_counts(element="He"),
    }
    system = Atom(element="Be", en_cusp=True)
    walkers = Walkers.from_positions(system.initial_positions(4, np.random.default_rng(2)), 12, system.cache_size())
    w_cpu, e_cpu, acc_cpu = cpu_run(system, walkers, "drift", 3)
    w = walkers.copy()
    sweeper = cuda_atom.CudaAtomSweeper(system, w, sampler="drift", dt=DT, step=STEP, threads_per_block=2)
    e_gpu = np.array([sweeper.sweep(1)[0][0] for _ in range(3)])
    sweeper.to_host()
    wc, wg = walkers.copy(), walkers.copy()
    VMC(system, wc, sampler="drift", dt=DT, step=STEP).sweep(3, measure=False)
    sg = cuda_atom.CudaAtomSweeper(system, wg, sampler="drift", dt=DT, step=STEP)
    sg.sweep(3, measure=False)
    out["en_cusp_twin"] = {"d_energy": float(np.abs(e_gpu - e_cpu).max()),
                           "d_pos": float(np.abs(w.positions - w_cpu.positions).max()),
                           "rng_equal": bool(np.array_equal(w.rng_states, w_cpu.rng_states)),
                           "accepted": int(acc_cpu.sum()),
                           "d_cache": float(np.abs(core(sg.caches_to_host(), 4) - core(wc.caches, 4)).max())}

    # Umrigar–Nightingale–Runge moves near the nucleus (the nuclear_moves variant, with DMC's tracking too)
    out["nuclear"] = {}
    for element in ("He", "Be"):
        system = Atom(element=element).for_dmc()
        walkers = Walkers.from_positions(system.initial_positions(4, np.random.default_rng(6)), 21, system.cache_size())
        wc, wg = walkers.copy(), walkers.copy()
        cpu = VMC(system, wc, sampler="drift", dt=0.2, nuclear_moves=True)
        gpu = cuda_atom.CudaAtomSweeper(system, wg, sampler="drift", dt=0.2, threads_per_block=2, nuclear_moves=True)
        gpu.track_diffusion = True
        acc_c, acc_g, e_c, e_g, diff_c, diff_g = [], [], [], [], np.zeros((2, 4)), np.zeros((2, 4))
        for _ in range(3):
            e_c.append(cpu.sweep(1)[0][0])
            diff_c += cpu.last_diffusion
            e_g.append(gpu.sweep(1)[0][0])
            diff_g += gpu.last_diffusion
            acc_g.append(gpu.last_accepted.tolist())
        gpu.to_host()
        plain = walkers.copy()
        VMC(system, plain, sampler="drift", dt=0.2).sweep(3)
        out["nuclear"][element] = {
            "d_energy": float(np.abs(np.array(e_g) - np.array(e_c)).max()), "accepted": int(np.sum(acc_g)),
            "d_pos": float(np.abs(wg.positions - wc.positions).max()),
            "rng_equal": bool(np.array_equal(wg.rng_states, wc.rng_states)),
            "d_diffusion": float(np.abs(diff_g - diff_c).max() / diff_c.max()),
            "differs_from_plain": bool(np.abs(plain.positions - wc.positions).max() > 0)}

    # DMC: the GPU driver (device branching) against the CPU DMC on the same streams, Be, fixed node
    system = Atom(element="Be")
    dmc_records = []

    def make_dmc(gpu):
        start = system.initial_positions(8, np.random.default_rng(4))
        walkers = Walkers.from_positions(start, 9, 0 if gpu else system.cache_size())
        driver = CudaVMC(system.for_dmc(), walkers, sampler="drift", dt=0.1) if gpu else None
        return DMC(system, walkers, dt=0.1, driver=driver, seed=3)

    gpu, cpu = make_dmc(True), make_dmc(False)
    for _ in range(8):
        rg, rc = gpu.step(), cpu.step()
        dmc_records.append({"gpu": [rg.population, rg.killed, rg.copied, rg.mixed_energy, rg.acceptance],
                            "cpu": [rc.population, rc.killed, rc.copied, rc.mixed_energy, rc.acceptance]})
    gpu.driver.sync()
    out["dmc"] = {"records": dmc_records, "tau_eff": [gpu.tau_eff, cpu.tau_eff, cpu.dt],
                  "fixed_node": [float(gpu.driver.system.kernel_params[5]), float(cpu.system.kernel_params[5])],
                  "d_pos": float(np.abs(gpu.walkers.positions - cpu.walkers.positions).max()),
                  "rng_equal": bool(np.array_equal(gpu.walkers.rng_states, cpu.walkers.rng_states))}

    # a whole run through RunConfig/make_run with backend cuda (the simulator is no GPU: let the
    # availability check pass) against the same run on the CPU
    from qmckit.samplers import cuda as cuda_driver
    from qmckit.runs import RunConfig, make_run

    out["sweeper_class"] = sweeper_class(Atom()).__name__
    try:
        RunConfig(system="atom", params={"element": "He"}, backend="cuda", walkers=2, steps=2)
        out["errors"]["no_gpu"] = None
    except ValueError as exc:
        out["errors"]["no_gpu"] = str(exc)
    cuda_driver.cuda_available = lambda system: True
    runs = {}
    for backend in ("cuda", "cpu"):
        cfg = RunConfig(system="atom", params={"element": "Be"}, method="vmc", backend=backend, walkers=3, steps=4,
                        equilibration=3, block=2, dt=0.05, seed=7)
        run = make_run(cfg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reblocking 4 sweeps warns
            result = run.run()
        runs[backend] = {"backend": result["backend"], "energies": run.series_of("energy_mean").tolist(),
                         "acceptance": result["acceptance"]}
        cfg = RunConfig(system="atom", params={"element": "Be"}, method="dmc", backend=backend, walkers=6, steps=4,
                        equilibration=3, dmc_equilibration=3, block=2, dt=0.1, seed=8)
        run = make_run(cfg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run.run()
        runs["dmc-" + backend] = {"backend": result["backend"], "energies": run.series_of("mixed_energy").tolist(),
                                  "population": run.series_of("population").tolist(),
                                  "branching": int(result["killed"] + result["copied"]),
                                  "acceptance": result["acceptance"], "tau_eff": result["tau_eff"]}
    out["run"] = runs

    # argument checking (before anything touches the device)
    system, walkers = make("Be", False)
    bad = {"sampler": dict(sampler="metropolis"), "layout": dict(layout="block"), "dt": dict(dt=0.0),
           "step": dict(step=-1.0), "dtype": dict(dtype=np.float32), "threads": dict(threads_per_block=0)}
    for name, kwargs in bad.items():
        try:
            cuda_atom.CudaAtomSweeper(system, walkers.copy(), **kwargs)
            out["errors"][name] = None
        except ValueError as exc:
            out["errors"][name] = str(exc)
    try:
        cuda_atom.CudaAtomSweeper(Atom(element="He"), walkers.copy())
        out["errors"]["shape"] = None
    except ValueError as exc:
        out["errors"]["shape"] = str(exc)
    return out


# --------------------------------------------------------------------------------------------
# tests (parent process)
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sim():
    return simulator_results(__file__, MARKER, timeout=900)


def test_import_without_gpu_and_registration():
    from qmckit.backends import cuda_atom
    from qmckit.systems.atom import Atom

    assert cuda_atom.available() is False  # no GPU on development and CI machines
    assert Atom.capabilities.gpu == "qmckit.backends.cuda_atom:CudaAtomSweeper"
    assert "CpuSampler.sweep" in cuda_atom.CudaAtomSweeper.__doc__


def test_import_without_numba_cuda():
    code = ("import sys; sys.modules['numba.cuda'] = None\n"
            "from qmckit.backends import cuda_atom\n"
            "assert cuda_atom.available() is False\n"
            "print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr


def test_cli_backend_cuda_reaches_the_gpu_check():
    """`qmckit run atom --backend cuda` finds the atom's GPU kernels; without a GPU it exits 2."""
    proc = subprocess.run([sys.executable, "-m", "qmckit.cli", "run", "atom", "--backend", "cuda", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "no CUDA GPU" in proc.stderr and "no GPU kernels" not in proc.stderr, proc.stderr


def test_simulator_is_not_a_gpu(sim):
    assert sim["simulated"] is True
    assert sim["available"] is False
    assert sim["sweeper_class"] == "CudaAtomSweeper"
    assert "no CUDA GPU" in sim["errors"]["no_gpu"]


def _ids(case):
    return "-".join(str(x) for x in case).replace("True", "fixed_node").replace("False", "vmc")


@pytest.mark.parametrize("index", range(len(CASES)), ids=[_ids(c) for c in CASES])
def test_twin_agrees_with_cpu_driver(sim, index):
    result = sim["cases"][index]
    element, sampler, fixed_node = result["case"]
    assert [element, sampler, fixed_node] == list(CASES[index])
    scale = max(1.0, result["energy_scale"])
    # decisions and random streams: exactly the CPU's, per sweep and per walker
    assert result["acc_gpu"] == result["acc_cpu"], result
    assert result["acc_one_launch"] == np.sum(result["acc_cpu"], axis=0).tolist(), result
    assert result["rng_equal"] and result["rng_equal_one_launch"], result
    # float64 to round-off
    assert result["d_energy"] < 1e-10 * scale, result
    assert result["d_energy_one_launch"] < 1e-10 * scale, result
    assert result["d_pos"] < 1e-12 and result["d_pos_one_launch"] < 1e-12, result
    assert result["host_cache_err"] < 1e-10, result
    # Sherman–Morrison and Jastrow-gradient updates on the device = the CPU's incremental cache
    assert result["no_measure_rows"] == 0
    assert result["d_pos_no_measure"] < 1e-12, result
    assert result["d_cache_no_measure"] < 1e-10 * max(1.0, result["cache_scale"]), result
    W, n_sweeps, _ = SIZES[element]
    total = int(np.sum(result["acc_cpu"]))
    assert 0 < total < n_sweeps * W * {"He": 2, "Be": 4, "Ne": 10}[element], result  # accepts and rejects
    assert result["acceptance_one_launch"] == pytest.approx(total / (n_sweeps * W * {"He": 2, "Be": 4, "Ne": 10}[element]))


def test_fixed_node_flag_is_exercised(sim):
    """Be and Ne have nodes: the flag changes the trajectory (so node crossings were rejected, on both
    sides alike); He's 1×1 determinants have none."""
    for result in sim["cases"]:
        element, sampler, fixed_node = result["case"]
        if sampler == "drift":
            assert result["flag_changed_trajectory"] == (element != "He"), result


def test_device_local_energies(sim):
    for element, row in sim["local_energies"].items():
        assert row["d_energy"] < 1e-10 * 200, (element, row)
        assert row["d_cache"] < 1e-10, (element, row)


def test_en_cusp_factor_on_the_device(sim):
    """The optional e–n cusp factor compiles into the device twins and gives the CPU's numbers."""
    for element, row in sim["en_cusp"].items():
        assert row["d_energy"] < 1e-10 * 200, (element, row)
        assert row["d_on_off"] > 1e-3, (element, row)  # the factor is really switched on
    twin = sim["en_cusp_twin"]
    assert sim["en_cusp"]["Be"]["variants"] == [True, False]  # the sweeper picks the variant from the system
    assert twin["d_energy"] < 1e-9 and twin["d_pos"] < 1e-12 and twin["rng_equal"], twin
    assert 0 < twin["accepted"] < 3 * 4 * 4 and twin["d_cache"] < 1e-10, twin


def test_en_cusp_code_is_a_compile_time_switch(sim):
    """kernels(en_cusp=False) is compiled with atom.EN_CUSP_CODE = False: the e–n code is gone (the
    run-time flag is ignored), while the general kernels (the default) follow the run-time flag."""
    for element, row in sim["en_cusp"].items():
        assert row["d_off"] < 1e-10 * 200, (element, row)
        assert row["d_dead_vs_off"] < 1e-12 * 200, (element, row)
        assert row["d_general_off"] < 1e-12 * 200, (element, row)
    v = sim["variants"]
    assert v["kernels_cached"] and v["kernels_distinct"] and v["shared_slater"], v
    assert v["constant"] == [True, False] and v["cpu_constant"] is True, v
    # no registers in the simulator, but the helper runs (compiling = one launch per variant)
    assert v["register_counts"] == {f"en_cusp={b}": {"sweep": None, "energy": None, "sweep_local_bytes": None,
                                                     "energy_local_bytes": None} for b in (False, True)}, v


def test_dmc_with_gpu_driver_equals_cpu_dmc(sim):
    dmc = sim["dmc"]
    assert dmc["fixed_node"] == [1.0, 1.0]
    branched = 0
    for rec in dmc["records"]:
        g, c = rec["gpu"], rec["cpu"]
        assert g[:3] == c[:3], rec  # population, killed, copied
        assert abs(g[3] - c[3]) < 1e-10 * max(1.0, abs(c[3])), rec
        assert g[4] == pytest.approx(c[4], abs=0), rec
        branched += g[1] + g[2]
    assert branched > 0, "the test must exercise branching"
    assert dmc["d_pos"] < 1e-12
    assert dmc["rng_equal"]
    gpu_tau, cpu_tau, dt = dmc["tau_eff"]  # the tracking kernel's diffusion sums are the CPU's
    assert gpu_tau == pytest.approx(cpu_tau, rel=1e-12) and 0.5 * dt < cpu_tau < dt


@pytest.mark.parametrize("element", ["He", "Be"])
def test_nuclear_moves_twin(sim, element):
    """The nuclear_moves kernel variant makes the CPU's UNR moves: same decisions and streams, positions and energies
    to round-off, the same diffusion sums (and the moves are not the plain drift's)."""
    r = sim["nuclear"][element]
    assert r["rng_equal"] and r["d_pos"] < 1e-12 and r["d_energy"] < 1e-9 and r["d_diffusion"] < 1e-12, r
    assert 0 < r["accepted"] < 3 * 4 * {"He": 2, "Be": 4}[element] and r["differs_from_plain"], r


def test_runs_backend_cuda_equal_cpu_runs(sim):
    """RunConfig/make_run with backend cuda (VMC, and fixed-node DMC) gives the CPU run's numbers."""
    gpu, cpu = sim["run"]["cuda"], sim["run"]["cpu"]
    assert (gpu["backend"], cpu["backend"]) == ("cuda", "cpu")
    assert len(gpu["energies"]) == len(cpu["energies"]) > 0
    assert np.abs(np.array(gpu["energies"]) - np.array(cpu["energies"])).max() < 1e-9
    assert gpu["acceptance"] == cpu["acceptance"]
    gpu, cpu = sim["run"]["dmc-cuda"], sim["run"]["dmc-cpu"]  # fixed-node DMC run, device branching
    assert (gpu["backend"], cpu["backend"]) == ("cuda", "cpu")
    assert gpu["population"] == cpu["population"] and gpu["branching"] == cpu["branching"]
    assert np.abs(np.array(gpu["energies"]) - np.array(cpu["energies"])).max() < 1e-9
    assert gpu["acceptance"] == cpu["acceptance"]
    assert gpu["tau_eff"] == pytest.approx(cpu["tau_eff"], rel=1e-12) and cpu["tau_eff"] < 0.1


def test_argument_checks(sim):
    errors = sim["errors"]
    for name in ("sampler", "layout", "dt", "step", "dtype", "threads", "shape"):
        assert errors[name], name
        assert errors[name].startswith(name if name not in ("threads", "shape") else ""), errors[name]
    assert "float64" in errors["dtype"]


if __name__ == "__main__":  # the simulator child
    print(MARKER + json.dumps(_child()))
