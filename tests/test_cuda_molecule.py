"""The molecule's GPU sampler (qmckit.backends.cuda_molecule) against its CPU twin, under numba's CUDA simulator.

Same walkers and random streams through the CPU sampler and the GPU sweeper, sweep by sweep: the same accepted
moves and streams, positions to 1e-12, local energies to 1e-10 relative, and the incrementally updated device
caches (inverse blocks, orbital rows, Jastrow gradients) equal to a CPU rebuild. Cases: H2O/STO-3G with
cusp-corrected orbitals and the polynomial Jastrow (drift), LiH/6-31G with the e–n Padé term (uniform moves), and
H2O fixed-node with the moves near nuclei. Then one DMC run through the Run on both backends gives the same
populations and energies, and a VMC run with a density gives the same numbers with the histogram in a worker thread
(``analysis="async"``) as without. The ``dtype=float32`` variant (the orbital contraction in float32) gives the local
energies of a CPU clone with ``_orbitals_f32`` compiled in, within float32's rounding of the float64 ones, and a float32
run says so in its result.
"""
import json
import os
import sys

import numpy as np
import pytest

pytest.importorskip("pyscf")

MARKER = "CUDA_MOLECULE_RESULTS="
# (molecule parameters, sampler, fixed node, nuclear moves, walkers, sweeps)
CASES = [(dict(xyz="h2o", basis="sto-3g", cusp=True, jastrow_en=False, c_ee2=0.2, c_en3=-0.1), "drift", False, False,
          2, 2),
         (dict(xyz="Li 0 0 0; H 0 0 1.6", basis="6-31g"), "brute", False, False, 2, 2),
         (dict(xyz="h2o", basis="sto-3g", cusp=True, jastrow_en=False), "drift", True, True, 2, 1)]


def _child() -> dict:
    import warnings

    warnings.simplefilter("ignore")
    from qmckit import runs
    from qmckit.backends.cuda_molecule import CudaMoleculeSweeper
    from qmckit.methods.vmc import VMC
    from qmckit.runs import RunConfig, make_run
    from qmckit.systems.molecule import Molecule, cache_views
    from qmckit.walkers import Walkers

    out = {"cases": []}
    for k, (params, sampler, fixed_node, nuclear, W, sweeps) in enumerate(CASES):
        system = Molecule(**params)
        if fixed_node:
            system = system.for_dmc()
        start = Walkers.from_positions(system.initial_positions(W, np.random.default_rng(k)), 11 + k,
                                       system.cache_size())
        cpu = VMC(system, start.copy(), sampler=sampler, dt=0.05, step=0.6, nuclear_moves=nuclear)
        gpu = CudaMoleculeSweeper(system, start.copy(), sampler=sampler, dt=0.05, step=0.6, threads_per_block=2,
                                  nuclear_moves=nuclear)
        row = {"case": k, "accept": [], "dpos": 0.0, "de": 0.0, "dcache": 0.0}
        N, nbf = system.n_particles, system.n_basis
        for _ in range(sweeps):
            e_cpu, _ = cpu.sweep(1)
            e_gpu, _ = gpu.sweep(1)
            row["accept"].append([int(x) for x in gpu.last_accepted])
            caches = gpu.caches_to_host()
            walkers = gpu.to_host(recompute_caches=False)
            row["dpos"] = max(row["dpos"], float(np.abs(walkers.positions - cpu.walkers.positions).max()))
            row["de"] = max(row["de"], float(np.abs(e_gpu - e_cpu).max() / np.abs(e_cpu).max()))
            row["streams_equal"] = bool(np.array_equal(walkers.rng_states, cpu.walkers.rng_states))
            cpu.recompute()  # the CPU's measured sweep rebuilt its cache; compare the device's arrays with it
            for w in range(W):
                mine, theirs = cache_views(caches[w], N, N // 2, nbf), cache_views(cpu.walkers.caches[w], N, N // 2, nbf)
                for place in CudaMoleculeSweeper.CACHE_VIEWS[:-1]:  # FLAG is a marker, not a number
                    row["dcache"] = max(row["dcache"], float(np.abs(mine[place] - theirs[place]).max()))
        out["cases"].append(row)

    out["float32"] = _float32_against_float64()
    runs.cuda_available = lambda system, sampler="drift": True  # the simulator stands in for the GPU
    config = dict(system="molecule", method="dmc", params=dict(xyz="h2", basis="sto-3g"), walkers=4, steps=3,
                  equilibration=2, dmc_equilibration=1, block=3, dt=0.1, seed=3)  # rejects some moves
    out["dmc"] = {b: make_run(RunConfig(**config, backend=b)).run() for b in ("cpu", "cuda")}
    density = dict(system="molecule", params=dict(xyz="h2", basis="sto-3g"), walkers=3, steps=4, block=2, seed=5,
                   equilibration=2, density="r")  # the analysis thread beside a GPU sampler (issue 31)
    out["analysis"] = {a: make_run(RunConfig(**density, backend="cuda", analysis=a)).run() for a in ("sync", "async")}
    vmc = dict(system="molecule", params=dict(xyz="h2", basis="sto-3g"), walkers=3, steps=4, block=2, seed=5,
               equilibration=2, backend="cuda")
    out["dtype"] = {d: make_run(RunConfig(**vmc, dtype=d)).run() for d in ("float64", "float32")}
    return out


def _float32_against_float64() -> dict:
    """The dtype=float32 variant (the orbital contraction in float32) beside the float64 kernels, from the same walkers
    and streams: its local energies against a CPU clone of ``local_energy`` with ``_orbitals_f32`` compiled in, and
    one sweep's decisions and energies against the float64 sweep's."""
    import types

    import numba

    from qmckit.backends.cuda_molecule import CudaMoleculeSweeper
    from qmckit.systems import molecule
    from qmckit.systems.molecule import Molecule
    from qmckit.walkers import Walkers

    ns = dict(vars(molecule), _orbitals=molecule._orbitals_f32)
    for name in ("recompute", "local_energy"):  # callees first; both reach _orbitals
        f = getattr(molecule, name).py_func
        ns[name] = numba.njit(types.FunctionType(f.__code__, ns, name))
    params, W = CASES[0][0], 2
    system = Molecule(**params)
    start = Walkers.from_positions(system.initial_positions(W, np.random.default_rng(4)), 21, system.cache_size())
    e_cpu32 = np.array([ns["local_energy"](start.positions[w], system.kernel_params, start.caches[w].copy())
                        for w in range(W)])
    gpu = {d: CudaMoleculeSweeper(system, start.copy(), sampler="drift", dt=0.05, threads_per_block=2, dtype=d)
           for d in ("float64", "float32")}
    out = {"e_start": {d: g.local_energies().tolist() for d, g in gpu.items()}, "e_cpu32": e_cpu32.tolist()}
    for d, g in gpu.items():
        e, _ = g.sweep(1)
        out[d] = {"e": np.asarray(e).tolist(), "accepted": g.last_accepted.tolist(), "dtype": str(g.dtype)}
    # constants that fit only with float32 coefficients: float64 is refused in one line, float32 runs
    from qmckit.backends import cuda_molecule

    limit, cuda_molecule.MAX_CONSTANT_BYTES = cuda_molecule.MAX_CONSTANT_BYTES, CudaMoleculeSweeper.frozen_bytes(
        system, np.float32)
    try:
        try:
            CudaMoleculeSweeper(system, start.copy(), dtype="float64")
            out["refused"] = None
        except ValueError as error:
            out["refused"] = str(error)
        out["float32_fits"] = CudaMoleculeSweeper(system, start.copy(), dtype="float32").local_energies().tolist()
    finally:
        cuda_molecule.MAX_CONSTANT_BYTES = limit
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


def test_async_analysis_beside_the_gpu_sampler_gives_the_sync_numbers(sim):
    sync, masked = sim["analysis"]["sync"], sim["analysis"]["async"]
    assert masked["estimates"] == sync["estimates"] and masked["density"] == sync["density"]
    assert masked["profile"]["masked"]["calls"] == 4 and "masked" not in sync["profile"]


def test_float32_orbitals_on_the_gpu_are_the_cpu_clones_and_float32_close_to_float64(sim):
    r = sim["float32"]
    e64, e32, cpu32 = np.array(r["e_start"]["float64"]), np.array(r["e_start"]["float32"]), np.array(r["e_cpu32"])
    assert np.allclose(e32, cpu32, rtol=1e-12, atol=0)  # the device variant is the CPU clone
    rel = np.abs(e32 - e64) / np.abs(e64)
    assert rel.max() < 1e-5 and rel.max() > 1e-12, rel  # float32's rounding, not float64's, and not a broken row
    assert r["float32"]["dtype"] == "float32" and r["float32"]["accepted"] == r["float64"]["accepted"]
    assert sum(r["float64"]["accepted"]) > 0
    sweep_rel = np.abs(np.array(r["float32"]["e"]) - np.array(r["float64"]["e"])) / np.abs(np.array(r["float64"]["e"]))
    assert sweep_rel.max() < 1e-5 and sweep_rel.max() > 1e-12, sweep_rel


def test_constants_too_large_for_float64_are_refused_in_one_line_and_float32_runs(sim):
    r = sim["float32"]
    assert r["refused"] is not None and "\n" not in r["refused"], r["refused"]
    assert "bytes" in r["refused"] and "dtype float32" in r["refused"]  # it names the way out
    assert r["float32_fits"] == r["e_start"]["float32"]


def test_a_float32_run_says_so_and_stays_within_float32_of_float64(sim):
    f64, f32 = sim["dtype"]["float64"], sim["dtype"]["float32"]
    assert f32["dtype"] == "float32" and "dtype" not in f64
    e64, e32 = f64["estimates"]["energy"]["mean"], f32["estimates"]["energy"]["mean"]
    assert e32 != e64 and abs(e32 - e64) < 1e-5 * abs(e64)


def test_registration_and_import_without_a_gpu():
    from qmckit.backends import cuda_molecule
    from qmckit.systems.molecule import Molecule

    assert Molecule.capabilities.gpu == "qmckit.backends.cuda_molecule:CudaMoleculeSweeper"
    assert cuda_molecule.available() is False
