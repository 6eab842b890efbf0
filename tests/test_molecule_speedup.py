"""Study 001's Fig. 7 speedup study: the batched all-electron VMC step of
qmckit.backends.cuda_molecule_step and the driver of qmckit.studies.speedup_001.

* GPU kernels = their CPU twin (TwinStep) under numba's CUDA simulator, in a child process
  (tests/_simulator.py): every phase's outputs and the state after a step, f64, f32 and Kahan f32,
  bit for bit (the simulator has no fma), accept decisions included; a singular Slater matrix.
* The CPU phases reproduce the molecule module per walker: basis block = basis_derivatives (bit for
  bit), ln|ψ| = log_psi, E_L = local_energy, drift = gradient (≤ 1e-12 relative) on H2O / cc-pVDZ
  with its Jastrow (PySCF), else on a synthetic molecule; the accept phase is Metropolis–Hastings with
  the all-electron drift–diffusion Green's function, checked against the molecule module's log ψ and
  drift and the walkers' own random streams.
* The step is its phases in order (bit for bit); the phases' times add up to the step's.
* Kahan GEMM = qmckit.precision.matmul_kahan_f32 bit for bit; symmetric pair loop = per-electron loop;
  basis chunks = slices of the whole basis; Fig. 7 data and synthetic sizes; table assembly.
Sizes are tiny (N_e ≤ 14, W ≤ 4): the kernels are numba-cached (cache=True).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from _simulator import simulator_results

MARKER = "MOLECULE_SPEEDUP_SIM="


# --------------------------------------------------------------------------------------------
# simulator child
# --------------------------------------------------------------------------------------------
def _child() -> dict:
    sys.setswitchinterval(1e-4)  # the simulator's barriers wait on thread switches
    try:
        from numba import cuda  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return {"skip": f"numba.cuda cannot be imported: {exc!r}"}
    from qmckit.backends import cuda_gemm as G
    from qmckit.backends import cuda_molecule_step as S
    from qmckit.studies import speedup_001 as m

    mol = m.synthetic_molecule(8, 25, seed=3, formula="CH2")
    system = mol.step_system(chunk_functions=8)
    pos = m.initial_positions(mol.coordinates, mol.charges, 3, np.random.default_rng(5))
    threads = {"basis": 16, "layout": 64, "slater": 4, "pairs": 8, "accept": 8}
    tile = G.Tile(32, 16, 8, 4, 2)
    out = {"simulated": S.simulated(), "available": S.available(), "n_chunks": int(system.chunks.shape[0]),
           "twins": {}}
    for kind in S.KINDS:
        out["twins"][kind] = S.twin_check(system, pos, kind, seed=11, tau=0.02, steps=1, threads=threads, tile=tile)
    # decisions of the last step (the same on both sides when the states are equal)
    cpu = S.TwinStep(system, pos, seed=11, tau=0.02, kind="f64")
    cpu.start()
    cpu.step()
    out["accepted_after_one_step"] = cpu.accepted.tolist()
    # a singular Slater matrix: electron 0 of walker 0 so far out that every basis function is exactly 0
    bad = pos.copy()
    bad[0, 0] = 1e3
    cpu = S.TwinStep(system, bad, kind="f64")
    gpu = S.GpuStep(system, bad, kind="f64", threads=threads, tile=tile)
    for st in (cpu, gpu):
        st.basis()
        st.gemm()
        st.slater()
    names = ("logdet", "sign", "gD", "lD")
    a, b = cpu.arrays(names), gpu.arrays(names)
    out["singular"] = {"cpu_logdet": [[str(x) for x in row] for row in a["logdet"]],
                       "gpu_logdet": [[str(x) for x in row] for row in b["logdet"]],
                       "cpu_sign": a["sign"].tolist(), "gpu_sign": b["sign"].tolist(),
                       "compare": S.compare_arrays(a, b)}
    return out


@pytest.fixture(scope="module")
def sim():
    result = simulator_results(os.path.abspath(__file__), MARKER, timeout=600)
    if "skip" in result:
        pytest.skip(result["skip"])
    return result


def test_simulator_is_not_a_gpu(sim):
    assert sim["simulated"] is True and sim["available"] is False
    assert sim["n_chunks"] >= 3  # the basis kernel really ran over several chunks


@pytest.mark.parametrize("kind", ["f64", "f32", "kahan32"])
def test_gpu_kernels_equal_cpu_twin(sim, kind):
    """Every phase (basis + layout conversion, GEMM, Slater, Jastrow) and the whole state after the
    start and after a step (positions, drift, ln|ψ|, E_L, random streams, decisions): bit for bit."""
    r = sim["twins"][kind]
    for phase, arrays in r["phases"].items():
        for name, c in arrays.items():
            assert c["equal"], (kind, phase, name, c)
    assert len(r["steps"]) == 2
    for k, state in enumerate(r["steps"]):
        for name, c in state.items():
            assert c["equal"], (kind, k, name, c)
    assert r["accepted_cpu"] == r["accepted_gpu"]


def test_twin_steps_mix_accept_and_reject(sim):
    acc = sim["accepted_after_one_step"]
    assert 0 < sum(acc) < len(acc), acc  # both branches of the accept kernel ran
    assert sim["twins"]["f64"]["accepted_cpu"] == sum(acc)


def test_singular_slater_matrix(sim):
    s = sim["singular"]
    assert s["cpu_logdet"][0][0] == "-inf" and s["gpu_logdet"][0][0] == "-inf"
    assert s["cpu_sign"][0][0] == 0.0 and s["gpu_sign"][0][0] == 0.0
    for name, c in s["compare"].items():
        assert c["equal"], (name, c)  # NaN where the CPU has NaN (equal_nan), the rest bit for bit


# --------------------------------------------------------------------------------------------
# no simulator
# --------------------------------------------------------------------------------------------
def test_import_without_numba_cuda():
    code = ("import sys; sys.modules['numba.cuda'] = None\n"
            "from qmckit.backends import cuda_molecule_step as S\n"
            "from qmckit.studies import speedup_001 as m\n"
            "assert S.available() is False\n"
            "mol = m.synthetic_molecule(8, 25, seed=0, formula='CH2')\n"
            "s = mol.step_system()\n"
            "assert s.N == 8 and s.n_basis == 25 and int(s.chunk_ao[-1]) == 25\n"
            "print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]


def test_fig7_data_and_synthetic_sizes():
    from qmckit.backends import cuda_molecule_step as S
    from qmckit.studies import speedup_001 as m

    from qmckit.systems import molecule

    ref = m.reference_data()
    rows = ref["fig7"]
    assert [r["name"] for r in rows][0] == "Acetic acid" and len(rows) == 7
    assert [(r["n_electrons"], r["n_basis"]) for r in rows] == [(32, 80), (56, 150), (70, 200), (96, 326), (102, 280),
                                                                 (116, 387), (152, 516)]
    assert [r["total_standard"] for r in rows] == [3.2, 4.4, 6.3, 5.3, 4.5, 4.9, 6.6]
    assert [r["total_ksf"] for r in rows] == [3.1, 4.1, 5.6, 4.5, 3.9, 4.1, 5.3]
    assert [r["basis_functions"] for r in rows] == [18.2, 25.9, 30.2, 31.6, 29.2, 28.5, 33.3]
    assert [r["ee_jastrow"] for r in rows] == [0.7, 2.1, 3.4, 6.4, 7.2, 9.3, 14.0]
    assert "10.1016/j.cpc.2007.03.004" in ref["source"]
    for k, (name, ne, nbf) in enumerate(m.fig7_sizes()):
        mol = m.synthetic_molecule(ne, nbf, seed=k, name=name)
        s = mol.step_system()
        assert (s.N, s.n_basis, mol.n_electrons) == (ne, nbf, ne), name
        assert int(s.chunk_ao[-1]) == nbf and np.all(np.diff(s.chunk_ao) <= S.DEFAULT_CHUNK_FUNCTIONS)
        assert mol.p.shape == (molecule.HEADER + 4 * len(mol.symbols) + nbf * ne // 2 + mol.basis.packed.size,)
        d = np.linalg.norm(mol.coordinates[:, None] - mol.coordinates[None], axis=-1)
        assert d[np.triu_indices(len(d), 1)].min() > 1.8  # no two nuclei on top of each other
    with pytest.raises(ValueError):
        m.synthetic_molecule(32, 60, name="Acetic acid")  # fewer functions than the minimal basis


def test_basis_chunks_equal_whole_basis():
    from qmckit.backends.cuda_molecule_step import basis_chunks
    from qmckit.studies import speedup_001 as m
    from qmckit.systems.gaussian_basis import basis_derivatives

    mol = m.synthetic_molecule(14, 40, seed=2, formula="C2H2")
    pts = np.random.default_rng(1).normal(size=(7, 3)) * 2
    whole = basis_derivatives(mol.basis, pts)
    for size in (1, 6, 9, 24):
        chunks, ao = basis_chunks(mol.basis.packed, size)
        assert ao[-1] == 40
        for g in range(chunks.shape[0]):
            part = basis_derivatives(chunks[g], pts)
            assert np.array_equal(part, whole[:, :, ao[g]:ao[g + 1]]), (size, g)


def _h2o_or_synthetic():
    """(kernel parameter vector, positions (4, N, 3), label): H2O / cc-pVDZ with its Jastrow when
    PySCF is there, else a synthetic CH2."""
    rng = np.random.default_rng(42)
    try:
        from qmckit.systems.molecule import Molecule

        mol = Molecule(xyz="h2o", basis="cc-pvdz")
        return mol.kernel_params, mol.initial_positions(4, rng), "h2o"
    except ImportError:
        from qmckit.studies import speedup_001 as m

        mol = m.synthetic_molecule(8, 25, seed=3, formula="CH2")
        return mol.p, m.initial_positions(mol.coordinates, mol.charges, 4, rng), "synthetic"


@pytest.fixture
def h2o():
    from qmckit.backends.cuda_molecule_step import CpuStep, unpack_params

    p, pos, label = _h2o_or_synthetic()
    st = CpuStep(unpack_params(p), pos, seed=7, tau=0.01, kind="f64")
    st.start()
    return p, pos, st, label


def test_cpu_phases_match_molecule_module(h2o):
    from qmckit.systems import molecule as M
    from qmckit.systems.gaussian_basis import basis_derivatives

    p, pos, st, _ = h2o
    N, nbf = st.system.N, st.system.n_basis
    basis = st.system.packed
    assert np.array_equal(st.A.reshape(-1, 5, nbf), basis_derivatives(basis, pos.reshape(-1, 3)))
    for w in range(pos.shape[0]):
        R = pos[w].copy()
        cache = np.zeros(M.cache_size_for(N, nbf))
        e_ref = M.local_energy(R, p, cache)
        assert abs(st.eloc[w] - e_ref) <= 1e-12 * abs(e_ref), (w, st.eloc[w], e_ref)
        lp_ref = M.log_psi(R, p)
        assert abs(st.logpsi[w] - lp_ref) <= 1e-12 * abs(lp_ref), (w, st.logpsi[w], lp_ref)
        g = np.empty(3)
        drift_ref = np.empty((N, 3))
        for i in range(N):
            M.gradient(R, p, cache, i, g)
            drift_ref[i] = g
        assert np.max(np.abs(st.drift[w] - drift_ref)) <= 1e-12 * np.max(np.abs(drift_ref)), w


def test_accept_is_metropolis_hastings(h2o):
    """One step against an independent evaluation: ln|ψ| and the drift at the proposal from the
    molecule module, the Green's-function ratio of the all-electron drift–diffusion move, the
    uniform from the walker's stream w·N, the next proposal from the electrons' streams."""
    from qmckit import rng as R_
    from qmckit.systems import molecule as M

    p, _, st, _ = h2o
    N, nbf, tau = st.system.N, st.system.n_basis, st.tau
    before = {k: np.array(getattr(st, k)) for k in ("R", "Rp", "drift", "logpsi", "eloc", "states", "nacc", "esum")}
    st.step()
    states = before["states"].copy()
    n_acc = 0
    for w in range(st.W):
        Rp = before["Rp"][w].copy()
        cache = np.zeros(M.cache_size_for(N, nbf))
        e_new = M.local_energy(Rp, p, cache)  # also rebuilds the cache for gradient()
        lp_new = M.log_psi(Rp, p)
        v_new = np.empty((N, 3))
        g = np.empty(3)
        for i in range(N):
            M.gradient(Rp, p, cache, i, g)
            v_new[i] = g
        fwd = np.sum((Rp - before["R"][w] - tau * before["drift"][w]) ** 2)
        bwd = np.sum((before["R"][w] - Rp - tau * v_new) ** 2)
        log_a = 2 * (lp_new - before["logpsi"][w]) + (fwd - bwd) / (2 * tau)
        u = R_.uniform(states, w * N)
        acc = u < math.exp(min(log_a, 0.0))
        assert st.accepted[w] == int(acc), (w, log_a, u)
        n_acc += acc
        R_ref = Rp if acc else before["R"][w]
        v_ref = v_new if acc else before["drift"][w]
        assert np.array_equal(st.R[w], R_ref)
        assert np.max(np.abs(st.drift[w] - v_ref)) <= 1e-12 * np.max(np.abs(v_ref))
        e_ref = e_new if acc else before["eloc"][w]
        assert abs(st.eloc[w] - e_ref) <= 1e-12 * abs(e_ref)
        assert abs(st.esum[w] - before["esum"][w] - st.eloc[w]) <= 1e-12 * abs(st.eloc[w])
        for i in range(N):  # the next proposal: two normal pairs from stream w·N + i
            z0, z1 = R_.normal_pair(states, w * N + i)
            z2, _ = R_.normal_pair(states, w * N + i)
            expect = st.R[w, i] + tau * st.drift[w, i] + math.sqrt(tau) * np.array([z0, z1, z2])
            assert np.allclose(st.Rp[w, i], expect, rtol=0, atol=1e-13), (w, i)
    assert np.array_equal(st.states, states)
    assert st.nacc.sum() - before["nacc"].sum() == n_acc


def test_step_is_its_phases_in_order():
    from qmckit.backends.cuda_molecule_step import PHASES, CpuStep
    from qmckit.studies import speedup_001 as m

    mol = m.synthetic_molecule(8, 25, seed=3, formula="CH2")
    system = mol.step_system()
    pos = m.initial_positions(mol.coordinates, mol.charges, 3, np.random.default_rng(5))
    a = CpuStep(system, pos, seed=3, tau=0.02)
    b = CpuStep(system, pos, seed=3, tau=0.02)
    a.start()
    b.start()
    for _ in range(2):
        a.step()
        for name in PHASES:
            b.phase(name)
    x, y = a.arrays(), b.arrays()
    for k in x:
        assert np.array_equal(x[k], y[k], equal_nan=True), k


def test_phase_times_add_up_to_the_step():
    """time_phases: Σ of the phases' medians against the whole step's median, on a step of a few
    hundred µs (loose bounds: the VM is shared)."""
    from qmckit.backends.cuda_molecule_step import PHASES, CpuStep
    from qmckit.studies import speedup_001 as m

    import numba

    mol = m.synthetic_molecule(14, 40, seed=2, formula="C2H2")
    pos = m.initial_positions(mol.coordinates, mol.charges, 4, np.random.default_rng(1))
    st = CpuStep(mol.step_system(), pos, seed=1, tau=0.02)
    st.start()
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # on a loaded 2-core VM a parallel region can wait a scheduler slice
    try:
        t = m.time_phases(st, reps=5, min_time=0.01)
    finally:
        numba.set_num_threads(threads)
    assert set(PHASES) <= set(t) and t["step"]["reps"] == 5
    assert t["phase_sum"]["median_s"] == pytest.approx(sum(t[p]["median_s"] for p in PHASES))
    assert 0.6 < t["phase_sum_over_step"] < 1.6, {k: v for k, v in t.items() if k != "phase_sum"}


def test_twin_step_agrees_with_cpu_step(h2o):
    """TwinStep (the GPU's summation order, per-electron pairs) vs CpuStep (BLAS, symmetric pairs)."""
    from qmckit.backends.cuda_molecule_step import CpuStep, TwinStep, unpack_params

    p, pos, _, _ = h2o
    system = unpack_params(p)
    a = CpuStep(system, pos, seed=3, tau=0.01)
    b = TwinStep(system, pos, seed=3, tau=0.01)
    a.start()
    b.start()
    for k in ("logpsi", "eloc"):
        x, y = getattr(a, k), getattr(b, k)
        assert np.max(np.abs(x - y)) <= 1e-12 * np.max(np.abs(x)), k
    assert np.max(np.abs(a.drift - b.drift)) <= 1e-12 * np.max(np.abs(a.drift))


def test_symmetric_pairs_equal_per_electron():
    from qmckit.backends.cuda_molecule_step import cpu_pairs, cpu_pairs_per_electron
    from qmckit.studies import speedup_001 as m

    mol = m.synthetic_molecule(14, 40, seed=2, formula="C2H2")
    s = mol.step_system()
    R = m.initial_positions(mol.coordinates, mol.charges, 3, np.random.default_rng(2))
    out = []
    for f in (cpu_pairs, cpu_pairs_per_electron):
        arrs = (np.zeros((3, s.N)), np.zeros((3, s.N, 3)), np.zeros((3, s.N)), np.zeros((3, s.N)))
        f(R, s.n, s.atoms, 1, 4.0, 1, 300.0, *arrs)
        out.append(arrs)
    for x, y in zip(*out):
        assert np.max(np.abs(x - y)) <= 1e-13 * np.max(np.abs(x))


def test_kahan_matmul_is_precisions_bit_for_bit():
    from qmckit import precision as P
    from qmckit.backends.cuda_gemm import matmul_kahan_f32_tiled
    from qmckit.backends.cuda_molecule_step import cpu_kahan_matmul

    rng = np.random.default_rng(4)
    A, B = P.gaussian_basis_like(131, 45, rng, 7)  # 131 rows: two full row blocks and a partial one
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    C = np.empty((131, 7), np.float32)
    cpu_kahan_matmul(A32, B32, C)
    assert np.array_equal(C, P.matmul_kahan_f32(A32, B32))
    assert np.array_equal(C, matmul_kahan_f32_tiled(A32, B32, 16))


def test_speedup_rows_tables_and_trends():
    from qmckit.backends.cuda_molecule_step import PHASES
    from qmckit.studies import speedup_001 as m

    def timings(scale, kahan):
        t = {p: {"median_s": scale * (k + 1)} for k, p in enumerate(PHASES)}
        t["step"] = {"median_s": scale * 15}
        t["gemm_kahan32"] = {"median_s": scale * 2 * kahan}
        return t

    sizes = m.fig7_sizes()[:3]
    cpu = {"one": {"walkers": 10, "sizes": [{"name": n, "n_electrons": ne, "n_basis": nb, "walkers": 10,
                                             "kinds": {"f32": timings(10.0, 3), "f64": timings(20.0, 3)}}
                                            for n, ne, nb in sizes]}}
    gpu = {"sizes": [{"name": n, "walkers": 100, "transfer_s": 1.0,
                      "kinds": {"f32": timings(1.0 + k, 1.0 + 0.5 * k), "f64": timings(2.0, 1)}}
                     for k, (n, ne, nb) in enumerate(sizes)]}
    rows = m.speedup_rows(cpu, gpu)
    assert [r["name"] for r in rows] == [s[0] for s in sizes]
    r0 = rows[0]
    sp = r0["speedup_vs_one"]
    # per walker-step: CPU 10·(k+1)/10, GPU 1·(k+1)/100 → every phase 100×
    for p in PHASES:
        assert sp[p] == pytest.approx(100.0)
    assert sp["total_standard"] == pytest.approx(100.0)
    assert sp["total_ksf"] == pytest.approx(100.0)  # GPU Kahan GEMM as fast as its standard GEMM here
    assert r0["ksf_penalty"] == pytest.approx(1.0)
    assert rows[2]["ksf_penalty"] == pytest.approx((15 - 2 + 4) / 15)
    assert r0["paper"]["total_standard"] == 3.2
    port = (1 + 2 + 4) / 100 + 1.0 / 100 + (3 + 5) / 1
    assert sp["total_001_port"] == pytest.approx(15.0 / port)
    a = m.amdahl_rows(r0["cpu_one"]["f32"])
    assert sum(a["shares"].values()) == pytest.approx(1.0)
    assert a["bound_basis_free"] == pytest.approx(15 / 14)
    text = m.markdown_tables(rows, ("one",))
    assert "total std" in text and "Acetic acid" in text and "Amdahl" in text
    tr = m.trends(rows, "one")
    assert tr["ksf_penalty_vs_size_rank_corr"] == pytest.approx(1.0)
    # CPU only (no GPU): times and shares, no speedups
    rows = m.speedup_rows(cpu, None)
    assert "speedup_vs_one" not in rows[0] and "Time per walker-step" in m.markdown_tables(rows)


if __name__ == "__main__":  # the simulator child
    print(MARKER + json.dumps(_child()))
