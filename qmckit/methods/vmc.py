"""Metropolis variational Monte Carlo with single-particle moves, generic over continuum systems.

Two samplers:

* ``"brute"``: uniform displacement in a cube of side ``step`` around the particle; the step is
  tuned during equilibration towards a target acceptance.
* ``"drift"``: importance sampling with the Fokker–Planck drift (D = ½):
  r' = r + Δt ∇_i ln ψ(R) + √Δt χ,  χ ~ N(0, 1)³, accepted with the exact Metropolis–Hastings
  ratio |ψ(R')/ψ(R)|² G(r'→r)/G(r→r'), where only the moved particle's Green's function enters.
  A fresh uniform decides acceptance and a hard-core overlap is rejected (never redrawn).

The sweep kernel is compiled once per system (see :mod:`qmckit.backends.specialise`) and runs
walkers in parallel; every walker uses only its own random stream, so results do not depend
on the number of threads.
"""
from __future__ import annotations

import functools
import math
import sys
import numba as nb
import numpy as np

from .. import rng as _rng
from ..backends.specialise import specialise
from ..systems.protocol import require

SAMPLERS = ("brute", "drift")
_BRUTE, _DRIFT = 0, 1

# Study 002's deviations from exact Metropolis–Hastings (its doubts D1, D2, D5), offered only to
# show their consequences: the Green's-function ratio summed over all particles, the Box–Muller
# angle uniform reused as the acceptance uniform, and a hard-core overlap redrawn instead of
# rejected.
VARIANT_ALL_PARTICLE_GF = 1
VARIANT_REUSE_UNIFORM = 2
VARIANT_REDRAW = 4
_MAX_REDRAWS = 1000


@nb.njit(cache=True, inline="always")
def _drift_scale(v, dt, cap):
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


# --- driver templates ------------------------------------------------------------------------
# Plain functions that call a system's kernels (gradient, test_move, ...) by name. They are never
# run from here: qmckit.backends.specialise copies them into one generated module per system, where
# those names are the system's kernels and numba compiles and caches them.

def sweeps(positions, caches, states, p, n_sweeps, sampler, step, dt, drift_cap, variant, energies, accepted):
    """Run ``n_sweeps`` sweeps of N single-particle moves on every walker (in parallel).

    ``variant`` is 0 for exact Metropolis–Hastings or a bit mask of study 002's deviations
    (``VARIANT_*``). ``energies`` is ``(n_sweeps, W)``, filled with each walker's local energy after
    every sweep, or ``(0, W)`` to skip measuring; ``accepted`` ``(W,)`` receives accepted-move counts.
    """
    W, N, d = positions.shape
    measure = energies.shape[0] > 0
    sqrt_dt = math.sqrt(dt)
    gf_all = (variant & VARIANT_ALL_PARTICLE_GF) != 0
    reuse_uniform = (variant & VARIANT_REUSE_UNIFORM) != 0
    redraw = (variant & VARIANT_REDRAW) != 0
    for w in nb.prange(W):
        R = positions[w]
        cache = caches[w]
        r_new = np.empty(d)
        g_old = np.empty(d)
        g_new = np.empty(d)
        n_acc = 0
        for s in range(n_sweeps):
            for i in range(N):
                if sampler == _BRUTE:
                    for attempt in range(_MAX_REDRAWS):
                        for k in range(d):
                            r_new[k] = R[i, k] + step * (_rng.uniform(states, w) - 0.5)
                        log_ratio = test_move(R, p, cache, i, r_new, g_new)
                        if not redraw or log_ratio > -np.inf:
                            break
                    log_accept = 2.0 * log_ratio
                    u = _rng.uniform(states, w)
                else:
                    gradient(R, p, cache, i, g_old)
                    scale_old = _drift_scale(g_old, dt, drift_cap)
                    angle_uniform = 0.0
                    for attempt in range(_MAX_REDRAWS):
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
                    scale_new = _drift_scale(g_new, dt, drift_cap)
                    # ln G(r'→r) − ln G(r→r') for the moved particle only
                    forward = 0.0
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
                if log_ratio > -np.inf and u < math.exp(min(log_accept, 0.0)):
                    accept_move(R, p, cache, i, r_new, g_new)
                    n_acc += 1
            if measure:
                energies[s, w] = local_energy(R, p, cache)
        accepted[w] = n_acc


def recompute_all(positions, caches, p):
    """Rebuild every walker's cache from its positions."""
    for w in nb.prange(positions.shape[0]):
        recompute(positions[w], p, caches[w])


def local_energies(positions, caches, p, out):
    """Local energy of every walker into ``out`` (W,)."""
    for w in nb.prange(positions.shape[0]):
        out[w] = local_energy(positions[w], p, caches[w])


_PARALLEL = "@nb.njit(parallel=True, cache=True, error_model=\"numpy\")"


@functools.lru_cache(maxsize=None)
def kernels_for(system_class):
    """The compiled (and disk-cached) driver kernels for one system class."""
    return specialise(sys.modules[__name__], ("sweeps", "recompute_all", "local_energies"),
                      ("_rng", "_drift_scale", "_BRUTE", "_DRIFT", "VARIANT_ALL_PARTICLE_GF",
                       "VARIANT_REUSE_UNIFORM", "VARIANT_REDRAW", "_MAX_REDRAWS"), sys.modules[system_class.__module__],
                      "KERNELS", dict.fromkeys(("sweeps", "recompute_all", "local_energies"), _PARALLEL), "vmc")


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


class VMC:
    """Metropolis VMC driver for a continuum ``system`` on a :class:`~qmckit.walkers.Walkers` ensemble.

    Parameters
    ----------
    sampler : "brute" | "drift"
    dt : time step Δt of the drift sampler (system time unit; 1/ω_⊥ for trapped bosons). A system with an
        ``hbar2_over_m`` ≠ 1 (helium: K Å², time in K⁻¹) diffuses with variance (ħ²/m) Δt per
        component; the others use units with ħ²/m = 1
    step : initial side of the brute-force displacement cube (system length unit)
    target_acceptance : acceptance the brute-force step is tuned to during equilibration
    drift_cap : limit the drift near divergences (Umrigar et al. 1993); exact either way
    green : "moved" (exact: only the moved particle's Green's function) or "all" (study 002's sum
        over all particles, doubt D1)
    accept_uniform : "fresh" (exact) or "reuse" (study 002's reuse of the Box–Muller angle, D2)
    hard_core : "reject" (exact) or "redraw" (study 002's redraw until allowed, D5)
    """

    def __init__(self, system, walkers, sampler: str = "drift", dt: float = 0.05, step: float = 1.0,
                 target_acceptance: float = 0.5, drift_cap: bool = True, green: str = "moved",
                 accept_uniform: str = "fresh", hard_core: str = "reject"):
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be a positive time step, got {dt!r}")
        if not (step > 0 and math.isfinite(step)):
            raise ValueError(f"step must be positive, got {step!r}")
        if not 0 < target_acceptance < 1:
            raise ValueError(f"target_acceptance must be in (0, 1), got {target_acceptance!r}")
        self.system = system
        self.walkers = walkers
        self.sampler = sampler
        self.dt = float(dt)
        self.step = float(step)
        self.target_acceptance = target_acceptance
        self.drift_cap = bool(drift_cap)
        self.variant = variant_flags(green, accept_uniform, hard_core)
        if self.variant & VARIANT_ALL_PARTICLE_GF:
            require(system, "green_all", "green 'all' (study 002's all-particle Green's function)")
        self._p = system.kernel_params
        self._hbar2_over_m = float(system.hbar2_over_m)
        self._kernels = kernels_for(type(system))
        self.recompute()

    def recompute(self) -> None:
        """Rebuild all caches from the positions, discarding incremental round-off."""
        w = self.walkers
        self._kernels.recompute_all(w.positions, w.caches, self._p)

    def local_energies(self) -> np.ndarray:
        """Local energy of every walker now, (W,)."""
        out = np.empty(self.walkers.n_walkers)
        self._kernels.local_energies(self.walkers.positions, self.walkers.caches, self._p, out)
        return out

    def sweep(self, n_sweeps: int, measure: bool = True):
        """Run ``n_sweeps`` sweeps of N single-particle moves on every walker.

        Returns ``(energies (n_sweeps or 0, W), acceptance)``.
        """
        w = self.walkers
        energies = np.empty((n_sweeps if measure else 0, w.n_walkers))
        accepted = np.zeros(w.n_walkers, dtype=np.int64)
        self._kernels.sweeps(w.positions, w.caches, w.rng_states, self._p, n_sweeps,
                     _BRUTE if self.sampler == "brute" else _DRIFT, self.step, self.dt * self._hbar2_over_m,
                     self.drift_cap,
                     self.variant, energies, accepted)
        proposed = n_sweeps * w.n_walkers * w.n_particles
        return energies, (accepted.sum() / proposed if proposed else 0.0)

    def equilibrate(self, n_sweeps: int, chunk: int = 10) -> float:
        return equilibrate(self, n_sweeps, chunk)

    def sync(self) -> None:
        """Nothing to do: the walkers are already on the host."""

    def branch(self, index, children, source_states) -> None:
        """DMC branching: keep ``walkers[index]``; the rows ``children`` (copies) get streams
        forked from ``source_states`` (see :func:`qmckit.rng.fork_from`)."""
        walkers = self.walkers.take(index)
        if len(children):
            _rng.fork_from(source_states, walkers.rng_states, children)
        self.walkers = walkers


def equilibrate(driver, n_sweeps: int, chunk: int = 10) -> float:
    """Thermalise ``driver`` for ``n_sweeps`` sweeps; tune the brute-force step. Returns the last acceptance."""
    acceptance = 0.0
    done = 0
    while done < n_sweeps:
        n = min(chunk, n_sweeps - done)
        _, acceptance = driver.sweep(n, measure=False)
        if driver.sampler == "brute":
            # acceptance falls as the step grows: scale toward the target, at most ×2 per chunk
            driver.step *= float(np.clip((acceptance + 1e-3) / driver.target_acceptance, 0.5, 2.0))
        done += n
    driver.recompute()
    return acceptance
