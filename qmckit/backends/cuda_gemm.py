"""Batched orbital evaluation on the GPU: C = A·B as a shared-memory tiled GEMM (numba-cuda).

Gaussian-basis QMC (study 001, §2.5) evaluates every orbital of every electron of every walker as
one matrix product: ``A`` (M, K) holds the basis-function values (rows: walkers × electrons, and
× 5 when gradients and Laplacians ride along), ``B`` (K, N) the MO coefficients (K basis
functions, N occupied orbitals; the same B for all walkers). This module is that product on a
GPU in three arithmetics, each with a CPU twin:

=============  ====================================================  ================================
``kind``       GPU arithmetic                                        CPU twin
=============  ====================================================  ================================
``"f64"``      float64, ``fma`` per term                             ``A @ B`` (numpy/BLAS, float64)
``"f32"``      float32, ``fma`` per term                             :func:`qmckit.precision.matmul_f32`
``"kahan32"``  float32, product rounded (``mul.rn``), the sum        :func:`matmul_kahan_f32_tiled`
               Kahan-compensated (001's Algorithm 2, "KSF")          (= :func:`qmckit.precision.matmul_kahan_f32`)
=============  ====================================================  ================================

Kernel
------
One thread block computes a ``bm × bn`` tile of C. The K axis is walked in tiles of ``bk``: all
threads copy the A tile (stored transposed, rows padded by one element against bank conflicts) and
the B tile into shared memory, synchronise, and every thread updates its own ``tm × tn`` outputs
from registers: rows ``ty + (bm/tm)·i``, columns ``tx + (bn/tn)·j`` (strided, so that a warp reads
consecutive shared-memory words and writes consecutive columns of C; shared-memory offsets are
unsigned, so numba emits no negative-index wraparound and the per-i, per-j constants fold into the
load instructions). Outputs, and for Kahan their compensations, live in ``cuda.local.array`` with
indices that are constants after unrolling, so they are registers (the PTX has no ``.local``
memory: :func:`ptx` and tests/test_cuda_gemm.py). Loads past the edges of A or B read zeros,
stores past the edges of C are skipped, so any M, K, N work (M ≤ 65535·bm: row tiles are the
grid's y). Column tiles are the grid's x, so the blocks that share one A row tile run side by side
and read it from L2. The last, partial K tile runs only its valid ``k`` (a zero term is not a
no-op for Kahan: ``y = 0·0 − c`` would fold the compensation into the sum).

Presets (:data:`TILES`, chosen per N by :func:`default_tile`; every thread holds tm·tn outputs;
registers per thread from ptxas 13 for sm_90, float32 / kahan32 / float64):

* ``"256x16"`` bm 256, bn 16,  bk 16, tm 8, tn 4 (128 threads) — N ≤ 16 (small molecules); 121 / 154 / 142
* ``"128x32"`` bm 128, bn 32,  bk 16, tm 8, tn 4 (128 threads) — N ≤ 32; 112 / 144 / 156
* ``"128x64"`` bm 128, bn 64,  bk 16, tm 8, tn 8 (128 threads) — larger N; 154 / 223 / 208
* ``"128x128"`` bm 128, bn 128, bk 16, tm 8, tn 8 (256 threads) — square; 128 / 223 / 183

No preset spills. Every thread loads the same k column of A and the same column of B in each
load round (the thread count is a multiple of bk and bn), so the tile loads are a few integer
instructions each.

Summation order and the twins
-----------------------------
Each output element is accumulated by ONE thread, in registers, over the K tiles in order and over
``k`` within a tile in order: its order is k = 0, 1, …, K−1, whatever the tile — the same as the
sequential CPU kernels of :mod:`qmckit.precision`. Kahan's compensation ``c`` is per output
element and is carried across tiles (never reset at a tile boundary). What differs between GPU and
CPU is only the instruction used:

* ``"kahan32"``: each step is ``p = a·b``, ``y = p − c``, ``t = s + y``, ``c = (t − s) − y``,
  ``s = t`` — exactly :func:`qmckit.precision.dot_kahan_f32` (001's Algorithm 2: the product is
  rounded, the additions compensated). On the device every one of these is an explicitly rounded
  libdevice operation (``fmul_rn``/``fsub_rn``/``fadd_rn`` → PTX ``mul.rn``/``sub.rn``/``add.rn``
  ``.f32``), which PTX guarantees is never contracted into an ``fma`` or reordered; numba-cuda
  compiles without fast-math unless asked (no reassociation, no flush-to-zero). The PTX
  (:func:`ptx`) shows that sequence and no ``fma``. So the GPU result equals
  :func:`matmul_kahan_f32_tiled` (the CPU loop in the GPU kernel's tile order) and
  :func:`qmckit.precision.matmul_kahan_f32` BIT FOR BIT, on the device as in the simulator.
* ``"f32"`` / ``"f64"``: ``s = fma(a, b, s)`` (``cuda.fma``: one rounding per term on the device).
  The simulator evaluates ``cuda.fma`` as ``a*b + s`` (two roundings), so there — and only there —
  ``"f32"`` equals :func:`qmckit.precision.matmul_f32` bit for bit; on a GPU the two agree within
  the bound below. numpy's BLAS sums in another (blocked) order, so ``"f64"`` agrees with it
  within the bound, not bitwise.

Error bounds (per element, ``|A||B|`` the product of absolute values, ``u32 = 2**-24``,
``u64 = 2**-53``, ``γ_K(u) = K u / (1 − K u)``; Higham §3.1, §4.3), against the exact product of
the (float32 for f32 kinds) inputs — :func:`qmckit.precision.matmul_ref`:

* ``"f64"``:     ``|ΔC| ≤ γ_K(u64) (|A||B|)``; vs numpy float64 ``≤ 2 γ_K(u64) (|A||B|)``
* ``"f32"``:     ``|ΔC| ≤ γ_K(u32) (|A||B|)`` (fused or not)
* ``"kahan32"``: ``|ΔC| ≤ (3 u32 + 4 K u32²) (|A||B|)`` — flat in K (2 u32 for the compensated
  sum, u32 for the rounded product)

Use
---
:func:`matmul` takes numpy arrays (converted to the kind's dtype, copied to the GPU and back) or
device arrays (numba device arrays, or anything with ``__cuda_array_interface__`` such as CuPy;
they must already have the kind's dtype), and an optional ``out``. Importing this module never
needs CUDA; :func:`available` tells whether a real GPU can be used. benchmarks/orbital_gemm_device.py
times it against cuBLAS and the CPU on 001-sized products.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numba as nb
import numpy as np

from . import cuda_import
from .cuda_import import available, simulated  # noqa: F401  (this module's GPU questions, answered once)

__all__ = ["KINDS", "Tile", "TILES", "default_tile", "matmul", "matmul_kahan_f32_tiled", "kernel",
           "ptx", "error_bound", "simulated", "available", "U32", "U64"]

KINDS = ("f64", "f32", "kahan32")
DTYPES = {"f64": np.dtype(np.float64), "f32": np.dtype(np.float32), "kahan32": np.dtype(np.float32)}
U32 = 2.0 ** -24
U64 = 2.0 ** -53
SHARED_LIMIT_BYTES = 48 * 1024  # static shared memory per block without the opt-in attribute
MAX_GRID_Y = 65535  # row tiles are the grid's y dimension

cuda = None  # numba.cuda, imported on first use; a module global so that the simulator can swap it
libdevice = None  # numba.cuda.libdevice (real GPU only; the simulator has none)


def _cuda():
    global libdevice
    if cuda is None and not simulated():
        from numba.cuda import libdevice as _libdevice

        libdevice = _libdevice
    return cuda_import.bind(globals())


@dataclass(frozen=True)
class Tile:
    """Block tile ``bm × bn`` of C, K step ``bk``, ``tm × tn`` outputs per thread.

    Threads per block: ``(bn // tn) × (bm // tm)`` (x along columns, y along rows).
    """

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def tx(self) -> int:
        return self.bn // self.tn

    @property
    def ty(self) -> int:
        return self.bm // self.tm

    @property
    def threads(self) -> int:
        return self.tx * self.ty

    def shared_bytes(self, dtype) -> int:
        return (self.bk * (self.bm + 1) + self.bk * self.bn) * np.dtype(dtype).itemsize

    def validate(self, dtype=np.float64) -> "Tile":
        bad = []
        if min(self.bm, self.bn, self.bk, self.tm, self.tn) < 1:
            bad.append("all sizes must be >= 1")
        elif self.bm % self.tm or self.bn % self.tn:
            bad.append("bm must be a multiple of tm and bn of tn")
        elif self.threads > 1024:
            bad.append(f"{self.threads} threads per block (at most 1024)")
        elif (self.bm * self.bk) % self.threads or (self.bn * self.bk) % self.threads:
            bad.append(f"bm·bk and bn·bk must be multiples of the {self.threads} threads")
        elif self.shared_bytes(dtype) > SHARED_LIMIT_BYTES:
            bad.append(f"{self.shared_bytes(dtype)} bytes of shared memory (at most {SHARED_LIMIT_BYTES})")
        if bad:
            raise ValueError(f"tile {self}: {bad[0]}")
        return self


TILES = {
    "256x16": Tile(256, 16, 16, 8, 4),
    "128x32": Tile(128, 32, 16, 8, 4),
    "128x64": Tile(128, 64, 16, 8, 8),
    "128x128": Tile(128, 128, 16, 8, 8),
}
# relative throughput of a full tile: 8×4 outputs per thread load 12 shared words per 32 updates,
# 8×8 load 16 per 64; 128x128 has 256 threads of up to 223 registers, one block per SM (rough
# weights for default_tile, not measurements: benchmarks/orbital_gemm_device.py scans every preset)
_TILE_WEIGHT = {"256x16": 0.7, "128x32": 0.7, "128x64": 1.0, "128x128": 0.95}


def default_tile(n_cols: int, kind: str = "f32") -> str:
    """The preset for an output of ``n_cols`` columns: the best weight × useful fraction of the
    columns computed (ceil(N/bn)·bn are computed for N). ``kind`` is accepted for later per-kind
    choices; the presets fit every kind today."""
    n = max(1, int(n_cols))
    best, score = None, -1.0
    for name, tile in TILES.items():
        useful = n / (-(-n // tile.bn) * tile.bn)
        s = _TILE_WEIGHT[name] * useful
        if s > score + 1e-12:
            best, score = name, s
    return best


def _as_tile(tile, n_cols, kind) -> Tile:
    if tile is None:
        tile = default_tile(n_cols, kind)
    if isinstance(tile, str):
        if tile not in TILES:
            raise ValueError(f"tile must be one of {sorted(TILES)} or a Tile, got {tile!r}")
        tile = TILES[tile]
    if not isinstance(tile, Tile):
        raise ValueError(f"tile must be one of {sorted(TILES)} or a Tile, got {tile!r}")
    return tile.validate(DTYPES[kind])


def error_bound(kind: str, K: int) -> float:
    """Bound on |ΔC| / (|A||B|) per element against the exact product (see the module docstring)."""
    if kind == "f64":
        return K * U64 / (1 - K * U64)
    if kind == "f32":
        return K * U32 / (1 - K * U32)
    if kind == "kahan32":
        return 3 * U32 + 4 * K * U32 ** 2
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


# --------------------------------------------------------------------------------------------
# kernels, compiled once per (kind, tile)
# --------------------------------------------------------------------------------------------
def _source(kind: str, tile: Tile):
    """The kernel's Python function (not yet compiled): used by :func:`kernel` and :func:`ptx`."""
    c = _cuda()
    F = DTYPES[kind].type
    nbF = nb.from_dtype(DTYPES[kind])
    BM, BN, BK, TM, TN = tile.bm, tile.bn, tile.bk, tile.tm, tile.tn
    TX, TY, NT = tile.tx, tile.ty, tile.threads
    A_LOADS = BM * BK // NT
    B_LOADS = BN * BK // NT
    Q = TM * TN
    BMP = BM + 1  # padded row of the transposed A tile (shapes must be compile-time constants)
    AS_SIZE = BK * BMP
    BS_SIZE = BK * BN
    U = np.uint64
    ZERO = F(0.0)
    KAHAN = kind == "kahan32"
    if simulated():
        # plain Python functions: they share this module's globals, in which the simulator swaps
        # ``cuda`` while a kernel runs, and skip the simulator's costly device-function calls
        def dev(f):
            return f
    else:
        # inlined at numba-IR level (compile_ptx then needs no GPU) and at NVVM level
        dev = c.jit(device=True, inline="always", forceinline=True)

    if simulated():  # numpy float32 scalars: each operation one correctly rounded result
        @dev
        def mul_rn(a, b):
            return a * b

        @dev
        def add_rn(a, b):
            return a + b

        @dev
        def sub_rn(a, b):
            return a - b
    else:  # mul.rn / add.rn / sub.rn.f32: PTX never contracts or reorders explicitly rounded ops
        @dev
        def mul_rn(a, b):
            return libdevice.fmul_rn(a, b)

        @dev
        def add_rn(a, b):
            return libdevice.fadd_rn(a, b)

        @dev
        def sub_rn(a, b):
            return libdevice.fsub_rn(a, b)

    if NT % BK == 0 and NT % BN == 0:  # every preset: a thread's k (A) and column (B) are fixed
        A_STEP = NT // BK  # rows of the A tile per load round
        B_STEP = NT // BN  # k rows of the B tile per load round

        @dev
        def load_tiles(A, B, As, Bs, row0, col0, k0, kt, tid):
            """A[row0:row0+BM, k0:k0+kt] -> As (transposed), B[k0:k0+kt, col0:col0+BN] -> Bs;
            zeros outside the matrices. Unsigned indices: no wraparound code."""
            M = A.shape[0]
            N = B.shape[1]
            ka = tid % BK
            ra = tid // BK
            a_in = ka < kt
            a_rows = M - row0 - ra  # rows left below this thread's first one
            a_row = U(row0 + ra)
            a_col = U(k0 + ka)
            sa = U(ka) * U(BMP) + U(ra)
            for r in range(A_LOADS):
                v = ZERO
                if a_in and A_STEP * r < a_rows:
                    v = A[a_row + U(A_STEP * r), a_col]
                As[sa + U(A_STEP * r)] = v
            cb = tid % BN
            kb = tid // BN
            b_in = col0 + cb < N
            b_ks = kt - kb  # k rows left from this thread's first one
            b_row = U(k0 + kb)
            b_col = U(col0 + cb)
            sb = U(kb) * U(BN) + U(cb)
            for r in range(B_LOADS):
                v = ZERO
                if b_in and B_STEP * r < b_ks:
                    v = B[b_row + U(B_STEP * r), b_col]
                Bs[sb + U(B_STEP * BN * r)] = v
    else:
        @dev
        def load_tiles(A, B, As, Bs, row0, col0, k0, kt, tid):
            """As above, for tiles whose thread count is not a multiple of bk and bn."""
            M = A.shape[0]
            N = B.shape[1]
            for r in range(A_LOADS):
                e = tid + NT * r
                rr = e // BK
                kk = e - rr * BK
                v = ZERO
                if row0 + rr < M and kk < kt:
                    v = A[U(row0 + rr), U(k0 + kk)]
                As[U(kk) * U(BMP) + U(rr)] = v
            for r in range(B_LOADS):
                e = tid + NT * r
                kk = e // BN
                cc = e - kk * BN
                v = ZERO
                if col0 + cc < N and kk < kt:
                    v = B[U(k0 + kk), U(col0 + cc)]
                Bs[U(kk) * U(BN) + U(cc)] = v

    @dev
    def operands(As, Bs, kk, tx, ty, a, b):
        # unsigned offsets: numba then emits no negative-index wraparound, and the per-i/j
        # constants fold into the shared-memory load addresses
        ka = U(kk) * U(BMP) + U(ty)
        kb = U(kk) * U(BN) + U(tx)
        for i in range(TM):
            a[i] = As[ka + U(TY * i)]
        for j in range(TN):
            b[j] = Bs[kb + U(TX * j)]

    @dev
    def update_kahan(As, Bs, kk, tx, ty, a, b, s, comp):
        """All TM × TN outputs of this thread take the term k = k0 + kk: one Kahan step each."""
        operands(As, Bs, kk, tx, ty, a, b)
        for i in range(TM):
            for j in range(TN):
                q = i * TN + j
                y = sub_rn(mul_rn(a[i], b[j]), comp[q])
                t = add_rn(s[q], y)
                comp[q] = sub_rn(sub_rn(t, s[q]), y)  # (t − s) − y: the algorithm's parentheses
                s[q] = t

    @dev
    def update_fma(As, Bs, kk, tx, ty, a, b, s, comp):
        """All TM × TN outputs of this thread take the term k = k0 + kk: s += a·b (one fma)."""
        operands(As, Bs, kk, tx, ty, a, b)
        for i in range(TM):
            for j in range(TN):
                q = i * TN + j
                s[q] = cuda.fma(a[i], b[j], s[q])

    update = update_kahan if KAHAN else update_fma

    def gemm(A, B, C):
        As = cuda.shared.array(AS_SIZE, nbF)  # A tile, transposed: As[k·(BM+1) + row]
        Bs = cuda.shared.array(BS_SIZE, nbF)  # B tile: Bs[k·BN + col]
        s = cuda.local.array(Q, nbF)
        comp = cuda.local.array(Q, nbF)
        a = cuda.local.array(TM, nbF)
        b = cuda.local.array(TN, nbF)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * TX + tx
        col0 = cuda.blockIdx.x * BN  # column tiles vary fastest: the blocks that share an A
        row0 = cuda.blockIdx.y * BM  # row tile run together and find it in L2
        for q in range(Q):
            s[q] = ZERO
            comp[q] = ZERO
        K = A.shape[1]
        n_full = K // BK
        for t in range(n_full):
            load_tiles(A, B, As, Bs, row0, col0, t * BK, BK, tid)
            cuda.syncthreads()
            for kk in range(BK):
                update(As, Bs, kk, tx, ty, a, b, s, comp)
            cuda.syncthreads()
        rem = K - n_full * BK
        if rem > 0:  # the same for every thread of the block: no divergent barrier
            load_tiles(A, B, As, Bs, row0, col0, n_full * BK, rem, tid)
            cuda.syncthreads()
            for kk in range(rem):
                update(As, Bs, kk, tx, ty, a, b, s, comp)
        M = C.shape[0]
        N = C.shape[1]
        for i in range(TM):
            r = row0 + ty + TY * i
            if r < M:
                for j in range(TN):
                    col = col0 + tx + TX * j
                    if col < N:
                        C[r, col] = s[i * TN + j]

    gemm.__name__ = f"gemm_{kind}_{BM}x{BN}x{BK}_{TM}x{TN}"
    gemm.__qualname__ = gemm.__name__
    return gemm


@functools.lru_cache(maxsize=None)
def kernel(kind: str, tile: Tile):
    """The compiled kernel ``gemm(A, B, C)`` for one kind and tile (launch: grid
    (ceil(N/bn), ceil(M/bm)), block (tile.tx, tile.ty))."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    tile.validate(DTYPES[kind])
    return _cuda().jit(_source(kind, tile))


def ptx(kind: str, tile="128x64", cc=(9, 0)) -> str:
    """PTX of one kernel (needs NVVM, not a GPU; not under the simulator)."""
    if simulated():
        raise RuntimeError("no PTX under the CUDA simulator")
    tile = _as_tile(tile, 64, kind)
    c = _cuda()
    arr = nb.types.Array(nb.from_dtype(DTYPES[kind]), 2, "C")
    text, _ = c.compile_ptx(_source(kind, tile), (arr, arr, arr), cc=cc)
    return text


# --------------------------------------------------------------------------------------------
# host side
# --------------------------------------------------------------------------------------------
def _is_device(x) -> bool:
    return not isinstance(x, np.ndarray) and (hasattr(x, "copy_to_host") or hasattr(x, "__cuda_array_interface__"))


def _device_view(x, name, dtype):
    c = _cuda()
    if not hasattr(x, "copy_to_host"):
        x = c.as_cuda_array(x)  # CuPy, PyTorch, ...: zero-copy numba view
    if x.dtype != dtype:
        raise ValueError(f"{name} is a device array of {x.dtype}; this kind needs {dtype} (convert it on the device)")
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
    return x


def matmul(A, B, kind: str = "f64", out=None, *, tile=None, stream=0):
    """C = A @ B on the GPU in arithmetic ``kind`` (``"f64"``, ``"f32"``, ``"kahan32"``).

    ``A`` (M, K) and ``B`` (K, N): numpy arrays (converted to float64 or float32 for the kind) or
    device arrays of the kind's dtype. With host inputs only, the result is a numpy array; with
    any device input it is a device array (host inputs are copied over). ``out``: optional (M, N)
    array of the kind's dtype to write into (device or host) and return. ``tile``: a name in
    :data:`TILES`, a :class:`Tile`, or None for :func:`default_tile`. ``stream``: CUDA stream for
    the launch and the transfers.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    dtype = DTYPES[kind]
    A = A if _is_device(A) else np.asarray(A)
    B = B if _is_device(B) else np.asarray(B)
    if np.ndim(A) != 2 or np.ndim(B) != 2:
        raise ValueError(f"A and B must be 2-D, got {np.shape(A)} and {np.shape(B)}")
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {tuple(A.shape)}, B is {tuple(B.shape)}")
    tile = _as_tile(tile, N, kind)
    if -(-M // tile.bm) > MAX_GRID_Y:
        raise ValueError(f"M = {M} rows: at most {MAX_GRID_Y * tile.bm} with tile {tile} (grid y limit)")
    c = _cuda()
    on_device = _is_device(A) or _is_device(B) or (out is not None and _is_device(out))
    dA = _device_view(A, "A", dtype) if _is_device(A) else c.to_device(np.ascontiguousarray(A, dtype), stream=stream)
    dB = _device_view(B, "B", dtype) if _is_device(B) else c.to_device(np.ascontiguousarray(B, dtype), stream=stream)
    host_out = None
    if out is not None:
        if tuple(out.shape) != (M, N):
            raise ValueError(f"out has shape {tuple(out.shape)}, needs {(M, N)}")
        if _is_device(out):
            dC = _device_view(out, "out", dtype)
        else:
            if not isinstance(out, np.ndarray) or out.dtype != dtype or not out.flags.c_contiguous:
                raise ValueError(f"out must be a C-contiguous {dtype} array (host or device)")
            host_out = out
            dC = c.device_array((M, N), dtype, stream=stream)
    else:
        dC = c.device_array((M, N), dtype, stream=stream)
    if M and N:
        grid = (-(-N // tile.bn), -(-M // tile.bm))
        kernel(kind, tile)[grid, (tile.tx, tile.ty), stream](dA, dB, dC)
    if host_out is not None:
        dC.copy_to_host(host_out, stream=stream)
        if stream:
            stream.synchronize()
        return host_out
    if on_device:
        return out if out is not None else dC
    result = dC.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    return result


# --------------------------------------------------------------------------------------------
# CPU twin of the Kahan kernel
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _kahan_tiled(A32, B32, tile):
    M, K = A32.shape
    N = B32.shape[1]
    C = np.empty((M, N), np.float32)
    s = np.empty(N, np.float32)
    c = np.empty(N, np.float32)
    for i in range(M):
        s[:] = 0.0
        c[:] = 0.0  # one compensation per output element, carried across all K tiles
        for k0 in range(0, K, tile):
            kt = min(tile, K - k0)  # the last tile runs its valid k only, as on the GPU
            for kk in range(kt):
                a = A32[i, k0 + kk]
                for j in range(N):  # independent chains: vectorising over j keeps each one's order
                    y = a * B32[k0 + kk, j] - c[j]
                    t = s[j] + y
                    c[j] = (t - s[j]) - y
                    s[j] = t
        for j in range(N):
            C[i, j] = s[j]
    return C


def matmul_kahan_f32_tiled(A, B, tile=16):
    """CPU twin of the ``"kahan32"`` kernel: float32 inputs, the GPU's loop over K tiles of
    ``tile`` (a :class:`Tile`, a preset name or its ``bk``), the compensation per output element
    carried across tiles, partial last tile without padding; returns float32 (M, N).

    Because the compensation is never reset, every element is summed in the order k = 0 … K−1
    for any tile, so the result equals :func:`qmckit.precision.matmul_kahan_f32` bit for bit, and
    the GPU kernel's output too (tests/test_cuda_gemm.py under the simulator,
    benchmarks/orbital_gemm_device.py on a GPU).
    """
    if isinstance(tile, str):
        tile = TILES[tile]
    bk = tile.bk if isinstance(tile, Tile) else int(tile)
    if bk < 1:
        raise ValueError(f"tile must be >= 1, got {bk}")
    A32 = np.ascontiguousarray(A, np.float32)
    B32 = np.ascontiguousarray(B, np.float32)
    if A32.ndim != 2 or B32.ndim != 2 or A32.shape[1] != B32.shape[0]:
        raise ValueError(f"need (M, K) @ (K, N), got {A32.shape} and {B32.shape}")
    return _kahan_tiled(A32, B32, bk)
