"""Markov chains of the projected RVB state (study 000) on a GPU: the twin of :mod:`.lattice_chains`.

The kernel follows :func:`qmckit.backends.lattice_chains.run_chains` proposal for proposal: the same
random numbers from each chain's xoroshiro128+ stream (:mod:`qmckit.rng`, compiled for the device by
:mod:`qmckit.backends.cuda_rng`) in the same order (a uniform for the electron, uniforms for the target
site until it has no electron of the same spin, one uniform for the decision, drawn even when R² ≥ 1),
the same swap rule (the Sherman–Morrison step with the larger first ratio goes first; both below 1e-8:
rebuild A⁻¹ instead), the periodic refresh at the same sweeps (every ``refresh_every`` sweeps of a call and
after its last sweep, recording max |A⁻¹_old − A⁻¹_new| / max |A⁻¹_new|: on the CPU a Gauss–Jordan rebuild, on a
GPU one Newton–Schulz step against the matrix built afresh, :func:`refine` below — either gives the current
configuration's inverse to rounding), the same counters and the same measurement after every measured sweep.
Same start state and streams therefore give the CPU's chain: identical decisions, configurations and
streams, A⁻¹ and energies to round-off (block reductions and FMA contraction sum in another order than
the CPU).

GPU design (study 000 §4, on today's hardware)

* one thread block per chain; the block has T = T_P·M threads rounded up to a multiple of 32 (T_P
  "threads per column", study 000's 4, or 2 for M ≥ 64: :func:`default_threads_per_column`; M = N_p + ghost
  the matrix side); ``bfactor`` must divide 32 (so its groups sit inside warps): by default the largest that
  covers every row of A⁻¹ in one pass (:func:`default_bfactor`: 4 at L = 5 and 9, 2 at L = 15; study 000 used
  8 and 16);
* A⁻¹ (M×M float64, rows = down labels, columns = up labels), the site lists and occupations live in
  SHARED memory for the whole launch (107 KB per block at L = 15 with the work vectors, the
  measurement tile and its site lists: above 48 KB the kernel's dynamic shared memory limit is raised, as in
  :mod:`.helium_chains`); the pair matrix and its transpose stay in global memory (read-only, shared
  by every chain; the transpose gives row-wise reads for down electrons, as the thesis's TPairfunc);
* a persistent loop over sweeps and proposals in one launch (equilibration: ``measure=False``;
  accumulation: ``measure=True``). Every thread draws the same random numbers from its own copy of
  the chain's stream and takes the same decisions (each reduced value reaches every thread, summed in
  the same order), so a proposal needs no barrier of its own (the thesis's thread 0 proposes, then
  a barrier); thread 0 alone writes the configuration and the counters;
* ratios: the φ values a move needs are first gathered into shared memory in one parallel step
  (one global-memory latency, one barrier), then the block forms its dot products from shared memory
  and reduces them (warp shuffles, one slot per warp; the ratio sums alternate between two slot
  regions, so they need one barrier, not two). On acceptance the Sherman–Morrison update: an up move
  changes the columns of A⁻¹ — T_P threads per column form f_c = Σ_l φ(b, R↓_l) A⁻¹[l, c] and update
  their column; a down move changes the rows — ``bfactor`` consecutive threads per row form
  g_r = Σ_k A⁻¹[r, k] φ(R↑_k, b) and update their row (study 000 §4.4);
* a swap ratio is the streamlined O(M²) formula of ``ratio_swap`` (no write to A⁻¹) as one block
  reduction of three sums (f_k, Σ_c A⁻¹[l,c] φ(R↑_c, a), Σ_{c≠k} f_c φ(R↑_c, a)); an accepted swap is
  two Sherman–Morrison steps in the CPU's order (their first ratios come out of those sums, the
  column sums f_c of the up step too);
* proposals in batches of 8 (``batch=8``, the default; ``batch=1`` is the one-at-a-time path above):
  until a proposal is accepted the configuration stays, so 8 consecutive proposals of the CPU's stream
  can be evaluated against one A⁻¹, and the first accepted one ends the batch with the stream set back
  to just after its decision — the same Markov chain, proposal for proposal (the twins stay identical).
  A warp draws a batch in parallel (``parse_batch``: lane i makes draw i of the next 32 — lanes 16–31 start 16
  draws on by a GF(2) jump of the generator's state, :func:`qmckit.rng.jump_masks`, so that no lane steps more
  than 16 times —, ballots give every draw's occupations as a target, and the proposals are parsed from the bit
  masks in the CPU's order); lane s works out proposal s and the block gathers its rows P_s = φ(xs, R↓) and
  W_s = φ(R↑, ys) into shared memory (one barrier). ``batch_sums`` then forms F = P·A⁻¹ (8 × M) on the float64
  tensor cores (PTX ``mma.sync.m8n8k4.f64``, inline assembly: ``_dmma``) with z_s = Σ_{c≠k} F[s, c] W_s[c] and
  y_s = Σ_c A⁻¹[row_s, c] W_s[c], from which every swap and hop ratio follows as in the one-at-a-time path (one
  barrier); lane s decides proposal s and a ballot finds the first accepted one. An accepted up step takes F's
  row as its column sums. At L = 15, x ≈ 0.1 (acceptance 6.5 %) a batch covers about 6.4 proposals;
* ``swap_update="rank2"`` (the default; kernels ``run_chains*_rank2``; ``"sequential"``: the CPU's two
  steps, kernels without the suffix): an accepted swap's two steps as one rank-2 pass
  A⁻¹ ← A⁻¹ − X Yᵀ − Z Wᵀ (``swap_rank2``), its vectors from the proposal's F row, W row and z sum and
  one matrix–vector product A⁻¹W — one read of A⁻¹ and one read-write pass against two read-write
  passes, a read and a gather; the same algebra in the same order of steps, so the chain stays the CPU's
  (to rounding: decisions identical in every simulator twin). A swap whose single steps are both singular
  takes the order-free (Woodbury) form of the same update instead of a rebuild, so these kernels inline
  the Gauss–Jordan elimination once (the refresh's fallback);
* the periodic refresh (:func:`refine`) is one Newton–Schulz step X ← X + X·R, R = 1 − Φ·X, with Φ gathered
  afresh from the configuration: Φ·X on the tensor cores by 8 rows of Φ, R in per-chain global scratch,
  X·R by warp and lane; its error is the square of the drift (~1e-9 → ~1e-18, below rounding) and it costs
  0.9 % of Table 6.2's run at L = 15 where 103 Gauss–Jordan steps with a barrier each cost 3.2 %
  (lattice_chains_h100v12 and h100v9, stage ``norefresh``). Where max |R| > :data:`REFINE_LIMIT`, for
  M > 128 and in the simulator, and for a swap whose two single steps are both singular (two-step swaps),
  the refresh is an in-block Gauss–Jordan elimination with partial pivoting, in place in shared memory
  (rows by warp, columns by lane; row interchanges undone as column interchanges at the end; the previous
  A⁻¹ kept in per-chain global scratch for the drift);
* a measurement forms the parts of G = A⁻¹ Φ(R↑, sites) (M × N_s) and F = Φ(sites, R↓) A⁻¹
  (N_s × M) that ``local_energy`` reads, in per-chain global scratch: F's rows at the sites without an
  up electron, G's columns at the empty sites (listed first, in shared memory; 124 of 226 rows and 22
  of 226 columns at L = 15, x ≈ 0.1) — the Φ rows are gathered into a shared tile 16 sites at a time,
  then multiplied with A⁻¹ on the tensor cores (``tile_product_mma``; the simulator: each thread forms
  4 rows of a column) — then the hop terms (one per thread) and the exchange terms (one warp per
  bond, its lanes splitting the sums over c, G[l, a] among them; on a GPU each warp skips the bonds
  without an up–down pair) of ``local_energy`` (same formulas), reduced over the block;
* measurements on the other SMs (``measure_on="grid"``, the default): a measured sweep writes a snapshot
  (A⁻¹ and the sites, :func:`snapshot_doubles`) to global memory instead of measuring, and
  ``measure_snapshots_gpu`` measures the snapshots with the same device functions, one block per snapshot,
  on a second stream while the chain kernel runs the next chunk of sweeps (:meth:`CudaChains._launch_measured`:
  chunks of sweeps sized to two snapshot buffers of :data:`SNAPSHOT_BUFFER_BYTES`, 372 sweeps at L = 15 for
  32 chains — each launch ends when its slowest chain does, so longer chunks waste less; the refresh schedule
  counts the call's sweeps, not the launch's). 32 chains leave 100 of an H100's 132 SMs to the
  measurements; ``measure_on="chain"`` measures in the chain's own block, as the thesis does;
* thread 0 counts its clock cycles by phase (:data:`CYCLE_PHASES`: draws, batch sums, decisions,
  updates, rebuilds, measurements; :meth:`CudaChains.cycle_counts`), barrier waits included — where
  a chain's time goes, measured in every launch at the cost of a few instructions per batch — and,
  in a kernel of its own (``cycle_details``), the draws' parse and derive parts (:data:`CYCLE_DETAILS`);
* every exchange of data between threads crosses a ``syncthreads`` barrier or is a ``*_sync`` warp
  shuffle with the full mask at a point all 32 lanes reach (no warp-synchronous code: correct on
  Volta and later). The CUDA simulator has no shuffles: there the block and group sums are
  shared-memory trees with barriers (always two per block sum);
* the kernel wants more registers than a thread may have: up to 8 warps per block may use 255
  (:func:`default_max_registers`: each scheduler holds the registers of its own warps) and then nothing
  spills (ptxas for sm_90; at the former 232-register cap of a 224-thread block the kernel with the refresh
  spilled 132 B and ran 8 % slower, 2.889 against 2.663 s); larger blocks get a lower cap
  (``max_registers``, one compiled kernel per cap), lowered further until the compiled kernel takes the
  block. Its counters are kept in shared memory: in registers, the H100 build capped at 128
  registers lost the count of proposed swaps (everything else identical);
* float64 throughout (the acceptance test too).

Measured on an H100 (benchmarks/results/lattice_chains_h100v15_2026-11-26.md: 32 chains, 5000 + 5000
sweeps, refresh every 100 sweeps): L = 5, 9, 15 in 0.39, 0.80 and 2.36 s with batches of 8, rank-2 swap
updates, the proposals parsed in parallel with the 16-draw jump, one-pass down updates, the Newton–Schulz
refresh and the measurements on the other SMs; 0.41, 0.83 and 2.52 s with the CPU's two-step swaps and
0.43, 1.29 and 5.10 s one proposal at a time, in the same run (Tesla M2070, bfactor 8: 3.19, 17.37, 309.72
s; the kernel before batches, lattice_chains_h100v4_2026-11-23: 0.51, 1.40, 6.05 s; h100v12, every lane
stepping through 32 draws: 0.42, 0.86, 2.51 s). Where a sweep's 246 µs go at L = 15 (stage ``phases``,
thread 0's cycles): draws 134k (of which the warp's parse of 32 draws 69k, 92k without the jump, and the
proposals' records 41k), batch sums 178k, decisions 42k, updates 89k, refreshes 3k, snapshots 2k cycles.
The block is latency-bound: at 224 threads (7 warps) an instruction issues every ~5–6 cycles per warp
(Nsight Compute; lattice_ncu_rank2_h100_2026-11-26 splits the stall samples by phase), and ptxas loads each
tensor-core operand just before its step (loading them a trip ahead made the products 9 % faster but the
spills slowed the other phases as much: lattice_pipelined_attempt_h200_2026-11-26, a kernel that spilled);
moving work between warps did not help (lattice_tuning_h100_2026-11-26: a batch parsed ahead by the warp
with one tile fewer, one warp parsing while the others wait, four accumulator chains per tile — all
slower), shortening the chains of dependent steps did (the parse's jump, the refresh's paired tiles);
throughput rises 3.5× from 32 to 132 chains.
``QMCKIT_CUDA_LINEINFO=1`` compiles with source line information for profilers.

The tracked algorithm (``CudaChains(..., algorithm="tracked")``, kernel ``run_chains_tracked_gpu``, the
twin of :func:`qmckit.backends.lattice_chains.run_chains_tracked`): the hop ratios F = Φ(sites, R↓) A⁻¹
(N_s × M) and G = A⁻¹ Φ(R↑, sites) (M × N_s) are kept up to date in per-chain global scratch (L2
resident), A⁻¹ stays in shared memory. A hop ratio is one element of F or G; a swap ratio is
``two_electron_ratio``, its O(M) sum formed by every warp on its own (lanes split the sum, an xor
butterfly leaves the same value in every lane of every warp), so proposals need no barrier and warps run
ahead independently through rejected proposals. The block joins only on an accepted move — a read-only
stage of the update vectors recomputed from A⁻¹ (for an up move k → b: f = Φ(b, R↓) A⁻¹, whose f_k is
the ratio R, A⁻¹[:, k] and F[:, k] = Φ(sites, R↓) A⁻¹[:, k]; a barrier; then φ(b, s) − Σ_c f_c φ(R↑_c, s);
the transposed set for a down move; tracking the vectors that are divided by R instead is unstable:
O(1) drift within tens of sweeps at L = 15), a barrier, the rank-1 updates of A⁻¹, F and G by all
threads (rows by warp, four columns per lane in flight) with thread 0's configuration writes, a
barrier — and for rebuilds (Gauss–Jordan as above, then F and G from scratch with the measurement's
tile product) and measurements (``block_energy`` with F, G given). An accepted swap is two such steps
in the thesis order (the intermediate is the doubly occupied site).

``counts`` (W, 5) and ``drift`` (W,) are host arrays, updated after every :meth:`CudaChains.sweep`
from the launch's own counts (each launch starts from zero on the device), so code may zero or set
them in place between sweeps (:class:`qmckit.methods.lattice_vmc.LatticeRun` does).

Importing this module never needs CUDA: ``numba.cuda`` is imported on first use, and
:func:`available` is False (never raising) without a usable GPU.
"""
from __future__ import annotations

import functools
import itertools
import os
import types

import numpy as np

from . import lattice_chains
from .lattice_chains import N_COUNTERS, REFRESH_EVERY, SINGULAR_RATIO
from . import cuda_import
from .cuda_import import available, simulated  # noqa: F401  (this module's GPU questions, answered once)
from .. import rng

cuda = None  # numba.cuda, imported on first use

STATE_KEYS = ("up_site", "dn_site", "up_at", "dn_at", "ainv")
GROUP_SIZES = (1, 2, 4, 8, 16, 32)  # T_P and bfactor: divisors of a warp
SHARED_LIMIT_BYTES = 227 * 1024  # the H100's largest dynamic shared memory per block (opt-in)
DEFAULT_SHARED_BYTES = 48 * 1024  # what a block may use without opting in


def default_threads_per_column(size: int) -> int:
    """T_P of :class:`CudaChains` for a matrix side M = ``size``: study 000's 4, but 2 from M = 64 on.

    On an H100 (benchmarks/results/lattice_chains_h100v3_2026-11-23.md) T_P = 2 is faster at L = 15
    (M = 103) since the partial sums take eight terms per trip, and 4 at L = 5 and 9 (M = 13, 38),
    where fewer threads leave too little to do in parallel.
    """
    return 4 if size < 64 else 2


def _cuda():
    return cuda_import.bind(globals())


def default_batch(size: int) -> int:
    """Proposals evaluated together (:class:`CudaChains`'s ``batch``) for a matrix side M = ``size``: 8 at
    every size measured (an H100, lattice_chains_h100v15_2026-11-26: L = 5, 9, 15 in 0.39, 0.80, 2.36 s with 8
    against 0.43, 1.29, 5.10 s one at a time, the same build)."""
    return BATCH


def default_bfactor(size: int, threads_per_column: int) -> int:
    """bfactor of :class:`CudaChains` (threads per row of A⁻¹ in the down updates) for a matrix side M =
    ``size``: the largest of :data:`GROUP_SIZES` with which the block's threads cover every row at once
    (threads / bfactor ≥ M), 1 if none. Study 000 used 8 and 16; on an H100 the one-pass layouts are faster
    (lattice_tuning_h100_2026-11-26, the full Table 6.2 workload: L = 15 with T_P = 2 in 2.61, 2.55, 2.50,
    2.50 s at bfactor 8, 4, 2, 1; L = 9 in 0.868, 0.843, 0.846, 0.856 s; L = 5 in 0.42, 0.41, 0.41, 0.40 s)."""
    threads = block_threads(size, threads_per_column, 1)
    fits = [b for b in GROUP_SIZES if threads // b >= size]
    return max(fits) if fits else 1


def block_threads(size: int, threads_per_column: int = 4, bfactor: int = 8) -> int:
    """Threads per block: T_P·M rounded up to a multiple of 32 (and of ``bfactor``)."""
    step = int(np.lcm(32, bfactor))
    return -(-threads_per_column * size // step) * step


def reduction_doubles(threads: int) -> int:
    """Shared float64 slots of the block reductions: three values per warp in three regions (the main one
    and two that the proposals' ratio sums alternate between, so that those need one barrier, not two);
    the simulator's tree reductions use three values per thread."""
    return 3 * threads if simulated() else 3 * 96


def reduction_ints(threads: int) -> int:
    return threads if simulated() else 32


# the largest max |1 − Φ·A⁻¹| that the periodic refresh corrects by one Newton–Schulz step (the error left is
# about its square); beyond it, Gauss–Jordan from scratch
REFINE_LIMIT = 1e-6
TILE = 16  # columns of a measurement tile (Φ rows gathered into shared memory)
BATCH = 8  # proposals evaluated together against one A⁻¹ (the m = 8 rows of a float64 tensor-core tile)
# draws a lane of the batch parse steps the generator through (G); the lanes' starts G, 2G, … draws on come by
# GF(2) jumps (parse_jumps). An H100, the full Table 6.2 workload, one machine (lattice_tuning_h100_2026-11-26):
# L = 15 in 2.41 s with G = 16, 2.43 s with 8, 2.50 s with 32 (no jump); L = 9 in 0.81, 0.81, 0.86 s; L = 5
# in 0.40, 0.40, 0.42 s
PARSE_GROUP = 16
BATCH_DOUBLES = 6  # per proposal: decision uniform, A⁻¹[l, k], φ(b, a), φ(a, a), F[s, col_s], y_s
BATCH_INTS = 9  # per proposal: kind, label, target, k, l, a, b, col_s, row_s
# the phases of a chain whose clock cycles (thread 0's, barriers included) a launch adds up
CYCLE_PHASES = ("draws", "batch sums", "decisions", "updates", "rebuilds", "measurements")
# parts of a batch's "draws" that thread 0 also counts in the *_details kernels (CudaChains(cycle_details=True)):
# the warp's parse of 32 draws, then the proposals' records and the shuffles of their sites (derive); the rest
# of "draws" is the gathers and the barrier
CYCLE_DETAILS = ("draws: parse", "draws: derive")
CYCLE_SLOTS = len(CYCLE_PHASES) + len(CYCLE_DETAILS)


def parse_jumps() -> np.ndarray:
    """(32 / :data:`PARSE_GROUP` − 1, 128, 2) uint64: :func:`qmckit.rng.jump_masks` of G, 2G, … draws, for the
    lanes of ``parse_batch`` (G = 32: none; an empty first axis is given one unused row for the launch)."""
    steps = range(PARSE_GROUP, 32, PARSE_GROUP)
    return np.stack([rng.jump_masks(n) for n in steps] or [np.zeros((128, 2), np.uint64)])


def batch_stride(size: int) -> int:
    """Row stride of a batch's staged vectors in shared memory: M rounded up to a multiple of 4 (the k
    of a tensor-core step; the padding stays zero) and then to 4 mod 16, so that the 8 rows × 4
    columns a warp reads for one step fall on distinct bank pairs (two wavefronts, the least for 256 B)."""
    m4 = -(-size // 4) * 4
    return m4 + ((4 - m4) & 15)


def batch_slots(threads: int) -> int:
    """Partial-sum slots per proposal of a batch's block reduction: one per warp (the simulator: one)."""
    return 1 if simulated() else max(threads // 32, 1)


def shared_bytes(size: int, n_sites: int, threads: int, details: bool = False) -> int:
    """Dynamic shared memory of one block: A⁻¹ (M²), four vectors (M), a measurement tile (16·M), the
    reduction slots, the counters and cycle counts, a proposal batch's staged vectors and F rows (3 × 8 rows of
    :func:`batch_stride`) and its per-proposal numbers and partial sums in two alternating buffers
    (float64), then the site lists, occupations, pivots, permutation and argmax indices, the
    measurement's two site lists and their counts, and the batch's per-proposal integers (two buffers,
    int32). ``details``: the *_details kernel's two more cycle counts."""
    batch = 3 * BATCH * batch_stride(size) + 2 * BATCH * (BATCH_DOUBLES + batch_slots(threads))
    cycles = CYCLE_SLOTS if details else len(CYCLE_PHASES)  # the *_details kernels count the draws' parts too
    doubles = size * size + 4 * size + TILE * size + reduction_doubles(threads) + N_COUNTERS + cycles + batch
    ints = 4 * size + 2 * n_sites + reduction_ints(threads) + 2 * n_sites + 2 + 2 * BATCH * BATCH_INTS
    return 8 * doubles + 4 * ints


def shared_bytes_tracked(size: int, n_sites: int, threads: int) -> int:
    """Dynamic shared memory of one block of the tracked kernel: A⁻¹ (M²), two vectors (M), two site
    vectors (N_s), the tile (16·M), the reduction slots and counters (float64), then the int32 arrays of
    :func:`shared_bytes`."""
    doubles = size * size + 2 * size + 2 * n_sites + TILE * size + reduction_doubles(threads) + N_COUNTERS
    ints = 4 * size + 2 * n_sites + reduction_ints(threads)
    return 8 * doubles + 4 * ints


def snapshot_doubles(size: int, n_sites: int) -> int:
    """Float64 values of one measurement snapshot: A⁻¹ (M²), up_site and dn_site (M each), up_at and dn_at
    (N_s each; the sites as float64, exact)."""
    return size * size + 2 * size + 2 * n_sites


def measure_shared_bytes(size: int, n_sites: int, threads: int) -> int:
    """Dynamic shared memory of one block of ``measure_snapshots_gpu``: A⁻¹, a measurement tile and the
    reduction slots (float64), then the sites, occupations, the two site lists and their counts (int32)."""
    return 8 * (size * size + TILE * size + reduction_doubles(threads)) + 4 * (2 * size + 4 * n_sites + 2)


# per buffer of measurement snapshots (two alternate), at most 1/16 of the device's memory: it sets the sweeps per
# chain launch, and every launch ends when its slowest chain does (an H100, L = 15, 32 chains, 5000 measured
# sweeps: 1.295 s with 256 MiB, 93 sweeps a launch; 1.260 s with 1 GiB, 372; 1.26 s with 2 and 4 GiB)
SNAPSHOT_BUFFER_BYTES = 2 ** 30
MEASURE_THREADS = 224  # at most, per block of measure_snapshots_gpu (uncapped registers: 224 × 255 fit an SM)
MEASURE_PLACES = ("grid", "chain")

ALGORITHMS = ("thesis", "tracked")
SWAP_UPDATES = ("sequential", "rank2")  # an accepted swap: two Sherman–Morrison steps, or one rank-2 pass
KERNEL_NAMES = {"thesis": "run_chains", "tracked": "run_chains_tracked"}
# the thesis kernel's variants, named run_chains[_grid][_rank2][_details]: flag → (closure constant, value)
VARIANT_FLAGS = {
    "grid": ("MEASURE_IN_BLOCK", False),  # measure_on="grid": no in-block measurement (232 B of spills against
    # 296 at the 232-register cap, ptxas for sm_90)
    "rank2": ("RANK2_SWAPS", True),  # swap_update="rank2": an accepted swap in one pass (swap_rank2), no in-swap
    # rebuild (0 B of spills at the 232 cap)
    "details": ("DRAW_DETAILS", True),  # cycle_details=True: thread 0 also counts the draws' parts (CYCLE_DETAILS)
}


def default_max_registers(threads: int) -> int:
    """The registers per thread that let a block of ``threads`` launch: each of an SM's four schedulers has a
    quarter of the 64 K registers for the warps it holds (warp w on scheduler w mod 4), so ⌈warps / 4⌉ warps
    share 16 K: 512 / ⌈warps / 4⌉, a multiple of 8, at most 255 (measured on an H100: 416 threads, four
    warps on a scheduler, launch with 128 and not with 144; 224 threads launch with 255).
    :class:`CudaChains` lowers it further when the compiled kernel says it cannot take the block
    (``max_threads_per_block``)."""
    per_scheduler = -(-max(threads, 32) // 128)
    return int(max(32, min(255, (512 // per_scheduler) // 8 * 8)))


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


@functools.lru_cache(maxsize=None)
def kernels(max_registers: int = 255) -> dict:
    """The chain kernel, compiled lazily, one per register cap (``max_registers`` per thread)."""
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

    # --- the chain kernel ------------------------------------------------------------------------
    options = {} if SIM else {"max_registers": int(max_registers)}
    if not SIM and os.environ.get("QMCKIT_CUDA_LINEINFO"):  # source lines for profilers (Nsight Compute)
        options["lineinfo"] = True

    # closure constants, replaced in the kernel variants (see `variant` below)
    MEASURE_IN_BLOCK = True  # *_grid: False
    RANK2_SWAPS = False  # *_rank2: True
    DRAW_DETAILS = False  # *_details: True

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
                if t == 0:
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
                    if t == 0:
                        c1 = clock64()
                        cyc[0] += float(c1 - c0)
                        c0 = c1
                    batch_sums(A, M, Pm, Wm, Fb, LD, bints[bi0:bi0 + NB * BI], bdbs[bd0:bd0 + NB * BD],
                               zps[z0:z0 + NB * NZ])
                    if t == 0:
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
                    if t == 0:
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
                if t == 0:
                    cyc[3] += float(clock64() - c0)
            if t == 0:
                c0 = clock64()
            done_sweeps = sweep0 + sweep + 1  # of the whole call (a call may come in several launches)
            if refresh_every > 0 and (done_sweeps % refresh_every == 0 or done_sweeps == total_sweeps):
                d = refine(A, M, pair, up_site, dn_site, old, tmp, Pm, LD, vec, cpy, tile, perm, sigma, red, redi)
                dmax = max(dmax, d)
                if t == 0:
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
                if t == 0:
                    cyc[5] += float(clock64() - c0)
            elif measure and MEASURE_IN_BLOCK:
                kinetic, exchange, double = block_energy(A, M, NS, pair, pairT, neighbours, hopping, bonds, J,
                                                         projected, up_site, dn_site, up_at, dn_at, F, G, tile, red,
                                                         f_sites, g_sites, n_listed)
                if t == 0:
                    energies[w, sweep, 0] = kinetic
                    energies[w, sweep, 1] = exchange
                    energies[w, sweep, 2] = double
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


_SHARED_OPTED: dict = {}  # id(specialised kernel) → the dynamic shared bytes it may use


def _compiled(spec):
    return next(iter(spec.overloads.values()))


def _launcher(args, nbytes: int, max_registers: int = 255, name: str = "run_chains"):
    """The kernel for ``args``: on a GPU, its specialisation for these argument types (compiled once
    per process) allowed ``nbytes`` of dynamic shared memory. Beyond 48 KB CUDA wants the kernel's
    MAX_DYNAMIC_SHARED_SIZE_BYTES raised; numba-cuda has no public call for it, so it is set through
    its driver binding (as :func:`qmckit.backends.helium_chains._opt_in_shared`), and only ever raised,
    so that chains of another size launched later still fit."""
    kernel = kernels(int(max_registers))[name]
    if simulated():
        return kernel
    spec = kernel.specialize(*args)
    if nbytes > _SHARED_OPTED.get(id(spec), DEFAULT_SHARED_BYTES):
        from numba.cuda.cudadrv import driver as drv

        cufunc = _compiled(spec)._codelibrary.get_cufunc()
        attr = drv.binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        drv.driver.cuKernelSetAttribute(attr, int(nbytes), cufunc.handle, cufunc.device.id)
        _SHARED_OPTED[id(spec)] = int(nbytes)
    return spec


class CudaChains:
    """W Markov chains of a :class:`~qmckit.systems.lattice_rvb.LatticeRVB` state on the GPU, one
    thread block per chain; the interface of :class:`~qmckit.backends.lattice_chains.CpuChains`.

    ``state``: the chain arrays of :meth:`LatticeRVB.random_configurations`; ``states`` (W, 2) uint64
    streams; ``threads_per_column`` (T_P) and ``bfactor``: the thread layouts of the column (up) and
    row (down) updates, each in {1, 2, 4, 8, 16, 32} (defaults :func:`default_threads_per_column` and
    :func:`default_bfactor`); ``max_registers`` per thread (default
    :func:`default_max_registers` of the block size; each value compiles its own kernel); ``algorithm``:
    "thesis" (default, the kernel of the module docstring) or "tracked" (F and G kept up to date in
    global scratch between moves: ``run_chains_tracked_gpu``, the twin of
    :func:`~qmckit.backends.lattice_chains.run_chains_tracked`); ``batch``: proposals evaluated together
    by the thesis kernel, 8 (default, :func:`default_batch`) or 1 (one at a time; see the module docstring);
    ``measure_on``: "grid" (default: measured sweeps leave snapshots that a second kernel measures on the
    other SMs) or "chain" (the chain's block measures, between its sweeps); the tracked kernel always
    measures in its own block. ``swap_update``: an accepted swap updates A⁻¹ in one rank-2 pass from the
    proposal's numbers ("rank2", the thesis kernel's default: the same algebra as the CPU's, another
    rounding; a singular swap by the order-free form where the CPU rebuilds; 8 % faster at L = 15 on an
    H100, lattice_chains_h100v12) or by two Sherman–Morrison steps as the CPU ("sequential", the tracked
    kernel's only form). ``cycle_details``: thread 0 also counts the parts of the draws
    (:data:`CYCLE_DETAILS`; a kernel of its own, so that the timed kernel is not changed by the extra
    clock reads).
    """

    backend = "cuda"

    def __init__(self, system, state: dict, states: np.ndarray, moves_per_sweep: int | None = None,
                 refresh_every: int = REFRESH_EVERY, threads_per_column: int | None = None, bfactor: int | None = None,
                 max_registers: int | None = None, algorithm: str = "thesis", batch: int | None = None,
                 measure_on: str = "grid", swap_update: str | None = None, cycle_details: bool = False):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
        self.algorithm = algorithm
        if measure_on not in MEASURE_PLACES:
            raise ValueError(f"measure_on must be one of {', '.join(MEASURE_PLACES)}, got {measure_on!r}")
        self.measure_on = measure_on if algorithm == "thesis" else "chain"
        self._kernel_name = "run_chains_grid" if self.measure_on == "grid" else KERNEL_NAMES[algorithm]
        if swap_update is None:
            swap_update = "rank2" if algorithm == "thesis" else "sequential"
        if swap_update not in SWAP_UPDATES:
            raise ValueError(f"swap_update must be one of {', '.join(SWAP_UPDATES)}, got {swap_update!r}")
        if swap_update == "rank2" and algorithm != "thesis":
            raise ValueError("swap_update='rank2' is a form of the thesis kernel; the tracked one takes 'sequential'")
        self.swap_update = swap_update
        if swap_update == "rank2":
            self._kernel_name += "_rank2"
        self.cycle_details = bool(cycle_details)
        if self.cycle_details:
            if algorithm != "thesis":
                raise ValueError("cycle_details=True needs the thesis kernel")
            self._kernel_name += "_details"
        if batch is None:
            batch = default_batch(system.size)
        if isinstance(batch, bool) or batch not in (1, BATCH):
            raise ValueError(f"batch must be 1 or {BATCH}, got {batch!r}")
        self.batch = int(batch)
        if threads_per_column is None:
            threads_per_column = default_threads_per_column(system.size)
        if bfactor is None and threads_per_column in GROUP_SIZES:
            bfactor = default_bfactor(system.size, threads_per_column)
        for name, value in (("threads_per_column", threads_per_column), ("bfactor", bfactor)):
            if isinstance(value, bool) or value not in GROUP_SIZES:
                raise ValueError(f"{name} must be one of {', '.join(map(str, GROUP_SIZES))}, got {value!r}")
        self.system = system
        self.moves_per_sweep = int(moves_per_sweep or system.n_electrons)
        self.refresh_every = int(refresh_every)
        self.threads_per_column = int(threads_per_column)
        self.bfactor = int(bfactor)
        m, n = system.size, system.n_sites
        self.threads = block_threads(m, self.threads_per_column, self.bfactor)
        if self.threads > 1024:
            raise ValueError(f"threads_per_column: {threads_per_column}·M = {threads_per_column * m} needs "
                             f"{self.threads} threads per block (> 1024); use a smaller T_P")
        self._auto_registers = max_registers is None
        self.max_registers = int(max_registers or default_max_registers(self.threads))
        self._registers_checked = simulated()
        if not 32 <= self.max_registers <= 255 or self.max_registers * self.threads > 65536:
            raise ValueError(f"max_registers must be in [32, 255] with max_registers·threads ≤ 65536, got "
                             f"{max_registers!r} for {self.threads} threads")
        self.shared_bytes = (shared_bytes_tracked(m, n, self.threads) if algorithm == "tracked"
                             else shared_bytes(m, n, self.threads, cycle_details))
        if self.shared_bytes > SHARED_LIMIT_BYTES:
            raise ValueError(f"A⁻¹ of side {m} needs {self.shared_bytes} B of shared memory per block "
                             f"(> {SHARED_LIMIT_BYTES} B)")
        c = _cuda()
        states = np.ascontiguousarray(states, dtype=np.uint64)
        w = states.shape[0]
        self._n_chains = w
        pair = np.ascontiguousarray(system.pair, dtype=np.float64)
        cl = system.cluster
        self._consts = (c.to_device(pair), c.to_device(np.ascontiguousarray(pair.T)),
                        c.to_device(np.ascontiguousarray(cl.neighbours, dtype=np.int64)),
                        c.to_device(np.ascontiguousarray(cl.hopping, dtype=np.float64)),
                        c.to_device(np.ascontiguousarray(cl.bonds, dtype=np.int64)),
                        float(system.params.J), bool(system.projected), int(system.n_pairs))
        shapes = {"up_site": (w, m), "dn_site": (w, m), "up_at": (w, n), "dn_at": (w, n), "ainv": (w, m, m)}
        self._state = {}
        for key in STATE_KEYS:
            host = np.ascontiguousarray(state[key], dtype=np.float64 if key == "ainv" else np.int64)
            if host.shape != shapes[key]:
                raise ValueError(f"state[{key!r}] has shape {host.shape}, expected {shapes[key]}")
            self._state[key] = c.to_device(host)
        self._states = c.to_device(states)
        self._scratch = c.device_array((w, 2, m * m), dtype=np.float64)
        self._F = c.device_array((w, n * m), dtype=np.float64)
        self._G = c.device_array((w, m * n), dtype=np.float64)
        self._no_energies = c.device_array((w, 1, 3), dtype=np.float64)
        self._cycles = c.to_device(np.zeros((w, CYCLE_SLOTS)))
        self._jumps = c.to_device(parse_jumps())
        self._no_snaps = c.device_array((0, snapshot_doubles(m, n)), dtype=np.float64)
        self._snaps = None  # two buffers of snapshots, their streams and the measuring blocks' F, G scratch
        self.snapshot_buffer_bytes = SNAPSHOT_BUFFER_BYTES  # sets the chunk of sweeps per chain launch
        self.counts = np.zeros((w, N_COUNTERS), dtype=np.int64)
        self.drift = np.zeros(w)

    @property
    def n_chains(self) -> int:
        return self._n_chains

    @property
    def states(self) -> np.ndarray:
        """A host copy of the (W, 2) random streams."""
        return self.states_to_host()

    def _args(self, n_sweeps, moves, measure, refresh, energies, counts, drift, snaps=None, sweep0=0, total=None):
        s = self._state
        thesis = (self.batch, self._cycles, self._no_snaps if snaps is None else snaps, int(sweep0),
                  int(n_sweeps if total is None else total), self._jumps)
        return (*self._consts, s["up_site"], s["dn_site"], s["up_at"], s["dn_at"], s["ainv"], self._states,
                int(n_sweeps), int(moves), bool(measure), int(refresh), energies, counts, drift, self._scratch,
                self._F, self._G, self.threads_per_column, self.bfactor,
                *(thesis if self.algorithm == "thesis" else ()))

    def _kernel(self, args):
        """The launcher for ``args``; on first use on a GPU, checks that the compiled kernel takes a block of
        ``threads`` and, with the default register cap, lowers the cap (in steps of 16) until it does."""
        while True:
            spec = _launcher(args, self.shared_bytes, self.max_registers, self._kernel_name)
            if self._registers_checked:
                return spec
            fits = _compiled(spec).max_threads_per_block >= self.threads
            if fits:
                self._registers_checked = True
                return spec
            if not self._auto_registers or self.max_registers <= 32:
                raise ValueError(f"max_registers {self.max_registers}: the kernel cannot launch {self.threads} "
                                 f"threads per block (it takes {_compiled(spec).max_threads_per_block})")
            self.max_registers = max(32, self.max_registers - 16)

    def kernel_info(self) -> dict:
        """Launch configuration: threads per block, dynamic shared bytes, registers per thread (GPU only)."""
        info = {"algorithm": self.algorithm, "batch": self.batch, "parse_group": PARSE_GROUP,
                "swap_update": self.swap_update,
                "cycle_details": self.cycle_details, "threads": self.threads,
                "shared_bytes": self.shared_bytes,
                "threads_per_column": self.threads_per_column, "bfactor": self.bfactor,
                "max_registers": self.max_registers, "registers": None}
        if not simulated():
            c = _cuda()
            args = self._args(1, 0, False, 0, self._no_energies, c.device_array((self._n_chains, N_COUNTERS), np.int64),
                              c.device_array(self._n_chains))
            spec = self._kernel(args)
            info["max_registers"] = self.max_registers
            info["registers"] = int(spec.get_regs_per_thread())
            info["max_threads_per_block"] = int(_compiled(spec).max_threads_per_block)
        return info

    def launch(self, n_sweeps: int, measure: bool = True, moves_per_sweep: int | None = None,
               refresh_every: int | None = None):
        """Launch the kernel (asynchronous on a GPU); returns the device arrays (energies, counts, drift)
        of this launch. :meth:`sweep` is the synchronous interface; benchmarks time this one."""
        c = _cuda()
        w = self._n_chains
        energies = c.device_array((w, max(int(n_sweeps), 1), 3), dtype=np.float64) if measure else self._no_energies
        counts = c.to_device(np.zeros((w, N_COUNTERS), dtype=np.int64))
        drift = c.to_device(np.zeros(w))
        moves = self.moves_per_sweep if moves_per_sweep is None else moves_per_sweep
        refresh = self.refresh_every if refresh_every is None else refresh_every
        if measure and self.measure_on == "grid" and int(n_sweeps) > 0:
            self._launch_measured(int(n_sweeps), moves, refresh, energies, counts, drift)
            return energies, counts, drift
        args = self._args(n_sweeps, moves, measure, refresh, energies, counts, drift)
        self._kernel(args)[w, self.threads, 0, self.shared_bytes](*args)
        return energies, counts, drift

    def _launch_measured(self, n_sweeps, moves, refresh, energies, counts, drift):
        """Measured sweeps with the measurements on the other SMs: the chain kernel runs the sweeps in
        chunks on one stream, writing a snapshot per chain and sweep into one of two buffers, and after
        each chunk ``measure_snapshots_gpu`` measures its snapshots on a second stream, while the next
        chunk runs (a buffer is written again only after its measurements; both streams block the default
        stream, so whatever follows on it waits for them)."""
        c = _cuda()
        w = self._n_chains
        m, n = self.system.size, self.system.n_sites
        row = snapshot_doubles(m, n)
        budget = self.snapshot_buffer_bytes if simulated() else min(
            self.snapshot_buffer_bytes, c.current_context().get_memory_info()[1] // 16)
        chunk = max(1, min(n_sweeps, budget // (8 * w * row)))
        if self._snaps is None or self._snaps["chunk"] < chunk:
            blocks = min(chunk * w, 2 * self._device_sms())
            self._snaps = {"chunk": chunk, "buffers": [c.device_array((chunk * w, row)) for _ in range(2)],
                           "streams": [c.stream(), c.stream()], "blocks": blocks,
                           "F": c.device_array((blocks, n * m)), "G": c.device_array((blocks, m * n))}
        snaps = self._snaps
        chain_stream, measure_stream = snaps["streams"]
        measured = [None, None]
        j = 0
        for s0 in range(0, n_sweeps, chunk):
            count = min(chunk, n_sweeps - s0)
            buffer = snaps["buffers"][j % 2][:count * w]
            if measured[j % 2] is not None:
                measured[j % 2].wait(chain_stream)
            args = self._args(count, moves, True, refresh, self._no_energies, counts, drift, buffer, s0, n_sweeps)
            self._kernel(args)[w, self.threads, chain_stream, self.shared_bytes](*args)
            ran = c.event()
            ran.record(chain_stream)
            ran.wait(measure_stream)
            margs = (*self._consts[:7], m, buffer, w, s0, energies, snaps["F"], snaps["G"])
            threads = min(self.threads, MEASURE_THREADS)
            nbytes = measure_shared_bytes(m, n, threads)
            blocks = min(snaps["blocks"], count * w)
            _launcher(margs, nbytes, 255, "measure_snapshots")[blocks, threads, measure_stream, nbytes](*margs)
            measured[j % 2] = c.event()
            measured[j % 2].record(measure_stream)
            j += 1

    @staticmethod
    def _device_sms() -> int:
        if simulated():
            return 1
        return int(_cuda().get_current_device().MULTIPROCESSOR_COUNT)

    def sweep(self, n_sweeps: int, measure: bool = True) -> np.ndarray:
        """Advance every chain ``n_sweeps`` sweeps; (W, n_sweeps, 3) of (E_kin, E_J, double occupancy)
        per sweep (whole cluster, in t) when ``measure``, else an empty array (as CpuChains)."""
        n_sweeps = int(n_sweeps)
        w = self._n_chains
        if n_sweeps <= 0:
            return np.zeros((w, 0, 3))
        energies, counts, drift = self.launch(n_sweeps, measure)
        self.counts += counts.copy_to_host()
        np.maximum(self.drift, drift.copy_to_host(), out=self.drift)
        if measure:
            return energies.copy_to_host()[:, :n_sweeps]
        return np.zeros((w, 0, 3))

    def synchronize(self) -> None:
        _cuda().synchronize()

    def cycle_counts(self, reset: bool = False, details: bool = False) -> dict:
        """Clock cycles per chain by phase (:data:`CYCLE_PHASES`, thread 0's count: waits at barriers
        included) summed over the launches so far (or since the last ``reset``): {phase: (W,) array};
        the phases add up to the chain's time. With ``details`` also the parts of "draws" that
        :data:`CYCLE_DETAILS` names (batches of parsed draws; zeros unless built with ``cycle_details``).
        The thesis kernel only (zeros for the tracked one and in the simulator)."""
        host = self._cycles.copy_to_host()
        if reset:
            self._cycles = _cuda().to_device(np.zeros_like(host))
        names = CYCLE_PHASES + (CYCLE_DETAILS if details else ())
        return {name: host[:, q] for q, name in enumerate(names)}

    def host_state(self) -> dict:
        """The chain arrays (up_site, dn_site, up_at, dn_at, ainv) on the host (for checkpoints)."""
        return {key: self._state[key].copy_to_host() for key in STATE_KEYS}

    def states_to_host(self) -> np.ndarray:
        return self._states.copy_to_host()

    def energies(self) -> np.ndarray:
        """(W, 3) local (E_kin, E_J, double occupancy) of the current configurations, on the GPU."""
        energies, _, _ = self.launch(1, True, moves_per_sweep=0, refresh_every=0)
        return energies.copy_to_host()[:, 0]
