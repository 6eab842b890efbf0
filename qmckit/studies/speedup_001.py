"""Study 001 (Anderson, Goddard, Schröder 2007), target T4: the speedup-vs-size table (Fig. 7), redone
with qmckit's five-phase all-electron VMC step (:mod:`qmckit.backends.cuda_molecule_step`) on the
CPU (numba, one thread and all threads) and on the GPU (numba-cuda).

001 timed three GPU kernels (basis functions, the batched orbital GEMM, the e–e Jastrow) against one
Pentium 4 core with ATLAS and reported kernel and end-to-end speedups for seven molecules given by
(N_e, N_bf) (``data/molecules_fig7.json``). Its trends, which a reproduction should show whatever the
hardware: the basis-function speedup is far above the total (Amdahl); the Jastrow speedup rises with
N_e (below 1 for the smallest molecule); the Kahan (KSF) penalty rises with size.

Systems. Timing depends on N_e, N_bf, the number of atoms and the contraction lengths, not on the
chemistry, so every Fig. 7 row becomes a synthetic molecule (:func:`synthetic_molecule`) with the
printed (N_e, N_bf): the row's formula (lysine and arginine + CO2, the 22 electrons by which their
printed N_e exceed their formulas), atoms on a random branched skeleton (bonds 2.8 bohr, H at 2.05),
a cc-pVDZ-like Cartesian basis (heavy atoms 3s2p1d with an 8-primitive general contraction of two s
shells, H 2s1p) topped up with single-primitive d, p, s shells to the printed N_bf, exponents scaled
from carbon's and hydrogen's cc-pVDZ values with random jitter, and random MO coefficients. Its kernel
parameter vector has the layout of :mod:`qmckit.systems.molecule`, so the molecule module's
``log_psi``/``local_energy`` apply to it too.

Timing (:func:`time_phases`): every phase and the whole step, interleaved, median of ``reps``
rounds, each round enough back-to-back calls to last ``min_time`` (GPU: synchronised before and
after). Figures are per walker-step (the CPU and the GPU may run different walker counts: the CPU's
cost is linear in W, the GPU needs large W to fill). Phase times of the f32 pipeline plus the Kahan
GEMM on the same operands give the KSF total (the other phases do not depend on the GEMM's kind).

Speedups (:func:`speedup_rows`): kernel speedups per phase; totals with the standard (f32) and the
Kahan GEMM against the CPU's f32 pipeline (001's CPU used single-precision ATLAS for both columns);
the KSF penalty (GPU kahan32 total / GPU f32 total); the f64 total; and "001's port": basis, GEMM
and Jastrow on the GPU, inversion and the rest on the CPU, plus the transfer of Φ to the host and
the new positions back, as 001 split the work. :func:`amdahl_rows` gives each phase's share.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..backends import cuda_molecule_step as S
from ..systems import molecule as _mol
from ..systems.gaussian_basis import GaussianBasis
from ..resources import data_path

DATA = data_path("molecules_fig7.json")
Z_OF = {"H": 1, "C": 6, "N": 7, "O": 8}
DEFAULT_TAU = 0.005  # bohr²: all-electron moves of the random synthetic wave functions accept ~ half at N ≲ 10

# the formulas used for the synthetic molecules: 001's, except lysine and arginine, whose printed N_e
# exceed their formulas by 22 (a CO2 is added so that the printed N_e is what runs)
FORMULAS = {"Acetic acid": "C2H4O2", "Benzaldehyde": "C7H6O", "[10]Annulene": "C10H10", "Diazobenzene": "C12H10N2",
            "Lysine": "C7H14N2O4", "Arginine": "C7H14N4O4", "HMX": "C4H8N8O8"}

# cc-pVDZ carbon and hydrogen (exponents in bohr⁻²), the templates of the synthetic basis
_C_S = (6665.0, 1000.0, 228.0, 64.71, 21.06, 7.495, 2.797, 0.5215)
_C_S_DIFFUSE = 0.1596
_C_P = (9.439, 2.002, 0.5456)
_C_P_DIFFUSE = 0.1517
_C_D = 0.55
_H_S = (13.01, 1.962, 0.4446)
_H_S_DIFFUSE = 0.122
_H_P = 0.727


def reference_data() -> dict:
    """Fig. 7 and the HMX time budget of study 001 with their citation (``data/molecules_fig7.json``)."""
    return json.loads(DATA.read_text())


def fig7_sizes() -> list[tuple[str, int, int]]:
    """(name, N_e, N_bf) of the seven Fig. 7 rows, as printed."""
    return [(r["name"], r["n_electrons"], r["n_basis"]) for r in reference_data()["fig7"]]


def parse_formula(formula: str) -> list[str]:
    """'C2H4O2' → ['C', 'C', 'O', 'O', 'H', 'H', 'H', 'H'] (heavy atoms first)."""
    import re

    atoms = []
    for sym, count in re.findall(r"([A-Z][a-z]?)(\d*)", formula):
        if sym not in Z_OF:
            raise ValueError(f"element {sym!r} not supported in synthetic molecules ({', '.join(Z_OF)})")
        atoms += [sym] * (int(count) if count else 1)
    return sorted(atoms, key=lambda s: s == "H")


def generic_formula(n_electrons: int) -> str:
    """A formula with ``n_electrons`` (even) electrons for sizes outside Fig. 7: C_k H_m, m ≤ 2k + 2."""
    if n_electrons < 2 or n_electrons % 2:
        raise ValueError(f"closed shells only: n_electrons must be even and ≥ 2, got {n_electrons}")
    if n_electrons <= 6:
        return f"H{n_electrons}" if n_electrons > 2 else "H2"
    k = max(1, n_electrons // 8)
    m = n_electrons - 6 * k
    while m > 2 * k + 2:
        k += 1
        m = n_electrons - 6 * k
    if m < 0:
        k, m = n_electrons // 6, n_electrons % 6
    return f"C{k}" + (f"H{m}" if m else "")


class SyntheticMolecule(NamedTuple):
    """A synthetic closed-shell molecule of the size of a Fig. 7 row (bohr, hartree)."""

    name: str
    formula: str
    symbols: tuple
    coordinates: np.ndarray   # (n_atoms, 3) bohr
    charges: np.ndarray       # (n_atoms,)
    basis: GaussianBasis
    coefficients: np.ndarray  # (n_basis, n) random "MO" coefficients
    p: np.ndarray             # kernel parameter vector, layout of qmckit.systems.molecule

    @property
    def n_electrons(self) -> int:
        return int(self.charges.sum())

    @property
    def n_basis(self) -> int:
        return self.basis.n_basis

    def step_system(self, chunk_functions: int = S.DEFAULT_CHUNK_FUNCTIONS) -> S.StepSystem:
        return S.unpack_params(self.p, chunk_functions)


def _skeleton(symbols, rng) -> np.ndarray:
    """Positions (bohr): heavy atoms as a random branched tree (bonds 2.8 bohr), H atoms at 2.05 bohr
    from a random heavy atom; nothing closer than 1.8 bohr to anything placed before."""
    pos = []

    def free(x):
        return all(np.linalg.norm(x - q) > 1.8 for q in pos)

    def direction():
        v = rng.standard_normal(3)
        return v / np.linalg.norm(v)

    heavy = [s for s in symbols if s != "H"]
    for k, _ in enumerate(heavy):
        if k == 0:
            pos.append(np.zeros(3))
            continue
        for _ in range(10000):
            x = pos[rng.integers(0, len(pos))] + 2.8 * direction()
            if free(x):
                pos.append(x)
                break
        else:
            raise RuntimeError("could not place the heavy atoms")
    n_heavy = len(pos)
    for _ in range(len(symbols) - n_heavy):
        for _ in range(10000):
            anchor = pos[rng.integers(0, n_heavy)] if n_heavy else (pos[rng.integers(0, len(pos))] if pos else None)
            x = np.zeros(3) if anchor is None else anchor + 2.05 * direction()
            if not pos or free(x):
                pos.append(x)
                break
        else:
            raise RuntimeError("could not place the hydrogen atoms")
    return np.array(pos)


def _jitter(rng, a, sigma=0.1):
    return float(a * math.exp(sigma * rng.standard_normal()))


def _prim_norm(a, l):
    return (2.0 * a / math.pi) ** 0.75 * (4.0 * a) ** (l / 2.0)


def synthetic_molecule(n_electrons: int, n_basis: int, seed: int = 0, name: str = "", formula: str | None = None,
                       jastrow: bool = True, beta_ee: float = _mol.DEFAULT_BETA_EE,
                       beta_en: float = _mol.DEFAULT_BETA_EN) -> SyntheticMolecule:
    """A synthetic molecule with ``n_electrons`` electrons and exactly ``n_basis`` Cartesian basis functions
    (see the module docstring). ``formula`` defaults to the Fig. 7 row's (by ``name``) or a C_k H_m."""
    formula = formula or FORMULAS.get(name) or generic_formula(n_electrons)
    symbols = parse_formula(formula)
    charges = np.array([Z_OF[s] for s in symbols], dtype=np.float64)
    if int(charges.sum()) != n_electrons:
        raise ValueError(f"formula {formula} has {int(charges.sum())} electrons, not {n_electrons}")
    rng = np.random.default_rng(seed)
    coords = _skeleton(symbols, rng)
    shells = []  # (atom, l, exponents, coefficients)
    for A, s in enumerate(symbols):
        if s == "H":
            e = [_jitter(rng, a) for a in _H_S]
            shells.append((A, 0, e, [_prim_norm(a, 0) * rng.uniform(0.2, 1.0) for a in e]))
            e = _jitter(rng, _H_S_DIFFUSE)
            shells.append((A, 0, [e], [_prim_norm(e, 0)]))
            e = _jitter(rng, _H_P)
            shells.append((A, 1, [e], [_prim_norm(e, 1)]))
        else:
            scale = (Z_OF[s] / 6.0) ** 2
            e = [_jitter(rng, a * scale) for a in _C_S]
            shells.append((A, 0, e, [_prim_norm(a, 0) * rng.uniform(0.2, 1.0) for a in e]))  # "1s"
            shells.append((A, 0, e, [_prim_norm(a, 0) * rng.uniform(-1.0, 1.0) for a in e]))  # "2s": shared exps
            e = _jitter(rng, _C_S_DIFFUSE * scale)
            shells.append((A, 0, [e], [_prim_norm(e, 0)]))
            e = [_jitter(rng, a * scale) for a in _C_P]
            shells.append((A, 1, e, [_prim_norm(a, 1) * rng.uniform(0.2, 1.0) for a in e]))
            e = _jitter(rng, _C_P_DIFFUSE * scale)
            shells.append((A, 1, [e], [_prim_norm(e, 1)]))
            e = _jitter(rng, _C_D * scale)
            shells.append((A, 2, [e], [_prim_norm(e, 2)]))
    base = sum((1, 3, 6)[l] for _, l, _, _ in shells)
    deficit = n_basis - base
    if deficit < 0:
        raise ValueError(f"{formula} needs at least {base} basis functions (heavy atoms 15, H 5), got {n_basis}")
    order = [A for A, s in enumerate(symbols) if s != "H"] + [A for A, s in enumerate(symbols) if s == "H"]
    k = 0
    while deficit > 0:  # single-primitive polarisation / diffuse shells, largest that fits, round robin
        A = order[k % len(order)]
        k += 1
        l = 2 if deficit >= 6 else (1 if deficit >= 3 else 0)
        a = float(np.exp(rng.uniform(np.log(0.05), np.log(2.0))))
        shells.append((A, l, [a], [_prim_norm(a, l)]))
        deficit -= (1, 3, 6)[l]
    shells.sort(key=lambda sh: sh[0])  # per atom, in the order made (the general-contraction pair stays adjacent)
    prim_start = np.cumsum([0] + [len(sh[2]) for sh in shells])
    basis = GaussianBasis.from_arrays(coords[[sh[0] for sh in shells]], [sh[1] for sh in shells], prim_start,
                                      np.concatenate([sh[2] for sh in shells]), np.concatenate([sh[3] for sh in shells]),
                                      atom=[sh[0] for sh in shells])
    if basis.n_basis != n_basis:
        raise AssertionError(f"built {basis.n_basis} basis functions, wanted {n_basis}")
    n = n_electrons // 2
    C = rng.standard_normal((n_basis, n)) / math.sqrt(n_basis)
    e_nuc = 0.0
    for A in range(len(symbols)):
        for B in range(A):
            e_nuc += charges[A] * charges[B] / float(np.linalg.norm(coords[A] - coords[B]))
    header = [float(n_electrons), float(n), float(len(symbols)), float(n_basis), float(jastrow), float(beta_ee),
              float(jastrow), float(beta_en), 0.0, e_nuc]
    header += [0.0] * (_mol.HEADER - len(header))  # the polynomial Jastrow terms: off
    p = np.concatenate([header, np.column_stack([coords, charges]).ravel(), C.ravel(), basis.packed])
    return SyntheticMolecule(name or formula, formula, tuple(symbols), coords, charges, basis, C, p)


def initial_positions(coordinates, charges, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
    """(W, N, 3) electrons shared out over the atoms (Z each), alternately spin up and down, Gaussian
    around their nucleus with width 1/Z for an atom's first two and 1 bohr for the others (as
    :meth:`qmckit.systems.molecule.Molecule.initial_positions`)."""
    slots = []
    for A, Z in enumerate(np.asarray(charges).astype(int)):
        slots += [(A, (1.0 / Z if k < 2 else 1.0)) for k in range(Z)]
    order = slots[0::2] + slots[1::2]
    centres = np.array([coordinates[A] for A, _ in order])
    widths = np.array([w for _, w in order])
    return centres[None] + rng.normal(size=(n_walkers, len(order), 3)) * widths[None, :, None]


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------
def _timed(fn, sync, inner):
    sync()
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    sync()
    return (time.perf_counter() - t0) / inner


def time_phases(step, reps: int = 3, min_time: float = 0.0, extra: dict | None = None, whole: bool = True,
                phases=S.PHASES) -> dict:
    """Seconds per call of every phase of ``step`` (a :class:`~qmckit.backends.cuda_molecule_step.CpuStep`
    or ``GpuStep`` that has run :meth:`start`), of the callables in ``extra`` (name → fn) and of the
    whole :meth:`step`; interleaved rounds, median (and min, max) over ``reps`` rounds, each timing
    ``inner`` back-to-back calls chosen (from one warm call) to last ``min_time``."""
    sync = step.synchronize
    calls = {name: (lambda name=name: step.phase(name)) for name in phases}
    calls.update(extra or {})
    if whole:
        calls["step"] = step.step
    inner = {}
    for name, fn in calls.items():  # warm-up (compiles), then one timed call sizes the repetition count
        _timed(fn, sync, 1)
        one = max(_timed(fn, sync, 1), 1e-9)
        inner[name] = max(1, min(1000, int(math.ceil(min_time / one)))) if min_time > 0 else 1
    samples = {name: [] for name in calls}
    for _ in range(max(1, reps)):
        for name, fn in calls.items():
            samples[name].append(_timed(fn, sync, inner[name]))
    out = {name: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "reps": len(v),
                  "calls_per_timing": inner[name]} for name, v in samples.items()}
    total = sum(out[p]["median_s"] for p in phases)
    out["phase_sum"] = {"median_s": total}
    if whole:
        out["phase_sum_over_step"] = total / out["step"]["median_s"]
    return out


def _compile_cpu(kahan: bool = True, f64: bool = True):
    """Compile (or load from numba's cache) every CPU kernel a timing uses, on a tiny system."""
    from ..backends.cuda_molecule_step import CpuStep, cpu_gemm

    mol = synthetic_molecule(8, 25, seed=0, formula="CH2")
    pos = initial_positions(mol.coordinates, mol.charges, 2, np.random.default_rng(0))
    for kind in (("f32", "f64") if f64 else ("f32",)):
        st = CpuStep(mol.step_system(), pos, kind=kind)
        st.start()
        st.step()
        if kind == "f32" and kahan:
            cpu_gemm(st.A, st.B, "kahan32", st.Phi)


def measure_cpu(sizes, walkers: int = 32, reps: int = 3, seed: int = 0, tau: float = DEFAULT_TAU,
                min_time: float = 0.0, kahan: bool = True, f64: bool = True, budget_s: float | None = None,
                log=None) -> dict:
    """CPU phase timings for each (name, N_e, N_bf) in ``sizes``, W = ``walkers``, with the numba and BLAS
    threads this process has. Per size: the f32 pipeline (+ ``gemm_kahan32`` on its operands) and, with
    ``f64``, the f64 pipeline; times per call (W walker-steps). Sizes are skipped (``"skipped"``) once
    ``budget_s`` seconds have passed."""
    import numba

    from ..backends.cuda_molecule_step import CpuStep, cpu_gemm

    out = {"walkers": walkers, "numba_threads": numba.get_num_threads(), "sizes": []}
    t0 = time.perf_counter()
    _compile_cpu(kahan, f64)  # the budget counts measurements, not compilation
    out["compile_s"] = time.perf_counter() - t0
    start = time.perf_counter()
    for k, (name, ne, nbf) in enumerate(sizes):
        t0 = time.perf_counter()
        if budget_s is not None and t0 - start > budget_s:
            out["sizes"].append({"name": name, "n_electrons": ne, "n_basis": nbf, "skipped": "budget"})
            continue
        mol = synthetic_molecule(ne, nbf, seed=seed + k, name=name)
        system = mol.step_system()
        pos = initial_positions(mol.coordinates, mol.charges, walkers, np.random.default_rng(seed + 100 + k))
        row = {"name": name, "n_electrons": ne, "n_basis": nbf, "n_atoms": len(mol.symbols), "walkers": walkers,
               "kinds": {}}
        cpu0 = time.process_time()
        for kind in (("f32", "f64") if f64 else ("f32",)):
            st = CpuStep(system, pos, seed=seed, tau=tau, kind=kind)
            st.start()
            extra = {"gemm_kahan32": lambda st=st: cpu_gemm(st.A, st.B, "kahan32", st.Phi)} if kind == "f32" and kahan else {}
            row["kinds"][kind] = time_phases(st, reps=reps, min_time=min_time, extra=extra)
            del st
        row["wall_s"] = time.perf_counter() - t0
        # CPU seconds of all threads per wall second: ≈ the thread count when the machine was ours,
        # well below it when other load took the cores (then the wall-clock figures are pessimistic)
        row["cpu_over_wall"] = (time.process_time() - cpu0) / row["wall_s"]
        out["sizes"].append(row)
        if log:
            t = row["kinds"]["f32"]
            log(f"  cpu {name:14s} W={walkers} threads={out['numba_threads']}: step f32 "
                f"{1e3 * t['step']['median_s']:.2f} ms ({row['wall_s']:.1f} s, cpu/wall {row['cpu_over_wall']:.2f})")
    return out


_CHILD_MARKER = "SPEEDUP001_CPU="


def measure_cpu_subprocess(threads: int | None, sizes, walkers: int = 32, reps: int = 3, seed: int = 0,
                           tau: float = DEFAULT_TAU, min_time: float = 0.0, kahan: bool = True, f64: bool = True,
                           budget_s: float | None = None, timeout: float = 900.0) -> dict:
    """:func:`measure_cpu` in a fresh Python process whose numba and OpenMP thread counts are ``threads``
    (None: the machine's default) and whose BLAS is single-threaded: the only reliable way to pin numpy's
    BLAS without threadpoolctl. Returns its result (with the child's wall time and stderr tail)."""
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    # BLAS is always single-threaded: the GEMM phase runs one BLAS call per walker inside numba's threads
    # (cuda_molecule_step.cpu_blas_by_block), so the two thread pools never compete for the cores
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = "1"
    if threads is not None:
        for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
            env[var] = str(int(threads))
    args = {"sizes": [list(s) for s in sizes], "walkers": walkers, "reps": reps, "seed": seed, "tau": tau,
            "min_time": min_time, "kahan": kahan, "f64": f64, "budget_s": budget_s}
    code = ("import json, sys\n"
            "from qmckit.studies import speedup_001 as m\n"
            "res = m.measure_cpu(**json.loads(sys.argv[1]), log=lambda s: print(s, file=sys.stderr, flush=True))\n"
            f"print({_CHILD_MARKER!r} + json.dumps(res))\n")
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=repo)
    line = next((l for l in proc.stdout.splitlines() if l.startswith(_CHILD_MARKER)), None)
    if line is None:
        raise RuntimeError(f"CPU timing child failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
    res = json.loads(line[len(_CHILD_MARKER):])
    res["threads_requested"] = threads
    res["child_wall_s"] = time.perf_counter() - t0
    res["log"] = proc.stderr[-4000:]
    return res


# --------------------------------------------------------------------------------------------
# the tables
# --------------------------------------------------------------------------------------------
def per_walker_step(timings: dict, walkers: int) -> dict:
    """Median seconds per walker-step of every phase, ``step``, and the derived totals:
    ``total`` (Σ phases), ``total_kahan32`` (Σ phases with the Kahan GEMM) where measured."""
    out = {}
    for key, value in timings.items():
        if isinstance(value, dict) and "median_s" in value:
            out[key] = value["median_s"] / walkers
    if all(p in out for p in S.PHASES):
        out["total"] = sum(out[p] for p in S.PHASES)
        if "gemm_kahan32" in out:
            out["total_kahan32"] = out["total"] - out["gemm"] + out["gemm_kahan32"]
    return out


def _ratio(a, b):
    return a / b if a is not None and b not in (None, 0) and math.isfinite(a) and math.isfinite(b) else None


def speedup_rows(cpu: dict, gpu: dict | None = None, reference: dict | None = None) -> list[dict]:
    """One row per size: CPU and GPU times per walker-step of the f32 pipeline (and f64 where both have
    it), kernel speedups, totals (standard, KSF, f64), the KSF penalty, 001's port, and 001's columns.

    ``cpu``: {"one": measure_cpu result, "all": measure_cpu result} (either may be missing);
    ``gpu``: {"sizes": [{"name", "walkers", "kinds": {"f32": timings, "f64": timings},
    "transfer_s": ...}, …]} (None: CPU only)."""
    reference = reference or {r["name"]: r for r in reference_data()["fig7"]}
    gpu_by = {r["name"]: r for r in (gpu or {}).get("sizes", []) if "kinds" in r}
    rows = []
    names = [r["name"] for r in (cpu.get("one") or cpu.get("all"))["sizes"]]
    measured = {label: {r["name"]: r for r in cpu[label]["sizes"] if "kinds" in r} for label in ("one", "all")
                if cpu.get(label)}
    for name in names:
        row = {"name": name}
        for label in ("one", "all"):
            size = measured.get(label, {}).get(name)
            if size is None:
                continue
            row["n_electrons"], row["n_basis"] = size["n_electrons"], size["n_basis"]
            row[f"cpu_{label}"] = {k: per_walker_step(v, size["walkers"]) for k, v in size["kinds"].items()}
        g = gpu_by.get(name)
        if g:
            row["gpu"] = {k: per_walker_step(v, g["walkers"]) for k, v in g["kinds"].items()}
            row["gpu_walkers"] = g["walkers"]
            if g.get("transfer_s") is not None:
                row["gpu_transfer_per_walker_s"] = g["transfer_s"] / g["walkers"]
            for label in ("one", "all"):
                c32 = row.get(f"cpu_{label}", {}).get("f32")
                c64 = row.get(f"cpu_{label}", {}).get("f64")
                g32 = row["gpu"].get("f32", {})
                g64 = row["gpu"].get("f64", {})
                if not c32:
                    continue
                sp = {p: _ratio(c32.get(p), g32.get(p)) for p in S.PHASES}
                sp["gemm_kahan32"] = _ratio(c32.get("gemm"), g32.get("gemm_kahan32"))  # 001: CPU single vs GPU KSF
                sp["total_standard"] = _ratio(c32.get("total"), g32.get("total"))
                sp["total_ksf"] = _ratio(c32.get("total"), g32.get("total_kahan32"))
                sp["step_measured"] = _ratio(c32.get("step"), g32.get("step"))
                if c64 and g64:
                    sp["total_f64"] = _ratio(c64.get("total"), g64.get("total"))
                if "gpu_transfer_per_walker_s" in row and all(p in g32 for p in S.PHASES):
                    port = (g32["basis"] + g32["gemm"] + g32["jastrow"] + row["gpu_transfer_per_walker_s"]
                            + c32["slater"] + c32["accept"])
                    sp["total_001_port"] = _ratio(c32.get("total"), port)
                row[f"speedup_vs_{label}"] = sp
            g = row["gpu"].get("f32", {})
            row["ksf_penalty"] = _ratio(g.get("total_kahan32"), g.get("total"))
        ref = reference.get(name)
        if ref:
            row["paper"] = {k: ref[k] for k in ("total_standard", "total_ksf", "basis_functions", "ee_jastrow")}
            row["paper"]["ksf_penalty"] = ref["total_standard"] / ref["total_ksf"]
        rows.append(row)
    return rows


def amdahl_rows(times: dict) -> dict:
    """Share of each phase in Σ phases (``times``: per-walker-step seconds of one pipeline, as
    :func:`per_walker_step` gives), and the Amdahl bound 1/share_rest if only the basis evaluation,
    or basis + GEMM + Jastrow (001's port) became free."""
    total = sum(times[p] for p in S.PHASES)
    shares = {p: times[p] / total for p in S.PHASES}
    rest_001 = shares["slater"] + shares["accept"]
    return {"shares": shares, "bound_basis_free": 1.0 / (1.0 - shares["basis"]),
            "bound_001_port_free": 1.0 / rest_001 if rest_001 > 0 else math.inf}


def _f(x, spec=".1f"):
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def markdown_tables(rows: list[dict], cpu_labels=("one", "all")) -> str:
    """The speedup table (per CPU baseline), the times, and the Amdahl view, as markdown."""
    lines = []
    has_gpu = any("gpu" in r for r in rows)
    paper = [r.get("paper", {}) for r in rows]
    if has_gpu:
        for label in cpu_labels:
            if not any(f"speedup_vs_{label}" in r for r in rows):
                continue
            title = "one CPU thread (001's baseline was one Pentium 4 core)" if label == "one" else "all CPU threads"
            lines += [f"### Speedup GPU vs {title}", "",
                      "| molecule | N_e | N_bf | basis | GEMM f32 | GEMM KSF | Slater | Jastrow | accept | "
                      "**total std** | **total KSF** | KSF penalty | total f64 | 001's port | "
                      "001 total std | 001 total KSF | 001 BF | 001 Jastrow | 001 KSF penalty |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for r, pp in zip(rows, paper):
                sp = r.get(f"speedup_vs_{label}", {})
                lines.append(
                    f"| {r['name']} | {r.get('n_electrons')} | {r.get('n_basis')} | {_f(sp.get('basis'))} | "
                    f"{_f(sp.get('gemm'))} | {_f(sp.get('gemm_kahan32'))} | {_f(sp.get('slater'))} | "
                    f"{_f(sp.get('jastrow'))} | {_f(sp.get('accept'))} | **{_f(sp.get('total_standard'))}** | "
                    f"**{_f(sp.get('total_ksf'))}** | {_f(r.get('ksf_penalty'), '.2f')} | {_f(sp.get('total_f64'))} | "
                    f"{_f(sp.get('total_001_port'))} | {_f(pp.get('total_standard'))} | {_f(pp.get('total_ksf'))} | "
                    f"{_f(pp.get('basis_functions'))} | {_f(pp.get('ee_jastrow'))} | {_f(pp.get('ksf_penalty'), '.2f')} |")
            lines.append("")
    # times
    head = "| molecule | N_e | N_bf | where | " + " | ".join(S.PHASES) + " | GEMM KSF | Σ phases | whole step | Σ/step |"
    lines += ["### Time per walker-step (µs), f32 pipeline", "", head, "|---|---:|---:|---|" + "---:|" * (len(S.PHASES) + 4)]
    for r in rows:
        for where, key in (("CPU 1 thread", "cpu_one"), ("CPU all threads", "cpu_all"), ("GPU", "gpu")):
            t = r.get(key, {}).get("f32")
            if not t:
                continue
            cells = " | ".join(_f(1e6 * t[p], ".3g") for p in S.PHASES)
            ratio = _ratio(t.get("total"), t.get("step"))
            lines.append(f"| {r['name']} | {r.get('n_electrons')} | {r.get('n_basis')} | {where} | {cells} | "
                         f"{_f(1e6 * t['gemm_kahan32'] if 'gemm_kahan32' in t else None, '.3g')} | "
                         f"{_f(1e6 * t['total'], '.4g')} | {_f(1e6 * t['step'] if 'step' in t else None, '.4g')} | "
                         f"{_f(ratio, '.2f')} |")
    lines.append("")
    # Amdahl
    lines += ["### Amdahl view: share of each phase in the step (f32 pipeline)", "",
              "| molecule | where | " + " | ".join(S.PHASES) + " | bound if basis free | bound if 001's kernels free |",
              "|---|---|" + "---:|" * (len(S.PHASES) + 2)]
    for r in rows:
        for where, key in (("CPU 1 thread", "cpu_one"), ("CPU all threads", "cpu_all"), ("GPU", "gpu")):
            t = r.get(key, {}).get("f32")
            if not t or not all(p in t for p in S.PHASES):
                continue
            a = amdahl_rows(t)
            cells = " | ".join(f"{100 * a['shares'][p]:.1f} %" for p in S.PHASES)
            lines.append(f"| {r['name']} | {where} | {cells} | {_f(a['bound_basis_free'], '.2f')} | "
                         f"{_f(a['bound_001_port_free'], '.2f')} |")
    budget = reference_data()["hmx_time_budget"]["cpu_share"]
    lines += ["", f"001 §6, HMX on one Pentium 4: basis functions {100 * budget['basis_functions']:.0f} %, matrix "
              f"multiplication {100 * budget['matrix_multiplication']:.0f} %, e–e Jastrow "
              f"{100 * budget['ee_jastrow']:.1f} %, rest (inversion, e–n Jastrow, DMC, statistics) "
              f"{100 * budget['rest']:.1f} %.", ""]
    return "\n".join(lines)


def trends(rows: list[dict], label: str = "one") -> dict:
    """001's four trends checked on ``rows`` (None where the figures are missing):
    BF speedup ≫ total; Jastrow speedup rising with N_e; KSF penalty rising with size; the total
    bounded by the Amdahl limit of the phases that accelerate least."""
    sp = [(r.get("n_electrons"), r.get("n_basis"), r.get(f"speedup_vs_{label}"), r.get("ksf_penalty")) for r in rows]
    sp = [s for s in sp if s[2]]
    if len(sp) < 2:
        return {}
    ne = np.array([s[0] for s in sp], float)
    size = np.array([s[0] * s[1] for s in sp], float)
    bf = np.array([s[2].get("basis") or np.nan for s in sp])
    tot = np.array([s[2].get("total_standard") or np.nan for s in sp])
    jas = np.array([s[2].get("jastrow") or np.nan for s in sp])
    pen = np.array([s[3] or np.nan for s in sp])

    def rank_corr(x, y):
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() < 3:
            return None
        rx = np.argsort(np.argsort(x[ok]))
        ry = np.argsort(np.argsort(y[ok]))
        return float(np.corrcoef(rx, ry)[0, 1])

    return {"bf_over_total_min": float(np.nanmin(bf / tot)) if np.isfinite(bf / tot).any() else None,
            "jastrow_vs_ne_rank_corr": rank_corr(ne, jas), "ksf_penalty_vs_size_rank_corr": rank_corr(size, pen),
            "ksf_penalty_first_last": [float(pen[0]), float(pen[-1])] if len(pen) else None}


__all__ = ["fig7_sizes", "reference_data", "synthetic_molecule", "SyntheticMolecule", "initial_positions",
           "time_phases", "measure_cpu", "measure_cpu_subprocess", "per_walker_step", "speedup_rows", "amdahl_rows",
           "markdown_tables", "trends", "FORMULAS"]
