"""Study 000's GPU chain kernels, part 3: the kernels themselves (see :mod:`.lattice_cuda`).

:func:`chain_kernels` takes the namespace of :func:`qmckit.backends.lattice_cuda_batch.batch_functions` and
builds the thesis chain kernel with its compile-time variants (``_grid``, ``_rank2``, ``_details``: closure
constants whose dead branches are left out of the compiled kernel), the tracked kernel, and the kernel that
measures snapshots on the other SMs. :func:`qmckit.backends.lattice_cuda.kernels` returns its result.
"""
from __future__ import annotations

import itertools
import os
import types

from . import cuda_import
from .lattice_cuda import CYCLE_SLOTS, VARIANT_FLAGS

cuda = None  # numba.cuda, bound on first use; a module global so that the simulator can swap it


def chain_kernels(ns: dict, max_registers: int) -> dict:
    """The chain kernels by name, compiled lazily with ``max_registers`` per thread (see the module docstring)."""
    cuda_import.bind(globals())
    BD, BI, FULL, NB, NC, NT, SIM = ns["BD"], ns["BI"], ns["FULL"], ns["NB"], ns["NC"], ns["NT"], ns["SIM"]
    SINGULAR, TW, apply_down, apply_up = ns["SINGULAR"], ns["TW"], ns["apply_down"], ns["apply_up"]
    batch_ratio, batch_sums, block_energy = ns["batch_ratio"], ns["batch_sums"], ns["block_energy"]
    block_energy_given, block_sum3, c, clock64 = ns["block_energy_given"], ns["block_sum3"], ns["c"], ns["clock64"]
    col_dots, derive, dev, draw_proposal = ns["col_dots"], ns["derive"], ns["dev"], ns["draw_proposal"]
    f64, gather8, gather_product, group_sum = ns["f64"], ns["gather8"], ns["gather_product"], ns["group_sum"]
    i32, i64, parse_batch, rebuild, refine = ns["i32"], ns["i64"], ns["parse_batch"], ns["rebuild"], ns["refine"]
    row_dots, stage, swap_rank2, swap_sites = ns["row_dots"], ns["stage"], ns["swap_rank2"], ns["swap_sites"]
    swap_sums, u32, u64, uniform = ns["swap_sums"], ns["u32"], ns["u64"], ns["uniform"]

    # --- the chain kernel ------------------------------------------------------------------------
    options = {} if SIM else {"max_registers": int(max_registers)}
    if not SIM and os.environ.get("QMCKIT_CUDA_LINEINFO"):  # source lines for profilers (Nsight Compute)
        options["lineinfo"] = True

    # closure constants, replaced in the kernel variants (see `variant` below)
    MEASURE_IN_BLOCK = True  # *_grid: False
    RANK2_SWAPS = False  # *_rank2: True
    DRAW_DETAILS = False  # *_details: True
    COUNT_CYCLES = False  # *_cycles: True (thread 0 counts its clock cycles by phase; *_details implies it)

    def run_chains_gpu(pair, pairT, neighbours, hopping, bonds, J, projected, n_pairs, up_site_g, dn_site_g, up_at_g,
                       dn_at_g, ainv_g, states, n_sweeps, moves_per_sweep, measure, refresh_every, energies, counts,
                       drift, scratch, Fs, Gs, TP, BF, batch, cycles, snaps, sweep0, total_sweeps, jumps):
        """``n_sweeps`` sweeps of chain ``blockIdx.x`` (see the module docstring), in place; ``batch`` > 1
        evaluates the proposals 8 at a time (see the module docstring), 1 one at a time; cycles (W,
        :data:`CYCLE_SLOTS`) float64 += thread 0's clock cycles by phase (:data:`CYCLE_PHASES`, then
        :data:`CYCLE_DETAILS`; 0 in the simulator). A launch may be part of a call of ``total_sweeps``
        sweeps that began ``sweep0`` sweeps earlier (the rebuild schedule counts the call's sweeps); with
        ``snaps`` of S > 0 rows, a measured sweep writes a snapshot to row sweep·W + w
        (:data:`snapshot_doubles`) instead of measuring, for ``measure_snapshots_gpu``.

        Chain arrays as the CPU's (W, …); states (W, 2) uint64; energies (W, n_sweeps, 3) when
        ``measure``; counts (W, 5) += this launch's counts; drift (W,) ← max(drift, rebuild drifts);
        scratch (W, 2, M²), Fs (W, N_s·M), Gs (W, M·N_s) global scratch; jumps: :func:`parse_jumps`.

        Every thread draws the same random numbers from its own copy of the chain's stream and takes
        the same decisions (every reduced value reaches every thread identically), so a proposal
        needs no barrier of its own; thread 0 alone writes the configuration and the counters.
        """
        w = cuda.blockIdx.x
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        M = ainv_g.shape[1]
        NS = up_at_g.shape[1]
        MM = M * M
        dsh = cuda.shared.array(0, dtype=f64)
        A = dsh[0:MM]
        vec = dsh[MM:MM + M]
        cpy = dsh[MM + M:MM + 2 * M]
        pv = dsh[MM + 2 * M:MM + 3 * M]
        qv = dsh[MM + 3 * M:MM + 4 * M]
        tile = dsh[MM + 4 * M:MM + (4 + TW) * M]
        nred = 3 * T if SIM else 288
        nc0 = MM + (4 + TW) * M + nred
        red = dsh[MM + (4 + TW) * M:nc0]
        # the counters live in shared memory (float64, exact to 2^53), written by thread 0 only: kept in
        # registers they came out wrong (swaps proposed always 0) from the H100 build capped at 128 registers
        cnt = dsh[nc0:nc0 + NC]
        # a proposal batch: staged vectors P, W and the F rows (8 rows of LD each), then two alternating
        # buffers of the per-proposal numbers and of the partial sums (NZ slots per proposal)
        m4 = ((M + 3) >> 2) << 2
        LD = m4 + ((4 - m4) & 15)
        NZ = 1 if SIM else T >> 5
        nt = CYCLE_SLOTS if DRAW_DETAILS else NT  # (the timed kernels keep the layout they were timed with)
        timed = COUNT_CYCLES or DRAW_DETAILS  # closure constants: without them no clock read is compiled in
        cyc = dsh[nc0 + NC:nc0 + NC + nt]  # thread 0's clock cycles by phase (CYCLE_PHASES, CYCLE_DETAILS)
        ob_p = nc0 + NC + nt
        ob_w = ob_p + NB * LD
        ob_f = ob_w + NB * LD
        Pm = dsh[ob_p:ob_w]
        Wm = dsh[ob_w:ob_f]
        Fb = dsh[ob_f:ob_f + NB * LD]
        ob = ob_f + NB * LD
        bdbs = dsh[ob:ob + 2 * NB * BD]
        zps = dsh[ob + 2 * NB * BD:ob + 2 * NB * (BD + NZ)]
        nd = ob + 2 * NB * (BD + NZ)
        ish = cuda.shared.array(0, dtype=i32)
        o = 2 * nd
        up_site = ish[o:o + M]
        dn_site = ish[o + M:o + 2 * M]
        up_at = ish[o + 2 * M:o + 2 * M + NS]
        dn_at = ish[o + 2 * M + NS:o + 2 * M + 2 * NS]
        o2 = o + 2 * M + 2 * NS
        perm = ish[o2:o2 + M]
        sigma = ish[o2 + M:o2 + 2 * M]
        o3 = o2 + 2 * M + (T if SIM else 32)
        redi = ish[o2 + 2 * M:o3]
        f_sites = ish[o3:o3 + NS]  # the measurement's site lists (block_energy)
        g_sites = ish[o3 + NS:o3 + 2 * NS]
        n_listed = ish[o3 + 2 * NS:o3 + 2 * NS + 2]
        bints = ish[o3 + 2 * NS + 2:o3 + 2 * NS + 2 + 2 * NB * BI]
        # thread layouts: T_P threads per column, bfactor threads per row (one division each, here)
        # a column's T_P threads sit 32/T_P lanes apart in one warp, so that the first and second
        # half-warps each read one row of A⁻¹ (16 consecutive doubles: no bank conflicts; adjacent
        # lanes for one column put two rows into one half-warp and conflicted on two banks at L = 15)
        cpw = 32 // TP
        tcol = (t >> 5) * cpw + (t & 31) % cpw
        csub = (t & 31) // cpw
        cper = T // TP
        trow = t // BF
        rsub = t - trow * BF
        rper = T // BF
        i = t
        while i < M:
            up_site[i] = up_site_g[w, i]
            dn_site[i] = dn_site_g[w, i]
            i += T
        i = t
        while i < NS:
            up_at[i] = up_at_g[w, i]
            dn_at[i] = dn_at_g[w, i]
            i += T
        i = t >> 5
        while i < M:
            j = t & 31
            while j < M:
                A[i * M + j] = ainv_g[w, i, j]
                j += 32
            i += T >> 5
        st = cuda.local.array((1, 2), u64)
        st[0, 0] = states[w, 0]
        st[0, 1] = states[w, 1]
        old = scratch[w, 0]
        tmp = scratch[w, 1]
        F = Fs[w]
        G = Gs[w]
        if t == 0:
            for q in range(NC):
                cnt[q] = 0.0
            if timed:
                for q in range(nt):
                    cyc[q] = 0.0
        i = t
        while i < NB * LD:  # the staged vectors' padding stays zero
            Pm[i] = 0.0
            Wm[i] = 0.0
            i += T
        dmax = 0.0
        n2 = 2 * n_pairs
        off = 96  # the ratio sums alternate between red[96:192] and red[192:288]
        buf = 0  # the batch buffer in use
        saved = cuda.local.array((NB, 2), u64)  # the stream after each proposal of a batch
        xsl = cuda.local.array(NB, i32)  # the sites of each proposal's P and W rows
        ysl = cuda.local.array(NB, i32)
        c0 = u64(0)
        cuda.syncthreads()
        for sweep in range(n_sweeps):
            done = 0
            while done < moves_per_sweep:
                pv_o = MM + 2 * M  # dsh offsets of the staged vectors of the proposal decided on: pv, qv and
                qv_o = MM + 3 * M  # the column sums (offsets, not views: views hold registers across the updates)
                vec_o = MM
                have_f = False  # column sums f = pv·A⁻¹ already at vec_o (with cpy = column k)
                if timed and t == 0:
                    c0 = clock64()
                if batch > 1:
                    # Up to 8 proposals, drawn in every thread as the CPU draws them one after another: until
                    # one is accepted the configuration stays, so all can be evaluated against one A⁻¹. The
                    # first accepted one ends the batch, and the stream is set back to just after it.
                    nb = min(NB, moves_per_sweep - done)
                    buf = 1 - buf
                    bi0 = buf * NB * BI
                    bd0 = buf * NB * BD
                    z0 = buf * NB * NZ
                    nbp = 0
                    pe = 0
                    ptg = 0
                    pu = 0.0
                    ps0 = i64(0)
                    ps1 = i64(0)
                    if not SIM:
                        nbp, pe, ptg, pu, ps0, ps1 = parse_batch(st, up_at, dn_at, n2, NS, nb, jumps)
                    if DRAW_DETAILS and t == 0:
                        c1 = clock64()
                        cyc[6] += float(c1 - c0)
                    if nbp > 0:
                        # lane s works out proposal s (every warp alike; warp 0's lanes write the records)
                        nb = nbp
                        lane = t & 31
                        xs, ys = derive(lane < nb, pe, ptg, pu, projected, up_site, dn_site, up_at, dn_at, A, M,
                                        pair, pairT, bints, bdbs, bi0 + lane * BI, bd0 + lane * BD, t < NB)
                        x0 = cuda.shfl_sync(FULL, xs, 0)
                        x1 = cuda.shfl_sync(FULL, xs, 1)
                        x2 = cuda.shfl_sync(FULL, xs, 2)
                        x3 = cuda.shfl_sync(FULL, xs, 3)
                        x4 = cuda.shfl_sync(FULL, xs, 4)
                        x5 = cuda.shfl_sync(FULL, xs, 5)
                        x6 = cuda.shfl_sync(FULL, xs, 6)
                        x7 = cuda.shfl_sync(FULL, xs, 7)
                        y0 = cuda.shfl_sync(FULL, ys, 0)
                        y1 = cuda.shfl_sync(FULL, ys, 1)
                        y2 = cuda.shfl_sync(FULL, ys, 2)
                        y3 = cuda.shfl_sync(FULL, ys, 3)
                        y4 = cuda.shfl_sync(FULL, ys, 4)
                        y5 = cuda.shfl_sync(FULL, ys, 5)
                        y6 = cuda.shfl_sync(FULL, ys, 6)
                        y7 = cuda.shfl_sync(FULL, ys, 7)
                        if DRAW_DETAILS and t == 0:
                            cyc[7] += float(clock64() - c1)
                    else:
                        # one after another (the simulator; on a GPU only if 32 draws held no complete
                        # proposal, then one): lattice_chains.propose in every thread, thread 0 writes
                        nb = nb if SIM else 1
                        for s in range(NB):
                            xs = -1
                            ys = -1
                            if s < nb:
                                e, target = draw_proposal(st, up_at, dn_at, n2, NS)
                                u = uniform(st, 0)
                                saved[s, 0] = st[0, 0]
                                saved[s, 1] = st[0, 1]
                                xs, ys = derive(True, e, target, u, projected, up_site, dn_site, up_at, dn_at, A, M,
                                                pair, pairT, bints, bdbs, bi0 + s * BI, bd0 + s * BD, t == 0)
                            elif t == 0:
                                bints[bi0 + s * BI + 7] = -1
                                bints[bi0 + s * BI + 8] = -1
                            xsl[s] = xs
                            ysl[s] = ys
                        x0 = xsl[0]
                        x1 = xsl[1]
                        x2 = xsl[2]
                        x3 = xsl[3]
                        x4 = xsl[4]
                        x5 = xsl[5]
                        x6 = xsl[6]
                        x7 = xsl[7]
                        y0 = ysl[0]
                        y1 = ysl[1]
                        y2 = ysl[2]
                        y3 = ysl[3]
                        y4 = ysl[4]
                        y5 = ysl[5]
                        y6 = ysl[6]
                        y7 = ysl[7]
                    j = t
                    while j < 2 * M:  # the gathers after the draws, each thread's eight loads before its stores
                        if j < M:
                            gather8(pair, dn_site[j], x0, x1, x2, x3, x4, x5, x6, x7, Pm, LD, j)
                        else:
                            gather8(pairT, up_site[j - M], y0, y1, y2, y3, y4, y5, y6, y7, Wm, LD, j - M)
                        j += T
                    cuda.syncthreads()
                    if timed and t == 0:
                        c1 = clock64()
                        cyc[0] += float(c1 - c0)
                        c0 = c1
                    batch_sums(A, M, Pm, Wm, Fb, LD, bints[bi0:bi0 + NB * BI], bdbs[bd0:bd0 + NB * BD],
                               zps[z0:z0 + NB * NZ])
                    if timed and t == 0:
                        c1 = clock64()
                        cyc[1] += float(c1 - c0)
                        c0 = c1
                    chosen = -1
                    ratio = 0.0
                    if SIM:
                        s = 0
                        while s < nb:  # the decisions in order, in every thread from the same shared numbers
                            ratio = batch_ratio(bints, bdbs, zps, bi0, bd0, z0, s, NZ)
                            if t == 0:
                                cnt[2 if bints[bi0 + s * BI] == 2 else 0] += 1.0
                            if bdbs[bd0 + s * BD] < ratio * ratio:
                                chosen = s
                                break
                            s += 1
                    else:  # lane s decides proposal s; the first accepted one is the lowest set bit
                        lane = t & 31
                        mine = lane < nb
                        r_l = batch_ratio(bints, bdbs, zps, bi0, bd0, z0, lane, NZ) if mine else 0.0
                        yes = cuda.ballot_sync(FULL, mine and bdbs[bd0 + lane * BD] < r_l * r_l)
                        swaps = cuda.ballot_sync(FULL, mine and bints[bi0 + lane * BI] == 2)
                        chosen = cuda.ffs(yes) - 1
                        seen = nb if chosen < 0 else chosen + 1
                        upto = u32(0xFFFFFFFF) >> u32(32 - seen)
                        if t == 0:
                            n_swaps = cuda.popc(swaps & upto)
                            cnt[2] += float(n_swaps)
                            cnt[0] += float(seen - n_swaps)
                        if chosen >= 0:
                            ratio = cuda.shfl_sync(FULL, r_l, chosen)
                    if timed and t == 0:
                        c1 = clock64()
                        cyc[2] += float(c1 - c0)
                        c0 = c1
                    if chosen < 0:
                        done += nb
                        continue
                    done += chosen + 1
                    if nbp > 0:  # the stream just after the chosen proposal's decision
                        st[0, 0] = u64(cuda.shfl_sync(FULL, ps0, chosen))
                        st[0, 1] = u64(cuda.shfl_sync(FULL, ps1, chosen))
                    else:
                        st[0, 0] = saved[chosen, 0]
                        st[0, 1] = saved[chosen, 1]
                    q = bi0 + chosen * BI
                    kind = bints[q]
                    label = bints[q + 1]
                    target = bints[q + 2]
                    k = bints[q + 3]
                    l = bints[q + 4]
                    a = bints[q + 5]
                    b = bints[q + 6]
                    is_swap = kind == 2
                    spin = 1 if kind == 1 else 0  # (a swap does not use it)
                    first_up = bdbs[bd0 + chosen * BD + 4]
                    first_down = bdbs[bd0 + chosen * BD + 5]
                    pv_o = ob_p + chosen * LD if kind != 0 else ob_w + chosen * LD
                    qv_o = ob_w + chosen * LD
                    vec_o = ob_f + chosen * LD
                    if RANK2_SWAPS and kind == 2:  # its numbers for swap_rank2: φ(b, a), φ(a, a), z; F, W, P rows
                        qd = bd0 + chosen * BD
                        sw_pba = bdbs[qd + 2]
                        sw_paa = bdbs[qd + 3]
                        sw_z = 0.0
                        for w2 in range(NZ):
                            sw_z += zps[z0 + w2 * NB + chosen]
                        sw_f = vec_o
                        sw_w = qv_o
                        sw_p = pv_o
                    if kind == 1 or (kind == 2 and (RANK2_SWAPS or (max(abs(first_up), abs(first_down)) >= SINGULAR
                                                        and abs(first_up) >= abs(first_down)))):
                        # an up step first (or a rank-2 swap): its column sums are F's row; cpy = column k
                        # (label) of A⁻¹
                        kc = label if kind == 1 else k
                        i = t
                        while i < M:
                            cpy[i] = A[i * M + kc]
                            i += T
                        cuda.syncthreads()
                        have_f = True
                else:
                    done += 1
                    # the proposal (lattice_chains.propose and the swap test of move), in every thread
                    e, target = draw_proposal(st, up_at, dn_at, n2, NS)
                    label = e >> 1
                    spin = e & 1
                    other = dn_at[target] if spin == 1 else up_at[target]
                    is_swap = projected and other >= 0
                    k = 0
                    l = 0
                    a = 0
                    b = 0
                    first_up = 0.0
                    first_down = 0.0
                    if is_swap:  # ratio_swap, and the first ratios of both update orders
                        k = label if spin == 1 else up_at[target]
                        l = other if spin == 1 else label
                        a = up_site[k]
                        b = dn_site[l]
                        alk = A[l * M + k]  # read before the barrier: after it, an accepted swap rewrites A⁻¹
                        phi_ba = pair[b, a]  # global loads issued early, so that their latency overlaps the sums
                        phi_aa = pairT[a, a]
                        i = t
                        while i < M:
                            down_value = pair[b, dn_site[i]]  # both loads in flight before either store
                            up_value = pairT[a, up_site[i]]
                            pv[i] = down_value
                            qv[i] = up_value
                            i += T
                        cuda.syncthreads()
                        pk, pd, ps = swap_sums(A, M, pv, qv, k, l, vec, cpy, red, tcol, csub, cper, TP)
                        fk, sd, s2 = block_sum3(pk, pd, ps, red, off, False)
                        ratio = alk * phi_ba + fk * (sd - alk * phi_aa) - alk * s2
                        first_up = fk
                        first_down = sd
                        if RANK2_SWAPS:  # as the batch path's: F's row in vec, W in qv, P in pv
                            sw_pba = phi_ba
                            sw_paa = phi_aa
                            sw_z = s2
                            sw_f = MM
                            sw_w = MM + 3 * M
                            sw_p = MM + 2 * M
                    else:
                        p = 0.0
                        i = t
                        if spin == 1:  # ratio_up (pv kept for the update)
                            while i < M:
                                v = pair[target, dn_site[i]]
                                pv[i] = v
                                p += v * A[i * M + label]
                                i += T
                        else:  # ratio_down
                            while i < M:
                                v = pairT[target, up_site[i]]
                                pv[i] = v
                                p += A[label * M + i] * v
                                i += T
                        ratio, _, _ = block_sum3(p, 0.0, 0.0, red, off, False)
                    off = 288 - off
                    if t == 0:
                        cnt[2 if is_swap else 0] += 1.0
                        if timed:
                            c1 = clock64()
                            cyc[0] += float(c1 - c0)
                            c0 = c1
                    if not uniform(st, 0) < ratio * ratio:
                        continue
                # accepted: thread 0 moves the configuration where no thread reads it meanwhile
                if is_swap:
                    if t == 0:
                        cnt[3] += 1.0
                    if RANK2_SWAPS:
                        # one rank-2 update, also where both single steps are singular (the CPU rebuilds there)
                        if t == 0:
                            swap_sites(up_site, dn_site, up_at, dn_at, k, l, a, b)
                            if max(abs(first_up), abs(first_down)) < SINGULAR:
                                cnt[4] += 1.0
                        swap_rank2(A, M, k, l, first_up, first_down, sw_pba, sw_paa, dsh[sw_p + l], pair[a, b], sw_z,
                                   dsh[sw_f:sw_f + M], dsh[sw_w:sw_w + M], cpy, tile, red, trow, rsub, rper, BF, tcol,
                                   csub, cper, TP)
                    elif max(abs(first_up), abs(first_down)) < SINGULAR:
                        if t == 0:
                            swap_sites(up_site, dn_site, up_at, dn_at, k, l, a, b)
                            cnt[4] += 1.0
                        cuda.syncthreads()
                        rebuild(A, M, pair, up_site, dn_site, old, tmp, vec, cpy, tile, perm, sigma, red, redi)
                    elif abs(first_up) >= abs(first_down):
                        # up k → b first (vec_o, cpy hold its column sums), then down l → a with the new R↑
                        if t == 0:
                            swap_sites(up_site, dn_site, up_at, dn_at, k, l, a, b)
                        apply_up(A, M, k, first_up, dsh[vec_o:vec_o + M], cpy, tcol, csub, cper, TP)
                        stage(pv, pairT, a, up_site, M)
                        row_dots(A, M, pv, vec, cpy, l, red, trow, rsub, rper, BF)
                        apply_down(A, M, l, vec[l], vec, cpy, trow, rsub, rper, BF)
                    else:
                        # down l → a first (with R↑ before the move), then up k → b with the new R↓
                        row_dots(A, M, dsh[qv_o:qv_o + M], vec, cpy, l, red, trow, rsub, rper, BF)
                        if t == 0:
                            swap_sites(up_site, dn_site, up_at, dn_at, k, l, a, b)
                        apply_down(A, M, l, first_down, vec, cpy, trow, rsub, rper, BF)
                        stage(pv, pair, b, dn_site, M)
                        col_dots(A, M, pv, vec, cpy, k, red, tcol, csub, cper, TP)
                        apply_up(A, M, k, vec[k], vec, cpy, tcol, csub, cper, TP)
                elif spin == 1:
                    if not have_f:
                        col_dots(A, M, dsh[pv_o:pv_o + M], vec, cpy, label, red, tcol, csub, cper, TP)
                    if t == 0:
                        up_at[up_site[label]] = -1
                        up_at[target] = label
                        up_site[label] = target
                        cnt[1] += 1.0
                    apply_up(A, M, label, ratio, dsh[vec_o:vec_o + M], cpy, tcol, csub, cper, TP)
                else:
                    row_dots(A, M, dsh[pv_o:pv_o + M], vec, cpy, label, red, trow, rsub, rper, BF)
                    if t == 0:
                        dn_at[dn_site[label]] = -1
                        dn_at[target] = label
                        dn_site[label] = target
                        cnt[1] += 1.0
                    apply_down(A, M, label, ratio, vec, cpy, trow, rsub, rper, BF)
                if timed and t == 0:
                    cyc[3] += float(clock64() - c0)
            if timed and t == 0:
                c0 = clock64()
            done_sweeps = sweep0 + sweep + 1  # of the whole call (a call may come in several launches)
            if refresh_every > 0 and (done_sweeps % refresh_every == 0 or done_sweeps == total_sweeps):
                d = refine(A, M, pair, up_site, dn_site, old, tmp, Pm, LD, vec, cpy, tile, perm, sigma, red, redi)
                dmax = max(dmax, d)
                if timed and t == 0:
                    c1 = clock64()
                    cyc[4] += float(c1 - c0)
                    c0 = c1
            if measure and snaps.shape[0] > 0:
                # a snapshot for measure_snapshots_gpu (another launch, on other SMs): A⁻¹ and the sites; no
                # barrier needed, as A⁻¹ and the sites change only after the next batch's barriers
                row = snaps[sweep * cuda.gridDim.x + w]
                i = t
                while i < MM:
                    row[i] = A[i]
                    i += T
                i = t
                while i < M:
                    row[MM + i] = up_site[i]
                    row[MM + M + i] = dn_site[i]
                    i += T
                i = t
                while i < NS:
                    row[MM + 2 * M + i] = up_at[i]
                    row[MM + 2 * M + NS + i] = dn_at[i]
                    i += T
                if timed and t == 0:
                    cyc[5] += float(clock64() - c0)
            elif measure and MEASURE_IN_BLOCK:
                kinetic, exchange, double = block_energy(A, M, NS, pair, pairT, neighbours, hopping, bonds, J,
                                                         projected, up_site, dn_site, up_at, dn_at, F, G, tile, red,
                                                         f_sites, g_sites, n_listed)
                if t == 0:
                    energies[w, sweep, 0] = kinetic
                    energies[w, sweep, 1] = exchange
                    energies[w, sweep, 2] = double
                    if timed:
                        cyc[5] += float(clock64() - c0)
        cuda.syncthreads()
        i = t >> 5
        while i < M:
            j = t & 31
            while j < M:
                ainv_g[w, i, j] = A[i * M + j]
                j += 32
            i += T >> 5
        i = t
        while i < M:
            up_site_g[w, i] = up_site[i]
            dn_site_g[w, i] = dn_site[i]
            i += T
        i = t
        while i < NS:
            up_at_g[w, i] = up_at[i]
            dn_at_g[w, i] = dn_at[i]
            i += T
        if t == 0:
            states[w, 0] = st[0, 0]
            states[w, 1] = st[0, 1]
            for q in range(NC):
                counts[w, q] += int(cnt[q])
            drift[w] = max(drift[w], dmax)
            if timed:
                for q in range(nt):
                    cycles[w, q] += cyc[q]

    # --- the tracked algorithm ("tracked": F and G in global scratch, kept up to date) -----------
    @dev
    def fresh_fg(A, M, NS, pair, pairT, up_site, dn_site, F, G, tile):
        """G = A⁻¹ Φ(R↑, sites), F = Φ(sites, R↓) A⁻¹ from scratch (hop_ratios); ends with a barrier."""
        gather_product(A, M, M, 1, pair, up_site, G, NS, 1, tile, up_site, NS, False)
        gather_product(A, M, 1, M, pairT, dn_site, F, 1, M, tile, up_site, NS, False)

    @dev
    def dot_a_col(A, M, col, tab, row, idx):
        """Σ_l tab[row, idx[l]] · A⁻¹[l, col] (four accumulators: four loads in flight)."""
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        l = 0
        while l + 3 < M:
            s0 += tab[row, idx[l]] * A[l * M + col]
            s1 += tab[row, idx[l + 1]] * A[(l + 1) * M + col]
            s2 += tab[row, idx[l + 2]] * A[(l + 2) * M + col]
            s3 += tab[row, idx[l + 3]] * A[(l + 3) * M + col]
            l += 4
        while l < M:
            s0 += tab[row, idx[l]] * A[l * M + col]
            l += 1
        return (s0 + s1) + (s2 + s3)

    @dev
    def dot_a_row(A, M, r, tab, idx, col):
        """Σ_k A⁻¹[r, k] · tab[idx[k], col] (four accumulators)."""
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        base = r * M
        k = 0
        while k + 3 < M:
            s0 += A[base + k] * tab[idx[k], col]
            s1 += A[base + k + 1] * tab[idx[k + 1], col]
            s2 += A[base + k + 2] * tab[idx[k + 2], col]
            s3 += A[base + k + 3] * tab[idx[k + 3], col]
            k += 4
        while k < M:
            s0 += A[base + k] * tab[idx[k], col]
            k += 1
        return (s0 + s1) + (s2 + s3)

    @dev
    def dot_vec_tab(v, M, tab, idx, col):
        """Σ_c v[c] · tab[idx[c], col] (four accumulators)."""
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        c = 0
        while c + 3 < M:
            s0 += v[c] * tab[idx[c], col]
            s1 += v[c + 1] * tab[idx[c + 1], col]
            s2 += v[c + 2] * tab[idx[c + 2], col]
            s3 += v[c + 3] * tab[idx[c + 3], col]
            c += 4
        while c < M:
            s0 += v[c] * tab[idx[c], col]
            c += 1
        return (s0 + s1) + (s2 + s3)

    @dev
    def up_stage(A, M, NS, pair, pairT, up_site, dn_site, k, b, fv, xv, sv1, sv2):
        """Up electron k → b, first half (reads only; site lists before the move), recomputed from A⁻¹
        (the stable form of lattice_rvb.tracked_update_up): fv = Φ(b, R↓) A⁻¹ (R = fv[k]),
        xv = A⁻¹[:, k], sv1 = Φ(sites, R↓) A⁻¹[:, k]; a barrier; sv2[s] = φ(b, s) − Σ_c fv[c] φ(R↑_c, s);
        a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        e = t
        while e < M + NS:  # the M + N_s dot products spread over the block
            if e < M:
                fv[e] = dot_a_col(A, M, e, pair, b, dn_site)
                xv[e] = A[e * M + k]
            else:
                sidx = e - M
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                l = 0
                while l + 3 < M:
                    s0 += pairT[dn_site[l], sidx] * A[l * M + k]
                    s1 += pairT[dn_site[l + 1], sidx] * A[(l + 1) * M + k]
                    s2 += pairT[dn_site[l + 2], sidx] * A[(l + 2) * M + k]
                    s3 += pairT[dn_site[l + 3], sidx] * A[(l + 3) * M + k]
                    l += 4
                while l < M:
                    s0 += pairT[dn_site[l], sidx] * A[l * M + k]
                    l += 1
                sv1[sidx] = (s0 + s1) + (s2 + s3)
            e += T
        cuda.syncthreads()
        sidx = t
        while sidx < NS:
            sv2[sidx] = pair[b, sidx] - dot_vec_tab(fv, M, pair, up_site, sidx)
            sidx += T
        cuda.syncthreads()

    @dev
    def up_apply(A, M, NS, F, G, k, b, fv, xv, sv1, sv2):
        """Second half, R = fv[k]: A⁻¹ −= (xv/R)(fv − e_k)ᵀ; F −= (sv1/R)(fv − e_k)ᵀ with column k set to
        sv1/R and row b to e_k; G += (xv/R) sv2ᵀ (rows by warp, up to four columns per lane in flight);
        ends with a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        lane = t & 31
        nw = T >> 5
        inv_r = 1.0 / fv[k]
        i = t >> 5
        while i < M:
            x = xv[i] * inv_r
            base = i * M
            j = lane
            while j < M:
                fj = fv[j] - 1.0 if j == k else fv[j]
                A[base + j] -= x * fj
                j += 32
            base = i * NS
            j = lane
            while j < NS:
                j1 = min(j + 32, NS - 1)
                j2 = min(j + 64, NS - 1)
                j3 = min(j + 96, NS - 1)
                g0 = G[base + j]
                g1 = G[base + j1]
                g2 = G[base + j2]
                g3 = G[base + j3]
                G[base + j] = g0 + x * sv2[j]
                if j + 32 < NS:
                    G[base + j1] = g1 + x * sv2[j1]
                if j + 64 < NS:
                    G[base + j2] = g2 + x * sv2[j2]
                if j + 96 < NS:
                    G[base + j3] = g3 + x * sv2[j3]
                j += 128
            i += nw
        i = t >> 5
        while i < NS:
            x = sv1[i] * inv_r
            base = i * M
            j = lane
            while j < M:
                j1 = min(j + 32, M - 1)
                j2 = min(j + 64, M - 1)
                j3 = min(j + 96, M - 1)
                f0 = F[base + j]
                f1 = F[base + j1]
                f2 = F[base + j2]
                f3 = F[base + j3]
                if i == b:
                    f0 = 1.0 if j == k else 0.0
                    f1 = 1.0 if j1 == k else 0.0
                    f2 = 1.0 if j2 == k else 0.0
                    f3 = 1.0 if j3 == k else 0.0
                else:
                    f0 = x if j == k else f0 - x * fv[j]
                    f1 = x if j1 == k else f1 - x * fv[j1]
                    f2 = x if j2 == k else f2 - x * fv[j2]
                    f3 = x if j3 == k else f3 - x * fv[j3]
                F[base + j] = f0
                if j + 32 < M:
                    F[base + j1] = f1
                if j + 64 < M:
                    F[base + j2] = f2
                if j + 96 < M:
                    F[base + j3] = f3
                j += 128
            i += nw
        cuda.syncthreads()

    @dev
    def down_stage(A, M, NS, pair, pairT, up_site, dn_site, l, a, gv, yv, sv1, sv2):
        """Down electron l → a, first half (reads only; site lists before the move), recomputed from A⁻¹:
        gv = A⁻¹ Φ(R↑, a) (R = gv[l]), yv = A⁻¹[l, :], sv1 = A⁻¹[l, :] Φ(R↑, sites); a barrier;
        sv2[s] = φ(s, a) − Σ_r φ(s, R↓_r) gv[r]; a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        e = t
        while e < M + NS:
            if e < M:
                gv[e] = dot_a_row(A, M, e, pair, up_site, a)
                yv[e] = A[l * M + e]
            else:
                sidx = e - M
                sv1[sidx] = dot_a_row(A, M, l, pair, up_site, sidx)
            e += T
        cuda.syncthreads()
        sidx = t
        while sidx < NS:
            sv2[sidx] = pairT[a, sidx] - dot_vec_tab(gv, M, pairT, dn_site, sidx)
            sidx += T
        cuda.syncthreads()

    @dev
    def down_apply(A, M, NS, F, G, l, a, gv, yv, sv1, sv2):
        """Second half, R = gv[l]: A⁻¹ −= (gv − e_l)(yv/R)ᵀ; G −= (gv − e_l)(sv1/R)ᵀ with row l set to
        sv1/R and column a to e_l; F += sv2 (yv/R)ᵀ; ends with a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        lane = t & 31
        nw = T >> 5
        inv_r = 1.0 / gv[l]
        i = t >> 5
        while i < M:
            g = gv[i] - 1.0 if i == l else gv[i]
            base = i * M
            j = lane
            while j < M:
                A[base + j] -= g * (yv[j] * inv_r)
                j += 32
            gr = g * inv_r
            base = i * NS
            j = lane
            while j < NS:
                j1 = min(j + 32, NS - 1)
                j2 = min(j + 64, NS - 1)
                j3 = min(j + 96, NS - 1)
                g0 = G[base + j]
                g1 = G[base + j1]
                g2 = G[base + j2]
                g3 = G[base + j3]
                if i == l:
                    g0 = 1.0 if j == a else sv1[j] * inv_r
                    g1 = 1.0 if j1 == a else sv1[j1] * inv_r
                    g2 = 1.0 if j2 == a else sv1[j2] * inv_r
                    g3 = 1.0 if j3 == a else sv1[j3] * inv_r
                else:
                    g0 = 0.0 if j == a else g0 - gr * sv1[j]
                    g1 = 0.0 if j1 == a else g1 - gr * sv1[j1]
                    g2 = 0.0 if j2 == a else g2 - gr * sv1[j2]
                    g3 = 0.0 if j3 == a else g3 - gr * sv1[j3]
                G[base + j] = g0
                if j + 32 < NS:
                    G[base + j1] = g1
                if j + 64 < NS:
                    G[base + j2] = g2
                if j + 96 < NS:
                    G[base + j3] = g3
                j += 128
            i += nw
        i = t >> 5
        while i < NS:
            d = sv2[i] * inv_r
            base = i * M
            j = lane
            while j < M:
                j1 = min(j + 32, M - 1)
                j2 = min(j + 64, M - 1)
                j3 = min(j + 96, M - 1)
                f0 = F[base + j]
                f1 = F[base + j1]
                f2 = F[base + j2]
                f3 = F[base + j3]
                F[base + j] = f0 + d * yv[j]
                if j + 32 < M:
                    F[base + j1] = f1 + d * yv[j1]
                if j + 64 < M:
                    F[base + j2] = f2 + d * yv[j2]
                if j + 96 < M:
                    F[base + j3] = f3 + d * yv[j3]
                j += 128
            i += nw
        cuda.syncthreads()

    @c.jit(**options)
    def run_chains_tracked_gpu(pair, pairT, neighbours, hopping, bonds, J, projected, n_pairs, up_site_g, dn_site_g,
                               up_at_g, dn_at_g, ainv_g, states, n_sweeps, moves_per_sweep, measure, refresh_every,
                               energies, counts, drift, scratch, Fs, Gs, TP, BF):
        """The tracked algorithm (lattice_chains.run_chains_tracked), arguments as run_chains_gpu's.

        F (N_s×M) and G (M×N_s) live in the chain's global scratch Fs[w], Gs[w] and are formed at the
        start and after every rebuild. A proposal reads its ratio from F or G (a hop) or forms
        two_electron_ratio's O(M) sum in EVERY warp (lanes split c, an xor butterfly: the same value in
        every thread, no barrier, no shared memory); warps run ahead independently through rejected
        proposals. The block joins only on an accepted move (a read-only stage, a barrier, then the
        rank-1 updates of A⁻¹, F and G by all threads and thread 0's configuration writes, a barrier),
        before rebuilds and at measurements. The vectors an update divides by the ratio are recomputed
        from A⁻¹ in its stage (see lattice_rvb.tracked_update_up).
        """
        w = cuda.blockIdx.x
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        lane = t & 31
        M = ainv_g.shape[1]
        NS = up_at_g.shape[1]
        MM = M * M
        dsh = cuda.shared.array(0, dtype=f64)
        A = dsh[0:MM]
        fv = dsh[MM:MM + M]
        xv = dsh[MM + M:MM + 2 * M]
        o1 = MM + 2 * M
        sv1 = dsh[o1:o1 + NS]
        sv2 = dsh[o1 + NS:o1 + 2 * NS]
        o1 = o1 + 2 * NS
        tile = dsh[o1:o1 + TW * M]
        o1 = o1 + TW * M
        nred = 3 * T if SIM else 288
        nd = o1 + nred + NC
        red = dsh[o1:nd - NC]
        cnt = dsh[nd - NC:nd]
        ish = cuda.shared.array(0, dtype=i32)
        o = 2 * nd
        up_site = ish[o:o + M]
        dn_site = ish[o + M:o + 2 * M]
        up_at = ish[o + 2 * M:o + 2 * M + NS]
        dn_at = ish[o + 2 * M + NS:o + 2 * M + 2 * NS]
        o2 = o + 2 * M + 2 * NS
        perm = ish[o2:o2 + M]
        sigma = ish[o2 + M:o2 + 2 * M]
        redi = ish[o2 + 2 * M:o2 + 2 * M + (T if SIM else 32)]
        i = t
        while i < M:
            up_site[i] = up_site_g[w, i]
            dn_site[i] = dn_site_g[w, i]
            i += T
        i = t
        while i < NS:
            up_at[i] = up_at_g[w, i]
            dn_at[i] = dn_at_g[w, i]
            i += T
        i = t >> 5
        while i < M:
            j = lane
            while j < M:
                A[i * M + j] = ainv_g[w, i, j]
                j += 32
            i += T >> 5
        st = cuda.local.array((1, 2), u64)
        st[0, 0] = states[w, 0]
        st[0, 1] = states[w, 1]
        old = scratch[w, 0]
        tmp = scratch[w, 1]
        F = Fs[w]
        G = Gs[w]
        if t == 0:
            for q in range(NC):
                cnt[q] = 0.0
        dmax = 0.0
        n2 = 2 * n_pairs
        cuda.syncthreads()
        fresh_fg(A, M, NS, pair, pairT, up_site, dn_site, F, G, tile)
        for sweep in range(n_sweeps):
            for _ in range(moves_per_sweep):
                e, target = draw_proposal(st, up_at, dn_at, n2, NS)
                label = e >> 1
                spin = e & 1
                other = dn_at[target] if spin == 1 else up_at[target]
                is_swap = projected and other >= 0
                k = 0
                l = 0
                a = 0
                b = 0
                first_up = 0.0
                first_down = 0.0
                if is_swap:  # two_electron_ratio: the O(M) sum in every warp
                    k = label if spin == 1 else up_at[target]
                    l = other if spin == 1 else label
                    a = up_site[k]
                    b = dn_site[l]
                    fb = b * M
                    h = 0.0
                    c = lane
                    while c < M:
                        h += F[fb + c] * pairT[a, up_site[c]]
                        c += 32
                    h = group_sum(h, 32, red)
                    first_up = F[fb + k]
                    first_down = G[l * NS + a]
                    ratio = first_up * first_down + A[l * M + k] * (pair[b, a] - h)
                elif spin == 1:
                    ratio = F[target * M + label]
                else:
                    ratio = G[label * NS + target]
                if t == 0:
                    cnt[2 if is_swap else 0] += 1.0
                if not uniform(st, 0) < ratio * ratio:
                    continue
                if is_swap:
                    if max(abs(first_up), abs(first_down)) < SINGULAR:
                        cuda.syncthreads()
                        if t == 0:
                            swap_sites(up_site, dn_site, up_at, dn_at, k, l, a, b)
                            cnt[3] += 1.0
                            cnt[4] += 1.0
                        cuda.syncthreads()
                        rebuild(A, M, pair, up_site, dn_site, old, tmp, fv, xv, tile, perm, sigma, red, redi)
                        fresh_fg(A, M, NS, pair, pairT, up_site, dn_site, F, G, tile)
                    elif abs(first_up) >= abs(first_down):
                        up_stage(A, M, NS, pair, pairT, up_site, dn_site, k, b, fv, xv, sv1, sv2)
                        if t == 0:
                            up_site[k] = b  # the intermediate: up k at b, down l still there
                        up_apply(A, M, NS, F, G, k, b, fv, xv, sv1, sv2)
                        down_stage(A, M, NS, pair, pairT, up_site, dn_site, l, a, fv, xv, sv1, sv2)
                        if t == 0:
                            dn_site[l] = a
                            up_at[a] = -1
                            up_at[b] = k
                            dn_at[b] = -1
                            dn_at[a] = l
                            cnt[3] += 1.0
                        down_apply(A, M, NS, F, G, l, a, fv, xv, sv1, sv2)
                    else:
                        down_stage(A, M, NS, pair, pairT, up_site, dn_site, l, a, fv, xv, sv1, sv2)
                        if t == 0:
                            dn_site[l] = a  # the intermediate: down l at a, up k still there
                        down_apply(A, M, NS, F, G, l, a, fv, xv, sv1, sv2)
                        up_stage(A, M, NS, pair, pairT, up_site, dn_site, k, b, fv, xv, sv1, sv2)
                        if t == 0:
                            up_site[k] = b
                            up_at[a] = -1
                            up_at[b] = k
                            dn_at[b] = -1
                            dn_at[a] = l
                            cnt[3] += 1.0
                        up_apply(A, M, NS, F, G, k, b, fv, xv, sv1, sv2)
                elif spin == 1:
                    up_stage(A, M, NS, pair, pairT, up_site, dn_site, label, target, fv, xv, sv1, sv2)
                    if t == 0:
                        up_at[up_site[label]] = -1
                        up_at[target] = label
                        up_site[label] = target
                        cnt[1] += 1.0
                    up_apply(A, M, NS, F, G, label, target, fv, xv, sv1, sv2)
                else:
                    down_stage(A, M, NS, pair, pairT, up_site, dn_site, label, target, fv, xv, sv1, sv2)
                    if t == 0:
                        dn_at[dn_site[label]] = -1
                        dn_at[target] = label
                        dn_site[label] = target
                        cnt[1] += 1.0
                    down_apply(A, M, NS, F, G, label, target, fv, xv, sv1, sv2)
            if refresh_every > 0 and ((sweep + 1) % refresh_every == 0 or sweep + 1 == n_sweeps):
                cuda.syncthreads()  # warps may still be reading A⁻¹ for the sweep's last proposals
                d = rebuild(A, M, pair, up_site, dn_site, old, tmp, fv, xv, tile, perm, sigma, red, redi)
                dmax = max(dmax, d)
                fresh_fg(A, M, NS, pair, pairT, up_site, dn_site, F, G, tile)
            if measure:
                kinetic, exchange, double = block_energy_given(A, M, NS, pair, pairT, neighbours, hopping, bonds, J,
                                                               projected, up_site, dn_site, up_at, dn_at, F, G,
                                                               tile, red)
                if t == 0:
                    energies[w, sweep, 0] = kinetic
                    energies[w, sweep, 1] = exchange
                    energies[w, sweep, 2] = double
        cuda.syncthreads()
        i = t >> 5
        while i < M:
            j = lane
            while j < M:
                ainv_g[w, i, j] = A[i * M + j]
                j += 32
            i += T >> 5
        i = t
        while i < M:
            up_site_g[w, i] = up_site[i]
            dn_site_g[w, i] = dn_site[i]
            i += T
        i = t
        while i < NS:
            up_at_g[w, i] = up_at[i]
            dn_at_g[w, i] = dn_at[i]
            i += T
        if t == 0:
            states[w, 0] = st[0, 0]
            states[w, 1] = st[0, 1]
            for q in range(NC):
                counts[w, q] += int(cnt[q])
            drift[w] = max(drift[w], dmax)

    @c.jit
    def measure_snapshots_gpu(pair, pairT, neighbours, hopping, bonds, J, projected, M, snaps, n_chains, s0, energies,
                              Fs, Gs):
        """The measurements of snapshot rows q (A⁻¹, then up_site, dn_site, up_at, dn_at as float64): block b
        takes q = b, b + grid, …, measures as run_chains_gpu would (``block_energy``, its F and G in Fs[b],
        Gs[b]) and writes energies[q mod W, s0 + q // W] (W = ``n_chains``)."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        NS = neighbours.shape[0]
        MM = M * M
        dsh = cuda.shared.array(0, dtype=f64)
        A = dsh[0:MM]
        tile = dsh[MM:MM + TW * M]
        nred = 3 * T if SIM else 288
        red = dsh[MM + TW * M:MM + TW * M + nred]
        ish = cuda.shared.array(0, dtype=i32)
        o = 2 * (MM + TW * M + nred)
        up_site = ish[o:o + M]
        dn_site = ish[o + M:o + 2 * M]
        up_at = ish[o + 2 * M:o + 2 * M + NS]
        dn_at = ish[o + 2 * M + NS:o + 2 * M + 2 * NS]
        f_sites = ish[o + 2 * M + 2 * NS:o + 2 * M + 3 * NS]
        g_sites = ish[o + 2 * M + 3 * NS:o + 2 * M + 4 * NS]
        n_listed = ish[o + 2 * M + 4 * NS:o + 2 * M + 4 * NS + 2]
        F = Fs[cuda.blockIdx.x]
        G = Gs[cuda.blockIdx.x]
        q = cuda.blockIdx.x
        while q < snaps.shape[0]:
            row = snaps[q]
            i = t
            while i < MM:
                A[i] = row[i]
                i += T
            i = t
            while i < M:
                up_site[i] = i32(row[MM + i])
                dn_site[i] = i32(row[MM + M + i])
                i += T
            i = t
            while i < NS:
                up_at[i] = i32(row[MM + 2 * M + i])
                dn_at[i] = i32(row[MM + 2 * M + NS + i])
                i += T
            cuda.syncthreads()
            kinetic, exchange, double = block_energy(A, M, NS, pair, pairT, neighbours, hopping, bonds, J, projected,
                                                     up_site, dn_site, up_at, dn_at, F, G, tile, red, f_sites, g_sites,
                                                     n_listed)
            if t == 0:
                w = q % n_chains
                sweep = s0 + q // n_chains
                energies[w, sweep, 0] = kinetic
                energies[w, sweep, 1] = exchange
                energies[w, sweep, 2] = double
            cuda.syncthreads()
            q += cuda.gridDim.x

    def variant(flags):
        """run_chains_gpu rebuilt as ``run_chains`` + ``_flag`` for each of ``flags`` (in VARIANT_FLAGS' order),
        its closure constants set accordingly: a constant's dead branch is left out of the compiled kernel."""
        constants = {VARIANT_FLAGS[flag][0]: VARIANT_FLAGS[flag][1] for flag in flags}
        cells = tuple(types.CellType(constants[free]) if free in constants else cell
                      for free, cell in zip(run_chains_gpu.__code__.co_freevars, run_chains_gpu.__closure__))
        name = "_".join(("run_chains",) + tuple(flags))
        return name, c.jit(**options)(types.FunctionType(run_chains_gpu.__code__, run_chains_gpu.__globals__, name,
                                                         run_chains_gpu.__defaults__, cells))

    # dispatchers compile on first use: the unused variants cost nothing
    thesis = dict(variant(tuple(f for f, on in zip(VARIANT_FLAGS, pick) if on))
                  for pick in itertools.product((False, True), repeat=len(VARIANT_FLAGS)))
    return {**thesis,
            "run_chains_tracked": run_chains_tracked_gpu, "measure_snapshots": measure_snapshots_gpu}
