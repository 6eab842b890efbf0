"""GPU (numba-cuda) sweep for a closed-shell molecule in a Gaussian basis (:mod:`qmckit.systems.molecule`): the
atoms' machinery, one thread per walker, float64 (``dtype=float32``: study 001's orbital contraction in float32,
:func:`~qmckit.systems.molecule._orbitals_f32`, everything after the orbital rows still float64).

The sweep is :mod:`qmckit.backends.cuda_atom`'s step for step: for every walker, electrons 0, 1, …, N−1 in turn
get a single-electron drift–diffusion (or uniform) proposal from the walker's own xoroshiro128+ stream, the exact
Metropolis–Hastings ratio with the moved electron's Green's function, and a fresh uniform decides; fixed-node DMC
rejects a node crossing through the kernel-parameter flag. The moves near nuclei (``nuclear_moves``) and the
diffusion sums of DMC's effective time step are compile-time variants, as for the atoms.

The physics is not rewritten: the molecule's ``recompute``, ``gradient``, ``test_move``, ``accept_move`` and
``local_energy`` (with the orbital evaluation ``eval_point`` of :mod:`qmckit.systems.gaussian_basis`, the cusp
correction of :mod:`qmckit.systems.gaussian_cusp`, the e–n Padé and polynomial Jastrow terms, and the
Slater–Jastrow core) are compiled a second time from their own Python source as CUDA device functions. Two names
are rebound:

* ``cache_views`` is the identity: a kernel passes the cache as the tuple (T, DPHI, OL, JG, U, DU, CO, CN, EG, META,
  MAT, LAP, BV, BG, BL, DV, RC, FLAG). T (N, n), DPHI (N, n, 3), OL (N, n), JG (N, 3), DV (N, n), RC (N, 3) and
  FLAG (1,) are views of the walker's slice of walker-fastest global arrays (the walker index last, so the 32
  threads of a warp read 32 neighbouring doubles); the per-move scratch (the orbital rows at the proposal U, DU,
  LAP, the basis values BV, BG, BL, the Jastrow pair factors CO, CN, EG, META and the inversion matrix MAT) is
  thread-local, sized exactly for the molecule.
* ``_layout`` returns the molecule's nuclei, MO coefficients C and packed basis (with the cusp block) as arrays
  frozen into the kernel (constant memory on the GPU: every thread of a warp reads the same coefficient at the same
  time, which the constant cache broadcasts). The kernels are therefore compiled once per molecule, basis and
  orbitals (a few seconds); the header of the parameter vector (the Jastrow parameters, the fixed-node flag) stays a
  run-time argument, so an optimiser's new β or c does not recompile.

Same walkers and random states give the CPU's decisions and streams, positions and energies to round-off (FMA
contraction and libdevice's last bits). The cache is rebuilt from the positions at the start of every launch and
by every local energy, as for the atoms.

Importing this module never needs CUDA: ``numba.cuda`` is imported on first use.
"""
from __future__ import annotations

import math

import numpy as np

from . import cuda_atom, cuda_import
from .cuda_atom import CudaAtomSweeper
from .cuda_import import available, simulated  # noqa: F401  (this module's GPU questions, answered once)

MAX_CONSTANT_BYTES = 60_000  # the frozen nuclei, C and basis must fit the GPU's 64 KiB of constant memory
_BRUTE = 0

cuda = None  # numba.cuda, imported on first use; a module global so that the simulator can swap it


def _cuda():
    return cuda_import.bind(globals())


_KERNELS: dict = {}  # (constant part of the parameter vector, track_diffusion, nuclear_moves, dtype) -> kernels


def _constant_part(params: np.ndarray) -> tuple:
    """(N, n, n_basis, nuclei (n_atoms, 4), C (n_basis, n), packed basis + cusp block) of a kernel parameter vector."""
    from ..systems.molecule import HEADER, P_N, P_NATOM, P_NBF, P_NUP

    N, n, na, nbf = (int(params[k]) for k in (P_N, P_NUP, P_NATOM, P_NBF))
    o = HEADER
    atoms = params[o:o + 4 * na].reshape(na, 4).copy()
    o += 4 * na
    C = params[o:o + nbf * n].reshape(nbf, n).copy()
    return N, n, nbf, atoms, C, params[o + nbf * n:].copy()


def device_functions(params: np.ndarray, dtype=np.float64) -> dict:
    """CUDA twins of the molecule's kernels (by name) for the molecule of the kernel parameter vector ``params``;
    ``dtype`` float32 puts :func:`~qmckit.systems.molecule._orbitals_f32` (and float32 coefficients) in place of
    the float64 orbital contraction."""
    c = _cuda()
    from . import cuda_rng
    from ..systems import gaussian_basis, gaussian_cusp, molecule

    kw = cuda_rng._DEVICE_KW
    twin = cuda_import.device_twin
    N, n, nbf, ATOMS, COEFFICIENTS, BASIS = _constant_part(params)
    single = np.dtype(dtype) == np.float32
    if single:
        COEFFICIENTS = COEFFICIENTS.astype(np.float32)  # rounded once; _orbitals_f32's own rounding is then a no-op
    shared = cuda_atom.shared_twins()
    gb_ns = dict(vars(gaussian_basis))
    for name in ("ipow", "packed_length", "eval_point"):  # callees first
        gb_ns[name] = twin(getattr(gaussian_basis, name), gb_ns, kw)
    ns = dict(vars(molecule))
    ns.update({name: shared[name] for name in cuda_atom.SLATER_TWINS + cuda_atom.SLATER_JASTROW_TWINS})
    ns.update({name: gb_ns[name] for name in ("packed_length", "eval_point")})
    ns["apply_cusp"] = twin(gaussian_cusp.apply, dict(vars(gaussian_cusp)), kw)
    P_N, P_NUP = molecule.P_N, molecule.P_NUP

    def _layout(p):
        return int(p[P_N]), int(p[P_NUP]), ATOMS, COEFFICIENTS, BASIS

    def cache_views(cache, N, n, nbf):
        return cache

    ns["_layout"] = c.jit(**kw)(_layout)
    ns["cache_views"] = c.jit(**kw)(cache_views)
    twins = {}
    sources = {"_orbitals": molecule._orbitals_f32 if single else molecule._orbitals}
    for name in ("_cusp", "_orbitals", "_en_value", "_en_gradient", "_poly", "_poly_around", "_poly_one", "recompute",
                 "gradient", "test_move", "accept_move", "local_energy"):  # callees first
        twins[name] = ns[name] = twin(sources.get(name) or getattr(molecule, name), ns, kw)
    return {**twins, "drift_scale": shared["drift_scale"]}


def kernels(params: np.ndarray, track_diffusion: bool = False, nuclear_moves: bool = False, dtype=np.float64) -> dict:
    """The compiled-on-demand kernels ``sweep`` and ``energy`` for the molecule of ``params`` (see
    :func:`qmckit.backends.cuda_atom.kernels` for ``track_diffusion`` and ``nuclear_moves``; ``dtype`` float32: the
    orbital contraction in float32, see :func:`device_functions`); cached per molecule and variant."""
    from ..systems.molecule import HEADER

    params = np.ascontiguousarray(params, dtype=np.float64)
    key = (params[HEADER:].tobytes(), bool(track_diffusion), bool(nuclear_moves), np.dtype(dtype).name)
    if key not in _KERNELS:
        _KERNELS[key] = _kernels(params, bool(track_diffusion), bool(nuclear_moves), np.dtype(dtype))
    return _KERNELS[key]


def _kernels(params, track_diffusion: bool, nuclear_moves: bool, dtype=np.dtype(np.float64)) -> dict:
    import numba

    c = _cuda()
    from . import cuda_rng
    from ..systems.molecule import HEADER, P_N, P_NBF, P_NUP

    d_ = device_functions(params, dtype)
    recompute, gradient, test_move = d_["recompute"], d_["gradient"], d_["test_move"]
    accept_move, local_energy, drift_scale = d_["accept_move"], d_["local_energy"], d_["drift_scale"]
    uniform, normal_pair = cuda_rng.uniform, cuda_rng.normal_pair
    f8, u64 = numba.float64, numba.uint64
    fb = numba.from_dtype(dtype)  # the basis scratch: float32 rows feed the float32 contraction
    NEG_INF = -np.inf
    BRUTE = _BRUTE
    NP = HEADER  # the kernels read only the header at run time; nuclei, C and basis are frozen in _layout
    N_, n_, nbf_ = (int(params[k]) for k in (P_N, P_NUP, P_NBF))  # sizes of the thread-local scratch
    TRACK = track_diffusion  # compile-time constants: without them that code is dead
    NUCLEAR = nuclear_moves
    if NUCLEAR:
        nuclear = cuda_atom.nuclear_twins()
        nuclear_drift, nuclear_propose = nuclear["nuclear_drift"], nuclear["nuclear_propose"]
        nuclear_log_green = nuclear["nuclear_log_green"]

    @c.jit
    def sweep_thread_per_walker(pos, cT, cD, cOL, cJ, cDV, cRC, cFLAG, states, params, n_sweeps, sampler, step, dt,
                                cap, measure, energies, accepted, diffusion, nuclei):
        """pos (N, 3, W); cT, cOL, cDV (N, n, W); cD (N, n, 3, W); cJ, cRC (N, 3, W); cFLAG (1, W); states (2, W)
        uint64; params: Molecule.kernel_params (its header is read); energies (≥ n_sweeps if measure, W); accepted
        (W,); diffusion (3, W) and nuclei (n_atoms, 4) as in :mod:`qmckit.backends.cuda_atom`."""
        w = cuda.grid(1)
        if w >= pos.shape[2]:
            return
        p = cuda.local.array(NP, f8)
        for k in range(NP):
            p[k] = params[k]
        u_loc = cuda.local.array(n_, f8)
        du_loc = cuda.local.array((n_, 3), f8)
        co_loc = cuda.local.array(N_, f8)
        cn_loc = cuda.local.array(N_, f8)
        eg_loc = cuda.local.array(3, f8)
        meta = cuda.local.array(1, f8)
        mat_loc = cuda.local.array((n_, n_), f8)
        lap_loc = cuda.local.array(n_, f8)
        bv_loc = cuda.local.array(nbf_, fb)
        bg_loc = cuda.local.array((nbf_, 3), fb)
        bl_loc = cuda.local.array(nbf_, fb)
        R = pos[:, :, w]
        cache = (cT[:, :, w], cD[:, :, :, w], cOL[:, :, w], cJ[:, :, w], u_loc, du_loc, co_loc, cn_loc, eg_loc, meta,
                 mat_loc, lap_loc, bv_loc, bg_loc, bl_loc, cDV[:, :, w], cRC[:, :, w], cFLAG[:, w])
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
        if TRACK:
            diffusion[0, w] = 0.0
            diffusion[1, w] = 0.0
            diffusion[2, w] = 0.0
        for s in range(n_sweeps):
            for i in range(N_):
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
                    forward = 0.0
                    backward = 0.0
                    for k in range(3):  # ln G(r'→r) − ln G(r→r') for the moved electron only
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
    def energy_thread_per_walker(pos, cT, cD, cOL, cJ, cDV, cRC, cFLAG, params, measure, out):
        """Rebuild every walker's cache; with ``measure`` also out[w] = E_L (which rebuilds it too)."""
        w = cuda.grid(1)
        if w >= pos.shape[2]:
            return
        p = cuda.local.array(NP, f8)
        for k in range(NP):
            p[k] = params[k]
        u_loc = cuda.local.array(n_, f8)
        du_loc = cuda.local.array((n_, 3), f8)
        co_loc = cuda.local.array(N_, f8)
        cn_loc = cuda.local.array(N_, f8)
        eg_loc = cuda.local.array(3, f8)
        meta = cuda.local.array(1, f8)
        mat_loc = cuda.local.array((n_, n_), f8)
        lap_loc = cuda.local.array(n_, f8)
        bv_loc = cuda.local.array(nbf_, fb)
        bg_loc = cuda.local.array((nbf_, 3), fb)
        bl_loc = cuda.local.array(nbf_, fb)
        R = pos[:, :, w]
        cache = (cT[:, :, w], cD[:, :, :, w], cOL[:, :, w], cJ[:, :, w], u_loc, du_loc, co_loc, cn_loc, eg_loc, meta,
                 mat_loc, lap_loc, bv_loc, bg_loc, bl_loc, cDV[:, :, w], cRC[:, :, w], cFLAG[:, w])
        if measure != 0:
            out[w] = local_energy(R, p, cache)
        else:
            recompute(R, p, cache)

    return {"sweep": sweep_thread_per_walker, "energy": energy_thread_per_walker}


class CudaMoleculeSweeper(CudaAtomSweeper):
    """VMC sweeps (and DMC's drift–diffusion) of a closed-shell molecule on the GPU, one thread per walker:
    :class:`~qmckit.backends.cuda_atom.CudaAtomSweeper` with the molecule's kernels (compiled for its molecule)."""

    CACHE_VIEWS = (0, 1, 2, 3, 15, 16, 17)  # T, DPHI, OL, JG, DV, RC, FLAG in the molecule's cache_views tuple
    DTYPES = (np.dtype(np.float64), np.dtype(np.float32))  # float32: the orbital contraction only (_orbitals_f32)

    @staticmethod
    def frozen_bytes(system, dtype=np.float64) -> int:
        """Bytes of nuclei, orbital coefficients (float32 ones for ``dtype`` float32), basis and cusp block that the
        kernels hold as constants."""
        from ..systems.molecule import HEADER

        n_coefficients = system.n_basis * (system.n_particles // 2)
        return 8 * (system.kernel_params.size - HEADER) - (8 - np.dtype(dtype).itemsize) * n_coefficients

    @classmethod
    def fits(cls, system, dtype=np.float64) -> bool:
        """Whether the molecule fits the kernels' constant memory (``backend="auto"`` asks; else the CPU runs it)."""
        return cls.frozen_bytes(system, dtype) <= MAX_CONSTANT_BYTES

    def _check_system(self, system, walkers) -> int:
        N = system.n_particles
        if walkers.dim != 3 or walkers.n_particles != N:
            raise ValueError(f"walkers must have shape (W, {N}, 3), got {walkers.positions.shape}")
        return 3

    def _select_kernels(self, track_diffusion: bool = False) -> dict:
        if not self.fits(self.system, self.dtype):
            single = self.dtype == np.float32
            hint = "" if single or not self.fits(self.system, np.float32) else ", or dtype float32"
            raise ValueError(f"the GPU molecule kernel holds nuclei, orbitals and basis in 64 KiB of constant memory; "
                             f"this molecule needs {self.frozen_bytes(self.system, self.dtype)} bytes"
                             f"{', float32 coefficients' if single else ''} (use backend cpu{hint})")
        return kernels(self._params_host, bool(track_diffusion), self.nuclear_moves, self.dtype)

    def _new_caches(self, capacity: int) -> tuple:
        """T, DPHI, OL, JG, DV, RC, FLAG for ``capacity`` walkers (FLAG zero: "orbital rows not valid", so the first
        rebuild evaluates them all; after that each slot's rows match its RC, whichever walker branching puts there)."""
        c = _cuda()
        N = self.walkers.n_particles
        n = N // 2
        return (c.device_array((N, n, capacity), dtype=np.float64), c.device_array((N, n, 3, capacity), dtype=np.float64),
                c.device_array((N, n, capacity), dtype=np.float64), c.device_array((N, 3, capacity), dtype=np.float64),
                c.device_array((N, n, capacity), dtype=np.float64), c.device_array((N, 3, capacity), dtype=np.float64),
                c.to_device(np.zeros((1, capacity))))

    def _cache_views(self, row, N):
        from ..systems.molecule import cache_views

        return cache_views(row, N, N // 2, self.system.n_basis)

    def __repr__(self):
        return (f"CudaMoleculeSweeper({self.system!r}, W={self.walkers.n_walkers}, sampler={self.sampler!r}, "
                f"threads={self.threads})")
