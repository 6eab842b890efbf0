"""The CPU kernels of the generic sampler: Metropolis sweeps with single-particle moves over any
continuum system's kernels, compiled once per system.

Two move types (``sampler``):

* ``"brute"``: uniform displacement in a cube of side ``step`` around the particle;
* ``"drift"``: importance sampling with the Fokker–Planck drift (D = ½):
  r' = r + Δt ∇_i ln ψ(R) + √Δt χ,  χ ~ N(0, 1)^d, accepted with the exact Metropolis–Hastings
  ratio |ψ(R')/ψ(R)|² G(r'→r)/G(r→r'), where only the moved particle's Green's function enters.
  A fresh uniform decides acceptance and a hard-core overlap is rejected (never redrawn).

The templates below are copied into one generated module per system (:mod:`.specialise`), where the
system's kernels are module globals, so numba compiles and caches them on disk; they run walkers in
parallel, every walker on its own random stream, so results do not depend on the number of threads.
:class:`qmckit.samplers.cpu.CpuSampler` drives them. ``drift_scale`` is also compiled for the GPU
by the CUDA samplers (the same source).
"""
from __future__ import annotations

import functools
import math
import sys
import numba as nb
import numpy as np

from .. import rng as _rng
from .nuclear_moves import nuclear_drift, nuclear_log_green, nuclear_propose  # noqa: F401  (template globals)
from .specialise import specialise

SAMPLERS = ("brute", "drift")
BRUTE, DRIFT = 0, 1

# Study 002's deviations from exact Metropolis–Hastings (its doubts D1, D2, D5), offered only to
# show their consequences: the Green's-function ratio summed over all particles, the Box–Muller
# angle uniform reused as the acceptance uniform, and a hard-core overlap redrawn instead of
# rejected.
VARIANT_ALL_PARTICLE_GF = 1
VARIANT_REUSE_UNIFORM = 2
VARIANT_REDRAW = 4
MAX_REDRAWS = 1000


@nb.njit(cache=True, inline="always")
def drift_scale(v, dt, cap):
    """Umrigar–Nightingale–Runge factor that limits the drift step Δt·|v| to about √(2Δt).

    Near a hard-core contact or a node |v| diverges; uncapped, a walker there proposes huge
    jumps that are almost never accepted and it stays stuck. The factor is applied to the
    forward and the reverse move alike, so Metropolis–Hastings stays exact.
    """
    if not cap:
        return 1.0
    v2dt = 0.0
    for k in range(v.shape[0]):
        v2dt += v[k] * v[k]
    v2dt *= dt
    if v2dt < 1e-12:
        return 1.0
    return (math.sqrt(1.0 + 2.0 * v2dt) - 1.0) / v2dt


# --- kernel templates ------------------------------------------------------------------------
# Plain functions that call a system's kernels (gradient, test_move, ...) by name. They are never
# run from here: qmckit.backends.specialise copies them into one generated module per system, where
# those names are the system's kernels and numba compiles and caches them.

def sweeps(positions, caches, states, p, n_sweeps, sampler, step, dt, drift_cap, variant, energies, accepted,
           diffusion, nuclei):
    """Run ``n_sweeps`` sweeps of N single-particle moves on every walker (in parallel).

    ``variant`` is 0 for exact Metropolis–Hastings or a bit mask of study 002's deviations
    (``VARIANT_*``). ``energies`` is ``(n_sweeps, W)``, filled with each walker's local energy after
    every sweep, or ``(0, W)`` to skip measuring; ``accepted`` ``(W,)`` receives accepted-move counts;
    ``diffusion`` ``(2, W)`` receives, for the drift sampler, Σ |r' − r − Δt s v|² (the squared diffusion
    displacement Δt|χ|² of each move, in length²) over the proposed moves (row 0) and the accepted ones
    (row 1): their ratio gives DMC's effective time step (:mod:`qmckit.methods.dmc`). ``nuclei`` (M, 4) [x, y, z, Z]:
    with M > 0 the drift moves are Umrigar–Nightingale–Runge's near the nuclei (:mod:`.nuclear_moves`; then R² is
    |r' − r''|² from the drifted point), with M = 0 the plain drift moves above.
    """
    W, N, d = positions.shape
    measure = energies.shape[0] > 0
    sqrt_dt = math.sqrt(dt)
    gf_all = (variant & VARIANT_ALL_PARTICLE_GF) != 0
    reuse_uniform = (variant & VARIANT_REUSE_UNIFORM) != 0
    redraw = (variant & VARIANT_REDRAW) != 0
    near_nuclei = nuclei.shape[0] > 0
    for w in nb.prange(W):
        R = positions[w]
        cache = caches[w]
        r_new = np.empty(d)
        g_old = np.empty(d)
        g_new = np.empty(d)
        drifted = np.empty(3)
        drifted_back = np.empty(3)
        n_acc = 0
        r2_proposed = 0.0
        r2_accepted = 0.0
        for s in range(n_sweeps):
            for i in range(N):
                forward = 0.0
                if sampler == BRUTE:
                    for attempt in range(MAX_REDRAWS):
                        for k in range(d):
                            r_new[k] = R[i, k] + step * (_rng.uniform(states, w) - 0.5)
                        log_ratio = test_move(R, p, cache, i, r_new, g_new)
                        if not redraw or log_ratio > -np.inf:
                            break
                    log_accept = 2.0 * log_ratio
                    u = _rng.uniform(states, w)
                elif near_nuclei:
                    gradient(R, p, cache, i, g_old)
                    k_old, p_old, zeta_old = nuclear_drift(R[i], g_old, dt, nuclei, drifted)
                    forward = nuclear_propose(states, w, drifted, k_old, p_old, zeta_old, nuclei, dt, r_new)
                    log_ratio = test_move(R, p, cache, i, r_new, g_new)
                    log_accept = -np.inf
                    if log_ratio > -np.inf:
                        k_new, p_new, zeta_new = nuclear_drift(r_new, g_new, dt, nuclei, drifted_back)
                        log_accept = (2.0 * log_ratio
                                      + nuclear_log_green(R[i], drifted_back, k_new, p_new, zeta_new, nuclei, dt)
                                      - nuclear_log_green(r_new, drifted, k_old, p_old, zeta_old, nuclei, dt))
                    u = _rng.uniform(states, w)
                else:
                    gradient(R, p, cache, i, g_old)
                    scale_old = drift_scale(g_old, dt, drift_cap)
                    angle_uniform = 0.0
                    for attempt in range(MAX_REDRAWS):
                        k = 0
                        while k < d:
                            z0, z1, angle_uniform = _rng.normal_pair_u(states, w)
                            r_new[k] = R[i, k] + dt * scale_old * g_old[k] + sqrt_dt * z0
                            if k + 1 < d:
                                r_new[k + 1] = R[i, k + 1] + dt * scale_old * g_old[k + 1] + sqrt_dt * z1
                            k += 2
                        log_ratio = test_move(R, p, cache, i, r_new, g_new)
                        if not redraw or log_ratio > -np.inf:
                            break
                    scale_new = drift_scale(g_new, dt, drift_cap)
                    # ln G(r'→r) − ln G(r→r') for the moved particle only
                    backward = 0.0
                    for k in range(d):
                        f = r_new[k] - R[i, k] - dt * scale_old * g_old[k]
                        b = R[i, k] - r_new[k] - dt * scale_new * g_new[k]
                        forward += f * f
                        backward += b * b
                    log_accept = 2.0 * log_ratio + (forward - backward) / (2.0 * dt)
                    if gf_all and log_ratio > -np.inf:
                        log_accept += other_drift_change(R, p, cache, i, r_new, dt)
                    u = angle_uniform if reuse_uniform else _rng.uniform(states, w)
                r2_proposed += forward
                if log_ratio > -np.inf and u < math.exp(min(log_accept, 0.0)):
                    accept_move(R, p, cache, i, r_new, g_new)
                    n_acc += 1
                    r2_accepted += forward
            if measure:
                energies[s, w] = local_energy(R, p, cache)
        accepted[w] = n_acc
        diffusion[0, w] = r2_proposed
        diffusion[1, w] = r2_accepted


def recompute_all(positions, caches, p):
    """Rebuild every walker's cache from its positions."""
    for w in nb.prange(positions.shape[0]):
        recompute(positions[w], p, caches[w])


def local_energies(positions, caches, p, out):
    """Local energy of every walker into ``out`` (W,)."""
    for w in nb.prange(positions.shape[0]):
        out[w] = local_energy(positions[w], p, caches[w])


def evaluate_configurations(configs, p, cache_size, log_psi_out, e_out):
    """ln ψ and E_L of every configuration ``configs[k]`` (M, N, d), in parallel over k.

    Each configuration gets a fresh scratch cache (recompute, then local_energy); a configuration
    with ln ψ = −inf (forbidden by this parameter set) gets E_L = FORBIDDEN.
    """
    for k in nb.prange(configs.shape[0]):
        R = configs[k]
        lp = log_psi(R, p)
        log_psi_out[k] = lp
        if lp > -np.inf:
            cache = np.zeros(cache_size)
            recompute(R, p, cache)
            e_out[k] = local_energy(R, p, cache)
        else:
            e_out[k] = FORBIDDEN


# E_L of a configuration that a trial function forbids (ψ = 0, weight 0); never summed.
FORBIDDEN = np.nan
_PARALLEL = "@nb.njit(parallel=True, cache=True, error_model=\"numpy\")"
_SWEEP_TEMPLATES = ("sweeps", "recompute_all", "local_energies")


@functools.lru_cache(maxsize=None)
def kernels_for(system_class):
    """The compiled (and disk-cached) sweep kernels for one system class: ``sweeps``, ``recompute_all``,
    ``local_energies``."""
    return specialise(sys.modules[__name__], _SWEEP_TEMPLATES,
                      ("_rng", "drift_scale", "nuclear_drift", "nuclear_propose", "nuclear_log_green", "BRUTE", "DRIFT",
                       "VARIANT_ALL_PARTICLE_GF",
                       "VARIANT_REUSE_UNIFORM", "VARIANT_REDRAW", "MAX_REDRAWS"), system_class,
                      dict.fromkeys(_SWEEP_TEMPLATES, _PARALLEL), "vmc")


@functools.lru_cache(maxsize=None)
def evaluation_kernels_for(system_class):
    """The compiled (and disk-cached) ``evaluate_configurations`` kernel for one system class."""
    return specialise(sys.modules[__name__], ("evaluate_configurations",), ("FORBIDDEN",), system_class,
                      {"evaluate_configurations": _PARALLEL}, "eval")


def variant_flags(green: str = "moved", accept_uniform: str = "fresh", hard_core: str = "reject") -> int:
    """The kernel bit mask for the named Metropolis variants (0 is exact Metropolis–Hastings)."""
    flags = 0
    for name, value, exact, seed_variant, bit in (
            ("green", green, "moved", "all", VARIANT_ALL_PARTICLE_GF),
            ("accept_uniform", accept_uniform, "fresh", "reuse", VARIANT_REUSE_UNIFORM),
            ("hard_core", hard_core, "reject", "redraw", VARIANT_REDRAW)):
        if value not in (exact, seed_variant):
            raise ValueError(f"{name} must be {exact!r} (exact) or {seed_variant!r} (study 002), got {value!r}")
        flags |= bit if value == seed_variant else 0
    return flags


