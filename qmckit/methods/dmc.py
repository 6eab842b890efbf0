"""Diffusion Monte Carlo with importance sampling, generic over continuum systems.

One DMC step (time step Δτ, in the system's time unit: 1/ω_⊥ for trapped bosons):

1. drift–diffusion with Metropolis accept/reject: one sweep of N single-particle moves with the
   exact Green's-function ratio of :mod:`qmckit.methods.vmc` (the same compiled kernel);
2. branching once per step with q = exp(−τ_eff (½(E_L + E_L') − E_T)) and ⌊q + u⌋ copies, u from
   the DMC's own branching stream (seeded from ``seed``), which also seeds the streams of the
   copies; runs are reproducible from the seed, and the walkers need not be on the host to
   decide the branching (they are fetched only when the population changes). With ``fixed_population`` = W set
   (a part of a run split over workers, :mod:`qmckit.scans.split`) the copies are ⌊W q/Σq + u⌋ instead: the
   population stays at W within rounding whatever E_T, and the caller carries the weight Σq/W of each step;
3. trial-energy feedback (documented assumption, the thesis gives none):
   E_T = E_ref − ln(W / W_target) / τ_fb, where E_ref is an exponential moving average of the
   mixed estimator with time constant ``reference_time`` (default: τ_fb) and τ_fb =
   ``feedback_time`` (default 0.1 time units): the population relaxes to its target in about τ_fb.
   A tight leash costs honesty: for the He atom at τ_fb = 0.1 and 0.3 the means of 12 runs scatter
   1.6 times more than their error bars say (and twice as much as at τ_fb = 1, whose error bars hold;
   experiments/dmc_feedback_errors_2026-11-26.md), since the feedback puts slow noise into E_T and the
   weights that reblocking one run cannot see. A τ_fb in time units does not carry over between
   systems, though (liquid ⁴He, N = 64, 200 walkers: at τ_fb = 1 K⁻¹ the population dies out), so the
   default stays until the rule is found; pass ``feedback_time`` (RunConfig too). E_ref must follow the
   energy quickly: while the walkers relax from the VMC to the DMC distribution the total energy
   falls by N × (E_VMC − E_DMC)/N (about 100 ħω_⊥ for N = 500 bosons within one time unit), and a
   reference lagging by δ makes the population drift to W_target·exp(δ τ_fb). Population-control
   bias shrinks as 1/W_target.

Effective time step (Umrigar, Nightingale & Runge, J. Chem. Phys. 99, 2865 (1993); QMCPACK and PyQMC do
the same): a rejected move leaves its walker where it was, so the walkers diffuse for less than Δτ on
average, and branching over the full Δτ overweights the energy change. Branching therefore uses

    τ_eff = Δτ · Σ R²_accepted / Σ R²_proposed,

with R² = |r' − r − Δτ s v|² = Δτ|χ|² the squared diffusion displacement of each single-particle move (the
sampler sums it: ``last_diffusion``), summed over every move of every step at this Δτ so far (DMC
equilibration included), so τ_eff settles as the run goes and does not jump with one step's acceptance.
It is reported as ``tau_eff`` (also when it is not used). ``effective_time_step=False`` branches with Δτ
itself, as study 002's thesis did (its seed-faithful comparisons). The E_T feedback, E_ref's relaxation and
the Zen cut keep Δτ.

The mixed estimator of each step is Σ q E_L' / Σ q over the walkers before branching (the
branching weights q are the walker weights); blocks are reblocked with those weights.

The drift–diffusion runs on whichever sampler is passed (:mod:`qmckit.samplers`: the CPU sampler by
default, the GPU sampler from :class:`~qmckit.runs.DMCRun` with ``backend="cuda"``).

Guards: walkers whose energy is not finite are removed and counted, never averaged; when
branching would exceed ``max_walkers`` the population is thinned evenly with a warning (and no
walker gets more than ``max_walkers`` copies). In the branching factor each E_L is limited to
E_best ± E_cut, so that a walker near a hard-core contact or a node, where E_L diverges, cannot explode
the population (``energy_cap``, default 8). The window is centred on E_best, the weighted mean of the
mixed estimator over all steps so far (the best estimate of the energy, as Zen et al. and PyQMC's
``e_est`` do), not on E_T, which carries the population feedback's noise, so that which walkers are cut
does not depend on the population of the moment:

    q = exp(−Δτ [½(clip(E_L − E_best) + clip(E_L' − E_best)) + E_best − E_T]),   clip to ±E_cut.

- ``energy_cap=True``: E_cut = 0.2 √(N/Δτ), the size-consistent cut-off of Zen et al.,
  Phys. Rev. B 93, 241118 (2016). It assumes a local-energy variance per particle of order one
  energy unit squared (electrons in hartree). Where the variance per particle is larger it clips
  typical walkers, not just outliers, and biases the energy upward at finite Δτ: for N = 500
  trapped bosons (set B4, Var E_L / N ≈ 4.5 (ħω_⊥)²) it is about one standard deviation at
  Δτ = 0.01.
- ``energy_cap=c`` (a number, default 8): E_cut = max(0.2 √(N/Δτ), c σ₀), with σ₀ a robust width of
  E_L over the starting walkers (1.4826 × the median absolute deviation). Clips only outliers
  beyond c σ₀; the Zen term still takes over as Δτ → 0, so the Δτ → 0 limit is unbiased either way.
  For B4, cuts of 8 σ₀ and 16 σ₀ give the same energy and E(Δτ) is flat from Δτ = 0.01 to 0.0025;
  for B3 (N = 20, σ₀ ≈ 4 ħω_⊥) the Zen cut alone bent E(Δτ) upward by 0.006–0.012 at Δτ = 0.005–0.02
  (benchmarks/results/bec_b4_dmc_energy_cut_h100_2026-11-22.md).
- ``energy_cap=False``: no cut (a walker at a contact can then make millions of copies).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .. import rng as _rng
from ..perf.run_profile import RunTimer, timed_sweep
from ..samplers import make_sampler

FEEDBACK_TIME = 0.1  # default τ_fb, in the system's time unit (see the module docstring)


@dataclass
class StepRecord:
    """What one DMC step did. Energies are for the whole walker in the system's unit."""

    mixed_energy: float   # Σ q E_L' / Σ q
    weight: float         # Σ q (weight of this step's mixed estimate)
    population: int       # walkers after branching
    trial_energy: float   # E_T used for this step's branching
    killed: int
    copied: int
    removed: int          # non-finite walkers dropped
    acceptance: float


class DMC:
    """Importance-sampled DMC driver for ``system`` on a walker ensemble (which it replaces as
    the population changes: read ``dmc.walkers``).

    Parameters
    ----------
    dt : time step Δτ
    target_walkers : population the trial-energy feedback aims at (default: the initial count)
    feedback_time : τ_fb of the E_T feedback, in time units
    reference_time : time constant of the running energy reference E_ref (default: feedback_time)
    max_walkers : hard cap (default 2 × target)
    energy_cap, drift_cap : limit E_L in the branching factor / the drift (see module doc)
    seed : seed of the branching stream (int or ``numpy.random.SeedSequence``)
    driver : a sampler (:mod:`qmckit.samplers`) to move the walkers (default: the CPU sampler on ``walkers``). For a
        system with capability ``fixed_node`` (fermions: node crossings rejected) the default driver is
        built on ``system.for_dmc()``; a driver passed here must already have been built on
        ``system.for_dmc()`` (as :class:`~qmckit.runs.DMCRun` does)
    effective_time_step : branch with τ_eff (True, the default) or with Δτ (False; see the module doc)
    variants : study 002's Metropolis deviations (``green``, ``accept_uniform``, ``hard_core``),
        passed to the default CPU sampler
    """

    def __init__(self, system, walkers, dt: float = 0.01, target_walkers: int | None = None,
                 feedback_time: float = FEEDBACK_TIME, reference_time: float | None = None, max_walkers: int | None = None,
                 energy_cap: bool | float = 8.0, drift_cap: bool = True, seed=0, driver=None,
                 effective_time_step: bool = True, **variants):
        if reference_time is None:
            reference_time = feedback_time
        for name, value in (("dt", dt), ("feedback_time", feedback_time), ("reference_time", reference_time)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        self.system = system
        self.dt = float(dt)
        self.target_walkers = int(target_walkers or walkers.n_walkers)
        if self.target_walkers < 1:
            raise ValueError(f"target_walkers must be a positive integer, got {target_walkers!r}")
        self.max_walkers = int(max_walkers or 2 * self.target_walkers)
        self.feedback_time = float(feedback_time)
        self.reference_time = float(reference_time)
        if not (isinstance(energy_cap, bool) or (isinstance(energy_cap, (int, float)) and energy_cap > 0
                                                  and math.isfinite(energy_cap))):
            raise ValueError(f"energy_cap must be True, False or a positive number of σ, got {energy_cap!r}")
        self.energy_cap = energy_cap
        if driver is None:
            system = self.system = system.for_dmc()  # fixed node: moves that change the sign of ψ_T are rejected
            driver = make_sampler(system, walkers, "cpu", sampler="drift", dt=dt, drift_cap=drift_cap, **variants)
        elif driver.sampler != "drift" or driver.dt != self.dt:
            raise ValueError("driver must use the drift sampler with the DMC time step")
        self.driver = driver
        driver.track_diffusion = True  # the sampler sums the diffusion displacements (a GPU kernel variant)
        self.effective_time_step = bool(effective_time_step)
        self.diffusion_sums = [0.0, 0.0]  # Σ R²_proposed, Σ R²_accepted over every step at this Δτ (τ_eff)
        self.branch_states = _rng.seed_states(seed, 1)
        self.energies = self.driver.local_energies()
        self.reference_energy = float(np.mean(self.energies))
        # robust width (1.4826 × median absolute deviation): E_L has heavy tails near hard-core
        # contacts and nodes, which make the sample standard deviation a lottery
        self.start_sigma = 1.4826 * float(np.median(np.abs(self.energies - np.median(self.energies))))
        self.trial_energy = self.reference_energy
        self.cap_warnings = 0
        self.best_sums = [0.0, 0.0]  # Σ weight·mixed energy and Σ weight over every step so far (E_best)
        # None: ⌊q + u⌋ copies, the population free and held by the E_T feedback; an integer W: renormalised
        # branching, ⌊W q/Σq + u⌋ copies (a part of a run split over workers, which carries the weight Σq/W)
        self.fixed_population: int | None = None
        self.timer = RunTimer()  # sampling and branching seconds (a Run puts its own here: the result's profile)

    def branch(self, copies, energies, cap: bool = True) -> tuple[int, int]:
        """Replace each walker by ⌊copies + u⌋ copies of itself (u from the branching stream; the copies get new
        random streams seeded from it), with ``energies`` (W,) its local energies; returns (killed, copied). ``cap``:
        thin a population above ``max_walkers`` evenly, with a warning."""
        counts = np.empty(copies.size, dtype=np.int64)
        _rng.branch_counts(self.branch_states, copies, counts)
        killed = int(np.count_nonzero(counts == 0))
        copied = int(np.sum(np.maximum(counts - 1, 0)))
        if not (killed or copied):
            self.energies = energies
            return 0, 0
        index = np.repeat(np.arange(copies.size), counts)
        if index.size == 0:
            raise FloatingPointError("DMC: the population died out; lower dt or raise the walker count")
        if cap and index.size > self.max_walkers:
            self.cap_warnings += 1
            # one fixed text, so that Python shows it once per run rather than every step
            warnings.warn("DMC population exceeded max_walkers; thinned evenly (check dt, the trial "
                          "function or the energy cap; population_cap_hits counts the steps)",
                          RuntimeWarning, stacklevel=3)
            index = index[np.linspace(0, index.size - 1, self.max_walkers).round().astype(np.int64)]
        first = np.ones(index.size, dtype=bool)
        first[1:] = index[1:] != index[:-1]
        children = np.nonzero(~first)[0]  # copies get new streams, seeded from the branching stream
        self.driver.branch(index, children, self.branch_states)  # on the device for a GPU driver
        self.energies = energies[index]
        return killed, copied

    @property
    def walkers(self):
        return self.driver.walkers

    def _set_walkers(self, walkers, energies):
        self.driver.walkers = walkers  # a GPU driver uploads them
        self.energies = energies

    def set_dt(self, dt: float) -> None:
        """Change Δτ (e.g. a few large steps to relax quickly, as in the thesis's Fig. 6.3b); τ_eff starts anew."""
        self.dt = self.driver.dt = float(dt)
        self.diffusion_sums = [0.0, 0.0]

    @property
    def tau_eff(self) -> float:
        """τ_eff = Δτ Σ R²_accepted / Σ R²_proposed over the steps at this Δτ so far (Δτ before the first)."""
        proposed, accepted = self.diffusion_sums
        return self.dt * accepted / proposed if proposed > 0 else self.dt

    def energy_cut(self) -> float:
        """E_cut of the branching factor (see the module doc); inf when ``energy_cap`` is False."""
        if self.energy_cap is False:
            return math.inf
        cut = 0.2 * math.sqrt(self.system.n_particles / self.dt)
        if self.energy_cap is True:
            return cut
        return max(cut, float(self.energy_cap) * self.start_sigma)

    @property
    def best_energy(self) -> float:
        """E_best: the weighted mean of the mixed estimator over the steps so far (before the first step, the
        mean of the starting energies); the centre of the energy cut's window."""
        total, weight = self.best_sums
        return total / weight if weight > 0 else self.reference_energy

    def step(self, feedback: bool = True) -> StepRecord:
        """One DMC step. ``feedback=False`` keeps E_ref and E_T as they are (a part of a run split over workers,
        whose E_T is set globally once per block: :mod:`qmckit.scans.split`)."""
        e_old = self.energies
        new, acceptance = timed_sweep(self.timer, self.driver, 1)
        e_new = new[0]

        ok = np.isfinite(e_new)  # a non-finite position gives a non-finite energy
        removed = int(ok.size - ok.sum())
        diffusion = self.driver.last_diffusion
        # a removed walker's R² may be nan too: it stays out of τ_eff
        proposed, accepted = (diffusion[:, ok] if removed else diffusion).sum(axis=1)
        self.diffusion_sums[0] += float(proposed)
        self.diffusion_sums[1] += float(accepted)
        tau = self.tau_eff if self.effective_time_step else self.dt
        if removed:
            if not ok.any():
                raise FloatingPointError("DMC: every walker became non-finite")
            self.driver.sync()
            e_old, e_new = e_old[ok], e_new[ok]
            self._set_walkers(self.walkers.take(np.nonzero(ok)[0]), e_new)

        e_trial = self.trial_energy
        if self.energy_cap is not False:
            cut, e_best = self.energy_cut(), self.best_energy
            shift = 0.5 * (np.clip(e_old - e_best, -cut, cut) + np.clip(e_new - e_best, -cut, cut)) + (e_best - e_trial)
        else:
            shift = 0.5 * (e_old + e_new) - e_trial
        with np.errstate(over="ignore"):  # a runaway weight is bounded next; never more copies than max_walkers
            q = np.minimum(np.exp(-tau * shift), self.max_walkers)
        weight = float(q.sum())
        mixed = float(np.dot(q, e_new) / weight)
        self.best_sums[0] += weight * mixed
        self.best_sums[1] += weight

        # renormalised (a fixed population): ⌊W q/Σq + u⌋ copies, W on average, the weight Σq/W carried by the caller
        with self.timer("branching"):
            killed, copied = self.branch(q if self.fixed_population is None else q * (self.fixed_population / weight),
                                         e_new)
        population = self.walkers.n_walkers
        if feedback:  # for the next step
            self.reference_energy += min(1.0, self.dt / self.reference_time) * (mixed - self.reference_energy)
            self.trial_energy = self.reference_energy - math.log(population / self.target_walkers) / self.feedback_time
        return StepRecord(mixed_energy=mixed, weight=weight, population=population, trial_energy=e_trial,
                          killed=killed, copied=copied, removed=removed, acceptance=acceptance)
