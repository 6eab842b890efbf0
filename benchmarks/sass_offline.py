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
        python benchmarks/sass_offline.py --atoms     # the atoms', quantum dots', molecules' and bosons' walker kernels
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

import numpy as np

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
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            ptx, _ = cuda.compile_ptx(lc.kernels(255)[name].py_func, signature, cc=(9, 0))
            stem = folder / name
            stem.with_suffix(".ptx").write_text(ptx)
            for cap in caps:
                rows.append({"kernel": name, "cap": cap,
                             **_assemble(stem.with_suffix(".ptx"), folder / f"{name}_{cap}.cubin", cap)})
    return rows


def _assemble(ptx: Path, cubin: Path, cap: int | None = None) -> dict:
    """ptxas (sm_90, -O3, with a register cap if given) and nvdisasm on one PTX file: registers, spill bytes,
    SASS lines and digests of the SASS (as it is, without symbol names, and also without global offsets)."""
    import hashlib
    import re

    ptxas = Path(os.environ.get("CUDA_HOME", "")) / "bin" / "ptxas"
    command = [str(ptxas) if ptxas.exists() else "ptxas", "-arch=sm_90", "-O3", "-v"]
    command += [f"-maxrregcount={cap}"] if cap is not None else []
    log = subprocess.run(command + [str(ptx), "-o", str(cubin)], check=True, capture_output=True, text=True).stderr
    sass = subprocess.run(["nvdisasm", "-c", str(cubin)], check=True, capture_output=True, text=True).stdout
    number = lambda pattern: int(re.search(pattern, log).group(1))  # noqa: E731
    digest = lambda text: hashlib.sha256(text.encode()).hexdigest()[:12]  # noqa: E731
    return {"registers": number(r"Used (\d+) registers"), "spill_stores": number(r"(\d+) bytes spill stores"),
            "spill_loads": number(r"(\d+) bytes spill loads"), "sass_lines": len(sass.splitlines()),
            "sass_digest": digest(sass), "sass_digest_unnamed": digest(_unnamed(sass)),
            "sass_digest_unplaced": digest(_unplaced(sass))}


def thread_per_walker_report(keep: Path | None = None) -> list[dict]:
    """ptxas's registers and spills and the SASS digests of the walker kernels of the continuum systems,
    compiled for sm_90 on this machine without a GPU: the atoms' (both e–n cusp variants,
    :mod:`qmckit.backends.cuda_atom`) and quantum dots' (:mod:`qmckit.backends.cuda_qdot`) ``sweep`` and
    ``energy``, and the trapped bosons' thread- and block-per-walker sweeps (:mod:`qmckit.backends.cuda_bec`,
    float64 and float32); each sweep also as DMC's ``track_diffusion`` variant ("+track")."""
    warnings.filterwarnings("ignore", message="Cannot determine the NVRTC version")
    from numba import cuda, types as nt
    import numba.cuda.dispatcher as dispatcher

    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    from qmckit.backends import cuda_atom, cuda_bec, cuda_qdot

    f64, i64, u64 = nt.float64, nt.int64, nt.uint64
    a3, a4 = f64[:, :, ::1], f64[:, :, :, ::1]
    # CudaAtomSweeper.sweep's and recompute's launches: positions, T, DPHI, JG (walker-fastest), ...
    sweep = (a3, a3, a4, a3, u64[:, ::1], f64[::1], i64, i64, f64, f64, i64, i64, f64[:, ::1], i64[::1], f64[:, ::1],
             f64[:, ::1])
    energy = (a3, a3, a4, a3, f64[::1], i64, f64[::1])

    def bec(real):  # CudaBosonSweeper.launch: positions (3, N, W), states, α, λ, a, …, energies, accepted, diffusion
        return (real[:, :, ::1], u64[:, ::1], real, real, real, i64, i64, real, real, i64, i64, real[:, ::1],
                i64[::1], real[:, ::1])

    def tracked(factory):  # the kernel sets without and with the diffusion sums (a tree before them: without only)
        try:
            return {"": factory(False), "+track": factory(True)}
        except TypeError:
            return {"": factory()}

    variants = {}
    for name, factory, signatures in (
            ("atom", lambda *t: cuda_atom.kernels(False, *t), {"sweep": sweep, "energy": energy}),
            ("atom_en_cusp", lambda *t: cuda_atom.kernels(True, *t), {"sweep": sweep, "energy": energy}),
            ("qdot", cuda_qdot.kernels, {"sweep": sweep, "energy": energy}),
            ("bec f64", lambda *t: cuda_bec.kernels(np.float64, *t), {"thread": bec(f64), "block": bec(f64)}),
            ("bec f32", lambda *t: cuda_bec.kernels(np.float32, *t),
             {"thread": bec(nt.float32), "block": bec(nt.float32)})):
        for suffix, kernels in tracked(factory).items():
            for kernel, signature in signatures.items():
                if suffix and kernel == "energy":
                    continue  # the same kernel in both sets
                py_func = kernels[kernel].py_func
                variants[f"{name} {kernel}{suffix}"] = (py_func, signature[:py_func.__code__.co_argcount])
    try:
        variants.update(molecule_variants())
    except ImportError as error:  # the molecule's kernels need PySCF for its orbitals
        warnings.warn(f"molecule kernels left out: {error}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for label, (py_func, signature) in variants.items():
            ptx, _ = cuda.compile_ptx(py_func, signature, cc=(9, 0))
            stem = folder / label.replace(" ", "_").replace("+", "").replace("/", "-")
            stem.with_suffix(".ptx").write_text(ptx)
            rows.append({"kernel": label, **_assemble(stem.with_suffix(".ptx"), stem.with_suffix(".cubin"))})
    return rows


def molecule_variants() -> dict:
    """The molecule's sweep (also with DMC's tracking and the moves near nuclei) and energy kernels, by label, for
    H2O/STO-3G with cusp-corrected orbitals (the kernels are compiled per molecule). Needs PySCF."""
    from numba import types as nt

    from qmckit.backends import cuda_molecule
    from qmckit.systems.molecule import Molecule

    f64, i64, u64 = nt.float64, nt.int64, nt.uint64
    a2, a3, a4 = f64[:, ::1], f64[:, :, ::1], f64[:, :, :, ::1]
    # CudaMoleculeSweeper.launch: positions, T, DPHI, OL, JG, DV, RC, FLAG, states, params, …, nuclei
    caches = (a3, a3, a4, a3, a3, a3, a3, a2)
    sweep = caches + (u64[:, ::1], f64[::1], i64, i64, f64, f64, i64, i64, a2, i64[::1], a2, a2)
    energy = caches + (f64[::1], i64, f64[::1])
    vector = Molecule(xyz="h2o", basis="sto-3g", cusp=True, jastrow_en=False).kernel_params
    variants = {}
    for suffix, track, nuclear in (("", False, False), ("+track+nuclear", True, True)):
        k = cuda_molecule.kernels(vector, track, nuclear)
        variants[f"molecule h2o-sto-3g cusp sweep{suffix}"] = (k["sweep"].py_func, sweep)
        if not suffix:
            variants["molecule h2o-sto-3g cusp energy"] = (k["energy"].py_func, energy)
    return variants


def _unplaced(sass: str) -> str:
    """:func:`_unnamed` SASS with the offsets of numba's global environment symbols in constant bank 4 masked too:
    a kernel whose device functions moved to another module gets them at other offsets, and nothing else changes."""
    import re

    return re.sub(r"c\[0x4\]\[0x[0-9a-f]+\]", "c[0x4][ADDR]", _unnamed(sass))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forms", default="f32:fold/rsqrt/2,f32:fold/rsqrt/4,f64:fold_select/rsqrt/2,f64:fold_select/rsqrt/4",
                    help="dtype:min_image/inverse/unroll, comma-separated (helium_chains.kernels)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the PTX and cubin files in this folder")
    ap.add_argument("--kernel", default="generate_shared", help="generate_shared, _split, _global, _hybrid or _packed")
    ap.add_argument("--lattice", default=None, help="study 000's chain kernels instead, comma-separated names")
    ap.add_argument("--caps", default="232,128", help="with --lattice: register caps, comma-separated")
    ap.add_argument("--atoms", action="store_true",
                    help="the walker kernels: atoms, quantum dots, trapped bosons (with DMC's tracking variants)")
    args = ap.parse_args(argv)
    if args.atoms:
        print("| kernel | registers | spill stores (B) | spill loads (B) | SASS lines | digest without symbol names | "
              "… and global offsets |")
        print("|---|---:|---:|---:|---:|---|---|")
        for r in thread_per_walker_report(args.keep):
            print(f"| {r['kernel']} | {r['registers']} | {r['spill_stores']} | {r['spill_loads']} | {r['sass_lines']} | "
                  f"{r['sass_digest_unnamed']} | {r['sass_digest_unplaced']} |")
        return
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
