"""Study 004's Metropolis generation for liquid ⁴He: the CPU kernel and the GPU kernel (its twin).

One *microupdate* picks a random atom j, proposes r_j → r_j + δ (δ Gaussian, σ per component, in Å)
and accepts with probability min(1, exp 2Σ_{i≠j}[u(|r_j + δ − r_i|) − u(|r_j − r_i|)]), u the McMillan
pseudo-potential of :mod:`qmckit.systems.helium`; a *macroupdate* is N microupdates. Random numbers per
microupdate, from the walker's own xoroshiro128+ stream (:mod:`qmckit.rng`), in this order: one
uniform for j = ⌊uN⌋, two Box–Muller pairs for δ (the fourth normal is discarded) and one uniform for
the decision. Positions stay wrapped into [0, L)³, and a proposal is wrapped before its pair terms are
summed.

Only the pair sum is computed: no gradients, no energy (those are separate analysis kernels, as in
004). The CPU kernel (:func:`generate_cpu`) runs walkers in parallel and releases the GIL, so a
generator thread can run it while another thread analyses (load masking, :mod:`qmckit.perf`).

GPU design (:class:`HeliumChains`), after 004 §4 with today's hardware:

* one thread block per walker (Markov chain); the walker's coordinates are loaded once into shared
  memory and stay there for the whole launch (a persistent loop over ``n_macro`` × N microupdates,
  no relaunch per move). When 3N coordinates do not fit (N > 8533 in float64, 17066 in float32 with
  the 200 KB allowed here), a split path keeps x and y there and z in global memory (L1 keeps it)
  while 2N fit, and a global-memory path keeps all three in the walker's slice of global memory
  (L1/L2 cached);
* the T threads of the block split the N pair terms (atom i goes to thread i mod T);
* the block sum uses warp shuffles and one shared slot per warp, with ``syncthreads`` barriers —
  never 004's warp-synchronous reduction, which assumes lockstep execution and races on Volta and
  later;
* the random numbers come in batches of 32 microupdates (on-device, the CPU's generator compiled for
  the GPU by :mod:`qmckit.backends.cuda_rng`): thread 0 steps the sequential stream, lane b of warp
  0 turns microupdate b's raw numbers into j, δ and the decision uniform; per microupdate the block
  passes one barrier (the block sum's): every thread then decides alike, and the moved atom's owner
  stores it;
* for small N (float64 N ≤ 128, float32 N ≤ 256) the packed kernel puts several chains in a warp, G lanes
  each, with warp barriers only, so that a microupdate's fixed costs (the sequential stream, the sum,
  the decision) are shared; for N whose 3N coordinates do not fit in shared memory the hybrid kernel
  keeps as many atoms there as fit and reads the rest from global memory;
* float64 or float32 coordinates and pair sums (the random numbers are float64 either way).

The analysis kernels (``energies``: V, Σ∇² ln ψ, Σ|∇ ln ψ|² per walker; ``pair_histogram``: g(r)
counts) use the same one-block-per-walker layout. Same walkers and states give the CPU kernel's
chain: the same accept/reject decisions and positions to round-off (the block's summation order and
FMA contraction differ from the CPU's sequential sum), checked in ``tests/test_helium_chains.py``
under the simulator and by ``benchmarks/helium_gpu.py`` on a GPU.

Importing this module never needs CUDA.
"""
from __future__ import annotations

import functools
import math
import types

import numba as nb
import numpy as np

from .. import rng as _rng
from ..systems import helium as _helium
from . import cuda_import
from .cuda_import import available, simulated  # noqa: F401  (this module's GPU questions, answered once)

cuda = None  # numba.cuda, imported on first use


def _cuda():
    return cuda_import.bind(globals())


# --------------------------------------------------------------------------------------------
# the pair term, written once and compiled for the CPU and the GPU
# --------------------------------------------------------------------------------------------
def _image(d, box, inv_box, half_box):
    """|minimum image| of a coordinate difference d with |d| < L: min(|d|, L − |d|).

    Both positions are kept in [0, L), so |d| < L. Only squares of the image are used, so its sign is
    dropped: |·| is free on a GPU (an operand modifier), which leaves one add and one min per
    component, fewer instructions than compare-and-select (:func:`_image_select`) or rounding
    (``rint``, a type conversion issued at a fraction of the FMA rate). ``inv_box`` and ``half_box``
    serve the other two forms.
    """
    a = abs(d)
    return min(a, box - a)


def _image_fold_select(d, box, inv_box, half_box):
    """± the minimum image of d, by a compare and select instead of :func:`_image`'s min: a float64 min
    is no instruction on the GPU (sm_90), and its NaN-propagating emulation costs about eight. The
    select returns d itself, not |d|, when no fold is needed: only its square is used, and the GPU
    folds |·| into the add and the compare as operand modifiers but would spend a float64 add on
    forming |d| for the select."""
    a = abs(d)
    return box - a if a > half_box else d


def _image_select(d, box, inv_box, half_box):
    """The signed minimum image by compare and select (the float32 kernel before the fold)."""
    d = d - box if d > half_box else d
    return d + box if d < -half_box else d


def _cut(r2, half2):
    """r² clamped to (L/2)², the cut-off: a compare and a select (float64 has no min instruction on
    sm_90; the float32 GPU kernels use :func:`_single_fold_forms`' min)."""
    return r2 if r2 < half2 else half2


def _high_word(mask: int = 0xFFFFFFFF):
    """An intrinsic float64 x ↦ its upper 32 bits ANDed with ``mask``, as a uint32 (numba would widen a
    uint32 mask, and every compare of the result, to 64 bits)."""
    from llvmlite import ir
    from numba import types as nt
    from numba.cuda.extending import intrinsic

    @intrinsic
    def high(typingctx, x):
        if x != nt.float64:
            return None

        def codegen(context, builder, signature, args):
            bits = builder.bitcast(args[0], ir.IntType(64))
            word = builder.trunc(builder.lshr(bits, ir.Constant(ir.IntType(64), 32)), ir.IntType(32))
            return word if mask == 0xFFFFFFFF else builder.and_(word, ir.Constant(ir.IntType(32), mask))

        return nt.uint32(nt.float64), codegen

    return high


def _ptx_unary(instruction: str, single: bool):
    """An intrinsic x ↦ the one-operand PTX ``instruction`` (inline assembly) on a float32 or float64."""
    from llvmlite import ir
    from numba import types as nt
    from numba.cuda.extending import intrinsic

    kind, llvm_type, register = (nt.float32, ir.FloatType(), "f") if single else (nt.float64, ir.DoubleType(), "d")

    @intrinsic
    def unary(typingctx, x):
        if x != kind:
            return None

        def codegen(context, builder, signature, args):
            return builder.asm(ir.FunctionType(llvm_type, [llvm_type]), f"{instruction} $0, $1;",
                               f"={register},{register}", args, side_effect=False)

        return kind(kind), codegen

    return unary


def _high_word_forms():
    """The float64 GPU kernel's minimum image and cut-off by integer compares of high words.

    A float64 compare goes to the FP64 pipe, which a float64 pair term keeps busy (32 of its 50
    instructions per pair evaluation with float64 compares, 28 with these); the high 32 bits of a float64 are a register of its own, and
    for non-negative x they order like x itself. So |d| is compared with L/2 and r² with (L/2)² by an
    integer compare of high words, off the FP64 pipe. That moves both thresholds down to the nearest
    value with zero low word, by less than 2⁻²⁰ relative: components with |d| in that sliver just
    below L/2 are folded (to L − |d| ≥ L/2) and r² in the sliver below (L/2)² is cut off. Either way
    the pair lands at L/2, where w is flat (w′(L/2) = 0): w changes by ½w″(L/2)δ², δ < 2⁻²⁰L, below
    10⁻¹¹ of w(L/2), and only for the rare pair in the sliver (a fraction ~10⁻⁶ of the components). So
    the CPU kernel keeps its exact thresholds: a decision could differ only if ln ξ fell within
    b⁵·10⁻¹⁵ of the threshold when such a pair is in the sum.
    """
    high = _high_word()
    high_magnitude = _high_word(0x7FFFFFFF)  # high(|x|): the sign bit cleared

    def image(d, box, inv_box, half_box):
        return box - abs(d) if high_magnitude(d) >= high(half_box) else d

    def cut(r2, half2):
        return r2 if high(r2) < high(half2) else half2

    return image, cut


def _single_fold_forms():
    """The float32 GPU kernel's fold (:func:`_image`) and cut-off with their |·| and min as operand
    modifiers and one min instruction.

    With fastmath NVVM flushes denormals, and it writes |d| as ``abs.ftz.f32``, which ptxas keeps as
    an instruction of its own (an FADD of |d| and −0) instead of folding |·| into the add L − |d|
    and the min: three FMA-pipe instructions per pair evaluation. PTX ``abs.f32`` (inline assembly)
    is folded. The flush loses nothing here: |d| is a difference of positions in [0, L), and a
    denormal |d| gives a pair beyond the cut-off either way. The cut-off's compare and select (what
    NVVM made of :func:`_cut`) become one min (FMNMX); r² is never NaN but for the discarded i = j
    term. The pair loop in SASS (sm_90, ``benchmarks/sass_offline.py``): 32.0 → 28.0 instructions per
    pair evaluation in the shared kernel, 34.5 → 30.5 in the packed one.
    """
    magnitude = _ptx_unary("abs.f32", single=True)

    def image(d, box, inv_box, half_box):
        a = magnitude(d)
        return min(a, box - a)

    def cut(r2, half2):
        return min(r2, half2)

    return image, cut


def _rsqrt(x):
    """1/√x; the GPU kernels bind libdevice's rsqrt (float64: no IEEE division or square root)."""
    return 1.0 / math.sqrt(x)


def _rsqrt_f64_gpu():
    """1/√x in float64 for normal, finite x > 0: libdevice's rsqrt without its slow path.

    ptxas expands libdevice's rsqrt (PTX ``rsqrt.approx.f64``) into a hardware estimate of the upper
    32 bits (MUFU.RSQ64H), one third-order Newton step, y = y₀ + y₀e(½ + ⅜e) with e = 1 − xy₀², and a
    range check that branches to a subroutine for zero, subnormal, infinite or huge x: five
    instructions and a convergence barrier per root, ten per pair evaluation. The pair terms never
    need that path (r² lies in [~1, (L/2)²] Å²; the discarded i = j term gives NaN either way), so
    this is the estimate (PTX ``rsqrt.approx.ftz.f64``, inline assembly: NVVM has no intrinsic for
    it) and the same step in the same order of FMAs: the same bits as libdevice's rsqrt.
    """
    from numba.cuda import libdevice

    estimate = _ptx_unary("rsqrt.approx.ftz.f64", single=False)
    fma = libdevice.fma

    def rsqrt(x):
        y = estimate(x)
        e = fma(-(y * y), x, 1.0)
        return fma(fma(e, 0.375, 0.5), y * e, y)

    return rsqrt


def _w_cut(r2, box, half2, one):
    """w(r) = r⁻⁵ + (L − r)⁻⁵ from r², with r² clamped to (L/2)² (Å⁻⁵).

    The McMillan pseudo-potential is u(r) = b⁵(2/L)⁵ − ½b⁵ w(r) inside L/2 and 0 beyond, so a pair
    change of u is −½b⁵ times one of w: the kernels sum changes of w and multiply once, after the
    block sum, saving the shift and the scale per pair evaluation.

    The clamp is the cut-off: every pair beyond L/2 gets the same bits, so it drops out of a pair
    change exactly, with one min instead of a compare and a select. Inverses from reciprocal square
    roots, 1/r = rsqrt(r²) and 1/(L − r) = rsqrt(L − r)²: an IEEE float64 division or square root is
    a ten-instruction sequence on a GPU, rsqrt a hardware estimate and Newton steps. Branch-free, so
    CPU loops vectorise. ``one`` is 1 in the working precision, so that a float32 kernel is not
    promoted to float64 by a literal.
    """
    r2 = _cut(r2, half2)
    s = _rsqrt(r2)
    rest = box - r2 * s
    c = _rsqrt(rest)
    t = c * c
    s2 = s * s
    t2 = t * t
    return s2 * s2 * s + t2 * t2 * t


def _w_cut_divide(r2, box, half2, one):
    """The same w(r) with a square root and one division (the kernel before rsqrt):
    q = 1/(r(L − r)), 1/r = (L − r)q, 1/(L − r) = rq."""
    r = math.sqrt(_cut(r2, half2))
    rest = box - r
    q = one / (r * rest)
    s = rest * q
    t = r * q
    s2 = s * s
    t2 = t * t
    return s2 * s2 * s + t2 * t2 * t


def _pair_change(xo, yo, zo, xn, yn, zn, xi, yi, zi, box, inv_box, half2, half, one):
    """w(|r_new − r_i|) − w(|r_old − r_i|) with minimum images (:func:`_w_cut`; the change of u is
    −½b⁵ times this); every position inside [0, L)³."""
    half_box = half * box
    dx = _image(xo - xi, box, inv_box, half_box)
    dy = _image(yo - yi, box, inv_box, half_box)
    dz = _image(zo - zi, box, inv_box, half_box)
    old = _w_cut(dx * dx + dy * dy + dz * dz, box, half2, one)
    dx = _image(xn - xi, box, inv_box, half_box)
    dy = _image(yn - yi, box, inv_box, half_box)
    dz = _image(zn - zi, box, inv_box, half_box)
    new = _w_cut(dx * dx + dy * dy + dz * dz, box, half2, one)
    return new - old


def _compiled(functions, decorate, **bound):
    """Compile plain functions with ``decorate``, binding the names they call to the compiled twins
    (and any name in ``bound`` to the object given)."""
    namespace = dict(globals())
    namespace.update(bound)
    out = {}
    for f in functions:
        out[f.__name__] = namespace[f.__name__] = decorate(types.FunctionType(f.__code__, namespace, f.__name__))
    return out


# fastmath lets LLVM vectorise the pair loop; a zero distance never reaches _w_cut (j ≠ i is masked)
_pair_change_cpu = _compiled((_image, _rsqrt, _cut, _w_cut, _pair_change), nb.njit(inline="always", fastmath=True))["_pair_change"]


def _wrap(x, box):
    """x in (−L, 2L) brought into [0, L) (a proposal, position plus a step much shorter than L, is
    wrapped before its pair terms: :func:`_image` needs it). Compares and selects: x − L is exact
    there (Sterbenz), and the form x − L⌊x/L⌋ cost a float64 division, a ten-instruction sequence on
    a GPU, per component and microupdate."""
    x = x - box if x >= box else x
    return x + box if x < 0 else x


_wrap_cpu = nb.njit(inline="always", fastmath=True)(_wrap)


def chain_constants(box: float, b: float):
    """(L, 1/L, (L/2)², b⁵): the numbers every generation kernel needs (Å, Å⁻¹, Å², Å⁵)."""
    return float(box), 1.0 / box, 0.25 * box * box, b ** 5


# --------------------------------------------------------------------------------------------
# CPU kernel
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always")
def _propose(states, w, n, sigma):
    j = min(int(_rng.uniform(states, w) * n), n - 1)
    z0, z1 = _rng.normal_pair(states, w)
    z2, _ = _rng.normal_pair(states, w)
    return j, sigma * z0, sigma * z1, sigma * z2


@nb.njit(cache=True, nogil=True, parallel=True, error_model="numpy", fastmath=True)
def generate_cpu(positions, states, box, inv_box, half2, b5, n_macro, sigma, accepted):
    """``n_macro`` macroupdates (N microupdates each) of every walker, in place.

    positions (W, N, 3) float64 in Å inside [0, L)³; states (W, 2) uint64; accepted (W,) int64
    (incremented by the accepted microupdates).
    """
    W, N, _ = positions.shape
    for w in nb.prange(W):
        X = np.ascontiguousarray(positions[w, :, 0])
        Y = np.ascontiguousarray(positions[w, :, 1])
        Z = np.ascontiguousarray(positions[w, :, 2])
        n_acc = 0
        for _ in range(n_macro * N):
            j, dx, dy, dz = _propose(states, w, N, sigma)
            xo, yo, zo = X[j], Y[j], Z[j]
            xn = _wrap_cpu(xo + dx, box)
            yn = _wrap_cpu(yo + dy, box)
            zn = _wrap_cpu(zo + dz, box)
            total = 0.0
            for i in range(N):
                other = i != j  # branch-free: i = j gets a harmless dummy position and weight 0
                total += (1.0 if other else 0.0) * _pair_change_cpu(
                    xo, yo, zo, xn, yn, zn, X[i] if other else _wrap_cpu(xo + 0.5 * box, box), Y[i], Z[i], box, inv_box,
                    half2, 0.5, 1.0)
            # accept when ξ < exp(2Δu), 2Δu = −b⁵Δw, taken as ln ξ < 2Δu (as the GPU kernel, which forms
            # the logarithms of a batch of ξ in parallel, off the microupdate's path)
            if math.log(_rng.uniform(states, w)) < -b5 * total:
                X[j] = xn
                Y[j] = yn
                Z[j] = zn
                n_acc += 1
        for i in range(N):
            positions[w, i, 0] = X[i]
            positions[w, i, 1] = Y[i]
            positions[w, i, 2] = Z[i]
        accepted[w] += n_acc


def step_for_acceptance(acceptance: float, density: float = _helium.EQUILIBRIUM_DENSITY) -> float:
    """A starting σ (Å per component) for a target acceptance, from study 004 notes' Table 2.1
    (b = 3.07 Å, ρ = 0.02186 Å⁻³; σ = 0.81 Å gives 0.372), scaled by ρ^(−1/3)."""
    table_sigma = np.array([0.50, 0.60, 0.70, 0.75, 0.80, 0.85, 0.90, 1.00])
    table_acc = np.array([0.554, 0.490, 0.435, 0.406, 0.377, 0.360, 0.335, 0.303])
    sigma = float(np.interp(-acceptance, -table_acc, table_sigma))
    return sigma * (_helium.EQUILIBRIUM_DENSITY / density) ** (1.0 / 3.0)


class HeliumChainsCPU:
    """W independent Metropolis chains of ``system`` (a :class:`~qmckit.systems.helium.Helium`) on the CPU.

    The host-side twin of :class:`HeliumChains` with the same methods: ``generate``, ``positions``,
    ``energies``, ``acceptance``.
    """

    backend = "cpu"

    def __init__(self, system, positions, states, sigma: float):
        self.system = system
        self._positions = np.ascontiguousarray(positions, dtype=np.float64).copy()
        box = system.box
        self._positions -= box * np.floor(self._positions / box)
        self.states = np.ascontiguousarray(states, dtype=np.uint64).copy()
        self.sigma = float(sigma)
        self.constants = chain_constants(box, system.params.b)
        self.accepted = np.zeros(len(self._positions), dtype=np.int64)
        self.proposed = 0

    def generate(self, n_macro: int) -> None:
        generate_cpu(self._positions, self.states, *self.constants, int(n_macro), self.sigma, self.accepted)
        self.proposed += int(n_macro) * self._positions.shape[1]

    def positions(self) -> np.ndarray:
        return self._positions.copy()

    def energies(self) -> np.ndarray:
        """(W, 4) whole-walker E_L, V, T_lap, T_grad in K (as :meth:`Helium.measure`)."""
        return self.system.measure(self._positions)

    @property
    def acceptance(self) -> float:
        return float(self.accepted.sum() / max(1, self.proposed * len(self.accepted)))


# --------------------------------------------------------------------------------------------
# GPU kernels
# --------------------------------------------------------------------------------------------
MIN_IMAGES = ("fold", "fold_select", "select", "rint", "high_word")
INVERSES = ("rsqrt", "divide")
UNROLLS = (2, 4)


def default_min_image(single: bool) -> str:
    """The faster minimum image on an H100 (stage ``variants`` of ``benchmarks/helium_gpu.py``): the
    fold with a min in float32; in float64 the fold with a select, its compare (and the cut-off's) on
    high words: 1–4 % faster at N = 512 and 1952 in shared memory and 11 % at N = 10240 in global memory
    than the float64 compares (helium_gpu_h100v9forms_2026-11-23, two atoms per trip)."""
    return "fold" if single else "high_word"


def default_unroll(single: bool, memory: str = "shared") -> int:
    """Atoms per trip of the pair loop (independent pair terms in flight per thread), the faster on an
    H100: four in float64 with the coordinates in shared memory, two otherwise. Four is 1–3 % faster
    there in the mean of three runs at N = 512 and 1952 (helium_gpu_h100v9forms, h100v9, h100v9unroll;
    the spread between runs is as large), 6 % slower split at N = 10240 (one block per SM: more
    registers bring no more warps), and 31 % slower in the float64 global-memory kernel at N = 40960
    (h100v7: 72 registers per thread left room for one block of 512 per SM instead of two). In float32
    four was 0.5 % slower. The float64 hybrid kernel at N = 10240 (one block per SM, 512 threads) is 5 %
    faster with four (helium_gpu_h100hybrid2_2026-11-26); the packed kernel at N = 64 and 128 is 8–17 %
    slower with four (helium_packed_scan_h100_2026-11-26)."""
    return 4 if not single and memory in ("shared", "hybrid") else 2


def default_threads(n: int, single: bool, memory: str = "shared") -> int:
    """Threads per chain: the fastest block size for N atoms in the speed stage's scan on an H100
    (helium_gpu_h100v7_2026-11-23; 32 to 1024 threads, 132 to 4224 chains). Float64 wants more warps
    per block from N = 512 on: shared memory limits the blocks per SM, and its pair loop is bound by
    the latency of dependent FP64 operations at the few warps left (Nsight Compute: 12–15 active warps
    per SM, issue slots 55–64 % busy, where float32 reaches 29 warps and 87 %)."""
    if memory == "packed":  # fastest or within 1 % (helium_gpu_h100v16_2026-11-26's packed stage): 256 loses 14–20 %
        if single:  # where the chains' shared memory limits the blocks per SM (float64 N ≥ 128, float32 N = 512)
            return 256 if n <= 256 else 64
        return 256 if n <= 64 else 128 if n <= 128 else 64
    if memory == "hybrid":  # one block per SM: 512 threads fastest at float64 N = 10240 and float32 N = 40960
        return 512  # (helium_gpu_h100hybrid2_2026-11-26: 256–1024 scanned)
    if memory == "split":  # one block per SM: float64 N = 10240 split runs best with 640 threads (h100v9unroll)
        return 1024 if single else 640
    if memory == "global":
        return 1024 if single else 512
    if single:
        return 32 if n <= 1000 else 64 if n <= 2048 else 256
    return 32 if n <= 256 else 64 if n <= 512 else 128 if n <= 2048 else 256


def kernels(single: bool, min_image: str | None = None, inverse: str = "rsqrt", unroll: int | None = None,
            memory: str = "shared") -> dict:
    """The GPU kernels for float32 (``single``) or float64 coordinates and sums.

    Forms of the pair term, all the same u(r) to round-off (the stage ``variants`` of
    ``benchmarks/helium_gpu.py`` times them): ``min_image`` "fold" (:func:`_image`), "fold_select"
    (:func:`_image_fold_select`), "select" (:func:`_image_select`), "rint" (d − L·rint(d/L); the
    simulator has no rint and uses "fold") or, in float64, "high_word" (fold_select and the cut-off by
    integer compares, :func:`_high_word_forms`; the simulator uses fold_select), default
    :func:`default_min_image`; ``inverse`` "rsqrt"
    (:func:`_w_cut`) or "divide" (:func:`_w_cut_divide`); ``unroll``: atoms per trip of the pair loop,
    2 or 4, default :func:`default_unroll` for coordinates in ``memory``.
    """
    return _kernels(bool(single), default_min_image(single) if min_image is None else min_image, inverse,
                    default_unroll(single, memory) if unroll is None else unroll)


@functools.lru_cache(maxsize=None)
def _kernels(single: bool, min_image: str, inverse: str, unroll: int) -> dict:
    if min_image not in MIN_IMAGES:
        raise ValueError(f"min_image must be one of {', '.join(MIN_IMAGES)}, got {min_image!r}")
    if min_image == "high_word" and single:
        raise ValueError("min_image high_word is a float64 form; float32 kernels use fold, fold_select, select or rint")
    if inverse not in INVERSES:
        raise ValueError(f"inverse must be one of {', '.join(INVERSES)}, got {inverse!r}")
    if unroll not in UNROLLS:
        raise ValueError(f"unroll must be one of {', '.join(map(str, UNROLLS))}, got {unroll!r}")
    import numba

    c = _cuda()
    from . import cuda_rng

    kw = cuda_rng._DEVICE_KW
    # float32 is the fast, approximate option: fastmath gives approximate division and square root
    # (2 ulp) and flushes denormals.
    fast = single and not simulated()
    generation_kw = dict(kw, fastmath=True) if fast else kw
    device = c.jit(**generation_kw)
    image = {"select": _image_select, "fold_select": _image_fold_select, "high_word": _image_fold_select}.get(
        min_image, _image)
    cut = _cut
    # the simulator runs Python: NumPy's division gives inf for the unused i = j term, as the GPU does
    rsqrt = (lambda x: np.float64(1.0) / np.sqrt(x)) if simulated() else None  # noqa: E731
    if not simulated():
        from numba.cuda import libdevice

        if min_image == "rint":
            rint = libdevice.rintf if single else libdevice.rint
            image = lambda d, box, inv_box, half_box: d - box * rint(d * inv_box)  # noqa: E731
        if min_image == "high_word":
            image, cut = _high_word_forms()
        if single and min_image == "fold":
            image, cut = _single_fold_forms()
        if single:
            rsqrt = lambda x: libdevice.rsqrtf(x)  # noqa: E731  (fastmath: one MUFU.RSQ)
        else:
            rsqrt = _rsqrt_f64_gpu()
    bound = {"_image": device(image), "_rsqrt": device(rsqrt), "_cut": device(cut)}
    w_cut = _w_cut_divide if inverse == "divide" else _w_cut
    bound["_w_cut"] = _compiled((w_cut,), device, **bound)[w_cut.__name__]
    pair_change = _compiled((_pair_change,), device, **bound)["_pair_change"]
    wrap = c.jit(**generation_kw)(_wrap)
    potential_ns = dict(vars(_helium))
    aziz = c.jit(**kw)(types.FunctionType(_helium.aziz_potential.py_func.__code__, potential_ns, "aziz_potential"))
    next_uint64 = cuda_rng.next_uint64
    uniform_from_bits = cuda_rng.uniform_from_bits
    box_muller = cuda_rng.box_muller
    real = numba.float32 if single else numba.float64
    SIZE = 4 if single else 8  # bytes per coordinate
    SIMULATED = simulated()  # a compile-time constant in the kernels
    u64 = numba.uint64
    u32 = numba.uint32
    FULL = 0xFFFFFFFF

    @c.jit(**kw)
    def block_sum_shuffle(value, sums, base):
        """Sum of ``value`` over the block (every thread gets the same bits): warp shuffles, one shared
        slot per warp from sums[base], one barrier. A barrier must come before these slots are
        written again."""
        lane = cuda.threadIdx.x % 32
        warp = cuda.threadIdx.x // 32
        offset = 16
        while offset > 0:
            value += cuda.shfl_down_sync(FULL, value, offset)
            offset //= 2
        if lane == 0:
            sums[base + warp] = value
        cuda.syncthreads()
        total = sums[base] * 0.0
        for k in range((cuda.blockDim.x + 31) // 32):
            total += sums[base + k]
        return total

    @c.jit(**kw)
    def block_sum_tree(value, sums, base):
        """The same sum as a shared-memory tree (the simulator has no warp shuffles); log2(T) + 1 barriers,
        and again a barrier before these slots are written again."""
        t = cuda.threadIdx.x
        sums[base + t] = value
        cuda.syncthreads()
        stride = cuda.blockDim.x // 2
        while stride > 0:
            if t < stride:
                sums[base + t] += sums[base + t + stride]
            cuda.syncthreads()
            stride //= 2
        return sums[base]

    block_sum = block_sum_tree if simulated() else block_sum_shuffle
    SLOTS = 1024 if simulated() else BLOCK_SUM_SLOTS  # shared slots of the block sum
    TWO_SLOTS = 2 * SLOTS  # the generation kernels' two sets (a shared array's size must be a constant)

    @c.jit(**kw)
    def draw_proposals(st, draws, bits, count, N, sigma):
        """The next ``count`` ≤ 32 microupdates' random numbers, in the CPU kernel's stream order.

        Thread 0 draws the 6·count raw 64-bit numbers (the xoroshiro128+ recurrence is sequential);
        lane b of warp 0 turns microupdate b's into draws[b] = (j, δx, δy, δz, ln ξ) (float64; δ in Å).
        Batching moves the uniforms' conversions, Box–Muller's log, √, cos and sin, and the decision's
        logarithm (the threads compare ln ξ with 2Δu: no exp after the barrier) off the single thread
        that used to do them between two barriers of every microupdate.
        """
        t = cuda.threadIdx.x
        if t == 0:
            for b in range(count):
                for q in range(RAW_PER_PROPOSAL):
                    bits[b, q] = next_uint64(st, 0)
        cuda.syncthreads()
        if t < count:
            j = min(int(uniform_from_bits(bits[t, 0]) * N), N - 1)
            z0, z1 = box_muller(uniform_from_bits(bits[t, 1]), uniform_from_bits(bits[t, 2]))
            z2, _ = box_muller(uniform_from_bits(bits[t, 3]), uniform_from_bits(bits[t, 4]))  # one discarded
            draws[t, 0] = j
            draws[t, 1] = sigma * z0
            draws[t, 2] = sigma * z1
            draws[t, 3] = sigma * z2
            draws[t, 4] = math.log(uniform_from_bits(bits[t, 5]))  # ln ξ (−inf for ξ = 0: accepted)
        cuda.syncthreads()

    @c.jit(**generation_kw)
    def two_terms(xo, yo, zo, xn, yn, zn, X, Y, Z, i, T, j, box, inv_box, half2, half, one):
        """The pair changes of atoms i and i + T, two independent terms in flight; 0 for the moved atom j
        (a select: its own term, r = 0, is never used)."""
        k = u32(i + T)
        v0 = pair_change(xo, yo, zo, xn, yn, zn, X[i], Y[i], Z[i], box, inv_box, half2, half, one)
        v1 = pair_change(xo, yo, zo, xn, yn, zn, X[k], Y[k], Z[k], box, inv_box, half2, half, one)
        zero = one - one
        return (v0 if i != j else zero), (v1 if k != j else zero)

    @c.jit(inline="always", **generation_kw)
    def segment_sums(X, Y, Z, N, t, T, j, xo, yo, zo, xn, yn, zn, box, inv_box, half2, half, one):
        """This thread's four partial sums of the pair changes over the atoms of X, Y, Z (atom i to thread
        i mod T); 0 for index j (the moved atom, or none when j ≥ len(X))."""
        reach = u32((unroll - 1) * T)
        last = u32(N - reach) if N > reach else u32(0)  # `unroll` atoms per trip while i + reach < N
        step = u32(unroll * T)
        last2 = u32(N - T) if N > T else u32(0)  # two atoms per trip while i + T < N
        zero = real(0.0)
        part0 = zero
        part1 = zero
        part2 = zero
        part3 = zero
        # two atoms per trip, two partial sums, 32-bit indices: numba's range(t, N, T) costs a 64-bit
        # trip count and five integer instructions per trip (numba's FMA probe in benchmarks/
        # helium_gpu.py issues at 57 % for that reason), and two independent pair terms overlap their
        # latencies; 13 % more pair evaluations per second in float32 on an H100
        i = t
        while i < last:  # u32() on every index: numba widens 32-bit arithmetic to 64 bits
            v0, v1 = two_terms(xo, yo, zo, xn, yn, zn, X, Y, Z, i, T, j, box, inv_box, half2, half, one)
            part0 += v0
            part1 += v1
            if unroll == 4:  # a compile-time constant: the other form is not compiled
                v2, v3 = two_terms(xo, yo, zo, xn, yn, zn, X, Y, Z, u32(i + 2 * T), T, j, box, inv_box, half2,
                                   half, one)
                part2 += v2
                part3 += v3
            i = u32(i + step)
        if unroll == 4:  # then trips of two: with few atoms per thread the tail is a large share
            while i < last2:
                v0, v1 = two_terms(xo, yo, zo, xn, yn, zn, X, Y, Z, i, T, j, box, inv_box, half2, half, one)
                part0 += v0
                part1 += v1
                i = u32(i + 2 * T)
        while i < N:  # at most one single atom
            if i != j:
                part0 += pair_change(xo, yo, zo, xn, yn, zn, X[i], Y[i], Z[i], box, inv_box, half2, half, one)
            i = u32(i + T)
        return part0, part1, part2, part3

    @c.jit(**kw)
    def write_segment(X, Y, Z, out, write, w, first, t, T):
        """out[write, w, :, first + i] = (X[i], Y[i], Z[i]), thread t of T striding over i."""
        for i in range(t, u32(X.shape[0]), T):
            out[write, w, 0, first + i] = X[i]
            out[write, w, 1, first + i] = Y[i]
            out[write, w, 2, first + i] = Z[i]

    def make_chain(hybrid):
        """The persistent loop of one walker over its atoms in X, Y, Z (shared or global (N,) arrays), or,
        when ``hybrid`` (a compile-time constant), atoms 0 … K − 1 in X, Y, Z (shared memory) and
        K … N − 1 in XB, YB, ZB (global memory); without it XB, YB, ZB are not read."""

        @c.jit(**generation_kw)
        def chain(X, Y, Z, XB, YB, ZB, st, box, inv_box, half2, b5, n_micro, sigma, draws, bits, warp_sums, out,
                  m_write, w):
            # 32-bit unsigned indices: 64-bit index arithmetic, and numba's negative-index wrap-around of
            # signed ones, cost extra instructions in the pair loop
            t = u32(cuda.threadIdx.x)
            T = u32(cuda.blockDim.x)
            K = u32(X.shape[0])
            N = u32(K + XB.shape[0]) if hybrid else K
            one = real(1.0)
            half = real(0.5)
            n_acc = 0
            write = 0
            # one barrier per microupdate: every thread decides (each has the same block sum and ln ξ),
            # and the moved atom's owner (the only thread whose pair loop reads its coordinates) stores
            # it. The others may read it too early only at the next microupdate's old position, so the
            # last accepted move is also kept in registers; the block sums alternate between two sets
            # of slots.
            j_moved = N  # the atom accepted at the previous microupdate, N if none
            xm = real(0.0)
            ym = xm
            zm = xm
            for k in range(n_micro):
                b = k % PROPOSALS_PER_DRAW
                if b == 0:
                    draw_proposals(st, draws, bits, min(PROPOSALS_PER_DRAW, n_micro - k), N, sigma)
                j = u32(draws[b, 0])
                jb = u32(j - K)  # j's index in XB; ≥ len(XB) (unsigned wrap-around) when j < K
                if j == j_moved:
                    xo = xm
                    yo = ym
                    zo = zm
                elif not hybrid or j < K:
                    xo = X[j]
                    yo = Y[j]
                    zo = Z[j]
                else:
                    xo = XB[jb]
                    yo = YB[jb]
                    zo = ZB[jb]
                xn = wrap(xo + real(draws[b, 1]), box)
                yn = wrap(yo + real(draws[b, 2]), box)
                zn = wrap(zo + real(draws[b, 3]), box)
                part0, part1, part2, part3 = segment_sums(X, Y, Z, K, t, T, j, xo, yo, zo, xn, yn, zn, box, inv_box,
                                                          half2, half, one)
                part = (part0 + part1) + (part2 + part3)
                if hybrid:
                    part4, part5, part6, part7 = segment_sums(XB, YB, ZB, u32(N - K), t, T, jb, xo, yo, zo, xn, yn, zn,
                                                              box, inv_box, half2, half, one)
                    part += (part4 + part5) + (part6 + part7)
                total = block_sum(part, warp_sums, (k % 2) * SLOTS)
                j_moved = N
                if draws[b, 4] < -float(b5) * float(total):  # ln ξ < 2Δu = −b⁵Δw: no exp on this path
                    j_moved = j
                    xm = xn
                    ym = yn
                    zm = zn
                    if not hybrid or j < K:
                        if j % T == t:
                            X[j] = xn
                            Y[j] = yn
                            Z[j] = zn
                    elif jb % T == t:
                        XB[jb] = xn
                        YB[jb] = yn
                        ZB[jb] = zn
                    n_acc += 1
                if m_write > 0 and (k + 1) % m_write == 0 and write < out.shape[0]:
                    # a writeout: the configuration after every m_write microupdates (m macroupdates)
                    write_segment(X, Y, Z, out, write, w, 0, t, T)
                    if hybrid:
                        write_segment(XB, YB, ZB, out, write, w, K, t, T)
                    cuda.threadfence_system()
                    write += 1
            return n_acc

        @c.jit(**generation_kw)
        def run_chain(X, Y, Z, XB, YB, ZB, states, accepted, box, inv_box, half2, b5, n_micro, sigma, out, m_write,
                      w):
            """Walker w's stream in, the persistent loop, the stream and the accept count out."""
            warp_sums = cuda.shared.array(TWO_SLOTS, dtype=real)
            draws = cuda.shared.array((PROPOSALS_PER_DRAW, DRAWS_PER_PROPOSAL), dtype=numba.float64)
            bits = cuda.shared.array((PROPOSALS_PER_DRAW, RAW_PER_PROPOSAL), dtype=u64)
            st = cuda.local.array((1, 2), u64)
            st[0, 0] = states[0, w]
            st[0, 1] = states[1, w]
            cuda.syncthreads()
            n_acc = chain(X, Y, Z, XB, YB, ZB, st, real(box), real(inv_box), real(half2), real(b5), n_micro, sigma,
                          draws, bits, warp_sums, out, m_write, w)
            cuda.syncthreads()
            if cuda.threadIdx.x == 0:
                states[0, w] = st[0, 0]
                states[1, w] = st[0, 1]
                accepted[w] += n_acc

        return run_chain

    run_chain = make_chain(False)
    run_chain_hybrid = make_chain(True)

    @c.jit(**kw)
    def copy_in(coords, w, component, A, t, T):
        """A[i] = coords[w, component, i], threads t of T striding over i (no barrier)."""
        for i in range(t, A.shape[0], T):
            A[i] = coords[w, component, i]

    @c.jit(**kw)
    def copy_out(A, coords, w, component, t, T):
        """coords[w, component, i] = A[i], threads t of T striding over i (no barrier)."""
        for i in range(t, A.shape[0], T):
            coords[w, component, i] = A[i]

    @c.jit(fastmath=fast)
    def generate_shared(coords, states, box, inv_box, half2, b5, n_micro, sigma, accepted, out, m_write):
        """coords (W, 3, N); states (2, W) uint64; accepted (W,) int64; out (writeouts, W, 3, N)."""
        w = cuda.blockIdx.x
        N = coords.shape[2]
        shared = cuda.shared.array(0, dtype=real)
        X, Y, Z = shared[0:N], shared[N:2 * N], shared[2 * N:3 * N]
        copy_in(coords, w, 0, X, cuda.threadIdx.x, cuda.blockDim.x)
        copy_in(coords, w, 1, Y, cuda.threadIdx.x, cuda.blockDim.x)
        copy_in(coords, w, 2, Z, cuda.threadIdx.x, cuda.blockDim.x)
        run_chain(X, Y, Z, X, Y, Z, states, accepted, box, inv_box, half2, b5, n_micro, sigma, out, m_write, w)
        copy_out(X, coords, w, 0, cuda.threadIdx.x, cuda.blockDim.x)
        copy_out(Y, coords, w, 1, cuda.threadIdx.x, cuda.blockDim.x)
        copy_out(Z, coords, w, 2, cuda.threadIdx.x, cuda.blockDim.x)

    @c.jit(fastmath=fast)
    def generate_split(coords, states, box, inv_box, half2, b5, n_micro, sigma, accepted, out, m_write):
        """As ``generate_shared`` with x and y in shared memory and z left in global memory, for N whose
        3N coordinates do not fit in shared memory but 2N do: z is a third of the loads, and L1 keeps it."""
        w = cuda.blockIdx.x
        N = coords.shape[2]
        shared = cuda.shared.array(0, dtype=real)
        X, Y = shared[0:N], shared[N:2 * N]
        copy_in(coords, w, 0, X, cuda.threadIdx.x, cuda.blockDim.x)
        copy_in(coords, w, 1, Y, cuda.threadIdx.x, cuda.blockDim.x)
        Z = coords[w, 2]
        run_chain(X, Y, Z, X, Y, Z, states, accepted, box, inv_box, half2, b5, n_micro, sigma, out, m_write, w)
        copy_out(X, coords, w, 0, cuda.threadIdx.x, cuda.blockDim.x)
        copy_out(Y, coords, w, 1, cuda.threadIdx.x, cuda.blockDim.x)

    @c.jit(fastmath=fast)
    def generate_global(coords, states, box, inv_box, half2, b5, n_micro, sigma, accepted, out, m_write):
        """As ``generate_shared`` with the coordinates left in global memory (large N)."""
        w = cuda.blockIdx.x
        X, Y, Z = coords[w, 0], coords[w, 1], coords[w, 2]
        run_chain(X, Y, Z, X, Y, Z, states, accepted, box, inv_box, half2, b5, n_micro, sigma, out, m_write, w)

    @c.jit(fastmath=fast)
    def generate_hybrid(coords, states, box, inv_box, half2, b5, n_micro, sigma, accepted, out, m_write, K):
        """As ``generate_shared`` for atoms 0 … K − 1, whose three coordinates are in shared memory, and
        ``generate_global`` for the other N − K: for N whose 3N coordinates do not fit, as many atoms
        as fit are read from shared memory, and the rest (few enough for L1 at N = 10240 in float64)
        from the chain's slice of global memory."""
        w = cuda.blockIdx.x
        shared = cuda.shared.array(0, dtype=real)
        X, Y, Z = shared[0:K], shared[K:2 * K], shared[2 * K:3 * K]
        copy_in(coords, w, 0, X, cuda.threadIdx.x, cuda.blockDim.x)
        copy_in(coords, w, 1, Y, cuda.threadIdx.x, cuda.blockDim.x)
        copy_in(coords, w, 2, Z, cuda.threadIdx.x, cuda.blockDim.x)
        run_chain_hybrid(X, Y, Z, coords[w, 0, K:], coords[w, 1, K:], coords[w, 2, K:], states, accepted, box,
                         inv_box, half2, b5, n_micro, sigma, out, m_write, w)
        copy_out(X, coords, w, 0, cuda.threadIdx.x, cuda.blockDim.x)
        copy_out(Y, coords, w, 1, cuda.threadIdx.x, cuda.blockDim.x)
        copy_out(Z, coords, w, 2, cuda.threadIdx.x, cuda.blockDim.x)

    @c.jit(**kw)
    def group_sum(value, G, sums, base):
        """Sum of ``value`` over this thread's group of G lanes (G a power of two ≤ 32, groups aligned in
        a warp; every lane gets the same bits): xor shuffles, then a warp barrier that also orders the
        lanes' shared-memory stores. The simulator has neither: shared slots from sums[base] and block
        barriers, with the slot sets alternating like the block sum's."""
        if SIMULATED:
            t = cuda.threadIdx.x
            sums[base + t] = value
            cuda.syncthreads()
            first = base + t - t % G
            total = sums[first] * 0.0
            for i in range(G):
                total += sums[first + i]
            return total
        offset = u32(u32(G) >> u32(1))  # 32-bit: numba's int64 halving cost two shifts and two compares a round
        while offset > 0:
            value += cuda.shfl_xor_sync(FULL, value, offset)
            offset = u32(offset >> u32(1))
        cuda.syncwarp(FULL)
        return value

    @c.jit(**kw)
    def group_barrier():
        """Orders a warp's shared-memory stores before its lanes' next loads (a block barrier in the simulator)."""
        if SIMULATED:
            cuda.syncthreads()
        else:
            cuda.syncwarp(FULL)

    bank_period = u32(BANK_PERIOD[SIZE])

    @c.jit(fastmath=fast)
    def generate_packed(coords, states, box, inv_box, half2, b5, n_micro, sigma, accepted, out, m_write, G):
        """Small N: G lanes per chain (a power of two ≤ 32), 32/G chains per warp, blockDim/G per block.

        The chain is :func:`generate_shared`'s, with the block's roles taken by the lane group: atom i to
        lane i mod G, group sums by xor shuffles, warp barriers only (a warp's chains never wait for
        another warp), random numbers in batches of G microupdates (lane 0 steps the chain's stream, lane
        b converts microupdate b). A microupdate's fixed costs — the sequential stream, the sum, the
        decision — are shared by the warp's 32/G chains instead of paid by one. Dynamic shared memory:
        draws (blockDim × 5 float64), raw bits (blockDim × 6 uint64), the chains' coordinates
        (:func:`packed_chain_stride` apart), and in the simulator two sets of sum slots."""
        T = u32(cuda.blockDim.x)
        t = u32(cuda.threadIdx.x)
        l = u32(t % G)  # lane in the group
        g = u32(t // G)  # group = chain in the block
        C = u32(T // G)
        w = cuda.blockIdx.x * C + g
        N = u32(coords.shape[2])
        dyn64 = cuda.shared.array(0, dtype=numba.float64)
        dyn_bits = cuda.shared.array(0, dtype=u64)
        dyn = cuda.shared.array(0, dtype=real)
        draws = dyn64[g * G * DRAWS_PER_PROPOSAL:(g + 1) * G * DRAWS_PER_PROPOSAL]
        first_bits = T * DRAWS_PER_PROPOSAL
        bits = dyn_bits[first_bits + g * G * RAW_PER_PROPOSAL:first_bits + (g + 1) * G * RAW_PER_PROPOSAL]
        base = T * (DRAWS_PER_PROPOSAL + RAW_PER_PROPOSAL) * (8 // SIZE)
        # packed_chain_stride in 32-bit arithmetic (a warp's chains read their atoms from different banks); the
        # host function compiled for the device (int64 %) cost the float64 kernel 12 registers and its pair
        # loop's early loads: 1.1-1.6x slower on an H100 (helium_gpu_h100v17_2026-11-26's packed stage)
        stride = 3 * N + u32(u32(G) - 3 * N) % bank_period
        mine = base + g * stride
        X, Y, Z = dyn[mine:mine + N], dyn[mine + N:mine + 2 * N], dyn[mine + 2 * N:mine + 3 * N]
        sums = dyn[base + C * stride:base + C * stride + 2 * T]
        copy_in(coords, w, 0, X, l, G)
        copy_in(coords, w, 1, Y, l, G)
        copy_in(coords, w, 2, Z, l, G)
        st = cuda.local.array((1, 2), u64)
        st[0, 0] = states[0, w]
        st[0, 1] = states[1, w]
        bx, ibx, h2, b5r = real(box), real(inv_box), real(half2), real(b5)
        one = real(1.0)
        half = real(0.5)
        n_acc = 0
        write = 0
        j_moved = N
        xm = real(0.0)
        ym = xm
        zm = xm
        mask = u32(G - 1)  # G is a power of two: k mod G and j mod G by masks, not 64-bit remainders
        group_barrier()
        for k in range(n_micro):
            b = u32(k) & mask
            if b == 0:  # the next G microupdates' random numbers, in the CPU kernel's stream order
                count = min(G, n_micro - k)
                if l == 0:  # the sequential stream: 32-bit unsigned indices (numba's int64 loop and negative-
                    q = u32(0)  # index wrap-around doubled the integer instructions per draw)
                    n_raw = u32(count * RAW_PER_PROPOSAL)
                    while q < n_raw:
                        bits[q] = next_uint64(st, 0)
                        q = u32(q + 1)
                group_barrier()
                if l < count:
                    r = l * RAW_PER_PROPOSAL
                    z0, z1 = box_muller(uniform_from_bits(bits[r + 1]), uniform_from_bits(bits[r + 2]))
                    z2, _ = box_muller(uniform_from_bits(bits[r + 3]), uniform_from_bits(bits[r + 4]))
                    d = l * DRAWS_PER_PROPOSAL
                    draws[d] = min(int(uniform_from_bits(bits[r]) * N), N - 1)
                    draws[d + 1] = sigma * z0
                    draws[d + 2] = sigma * z1
                    draws[d + 3] = sigma * z2
                    draws[d + 4] = math.log(uniform_from_bits(bits[r + 5]))
                group_barrier()
            d = b * DRAWS_PER_PROPOSAL
            j = u32(draws[d])
            if j == j_moved:
                xo = xm
                yo = ym
                zo = zm
            else:
                xo = X[j]
                yo = Y[j]
                zo = Z[j]
            xn = wrap(xo + real(draws[d + 1]), bx)
            yn = wrap(yo + real(draws[d + 2]), bx)
            zn = wrap(zo + real(draws[d + 3]), bx)
            part0, part1, part2, part3 = segment_sums(X, Y, Z, N, l, G, j, xo, yo, zo, xn, yn, zn, bx, ibx, h2, half,
                                                      one)
            total = group_sum((part0 + part1) + (part2 + part3), G, sums, (k % 2) * T)
            j_moved = N
            if draws[d + 4] < -float(b5r) * float(total):  # ln ξ < 2Δu = −b⁵Δw
                j_moved = j
                xm = xn
                ym = yn
                zm = zn
                if (j & mask) == l:
                    X[j] = xn
                    Y[j] = yn
                    Z[j] = zn
                n_acc += 1
            if m_write > 0 and (k + 1) % m_write == 0 and write < out.shape[0]:
                write_segment(X, Y, Z, out, write, w, 0, l, G)
                cuda.threadfence_system()
                write += 1
        group_barrier()
        copy_out(X, coords, w, 0, l, G)
        copy_out(Y, coords, w, 1, l, G)
        copy_out(Z, coords, w, 2, l, G)
        if l == 0:
            states[0, w] = st[0, 0]
            states[1, w] = st[0, 1]
            accepted[w] += n_acc

    @c.jit
    def energies(coords, box, b5, with_potential, out):
        """out[w] = (Σ_{i<j} V, Σ_i ∇_i² ln ψ, Σ_i |∇_i ln ψ|²) of walker w (float64 sums)."""
        w = cuda.blockIdx.x
        t = cuda.threadIdx.x
        N = coords.shape[2]
        half = 0.5 * box
        warp_sums = cuda.shared.array(SLOTS, dtype=numba.float64)
        v_sum = 0.0
        lap = 0.0
        grad2 = 0.0
        for i in range(t, N, cuda.blockDim.x):
            xi = float(coords[w, 0, i])
            yi = float(coords[w, 1, i])
            zi = float(coords[w, 2, i])
            gx = 0.0
            gy = 0.0
            gz = 0.0
            for j in range(N):
                if j == i:
                    continue
                dx = xi - float(coords[w, 0, j])
                dy = yi - float(coords[w, 1, j])
                dz = zi - float(coords[w, 2, j])
                dx -= box * math.floor(dx / box + 0.5)
                dy -= box * math.floor(dy / box + 0.5)
                dz -= box * math.floor(dz / box + 0.5)
                r = math.sqrt(dx * dx + dy * dy + dz * dz)
                if r >= half:
                    continue
                if with_potential:
                    v_sum += 0.5 * aziz(r)
                s = 1.0 / r
                q = 1.0 / (box - r)
                s2 = s * s
                q2 = q * q
                cr = 2.5 * b5 * (s2 * s2 * s2 - q2 * q2 * q2) * s
                lap += -15.0 * b5 * (s2 * s2 * s2 * s + q2 * q2 * q2 * q) + 2.0 * cr
                gx += cr * dx
                gy += cr * dy
                gz += cr * dz
            grad2 += gx * gx + gy * gy + gz * gz
        v_total = block_sum(v_sum, warp_sums, 0)
        cuda.syncthreads()
        lap_total = block_sum(lap, warp_sums, 0)
        cuda.syncthreads()
        g_total = block_sum(grad2, warp_sums, 0)
        if t == 0:
            out[w, 0] = v_total
            out[w, 1] = lap_total
            out[w, 2] = g_total

    @c.jit
    def pair_histogram(coords, box, r_max, counts):
        """counts[w, k] += pairs i < j of walker w with minimum-image distance in bin k of [0, r_max)."""
        w = cuda.blockIdx.x
        t = cuda.threadIdx.x
        N = coords.shape[2]
        bins = counts.shape[1]
        hist = cuda.shared.array(1024, dtype=numba.int32)
        for k in range(t, bins, cuda.blockDim.x):
            hist[k] = 0
        cuda.syncthreads()
        scale = bins / r_max
        for i in range(t, N, cuda.blockDim.x):
            for j in range(i + 1, N):
                dx = float(coords[w, 0, i] - coords[w, 0, j])
                dy = float(coords[w, 1, i] - coords[w, 1, j])
                dz = float(coords[w, 2, i] - coords[w, 2, j])
                dx -= box * math.floor(dx / box + 0.5)
                dy -= box * math.floor(dy / box + 0.5)
                dz -= box * math.floor(dz / box + 0.5)
                k = int(math.sqrt(dx * dx + dy * dy + dz * dz) * scale)
                if k < bins:
                    cuda.atomic.add(hist, k, 1)
        cuda.syncthreads()
        for k in range(t, bins, cuda.blockDim.x):
            counts[w, k] += hist[k]

    return {"generate_shared": generate_shared, "generate_split": generate_split, "generate_global": generate_global,
            "generate_hybrid": generate_hybrid, "generate_packed": generate_packed,
            "energies": energies,
            "pair_histogram": pair_histogram}


SHARED_LIMIT_BYTES = 200 * 1024  # leave room below the H100's 227 KB per block
# coordinate components in shared memory per kind of generation kernel (float64 N ≤ 8533: shared;
# ≤ 12800: split; float32 twice that; hybrid: 3 for the first K atoms)
SHARED_COMPONENTS = {"shared": 3, "split": 2, "hybrid": 3, "packed": 3, "global": 0}
DEFAULT_SHARED_BYTES = 48 * 1024  # what a block may use without opting in
# the generation kernels' static shared arrays: two sets of block-sum slots (one per warp; consecutive
# microupdates alternate, so one barrier per microupdate keeps them apart) and one batch of
# random numbers (one lane of warp 0 per microupdate; blocks have ≥ 32 threads): raw 64-bit draws in
# the CPU kernel's stream order (j, two Box–Muller pairs, ξ) and what they become (j, δx, δy, δz, ln ξ)
BLOCK_SUM_SLOTS = 32
PROPOSALS_PER_DRAW = 32
RAW_PER_PROPOSAL = 6
DRAWS_PER_PROPOSAL = 5
STATIC_SHARED_BYTES = 8 * (2 * BLOCK_SUM_SLOTS + PROPOSALS_PER_DRAW * (RAW_PER_PROPOSAL + DRAWS_PER_PROPOSAL))
# the hybrid kernel's shared atoms fill what an H100 block may opt in to (227 KB) beside the static arrays:
# float64 K = 9546, so at N = 10240 the other 694 atoms' 16.7 KB fit the 28 KB of L1 that remain
HYBRID_LIMIT_BYTES = 227 * 1024 - STATIC_SHARED_BYTES
BANK_PERIOD = {4: 32, 8: 16}  # shared-memory banks a warp's wavefront spans, in coordinates of each byte size


def hybrid_atoms(n: int, itemsize: int) -> int:
    """Atoms whose coordinates the hybrid kernel keeps in shared memory: as many of the N as fit."""
    return min(int(n), HYBRID_LIMIT_BYTES // (3 * int(itemsize)))


def default_lanes(n: int, single: bool = False) -> int:
    """Lanes per chain of the packed kernel, the fastest on an H100 (helium_gpu_h100v16_2026-11-26's packed
    stage): float64 8 at N ≤ 128, 16 at 256, 32 (one chain per warp) at 512; float32 4 at N ≤ 64, 8 at
    128, 16 at 256 and 512; beyond, 32."""
    if n <= 64:
        return 4 if single else 8
    if n <= 128:
        return 8
    return 16 if n <= 256 or (single and n <= 512) else 32


def packed_chain_stride(n: int, itemsize: int, lanes: int) -> int:
    """Elements from one chain's coordinates to the next in a packed block: 3N, padded so that the G lanes
    of each of a warp's 32/G chains read their atoms from different shared-memory banks.

    A warp's lanes load atom i + l of their own chains in one instruction. With the chains 3N elements apart
    and 3N a multiple of 32 (N = 64, 128, 256, 512: every size the packed kernel was tuned at), lane l of
    every chain hit the same bank: in float32 a 32/G-way conflict (8-way at N = 64 with 4 lanes), in float64
    16/G-way within each half-warp's wavefront. A stride ≡ G (mod 32 four-byte banks in float32, mod 16
    eight-byte bank pairs in float64) puts lane l of chain g on bank G·g + l. On an H100 float32 N = 64 went
    from 29.5 to 33.3 % of the FMA peak (helium_gpu_h100v16 → h100v18_2026-11-26); the other sizes' defaults
    were within ±1 %."""
    return 3 * n + (lanes - 3 * n) % BANK_PERIOD[itemsize]


def packed_shared_bytes(n: int, itemsize: int, threads: int, lanes: int) -> int:
    """Dynamic shared memory of a packed block: draws and raw bits of every lane, each chain's coordinates
    (:func:`packed_chain_stride` apart), and the simulator's two sets of sum slots."""
    sums = 2 * threads * itemsize if simulated() else 0
    return (threads * (DRAWS_PER_PROPOSAL + RAW_PER_PROPOSAL) * 8
            + (threads // lanes) * packed_chain_stride(n, itemsize, lanes) * itemsize + sums)


def auto_memory(n: int, itemsize: int) -> str:
    """Where the generation kernel keeps N atoms' coordinates: for small N several chains per warp
    (packed: N ≤ 512, where a one-chain block's fixed costs per microupdate outweigh its pair terms, and
    the packed kernel's warp barriers and 32-bit stream loop beat the shared kernel's block barriers; on an
    H100 packed was faster than the shared kernel with the same chains at every N ≤ 512 (both precisions,
    helium_gpu_h100v16_2026-11-26's packed stage), and at N = 1000 slower than the shared kernel's best block
    (30.4 against 32.3 % in float64, 39.9 against 40.7 % in float32, its speed stage)); else all in shared memory while 3N
    fit in ``SHARED_LIMIT_BYTES``; else hybrid while at least a third of the atoms fit, else global memory.
    On an H100 (helium_gpu_h100hybrid2_2026-11-26) hybrid beat split by 19 % at float64 N = 10240
    (93 % of the atoms shared) and global by 27 % at float32 N = 40960 (47 %); at float64 N = 40960
    (23 %) global was 3 % faster."""
    if n <= 512:
        return "packed"
    if 3 * n * itemsize <= SHARED_LIMIT_BYTES:
        return "shared"
    return "hybrid" if 3 * hybrid_atoms(n, itemsize) >= n else "global"


def _opt_in_shared(dispatcher, args, nbytes: int):
    """A specialisation of ``dispatcher`` for ``args`` allowed ``nbytes`` of dynamic shared memory.

    Beyond 48 KB per block CUDA wants the kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES attribute raised;
    numba-cuda has no public call for it, so this sets it through its driver binding.
    """
    from numba.cuda.cudadrv import driver as drv

    spec = dispatcher.specialize(*args)
    kernel = next(iter(spec.overloads.values()))
    cufunc = kernel._codelibrary.get_cufunc()
    attr = drv.binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    drv.driver.cuKernelSetAttribute(attr, int(nbytes), cufunc.handle, cufunc.device.id)
    return spec


class HeliumChains:
    """W Metropolis chains of ``system`` on the GPU, one thread block of ``threads`` per chain (packed:
    ``threads / lanes`` chains per block).

    positions (W, N, 3) in Å; states (W, 2) uint64 (one xoroshiro128+ stream per chain);
    sigma: Gaussian step per component (Å); dtype float64 or float32; memory "shared" (all coordinates
    in shared memory during a launch), "split" (x and y there, z in global memory), "hybrid" (the
    first ``shared_atoms`` atoms there, default :func:`hybrid_atoms`, the rest in global memory),
    "packed" (small N: ``lanes`` lanes per chain, default :func:`default_lanes`, several chains per
    warp; W a multiple of the chains per block), "global", or "auto" (:func:`auto_memory`; packed only
    when W fills whole blocks); min_image, inverse, unroll: forms of the pair loop, see :func:`kernels`.
    """

    backend = "cuda"

    def __init__(self, system, positions, states, sigma: float, threads: int | None = None, dtype=np.float64,
                 memory: str = "auto", min_image: str | None = None, inverse: str = "rsqrt", unroll: int | None = None,
                 shared_atoms: int | None = None, lanes: int | None = None):
        c = _cuda()
        self.system = system
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32):
            raise ValueError(f"dtype must be float64 or float32, got {dtype!r}")
        W, N, _ = np.shape(positions)
        single = self.dtype == np.float32
        if memory == "auto":
            memory = auto_memory(N, self.dtype.itemsize)
            if memory == "packed":  # a block holds threads/lanes chains: W must fill whole blocks
                lanes = default_lanes(N, single) if lanes is None else lanes
                preferred = threads or default_threads(N, single, "packed")
                candidates = (threads,) if threads else [t for t in (256, 128, 64, 32) if t <= preferred]
                fits = [t for t in candidates if t >= lanes and W % (t // lanes) == 0]
                if fits:
                    threads = fits[0]
                else:
                    memory, lanes = "shared", None
        if memory not in SHARED_COMPONENTS:
            raise ValueError(f"memory must be auto, {', '.join(SHARED_COMPONENTS)}, got {memory!r}")
        self.shared_atoms = N
        if memory == "hybrid":
            self.shared_atoms = hybrid_atoms(N, self.dtype.itemsize) if shared_atoms is None else int(shared_atoms)
            if not 1 <= self.shared_atoms <= hybrid_atoms(N, self.dtype.itemsize):
                raise ValueError(f"shared_atoms must be in [1, {hybrid_atoms(N, self.dtype.itemsize)}] for N = {N}, "
                                 f"got {shared_atoms!r}")
        elif shared_atoms is not None:
            raise ValueError(f"shared_atoms goes with memory hybrid, not {memory!r}")
        if threads is None:
            threads = default_threads(N, single, memory)
        if threads % 32 or not 32 <= threads <= 1024:
            raise ValueError(f"threads must be a multiple of 32 in [32, 1024], got {threads!r}")
        self.lanes = None
        if memory == "packed":
            self.lanes = default_lanes(N, single) if lanes is None else lanes
            if self.lanes not in (1, 2, 4, 8, 16, 32):
                raise ValueError(f"lanes must be a power of two ≤ 32, got {lanes!r}")
            if W % (threads // self.lanes):
                raise ValueError(f"walkers must be a multiple of the {threads // self.lanes} chains per block "
                                 f"(threads / lanes), got {W}")
        elif lanes is not None:
            raise ValueError(f"lanes goes with memory packed, not {memory!r}")
        self.shared_bytes = SHARED_COMPONENTS[memory] * self.shared_atoms * self.dtype.itemsize
        if memory == "packed":
            self.shared_bytes = packed_shared_bytes(N, self.dtype.itemsize, threads, self.lanes)
        limit = HYBRID_LIMIT_BYTES if memory == "hybrid" else SHARED_LIMIT_BYTES
        if self.shared_bytes > limit:
            raise ValueError(f"memory {memory}: {SHARED_COMPONENTS[memory]}N coordinates need {self.shared_bytes} B "
                             f"> {SHARED_LIMIT_BYTES} B of shared memory")
        self.memory = memory
        self.threads = int(threads)
        self.sigma = float(sigma)
        self.constants = chain_constants(system.box, system.params.b)
        box = system.box
        host = np.asarray(positions, dtype=np.float64)
        host = host - box * np.floor(host / box)
        self.coords = c.to_device(np.ascontiguousarray(host.transpose(0, 2, 1)).astype(self.dtype))
        self.states = c.to_device(np.ascontiguousarray(np.asarray(states, dtype=np.uint64).T))
        self.accepted = c.to_device(np.zeros(W, dtype=np.int64))
        self.proposed = 0
        self._k = kernels(self.dtype == np.float32, min_image, inverse, unroll, memory)
        self._no_out = c.device_array((0, W, 3, N), dtype=self.dtype)
        self.n_walkers, self.n_atoms = W, N
        self._launchers = {}

    def generate(self, n_macro: int, out=None, m_write: int = 0, stream=0) -> None:
        """``n_macro`` macroupdates of every chain (asynchronous: returns at once on a real GPU).

        ``out`` (writeouts, W, 3, N) in device or mapped host memory receives the configuration after
        every ``m_write`` macroupdates (004's zero-copy writeouts when ``out`` is a mapped array).
        """
        out = self._no_out if out is None else out
        n_micro = int(n_macro) * self.n_atoms
        args = (self.coords, self.states, *self.constants, n_micro, self.sigma, self.accepted, out,
                int(m_write) * self.n_atoms) + ((self.shared_atoms,) if self.memory == "hybrid" else ()) \
            + ((self.lanes,) if self.memory == "packed" else ())
        kernel = self._k[f"generate_{self.memory}"]
        if self.shared_bytes + STATIC_SHARED_BYTES > DEFAULT_SHARED_BYTES and not simulated():
            key = type(out).__name__  # a specialisation per array kind (device or mapped)
            if key not in self._launchers:
                self._launchers[key] = _opt_in_shared(kernel, args, self.shared_bytes)
            kernel = self._launchers[key]
        blocks = self.n_walkers // (self.threads // self.lanes) if self.memory == "packed" else self.n_walkers
        kernel[blocks, self.threads, stream, self.shared_bytes](*args)
        self.proposed += n_micro

    def synchronize(self) -> None:
        _cuda().synchronize()

    def positions(self) -> np.ndarray:
        """(W, N, 3) float64 positions on the host."""
        return np.ascontiguousarray(self.coords.copy_to_host().transpose(0, 2, 1)).astype(np.float64)

    def states_to_host(self) -> np.ndarray:
        return np.ascontiguousarray(self.states.copy_to_host().T)

    def launch_energies(self, stream=0):
        """Start the energy kernel on the current configurations (asynchronous on a real GPU); returns
        the (W, 3) device array of Σ V, Σ ∇² ln ψ, Σ |∇ ln ψ|² for :meth:`energies_from`."""
        c = _cuda()
        p = self.system.params
        raw = c.device_array((self.n_walkers, 3), dtype=np.float64, stream=stream)
        self._k["energies"][self.n_walkers, self.threads, stream](self.coords, self.system.box, p.b ** 5,
                                                                  p.potential != "none", raw)
        return raw

    def energies(self) -> np.ndarray:
        """(W, 4) whole-walker E_L, V, T_lap, T_grad in K, computed on the GPU (float64 sums)."""
        return self.energies_from(self.launch_energies())

    def energies_from(self, raw) -> np.ndarray:
        """(W, 4) E_L, V, T_lap, T_grad in K from :meth:`launch_energies`' array (waits for it)."""
        p = self.system.params
        v, lap, grad2 = raw.copy_to_host().T
        v = v + self.system.tail * p.n
        t_lap = -0.25 * p.hbar2_over_m * lap
        t_grad = 0.5 * p.hbar2_over_m * grad2
        return np.stack([v + 2.0 * t_lap - t_grad, v, t_lap, t_grad], axis=1)

    def pair_counts(self, bins: int = 100, r_max: float | None = None) -> np.ndarray:
        """(W, bins) pair counts over [0, r_max) (default L/2), for :func:`helium.pair_distribution`-style g(r)."""
        if not 1 <= bins <= 1024:
            raise ValueError(f"bins must be in [1, 1024], got {bins!r}")
        c = _cuda()
        r_max = 0.5 * self.system.box if r_max is None else float(r_max)
        counts = c.to_device(np.zeros((self.n_walkers, bins), dtype=np.int64))
        self._k["pair_histogram"][self.n_walkers, self.threads](self.coords, self.system.box, r_max, counts)
        return counts.copy_to_host()

    @property
    def acceptance(self) -> float:
        return float(self.accepted.copy_to_host().sum() / max(1, self.proposed * self.n_walkers))
