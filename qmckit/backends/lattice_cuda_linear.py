"""Study 000's GPU chain kernels, part 1: the device functions of the linear algebra (see :mod:`.lattice_cuda`).

:func:`linear_functions` builds, for one compilation of :func:`qmckit.backends.lattice_cuda.kernels`, the
reductions of a block or a warp (sums, maxima, arg-maxima, group and column sums), the strided dot products and
Sherman–Morrison updates of A⁻¹ (one proposal's column or row, a rank-2 swap), the swap's sums, and the float64
tensor-core step and clock intrinsics. It returns them by name with the constants they were built with; the
next part, :func:`qmckit.backends.lattice_cuda_batch.batch_functions`, takes that namespace.
"""
from __future__ import annotations

import numpy as np

from . import cuda_import, lattice_chains
from .cuda_import import simulated
from .lattice_chains import N_COUNTERS, SINGULAR_RATIO
from .lattice_cuda import BATCH, BATCH_DOUBLES, BATCH_INTS, CYCLE_PHASES, PARSE_GROUP, TILE

cuda = None  # numba.cuda, imported on first use; a module global so that the simulator can swap it


def _cuda():
    return cuda_import.bind(globals())


def _dmma():
    """One float64 tensor-core step of a warp, D = A·B + C with A 8×4, B 4×8, C and D 8×8 (PTX
    ``mma.sync.aligned.m8n8k4.row.col.f64``, sm_80 and later; inline assembly: numba-cuda has no
    intrinsic for it). Lane λ holds A[λ >> 2, λ & 3], B[λ & 3, λ >> 2] and C, D[λ >> 2, 2(λ & 3) + v]
    for v = 0, 1: ``dmma(a, b, c0, c1) -> (d0, d1)``. Every lane of the warp must call it together."""
    from llvmlite import ir
    from numba import types as nt
    from numba.cuda.extending import intrinsic

    @intrinsic
    def dmma(typingctx, a, b, c0, c1):
        if any(x != nt.float64 for x in (a, b, c0, c1)):
            return None
        sig = nt.UniTuple(nt.float64, 2)(nt.float64, nt.float64, nt.float64, nt.float64)

        def codegen(context, builder, signature, args):
            d = ir.DoubleType()
            fnty = ir.FunctionType(ir.LiteralStructType([d, d]), [d, d, d, d])
            out = builder.asm(fnty, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {$0, $1}, {$2}, {$3}, {$4, $5};",
                              "=d,=d,d,d,d,d", args, side_effect=False)
            return context.make_tuple(builder, signature.return_type,
                                      [builder.extract_value(out, 0), builder.extract_value(out, 1)])

        return sig, codegen

    return dmma


def _clock64():
    """The SM's 64-bit cycle counter (PTX ``%clock64``, inline assembly) as a device function."""
    from llvmlite import ir
    from numba import types as nt
    from numba.cuda.extending import intrinsic

    @intrinsic
    def clock64(typingctx):
        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.IntType(64), [])
            return builder.asm(fnty, "mov.u64 $0, %clock64;", "=l", [], side_effect=True)

        return nt.uint64(), codegen

    return clock64


def _clock64_sim():
    return np.uint64(0)


def linear_functions() -> dict:
    """The part-1 device functions and constants, by name (see the module docstring)."""
    import numba

    c = _cuda()
    from . import cuda_rng

    SIM = simulated()
    dev = c.jit(**cuda_rng._DEVICE_KW)
    uniform = cuda_rng.uniform
    next_uint64 = cuda_rng.next_uint64
    f64 = numba.float64
    i32 = numba.int32
    i64 = numba.int64
    u32 = numba.uint32
    u64 = numba.uint64
    FULL = 0xFFFFFFFF
    SINGULAR = SINGULAR_RATIO
    TW = TILE
    NC = N_COUNTERS

    # --- reductions ----------------------------------------------------------------------------
    # Every value reduced reaches every thread, summed in the same order, so that all threads take
    # the same decisions. Loops are while loops: numba's range(start, stop, step) divides (64-bit)
    # to count its trips, which is slow on a GPU.
    @dev
    def warp_sum3(a, b, d):
        """(Σ a, Σ b, Σ d) over the warp, to every lane: an xor butterfly, whose additions pair
        commutatively, so that every lane ends with the same bits."""
        o = 16
        while o > 0:
            a += cuda.shfl_xor_sync(FULL, a, o)
            b += cuda.shfl_xor_sync(FULL, b, o)
            d += cuda.shfl_xor_sync(FULL, d, o)
            o >>= 1
        return a, b, d

    @dev
    def block_sum3_shuffle(a, b, d, red, off, trailing):
        """(Σ a, Σ b, Σ d) over the block: a butterfly in every warp, one slot per warp and value in
        red[off:off+96], one barrier, then a butterfly over the warp totals in every warp (+ one more
        barrier when ``trailing``, before red[off:…] may be written again)."""
        t = cuda.threadIdx.x
        lane = t & 31
        warp = t >> 5
        a, b, d = warp_sum3(a, b, d)
        if lane == 0:
            red[off + warp] = a
            red[off + 32 + warp] = b
            red[off + 64 + warp] = d
        cuda.syncthreads()
        sa = 0.0
        sb = 0.0
        sd = 0.0
        if lane < (cuda.blockDim.x >> 5):  # lane q holds warp q's totals
            sa = red[off + lane]
            sb = red[off + 32 + lane]
            sd = red[off + 64 + lane]
        sa, sb, sd = warp_sum3(sa, sb, sd)
        if trailing:
            cuda.syncthreads()
        return sa, sb, sd

    @dev
    def block_sum3_tree(a, b, d, red, off, trailing):
        """The same as a shared-memory tree over any block size (the simulator has no shuffles); always
        ends with a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        red[t] = a
        red[T + t] = b
        red[2 * T + t] = d
        cuda.syncthreads()
        stride = 1
        while 2 * stride < T:
            stride *= 2
        while stride > 0:
            if t < stride and t + stride < T:
                red[t] += red[t + stride]
                red[T + t] += red[T + t + stride]
                red[2 * T + t] += red[2 * T + t + stride]
            cuda.syncthreads()
            stride //= 2
        sa = red[0]
        sb = red[T]
        sd = red[2 * T]
        cuda.syncthreads()
        return sa, sb, sd

    @dev
    def block_max2_shuffle(a, b, red):
        t = cuda.threadIdx.x
        lane = t & 31
        warp = t >> 5
        o = 16
        while o > 0:
            a = max(a, cuda.shfl_down_sync(FULL, a, o))
            b = max(b, cuda.shfl_down_sync(FULL, b, o))
            o >>= 1
        if lane == 0:
            red[warp] = a
            red[32 + warp] = b
        cuda.syncthreads()
        ma = red[0]
        mb = red[32]
        nw = cuda.blockDim.x >> 5
        q = 1
        while q < nw:
            ma = max(ma, red[q])
            mb = max(mb, red[32 + q])
            q += 1
        cuda.syncthreads()
        return ma, mb

    @dev
    def block_max2_tree(a, b, red):
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        red[t] = a
        red[T + t] = b
        cuda.syncthreads()
        stride = 1
        while 2 * stride < T:
            stride *= 2
        while stride > 0:
            if t < stride and t + stride < T:
                red[t] = max(red[t], red[t + stride])
                red[T + t] = max(red[T + t], red[T + t + stride])
            cuda.syncthreads()
            stride //= 2
        ma = red[0]
        mb = red[T]
        cuda.syncthreads()
        return ma, mb

    @dev
    def block_argmax_shuffle(v, i, red, redi):
        """(max v, its index) over the block, to every thread; ties go to the smaller index."""
        t = cuda.threadIdx.x
        lane = t & 31
        warp = t >> 5
        o = 16
        while o > 0:
            ov = cuda.shfl_down_sync(FULL, v, o)
            oi = cuda.shfl_down_sync(FULL, i, o)
            if ov > v or (ov == v and oi < i):
                v = ov
                i = oi
            o >>= 1
        if lane == 0:
            red[warp] = v
            redi[warp] = i
        cuda.syncthreads()
        bv = red[0]
        bi = redi[0]
        nw = cuda.blockDim.x >> 5
        q = 1
        while q < nw:
            if red[q] > bv or (red[q] == bv and redi[q] < bi):
                bv = red[q]
                bi = redi[q]
            q += 1
        cuda.syncthreads()
        return bv, bi

    @dev
    def block_argmax_tree(v, i, red, redi):
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        red[t] = v
        redi[t] = i
        cuda.syncthreads()
        stride = 1
        while 2 * stride < T:
            stride *= 2
        while stride > 0:
            if t < stride and t + stride < T:
                ov = red[t + stride]
                oi = redi[t + stride]
                if ov > red[t] or (ov == red[t] and oi < redi[t]):
                    red[t] = ov
                    redi[t] = oi
            cuda.syncthreads()
            stride //= 2
        bv = red[0]
        bi = redi[0]
        cuda.syncthreads()
        return bv, bi

    @dev
    def group_sum_shuffle(v, g, red):
        """Σ v over the aligned group of g lanes (g divides 32), to every lane of the group: an xor
        butterfly (no barrier; every lane of the warp calls it)."""
        o = g >> 1
        while o > 0:
            v += cuda.shfl_xor_sync(FULL, v, o)
            o >>= 1
        return v

    @dev
    def group_sum_tree(v, g, red):
        t = cuda.threadIdx.x
        red[t] = v
        cuda.syncthreads()
        base = t - t % g
        s = 0.0
        q = 0
        while q < g:
            s += red[base + q]
            q += 1
        cuda.syncthreads()
        return s

    @dev
    def column_sum_shuffle(v, g, red):
        """Σ v over the g lanes of one column in the column layout (lanes 32/g apart within a warp, see
        ``tcol`` in run_chains_gpu), to each of them: an xor butterfly, no barrier."""
        o = 16
        while o * g >= 32:
            v += cuda.shfl_xor_sync(FULL, v, o)
            o >>= 1
        return v

    @dev
    def column_sum_tree(v, g, red):
        t = cuda.threadIdx.x
        red[t] = v
        cuda.syncthreads()
        stride = 32 // g
        base = t - (t & 31) + (t & 31) % stride
        s = 0.0
        q = 0
        while q < g:
            s += red[base + q * stride]
            q += 1
        cuda.syncthreads()
        return s

    block_sum3 = block_sum3_tree if SIM else block_sum3_shuffle
    block_max2 = block_max2_tree if SIM else block_max2_shuffle
    block_argmax = block_argmax_tree if SIM else block_argmax_shuffle
    group_sum = group_sum_tree if SIM else group_sum_shuffle
    column_sum = column_sum_tree if SIM else column_sum_shuffle

    # --- column and row dot products (T_P threads per column, bfactor threads per row) ------------
    @dev
    def strided_dot(A, e, a_step, pv, l, p_step, M):
        """Σ pv[l'] · A[e + (l' − l)/p_step · a_step] over l' = l, l + p_step, … < M (shared memory).

        Unsigned 32-bit indices (no negative-index wrap-around, no 64-bit address arithmetic); eight
        terms per trip with their sixteen loads issued before the multiply-adds (then four, then one at
        a time), so that a trip waits for one shared-memory latency instead of eight: these sums are
        most of a swap proposal."""
        a_step = u32(a_step)
        p_step = u32(p_step)
        e = u32(e)
        l = u32(l)
        M = u32(M)
        p0 = 0.0
        p1 = 0.0
        p2 = 0.0
        p3 = 0.0
        while l + u32(7 * p_step) < M:
            a0 = A[e]
            a1 = A[u32(e + a_step)]
            a2 = A[u32(e + 2 * a_step)]
            a3 = A[u32(e + 3 * a_step)]
            a4 = A[u32(e + 4 * a_step)]
            a5 = A[u32(e + 5 * a_step)]
            a6 = A[u32(e + 6 * a_step)]
            a7 = A[u32(e + 7 * a_step)]
            v0 = pv[l]
            v1 = pv[u32(l + p_step)]
            v2 = pv[u32(l + 2 * p_step)]
            v3 = pv[u32(l + 3 * p_step)]
            v4 = pv[u32(l + 4 * p_step)]
            v5 = pv[u32(l + 5 * p_step)]
            v6 = pv[u32(l + 6 * p_step)]
            v7 = pv[u32(l + 7 * p_step)]
            p0 += v0 * a0
            p1 += v1 * a1
            p2 += v2 * a2
            p3 += v3 * a3
            p0 += v4 * a4
            p1 += v5 * a5
            p2 += v6 * a6
            p3 += v7 * a7
            e = u32(e + 8 * a_step)
            l = u32(l + 8 * p_step)
        if l + u32(3 * p_step) < M:
            a0 = A[e]
            a1 = A[u32(e + a_step)]
            a2 = A[u32(e + 2 * a_step)]
            a3 = A[u32(e + 3 * a_step)]
            v0 = pv[l]
            v1 = pv[u32(l + p_step)]
            v2 = pv[u32(l + 2 * p_step)]
            v3 = pv[u32(l + 3 * p_step)]
            p0 += v0 * a0
            p1 += v1 * a1
            p2 += v2 * a2
            p3 += v3 * a3
            e = u32(e + 4 * a_step)
            l = u32(l + 4 * p_step)
        while l < M:
            p0 += pv[l] * A[e]
            e = u32(e + a_step)
            l = u32(l + p_step)
        return (p0 + p1) + (p2 + p3)

    @dev
    def col_partial(A, M, pv, col, sub, TP):
        """Σ_{l ≡ sub (mod T_P)} pv[l] · A⁻¹[l, col] (pv staged in shared memory); 0 for col ≥ M."""
        return strided_dot(A, sub * M + col, TP * M, pv, sub, TP, M) if col < M else 0.0

    @dev
    def row_partial(A, M, pv, r, sub, BF):
        """Σ_{k ≡ sub (mod bfactor)} A⁻¹[r, k] · pv[k]; 0 for r ≥ M."""
        return strided_dot(A, r * M + sub, BF, pv, sub, BF, M) if r < M else 0.0

    @dev
    def stage(pv, table, row, idx, M):
        """pv[i] = table[row, idx[i]]: one parallel gather from global memory, then a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        i = t
        while i < M:
            pv[i] = table[row, idx[i]]
            i += T
        cuda.syncthreads()

    @dev
    def col_dots(A, M, pv, vec, cpy, k, red, tcol, tsub, cper, TP):
        """vec[c] = Σ_l pv[l] A⁻¹[l, c] for every column c, cpy[l] = A⁻¹[l, k]; ends with a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        col = tcol
        while col - tcol < M:  # the same trip count in every thread (shuffles need the whole warp)
            f = column_sum(col_partial(A, M, pv, col, tsub, TP), TP, red)
            if tsub == 0 and col < M:
                vec[col] = f
            col += cper
        i = t
        while i < M:
            cpy[i] = A[i * M + k]
            i += T
        cuda.syncthreads()

    @dev
    def row_dots(A, M, pv, vec, cpy, l, red, trow, tsub, rper, BF):
        """vec[r] = Σ_k A⁻¹[r, k] pv[k] for every row r, cpy[k] = A⁻¹[l, k]; ends with a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        r = trow
        while r - trow < M:
            g = group_sum(row_partial(A, M, pv, r, tsub, BF), BF, red)
            if tsub == 0 and r < M:
                vec[r] = g
            r += rper
        i = t
        while i < M:
            cpy[i] = A[l * M + i]
            i += T
        cuda.syncthreads()

    @dev
    def updated(a, keep, f, c):
        """One Sherman–Morrison element: c (the divided row or column itself, keep = 0) or a − f·c."""
        return a - f * c if keep != 0.0 else c

    @dev
    def load4(V, i, step):
        """V[i], V[i + step], V[i + 2·step], V[i + 3·step] (unsigned 32-bit offsets)."""
        return V[i], V[u32(i + step)], V[u32(i + 2 * step)], V[u32(i + 3 * step)]

    @dev
    def store4(V, i, step, v0, v1, v2, v3):
        V[i] = v0
        V[u32(i + step)] = v1
        V[u32(i + 2 * step)] = v2
        V[u32(i + 3 * step)] = v3

    @dev
    def strided_update(A, e, a_step, cpy, l, p_step, M, keep, f, inv_r):
        """A[e + (l' − l)/p_step · a_step] ← updated(·, keep, f, cpy[l'] / ratio) over l' = l, l + p_step,
        … < M: one row or column slice of a Sherman–Morrison step.

        Eight, then four elements per trip, all loads before the stores (A and cpy are views of one shared
        array, so the compiler may not move a load above an earlier store: one trip per element would wait
        for a shared-memory latency each)."""
        a_step = u32(a_step)
        p_step = u32(p_step)
        e = u32(e)
        l = u32(l)
        M = u32(M)
        while l + u32(7 * p_step) < M:
            a0 = A[e]
            a1 = A[u32(e + a_step)]
            a2 = A[u32(e + 2 * a_step)]
            a3 = A[u32(e + 3 * a_step)]
            a4 = A[u32(e + 4 * a_step)]
            a5 = A[u32(e + 5 * a_step)]
            a6 = A[u32(e + 6 * a_step)]
            a7 = A[u32(e + 7 * a_step)]
            c0 = cpy[l] * inv_r
            c1 = cpy[u32(l + p_step)] * inv_r
            c2 = cpy[u32(l + 2 * p_step)] * inv_r
            c3 = cpy[u32(l + 3 * p_step)] * inv_r
            c4 = cpy[u32(l + 4 * p_step)] * inv_r
            c5 = cpy[u32(l + 5 * p_step)] * inv_r
            c6 = cpy[u32(l + 6 * p_step)] * inv_r
            c7 = cpy[u32(l + 7 * p_step)] * inv_r
            A[e] = updated(a0, keep, f, c0)
            A[u32(e + a_step)] = updated(a1, keep, f, c1)
            A[u32(e + 2 * a_step)] = updated(a2, keep, f, c2)
            A[u32(e + 3 * a_step)] = updated(a3, keep, f, c3)
            A[u32(e + 4 * a_step)] = updated(a4, keep, f, c4)
            A[u32(e + 5 * a_step)] = updated(a5, keep, f, c5)
            A[u32(e + 6 * a_step)] = updated(a6, keep, f, c6)
            A[u32(e + 7 * a_step)] = updated(a7, keep, f, c7)
            l = u32(l + 8 * p_step)
            e = u32(e + 8 * a_step)
        if l + u32(3 * p_step) < M:
            a0 = A[e]
            a1 = A[u32(e + a_step)]
            a2 = A[u32(e + 2 * a_step)]
            a3 = A[u32(e + 3 * a_step)]
            c0 = cpy[l] * inv_r
            c1 = cpy[u32(l + p_step)] * inv_r
            c2 = cpy[u32(l + 2 * p_step)] * inv_r
            c3 = cpy[u32(l + 3 * p_step)] * inv_r
            A[e] = updated(a0, keep, f, c0)
            A[u32(e + a_step)] = updated(a1, keep, f, c1)
            A[u32(e + 2 * a_step)] = updated(a2, keep, f, c2)
            A[u32(e + 3 * a_step)] = updated(a3, keep, f, c3)
            l = u32(l + 4 * p_step)
            e = u32(e + 4 * a_step)
        while l < M:
            A[e] = updated(A[e], keep, f, cpy[l] * inv_r)
            l = u32(l + p_step)
            e = u32(e + a_step)

    @dev
    def apply_up(A, M, k, ratio, vec, cpy, tcol, tsub, cper, TP):
        """update_up: column k ← cpy / ratio; column c ≠ k −= vec[c] · (cpy / ratio); ends with a barrier."""
        inv_r = 1.0 / ratio
        col = tcol
        while col < M:
            f = 0.0 if col == k else vec[col]
            keep = 0.0 if col == k else 1.0  # column k: A ← cpy / ratio; others: A − f cpy / ratio
            strided_update(A, tsub * M + col, TP * M, cpy, tsub, TP, M, keep, f, inv_r)
            col += cper
        cuda.syncthreads()

    @dev
    def apply_down(A, M, l, ratio, vec, cpy, trow, tsub, rper, BF):
        """update_down: row l ← cpy / ratio; row r ≠ l −= vec[r] · (cpy / ratio); ends with a barrier."""
        inv_r = 1.0 / ratio
        r = trow
        while r < M:
            g = 0.0 if r == l else vec[r]
            keep = 0.0 if r == l else 1.0
            strided_update(A, r * M + tsub, BF, cpy, tsub, BF, M, keep, g, inv_r)
            r += rper
        cuda.syncthreads()

    @dev
    def strided_update2(A, e, a_step, vecs, x0, z0, l, p_step, M, y, w):
        """A[e + (l' − l)/p_step · a_step] −= vecs[x0 + l'] · y + vecs[z0 + l'] · w over l' = l, l + p_step,
        … < M: one column slice of a rank-2 update (:func:`swap_rank2`), four elements per trip with
        their loads before the stores."""
        a_step = u32(a_step)
        p_step = u32(p_step)
        e = u32(e)
        l = u32(l)
        M = u32(M)
        x0 = u32(x0)
        z0 = u32(z0)
        while l + u32(3 * p_step) < M:
            a0, a1, a2, a3 = load4(A, e, a_step)
            b0, b1, b2, b3 = load4(vecs, x0 + l, p_step)
            d0, d1, d2, d3 = load4(vecs, z0 + l, p_step)
            store4(A, e, a_step, a0 - (b0 * y + d0 * w), a1 - (b1 * y + d1 * w), a2 - (b2 * y + d2 * w),
                   a3 - (b3 * y + d3 * w))
            l = u32(l + 4 * p_step)
            e = u32(e + 4 * a_step)
        while l < M:
            A[e] = A[e] - (vecs[x0 + l] * y + vecs[z0 + l] * w)
            l = u32(l + p_step)
            e = u32(e + a_step)

    @dev
    def swap_rank2(A, M, k, l, f_k, y_l, phi_ba, phi_aa, phi_bb, phi_ab, z, f, w, cpy, tile, red, trow, rsub, rper, BF,
                   tcol, csub, cper, TP):
        """An accepted swap (up k: a → b, down l: b → a) as one rank-2 pass A⁻¹ ← A⁻¹ − X Yᵀ − Z Wᵀ, from the
        proposal's numbers: f = F's row (P·A⁻¹, P_l = φ(b, b)), f_k, w = the staged row φ(R↑, a) (w_k = φ(a, a)),
        y_l = Σ_c A⁻¹[l, c] w_c, z = Σ_{c≠k} f_c w_c, c = cpy = column k of A⁻¹; one matrix–vector pass gives
        g = A⁻¹w and r = row l of A⁻¹. Scratch: tile[0:6M]. Ends with a barrier.

        The two Sherman–Morrison steps' algebra, in their order (up first when |f_k| ≥ |y_l|):
        up first:   ρ₁ = f_k, u = g + (φ(b,a) − φ(a,a)) c, s = (z + (ρ₁ − 1) φ(b,a))/ρ₁, ρ₂ = u_l − c_l s,
                    X = c, Y = (f − e_k)/ρ₁, Z = (u − c s − e_l)/ρ₂, W = r − c_l Y;
        down first: ρ₁ = y_l, X = (g − e_l)/ρ₁, Y = r, Δ = φ(b,a) − φ(b,b), π = (z + f_k φ(a,a) + Δρ₁ − φ(b,a))/ρ₁,
                    f' = f + (Δ − π) r, ρ₂ = f'_k, Z = c − X r_k, W = (f' − e_k)/ρ₂.
        Where both single steps are singular (|f_k|, |y_l| < 1e-8, where the sequential update rebuilds), the
        order-free form (Woodbury: row k and column l of A change at once, A''⁻¹ = A⁻¹ − U S⁻¹ V with
        U = [c, ĝ − e_l], V = [f̂ − e_k; r], f̂ = f + (φ(a,b) − φ(b,b)) r, ĝ = g + (φ(b,a) − φ(a,a)) c and
        S = [[f̂_k, S₁₂], [r_k, ĝ_l]], S₁₂ = z + (φ(a,b) − φ(b,b))(y_l − r_k φ(a,a)) + (f̂_k − 1) φ(b,a), det S =
        the swap ratio): X = c, Z = ĝ − e_l, (Y, W) = S⁻¹ (f̂ − e_k, r). It divides by no intermediate ratio, but
        it lost ~16× more to rounding than the ordered steps in a simulator run at L = 5, so it serves only there."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        row_dots(A, M, w, tile[0:M], tile[M:2 * M], l, red, trow, rsub, rper, BF)  # g, r
        form = 0 if abs(f_k) >= abs(y_l) else 1  # up first, down first
        if max(abs(f_k), abs(y_l)) < SINGULAR:
            form = 2  # order-free
        r_k = tile[M + k]
        c_l = cpy[l]
        dq = phi_ba - phi_aa
        db = phi_ba - phi_bb
        dp = phi_ab - phi_bb
        rho1 = f_k if form == 0 else y_l
        s = (z + (f_k - 1.0) * phi_ba) / rho1
        pe = (z + f_k * phi_aa + db * rho1 - phi_ba) / rho1
        rho2 = (tile[l] + dq * c_l - c_l * s) if form == 0 else (f_k + (db - pe) * r_k)
        s11 = f_k + dp * r_k
        s22 = tile[l] + dq * c_l
        s12 = z + dp * (y_l - r_k * phi_aa) + (s11 - 1.0) * phi_ba
        det = s11 * s22 - s12 * r_k
        i = t
        while i < M:
            g = tile[i]
            r = tile[M + i]
            ci = cpy[i]
            ek = 1.0 if i == k else 0.0
            el = 1.0 if i == l else 0.0
            if form == 0:
                x = ci
                y = (f[i] - ek) / rho1
                zz = (g + dq * ci - ci * s - el) / rho2
                wv = r - c_l * y
            elif form == 1:
                x = (g - el) / rho1
                y = r
                zz = ci - x * r_k
                wv = (f[i] + (db - pe) * r - ek) / rho2
            else:
                v = f[i] + dp * r - ek
                x = ci
                y = (s22 * v - s12 * r) / det
                zz = g + dq * ci - el
                wv = (s11 * r - r_k * v) / det
            tile[2 * M + i] = x
            tile[3 * M + i] = y
            tile[4 * M + i] = zz
            tile[5 * M + i] = wv
            i += T
        cuda.syncthreads()
        col = tcol
        while col < M:
            strided_update2(A, csub * M + col, TP * M, tile, 2 * M, 4 * M, csub, TP, M, tile[3 * M + col],
                            tile[5 * M + col])
            col += cper
        cuda.syncthreads()

    swap_sites = dev(lattice_chains.swap_sites.py_func)  # the CPU kernel's own source

    @dev
    def swap_sums(A, M, pv, qv, k, l, vec, cpy, red, tcol, tsub, cper, TP):
        """The partial sums of ratio_swap for up electron k (at a) and down electron l (at b), with
        pv[i] = φ(b, R↓_i) and qv[c] = φ(R↑_c, a) staged: (f_k, Σ_c A⁻¹[l,c] qv[c], Σ_{c≠k} f_c qv[c]),
        f_c = Σ_i pv[i] A⁻¹[i, c]; vec[c] = f_c and cpy = column k are left for an accepted swap."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        pk = 0.0
        pd = 0.0
        ps = 0.0
        col = tcol
        while col - tcol < M:
            f = column_sum(col_partial(A, M, pv, col, tsub, TP), TP, red)
            if tsub == 0 and col < M:
                vec[col] = f
                pc = qv[col]
                pd += A[l * M + col] * pc
                if col == k:
                    pk += f
                else:
                    ps += f * pc
            col += cper
        i = t
        while i < M:
            cpy[i] = A[i * M + k]
            i += T
        return pk, pd, ps

    # --- a batch of proposals against one A⁻¹ -----------------------------------------------------
    NB = BATCH
    PG = PARSE_GROUP
    BD = BATCH_DOUBLES
    BI = BATCH_INTS
    NT = len(CYCLE_PHASES)
    dmma = None if SIM else _dmma()
    clock64 = _clock64_sim if SIM else _clock64()
    return dict(locals())
