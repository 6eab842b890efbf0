#!/usr/bin/env python
"""SASS of the helium generation kernels without a GPU: numba-cuda's PTX (NVVM), ptxas for sm_90, nvdisasm.

Prints, per form of the pair loop, the instructions per pair evaluation of the innermost loop and how
many of them go to the FP64 pipe (``helium_gpu.pair_loop``: the same counts the device's stage
``variants`` records; checked equal on 2026-11-23 for the four rsqrt forms). Use it to try a change to
the pair term before spending device time on it.

With ``--lattice NAME[,NAME…]`` it compiles study 000's chain kernels instead (``lattice_cuda.kernels()``'s
names: run_chains, run_chains_grid, run_chains_grid_rank2, …) and prints ptxas's registers and spills at
each ``--caps`` register cap (the kernel's block of 224 threads at L = 15 gets 232), and a digest of the SASS
(equal digests: the same machine code).

Set-up (wheels from PyPI, no driver needed; 13.x is the CUDA major that numba-cuda 0.30 finds; numba's own
deprecated ``numba.cuda`` fails to compile these kernels ("Signature mismatch"), so numba-cuda 0.30.4 must be
installed too, e.g. in a venv made with ``--system-site-packages``):

    pip install --target /tmp/nvtools nvidia-cuda-nvcc nvidia-cuda-nvrtc nvidia-nvvm nvidia-cuda-nvdisasm
    python -m venv --system-site-packages /tmp/sassenv && /tmp/sassenv/bin/pip install numba-cuda==0.30.4
    CUDA_HOME=/tmp/nvtools/nvidia/cu13 PATH=/tmp/nvtools/nvidia/cu13/bin:$PATH \\
        python benchmarks/sass_offline.py [--forms f32:fold/rsqrt/2,f64:fold_select/rsqrt/4] [--keep DIR]
        python benchmarks/sass_offline.py --lattice run_chains_grid,run_chains_grid_rank2 --caps 232,128
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import types
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _helium_gpu():
    spec = importlib.util.spec_from_file_location("helium_gpu", REPO / "benchmarks" / "helium_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sass_text(single: bool, min_image: str, inverse: str, unroll: int, keep: Path | None = None,
              kernel_name: str = "generate_shared") -> str:
    """nvdisasm's text of ``kernel_name`` (a generation kernel of helium_chains) for one form, compiled for
    sm_90 on this machine."""
    warnings.filterwarnings("ignore", message="Cannot determine the NVRTC version")  # the wheel's file name
    from numba import cuda, types as nt
    import numba.cuda.dispatcher as dispatcher

    # device functions ask the current device for its compute capability; there is none here
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    from qmckit.backends import helium_chains as hc

    real = nt.float32 if single else nt.float64
    signature = (real[:, :, ::1], nt.uint64[:, ::1], nt.float64, nt.float64, nt.float64, nt.float64, nt.int64,
                 nt.float64, nt.int64[::1], real[:, :, :, ::1], nt.int64)
    if kernel_name in ("generate_hybrid", "generate_packed"):
        signature += (nt.int64,)  # shared atoms K, or lanes per chain G
    kernel = hc.kernels(single, min_image, inverse, unroll)[kernel_name]
    ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0), fastmath=single)
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        stem = folder / f"{kernel_name}_{'f32' if single else 'f64'}_{min_image}_{inverse}_{unroll}"
        stem.with_suffix(".ptx").write_text(ptx)
        ptxas = Path(os.environ.get("CUDA_HOME", "")) / "bin" / "ptxas"
        subprocess.run([str(ptxas) if ptxas.exists() else "ptxas", "-arch=sm_90", "-O3", str(stem.with_suffix(".ptx")),
                        "-o", str(stem.with_suffix(".cubin"))], check=True)
        return subprocess.run(["nvdisasm", "-c", str(stem.with_suffix(".cubin"))], check=True, capture_output=True,
                              text=True).stdout


def _unnamed(sass: str) -> str:
    """SASS text without mangled symbol names, comments and column padding: the same machine code compiled from a
    function that moved to another module or closure (its qualified name, and so the padding, changed) gives
    the same text."""
    import re

    return re.sub(r"[ \t]+", " ", re.sub(r"//.*", "", re.sub(r"_Z[0-9A-Za-z_$]+", "SYM", sass)))


def lattice_report(names, caps, keep: Path | None = None) -> list[dict]:
    """ptxas's registers and spill bytes for study 000's chain kernels at each register cap, and a digest of
    their SASS (sm_90), compiled on this machine without a GPU."""
    import hashlib
    import re

    warnings.filterwarnings("ignore", message="Cannot determine the NVRTC version")
    from numba import cuda, types as nt
    import numba.cuda.dispatcher as dispatcher

    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    from qmckit.backends import lattice_cuda as lc

    f64, i64, u64, boolean = nt.float64, nt.int64, nt.uint64, nt.boolean
    # CudaChains._args of the thesis kernel: pair, pairT, neighbours, hopping, bonds, J, projected, n_pairs,
    # the chain arrays and streams, sweeps, moves, measure, refresh, energies, counts, drift, scratch, F, G,
    # T_P, bfactor, batch, cycles, snapshots, sweep0, total, the parse's jumps
    signature = (f64[:, ::1], f64[:, ::1], i64[:, ::1], f64[:, ::1], i64[:, ::1], f64, boolean, i64,
                 i64[:, ::1], i64[:, ::1], i64[:, ::1], i64[:, ::1], f64[:, :, ::1], u64[:, ::1], i64, i64, boolean,
                 i64, f64[:, :, ::1], i64[:, ::1], f64[::1], f64[:, :, ::1], f64[:, ::1], f64[:, ::1], i64, i64, i64,
                 f64[:, ::1], f64[:, ::1], i64, i64, u64[:, :, ::1])
    ptxas = Path(os.environ.get("CUDA_HOME", "")) / "bin" / "ptxas"
    ptxas = str(ptxas) if ptxas.exists() else "ptxas"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            ptx, _ = cuda.compile_ptx(lc.kernels(255)[name].py_func, signature, cc=(9, 0))
            stem = folder / name
            stem.with_suffix(".ptx").write_text(ptx)
            for cap in caps:
                cubin = folder / f"{name}_{cap}.cubin"
                log = subprocess.run([ptxas, "-arch=sm_90", "-O3", "-v", f"-maxrregcount={cap}",
                                      str(stem.with_suffix(".ptx")), "-o", str(cubin)],
                                     check=True, capture_output=True, text=True).stderr
                sass = subprocess.run(["nvdisasm", "-c", str(cubin)], check=True, capture_output=True, text=True).stdout
                number = lambda pattern: int(re.search(pattern, log).group(1))  # noqa: E731
                rows.append({"kernel": name, "cap": cap, "registers": number(r"Used (\d+) registers"),
                             "spill_stores": number(r"(\d+) bytes spill stores"),
                             "spill_loads": number(r"(\d+) bytes spill loads"),
                             "sass_lines": len(sass.splitlines()),
                             "sass_digest": hashlib.sha256(sass.encode()).hexdigest()[:12],
                             "sass_digest_unnamed": hashlib.sha256(_unnamed(sass).encode()).hexdigest()[:12]})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forms", default="f32:fold/rsqrt/2,f32:fold/rsqrt/4,f64:fold_select/rsqrt/2,f64:fold_select/rsqrt/4",
                    help="dtype:min_image/inverse/unroll, comma-separated (helium_chains.kernels)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the PTX and cubin files in this folder")
    ap.add_argument("--kernel", default="generate_shared", help="generate_shared, _split, _global, _hybrid or _packed")
    ap.add_argument("--lattice", default=None, help="study 000's chain kernels instead, comma-separated names")
    ap.add_argument("--caps", default="232,128", help="with --lattice: register caps, comma-separated")
    args = ap.parse_args(argv)
    if args.lattice:
        print("| kernel | register cap | registers | spill stores (B) | spill loads (B) | SASS lines | SASS digest | "
              "digest without symbol names |")
        print("|---|---:|---:|---:|---:|---:|---|---|")
        for r in lattice_report(args.lattice.split(","), [int(c) for c in args.caps.split(",")], args.keep):
            print(f"| {r['kernel']} | {r['cap']} | {r['registers']} | {r['spill_stores']} | {r['spill_loads']} | "
                  f"{r['sass_lines']} | {r['sass_digest']} | {r['sass_digest_unnamed']} |")
        return
    hg = _helium_gpu()
    print("| form | instructions per trip | pair evaluations per trip | per evaluation | on the FP64 pipe |")
    print("|---|---:|---:|---:|---:|")
    for form in args.forms.split(","):
        dtype, _, rest = form.partition(":")
        min_image, inverse, unroll = rest.split("/")
        text = sass_text(dtype == "f32", min_image, inverse, int(unroll), args.keep, args.kernel)
        loop = hg.pair_loop(hg.sass_instructions(text), 2 * int(unroll))
        if "error" in loop:
            print(f"| {form} | {loop['error']} | | | |")
            continue
        print(f"| {form} | {loop['instructions_per_trip']} | {loop['evaluations_per_trip']} | "
              f"{loop['instructions_per_evaluation']:.2f} | {loop['fp64_pipe_per_evaluation']:.1f} |")


if __name__ == "__main__":
    main()
