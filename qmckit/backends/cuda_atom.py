"""GPU (numba-cuda) sweep for the atoms He, Be, Ne (:mod:`qmckit.systems.atom`): one thread per walker, float64.

The sweep is the one of :class:`qmckit.samplers.cpu.CpuSampler` — and the drift–diffusion part of DMC —
step for step, with study 002's layout "one work-item per walker" (notes/002 §4): for every
walker, electrons 0, 1, …, N−1 in turn get a single-electron proposal from the walker's own
xoroshiro128+ stream (:mod:`qmckit.backends.cuda_rng`, the CPU's generator compiled for the GPU):

* ``"drift"``: ∇_i ln ψ from the cache, the Umrigar–Nightingale–Runge drift cap s(g) (the CPU
  ``cpu_kernels.drift_scale``, applied forward and backward), two ``normal_pair`` calls (x, y, z;
  the fourth normal is discarded, as on the CPU), r' = r + Δt·s(g)·g + √Δt·χ, and the exact
  Metropolis–Hastings ratio with the moved electron's Green's function only;
* ``"brute"``: three uniforms, r' = r + step·(u − ½);

then ``test_move`` (determinant ratio from the cached transposed inverse, Padé–Jastrow ratio and
the new gradient; −inf for a node crossing when the kernel-parameter flag ``reject_node_crossing``
is set, i.e. fixed-node DMC), one fresh uniform decides, and ``accept_move`` does the
Sherman–Morrison update of the electron's spin block and the O(N) Jastrow-gradient update. After
every measured sweep the local energy (which first rebuilds the walker's cache from scratch, as on
the CPU) goes to ``energies[sweep, walker]``.

The physics is not rewritten: ``recompute``, ``gradient``, ``test_move``, ``accept_move``,
``local_energy``, ``orbitals_at`` and ``en_pade`` (the optional e–n cusp factor) of
:mod:`qmckit.systems.atom`, the Slater–Jastrow core they call (:mod:`qmckit.systems.slater_jastrow`),
``invert``, ``det_ratio`` and ``sherman_morrison_row`` of :mod:`qmckit.systems.slater` and the
``cpu_kernels.drift_scale`` are compiled a second time from
their own Python source as CUDA device functions (the technique of :mod:`qmckit.backends.cuda_rng`). The only name rebound is ``cache_views``: on the CPU it cuts one
walker's cache row into (T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP); on the GPU the "cache" passed
in *is* that tuple already — strided views of the walker's slice of the global arrays below, and
slices of per-thread local scratch sized for Ne (10 electrons, 5 orbitals per spin). None of those
functions allocates, so nothing else changes. Same walkers and RNG states therefore give the
CPU's numbers: positions and energies to round-off (FMA contraction and libdevice's last bits in
exp/log/sqrt/sin/cos), the same accept/reject decisions and the same random streams.

Two variants of the twins and kernels: the optional e–n cusp factor's code sits behind
``if EN_CUSP_CODE and p[P_EN] != 0.0`` in :mod:`qmckit.systems.atom`, and the twins are compiled
with the module-global constant ``EN_CUSP_CODE`` set to the system's ``en_cusp``
(``kernels(en_cusp=...)``; :class:`CudaAtomSweeper` picks it from the parameter vector). Without the
factor its code is dead at compile time, so the compiler keeps no registers live for a run-time
branch that is never taken (the Ne sweep's register count decides how many warps fit on an SM);
``kernels()`` with the default ``en_cusp=True`` is the general kernel. :func:`register_counts`
reports both variants' registers on a GPU.

Layout of the per-walker state: walker-fastest
-----------------------------------------------
Global memory holds, for W walkers, N electrons and n = N/2 orbitals per spin,

    pos   (N, 3, W)       positions
    T     (N, n, W)       transposed inverse Slater blocks (row i: electron i's spin block)
    DPHI  (N, n, 3, W)    ∇φ_j(r_i)
    JG    (N, 3, W)       ∇_i U (Jastrow)

i.e. the CPU's per-walker cache row, transposed so that the walker index is the fastest (the
thesis's "arraylinear off", which it measured +44 % (double) faster on its GPU). In a
thread-per-walker kernel all threads of a warp run the same electron/orbital index sequence (the
loops have the same bounds for every walker; only the accept branch differs), so the 32 threads
read 32 neighbouring doubles — one 256-byte transaction. Per-walker rows (the CPU's ``(W, C)``)
would put the 32 addresses of a warp 2 KB apart for Ne (260 doubles per walker): 32 sectors per
access with 8 useful bytes in each 32-byte sector, a 4× traffic amplification at best and L1
thrashing. The per-move scratch (orbital values/gradients at the proposal, Jastrow pair factors
before/after, the inversion work matrix) is thread-private and short-lived, so it lives in
``cuda.local.array`` (which the hardware interleaves across threads the same way).

The cache is rebuilt from the positions at the start of every launch (every :meth:`sweep`) and
by every local energy, so incremental Sherman–Morrison round-off never outlives a call, DMC
branching needs to gather only positions, and ``CudaSampler.recompute`` can stay a no-op. Within a
launch it is updated incrementally exactly as on the CPU; :meth:`CudaAtomSweeper.caches_to_host`
returns it in the CPU's cache layout (tests compare it with the CPU's incremental cache).

Importing this module never needs CUDA: ``numba.cuda`` is imported on first use.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import cuda_bec, cuda_import
from .cuda_import import available, simulated  # noqa: F401  (this module's GPU questions, answered once)

SAMPLERS = ("brute", "drift")
LAYOUTS = ("auto", "thread")
_BRUTE, _DRIFT = 0, 1
MAX_ELECTRONS = 10  # Ne; the per-thread scratch is sized for it
MAX_ORBITALS = MAX_ELECTRONS // 2
N_PARAMS = 8  # Atom.kernel_params: Z, α, β, jastrow, ee, reject_node_crossing, en_cusp, β_en
_P_EN = 6  # qmckit.systems.atom.P_EN (not imported here: importing this module stays cheap)

cuda = None  # numba.cuda, imported on first use; a module global so that the simulator can swap it


def _cuda():
    return cuda_import.bind(globals())


_twin = cuda_import.device_twin


SLATER_TWINS = ("invert", "det_ratio", "sherman_morrison_row")
SLATER_JASTROW_TWINS = ("pair_a", "pade_gradients", "slater_gradient", "determinant_move", "pade_move", "pade_accept",
                        "kinetic")  # callees first: each twin's namespace holds the ones before it


@functools.lru_cache(maxsize=None)
def shared_twins() -> dict:
    """Device twins that do not depend on the e–n switch: the Slater helpers (:mod:`qmckit.systems.slater`),
    the Slater–Jastrow core (:mod:`qmckit.systems.slater_jastrow`) and the drift cap."""
    from . import cpu_kernels, cuda_rng
    from ..systems import slater, slater_jastrow

    kw = cuda_rng._DEVICE_KW
    slater_ns = dict(vars(slater))
    slater_twins = {name: _twin(getattr(slater, name), slater_ns, kw) for name in SLATER_TWINS}
    slater_ns.update(slater_twins)
    core_ns = dict(vars(slater_jastrow))
    core_ns.update(slater_twins)
    core_twins = {}
    for name in SLATER_JASTROW_TWINS:
        core_twins[name] = core_ns[name] = _twin(getattr(slater_jastrow, name), core_ns, kw)
    return {**slater_twins, **core_twins, "drift_scale": _twin(cpu_kernels.drift_scale, dict(vars(cpu_kernels)), kw)}


def device_functions(en_cusp: bool = True) -> dict:
    """CUDA twins of the atom kernels (by name): recompute, gradient, test_move, accept_move,
    local_energy, orbitals_at, the Slater helpers and the drift cap. ``cache_views`` is the identity on
    the GPU: a kernel passes the cache as the tuple (T, DPHI, JG, U, DU, CO, CN, META, MAT, LAP).

    ``en_cusp`` is the compile-time switch ``EN_CUSP_CODE`` of :mod:`qmckit.systems.atom`: with
    False the e–n cusp factor's code is compiled out (the run-time flag p[P_EN] is then ignored, so
    these twins are only for systems without the factor); True (the default) gives the general
    twins, where p[P_EN] decides at run time."""
    return _device_functions(bool(en_cusp))


@functools.lru_cache(maxsize=None)
def _device_functions(en_cusp: bool) -> dict:
    c = _cuda()
    from . import cuda_rng
    from ..systems import atom

    kw = cuda_rng._DEVICE_KW
    shared = shared_twins()
    helpers = {name: shared[name] for name in SLATER_TWINS + SLATER_JASTROW_TWINS}

    def cache_views(cache, N):
        return cache

    atom_ns = dict(vars(atom))
    atom_ns.update(helpers)
    atom_ns["EN_CUSP_CODE"] = en_cusp  # frozen as a constant when the twins are compiled
    atom_ns["cache_views"] = c.jit(**kw)(cache_views)
    atom_twins = {name: _twin(getattr(atom, name), atom_ns, kw)
                  for name in ("orbitals_at", "en_pade", "recompute", "gradient", "test_move", "accept_move",
                               "local_energy")}
    atom_ns.update(atom_twins)
    return {**helpers, **atom_twins, "cache_views": atom_ns["cache_views"], "drift_scale": shared["drift_scale"]}


def kernels(en_cusp: bool = True, track_diffusion: bool = False, nuclear_moves: bool = False) -> dict:
    """The compiled-on-demand kernels: ``sweep`` (thread per walker) and ``energy`` (rebuild the
    caches and, with ``measure``, write every walker's local energy).

    ``en_cusp``: with False the e–n cusp factor's code is compiled out (fewer live registers; only
    for systems without the factor, see :func:`device_functions`); True (the default) gives the
    general kernels, correct for every parameter vector. :class:`CudaAtomSweeper` picks the
    variant from its system's parameters. ``track_diffusion``: the sweep also writes ``diffusion[0|1, w]``
    ((3, W); row 2 is scratch), Σ squared diffusion displacements of the proposed | accepted drift moves (DMC's
    effective time step); without it that code is compiled out. ``nuclear_moves``: the drift moves are
    Umrigar–Nightingale–Runge's near the nucleus (:mod:`qmckit.backends.nuclear_moves`, twins of the CPU's; the
    nucleus is the kernel's last argument, ``nuclei`` (1, 4)). One set of kernels per variant (cached)."""
    return _kernels(bool(en_cusp), bool(track_diffusion), bool(nuclear_moves))


@functools.lru_cache(maxsize=None)
def nuclear_twins() -> dict:
    """CUDA twins of :mod:`qmckit.backends.nuclear_moves` (drawing from the device generator)."""
    from . import cuda_rng, nuclear_moves

    ns = dict(vars(nuclear_moves))
    ns["_rng"] = cuda_rng  # uniform(st, 0) and normal_pair(st, 0): the device twins of qmckit.rng's
    twins = {}
    for name in ("nuclear_drift", "nuclear_propose", "nuclear_log_green"):
        twins[name] = ns[name] = _twin(getattr(nuclear_moves, name), ns, cuda_rng._DEVICE_KW)
    return twins


@functools.lru_cache(maxsize=None)
def _kernels(en_cusp: bool, track_diffusion: bool = False, nuclear_moves: bool = False) -> dict:
    import numba

    c = _cuda()
    from . import cuda_rng

    d = device_functions(en_cusp)
    recompute = d["recompute"]
    gradient = d["gradient"]
    test_move = d["test_move"]
    accept_move = d["accept_move"]
    local_energy = d["local_energy"]
    drift_scale = d["drift_scale"]
    uniform = cuda_rng.uniform
    normal_pair = cuda_rng.normal_pair
    f8 = numba.float64
    u64 = numba.uint64
    NEG_INF = -np.inf
    BRUTE = _BRUTE
    MAXN, MAXO, NP = MAX_ELECTRONS, MAX_ORBITALS, N_PARAMS
    TRACK = track_diffusion  # a compile-time constant: without it the tracking code is dead
    NUCLEAR = nuclear_moves  # the same for the moves near the nucleus
    if NUCLEAR:
        nuclear = nuclear_twins()
        nuclear_drift, nuclear_propose = nuclear["nuclear_drift"], nuclear["nuclear_propose"]
        nuclear_log_green = nuclear["nuclear_log_green"]

    @c.jit
    def sweep_thread_per_walker(pos, cT, cD, cJ, states, params, n_sweeps, sampler, step, dt, cap, measure,
                                energies, accepted, diffusion, nuclei):
        """pos (N, 3, W); cT (N, n, W); cD (N, n, 3, W); cJ (N, 3, W); states (2, W) uint64;
        params (8,) = Atom.kernel_params; energies (≥ n_sweeps if measure, W); accepted (W,); diffusion
        (3, W): Σ R² proposed, Σ R² accepted, this move's R², written only by the ``track_diffusion`` variant;
        nuclei (1, 4), read only by the ``nuclear_moves`` variant (the variants' arguments come last, so the
        others keep their places in the parameter bank)."""
        w = cuda.grid(1)
        if w >= pos.shape[2]:
            return
        N = pos.shape[0]
        n = N // 2
        p = cuda.local.array(NP, f8)
        for k in range(NP):
            p[k] = params[k]
        u_loc = cuda.local.array(MAXO, f8)
        du_loc = cuda.local.array((MAXO, 3), f8)
        co_loc = cuda.local.array(MAXN, f8)
        cn_loc = cuda.local.array(MAXN, f8)
        meta = cuda.local.array(1, f8)
        mat_loc = cuda.local.array((MAXO, MAXO), f8)
        lap_loc = cuda.local.array(MAXO, f8)
        R = pos[:, :, w]
        cache = (cT[:, :, w], cD[:, :, :, w], cJ[:, :, w], u_loc[:n], du_loc[:n], co_loc[:N], cn_loc[:N], meta,
                 mat_loc[:n, :n], lap_loc[:n])
        r_new = cuda.local.array(3, f8)
        g_old = cuda.local.array(3, f8)
        g_new = cuda.local.array(3, f8)
        for k in range(3):
            g_old[k] = 0.0
            g_new[k] = 0.0
        if NUCLEAR:
            drifted = cuda.local.array(3, f8)
            drifted_back = cuda.local.array(3, f8)
        st = cuda.local.array((1, 2), u64)
        st[0, 0] = states[0, w]
        st[0, 1] = states[1, w]
        sqrt_dt = math.sqrt(dt)
        recompute(R, p, cache)  # the cache is rebuilt at every launch
        n_acc = 0
        if TRACK:  # summed in global memory (row 2: the current move's R²), so no register lives across a move
            diffusion[0, w] = 0.0
            diffusion[1, w] = 0.0
            diffusion[2, w] = 0.0
        for s in range(n_sweeps):
            for i in range(N):
                if sampler == BRUTE:
                    for k in range(3):
                        r_new[k] = R[i, k] + step * (uniform(st, 0) - 0.5)
                    log_ratio = test_move(R, p, cache, i, r_new, g_new)
                    log_accept = 2.0 * log_ratio
                elif NUCLEAR:
                    gradient(R, p, cache, i, g_old)
                    k_old, p_old, zeta_old = nuclear_drift(R[i], g_old, dt, nuclei, drifted)
                    forward = nuclear_propose(st, 0, drifted, k_old, p_old, zeta_old, nuclei, dt, r_new)
                    log_ratio = test_move(R, p, cache, i, r_new, g_new)
                    log_accept = NEG_INF
                    if log_ratio > NEG_INF:
                        k_new, p_new, zeta_new = nuclear_drift(r_new, g_new, dt, nuclei, drifted_back)
                        log_accept = (2.0 * log_ratio
                                      + nuclear_log_green(R[i], drifted_back, k_new, p_new, zeta_new, nuclei, dt)
                                      - nuclear_log_green(r_new, drifted, k_old, p_old, zeta_old, nuclei, dt))
                    if TRACK:
                        diffusion[0, w] += forward
                        diffusion[2, w] = forward
                else:
                    gradient(R, p, cache, i, g_old)
                    scale_old = drift_scale(g_old, dt, cap)
                    z0, z1 = normal_pair(st, 0)
                    r_new[0] = R[i, 0] + dt * scale_old * g_old[0] + sqrt_dt * z0
                    r_new[1] = R[i, 1] + dt * scale_old * g_old[1] + sqrt_dt * z1
                    z2, _ = normal_pair(st, 0)
                    r_new[2] = R[i, 2] + dt * scale_old * g_old[2] + sqrt_dt * z2
                    log_ratio = test_move(R, p, cache, i, r_new, g_new)
                    scale_new = drift_scale(g_new, dt, cap)
                    # ln G(r'→r) − ln G(r→r') for the moved electron only
                    forward = 0.0
                    backward = 0.0
                    for k in range(3):
                        fk = r_new[k] - R[i, k] - dt * scale_old * g_old[k]
                        bk = R[i, k] - r_new[k] - dt * scale_new * g_new[k]
                        forward += fk * fk
                        backward += bk * bk
                    log_accept = 2.0 * log_ratio + (forward - backward) / (2.0 * dt)
                    if TRACK:
                        diffusion[0, w] += forward
                        diffusion[2, w] = forward
                u = uniform(st, 0)
                if log_ratio > NEG_INF and u < math.exp(min(log_accept, 0.0)):
                    accept_move(R, p, cache, i, r_new, g_new)
                    n_acc += 1
                    if TRACK:
                        diffusion[1, w] += diffusion[2, w]
            if measure != 0:
                energies[s, w] = local_energy(R, p, cache)
        states[0, w] = st[0, 0]
        states[1, w] = st[0, 1]
        accepted[w] = n_acc

    @c.jit
    def energy_thread_per_walker(pos, cT, cD, cJ, params, measure, out):
        """Rebuild every walker's cache; with ``measure`` also out[w] = E_L (which rebuilds it too)."""
        w = cuda.grid(1)
        if w >= pos.shape[2]:
            return
        N = pos.shape[0]
        n = N // 2
        p = cuda.local.array(NP, f8)
        for k in range(NP):
            p[k] = params[k]
        u_loc = cuda.local.array(MAXO, f8)
        du_loc = cuda.local.array((MAXO, 3), f8)
        co_loc = cuda.local.array(MAXN, f8)
        cn_loc = cuda.local.array(MAXN, f8)
        meta = cuda.local.array(1, f8)
        mat_loc = cuda.local.array((MAXO, MAXO), f8)
        lap_loc = cuda.local.array(MAXO, f8)
        R = pos[:, :, w]
        cache = (cT[:, :, w], cD[:, :, :, w], cJ[:, :, w], u_loc[:n], du_loc[:n], co_loc[:N], cn_loc[:N], meta,
                 mat_loc[:n, :n], lap_loc[:n])
        if measure != 0:
            out[w] = local_energy(R, p, cache)
        else:
            recompute(R, p, cache)

    return {"sweep": sweep_thread_per_walker, "energy": energy_thread_per_walker}


@functools.lru_cache(maxsize=None)
def branch_kernel():
    """DMC branching on the device in one launch: ``branch(pos, states, plan, new_pos, new_states)``.

    ``plan`` (uint64) holds, for the W' = new_pos.shape[2] new walkers, the parents ``index`` (W'), then ``slot``
    (W': 0 keeps the parent's random state, j ≥ 1 takes fresh state j − 1), then the fresh states (2 words each).
    Thread w copies walker index[w]'s position (N, d) and state into column w of new_pos and new_states."""
    _cuda()

    @cuda.jit
    def branch(pos, states, plan, new_pos, new_states):
        w = cuda.grid(1)
        W = new_pos.shape[2]
        if w >= W:
            return
        parent = int(plan[w])
        for i in range(new_pos.shape[0]):
            for k in range(new_pos.shape[1]):
                new_pos[i, k, w] = pos[i, k, parent]
        slot = int(plan[W + w])
        if slot == 0:
            new_states[0, w] = states[0, parent]
            new_states[1, w] = states[1, parent]
        else:
            new_states[0, w] = plan[2 * W + 2 * (slot - 1)]
            new_states[1, w] = plan[2 * W + 2 * (slot - 1) + 1]

    return branch


# --------------------------------------------------------------------------------------------
# host side
# --------------------------------------------------------------------------------------------
class CudaAtomSweeper:
    """VMC sweeps of an atom (He, Be, Ne) on the GPU, one thread per walker, mirroring
    :meth:`qmckit.samplers.cpu.CpuSampler.sweep` (and the drift–diffusion of DMC).

    Positions (as ``(N, 3, W)``), the Slater–Jastrow cache (walker-fastest, see the module
    docstring) and RNG states (``(2, W)``) stay on the device between :meth:`sweep` calls;
    :meth:`to_host` copies positions and states back into the :class:`~qmckit.walkers.Walkers`
    object, :meth:`from_host` re-uploads them, :meth:`branch` does DMC branching on the device.

    Parameters
    ----------
    system : :class:`qmckit.systems.atom.Atom` (its ``kernel_params`` carry the fixed-node flag)
    walkers : :class:`qmckit.walkers.Walkers` with positions (W, N, 3); host caches are optional
    sampler : "drift" | "brute"
    dt, step, drift_cap : as for :class:`~qmckit.samplers.cpu.CpuSampler`
    layout : "auto" | "thread" (one thread per walker; the only layout for atoms)
    dtype : np.float64 (the only precision for atoms)
    threads_per_block : threads per block (default 128)

    ``en_cusp_code`` says which kernel variant runs: the e–n cusp factor's code compiled in (True,
    the system has ``en_cusp``) or compiled out (False); :meth:`registers` gives its register counts.
    """

    DTYPES = (np.dtype(np.float64),)  # the precisions the kernels come in
    DEVICE_AXES = (1, 2, 0)  # the device positions are the host's (W, N, d) transposed so: (N, d, W)
    CACHE_VIEWS = (0, 1, 2)  # the device cache arrays T, DPHI, JG are these views of the system's cache_views

    def __init__(self, system, walkers, sampler: str = "drift", dt: float = 0.05, step: float = 1.0,
                 drift_cap: bool = True, layout: str = "auto", dtype=np.float64, threads_per_block=None,
                 nuclear_moves: bool = False):
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)} for {system.name} on the GPU, got {layout!r}")
        try:
            dtype_ok = np.dtype(dtype) in self.DTYPES
        except TypeError:
            dtype_ok = False
        if not dtype_ok:
            raise ValueError(f"dtype must be {' or '.join(d.name for d in self.DTYPES)} for {system.name} on the GPU, "
                             f"got {dtype!r}")
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be a positive time step, got {dt!r}")
        if not (step > 0 and math.isfinite(step)):
            raise ValueError(f"step must be positive, got {step!r}")
        self.dim = self._check_system(system, walkers)
        threads = 128 if threads_per_block is None else int(threads_per_block)
        if threads < 1 or threads > 1024:
            raise ValueError(f"threads_per_block must be in 1…1024, got {threads_per_block!r}")
        self.system = system
        self.walkers = walkers
        self.sampler = sampler
        self.dt = float(dt)
        self.step = float(step)
        self.drift_cap = bool(drift_cap)
        self.layout = "thread"
        self.dtype = np.dtype(dtype)
        self.threads = threads
        self.shared_bytes = 0
        self.blocks = (walkers.n_walkers + threads - 1) // threads
        self._params_host = np.ascontiguousarray(system.kernel_params, dtype=np.float64)
        self.nuclear_moves = bool(nuclear_moves)  # the drift moves near the nucleus (a kernel variant)
        self._nuclei_host = np.ascontiguousarray(system.nuclei() if nuclear_moves else np.zeros((1, 4)),
                                                 dtype=np.float64)
        self._k = self._select_kernels()
        self._energies = {}
        self.last_accepted = np.zeros(walkers.n_walkers, dtype=np.int64)
        self.track_diffusion = False  # True: sweeps run the kernel variant that fills last_diffusion (DMC)
        self.last_diffusion = None
        self.from_host()

    def _check_system(self, system, walkers) -> int:
        """Refuse what the kernels cannot take; the spatial dimension d of the walkers."""
        N = system.n_particles
        if walkers.dim != 3 or walkers.n_particles != N:
            raise ValueError(f"walkers must have shape (W, {N}, 3), got {walkers.positions.shape}")
        if N > MAX_ELECTRONS or N % 2:
            raise ValueError(f"the GPU atom kernel takes an even N ≤ {MAX_ELECTRONS} electrons, got {N}")
        return 3

    def _select_kernels(self, track_diffusion: bool = False) -> dict:
        if self._params_host.shape != (N_PARAMS,):
            raise ValueError(f"system.kernel_params must have {N_PARAMS} entries, got {self._params_host.shape}")
        # the e–n cusp factor's code is compiled in only where the parameters switch it on (the
        # kernels read exactly this vector, so its flag, = system.params.en_cusp, decides)
        self.en_cusp_code = bool(self._params_host[_P_EN] != 0.0)
        return kernels(en_cusp=self.en_cusp_code, track_diffusion=track_diffusion, nuclear_moves=self.nuclear_moves)

    # --- data movement -------------------------------------------------------------------------
    def _allocate_caches(self, W: int) -> None:
        """Device caches, accepted counts and energy blocks for at least W walkers. They are kept while they hold W
        (DMC's population changes by a few walkers each step, and allocating device memory at every branching cost
        more than the sweep itself), else allocated for 1.25 W; the kernels use the first W columns (their walker
        count is the positions' last axis)."""
        if W <= getattr(self, "_capacity", -1):
            return
        c = _cuda()
        self._capacity = max(W + W // 4, 1)
        self._caches = self._new_caches(self._capacity)
        # Mapped host memory, which the kernels read and write over the bus: branch_forked's plan (parents, slots,
        # fresh states: at most 4 words a walker) and the sweeps' accepted counts. Each CUDA call costs a DMC step
        # hundreds of µs of host time on the lent GPU machines (a copy of 160 kB as much as one of 1 kB), and these
        # need none; the sweep's copy of its energies, which waits for the kernel, comes before the host reads them.
        self._accepted = c.mapped_array(self._capacity, dtype=np.int64)
        self._plan = c.mapped_array(4 * self._capacity, dtype=np.uint64)
        self._spare_states = c.device_array((2, self._capacity), dtype=np.uint64)  # the states branching gathers into
        self._no_diffusion = c.device_array((3, 1), dtype=np.float64)  # the VMC kernels never touch it
        self._no_energies = c.device_array(1, dtype=np.float64)
        self._energies = {}

    def _new_caches(self, capacity: int) -> tuple:
        """The kernels' cache arguments for ``capacity`` walkers, in order (CACHE_VIEWS: their places in the system's
        cache_views tuple): T (N, n, W), DPHI (N, n, d, W), JG (N, d, W)."""
        c = _cuda()
        N, d = self.walkers.n_particles, self.dim
        n = N // 2
        return (c.device_array((N, n, capacity), dtype=np.float64),
                c.device_array((N, n, d, capacity), dtype=np.float64), c.device_array((N, d, capacity), dtype=np.float64))

    def from_host(self) -> None:
        """(Re)upload positions and RNG states from the Walkers object; the device caches are
        rebuilt from the positions (host caches are never uploaded)."""
        c = _cuda()
        w = self.walkers
        self._params = c.to_device(self._params_host)
        self._nuclei = c.to_device(self._nuclei_host)
        self._pos = c.to_device(np.ascontiguousarray(w.positions.transpose(1, 2, 0), dtype=np.float64))
        self._pos_flat = self._spare_pos = None  # branch_forked's two flat position buffers (_pos views the first)
        self._views = {}
        self._states = c.to_device(np.ascontiguousarray(w.rng_states.T, dtype=np.uint64))
        self._allocate_caches(w.n_walkers)
        self.recompute()

    def to_host(self, recompute_caches: bool = True):
        """Copy positions and RNG states back into the Walkers object and return it.

        With ``recompute_caches`` (and host caches of the system's size) the CPU caches are rebuilt
        from the new positions, so a CPU :class:`~qmckit.samplers.cpu.CpuSampler` can continue from here.
        """
        w = self.walkers
        w.positions[...] = self._pos.copy_to_host().transpose(2, 0, 1)
        w.rng_states[...] = self._states.copy_to_host().T[:w.n_walkers]
        if recompute_caches and w.caches.shape[1] == self.system.cache_size():
            from .cpu_kernels import kernels_for

            kernels_for(type(self.system)).recompute_all(w.positions, w.caches, self.system.kernel_params)
        return w

    def caches_to_host(self) -> np.ndarray:
        """The device caches in the CPU's layout, (W, cache_size): the arrays the device holds (T, DPHI and JG
        for atoms; incrementally updated since the last rebuild), the scratch entries zero. Valid after
        :meth:`from_host`, :meth:`recompute` or a sweep; not between :meth:`branch` and the next sweep
        (branching gathers positions only)."""
        W, N = self.walkers.n_walkers, self.walkers.n_particles
        out = np.zeros((W, self.system.cache_size()))
        held = [a.copy_to_host() for a in self._caches]
        for k in range(W):
            views = self._cache_views(out[k], N)
            for place, array in zip(self.CACHE_VIEWS, held):
                views[place][...] = array[..., k]
        return out

    @staticmethod
    def _cache_views(row, N):
        from ..systems.atom import cache_views

        return cache_views(row, N)

    def recompute(self) -> None:
        """Rebuild the device caches from the device positions (every launch does this anyway)."""
        self._launch_energy(0, self._no_energies)  # not written without measure

    def _launch_energy(self, measure: int, out) -> None:
        if self.walkers.n_walkers:
            self._k["energy"][self.blocks, self.threads](self._pos, *self._caches, self._params, int(measure), out)

    def local_energies(self) -> np.ndarray:
        """Local energy of every walker now, (W,), computed on the device."""
        c = _cuda()
        out = c.device_array(self.walkers.n_walkers, dtype=np.float64)
        self._launch_energy(1, out)
        return out.copy_to_host()

    def branch(self, index: np.ndarray, states: np.ndarray) -> None:
        """Replace the walkers by ``walkers[index]`` on the device (DMC branching).

        ``index`` (W',) picks the parents; ``states`` (W', 2) are the new random states (forked for
        copies on the host). Positions are gathered on the device; caches are not (the next launch
        rebuilds them). The host :class:`~qmckit.walkers.Walkers` gets the new size with positions
        that are stale until :meth:`to_host`.
        """
        c = _cuda()
        index = np.ascontiguousarray(index, dtype=np.int64)
        W_new, N, d = index.size, self.walkers.n_particles, self.dim
        new_pos = c.device_array((N, d, W_new), dtype=np.float64)
        threads = 128
        if W_new:
            # gather[k, i, w] = src[k, i, index[w]] with grid (walkers, dim 1, dim 0)
            cuda_bec.gather_kernel()[((W_new + threads - 1) // threads, d, N), threads](
                self._pos, c.to_device(index), new_pos)
        self._pos = new_pos
        self._pos_flat = None
        self._states = c.to_device(np.ascontiguousarray(states.T, dtype=np.uint64))
        self._allocate_caches(W_new)
        w = self.walkers
        self.walkers = type(w)(np.empty((W_new, N, d)), np.zeros((W_new, 0)), np.ones(W_new),
                               np.ascontiguousarray(states, dtype=np.uint64))
        self.blocks = (W_new + self.threads - 1) // self.threads
        self.last_accepted = np.zeros(W_new, dtype=np.int64)

    def branch_forked(self, index: np.ndarray, children: np.ndarray, fresh: np.ndarray) -> None:
        """:meth:`branch` with the random states gathered on the device: new walker w gets walker ``index[w]``'s
        position and state, except the rows ``children`` (K,), whose states are ``fresh`` (K, 2) (forked on the
        host). One launch (:func:`branch_kernel`, which reads the plan from mapped host memory), nothing allocated
        on the device while the population fits the capacity: positions and states are gathered into spare buffers
        that then swap with the current ones (the positions are a (N, d, W') view of the head of a flat buffer,
        C-contiguous like an array of their own, so the sweep kernels are the same). The host walkers' states, like
        their positions, are stale until :meth:`to_host`."""
        c = _cuda()
        if self._branch_pending:  # no sweep waited for the last branching's launch (a split run's resampling)
            c.synchronize()
        index = np.asarray(index, dtype=np.int64)
        W_new, K, N, d = index.size, len(children), self.walkers.n_particles, self.dim
        self._allocate_caches(W_new)
        if self._spare_pos is None or self._spare_pos.size < N * d * W_new:
            self._spare_pos = c.device_array(N * d * self._capacity, dtype=np.float64)
            self._views = {}  # views only of the two live buffers, so that their ids name them
        if self._spare_states.shape[1] < W_new:  # after from_host the spare is the uploaded (2, W) states
            self._spare_states = c.device_array((2, self._capacity), dtype=np.uint64)
        key = (id(self._spare_pos), W_new)
        if key not in self._views:  # the population takes a few hundred sizes; each view is made once
            self._views[key] = self._spare_pos[:N * d * W_new].reshape(N, d, W_new)
        new_pos = self._views[key]
        if W_new:
            plan = self._plan  # the previous branching's launch has finished (a sweep or the synchronize waited)
            plan[:W_new] = index
            plan[W_new:2 * W_new] = 0
            plan[W_new + np.asarray(children, dtype=np.int64)] = np.arange(1, K + 1, dtype=np.uint64)
            plan[2 * W_new:2 * W_new + 2 * K] = np.asarray(fresh, dtype=np.uint64).ravel()
            threads = 128
            branch_kernel()[(W_new + threads - 1) // threads, threads](self._pos, self._states, self._plan, new_pos,
                                                                       self._spare_states)
            self._branch_pending = True
        self._pos, self._pos_flat, self._spare_pos = new_pos, self._spare_pos, self._pos_flat
        self._states, self._spare_states = self._spare_states, self._states
        w = self.walkers
        self.walkers = type(w)(np.empty((W_new, N, d)), np.zeros((W_new, 0)), np.ones(W_new),
                               np.zeros((W_new, 2), dtype=np.uint64))
        self.blocks = (W_new + self.threads - 1) // self.threads
        self.last_accepted = np.zeros(W_new, dtype=np.int64)

    def rng_states(self) -> np.ndarray:
        """The walkers' random states (W, 2), fetched from the device (16 bytes per walker)."""
        return np.ascontiguousarray(self._states.copy_to_host().T[:self.walkers.n_walkers])

    # --- sweeps --------------------------------------------------------------------------------
    def launch(self, n_sweeps: int, measure: bool = True):
        """Start ``n_sweeps`` sweeps on the device and return the device energy array
        ``(max(n_sweeps, 1), capacity ≥ W)`` without waiting (for timing; rows are valid only if ``measure``, and
        only their first W columns); with ``track_diffusion`` three more rows follow, the kernel's ``diffusion`` (one
        copy brings both back)."""
        c = _cuda()
        W = self.walkers.n_walkers
        rows = max(int(n_sweeps), 1)
        extra = 3 if self.track_diffusion else 0
        if (rows, extra) not in self._energies:
            block = c.device_array((rows + extra, self._capacity), dtype=np.float64)
            # with its pinned host twin, which sweep() copies into (no host allocation per sweep)
            self._energies[rows, extra] = (block, block[rows:] if extra else self._no_diffusion,
                                           c.pinned_array(block.shape, dtype=np.float64))
        energies, diffusion, _ = self._energies[rows, extra]
        if W:
            if extra and getattr(self, "_k_diffusion", None) is None:  # looked up once (a molecule's key is its basis)
                self._k_diffusion = self._select_kernels(True)
            sweep = self._k_diffusion["sweep"] if extra else self._k["sweep"]
            sweep[self.blocks, self.threads](
                self._pos, *self._caches, self._states, self._params, int(n_sweeps),
                _BRUTE if self.sampler == "brute" else _DRIFT, float(self.step), float(self.dt), int(self.drift_cap),
                int(bool(measure)), energies, self._accepted, diffusion, self._nuclei)
        return energies

    def sweep(self, n_sweeps: int, measure: bool = True):
        """Run ``n_sweeps`` sweeps of N single-electron moves on every walker.

        Returns ``(energies (n_sweeps or 0, W) float64, acceptance)`` like ``VMC.sweep``; the
        per-walker accepted counts of this call are in ``last_accepted``, and with ``track_diffusion`` the
        diffusion sums (2, W) in ``last_diffusion``.
        """
        W, N = self.walkers.n_walkers, self.walkers.n_particles
        if getattr(self, "_launch_events", None) is None:
            self._launch_events = cuda_import.LaunchEvents()
        self._launch_events.start()
        energies = self.launch(n_sweeps, measure)
        self._launch_events.stop()
        rows = max(int(n_sweeps), 1)
        extra = 3 if self.track_diffusion else 0
        host = (energies.copy_to_host(self._energies[rows, extra][2])[:, :W]
                if (measure and n_sweeps > 0) or self.track_diffusion else None)
        if host is None:
            _cuda().synchronize()  # the kernel has written the (mapped) accepted counts
        self._branch_pending = False  # the copy or the synchronize waited for every launch before this sweep's
        self.last_accepted = np.array(self._accepted[:W]) if W else np.zeros(0, dtype=np.int64)
        if self.track_diffusion:
            self.last_diffusion = host[rows:rows + 2].copy()
        out = host[:n_sweeps].astype(np.float64) if measure and n_sweeps > 0 else np.empty((0, W))
        self.last_kernel_s = self._launch_events.seconds()  # the copies above waited for the kernel anyway
        proposed = n_sweeps * W * N
        return out, (self.last_accepted.sum() / proposed if proposed else 0.0)

    last_kernel_s = None  # seconds the last sweep's kernel took on the device (CUDA events; None under the simulator)
    _branch_pending = False  # a branching launch that may still read the mapped plan


    def registers(self) -> dict:
        """Registers per thread of this sweeper's compiled kernels, {"sweep": int, "energy": int}
        (None for a kernel not compiled yet, and under the simulator)."""
        return {name: _regs(kernel) for name, kernel in self._k.items()}

    def __repr__(self):
        return (f"CudaAtomSweeper({self.system!r}, W={self.walkers.n_walkers}, sampler={self.sampler!r}, "
                f"threads={self.threads})")


# --------------------------------------------------------------------------------------------
# register usage (real GPU only)
# --------------------------------------------------------------------------------------------
def _regs(kernel):
    """Registers per thread of a compiled kernel (its first compiled signature; the atom kernels are
    compiled for one signature), or None (not compiled yet, or the simulator)."""
    get = getattr(kernel, "get_regs_per_thread", None)
    if get is None:
        return None
    regs = get()
    if isinstance(regs, dict):
        regs = next(iter(regs.values()), None)
    return None if regs is None else int(regs)


def _local_bytes(kernel):
    get = getattr(kernel, "get_local_mem_per_thread", None)
    if get is None:
        return None
    size = get()
    if isinstance(size, dict):
        size = next(iter(size.values()), None)
    return None if size is None else int(size)


def register_counts(element: str = "Ne", compile: bool = True) -> dict:
    """Registers (and local memory bytes) per thread of the sweep and energy kernels, per e–n variant:

        {"en_cusp=False": {"sweep": 152, "energy": 96, "sweep_local_bytes": ..., ...}, "en_cusp=True": {...}}

    With ``compile`` (the default) each variant is first compiled by a one-sweep launch of one
    ``element`` walker (drift sampler), so this works in a fresh process; without it, only kernels
    compiled already are reported (None otherwise). On a GPU machine:

        python -c "from qmckit.backends import cuda_atom; print(cuda_atom.register_counts())"

    Under the simulator there are no registers: every count is None."""
    out = {}
    for en_cusp in (False, True):
        if compile:
            from ..systems.atom import Atom
            from ..walkers import Walkers

            system = Atom(element=element, en_cusp=en_cusp)
            walkers = Walkers.from_positions(system.initial_positions(1, np.random.default_rng(0)), 1, 0)
            sweeper = CudaAtomSweeper(system, walkers, sampler="drift", dt=0.01, threads_per_block=32)
            sweeper.sweep(1)  # compiles both kernels (the constructor ran the energy kernel)
        k = kernels(en_cusp=en_cusp)
        row = {name: _regs(kernel) for name, kernel in k.items()}
        row.update({f"{name}_local_bytes": _local_bytes(kernel) for name, kernel in k.items()})
        out[f"en_cusp={en_cusp}"] = row
    return out
