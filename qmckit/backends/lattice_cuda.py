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
* on request (``CudaChains(cycle_counts=True)``, a kernel of its own: the production kernel reads no
  clock) thread 0 counts its clock cycles by phase (:data:`CYCLE_PHASES`: draws, batch sums, decisions,
  updates, rebuilds, measurements; :meth:`CudaChains.cycle_counts`), barrier waits included — where
  a chain's time goes — and with ``cycle_details`` the draws' parse and derive parts (:data:`CYCLE_DETAILS`);
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

import numpy as np

from .lattice_chains import N_COUNTERS, REFRESH_EVERY
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
# the thesis kernel's variants, named run_chains[_grid][_rank2][_cycles][_details]: flag → (closure constant, value);
# the clock reads of _cycles and _details are compiled only into those variants (CudaChains(cycle_counts=True))
VARIANT_FLAGS = {
    "grid": ("MEASURE_IN_BLOCK", False),  # measure_on="grid": no in-block measurement (232 B of spills against
    # 296 at the 232-register cap, ptxas for sm_90)
    "rank2": ("RANK2_SWAPS", True),  # swap_update="rank2": an accepted swap in one pass (swap_rank2), no in-swap
    # rebuild (0 B of spills at the 232 cap)
    "cycles": ("COUNT_CYCLES", True),  # cycle_counts=True: thread 0 counts its clock cycles by phase (CYCLE_PHASES)
    "details": ("DRAW_DETAILS", True),  # cycle_details=True: also the draws' parts (CYCLE_DETAILS)
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


@functools.lru_cache(maxsize=None)
def kernels(max_registers: int = 255) -> dict:
    """The chain kernels, compiled lazily, one set per register cap (``max_registers`` per thread).

    Built in three parts, each in its own module: :func:`~qmckit.backends.lattice_cuda_linear.linear_functions`
    (reductions, strided updates and swaps of A⁻¹, the tensor-core and clock intrinsics),
    :func:`~qmckit.backends.lattice_cuda_batch.batch_functions` (draws, batch sums, rebuild and refresh,
    measurement tiles, energies) and :func:`~qmckit.backends.lattice_cuda_kernels.chain_kernels` (the thesis
    kernel and its variants, the tracked kernel, the snapshot measurement)."""
    from .lattice_cuda_batch import batch_functions
    from .lattice_cuda_kernels import chain_kernels
    from .lattice_cuda_linear import linear_functions

    return chain_kernels(batch_functions(linear_functions()), max_registers)


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
    kernel's only form). ``cycle_counts``: thread 0 counts its clock cycles by phase (:data:`CYCLE_PHASES`,
    :meth:`cycle_counts`), in a kernel of its own (``*_cycles``): the production kernel has no clock reads.
    ``cycle_details`` (implies ``cycle_counts``): also the parts of the draws (:data:`CYCLE_DETAILS`).
    """

    backend = "cuda"

    def __init__(self, system, state: dict, states: np.ndarray, moves_per_sweep: int | None = None,
                 refresh_every: int = REFRESH_EVERY, threads_per_column: int | None = None, bfactor: int | None = None,
                 max_registers: int | None = None, algorithm: str = "thesis", batch: int | None = None,
                 measure_on: str = "grid", swap_update: str | None = None, cycle_counts: bool = False,
                 cycle_details: bool = False):
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
        self.cycle_counts = bool(cycle_counts) or self.cycle_details
        if self.cycle_counts:
            if algorithm != "thesis":
                raise ValueError("cycle_counts=True and cycle_details=True need the thesis kernel")
            self._kernel_name += "_details" if self.cycle_details else "_cycles"
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
                "cycle_counts": self.cycle_counts, "cycle_details": self.cycle_details, "threads": self.threads,
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
        Only for chains built with ``cycle_counts=True`` (the thesis kernel; zeros in the simulator)."""
        if not self.cycle_counts:
            raise ValueError("cycle_counts: these chains count no clock cycles; build CudaChains(cycle_counts=True)")
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
