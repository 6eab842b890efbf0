#!/usr/bin/env python
"""Liquid ⁴He on the GPU (study 004): twins, generation speed vs N, time-to-error, the sample run,
load masking, and helium DMC on the host CPUs. One run on a lent GPU machine.

Stages (each with a time budget; skipped, never truncated, when the budget is spent; the JSON is
rewritten after every stage):

  packed    the packed kernel (G lanes per chain, several chains per warp) against the CPU kernel, and its
            speed against the one-chain-per-block shared kernel for N = 64 … 1000;
  memory    the hybrid kernel (K atoms in shared memory, the rest in global) against the CPU kernel, and
            its speed against the split and global kernels at N = 10240 and 40960;
  twins     the GPU generation kernel (shared and global memory, float64) against the CPU kernel on
            the same walkers and streams (accept counts, streams, max |Δr|), float32 vs float64,
            the GPU energy kernel against the CPU estimators, g(r) counts;
  speed     time per macroupdate per chain (wall / (W · macroupdates), 004's Fig. 4 unit) for
            N = 64 … 40960 on the GPU (float64 and float32, chain counts and block sizes scanned at
            small N) and on the CPU in the same run (one thread with one chain; all cores with one
            chain per core); pair evaluations per second, as a fraction of the roofline
            peak FLOP/s / 30 flop per pair evaluation (minimum image, r², √, two divisions, powers;
            √ and ÷ counted as one flop), peak from the faster of the two FMA probes (stage peaks);
  error     t σ² (s·mK²) of E/N vs N on the GPU (and the CPU at N = 512), with analysis every m;
  sample    004's sample run (N = 1000, b = 3.07 Å, no tail, m = 4) on the GPU next to e.dat;
  seqopt    Eq. 12: t σ² vs the analysis period m with synchronous CPU analysis (N = 256, 264 chains, 1920
            macroupdates per m), against m_opt = √(2 m_c α);
  peaks     the FMA probes alone: numba's and one in CUDA C (CuPy's NVRTC), float32 and float64;
  bandwidth the read bandwidth of DRAM (2 GB) and of L2 (16 MB, 50 passes) in CUDA C: the memory roof of
            the global-memory kernel (N = 40960 reads 12 B per atom per microupdate in float32);
  variants  the forms of the pair loop (--forms: minimum image fold/fold_select/select/rint, inverse
            rsqrt/divide, 2 or 4 atoms per trip; float32/64, N = 512 … 10240), with the PTX and SASS
            opcode counts of each kernel;
  masking   load masking: N = 512, W chains on the GPU, fixed total macroupdates, CPU analysis
            (energies + g(r) of every chain, numba on all cores) every m macroupdates, synchronous
            and asynchronous (the kernel launch returns at once; the CPU analyses the previous
            writeout while the GPU generates the next), total time vs m; t_G and t_A measured alone;
  masking_gpu_energy
            004's Fig. 3 right panel: the GPU generates and computes energies, the CPU idles or
            computes g(r) of the previous writeout, total time vs m;
  dmc       helium DMC on the host CPUs (qmckit.methods.dmc with the generic drift sweep): N = 64,
            time-step series, tail-corrected E/N.

Usage
  python benchmarks/helium_gpu.py --out DIR [--budget 540] [--stages twins,speed,...]
  NUMBA_ENABLE_CUDASIM=1 python benchmarks/helium_gpu.py --smoke --out /tmp/x   # no GPU: tiny sizes
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for path in (str(REPO), str(REPO / "benchmarks")):
    if path not in sys.path:
        sys.path.insert(0, path)

import numba  # noqa: E402

from bec_throughput import Budget, cpu_info, device_info  # noqa: E402
from qmckit import rng  # noqa: E402
from qmckit.backends import helium_chains as hc  # noqa: E402
from qmckit.studies import helium4  # noqa: E402
from qmckit.systems import helium  # noqa: E402
from _common import log  # noqa: E402

warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)
warnings.filterwarnings("ignore", message=".*[Gg]rid size.*")
warnings.filterwarnings("ignore", message="reblock")

FLOP_PER_PAIR = 30
K20_MS_40960 = 418.0


def stage(name, budget, results, out_path, fn):
    if budget.left() <= 5:
        results.setdefault("skipped", []).append(name)
        log(f"[{name}] skipped: budget spent")
        return
    start = time.perf_counter()
    log(f"[{name}] start ({budget.left():.0f} s left)")
    try:
        fn()
    except Exception:  # noqa: BLE001
        results.setdefault("errors", {})[name] = traceback.format_exc()
        log(f"[{name}] FAILED\n{traceback.format_exc()}")
    results.setdefault("stage_s", {})[name] = time.perf_counter() - start
    out_path.write_text(json.dumps(results, indent=1, default=float))


def measured_peak(cuda, single: bool) -> dict:
    """FLOP/s of a dependent-free FMA loop, all SMs busy, and the FMA opcodes in its PTX.

    8 independent chains per thread with coefficients of their own and a 32-bit trip count. (The
    2026-11-22 probe shared two coefficients between the chains and counted in 64 bits; both probes
    ran in helium_gpu_h100v3_2026-11-23.json and agree to 2 % in float32.)
    """
    import numba

    dtype = np.float32 if single else np.float64

    @cuda.jit
    def fma_loop(out, coef, n):
        # every operand comes from arrays of the working dtype: a float literal would promote a
        # float32 loop to float64
        t = cuda.grid(1)
        b0 = coef[0]
        c0 = coef[1]
        b1 = b0 + c0
        b2 = b1 + c0
        b3 = b2 + c0
        c1 = c0 * b0
        c2 = c1 * b0
        c3 = c2 * b0
        a0 = out[t]
        a1 = a0 + c1
        a2 = a1 + c2
        a3 = a2 + c3
        a4 = a3 + c0
        a5 = a4 + c1
        a6 = a5 + c2
        a7 = a6 + c3
        for _ in range(numba.int32(n)):
            a0 = a0 * b0 + c0
            a1 = a1 * b1 + c1
            a2 = a2 * b2 + c2
            a3 = a3 * b3 + c3
            a4 = a4 * b0 + c1
            a5 = a5 * b1 + c2
            a6 = a6 * b2 + c3
            a7 = a7 * b3 + c0
        out[t] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7

    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    threads, blocks, n = 256, sms * 32, 4096
    out = cuda.to_device(np.ones(threads * blocks, dtype=dtype))
    coef = cuda.to_device(np.array([0.999, 1e-7], dtype=dtype))
    fma_loop[blocks, threads](out, coef, 16)
    cuda.synchronize()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fma_loop[blocks, threads](out, coef, n)
        cuda.synchronize()
        times.append(time.perf_counter() - t0)
    ptx = "\n".join(fma_loop.inspect_asm().values())
    probe = {"flops": 2.0 * 8 * n * threads * blocks / min(times), "ptx_fma_f32": ptx.count("fma.rn.f32"),
             "ptx_fma_f64": ptx.count("fma.rn.f64")}
    return {"flops": probe["flops"], "probes": {"own_coefficients": probe}}


CUDA_C_FMA = r"""
extern "C" __global__ void fma_loop(REAL *out, const REAL *coef, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    REAL b = coef[0], c = coef[1];
    REAL a[16];
    #pragma unroll
    for (int q = 0; q < 16; ++q) a[q] = out[t] + q * c;
    for (int k = 0; k < n; ++k) {
        #pragma unroll
        for (int q = 0; q < 16; ++q) a[q] = fma(a[q], b, c);
    }
    REAL sum = 0;
    #pragma unroll
    for (int q = 0; q < 16; ++q) sum += a[q];
    out[t] = sum;
}
"""


def cuda_c_peak(single: bool) -> dict | None:
    """The same FMA probe written in CUDA C (CuPy's NVRTC, 16 chains per thread, unrolled), as a check
    that the numba probe reaches what the hardware gives: None without CuPy."""
    try:
        import cupy
    except ImportError:
        return None
    real = "float" if single else "double"
    kernel = cupy.RawKernel(CUDA_C_FMA.replace("REAL", real), "fma_loop")
    dtype = np.float32 if single else np.float64
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    threads, blocks, n = 256, sms * 32, 4096
    out = cupy.ones(threads * blocks, dtype=dtype)
    coef = cupy.asarray(np.array([0.999, 1e-7], dtype=dtype))
    kernel((blocks,), (threads,), (out, coef, np.int32(16)))
    cupy.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        kernel((blocks,), (threads,), (out, coef, np.int32(n)))
        cupy.cuda.runtime.deviceSynchronize()
        times.append(time.perf_counter() - t0)
    return {"flops": 2.0 * 16 * n * threads * blocks / min(times), "threads": threads, "blocks": blocks}


CUDA_C_READ = r"""
extern "C" __global__ void read_sum(const double2 *x, long long n, int passes, double *out) {
    double s0 = 0.0, s1 = 0.0;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (int p = 0; p < passes; ++p)
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            double2 v = x[i];
            s0 += v.x;
            s1 += v.y;
        }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s0 + s1;
}
"""


def read_bandwidth(nbytes: int, passes: int) -> dict | None:
    """Bytes per second of a coalesced 16-byte read of ``nbytes`` (CuPy's NVRTC), ``passes`` times per
    launch, median of three launches: 2 GB reads DRAM (HBM), 16 MB (a third of an H100's 50 MB L2) the
    L2 once the first pass has filled it. None without CuPy."""
    try:
        import cupy
    except ImportError:
        return None
    kernel = cupy.RawKernel(CUDA_C_READ, "read_sum")
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    threads, blocks = 512, sms * 8
    n = nbytes // 16
    x = cupy.ones(2 * n, dtype=np.float64)
    out = cupy.zeros(threads * blocks, dtype=np.float64)
    kernel((blocks,), (threads,), (x, np.int64(n), np.int32(1), out))
    cupy.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        kernel((blocks,), (threads,), (x, np.int64(n), np.int32(passes), out))
        cupy.cuda.runtime.deviceSynchronize()
        times.append(time.perf_counter() - t0)
    return {"bytes_per_s": 16.0 * n * passes / float(np.median(times)), "bytes": 16 * n, "passes": passes,
            "threads": threads, "blocks": blocks}


def ptx_histogram(dispatcher) -> dict:
    """Counts of the arithmetic and memory opcodes in a compiled kernel's PTX (all specialisations)."""
    counts = {}
    for ptx in dispatcher.inspect_asm().values():
        for line in ptx.splitlines():
            word = line.strip().split(" ")[0].split("\t")[0]
            if not word or word.startswith(("//", ".", "{", "}", "$", "@")) or word.endswith(":"):
                continue
            counts[word] = counts.get(word, 0) + 1
    keys = ("cvt.rni", "sqrt", "rsqrt", "rcp", "div", "fma", "mul", "add", "sub", "setp", "selp", "ld.shared",
            "mad", "cvt")
    return {k: sum(v for w, v in counts.items() if w.startswith(k)) for k in keys}


SASS_KEYS = ("FADD", "FMUL", "FFMA", "FMNMX", "FSEL", "FSETP", "DADD", "DMUL", "DFMA", "DMNMX", "DSETP", "MUFU",
             "F2F", "F2I", "I2F", "FRND", "SEL", "LDS", "LDG", "BAR", "BRA")
FP64_PIPE = ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX")


def sass_instructions(text: str) -> list:
    """(address, opcode, branch target) of every instruction in SASS text, ``nvdisasm``'s (branch
    targets as labels, ``.L_x_5:`` lines) or ``cuobjdump``'s (targets as addresses): predicates
    dropped, opcodes without modifiers, the target None but for branches."""
    rows, labels, pending = [], {}, []
    for line in text.splitlines():
        label = re.match(r"\s*(\.L\w+):", line)
        if label:
            pending.append(label.group(1))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if not m:
            continue
        address = int(m.group(1), 16)
        labels.update((name, address) for name in pending)
        pending = []
        words = [w for w in m.group(2).split() if not w.startswith("@")]
        if words:
            target = re.search(r"BRA\b.*?(0x[0-9a-f]+|\.L\w+)", m.group(2))
            rows.append((address, words[0].split(".")[0], target.group(1) if target else None))
    return [(a, op, None if t is None else int(t, 16) if t.startswith("0x") else labels.get(t)) for a, op, t in rows]


def pair_loop(instructions: list, evaluations: int) -> dict:
    """The innermost loop that holds the ``evaluations`` pair evaluations of one trip (the shortest
    backward branch whose body has 2·evaluations MUFU, two reciprocal square roots per evaluation in
    the rsqrt form, or at least that many in the divide form): instructions per trip, and per pair
    evaluation in all and on the FP64 pipe. Static counts: the rarely taken slow paths of float64
    rsqrt (a call) are counted too."""
    best = None
    for address, op, target in instructions:
        if op == "BRA" and target is not None and target < address:
            body = [op2 for a, op2, _ in instructions if target <= a <= address]
            if body.count("MUFU") >= 2 * evaluations and (best is None or len(body) < len(best)):
                best = body
    if best is None:
        return {"error": "no loop found"}
    fp64 = sum(best.count(k) for k in FP64_PIPE)
    return {"instructions_per_trip": len(best), "evaluations_per_trip": evaluations,
            "instructions_per_evaluation": len(best) / evaluations, "fp64_pipe_per_evaluation": fp64 / evaluations,
            "opcodes": {k: best.count(k) for k in SASS_KEYS if best.count(k)}}


def sass_histogram(dispatcher, evaluations: int | None = None) -> dict:
    """Opcode counts in a compiled kernel's SASS (the first specialisation; ``inspect_sass`` needs
    nvdisasm): the total, the opcodes of the pair term (FP32/FP64 arithmetic, MUFU, conversions,
    min/max, selects, shared loads) and, given the pair evaluations per trip, the pair loop's counts
    (:func:`pair_loop`)."""
    try:
        text = next(iter(dispatcher.inspect_sass().values()))
    except Exception as exc:  # noqa: BLE001 (no nvdisasm)
        return {"error": repr(exc)}
    instructions = sass_instructions(text)
    ops = [op for _, op, _ in instructions]
    out = {k: ops.count(k) for k in SASS_KEYS}
    out["total"] = len(ops)
    if evaluations:
        out["pair_loop"] = pair_loop(instructions, evaluations)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--budget", type=float, default=540.0)
    ap.add_argument("--stages", default="twins,speed,error,sample,bscan,masking,dmc")
    ap.add_argument("--dmc-plan", default="64:0.002,0.001,0.0005", help="N:dt,dt,…;N:… for the dmc stage")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (CUDA simulator)")
    ap.add_argument("--tag", default="h100")
    ap.add_argument("--sizes", default=None, help="comma-separated N for the speed stage (default 64 … 40960)")
    ap.add_argument("--forms", default="fold/rsqrt/2,fold_select/rsqrt/2,fold/rsqrt/4,fold_select/rsqrt/4,"
                    "fold/divide/2,select/divide/2,rint/divide/2",
                    help="pair-loop forms [f32:|f64:]min_image/inverse/unroll for the variants stage "
                    "(helium_chains.kernels; a prefix limits a form to one precision)")
    args = ap.parse_args(argv)
    from numba import cuda

    budget = Budget(args.budget)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    date = datetime.date.today().isoformat()
    out_path = out_dir / f"helium_gpu_{args.tag}_{date}.json"
    smoke = args.smoke
    # "min_image/inverse/unroll", optionally prefixed "f32:" or "f64:" for one precision only
    forms = [(p.rpartition(":")[0], *p.rpartition(":")[2].split("/")) for p in args.forms.split(",")]
    results = {"date": date, "device": device_info(cuda), "cpu": cpu_info(), "smoke": smoke,
               "numba": numba.__version__, "flop_per_pair_evaluation": FLOP_PER_PAIR}
    stages = set(args.stages.split(","))
    cores = os.cpu_count() or 1

    def twin_reference(n):
        """N atoms, W chains and their streams, and the CPU kernel's chains after the twin runs' macroupdates."""
        system = helium.Helium(n=n)
        W = 2 if smoke else 8
        pos = system.initial_positions(W, np.random.default_rng(n))
        states = rng.seed_states(n + 1, W)
        sigma = hc.step_for_acceptance(0.37)
        cpu = hc.HeliumChainsCPU(system, pos, states, sigma)
        macro = 1 if smoke or n > 1000 else 3
        cpu.generate(macro)
        return system, pos, states, sigma, cpu, macro

    def cpu_timings(n, n_macro=1, repeats=1):
        """The CPU backend in the same run at N atoms: one chain on one core, and one chain per core."""
        rows = []
        for threads, walkers in ((1, 1), (cores, cores)):
            numba.set_num_threads(threads)
            r = helium4.time_generation(n, walkers, backend="cpu", n_macro=n_macro, repeats=repeats)
            r["threads"] = threads
            rows.append(r)
            log(f"  cpu n={n} threads={threads}: {1e3 * r['s_per_macroupdate_per_chain']:.4f} ms/macro/chain")
        numba.set_num_threads(cores)
        return rows

    def twin_row(gpu, cpu, **fields):
        """A GPU run against the CPU kernel's chains: accept mismatches, equal streams, largest |Δr| (Å)."""
        return fields | {"accept_mismatch": int(np.abs(gpu.accepted.copy_to_host() - cpu.accepted).sum()),
                         "states_equal": bool(np.array_equal(gpu.states_to_host(), cpu.states)),
                         "max_dpos": float(np.abs(gpu.positions() - cpu.positions()).max())}

    def time_layout(rows, n, walkers, dtype, n_macro, peaks, **options):
        """Time one launch layout (memory, threads, unroll, lanes, …; helium4.time_generation) and append it to
        ``rows`` with its fraction of the FMA peak; a layout that cannot launch (shared memory, registers) is
        logged and skipped."""
        label = " ".join(f"{k}={v}" for k, v in options.items())
        try:
            r = helium4.time_generation(n, walkers, backend="cuda", n_macro=n_macro, repeats=1 if smoke else 3,
                                        dtype=np.dtype(dtype), **{k: v for k, v in options.items() if v is not None})
        except Exception as exc:  # noqa: BLE001
            log(f"  n={n} {dtype} {label}: {exc!r}"[:300])
            return
        r.update(dtype=dtype, roofline_fraction=r["pair_evaluations_per_s"] * FLOP_PER_PAIR / peaks[dtype], **options)
        rows.append(r)
        log(f"  n={n} {dtype} {label} W={r['walkers']}: {1e3 * r['s_per_macroupdate_per_chain']:.5f} ms/macro/chain, "
            f"{100 * r['roofline_fraction']:.1f} %")

    def twins():
        rows = []
        for n in ((20,) if smoke else (64, 1000, 4096)):
            system, pos, states, sigma, cpu, macro = twin_reference(n)
            for memory, threads, unroll in itertools.product(("shared", "split", "global"), (32,) if smoke else (32, 128),
                                                             hc.UNROLLS):
                gpu = hc.HeliumChains(system, pos, states, sigma, threads=threads, memory=memory, unroll=unroll)
                gpu.generate(macro)
                rows.append(twin_row(gpu, cpu, n=n, memory=memory, threads=threads, unroll=unroll, macro=macro))
                log(rows[-1])
            single = hc.HeliumChains(system, pos, states, sigma, dtype=np.float32)
            single.generate(macro)
            e_gpu = hc.HeliumChains(system, cpu.positions(), states, sigma).energies()
            e_cpu = system.measure(cpu.positions())
            rows.append({"n": n, "float32_max_dpos": float(np.abs(single.positions() - cpu.positions()).max()),
                         "float32_accept_mismatch": int(np.abs(single.accepted.copy_to_host() - cpu.accepted).sum()),
                         "energy_max_rel": float(np.abs(e_gpu - e_cpu).max() / np.abs(e_cpu).max())})
            log(rows[-1])
        results["twins"] = rows

    def speed():
        sizes = (32, 64) if smoke else (64, 128, 256, 512, 1000, 1952, 4096, 10240, 40960)
        if args.sizes:
            sizes = tuple(int(x) for x in args.sizes.split(","))
        sms = 2 if smoke else cuda.get_current_device().MULTIPROCESSOR_COUNT
        peaks = peak_flops()
        results["measured_peak_flops"] = peaks
        log("measured peak FLOP/s", peaks)
        gpu_rows, cpu_rows = [], []
        for n in sizes:
            if budget.left() < 60 and not smoke:
                break
            # macroupdates per timing: ~0.05–0.3 s of GPU work
            n_macro = 1 if smoke else max(1, int(2e9 / (2.0 * n * n * sms * 8)))
            for dtype in (np.float64, np.float32):
                best = None
                if smoke:
                    plans = [(2, 32)]
                elif n <= 1952:  # up to 128 chains per SM (192 at N ≤ 256): packed blocks (small N) hold many chains
                    plans = [(sms * k, t) for k in (8, 32, 128) + ((192,) if n <= 256 else ()) for t in (32, 64, 128, 256)]
                elif n <= 10240:
                    plans = [(sms * k, t) for k in (1, 2, 4) for t in (256, 512, 640, 1024)]
                else:
                    plans = [(sms, 512), (2 * sms, 512), (sms, 1024)]
                for walkers, threads in plans:
                    try:
                        r = helium4.time_generation(n, walkers, backend="cuda", n_macro=n_macro,
                                                    repeats=1 if smoke else 3, threads=threads, dtype=dtype)
                    except Exception as exc:  # noqa: BLE001
                        log(f"  n={n} W={walkers} T={threads} {np.dtype(dtype).name}: {exc!r}")
                        continue
                    r["dtype"] = np.dtype(dtype).name
                    r["memory"] = hc.auto_memory(n, np.dtype(dtype).itemsize)
                    r["roofline_fraction"] = r["pair_evaluations_per_s"] * FLOP_PER_PAIR / peaks[r["dtype"]]
                    if best is None or r["s_per_macroupdate_per_chain"] < best["s_per_macroupdate_per_chain"]:
                        best = r
                    log(f"  gpu n={n} W={walkers} T={threads} {r['dtype']}: "
                        f"{1e3 * r['s_per_macroupdate_per_chain']:.4f} ms/macro/chain, "
                        f"{r['pair_evaluations_per_s']:.3e} pair/s ({100 * r['roofline_fraction']:.1f} %)")
                if best is not None:
                    best["scanned"] = len(plans)
                    gpu_rows.append(best)
            if n <= (64 if smoke else 4096):
                cpu_rows += cpu_timings(n, 1 if n >= 1000 else 4, 1 if smoke else 3)
            results["speed"] = {"gpu": gpu_rows, "cpu": cpu_rows}
            out_path.write_text(json.dumps(results, indent=1, default=float))

    def error():
        rows = []
        best = {(r["n"], r["dtype"]): r for r in results.get("speed", {}).get("gpu", [])}
        for n in ((20,) if smoke else (64, 256, 512, 1000, 1952)):
            for dtype in (np.float64, np.float32):
                ref = best.get((n, np.dtype(dtype).name))
                walkers = ref["walkers"] if ref else (2 if smoke else 1056)
                threads = ref.get("threads") if ref else 32
                for m in ((1,) if smoke else (1, 4) if n <= 512 else (4,)):
                    r = helium4.time_to_error(n, walkers, backend="cuda", m=m, analyses=20 if smoke else 100,
                                              equilibration=5 if smoke else 100, threads=threads, dtype=dtype)
                    r["dtype"] = np.dtype(dtype).name
                    rows.append(r)
                    log(f"  n={n} {r['dtype']} m={m} W={walkers}: tσ² = {r['t_sigma2_s_mK2']:.3g} s·mK², "
                        f"E/N = {r['energy_per_particle']['mean']:.4f}({r['energy_per_particle']['error']:.4f})")
        if not smoke:
            numba.set_num_threads(cores)
            r = helium4.time_to_error(512, cores, backend="cpu", m=4, analyses=60, equilibration=20)
            r["threads"] = cores
            rows.append(r)
            log(f"  cpu n=512 all cores: tσ² = {r['t_sigma2_s_mK2']:.3g} s·mK²")
        results["time_to_error"] = rows

    def sample():
        best = {(r["n"], r["dtype"]): r for r in results.get("speed", {}).get("gpu", [])}
        ref = best.get((1000, "float64"))
        walkers = 2 if smoke else (ref["walkers"] if ref else 1056)
        threads = (ref or {}).get("threads", 128 if not smoke else 32)
        r = helium4.sample_run("cuda", walkers=walkers, analyses=3 if smoke else 400, m=4,
                               equilibration=1 if smoke else 300, n=20 if smoke else 1000, threads=threads)
        r["comparison"] = helium4.compare_sample_run(r)
        results["sample_run"] = r
        for row in r["comparison"]:
            log(f"  {row['observable']}: {row['mean']:.4f}({row['error']:.4f}) vs {row['published']} "
                f"({row['pull']:+.1f}σ)")

    def bscan():
        """V/N and T/N of the sample run depend on b even where E/N is stationary: which b gives e.dat's?"""
        best = {(r["n"], r["dtype"]): r for r in results.get("speed", {}).get("gpu", [])}
        ref = best.get((1000, "float64")) or {}
        rows = []
        for b in ((3.07,) if smoke else (3.04, 3.055, 3.065, 3.07, 3.075, 3.085, 3.10)):
            r = helium4.sample_run("cuda", walkers=2 if smoke else 1056, analyses=3 if smoke else 100,
                                   m=4, equilibration=1 if smoke else 150, n=20 if smoke else 1000, b=b,
                                   threads=ref.get("threads", 32 if smoke else 128))
            rows.append({"b": b, "acceptance": r["acceptance"], "estimates": r["estimates"], "wall_s": r["wall_s"]})
            e = r["estimates"]
            log(f"  b={b}: E/N {e['energy_per_particle']['mean']:.4f}({e['energy_per_particle']['error']:.4f}) "
                f"V/N {e['potential_energy_per_particle']['mean']:.4f} T/N {e['kinetic_energy_per_particle']['mean']:.4f} "
                f"acc {r['acceptance']:.3f}")
        results["sample_b_scan"] = rows

    def seqopt():
        """Eq. 12: with analysis on the CPU after every m macroupdates (synchronous), t σ² is smallest at
        m_opt = √(2 m_c α). Measured: t σ² vs m at fixed total work; predicted from m_c (the m = 1 series,
        m_c = τ_int − ½ in macroupdates) and α = t_A/t_G measured alone."""
        from qmckit.stats import estimate

        n, walkers, total = (20, 2, 12) if smoke else (256, 264, 1920)
        system = helium.Helium(n=n)
        chains = helium4.make_chains(system, walkers, seed=8, backend="cuda", threads=32)
        chains.generate(4 if smoke else 200)
        chains.synchronize()

        def analyse(positions):
            return system.measure(positions)[:, 0].mean() / n

        analyse(chains.positions())
        t0 = time.perf_counter()
        chains.generate(20)
        chains.synchronize()
        t_g = (time.perf_counter() - t0) / 20
        t0 = time.perf_counter()
        for _ in range(5):
            analyse(chains.positions())
        t_a = (time.perf_counter() - t0) / 5
        rows = []
        for m in ((1, 2, 3) if smoke else (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)):
            K = total // m
            series = np.empty(K)
            t0 = time.perf_counter()
            for k in range(K):
                chains.generate(m)
                series[k] = analyse(chains.positions())
            wall = time.perf_counter() - t0
            est = estimate(series)
            rows.append({"m": m, "analyses": K, "wall_s": wall, "mean": est.mean, "error": est.error,
                         "tau": est.tau, "t_sigma2_s_mK2": wall * (1e3 * est.error) ** 2})
            log(f"  m={m}: wall {wall:.2f} s, E/N {est.mean:.4f}({1e4 * est.error:.0f}), τ {est.tau:.2f}, "
                f"tσ² {rows[-1]['t_sigma2_s_mK2']:.3g}")
            if budget.left() < 20 and not smoke:
                break
        m_c = max(rows[0]["tau"] - 0.5, 0.0)
        alpha = t_a / t_g
        best = min(rows, key=lambda r: r["t_sigma2_s_mK2"])
        results["sequential_optimum"] = {"n": n, "walkers": walkers, "total_macroupdates": total, "t_G_s": t_g,
                                         "t_A_s": t_a, "alpha": alpha, "m_c": m_c,
                                         "m_opt_eq12": math.sqrt(2 * m_c * alpha), "m_best_measured": best["m"],
                                         "rows": rows}
        log(f"  α = {alpha:.1f}, m_c = {m_c:.2f}: Eq. 12 m_opt = {math.sqrt(2 * m_c * alpha):.2f}; "
            f"measured best m = {best['m']}")

    def seconds(fn, repeats=1):
        """Mean wall time of ``fn()`` over ``repeats`` calls."""
        t0 = time.perf_counter()
        for _ in range(repeats):
            fn()
        return (time.perf_counter() - t0) / repeats

    def masking_chains():
        """004's Fig. 3 set-up, (N, chains, total macroupdates, system, chains): N = 512 atoms, 8 chains on
        the GPU, warmed up."""
        n, walkers, total = (20, 2, 4) if smoke else (512, 8, 840)
        system = helium.Helium(n=n)
        chains = helium4.make_chains(system, walkers, seed=4, backend="cuda", threads=32 if smoke else 128)
        chains.generate(2)
        chains.synchronize()
        return n, walkers, total, system, chains

    def masking():
        n, walkers, total, system, chains = masking_chains()

        def analyse(positions):
            system.measure(positions)
            helium.pair_distribution(positions, system.box, bins=100)

        analyse(chains.positions())
        # t_G and t_A alone
        t_g = seconds(lambda: (chains.generate(10), chains.synchronize())) / 10
        conf = chains.positions()
        t_a = seconds(lambda: analyse(conf), 5)
        rows = []
        divisors = [m for m in range(1, total + 1) if total % m == 0]
        for m in divisors:
            for mode in ("sync", "async"):
                writeouts = total // m
                t0 = time.perf_counter()
                t_analyse = 0.0
                prev = None
                for _ in range(writeouts):
                    chains.generate(m)
                    if mode == "sync":
                        conf = chains.positions()  # waits for the kernel
                        ta = time.perf_counter()
                        analyse(conf)
                        t_analyse += time.perf_counter() - ta
                    else:
                        if prev is not None:
                            ta = time.perf_counter()
                            analyse(prev)
                            t_analyse += time.perf_counter() - ta
                        prev = chains.positions()
                if mode == "async" and prev is not None:
                    analyse(prev)
                total_s = time.perf_counter() - t0
                rows.append({"m": m, "mode": mode, "writeouts": writeouts, "total_s": total_s,
                             "analyse_s": t_analyse})
            log(f"  m={m}: sync {rows[-2]['total_s']:.3f} s, async {rows[-1]['total_s']:.3f} s")
            if budget.left() < 30 and not smoke:
                break
        results["masking"] = {"n": n, "walkers": walkers, "total_macroupdates": total, "t_G_s": t_g,
                              "t_A_s": t_a, "alpha": t_a / t_g, "rows": rows}
        log(f"  t_G = {t_g:.4g} s per macroupdate (all chains), t_A = {t_a:.4g} s, α = {t_a / t_g:.1f}")

    def peaks_stage():
        """The FMA probes alone: numba's and the CUDA C one (CuPy), float32 and float64."""
        results["fma_probes"] = {name: {"numba": measured_peak(cuda, single), "cuda_c": cuda_c_peak(single)}
                                 for name, single in (("float32", True), ("float64", False))}
        for name, v in results["fma_probes"].items():
            c = v["cuda_c"]
            log(f"  {name}: numba {v['numba']['flops'] / 1e12:.1f} TFLOP/s, CUDA C "
                + (f"{c['flops'] / 1e12:.1f} TFLOP/s" if c else "(no CuPy)"))

    def bandwidth():
        """Read bandwidth of DRAM and L2 (the roofs for the global-memory kernel)."""
        results["memory_bandwidth"] = {"dram": read_bandwidth(2 << 30, 1), "l2": read_bandwidth(16 << 20, 50)}
        for level, v in results["memory_bandwidth"].items():
            log(f"  {level}: " + (f"{v['bytes_per_s'] / 1e12:.2f} TB/s" if v else "(no CuPy)"))

    def peak_flops():
        """The measured FMA peaks (running stage peaks first if needed): the faster probe, since numba's
        loop runs at about half the float32 rate (loop overhead)."""
        if smoke:
            return {"float64": 1e9, "float32": 1e9}
        if "fma_probes" not in results:
            peaks_stage()
        return {k: max(v["numba"]["flops"], (v["cuda_c"] or {}).get("flops", 0.0))
                for k, v in results["fma_probes"].items()}

    def variants():
        """The forms of the pair term (minimum image × inverses, see helium_chains.kernels): the same
        chains, launches and sizes, and the PTX and SASS opcode counts of each generation kernel."""
        sms = 2 if smoke else cuda.get_current_device().MULTIPROCESSOR_COUNT
        rows, ptx, sass = [], {}, {}
        peaks = peak_flops()
        for single in (True, False):
            dtype = np.float32 if single else np.float64
            for only, min_image, inverse, unroll in forms:
                unroll = int(unroll)
                if only and only != ("f32" if single else "f64"):
                    continue
                for n in ((32,) if smoke else (512, 1952, 10240)):
                    walkers = 2 if smoke else (32 * sms if n <= 1952 else 4 * sms)
                    n_macro = 1 if smoke else max(1, int(2e9 / (2.0 * n * n * sms * 8)))
                    r = helium4.time_generation(n, walkers, backend="cuda", n_macro=n_macro, repeats=1 if smoke else 3,
                                                dtype=dtype, min_image=min_image, inverse=inverse, unroll=unroll)
                    r["dtype"] = np.dtype(dtype).name
                    r["roofline_fraction"] = r["pair_evaluations_per_s"] * FLOP_PER_PAIR / peaks[r["dtype"]]
                    rows.append(r)
                    log(f"  {r['dtype']} {min_image}/{inverse}/{unroll} n={n} W={walkers}: "
                        f"{1e3 * r['s_per_macroupdate_per_chain']:.4f} ms/macro/chain, "
                        f"{r['pair_evaluations_per_s']:.3e} pair/s ({100 * r['roofline_fraction']:.1f} %)")
                if not smoke:
                    key = f"{np.dtype(dtype).name}/{min_image}/{inverse}/{unroll}"
                    kernel = hc.kernels(single, min_image, inverse, unroll)["generate_shared"]
                    ptx[key] = ptx_histogram(kernel)
                    sass[key] = sass_histogram(kernel, 2 * unroll)  # old and new u per atom
                    log(f"  PTX {key}: {ptx[key]}")
                    log(f"  SASS {key}: {sass[key]}")
        results["variants"] = {"rows": rows, "ptx_generate_shared": ptx, "sass_generate_shared": sass}

    def masking_gpu_energy():
        """004's Fig. 3, right panel: the GPU generates and computes the energy of every writeout; the
        CPU receives the configurations and does nothing (green) or computes g(r) (blue) while the GPU
        goes on. Total time vs m at fixed total macroupdates; t_G, t_E and t_g(r) measured alone."""
        n, walkers, total, system, chains = masking_chains()
        chains.energies_from(chains.launch_energies())

        def g_of_r(positions):
            helium.pair_distribution(positions, system.box, bins=100)

        g_of_r(chains.positions())
        t_g = seconds(lambda: (chains.generate(10), chains.synchronize())) / 10
        t_e = seconds(lambda: chains.energies_from(chains.launch_energies()), 5)
        conf = chains.positions()
        t_r = seconds(lambda: g_of_r(conf), 5)
        rows = []
        for m in [m for m in range(1, total + 1) if total % m == 0]:
            for cpu_work in ("none", "g(r)"):
                t0 = time.perf_counter()
                prev = None
                for _ in range(total // m):
                    chains.generate(m)
                    raw = chains.launch_energies()
                    if cpu_work == "g(r)" and prev is not None:
                        g_of_r(prev)  # the previous writeout, while the GPU works on this one
                    prev = chains.positions()  # waits for the generation and the energies
                    chains.energies_from(raw)
                if cpu_work == "g(r)":
                    g_of_r(prev)
                rows.append({"m": m, "cpu_work": cpu_work, "writeouts": total // m,
                             "total_s": time.perf_counter() - t0})
            log(f"  m={m}: GPU energy, CPU idle {rows[-2]['total_s']:.3f} s; CPU g(r) {rows[-1]['total_s']:.3f} s")
            if budget.left() < 30 and not smoke:
                break
        results["masking_gpu_energy"] = {"n": n, "walkers": walkers, "total_macroupdates": total, "t_G_s": t_g,
                                         "t_E_s": t_e, "t_gr_s": t_r, "alpha_gr": t_r / t_g, "rows": rows}
        log(f"  t_G = {t_g:.4g} s per macroupdate, t_E = {t_e:.4g} s, t_g(r) = {t_r:.4g} s, α = {t_r / t_g:.1f}")

    def dmc():
        from qmckit.runs import RunConfig, make_run

        numba.set_num_threads(cores)
        rows = []
        plan = [(16, (0.004,))] if smoke else [
            (int(part.split(":")[0]), tuple(float(x) for x in part.split(":")[1].split(",")))
            for part in args.dmc_plan.split(";")]
        for n, dt in ((n, dt) for n, dts in plan for dt in dts):
            if budget.left() < 40 and not smoke:
                break
            cfg = RunConfig(system="helium", params={"n": n}, method="dmc", sampler="drift", dt=dt,
                            walkers=20 if smoke else 512, steps=20 if smoke else int(4.0 / dt),
                            equilibration=20 if smoke else 200, seed=17)
            t0 = time.perf_counter()
            r = make_run(cfg).run()
            est = r["estimates"]["energy_per_particle"]
            rows.append({"n": n, "dt": dt, "walkers": cfg.walkers, "steps": cfg.steps, "estimate": est,
                         "acceptance": r["acceptance"], "wall_s": time.perf_counter() - t0,
                         "energy_cut": r.get("energy_cut")})
            log(f"  DMC N={n} dt={dt}: E/N = {est['mean']:.4f}({est['error']:.4f}) K, acc {r['acceptance']:.3f}, "
                f"{rows[-1]['wall_s']:.0f} s")
            results["dmc"] = rows
            out_path.write_text(json.dumps(results, indent=1, default=float))

    def memory():
        """The hybrid kernel (the first K atoms in shared memory, the rest in global memory): twins with
        K below N, then time per macroupdate per chain against the split and global kernels for the
        N whose 3N coordinates do not fit (the same chains, one run)."""
        rows = []
        for n, k_shared in ((20, 12),) if smoke else ((1000, 600), (4096, 3000)):
            system, pos, states, sigma, cpu, macro = twin_reference(n)
            for threads, unroll in itertools.product((32,) if smoke else (32, 128), hc.UNROLLS):
                gpu = hc.HeliumChains(system, pos, states, sigma, threads=threads, memory="hybrid", unroll=unroll,
                                      shared_atoms=k_shared)
                gpu.generate(macro)
                rows.append(twin_row(gpu, cpu, n=n, memory="hybrid", shared_atoms=k_shared, threads=threads,
                                     unroll=unroll, macro=macro))
                log(rows[-1])
        results["hybrid_twins"] = rows
        out_path.write_text(json.dumps(results, indent=1, default=float))
        peaks = peak_flops()
        results["measured_peak_flops"] = peaks
        sms = 2 if smoke else cuda.get_current_device().MULTIPROCESSOR_COUNT
        plans = {  # (N, dtype): [(memory, threads, unroll, chains per SM)]
            (10240, "float64"): [("split", 640, 2, 1), ("global", 512, 2, 2)]
            + [("hybrid", t, 4, 1) for t in (256, 384, 512)] + [("hybrid", t, 2, 1) for t in (512, 1024)],
            (40960, "float64"): [("global", 512, 2, 2), ("hybrid", 512, 4, 1), ("hybrid", 512, 2, 1), ("hybrid", 1024, 2, 1)],
            (40960, "float32"): [("global", 1024, 2, 1), ("hybrid", 512, 4, 1), ("hybrid", 512, 2, 1),
                                 ("hybrid", 1024, 2, 1)],
        }
        if smoke:
            plans = {(40, "float64"): [("split", 32, 2, 1), ("hybrid", 32, 2, 1), ("hybrid", 32, 4, 1)]}
        if args.sizes:
            plans = {key: value for key, value in plans.items() if str(key[0]) in args.sizes.split(",")}
        rows = []
        for (n, dtype), options in plans.items():
            for memory, threads, unroll, per_sm in options:
                if budget.left() < 30 and not smoke:
                    break
                time_layout(rows, n, per_sm * sms, dtype, 1, peaks, memory=memory, threads=threads, unroll=unroll,
                            shared_atoms=24 if smoke and memory == "hybrid" else None)
                results["memory_modes"] = rows
                out_path.write_text(json.dumps(results, indent=1, default=float))
        results["memory_modes_cpu"] = [r for n in sorted({n for n, _ in plans}) for r in cpu_timings(n)]

    def packed():
        """The packed kernel (G lanes per chain, 32/G chains per warp) for small N: twins against the CPU
        kernel, then time per macroupdate per chain over lanes and block sizes against the one-chain-per-
        block shared kernel in the same run."""
        rows = []
        for n in ((20,) if smoke else (64, 256)):
            system, pos, states, sigma, cpu, macro = twin_reference(n)
            W = len(pos)
            for threads, lanes, unroll in ((32, 4, 2),) if smoke else itertools.product((32, 128), (4, 8), hc.UNROLLS):
                if W % (threads // lanes):
                    continue
                gpu = hc.HeliumChains(system, pos, states, sigma, threads=threads, memory="packed", lanes=lanes,
                                      unroll=unroll)
                gpu.generate(macro)
                rows.append(twin_row(gpu, cpu, n=n, memory="packed", lanes=lanes, threads=threads, unroll=unroll,
                                     macro=macro))
                log(rows[-1])
            # the float32 packed kernel against the float64 CPU kernel: the same decisions, positions to float32 rounding
            single = hc.HeliumChains(system, pos, states, sigma, threads=32, memory="packed", lanes=4,
                                     dtype=np.float32)
            single.generate(macro)
            rows.append({"n": n, "kernel": "packed", "lanes": 4, "threads": 32, "macro": macro,
                         "float32_max_dpos": float(np.abs(single.positions() - cpu.positions()).max()),
                         "float32_accept_mismatch": int(np.abs(single.accepted.copy_to_host() - cpu.accepted).sum())})
            log(rows[-1])
        results["packed_twins"] = rows
        out_path.write_text(json.dumps(results, indent=1, default=float))
        peaks = peak_flops()
        sms = 2 if smoke else cuda.get_current_device().MULTIPROCESSOR_COUNT
        sizes = (20,) if smoke else (64, 128, 256, 512, 1000)
        rows = []
        for n in sizes:
            for dtype in ("float64", "float32"):
                plans = [("shared", 32, None, 32), ("shared", 32, None, 128)]  # (memory, threads, lanes, chains per SM)
                plans += [("packed", t, g, 128) for g in (4, 8, 16, 32) for t in (64, 128, 256)
                          if 4 * g <= n <= 64 * g]
                if smoke:
                    plans = [("shared", 32, None, 1), ("packed", 32, 4, 8)]
                for memory, threads, lanes, per_sm in plans:
                    if budget.left() < 20 and not smoke:
                        break
                    n_macro = 1 if smoke else max(1, int(4e9 / (2.0 * n * n * sms * per_sm)))
                    time_layout(rows, n, per_sm * sms, dtype, n_macro, peaks, memory=memory, threads=threads, lanes=lanes)
                results["packed_modes"] = rows
                out_path.write_text(json.dumps(results, indent=1, default=float))
        results["packed_modes_cpu"] = [r for n in sizes for r in cpu_timings(n, 4, 1 if smoke else 3)]

    for name, fn in (("peaks", peaks_stage), ("bandwidth", bandwidth), ("variants", variants), ("twins", twins),
                     ("packed", packed), ("memory", memory),
                     ("speed", speed), ("error", error),
                     ("sample", sample),
                     ("bscan", bscan), ("seqopt", seqopt), ("masking", masking),
                     ("masking_gpu_energy", masking_gpu_energy), ("dmc", dmc)):
        if name in stages:
            stage(name, budget, results, out_path, fn)
    results["total_s"] = budget.elapsed()
    out_path.write_text(json.dumps(results, indent=1, default=float))
    log(f"written {out_path}")


if __name__ == "__main__":
    main()
