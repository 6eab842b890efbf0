"""GPU (numba-cuda) sweep for electrons in a quantum dot (:mod:`qmckit.systems.qdot`): the atoms' machinery.

One thread per walker, float64, exactly as :mod:`qmckit.backends.cuda_atom`: the quantum dot's own
kernels (``recompute``, ``gradient``, ``test_move``, ``accept_move``, ``local_energy``, ``orbitals_at``) and the
Slater helpers are compiled a second time from their Python source as CUDA device functions, ``cache_views``
rebound to the identity (a kernel passes the cache as the tuple (T, DPHI, JG, U, DU, CO, CN, META, MAT,
LAP): strided views of the walker's slice of the walker-fastest global arrays and thread-local scratch).
The sweep kernel is the atoms' in d = 2 or 3 dimensions: for every electron in turn, a drift–diffusion
proposal from ⌈d/2⌉ normal pairs (the last normal of an odd d discarded, as on the CPU) or d uniforms,
the exact Metropolis–Hastings ratio with the moved electron's Green's function, a fresh uniform. Same
walkers and random states give the CPU's decisions and streams, positions and energies to round-off.

Sizes: N ≤ 20 electrons (2D and 3D closed shells up to N = 20), d ≤ 3. :class:`CudaQdotSweeper` is
:class:`~qmckit.backends.cuda_atom.CudaAtomSweeper` with these kernels; ``QuantumDot.capabilities.gpu``
names it, so ``qmckit run qdot --backend cuda`` runs VMC and fixed-node DMC on the GPU.

Importing this module never needs CUDA: ``numba.cuda`` is imported on first use.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import cuda_atom, cuda_import
from .cuda_atom import CudaAtomSweeper
from .cuda_import import available, simulated  # noqa: F401  (this module's GPU questions, answered once)

MAX_ELECTRONS = 20
MAX_ORBITALS = MAX_ELECTRONS // 2
MAX_DIM = 3
_BRUTE = 0

cuda = None  # numba.cuda, imported on first use; a module global so that the simulator can swap it


def _cuda():
    return cuda_import.bind(globals())


@functools.lru_cache(maxsize=None)
def device_functions() -> dict:
    """CUDA twins of the quantum dot's kernels (by name), with the atoms' Slater helpers and drift cap."""
    c = _cuda()
    from . import cuda_rng
    from ..systems import qdot

    kw = cuda_rng._DEVICE_KW
    shared = cuda_atom.shared_twins()
    ns = dict(vars(qdot))
    ns.update({name: shared[name] for name in cuda_atom.SLATER_TWINS})

    def cache_views(cache, N, d):
        return cache

    ns["cache_views"] = c.jit(**kw)(cache_views)
    twins = {}
    for name in ("hermite", "hermite_factor", "pair_a", "distance", "orbitals_at", "recompute", "gradient", "test_move",
                 "accept_move", "local_energy"):  # callees first: each twin's namespace holds the ones before it
        twins[name] = ns[name] = cuda_import.device_twin(getattr(qdot, name), ns, kw)
    return {**twins, "drift_scale": shared["drift_scale"]}


@functools.lru_cache(maxsize=None)
def kernels(track_diffusion: bool = False) -> dict:
    """The compiled-on-demand kernels: ``sweep`` (thread per walker) and ``energy``; ``track_diffusion`` as
    :func:`qmckit.backends.cuda_atom.kernels` (the sweep's diffusion sums, compiled out without it)."""
    import numba

    c = _cuda()
    from . import cuda_rng
    from ..systems.qdot import HEADER

    d_ = device_functions()
    recompute, gradient, test_move = d_["recompute"], d_["gradient"], d_["test_move"]
    accept_move, local_energy, drift_scale = d_["accept_move"], d_["local_energy"], d_["drift_scale"]
    uniform, normal_pair = cuda_rng.uniform, cuda_rng.normal_pair
    f8, u64 = numba.float64, numba.uint64
    NEG_INF = -np.inf
    BRUTE = _BRUTE
    MAXN, MAXO, MAXD = MAX_ELECTRONS, MAX_ORBITALS, MAX_DIM
    NP = HEADER + 3 * MAX_ORBITALS
    TRACK = bool(track_diffusion)  # a compile-time constant: without it the tracking code is dead

    @c.jit
    def sweep_thread_per_walker(pos, cT, cD, cJ, states, params, n_sweeps, sampler, step, dt, cap, measure,
                                energies, accepted, diffusion, nuclei):
        """pos (N, d, W); cT (N, n, W); cD (N, n, d, W); cJ (N, d, W); states (2, W) uint64;
        params = QuantumDot.kernel_params; energies (≥ n_sweeps if measure, W); accepted (W,); diffusion
        (3, W) as in :mod:`qmckit.backends.cuda_atom`, written only by the ``track_diffusion`` variant; nuclei:
        unused (a dot has none; the atoms' launch passes it)."""
        w = cuda.grid(1)
        if w >= pos.shape[2]:
            return
        N = pos.shape[0]
        d = pos.shape[1]
        n = N // 2
        p = cuda.local.array(NP, f8)
        for k in range(params.shape[0]):
            p[k] = params[k]
        u_loc = cuda.local.array(MAXO, f8)
        du_loc = cuda.local.array((MAXO, MAXD), f8)
        co_loc = cuda.local.array(MAXN, f8)
        cn_loc = cuda.local.array(MAXN, f8)
        meta = cuda.local.array(1, f8)
        mat_loc = cuda.local.array((MAXO, MAXO), f8)
        lap_loc = cuda.local.array(MAXO, f8)
        R = pos[:, :, w]
        cache = (cT[:, :, w], cD[:, :, :, w], cJ[:, :, w], u_loc[:n], du_loc[:n, :d], co_loc[:N], cn_loc[:N], meta,
                 mat_loc[:n, :n], lap_loc[:n])
        r_loc = cuda.local.array(MAXD, f8)
        go_loc = cuda.local.array(MAXD, f8)
        gn_loc = cuda.local.array(MAXD, f8)
        r_new, g_old, g_new = r_loc[:d], go_loc[:d], gn_loc[:d]
        for k in range(d):
            g_old[k] = 0.0
            g_new[k] = 0.0
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
                    for k in range(d):
                        r_new[k] = R[i, k] + step * (uniform(st, 0) - 0.5)
                    log_ratio = test_move(R, p, cache, i, r_new, g_new)
                    log_accept = 2.0 * log_ratio
                else:
                    gradient(R, p, cache, i, g_old)
                    scale_old = drift_scale(g_old, dt, cap)
                    k = 0
                    while k < d:  # ⌈d/2⌉ normal pairs, as the CPU sweep draws them
                        z0, z1 = normal_pair(st, 0)
                        r_new[k] = R[i, k] + dt * scale_old * g_old[k] + sqrt_dt * z0
                        if k + 1 < d:
                            r_new[k + 1] = R[i, k + 1] + dt * scale_old * g_old[k + 1] + sqrt_dt * z1
                        k += 2
                    log_ratio = test_move(R, p, cache, i, r_new, g_new)
                    scale_new = drift_scale(g_new, dt, cap)
                    forward = 0.0
                    backward = 0.0
                    for k in range(d):  # ln G(r'→r) − ln G(r→r') for the moved electron only
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
        d = pos.shape[1]
        n = N // 2
        p = cuda.local.array(NP, f8)
        for k in range(params.shape[0]):
            p[k] = params[k]
        u_loc = cuda.local.array(MAXO, f8)
        du_loc = cuda.local.array((MAXO, MAXD), f8)
        co_loc = cuda.local.array(MAXN, f8)
        cn_loc = cuda.local.array(MAXN, f8)
        meta = cuda.local.array(1, f8)
        mat_loc = cuda.local.array((MAXO, MAXO), f8)
        lap_loc = cuda.local.array(MAXO, f8)
        R = pos[:, :, w]
        cache = (cT[:, :, w], cD[:, :, :, w], cJ[:, :, w], u_loc[:n], du_loc[:n, :d], co_loc[:N], cn_loc[:N], meta,
                 mat_loc[:n, :n], lap_loc[:n])
        if measure != 0:
            out[w] = local_energy(R, p, cache)
        else:
            recompute(R, p, cache)

    return {"sweep": sweep_thread_per_walker, "energy": energy_thread_per_walker}


class CudaQdotSweeper(CudaAtomSweeper):
    """VMC sweeps (and DMC's drift–diffusion) of a quantum dot on the GPU, one thread per walker:
    :class:`~qmckit.backends.cuda_atom.CudaAtomSweeper` with the quantum dot's kernels, in 2 or 3 dimensions."""

    def _check_system(self, system, walkers) -> int:
        N, d = system.n_particles, system.dim
        if walkers.dim != d or walkers.n_particles != N:
            raise ValueError(f"walkers must have shape (W, {N}, {d}), got {walkers.positions.shape}")
        if N > MAX_ELECTRONS or d > MAX_DIM:
            raise ValueError(f"the GPU quantum-dot kernel takes N ≤ {MAX_ELECTRONS} electrons in d ≤ {MAX_DIM}, "
                             f"got N = {N}, d = {d}")
        return d

    def _select_kernels(self, track_diffusion: bool = False) -> dict:
        return kernels(bool(track_diffusion))

    def _cache_views(self, row, N):
        from ..systems.qdot import cache_views

        return cache_views(row, N, self.dim)

    def __repr__(self):
        return (f"CudaQdotSweeper({self.system!r}, W={self.walkers.n_walkers}, sampler={self.sampler!r}, "
                f"threads={self.threads})")
