#!/usr/bin/env python
"""Single-core VMC throughput of qmckit for interacting trapped bosons, next to plain numpy.

What is measured (all on ONE core: numba/OpenMP/BLAS threads are forced to 1 before import)
-----------------------------------------------------------------------------------------
System: hard-sphere bosons in an elliptic trap (qmckit.systems.bec), "B4-like" parameters
λ = √8, a = 0.15155, α = 0.7687 for every N (the thesis's B4 point is N = 500; the same a and α
are used for N = 10 and 100 so that only N changes).

* qmckit, drift sampler (importance sampling, exact Metropolis–Hastings, drift cap on),
  Δt = 0.01 (acceptance ≈ 0.96–0.99), and qmckit, brute-force sampler (cube step tuned during
  equilibration to 50 % acceptance, the driver's default target).
* numpy: the same algorithm in plain numpy, vectorised over walkers — particle i is moved in all
  W walkers at once; its old and new distances to the N−1 others, the Jastrow ratio, the drift
  (with the same Umrigar cap) and the Metropolis–Hastings ratio are array operations; the local
  energy is the same O(N²) formula on (walkers, N, N) arrays. It is checked against qmckit's
  kernels on a configuration (local energy, ln ψ ratio and ∇ ln ψ, to 1e-10) before any timing.

Two modes per implementation:
  "moves"  sweeps with measure=False: N single-particle moves per walker per sweep, no energy;
  "full"   sweeps with measure=True: N moves + one local energy per walker per sweep
           = one MC cycle (the thesis's unit).

Definitions (counted, not measured, work):
  particle moves/s  = W · n_sweeps · N / t   (proposed single-particle moves)
  pair evals/s      moves: each move counts N−1 pairs (moved particle against the others)
                    full:  each cycle counts N(N−1) + N(N−1)/2 pairs (N moves + one E_L)
  MC cycles/s       = W · n_sweeps / t       (full mode; moves mode reports sweeps/s the same way)
The project goal is 1e8 pair evaluations per second per core; the fraction of it is reported.
(qmckit's test_move computes old and new distance of each pair and accept_move touches every
pair once more; the definition above counts each moved-particle pair once regardless.)

Each timing runs enough sweeps to take ≳ 1 s (calibrated), is repeated 5 times after a warm-up
that compiles everything, and the MEDIAN (min/max) is quoted.

Usage
  python benchmarks/vmc_throughput.py              # full run (~2–3 min), writes benchmarks/results/
  python benchmarks/vmc_throughput.py --quick      # ~10 s smoke run, writes nothing
  python benchmarks/vmc_throughput.py --quick --out /tmp/bench   # smoke run, write there
"""
from __future__ import annotations

import os

# single core: must be set before numba / numpy / qmckit are imported
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

from qmckit.methods.vmc import VMC  # noqa: E402
from qmckit.systems import bec  # noqa: E402
from qmckit.systems.bec import TrappedBosons  # noqa: E402
from qmckit.walkers import Walkers  # noqa: E402

GOAL_PAIRS_PER_S = 1e8
LAM = 2.8284271247461903  # √8
A = 0.15155
ALPHA = 0.7687
DT = 0.01
TOL = 1e-10


# ============================================================================================
# plain-numpy reference (vectorised over walkers)
# ============================================================================================
class NumpyVMC:
    """Drift-sampler VMC for trapped hard-sphere bosons in plain numpy, vectorised over walkers.

    ψ = Π_i exp(−α(x² + y² + λz²)) Π_{i<j} (1 − a/r_ij); proposal r' = r + Δt·s·∇_i ln ψ + √Δt χ
    with the Umrigar cap s (as qmckit); acceptance |ψ'/ψ|² G(r'→r)/G(r→r'); overlap rejected.
    No cache: ∇_i ln ψ at the old position is recomputed from the distances each move.
    """

    def __init__(self, positions, alpha, lam, a, dt, seed, drift_cap=True, chunk_elems=2_000_000):
        self.R = np.array(positions, dtype=np.float64)  # (W, N, 3)
        self.alpha, self.lam, self.a, self.dt = float(alpha), float(lam), float(a), float(dt)
        self.drift_cap = drift_cap
        self.rng = np.random.default_rng(seed)
        self.wvec = np.array([1.0, 1.0, self.lam])  # ∇ of the Gaussian: −2α (x, y, λz)
        self.chunk_elems = chunk_elems

    # --- one-particle pieces ----------------------------------------------------------------
    def _pair_terms(self, r_i, i):
        """Distances of r_i (W,3) to every particle; self-distance set to +inf (contributes 0)."""
        d = r_i[:, None, :] - self.R  # (W, N, 3): r_i − r_j
        r = np.sqrt(np.einsum("wnk,wnk->wn", d, d))
        r[:, i] = np.inf
        return d, r

    def _grad(self, r_i, d, r):
        """∇_i ln ψ (W,3): −2α(x, y, λz) + Σ_j u'(r)/r · (r_i − r_j)."""
        c = self.a / (r * r * (r - self.a))
        return -2.0 * self.alpha * r_i * self.wvec + np.einsum("wn,wnk->wk", c, d)

    def _scale(self, g):
        if not self.drift_cap:
            return np.ones(g.shape[0])
        v2dt = np.einsum("wk,wk->w", g, g) * self.dt
        safe = np.where(v2dt < 1e-12, 1.0, v2dt)
        return np.where(v2dt < 1e-12, 1.0, (np.sqrt(1.0 + 2.0 * safe) - 1.0) / safe)

    def log_ratio(self, i, r_new):
        """(ln|ψ(R')/ψ(R)| (W,), ∇_i ln ψ(R') (W,3), ∇_i ln ψ(R) (W,3)); −inf on overlap."""
        r_old = self.R[:, i, :].copy()
        d_o, r_o = self._pair_terms(r_old, i)
        g_old = self._grad(r_old, d_o, r_o)
        lr, g_new = self._ratio_given_old(i, r_old, r_o, r_new)
        return lr, g_new, g_old

    def _ratio_given_old(self, i, r_old, r_o, r_new):
        """ln ψ ratio and ∇_i ln ψ(R'), reusing the old distances r_o (the code path the sweep times)."""
        d_n, r_n = self._pair_terms(r_new, i)
        g_new = self._grad(r_new, d_n, r_n)
        q_new = np.einsum("wk,k,wk->w", r_new, self.wvec, r_new)
        q_old = np.einsum("wk,k,wk->w", r_old, self.wvec, r_old)
        overlap = (r_n <= self.a).any(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            jas = (np.log1p(-self.a / r_n) - np.log1p(-self.a / r_o)).sum(axis=1)
        lr = -self.alpha * (q_new - q_old) + jas
        return np.where(overlap, -np.inf, lr), g_new

    # --- sweeps -----------------------------------------------------------------------------
    def sweep(self, n_sweeps, measure=True):
        W, N, _ = self.R.shape
        dt, sqdt = self.dt, math.sqrt(self.dt)
        energies = np.empty((n_sweeps if measure else 0, W))
        accepted = 0
        for s in range(n_sweeps):
            for i in range(N):
                r_old = self.R[:, i, :].copy()
                d_o, r_o = self._pair_terms(r_old, i)
                g_old = self._grad(r_old, d_o, r_o)
                s_old = self._scale(g_old)[:, None]
                r_new = r_old + dt * s_old * g_old + sqdt * self.rng.standard_normal((W, 3))
                lr, g_new = self._ratio_given_old(i, r_old, r_o, r_new)
                s_new = self._scale(g_new)[:, None]
                f = r_new - r_old - dt * s_old * g_old
                b = r_old - r_new - dt * s_new * g_new
                log_acc = 2.0 * lr + (np.einsum("wk,wk->w", f, f) - np.einsum("wk,wk->w", b, b)) / (2.0 * dt)
                u = self.rng.random(W)
                with np.errstate(invalid="ignore"):
                    ok = (lr > -np.inf) & (u < np.exp(np.minimum(log_acc, 0.0)))
                self.R[ok, i, :] = r_new[ok]
                accepted += int(ok.sum())
            if measure:
                energies[s] = self.local_energy()
        return energies, accepted / (n_sweeps * W * N) if n_sweeps else 0.0

    def local_energy(self, R=None):
        """E_L of every walker (W,), O(N²) on (walkers, N, N) arrays (chunked over walkers)."""
        R = self.R if R is None else R
        W, N, _ = R.shape
        out = np.empty(W)
        step = max(1, self.chunk_elems // (N * N))
        a, alpha, lam = self.a, self.alpha, self.lam
        for w0 in range(0, W, step):
            X = R[w0:w0 + step]
            D = X[:, :, None, :] - X[:, None, :, :]  # r_i − r_j
            r = np.sqrt(np.einsum("wijk,wijk->wij", D, D))
            idx = np.arange(N)
            r[:, idx, idx] = np.inf
            du = a / (r * (r - a))  # u'(r)
            g = -2.0 * alpha * X * self.wvec + np.einsum("wij,wijk->wik", du / r, D)
            kinetic = N * alpha * (2.0 + lam) + 0.5 * (du * du).sum(axis=(1, 2)) \
                - 0.5 * np.einsum("wik,wik->w", g, g)
            potential = 0.5 * np.einsum("wik,k,wik->w", X, np.array([1.0, 1.0, lam * lam]), X)
            out[w0:w0 + step] = kinetic + potential
        return out


# ============================================================================================
# correctness check of the numpy reference against qmckit's kernels
# ============================================================================================
def check_reference(system, walkers, ref, rng, n_moves=6):
    """Same positions → same E_L, ln ψ ratio and gradients (to 1e-10), or raise."""
    p = system.kernel_params
    W, N, _ = walkers.positions.shape
    ref.R[...] = walkers.positions
    e_np = ref.local_energy()
    worst = {"local_energy": 0.0, "log_ratio": 0.0, "grad_new": 0.0, "grad_old": 0.0}
    for w in range(W):
        R = walkers.positions[w].copy()
        cache = np.zeros(system.cache_size())
        bec.recompute(R, p, cache)
        e_q = bec.local_energy(R, p, cache)
        err = abs(e_q - e_np[w]) / max(1.0, abs(e_q))
        worst["local_energy"] = max(worst["local_energy"], err)
        if not err <= TOL:
            raise SystemExit(f"numpy reference FAILED: local energy N={N} walker {w}: "
                             f"qmckit {e_q!r} numpy {e_np[w]!r}")
    for k in range(n_moves):
        i = int(rng.integers(N))
        disp = rng.normal(scale=0.05, size=(W, 3))
        r_new = walkers.positions[:, i, :] + disp
        if k == n_moves - 1 and N > 1:  # force one overlap: put particle i onto another one
            j = (i + 1) % N
            r_new = walkers.positions[:, j, :] + 0.5 * A * np.array([1.0, 0.0, 0.0])
        lr_np, gn_np, go_np = ref.log_ratio(i, r_new)
        for w in range(W):
            R = walkers.positions[w].copy()
            cache = np.zeros(system.cache_size())
            bec.recompute(R, p, cache)
            g_old = np.empty(3)
            bec.gradient(R, p, cache, i, g_old)
            g_new = np.empty(3)
            lr_q = bec.test_move(R, p, cache, i, r_new[w].copy(), g_new)
            if lr_q == -np.inf or lr_np[w] == -np.inf:
                if lr_q != lr_np[w]:
                    raise SystemExit(f"numpy reference FAILED: overlap flag N={N} w={w} i={i}: "
                                     f"qmckit {lr_q!r} numpy {lr_np[w]!r}")
                continue
            errs = {"log_ratio": abs(lr_q - lr_np[w]) / max(1.0, abs(lr_q)),
                    "grad_new": np.abs(g_new - gn_np[w]).max() / max(1.0, np.abs(g_new).max()),
                    "grad_old": np.abs(g_old - go_np[w]).max() / max(1.0, np.abs(g_old).max())}
            for name, err in errs.items():
                worst[name] = max(worst[name], float(err))
                if not err <= TOL:
                    raise SystemExit(f"numpy reference FAILED: {name} N={N} w={w} i={i}: rel. error {err:.3e}")
    return worst


# ============================================================================================
# timing
# ============================================================================================
def calibrate(fn, target_s, min_calib_s):
    """Number of sweeps for which one call of fn(n) takes ≈ target_s."""
    n = 1
    while True:
        t0 = time.perf_counter()
        fn(n)
        t = time.perf_counter() - t0
        if t >= min_calib_s or n >= 1 << 20:
            break
        n = 2 * n if t < min_calib_s / 8 else max(n + 1, math.ceil(n * 1.1 * min_calib_s / t))
    return max(1, math.ceil(n * target_s / t))


def time_interleaved(fns, n_sweeps, reps):
    """Time every fn(n_sweeps[k]) ``reps`` times, round-robin (rep 1 of all, rep 2 of all, ...),
    so that load from elsewhere on the host hits all cases alike."""
    out = [{"times": [], "cpu": [], "accs": [], "emeans": []} for _ in fns]
    for _ in range(reps):
        for fn, n, o in zip(fns, n_sweeps, out):
            c0 = time.process_time()
            t0 = time.perf_counter()
            energies, acc = fn(n)
            o["times"].append(time.perf_counter() - t0)
            o["cpu"].append(time.process_time() - c0)
            o["accs"].append(float(acc))
            if energies.size:
                o["emeans"].append(float(energies.mean()))
    return out


def record(impl, sampler, mode, N, W, n_sweeps, times, cpu, accs, emeans):
    times = np.array(times)
    med = float(np.median(times))
    sweeps_total = W * n_sweeps  # walker-sweeps (= MC cycles in full mode)
    moves = sweeps_total * N
    pairs_per_move = N - 1
    pairs = moves * pairs_per_move + (sweeps_total * N * (N - 1) // 2 if mode == "full" else 0)

    def rates(t):
        return {"moves_per_s": moves / t, "pairs_per_s": pairs / t, "cycles_per_s": sweeps_total / t}

    r_med, r_fast, r_slow = rates(med), rates(float(times.min())), rates(float(times.max()))
    return {
        "impl": impl, "sampler": sampler, "mode": mode, "N": N, "walkers": W, "n_sweeps": n_sweeps,
        "times_s": times.tolist(), "time_median_s": med, "cpu_times_s": list(cpu),
        # process CPU time / wall time: < 1 means this process was descheduled (other load on the host)
        "cpu_over_wall_median": float(np.median(np.array(cpu) / times)),
        "moves_per_cpu_s_median": moves / float(np.median(cpu)),
        "pairs_per_cpu_s_median": pairs / float(np.median(cpu)),
        "acceptance": float(np.mean(accs)),
        "energy_per_particle_mean": (float(np.mean(emeans)) / N if emeans else None),
        "pairs_per_timing": int(pairs), "moves_per_timing": int(moves),
        **{k: v for k, v in r_med.items()},
        **{k + "_max": v for k, v in r_fast.items()},
        **{k + "_min": v for k, v in r_slow.items()},
        "fraction_of_goal": r_med["pairs_per_s"] / GOAL_PAIRS_PER_S,
    }


def bench_size(N, W, args, log):
    rows = []
    system = TrappedBosons(n=N, lam=LAM, a=A, alpha=ALPHA)
    seq = np.random.SeedSequence([2024, N])
    s_pos, s_walk, s_np, s_chk = seq.spawn(4)
    positions = system.initial_positions(W, np.random.default_rng(s_pos))
    walkers = Walkers.from_positions(positions, s_walk, system.cache_size())
    drift = VMC(system, walkers, sampler="drift", dt=DT)
    drift.sweep(1, measure=True)  # compile (excluded from timings)
    drift.equilibrate(args.equil)
    log(f"N={N:4d} W={W:3d}: equilibrated (drift, Δt={DT}), acceptance {drift.sweep(2, measure=False)[1]:.3f}")

    brute_walkers = walkers.copy()
    brute = VMC(system, brute_walkers, sampler="brute", step=0.5)
    brute.equilibrate(args.equil)

    ref = NumpyVMC(walkers.positions, ALPHA, LAM, A, DT, s_np)
    worst = check_reference(system, walkers, ref, np.random.default_rng(s_chk))
    log(f"N={N:4d}: numpy reference agrees with qmckit (worst rel. errors: "
        + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()) + ")")
    ref.R[...] = walkers.positions
    ref.sweep(1, measure=True)  # warm-up

    cases = []
    for impl, sampler, sweep in (("qmckit", "drift", drift.sweep), ("qmckit", "brute", brute.sweep),
                                 ("numpy", "drift", ref.sweep)):
        for mode in ("moves", "full"):
            cases.append((impl, sampler, mode, functools.partial(sweep, measure=mode == "full")))
    n_sweeps = [calibrate(c[3], args.target, args.calib) for c in cases]
    timings = time_interleaved([c[3] for c in cases], n_sweeps, args.reps)
    for (impl, sampler, mode, _), n, t in zip(cases, n_sweeps, timings):
        row = record(impl, sampler, mode, N, W, n, t["times"], t["cpu"], t["accs"], t["emeans"])
        row["brute_step"] = brute.step if sampler == "brute" and impl == "qmckit" else None
        rows.append(row)
        log(f"  {impl:6s} {sampler:5s} {mode:5s} n_sweeps={n:6d} median {row['time_median_s']:.3f}s "
            f"moves/s {row['moves_per_s']:.3e} pairs/s {row['pairs_per_s']:.3e} "
            f"cycles/s {row['cycles_per_s']:.3e} acc {row['acceptance']:.3f} "
            f"cpu/wall {row['cpu_over_wall_median']:.2f}")
    return rows, worst


# ============================================================================================
# reporting
# ============================================================================================
def source_fingerprint():
    """sha256 (12 hex) of the qmckit sources that set the timed code, as read now (the tree may be dirty)."""
    import hashlib

    import qmckit
    root = Path(qmckit.__file__).resolve().parent
    out = {}
    for rel in ("systems/bec.py", "backends/cpu_kernels.py", "rng.py"):
        try:
            out[rel] = hashlib.sha256((root / rel).read_bytes()).hexdigest()[:12]
        except OSError:
            out[rel] = None
    return out


SOURCES_AT_IMPORT = source_fingerprint()


def machine_info():
    model, mhz = "unknown", None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            if line.startswith("cpu MHz") and mhz is None:
                mhz = float(line.split(":", 1)[1])
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent, timeout=10).stdout.strip() or None
    except Exception:  # noqa: BLE001
        commit = None
    import llvmlite
    return {
        "hostname": socket.gethostname(), "cpu_model": model, "cpu_mhz": mhz,
        "cores_online": os.cpu_count(), "cores_usable": len(os.sched_getaffinity(0)),
        "platform": platform.platform(), "python": platform.python_version(), "numpy": np.__version__,
        "numba": numba.__version__, "llvmlite": llvmlite.__version__,
        "numba_threads": numba.get_num_threads(), "qmckit_git": commit,
        "qmckit_sources_sha256": SOURCES_AT_IMPORT,
    }


def fmt(x):
    return f"{x:.3g}" if x < 1e3 else f"{x:.3e}".replace("e+0", "e").replace("e+", "e")


def markdown(rows, meta):
    out = []
    out.append("| N | W | impl | sampler | mode | acc. | E/N | moves/s | pair evals/s | MC cycles/s | of 1e8 goal | "
               "median t [s] (min–max) | cpu/wall | pair evals/CPU-s |")
    out.append("|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        t = np.array(r["times_s"])
        e = r["energy_per_particle_mean"]
        energy = "–" if e is None else f"{e:.3f}"
        out.append(f"| {r['N']} | {r['walkers']} | {r['impl']} | {r['sampler']} | {r['mode']} | "
                   f"{r['acceptance']:.3f} | {energy} | {fmt(r['moves_per_s'])} | {fmt(r['pairs_per_s'])} | "
                   f"{fmt(r['cycles_per_s'])} | {r['fraction_of_goal']:.1%} | "
                   f"{np.median(t):.2f} ({t.min():.2f}–{t.max():.2f}) | {r['cpu_over_wall_median']:.2f} | "
                   f"{fmt(r['pairs_per_cpu_s_median'])} |")
    out.append("")
    out.append("Speed-up of qmckit (drift) over the numpy reference (ratio of medians; "
               "range = slowest qmckit / fastest numpy … fastest qmckit / slowest numpy):")
    out.append("")
    out.append("| N | mode | qmckit moves/s | numpy moves/s | speed-up |")
    out.append("|---:|---|---:|---:|---:|")
    for r in rows:
        if r["impl"] != "qmckit" or r["sampler"] != "drift":
            continue
        n = next(x for x in rows if x["impl"] == "numpy" and x["N"] == r["N"] and x["mode"] == r["mode"])
        lo = r["moves_per_s_min"] / n["moves_per_s_max"]
        hi = r["moves_per_s_max"] / n["moves_per_s_min"]
        out.append(f"| {r['N']} | {r['mode']} | {fmt(r['moves_per_s'])} | {fmt(n['moves_per_s'])} | "
                   f"{r['moves_per_s'] / n['moves_per_s']:.1f}× ({lo:.1f}–{hi:.1f}) |")
    return "\n".join(out)


def report(rows, meta, table):
    m = meta["machine"]
    best = {}
    for r in rows:
        if r["impl"] == "qmckit":
            best[r["N"]] = max(best.get(r["N"], 0.0), r["pairs_per_s"])
    lines = [
        f"# VMC throughput, {meta['date']} on {m['hostname']}",
        "",
        f"- machine: {m['cpu_model']} ({m['cpu_mhz']} MHz reported), {m['cores_online']} cores online, "
        f"hostname `{m['hostname']}`, {m['platform']}",
        f"- run on ONE core: NUMBA_NUM_THREADS=OMP/MKL/OPENBLAS_NUM_THREADS=1 (numba.get_num_threads() = "
        f"{m['numba_threads']}); load average before/after: {meta['loadavg_before']} / {meta['loadavg_after']}",
        f"- versions: Python {m['python']}, numpy {m['numpy']}, numba {m['numba']} (llvmlite {m['llvmlite']}), "
        f"qmckit `{m['qmckit_git']}` (sha256 of the timed sources at import: "
        + ", ".join(f"{k} `{v}`" for k, v in m["qmckit_sources_sha256"].items()) + ")",
        f"- command: `{meta['command']}` (total wall time {meta['wall_s']:.0f} s)"
        + ("; WARNING: qmckit sources changed on disk during the run (figures are for the version imported "
           "at start)" if meta.get("sources_changed_during_run") else ""),
        f"- system: trapped hard-sphere bosons, B4-like parameters λ = √8 = {LAM}, a = {A}, α = {ALPHA} "
        f"for every N; drift sampler Δt = {DT} (drift cap on), brute sampler step tuned to 50 % acceptance; "
        f"{meta['equil']} equilibration sweeps",
        f"- timing: each figure is the MEDIAN of {meta['reps']} timings (min/max in the table), each "
        f"≈ {meta['target_s']} s of sweeps after a compile/warm-up call (compile time excluded); the "
        "repetitions of all cases of one N are interleaved round-robin so that outside load hits them alike",
        "",
        "Definitions:",
        "",
        "- *moves/s*: proposed single-particle Metropolis moves per second (all walkers).",
        "- *pair evals/s*: each single-particle move counts N−1 pair evaluations (the moved particle "
        "against the others); each local energy counts N(N−1)/2. Mode *moves* = sweeps with "
        "`measure=False` (moves only); mode *full* = sweeps with `measure=True` (N moves + one local "
        "energy per walker per sweep).",
        "- *MC cycles/s*: one cycle = N single-particle moves + one local energy of one walker "
        "(the thesis's unit); in mode *moves* the column is walker-sweeps/s without the energy.",
        f"- *of 1e8 goal*: pair evals/s divided by the project goal of {GOAL_PAIRS_PER_S:.0e} pair "
        "evaluations per second per core (a stated limit, not a measured peak).",
        "- *E/N*: mean local energy per particle over the timed sweeps (ħω_⊥; a sanity column, short runs, "
        "not converged estimates).",
        "- *cpu/wall*: median of (process CPU time / wall time) over the timings; well below 1 means "
        "the process was descheduled by other load on the host and the wall-clock figures are pessimistic; "
        "*pair evals/CPU-s* divides by the median process CPU time instead (still affected by cache and "
        "memory sharing with that load).",
        "- *numpy*: the same algorithm (same ψ, drift sampler with cap, exact Metropolis–Hastings, "
        "O(N²) local energy) in plain numpy, vectorised over walkers (particle i moved in all walkers at "
        "once). Checked against qmckit's kernels on the equilibrated configurations before timing "
        "(worst relative errors: " + "; ".join(
            f"N={N}: " + ", ".join(f"{k} {v:.1e}" for k, v in w.items()) for N, w in meta["checks"].items())
        + "; tolerance 1e-10).",
        "",
        table,
        "",
        "Best qmckit pair throughput as a fraction of the 1e8/s/core goal: "
        + ", ".join(f"N={N}: {v:.2e}/s = {v / GOAL_PAIRS_PER_S:.0%}" for N, v in best.items()) + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fast smoke run (tiny sizes, ~10 s); writes nothing "
                    "unless --out is given")
    ap.add_argument("--out", type=Path, default=None,
                    help="directory for the .md/.json results (default for a full run: benchmarks/results)")
    ap.add_argument("--sizes", type=str, default=None, help="comma-separated N:W pairs, e.g. 10:64,100:64,500:8")
    ap.add_argument("--reps", type=int, default=None, help="timings per figure (default 5)")
    ap.add_argument("--target", type=float, default=None, help="seconds per timing (default 1.0)")
    args = ap.parse_args(argv)

    if args.quick:
        sizes = [(10, 16), (40, 8)]
        args.reps = args.reps or 3
        args.target = args.target or 0.05
        args.calib, args.equil = 0.01, 20
    else:
        sizes = [(10, 64), (100, 64), (500, 8)]
        args.reps = args.reps or 5
        args.target = args.target or 1.0
        args.calib, args.equil = 0.1, 50
    if args.sizes:
        sizes = [tuple(int(v) for v in s.split(":")) for s in args.sizes.split(",")]
    out_dir = args.out if args.out is not None else (None if args.quick else Path(__file__).resolve().parent / "results")

    def log(msg):
        print(msg, flush=True)

    start = time.perf_counter()
    load_before = tuple(round(x, 2) for x in os.getloadavg())
    meta = {"machine": machine_info(), "date": datetime.date.today().isoformat(),
            "command": "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
            "reps": args.reps, "target_s": args.target, "equil": args.equil, "sizes": sizes,
            "params": {"lam": LAM, "a": A, "alpha": ALPHA, "dt": DT}, "goal_pairs_per_s": GOAL_PAIRS_PER_S,
            "loadavg_before": load_before}
    if meta["machine"]["numba_threads"] != 1:
        raise SystemExit("numba is not running single-threaded; NUMBA_NUM_THREADS was overridden")
    log(f"qmckit VMC throughput on {meta['machine']['cpu_model']} ({meta['machine']['hostname']}), one core; "
        f"sizes {sizes}, {args.reps} reps × ~{args.target} s")
    rows, checks = [], {}
    for N, W in sizes:
        r, worst = bench_size(N, W, args, log)
        rows += r
        checks[N] = worst
    meta["checks"] = checks
    meta["wall_s"] = time.perf_counter() - start
    meta["loadavg_after"] = tuple(round(x, 2) for x in os.getloadavg())
    if source_fingerprint() != SOURCES_AT_IMPORT:
        log("WARNING: qmckit sources changed on disk during the run; the figures are for the version "
            "imported at start (hashes in the results)")
        meta["sources_changed_during_run"] = True
    table = markdown(rows, meta)
    print()
    print(table)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"vmc_throughput_{meta['machine']['hostname']}_{meta['date']}"
        (out_dir / f"{stem}.md").write_text(report(rows, meta, table))
        (out_dir / f"{stem}.json").write_text(json.dumps({"meta": meta, "results": rows}, indent=1, default=str))
        print(f"\nwrote {out_dir / stem}.md and .json")
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
