"""The generic CPU sampler: any continuum system, through the kernels of its protocol.

:class:`CpuSampler` keeps the walkers on the host and runs the sweep kernels of
:mod:`qmckit.backends.cpu_kernels` (compiled once per system). It has the sampler interface of
:mod:`qmckit.samplers`: ``sweep``, ``equilibrate``, ``recompute``, ``local_energies``, ``sync``,
``branch``, and the attributes ``walkers``, ``sampler``, ``dt``, ``step``.
"""
from __future__ import annotations

import math

import numpy as np

from ..backends.cpu_kernels import (BRUTE, DRIFT, SAMPLERS, VARIANT_ALL_PARTICLE_GF,
                                    evaluation_kernels_for, kernels_for,
                                    variant_flags)
from ..rng import fork_from
from ..systems.protocol import Unsupported, require
from ..walkers import Walkers


class CpuSampler:
    """The generic CPU sampler: Metropolis sweeps of a continuum ``system`` on a :class:`~qmckit.walkers.Walkers`
    ensemble (the kernels of :mod:`qmckit.backends.cpu_kernels`).

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
    nuclear_moves : drift moves near the system's nuclei by Umrigar–Nightingale–Runge
        (:mod:`qmckit.backends.nuclear_moves`; atoms and molecules; exact either way, smaller DMC time-step errors)
    """

    # a sweep's whole state is in the walkers (positions, caches, random streams) and the kernel keeps
    # nothing between calls, so sweep(a) then sweep(b) gives the numbers of sweep(a + b): a run may cut
    # its blocks into pieces (to see a Stop) without changing any number
    exact_in_pieces = True

    def __init__(self, system, walkers, sampler: str = "drift", dt: float = 0.05, step: float = 1.0,
                 target_acceptance: float = 0.5, drift_cap: bool = True, green: str = "moved",
                 accept_uniform: str = "fresh", hard_core: str = "reject", nuclear_moves: bool = False):
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
        self.nuclear_moves = bool(nuclear_moves)
        self._nuclei = nuclei_for_moves(system, sampler, self.variant) if nuclear_moves else np.zeros((0, 4))
        self.track_diffusion = True  # the CPU sweep always sums the diffusion displacements (last_diffusion)
        self.last_diffusion = None
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

        Returns ``(energies (n_sweeps or 0, W), acceptance)``; ``last_diffusion`` (2, W) holds this call's
        Σ squared diffusion displacements of the proposed (row 0) and accepted (row 1) drift moves.
        """
        w = self.walkers
        energies = np.empty((n_sweeps if measure else 0, w.n_walkers))
        accepted = np.zeros(w.n_walkers, dtype=np.int64)
        self.last_diffusion = np.zeros((2, w.n_walkers))
        self._kernels.sweeps(w.positions, w.caches, w.rng_states, self._p, n_sweeps,
                             BRUTE if self.sampler == "brute" else DRIFT, self.step, self.dt * self._hbar2_over_m,
                             self.drift_cap, self.variant, energies, accepted, self.last_diffusion, self._nuclei)
        proposed = n_sweeps * w.n_walkers * w.n_particles
        return energies, (accepted.sum() / proposed if proposed else 0.0)

    def equilibrate(self, n_sweeps: int, chunk: int = 10) -> float:
        return equilibrate(self, n_sweeps, chunk)

    def equilibration_pieces(self, n_sweeps: int, chunk: int = 10):
        return equilibration_pieces(self, n_sweeps, chunk)

    def sync(self) -> None:
        """Nothing to do: the walkers are already on the host."""

    def observables(self) -> np.ndarray:
        """(W, 1 + K) E_L and the system's ``capabilities.observables`` for every walker now."""
        return self.system.measure(self.walkers.positions)

    def take_last(self, n: int):
        """Remove the last ``n`` walkers and return them (caches and streams included)."""
        return take_last(self, n)

    def append(self, walkers) -> None:
        """Add ``walkers`` (another ensemble's of the same system, e.g. from :meth:`take_last`) after these."""
        append(self, walkers)

    def branch(self, index, children, source_states) -> None:
        """DMC branching: keep ``walkers[index]``; the rows ``children`` (copies) get streams
        forked from ``source_states`` (see :func:`qmckit.rng.fork_from`)."""
        walkers = self.walkers.take(index)
        if len(children):
            fork_from(source_states, walkers.rng_states, children)
        self.walkers = walkers


def nuclei_for_moves(system, sampler: str, variant: int = 0) -> np.ndarray:
    """The (M, 4) nuclei that ``nuclear_moves`` moves around; Unsupported in one line where there are none or the
    combination cannot be (a move other than drift, study 002's variants, ħ²/m ≠ 1)."""
    nuclei = np.ascontiguousarray(system.nuclei(), dtype=np.float64)
    if nuclei.shape[0] == 0 or nuclei.shape[1:] != (4,):
        raise Unsupported(f"nuclear_moves need nuclei, and system {type(system).name!r} has none "
                          "(atoms and molecules have)")
    if sampler != "drift" or variant or system.hbar2_over_m != 1.0:
        raise Unsupported("nuclear_moves go with the exact drift sampler (no brute moves, no study 002 variants)")
    return nuclei


def take_last(driver, n: int):
    """Remove the last ``n`` walkers of ``driver`` (a sampler whose ``walkers`` are on the host) and return them."""
    W = driver.walkers.n_walkers
    tail = driver.walkers.take(np.arange(W - n, W))
    driver.walkers = driver.walkers.take(np.arange(W - n))
    return tail


def append(driver, walkers) -> None:
    """Add ``walkers`` after those of ``driver`` (a sampler whose ``walkers`` are on the host)."""
    driver.walkers = Walkers.merge([driver.walkers, walkers])


def equilibrate(driver, n_sweeps: int, chunk: int = 10) -> float:
    """Thermalise ``driver`` for ``n_sweeps`` sweeps; tune the brute-force step. Returns the last acceptance."""
    pieces = equilibration_pieces(driver, n_sweeps, chunk)
    while True:
        try:
            next(pieces)
        except StopIteration as end:
            return end.value


def equilibration_pieces(driver, n_sweeps: int, chunk: int = 10):
    """:func:`equilibrate` as a generator: yields the sweeps done after every chunk but the last (a run may
    pause there on Stop and continue later: the same operations in the same order, so the same numbers)
    and returns the last acceptance."""
    acceptance = 0.0
    done = 0
    while done < n_sweeps:
        n = min(chunk, n_sweeps - done)
        _, acceptance = driver.sweep(n, measure=False)
        if driver.sampler != "drift":
            # acceptance falls as the step grows: scale toward the target, at most ×2 per chunk
            driver.step *= float(np.clip((acceptance + 1e-3) / driver.target_acceptance, 0.5, 2.0))
        done += n
        if done < n_sweeps:
            yield done
    driver.recompute()
    return acceptance


def evaluate_configurations(system, configs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ln|ψ_T| and E_L of ``system`` at every configuration ``configs`` (M, N, d), in parallel; E_L is NaN
    where ψ_T vanishes (a configuration this parameter set forbids)."""
    configs = np.ascontiguousarray(configs, dtype=np.float64)
    log_psi, energies = np.empty(len(configs)), np.empty(len(configs))
    evaluation_kernels_for(type(system)).evaluate_configurations(configs, system.kernel_params,
                                                                 int(system.cache_size()), log_psi, energies)
    return log_psi, energies
