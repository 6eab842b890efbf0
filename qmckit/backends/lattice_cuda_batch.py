"""Study 000's GPU chain kernels, part 2: draws, batches, refreshes and measurements (see :mod:`.lattice_cuda`).

:func:`batch_functions` takes the namespace of :func:`qmckit.backends.lattice_cuda_linear.linear_functions`
and adds the device functions of a proposal batch (the draws and their parse, the derived quantities, the
batch sums on the tensor cores or by a tree), the rebuild and the Newton–Schulz refresh of A⁻¹, the
measurement tiles and the block energies. :func:`qmckit.backends.lattice_cuda_kernels.chain_kernels` takes
the result.
"""
from __future__ import annotations

from . import cuda_import
from .lattice_cuda import REFINE_LIMIT

cuda = None  # numba.cuda, bound on first use; a module global so that the simulator can swap it


def batch_functions(ns: dict) -> dict:
    """The part-2 device functions, with everything of ``ns``, by name (see the module docstring)."""
    cuda_import.bind(globals())
    BD, BI, FULL, NB, PG, SIM, TW = ns["BD"], ns["BI"], ns["FULL"], ns["NB"], ns["PG"], ns["SIM"], ns["TW"]
    block_argmax, block_max2, block_sum3, c = ns["block_argmax"], ns["block_max2"], ns["block_sum3"], ns["c"]
    dev, dmma, group_sum, i32, i64 = ns["dev"], ns["dmma"], ns["group_sum"], ns["i32"], ns["i64"]
    next_uint64, u32, u64, uniform = ns["next_uint64"], ns["u32"], ns["u64"], ns["uniform"]

    @dev
    def draw_proposal(st, up_at, dn_at, n2, NS):
        """One proposal of lattice_chains.propose from the stream: (electron draw e — label e >> 1, spin e & 1 —,
        target site), drawing targets until one has no electron of that spin."""
        e = min(int(uniform(st, 0) * n2), n2 - 1)
        target = 0
        while True:
            target = min(int(uniform(st, 0) * NS), NS - 1)
            occ = up_at[target] if (e & 1) == 1 else dn_at[target]
            if occ < 0:
                break
        return e, target

    @dev
    def batch_ratio(bints, bdbs, zps, bi0, bd0, z0, s, NZ):
        """The ratio of proposal s of a batch from its shared numbers: ratio_swap from (F[s, k], y_s, z_s)
        (the z_s partials added in slot order), F[s, label] for an up hop, y_s for a down hop."""
        kind = bints[bi0 + s * BI]
        q = bd0 + s * BD
        if kind == 2:
            zs = 0.0
            for w2 in range(NZ):
                zs += zps[z0 + w2 * NB + s]
            alk = bdbs[q + 1]
            return alk * bdbs[q + 2] + bdbs[q + 4] * (bdbs[q + 5] - alk * bdbs[q + 3]) - alk * zs
        return bdbs[q + 4] if kind == 1 else bdbs[q + 5]

    @dev
    def ballot_parity(x):
        """The parities of the warp's uint64 ``x``, lane i's as bit i of a uint64."""
        odd = cuda.popc(u32(x & u64(0xFFFFFFFF)) ^ u32(x >> u64(32))) & 1 == 1
        return u64(u32(cuda.ballot_sync(FULL, odd)))  # (ballot_sync's int32 would sign-extend)

    @dev
    def parse_batch(st, up_at, dn_at, n2, NS, nbmax, jumps):
        """Up to ``nbmax`` proposals from the stream's next 32 draws, by a whole warp: lane i makes draw i
        (it starts from the stream G·⌊i/G⌋ draws on, G = :data:`PARSE_GROUP`, by the GF(2) jumps ``jumps`` of
        :func:`parse_jumps`, whose 128 parities the lanes share out and four ballots gather; then every lane
        steps the generator G times and keeps its own state), reads it as an electron and as a
        target site with its occupations (ballots), then lane k finds proposal k from the masks (binary
        lifting over "where the next proposal starts"), in the order lattice_chains.propose draws them
        (electron, targets until one has no electron of that spin, decision). Returns (n, e, target, u, s0,
        s1): the number of complete proposals, and for proposal ``lane`` (lane < n) its electron draw,
        target, decision uniform and the stream just after its decision (int64 bits); leaves ``st`` where
        proposal n − 1 ended (where it began if n = 0).
        The same in every warp."""
        lane = cuda.threadIdx.x & 31
        b0 = st[0, 0]
        b1 = st[0, 1]
        for m in range(1, 32 // PG):  # the stream m·G draws on: bit r = parity(jump row r & (b0, b1))
            r0 = jumps[m - 1, lane, 0] & b0 ^ jumps[m - 1, lane, 1] & b1  # lane computes rows lane + 32q
            r1 = jumps[m - 1, lane + 32, 0] & b0 ^ jumps[m - 1, lane + 32, 1] & b1
            r2 = jumps[m - 1, lane + 64, 0] & b0 ^ jumps[m - 1, lane + 64, 1] & b1
            r3 = jumps[m - 1, lane + 96, 0] & b0 ^ jumps[m - 1, lane + 96, 1] & b1
            w0 = ballot_parity(r0)
            w1 = ballot_parity(r1)
            w2 = ballot_parity(r2)
            w3 = ballot_parity(r3)
            if lane // PG == m:
                st[0, 0] = w0 | (w1 << u64(32))
                st[0, 1] = w2 | (w3 << u64(32))
        p0 = u64(0)  # the stream before draw `lane`
        p1 = u64(0)
        for step in range(PG):
            if step == lane % PG:
                p0 = st[0, 0]
                p1 = st[0, 1]
            next_uint64(st, 0)
        st[0, 0] = p0  # draw `lane` once more, from its own state: the draw and the stream after it
        st[0, 1] = p1
        u = uniform(st, 0)
        m0 = i64(st[0, 0])  # (int64 bits: shuffles take signed 64-bit integers)
        m1 = i64(st[0, 1])
        tgt = min(int(u * NS), NS - 1)
        el = min(int(u * n2), n2 - 1)
        up_mask = u32(cuda.ballot_sync(FULL, up_at[tgt] >= 0))
        dn_mask = u32(cuda.ballot_sync(FULL, dn_at[tgt] >= 0))
        spins = u32(cuda.ballot_sync(FULL, (el & 1) == 1))
        # The proposals in parallel. Were draw `lane` a proposal's electron draw, its targets would run to the
        # first later draw with no electron of its spin (q), its decision would be draw q + 1 and the next
        # proposal would start at q + 2 (j1; 48: none completes from here, as for starts ≥ 30). Proposal k
        # starts at j1 applied k times to 0: lane k gets it by binary lifting over j1, j2 = j1∘j1 and j4 (warp
        # shuffles; k < 8) instead of the CPU's walk from one proposal to the next, a chain of dependent steps.
        p = u32(lane)
        taken = up_mask if (spins >> p) & u32(1) == u32(1) else dn_mask
        free = ~taken & (u32(0xFFFFFFFE) << p) if p < u32(30) else u32(0)
        q = i32(cuda.ffs(free) - 1)
        j1 = i32(q + 2) if free != u32(0) and q < i32(31) else i32(48)
        j2 = i32(cuda.shfl_sync(FULL, j1, min(j1, i32(31))))
        j2 = j2 if j1 < i32(32) else j1
        j4 = i32(cuda.shfl_sync(FULL, j2, min(j2, i32(31))))
        j4 = j4 if j2 < i32(32) else j2
        x = i32(cuda.shfl_sync(FULL, j1, i32(0)))  # the start of proposal `lane` (≥ 32: none)
        x = x if p & u32(1) else i32(0)
        hop = i32(cuda.shfl_sync(FULL, j2, min(x, i32(31))))
        x = hop if p & u32(2) and x < i32(32) else x
        hop = i32(cuda.shfl_sync(FULL, j4, min(x, i32(31))))
        x = hop if p & u32(4) and x < i32(32) else x
        x_next = i32(cuda.shfl_sync(FULL, j1, min(x, i32(31))))  # the start of the proposal after it
        x_next = x_next if x < i32(32) else x
        complete = p < u32(nbmax) and x < i32(32) and x_next <= i32(32)  # a prefix of the lanes
        n = i32(cuda.popc(cuda.ballot_sync(FULL, complete)))
        my_p = x if complete else i32(0)  # this lane's proposal: the positions of its electron and target draws
        my_q = i32(x_next - 2) if complete else i32(0)
        tail = i32(cuda.shfl_sync(FULL, x_next, i32(max(n - 1, 0))))  # (n is the same in every lane)
        last = i32(tail - 1) if n > i32(0) else i32(-1)  # the last parsed proposal's decision draw
        my_e = cuda.shfl_sync(FULL, el, my_p)
        my_t = cuda.shfl_sync(FULL, tgt, my_q)
        decision = i32(my_q + 1)
        my_u = cuda.shfl_sync(FULL, u, decision)
        my_0 = cuda.shfl_sync(FULL, m0, decision)
        my_1 = cuda.shfl_sync(FULL, m1, decision)
        if last >= i32(0):
            st[0, 0] = u64(cuda.shfl_sync(FULL, m0, last))
            st[0, 1] = u64(cuda.shfl_sync(FULL, m1, last))
        else:  # nothing parsed: back to where the batch began
            st[0, 0] = b0
            st[0, 1] = b1
        return n, my_e, my_t, my_u, my_0, my_1

    @dev
    def gather8(table, col, x0, x1, x2, x3, x4, x5, x6, x7, out, LD, j):
        """out[s·LD + j] = table[x_s, col] for s < 8 (0 where x_s < 0): all eight loads issued before the
        first store (a store waits for its value, and the compiler may not move a load of the same shared
        memory above it)."""
        v0 = table[x0, col] if x0 >= 0 else 0.0
        v1 = table[x1, col] if x1 >= 0 else 0.0
        v2 = table[x2, col] if x2 >= 0 else 0.0
        v3 = table[x3, col] if x3 >= 0 else 0.0
        v4 = table[x4, col] if x4 >= 0 else 0.0
        v5 = table[x5, col] if x5 >= 0 else 0.0
        v6 = table[x6, col] if x6 >= 0 else 0.0
        v7 = table[x7, col] if x7 >= 0 else 0.0
        out[j] = v0
        out[LD + j] = v1
        out[2 * LD + j] = v2
        out[3 * LD + j] = v3
        out[4 * LD + j] = v4
        out[5 * LD + j] = v5
        out[6 * LD + j] = v6
        out[7 * LD + j] = v7

    @dev
    def derive(valid, e, target, u, projected, up_site, dn_site, up_at, dn_at, A, M, pair, pairT, bints, bdbs, qi,
               qd, write):
        """Proposal (electron draw e, target, decision uniform u) worked out: kind (0 down hop, 1 up hop, 2
        swap), labels and sites; with ``write``, its record at bints[qi:qi + 9] (kind, label, target, k, l, a,
        b, col_s, row_s) and bdbs[qd:qd + 4] (u, and for a swap A⁻¹[l, k], φ(b, a), φ(a, a)). Returns the
        sites (xs, ys) of its P row φ(xs, R↓) and W row φ(R↑, ys), −1 for none (and both −1 if not valid)."""
        if not valid:
            if write:
                bints[qi + 7] = -1
                bints[qi + 8] = -1
            return -1, -1
        label = e >> 1
        spin = e & 1
        other = dn_at[target] if spin == 1 else up_at[target]
        kind = 2 if projected and other >= 0 else spin
        k = 0
        l = 0
        a = 0
        b = 0
        xs = target if kind == 1 else -1
        ys = target if kind == 0 else -1
        if kind == 2:
            k = label if spin == 1 else up_at[target]
            l = other if spin == 1 else label
            a = up_site[k]
            b = dn_site[l]
            xs = b
            ys = a
        if write:
            bints[qi] = kind
            bints[qi + 1] = label
            bints[qi + 2] = target
            bints[qi + 3] = k
            bints[qi + 4] = l
            bints[qi + 5] = a
            bints[qi + 6] = b
            bints[qi + 7] = k if kind == 2 else (label if kind == 1 else -1)
            bints[qi + 8] = l if kind == 2 else (label if kind == 0 else -1)
            bdbs[qd] = u
            if kind == 2:
                bdbs[qd + 1] = A[l * M + k]
                bdbs[qd + 2] = pair[b, a]
                bdbs[qd + 3] = pairT[a, a]
        return xs, ys

    @dev
    def tile_pair_product(A, Mu, Pm, LD, c1, c2):
        """(P·A⁻¹)[gs, c] and [gs, c + 1] for this lane's columns in two 8 × 8 column tiles (c1, c2: the lane's
        column gs of each; c2 = c1 computes one tile twice), P's 8 rows at Pm[s·LD:] zero-padded to a multiple of
        4, gs = lane / 4: m8n8k4 tensor-core steps down the M = ``Mu`` rows of A⁻¹, two steps per trip with every
        load first, one P fragment for both tiles, four accumulators (two steps in flight per tile). No
        predicates on columns: a tile's columns c ≥ M read past the row (finite values in shared memory, A⁻¹'s
        next row or what follows it) into products that are never used."""
        lane = cuda.threadIdx.x & 31
        gs = lane >> 2  # this lane's row of P
        q = lane & 3  # its k within a step
        step = u32(4) * Mu
        d0 = 0.0
        d1 = 0.0
        e0 = 0.0
        e1 = 0.0
        f0 = 0.0
        f1 = 0.0
        g0 = 0.0
        g1 = 0.0
        pa = u32(gs * LD + q)
        pb = u32(q) * Mu
        k0 = u32(0)
        while k0 + u32(8) <= Mu:
            a0 = Pm[pa]
            a1 = Pm[pa + u32(4)]
            b0 = A[pb + c1]
            b1 = A[pb + step + c1]
            h0 = A[pb + c2]
            h1 = A[pb + step + c2]
            d0, d1 = dmma(a0, b0, d0, d1)
            e0, e1 = dmma(a1, b1, e0, e1)
            f0, f1 = dmma(a0, h0, f0, f1)
            g0, g1 = dmma(a1, h1, g0, g1)
            pa += u32(8)
            pb += u32(2) * step
            k0 += u32(8)
        while k0 < Mu:  # the last steps: rows l ≥ M read as zero (P's padding is zero too)
            inside = k0 + u32(q) < Mu
            a0 = Pm[pa]
            b0 = A[pb + c1] if inside else 0.0
            h0 = A[pb + c2] if inside else 0.0
            d0, d1 = dmma(a0, b0, d0, d1)
            f0, f1 = dmma(a0, h0, f0, f1)
            pa += u32(4)
            pb += step
            k0 += u32(4)
        return d0 + e0, d1 + e1, f0 + g0, f1 + g1

    @dev
    def batch_sums_mma(A, M, Pm, Wm, Fs, LD, bint, bdb, zp):
        """The sums of a batch's ratios on the tensor cores; ends with a barrier.

        F = P·A⁻¹ (8 × M; row s of P = Pm[s·LD:], zero-padded to a multiple of 4) by 8 × 8 column tiles, tiles
        ch and ch + nw by warp ch (:func:`tile_pair_product`); every F[s, c] is written to Fs[s·LD + c] (the
        column sums of an accepted up step), F[s, col_s] to bdb[s·BD + 4], and z_s = Σ_{c ≠ col_s} F[s, c]
        Wm[s·LD + c] by warp to zp[warp·NB + s]. Then y_s = Σ_c A⁻¹[row_s, c] Wm[s·LD + c] for row_s ≥ 0, one
        warp per proposal, to bdb[s·BD + 5]. (col_s, row_s) = bint[s·BI + 7], bint[s·BI + 8], −1 where not
        needed."""
        t = cuda.threadIdx.x
        lane = t & 31
        warp = t >> 5
        nw = cuda.blockDim.x >> 5
        gs = lane >> 2  # this lane's row s of F (and of P)
        q = lane & 3  # its k within a step, and its column pair within a tile
        my_col = bint[gs * BI + 7]
        Mu = u32(M)
        z = 0.0
        ch = u32(warp)
        while u32(8) * ch < Mu:  # column tiles ch and ch + nw together
            two = u32(8) * (ch + u32(nw)) < Mu
            c1 = u32(8) * ch + u32(gs)
            c2 = c1 + u32(8 * nw) if two else c1
            p0, p1, h0, h1 = tile_pair_product(A, Mu, Pm, LD, c1, c2)
            for half in range(2 if two else 1):  # the tiles' F elements (c, c + 1) of row gs
                c0 = (c1 if half == 0 else c2) - u32(gs) + u32(2) * u32(q)
                for v in range(2):
                    if half == 0:
                        fv = p0 if v == 0 else p1
                    else:
                        fv = h0 if v == 0 else h1
                    cc = c0 + u32(v)
                    if cc < Mu:
                        Fs[gs * LD + cc] = fv
                        if cc == my_col:
                            bdb[gs * BD + 4] = fv
                        else:
                            z += fv * Wm[gs * LD + cc]
            ch += u32(2 * nw)
        z += cuda.shfl_xor_sync(FULL, z, 1)
        z += cuda.shfl_xor_sync(FULL, z, 2)
        if q == 0:
            zp[warp * NB + gs] = z
        s = warp
        while s < NB:
            r = bint[s * BI + 8]
            if r >= 0:  # the same in every lane
                y0 = 0.0
                y1 = 0.0
                c = u32(lane)
                while c + u32(32) < Mu:
                    v0 = A[u32(r) * Mu + c] * Wm[s * LD + c]
                    y1 += A[u32(r) * Mu + c + u32(32)] * Wm[s * LD + c + u32(32)]
                    y0 += v0
                    c += u32(64)
                if c < Mu:
                    y0 += A[u32(r) * Mu + c] * Wm[s * LD + c]
                y = y0 + y1
                o = 16
                while o > 0:
                    y += cuda.shfl_xor_sync(FULL, y, o)
                    o >>= 1
                if lane == 0:
                    bdb[s * BD + 5] = y
            s += nw
        cuda.syncthreads()

    @dev
    def batch_sums_tree(A, M, Pm, Wm, Fs, LD, bint, bdb, zp):
        """The same sums for the simulator (no tensor cores, no shuffles): F by elements, then thread s
        forms z_s (one slot per proposal) and y_s; ends with a barrier."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        e = t
        while e < NB * M:
            s = e // M
            c = e - s * M
            f = 0.0
            for l in range(M):
                f += Pm[s * LD + l] * A[l * M + c]
            Fs[s * LD + c] = f
            e += T
        cuda.syncthreads()
        if t < NB:
            col = bint[t * BI + 7]
            z = 0.0
            for c in range(M):
                if c == col:
                    bdb[t * BD + 4] = Fs[t * LD + c]
                else:
                    z += Fs[t * LD + c] * Wm[t * LD + c]
            zp[t] = z
            r = bint[t * BI + 8]
            if r >= 0:
                y = 0.0
                for c in range(M):
                    y += A[r * M + c] * Wm[t * LD + c]
                bdb[t * BD + 5] = y
        cuda.syncthreads()

    batch_sums = batch_sums_tree if SIM else batch_sums_mma

    # --- rebuild ---------------------------------------------------------------------------------
    @dev
    def rebuild(A, M, pair, up_site, dn_site, old, tmp, colf, rowk, ksave, perm, sigma, red, redi):
        """A⁻¹ from scratch (Gauss–Jordan, partial pivoting, in place); returns the drift
        max |A⁻¹_old − A⁻¹_new| / max |A⁻¹_new| to every thread. ``old``, ``tmp``: global (M²,) scratch.
        Elements are visited row by warp and column by lane (no divisions)."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        lane = t & 31
        warp = t >> 5
        nw = T >> 5
        i = warp
        while i < M:
            ui = up_site[i]
            j = lane
            while j < M:
                e = i * M + j
                old[e] = A[e]
                A[e] = pair[ui, dn_site[j]]  # A[k, l] = φ(R↑_k, R↓_l)
                j += 32
            i += nw
        cuda.syncthreads()
        for k in range(M):
            bv = -1.0
            bi = M
            i = k + t
            while i < M:
                v = abs(A[i * M + k])
                if v > bv:
                    bv = v
                    bi = i
                i += T
            bv, p = block_argmax(bv, bi, red, redi)
            inv_piv = 1.0 / A[p * M + k]
            # rows k and p interchanged, row k scaled, column k kept: read only, then one write pass
            i = t
            while i < M:
                src = i
                if i == k:
                    src = p
                elif i == p:
                    src = k
                colf[i] = A[src * M + k]
                ksave[i] = A[k * M + i]
                rowk[i] = inv_piv if i == k else A[p * M + i] * inv_piv
                i += T
            if t == 0:
                perm[k] = p
            cuda.syncthreads()
            i = warp
            while i < M:
                base = i * M
                fi = colf[i]
                j = lane
                if i == k:
                    while j < M:
                        A[base + j] = rowk[j]
                        j += 32
                elif i == p:
                    while j < M:
                        cur = 0.0 if j == k else ksave[j]
                        A[base + j] = cur - fi * rowk[j]
                        j += 32
                else:
                    while j < M:
                        cur = 0.0 if j == k else A[base + j]
                        A[base + j] = cur - fi * rowk[j]
                        j += 32
                i += nw
            cuda.syncthreads()
        if t == 0:  # the row interchanges become column interchanges of the inverse, in reverse order
            for j in range(M):
                sigma[j] = j
            for k in range(M - 1, -1, -1):
                p = perm[k]
                s = sigma[k]
                sigma[k] = sigma[p]
                sigma[p] = s
        cuda.syncthreads()
        i = warp
        while i < M:
            j = lane
            while j < M:
                tmp[i * M + j] = A[i * M + sigma[j]]
                j += 32
            i += nw
        cuda.syncthreads()
        dmax = 0.0
        amax = 0.0
        i = warp
        while i < M:  # the same (i, j) as above: each thread reads back its own writes
            j = lane
            while j < M:
                e = i * M + j
                v = tmp[e]
                A[e] = v
                dmax = max(dmax, abs(v - old[e]))
                amax = max(amax, abs(v))
                j += 32
            i += nw
        dmax, amax = block_max2(dmax, amax, red)
        return dmax / amax

    @dev
    def refine(A, M, pair, up_site, dn_site, old, tmp, Pm, LD, colf, rowk, ksave, perm, sigma, red, redi):
        """The periodic refresh of A⁻¹ = X: one Newton–Schulz step against Φ built afresh from the
        configuration, X ← X + X·R with R = 1 − Φ·X (the error after it is the square of the one before:
        drift ~1e-9 leaves ~1e-18, below rounding), where max |R| ≤ :data:`REFINE_LIMIT`; otherwise, and in
        the simulator, Gauss–Jordan (:func:`rebuild`). Returns the drift max |ΔX| / max |X_new| to every
        thread, as :func:`rebuild`. Φ·X on the tensor cores by 8 rows of Φ staged in ``Pm`` (its zero
        padding kept; gathered as a batch's rows, :func:`gather8`), R to the global scratch ``tmp``; X·R by warp
        over row pairs and lane over columns (M ≤ 128; larger M, Gauss–Jordan)."""
        if SIM or M > 128:  # (X·R below: four columns of 32 per lane)
            return rebuild(A, M, pair, up_site, dn_site, old, tmp, colf, rowk, ksave, perm, sigma, red, redi)
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        lane = t & 31
        warp = t >> 5
        nw = T >> 5
        gs = lane >> 2  # the tensor-core fragments' row (of Φ) and k, as in batch_sums_mma
        q = lane & 3
        Mu = u32(M)
        rmax = 0.0
        r0 = 0
        while r0 < M:
            x1 = up_site[r0 + 1] if r0 + 1 < M else -1  # rows r0 … r0 + 7 of Φ(R↑, R↓) (zero past the last row)
            x2 = up_site[r0 + 2] if r0 + 2 < M else -1
            x3 = up_site[r0 + 3] if r0 + 3 < M else -1
            x4 = up_site[r0 + 4] if r0 + 4 < M else -1
            x5 = up_site[r0 + 5] if r0 + 5 < M else -1
            x6 = up_site[r0 + 6] if r0 + 6 < M else -1
            x7 = up_site[r0 + 7] if r0 + 7 < M else -1
            j = t
            while j < M:
                gather8(pair, dn_site[j], up_site[r0], x1, x2, x3, x4, x5, x6, x7, Pm, LD, j)
                j += T
            cuda.syncthreads()
            ch = u32(warp)
            while u32(8) * ch < Mu:  # R's rows r0 … r0 + 7 by column tiles ch and ch + nw, as batch_sums_mma
                two = u32(8) * (ch + u32(nw)) < Mu
                c1 = u32(8) * ch + u32(gs)
                c2 = c1 + u32(8 * nw) if two else c1
                p0, p1, h0, h1 = tile_pair_product(A, Mu, Pm, LD, c1, c2)
                row = u32(r0) + u32(gs)
                for half in range(2 if two else 1):
                    for v in range(2):
                        cc = (c1 if half == 0 else c2) - u32(gs) + u32(2) * u32(q) + u32(v)
                        if row < Mu and cc < Mu:
                            fv = (p0 if v == 0 else p1) if half == 0 else (h0 if v == 0 else h1)
                            r = (1.0 if row == cc else 0.0) - fv
                            tmp[row * Mu + cc] = r
                            rmax = max(rmax, abs(r))
                ch += u32(2 * nw)
            cuda.syncthreads()
            r0 += 8
        rmax, _ = block_max2(rmax, 0.0, red)
        if not rmax <= REFINE_LIMIT:  # (also NaN)
            return rebuild(A, M, pair, up_site, dn_site, old, tmp, colf, rowk, ksave, perm, sigma, red, redi)
        dmax = 0.0
        amax = 0.0
        i = 2 * warp
        while i < M:  # rows i, i + 1 of X·R: R's rows from global memory, read once for both
            i2 = min(i + 1, M - 1)
            y0 = 0.0
            y1 = 0.0
            y2 = 0.0
            y3 = 0.0
            z0 = 0.0
            z1 = 0.0
            z2 = 0.0
            z3 = 0.0
            k = 0
            while k < M:  # two k per trip, the four global loads of each issued together
                k2 = min(k + 1, M - 1)
                base = k * M + lane
                base2 = k2 * M + lane
                r0v = tmp[base]
                r1v = tmp[base + 32] if lane + 32 < M else 0.0
                r2v = tmp[base + 64] if lane + 64 < M else 0.0
                r3v = tmp[base + 96] if lane + 96 < M else 0.0
                s0v = tmp[base2] if k2 > k else 0.0
                s1v = tmp[base2 + 32] if k2 > k and lane + 32 < M else 0.0
                s2v = tmp[base2 + 64] if k2 > k and lane + 64 < M else 0.0
                s3v = tmp[base2 + 96] if k2 > k and lane + 96 < M else 0.0
                x1 = A[i * M + k]
                x2 = A[i2 * M + k]
                u1 = A[i * M + k2]
                u2 = A[i2 * M + k2]
                y0 += x1 * r0v + u1 * s0v
                y1 += x1 * r1v + u1 * s1v
                y2 += x1 * r2v + u1 * s2v
                y3 += x1 * r3v + u1 * s3v
                z0 += x2 * r0v + u2 * s0v
                z1 += x2 * r1v + u2 * s1v
                z2 += x2 * r2v + u2 * s2v
                z3 += x2 * r3v + u2 * s3v
                k += 2
            cuda.syncwarp(FULL)  # every lane has read rows i, i + 1 of X before any writes them
            for c in range(4):
                col = lane + 32 * c
                if col < M:
                    dy = y0 if c == 0 else (y1 if c == 1 else (y2 if c == 2 else y3))
                    v = A[i * M + col] + dy
                    A[i * M + col] = v
                    dmax = max(dmax, abs(dy))
                    amax = max(amax, abs(v))
                    if i2 > i:
                        dz = z0 if c == 0 else (z1 if c == 1 else (z2 if c == 2 else z3))
                        v = A[i2 * M + col] + dz
                        A[i2 * M + col] = v
                        dmax = max(dmax, abs(dz))
                        amax = max(amax, abs(v))
            i += 2 * nw
        dmax, amax = block_max2(dmax, amax, red)
        return dmax / amax

    # --- measurement ---------------------------------------------------------------------------
    @dev
    def tile_product_mma(A, M, rs, ks, out, ro, ao, tile, sites, count, listed, a0):
        """gather_product's sums for one tile of 16 sites on the tensor cores: out[r, a] = Σ_k A[r·rs + k·ks]
        · tile[k·16 + a − a0], by 8 × 8 blocks (8 rows r, 8 sites), one warp per 8 rows and both site
        halves (their A fragment shared), two m8n8k4 steps per trip into four accumulators."""
        lane = cuda.threadIdx.x & 31
        warp = cuda.threadIdx.x >> 5
        nw = cuda.blockDim.x >> 5
        gm = u32(lane >> 2)
        q = u32(lane & 3)
        Mu = u32(M)
        rsu = u32(rs)
        ksu = u32(ks)
        rg = u32(warp)
        while u32(8) * rg < Mu:
            r = u32(8) * rg + gm  # rows r ≥ M read past A⁻¹ (finite shared values) into rows never stored
            rv = r < Mu
            d0 = 0.0
            d1 = 0.0
            e0 = 0.0
            e1 = 0.0
            f0 = 0.0
            f1 = 0.0
            g0 = 0.0
            g1 = 0.0
            pa = r * rsu + q * ksu
            pt = q * u32(TW) + gm
            k0 = u32(0)
            while k0 + u32(8) <= Mu:
                x0 = A[pa]
                x1 = A[pa + u32(4) * ksu]
                y0 = tile[pt]
                y1 = tile[pt + u32(4 * TW)]
                w0 = tile[pt + u32(8)]
                w1 = tile[pt + u32(4 * TW + 8)]
                d0, d1 = dmma(x0, y0, d0, d1)
                e0, e1 = dmma(x1, y1, e0, e1)
                f0, f1 = dmma(x0, w0, f0, f1)
                g0, g1 = dmma(x1, w1, g0, g1)
                pa += u32(8) * ksu
                pt += u32(8 * TW)
                k0 += u32(8)
            while k0 < Mu:
                inside = k0 + q < Mu
                x0 = A[pa] if inside else 0.0
                y0 = tile[pt] if inside else 0.0
                w0 = tile[pt + u32(8)] if inside else 0.0
                d0, d1 = dmma(x0, y0, d0, d1)
                f0, f1 = dmma(x0, w0, f0, f1)
                pa += u32(4) * ksu
                pt += u32(4 * TW)
                k0 += u32(4)
            if rv:
                for half in range(2):
                    for v in range(2):
                        qa = a0 + 8 * half + 2 * lane % 8 + v
                        if qa < count:
                            a = sites[qa] if listed else qa
                            if half == 0:
                                out[r * u32(ro) + u32(a) * u32(ao)] = (d0 + e0) if v == 0 else (d1 + e1)
                            else:
                                out[r * u32(ro) + u32(a) * u32(ao)] = (f0 + g0) if v == 0 else (f1 + g1)
            rg += u32(nw)

    @dev
    def tile_value(table, idx, sites, listed, count, a0, e):
        """Element e of a measurement tile: table[idx[e // 16], site of column a0 + e % 16] (0 past ``count``)."""
        q = a0 + (e & (TW - 1))
        if q >= count:
            return 0.0
        return table[idx[e // TW], sites[q] if listed else q]

    @dev
    def gather_product(A, M, rs, ks, table, idx, out, ro, ao, tile, sites, count, listed):
        """out[r·ro + a·ao] = Σ_k A[r·rs + k·ks] · table[idx[k], a] for r < M and the sites a = sites[q],
        q < ``count`` (``listed``; otherwise a = q): the rows of ``table`` at ``idx`` are gathered into
        shared memory 16 sites at a time (coalesced, all loads in flight), then each thread forms 4 rows
        of one column from shared memory. ``count`` must be the same in every thread (barriers)."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        col = t & (TW - 1)
        rg = t // TW
        nrg = T // TW
        a0 = 0
        while a0 < count:
            e = t
            n_tile = M * TW
            while e < n_tile:  # four elements per trip, their loads before their stores
                v0 = tile_value(table, idx, sites, listed, count, a0, e)
                v1 = tile_value(table, idx, sites, listed, count, a0, e + T) if e + T < n_tile else 0.0
                v2 = tile_value(table, idx, sites, listed, count, a0, e + 2 * T) if e + 2 * T < n_tile else 0.0
                v3 = tile_value(table, idx, sites, listed, count, a0, e + 3 * T) if e + 3 * T < n_tile else 0.0
                tile[e] = v0
                if e + T < n_tile:
                    tile[e + T] = v1
                if e + 2 * T < n_tile:
                    tile[e + 2 * T] = v2
                if e + 3 * T < n_tile:
                    tile[e + 3 * T] = v3
                e += 4 * T
            cuda.syncthreads()
            if not SIM:
                tile_product_mma(A, M, rs, ks, out, ro, ao, tile, sites, count, listed, a0)
                cuda.syncthreads()
                a0 += TW
                continue
            q = a0 + col
            a = (sites[q] if listed else q) if q < count else 0
            r = rg
            while r < M:
                r1 = r + nrg
                r2 = r1 + nrg
                r3 = r2 + nrg
                c1 = min(r1, M - 1)
                c2 = min(r2, M - 1)
                c3 = min(r3, M - 1)
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                # unsigned 32-bit indices, four k per trip with their loads first (latency, not FMAs,
                # bounds this loop)
                i0 = u32(r * rs)
                i1 = u32(c1 * rs)
                i2 = u32(c2 * rs)
                i3 = u32(c3 * rs)
                ks32 = u32(ks)
                it = u32(col)
                k = u32(0)
                while k + u32(3) < u32(M):  # four k per trip, all twenty loads before the sixteen FMAs
                    t0 = tile[it]
                    t1 = tile[u32(it + TW)]
                    t2 = tile[u32(it + 2 * TW)]
                    t3 = tile[u32(it + 3 * TW)]
                    x0 = A[i0]
                    x1 = A[i1]
                    x2 = A[i2]
                    x3 = A[i3]
                    y0 = A[u32(i0 + ks32)]
                    y1 = A[u32(i1 + ks32)]
                    y2 = A[u32(i2 + ks32)]
                    y3 = A[u32(i3 + ks32)]
                    z0 = A[u32(i0 + 2 * ks32)]
                    z1 = A[u32(i1 + 2 * ks32)]
                    z2 = A[u32(i2 + 2 * ks32)]
                    z3 = A[u32(i3 + 2 * ks32)]
                    q0 = A[u32(i0 + 3 * ks32)]
                    q1 = A[u32(i1 + 3 * ks32)]
                    q2 = A[u32(i2 + 3 * ks32)]
                    q3 = A[u32(i3 + 3 * ks32)]
                    s0 += x0 * t0
                    s1 += x1 * t0
                    s2 += x2 * t0
                    s3 += x3 * t0
                    s0 += y0 * t1
                    s1 += y1 * t1
                    s2 += y2 * t1
                    s3 += y3 * t1
                    s0 += z0 * t2
                    s1 += z1 * t2
                    s2 += z2 * t2
                    s3 += z3 * t2
                    s0 += q0 * t3
                    s1 += q1 * t3
                    s2 += q2 * t3
                    s3 += q3 * t3
                    i0 = u32(i0 + 4 * ks32)
                    i1 = u32(i1 + 4 * ks32)
                    i2 = u32(i2 + 4 * ks32)
                    i3 = u32(i3 + 4 * ks32)
                    it = u32(it + 4 * TW)
                    k = u32(k + 4)
                while k < u32(M):
                    tv = tile[it]
                    s0 += A[i0] * tv
                    s1 += A[i1] * tv
                    s2 += A[i2] * tv
                    s3 += A[i3] * tv
                    i0 = u32(i0 + ks32)
                    i1 = u32(i1 + ks32)
                    i2 = u32(i2 + ks32)
                    i3 = u32(i3 + ks32)
                    it = u32(it + TW)
                    k = u32(k + 1)
                if q < count:
                    out[r * ro + a * ao] = s0
                    if r1 < M:
                        out[r1 * ro + a * ao] = s1
                    if r2 < M:
                        out[r2 * ro + a * ao] = s2
                    if r3 < M:
                        out[r3 * ro + a * ao] = s3
                r += 4 * nrg
            cuda.syncthreads()
            a0 += TW

    @dev
    def block_energy_given(A, M, NS, pair, pairT, neighbours, hopping, bonds, J, projected, up_site, dn_site, up_at,
                     dn_at, F, G, tile, red):
        """(E_kin, E_J, double occupancy) with F and G given, to every thread (``local_energy_given``).

        Reads F's rows at the sites without an up electron and G's columns at the sites a down
        electron may hop to (empty sites; without the projection, every site without a down
        electron); the exchange terms form their G[l, a] (a an up site) as a sum of their own."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        nnb = neighbours.shape[1]
        kinetic = 0.0
        item = t
        while item < NS * 2 * nnb:
            s = item // (2 * nnb)
            rem = item - s * 2 * nnb
            spin = 1 if rem >= nnb else 0
            q = rem - nnb if spin == 1 else rem
            label = up_at[s] if spin == 1 else dn_at[s]
            if label >= 0:
                j = neighbours[s, q]
                same = up_at[j] >= 0 if spin == 1 else dn_at[j] >= 0
                if not (same or (projected and (up_at[j] >= 0 or dn_at[j] >= 0))):
                    if spin == 1:
                        kinetic -= hopping[s, q] * F[j * M + label]
                    else:
                        kinetic -= hopping[s, q] * G[label * NS + j]
            item += T
        exchange = 0.0
        if projected and J != 0.0:  # one warp per bond, its lanes split the sum over c
            lane = t & 31
            nw = T >> 5
            nb = bonds.shape[0]
            e0 = 0
            while e0 < nb:  # the same trip count in every warp (the simulator's group sums hold barriers;
                # on a GPU they are shuffles, and each warp goes through its bonds on its own)
                e = e0 + (t >> 5)
                ok = False
                a = 0
                b = 0
                if e < nb:
                    i = bonds[e, 0]
                    j = bonds[e, 1]
                    if up_at[i] >= 0 and dn_at[j] >= 0:
                        a = i
                        b = j
                        ok = True
                    elif dn_at[i] >= 0 and up_at[j] >= 0:
                        a = j
                        b = i
                        ok = True
                e0 += nw
                if not SIM and not ok:  # the same in all lanes of the warp
                    continue
                h = 0.0
                g = 0.0
                if ok:
                    # h = Σ_c F[b, c] φ(R↑_c, a) and G[l, a] = Σ_c A⁻¹[l, c] φ(R↑_c, a), l = dn_at[b]
                    fb = b * M
                    lb = dn_at[b] * M
                    h0 = 0.0
                    h1 = 0.0
                    g0 = 0.0
                    g1 = 0.0
                    col = lane
                    while col < M:  # four columns per lane and trip, their loads in flight together
                        c1 = min(col + 32, M - 1)
                        c2 = min(col + 64, M - 1)
                        c3 = min(col + 96, M - 1)
                        p0 = pairT[a, up_site[col]]
                        p1 = pairT[a, up_site[c1]] if col + 32 < M else 0.0
                        p2 = pairT[a, up_site[c2]] if col + 64 < M else 0.0
                        p3 = pairT[a, up_site[c3]] if col + 96 < M else 0.0
                        f0 = F[fb + col]
                        f1 = F[fb + c1]
                        f2 = F[fb + c2]
                        f3 = F[fb + c3]
                        h0 += f0 * p0
                        g0 += A[lb + col] * p0
                        h1 += f1 * p1
                        g1 += A[lb + c1] * p1
                        h0 += f2 * p2
                        g0 += A[lb + c2] * p2
                        h1 += f3 * p3
                        g1 += A[lb + c3] * p3
                        col += 128
                    h = h0 + h1
                    g = g0 + g1
                h = group_sum(h, 32, red)
                g = group_sum(g, 32, red)
                if ok and lane == 0:
                    k = up_at[a]  # up electron k: a → b;  down electron l: b → a
                    l = dn_at[b]
                    alk = A[l * M + k]
                    swap = alk * pair[b, a] + F[b * M + k] * g - alk * h
                    exchange -= 0.5 * J * (1.0 + swap)
        double = 0.0
        i = t
        while i < NS:
            if up_at[i] >= 0 and dn_at[i] >= 0:
                double += 1.0
            i += T
        return block_sum3(kinetic, exchange, double, red, 0, True)


    @dev
    def block_energy(A, M, NS, pair, pairT, neighbours, hopping, bonds, J, projected, up_site, dn_site, up_at,
                     dn_at, F, G, tile, red, f_sites, g_sites, counts):
        """(E_kin, E_J, double occupancy) of the configuration, to every thread (``local_energy``).

        Forms only the F rows and G columns that :func:`block_energy_given` reads: their sites are
        listed first (``f_sites``, ``g_sites``: int32 (N_s,), ``counts``: int32 (2,), shared), in any
        order — each entry of F and G is the same sum whichever thread forms it. At L = 15 and x ≈ 0.1
        that is 124 of 226 rows and 22 of 226 columns."""
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        if t == 0:
            counts[0] = 0
            counts[1] = 0
        cuda.syncthreads()
        exchange = projected and J != 0.0
        s = t
        while s < NS:
            if up_at[s] < 0 and (dn_at[s] < 0 or exchange or not projected):
                f_sites[cuda.atomic.add(counts, 0, 1)] = s
            if dn_at[s] < 0 and (up_at[s] < 0 or not projected):
                g_sites[cuda.atomic.add(counts, 1, 1)] = s
            s += T
        cuda.syncthreads()
        nf = counts[0]
        ng = counts[1]
        # G[l, a] = Σ_k A⁻¹[l, k] φ(R↑_k, a);  F[b, c] = Σ_l φ(b, R↓_l) A⁻¹[l, c] (formed as Fᵀ)
        gather_product(A, M, M, 1, pair, up_site, G, NS, 1, tile, g_sites, ng, True)
        gather_product(A, M, 1, M, pairT, dn_site, F, 1, M, tile, f_sites, nf, True)  # ends with a barrier
        return block_energy_given(A, M, NS, pair, pairT, neighbours, hopping, bonds, J, projected, up_site, dn_site,
                                  up_at, dn_at, F, G, tile, red)
    return {**ns, **{name: value for name, value in locals().items() if name != "ns"}}
