"""DMC against exact answers, its guards, and reproducible pause/resume."""
import math
import threading

import numpy as np
import pytest

from qmckit import RunConfig
from qmckit.methods.dmc import DMC
from qmckit.runs import DMCRun, make_run, resume_run
from qmckit.systems.bec import TrappedBosons

LAM = math.sqrt(8.0)


def dmc_run(steps, **kwargs):
    params = {k: kwargs.pop(k) for k in ("n", "lam", "a", "alpha")}
    run = make_run(RunConfig(system="bec", params=params, method="dmc", steps=steps, **kwargs))
    run.run()
    return run


@pytest.mark.parametrize("dt", [0.1, 0.01])
def test_exact_trial_function_zero_variance_and_no_time_step_error(dt):
    # with the exact ψ every branching factor is 1, so this checks the local energy and the bookkeeping, not the
    # branching (that DMC leaves a VMC energy for the exact one: the next test and tests/test_dmc_exact.py)
    run = dmc_run(100, n=10, lam=LAM, a=0.0, alpha=0.5, walkers=50, dt=dt, seed=1)
    energy = run.estimates()["energy_per_particle"]
    assert abs(energy.mean - (2 + LAM) / 2) < 1e-10 and energy.error < 1e-10
    assert run.series_of("killed").sum() == 0 and run.series_of("copied").sum() == 0


def test_relaxes_from_alpha_0_6_to_the_ground_state():
    # Fig. 6.3 of study 002: VMC at α = 0.6 sits at 2.45446; DMC must reach (2 + λ)/2 = 2.41421
    run = dmc_run(3000, n=10, lam=LAM, a=0.0, alpha=0.6, walkers=200, dt=0.01, seed=2, dmc_equilibration=200)
    energy = run.estimates()["energy_per_particle"]
    assert abs(energy.mean - (2 + LAM) / 2) < 3 * energy.error, energy
    assert energy.error < 3e-3
    assert 2.45446 - energy.mean > 10 * energy.error  # clearly below the VMC energy it started from
    population = run.series_of("population")
    assert 0.8 * 200 < population.mean() < 1.2 * 200  # the feedback holds the target


def test_same_seed_same_numbers_and_pause_resume_matches(tmp_path):
    config = dict(system="bec", params=dict(n=6, lam=1.0, a=0.2, alpha=0.45), method="dmc", walkers=40,
                  steps=120, block=20, dt=0.02, seed=5)
    whole = make_run(RunConfig(**config)).run()
    again = make_run(RunConfig(**config)).run()
    assert whole["estimates"] == again["estimates"] and whole["walkers_final"] == again["walkers_final"]
    stop = threading.Event()
    first = make_run(RunConfig(**config), checkpoint_path=tmp_path / "dmc.h5")
    for done, _ in first.blocks(stop):
        if done == 3:
            stop.set()
    resumed = resume_run(tmp_path / "dmc.h5")
    assert isinstance(resumed, DMCRun) and resumed.blocks_done == 3
    finished = resumed.run()
    drop = {"wall_s", "profile"}
    assert {k: v for k, v in finished.items() if k not in drop} == {k: v for k, v in whole.items() if k not in drop}
    assert whole["copied"] > 0 and whole["killed"] > 0  # branching really happened


def test_nonfinite_walkers_are_removed_and_reported():
    system = TrappedBosons(n=4, lam=1.0, a=0.0, alpha=0.6)
    from qmckit.walkers import Walkers

    walkers = Walkers.from_positions(system.initial_positions(20, np.random.default_rng(0)), 0, system.cache_size())
    dmc = DMC(system, walkers, dt=0.01)
    dmc.walkers.positions[3, 0, 0] = np.nan
    record = dmc.step()
    assert record.removed == 1
    assert np.isfinite(record.mixed_energy)
    assert np.isfinite(dmc.walkers.positions).all()
    assert not np.isfinite(dmc.driver.last_diffusion).all()  # the removed walker's R² is nan ...
    assert 0 < dmc.tau_eff <= dmc.dt  # ... and stays out of τ_eff


def test_population_cap_warns_and_thins():
    system = TrappedBosons(n=4, lam=1.0, a=0.0, alpha=0.6)
    from qmckit.walkers import Walkers

    walkers = Walkers.from_positions(system.initial_positions(50, np.random.default_rng(0)), 0, system.cache_size())
    dmc = DMC(system, walkers, dt=0.05, max_walkers=55, energy_cap=False)
    dmc.trial_energy += 40.0  # far too high: every walker multiplies
    with pytest.warns(RuntimeWarning, match="max_walkers"):
        dmc.step()
    assert dmc.walkers.n_walkers == 55
    # copies got fresh streams: no two walkers share a random state
    states = {tuple(s) for s in dmc.walkers.rng_states}
    assert len(states) == 55


@pytest.mark.parametrize("kwargs, name", [(dict(dt=0.0), "dt"), (dict(feedback_time=-1.0), "feedback_time")])
def test_bad_dmc_parameters(kwargs, name):
    system = TrappedBosons(n=2, lam=1.0, a=0.0, alpha=0.5)
    from qmckit.walkers import Walkers

    walkers = Walkers.from_positions(system.initial_positions(4, np.random.default_rng(0)), 0, system.cache_size())
    with pytest.raises(ValueError, match=name):
        DMC(system, walkers, **kwargs)


def _small_dmc(**kwargs):
    from qmckit.walkers import Walkers

    system = TrappedBosons(n=20, lam=1.0, a=0.433, alpha=0.46)
    walkers = Walkers.from_positions(system.initial_positions(60, np.random.default_rng(3)), 0, system.cache_size())
    return DMC(system, walkers, dt=0.01, **kwargs)


def test_energy_cut_rules():
    zen = 0.2 * math.sqrt(20 / 0.01)
    assert _small_dmc(energy_cap=True).energy_cut() == pytest.approx(zen)
    default = _small_dmc()
    assert default.energy_cut() == pytest.approx(max(zen, 8.0 * default.start_sigma))
    assert _small_dmc(energy_cap=False).energy_cut() == math.inf
    dmc = _small_dmc(energy_cap=1000.0)
    # the robust width of the starting energies: 1.4826 × median absolute deviation
    energies = dmc.energies
    mad = 1.4826 * np.median(np.abs(energies - np.median(energies)))
    assert dmc.start_sigma == pytest.approx(mad) and dmc.start_sigma > 0
    assert dmc.energy_cut() == pytest.approx(max(zen, 1000.0 * mad))
    assert _small_dmc(energy_cap=1e-6).energy_cut() == pytest.approx(zen)  # never below the Zen cut
    for bad in (0.0, -2.0, math.nan, "8"):
        with pytest.raises(ValueError, match="energy_cap"):
            _small_dmc(energy_cap=bad)


def test_runaway_weight_is_bounded_without_energy_cap():
    # one walker with an absurdly low local energy: exp(−Δτ(E_L − E_T)) overflows to inf, yet the
    # population stays at max_walkers instead of exhausting memory
    dmc = _small_dmc(energy_cap=False, max_walkers=100)
    dmc.energies = dmc.energies.copy()
    dmc.energies[0] = -1e6
    with pytest.warns(RuntimeWarning, match="max_walkers"):
        record = dmc.step()
    assert dmc.walkers.n_walkers == 100
    assert np.isfinite(record.mixed_energy) and np.isfinite(dmc.trial_energy)


class _FixedEnergies:
    """A stand-in sampler whose walkers keep given local energies (the branching is what is tested)."""

    sampler = "drift"

    def __init__(self, walkers, energies, dt, accepted_r2=1.0):
        self.walkers, self.dt, self._e = walkers, dt, np.asarray(energies, dtype=float)
        self.accepted_r2 = accepted_r2  # Σ R²_accepted per walker and step, of Σ R²_proposed = 1

    def local_energies(self):
        return self._e.copy()

    def sweep(self, n):
        W = self.walkers.n_walkers
        self.last_diffusion = np.array([np.ones(W), np.full(W, self.accepted_r2)])
        return self._e[None, :W].copy(), 1.0

    def sync(self):
        pass

    def branch(self, index, children, states):
        self.walkers = self.walkers.take(index)
        self._e = self._e[index]


def test_the_energy_cut_is_centred_on_the_best_estimate_not_on_e_t():
    """A population far from its target moves E_T by several cuts; walkers at E_best + cut/2 must keep their
    unclipped weight exp(−Δτ(E_L − E_T)), which a window around E_T would have cut to exp(−Δτ E_cut)."""
    from qmckit.walkers import Walkers

    system = TrappedBosons(n=20, lam=1.0, a=0.0, alpha=0.5)
    walkers = Walkers.from_positions(system.initial_positions(50, np.random.default_rng(1)), 0, system.cache_size())
    dt, e_best = 0.01, 30.0
    dmc = DMC(system, walkers, dt=dt, energy_cap=True, driver=_FixedEnergies(walkers, [e_best] * 50, dt))
    cut = dmc.energy_cut()
    assert dmc.best_energy == e_best
    dmc.driver._e[:] = e_best + 0.5 * cut
    dmc.energies = dmc.driver._e.copy()
    dmc.trial_energy = e_best - 3.0 * cut
    record = dmc.step()
    assert record.weight == pytest.approx(50 * math.exp(-dt * 3.5 * cut), rel=1e-12)
    # E_best then follows the mixed estimator (weighted over the steps): here the one step's energy
    assert dmc.best_energy == pytest.approx(e_best + 0.5 * cut, rel=1e-12)


@pytest.mark.parametrize("effective", [True, False])
def test_branching_uses_the_effective_time_step_accumulated_over_the_steps(effective):
    """With half the proposed R² accepted in the first step and all of it in the second, τ_eff is Δτ/2 and then
    Δτ·(½ + 1)/2: the branching weights must be exp(−τ_eff (E_L − E_T)) with those τ_eff (and with Δτ when the
    effective time step is off)."""
    from qmckit.walkers import Walkers

    system = TrappedBosons(n=2, lam=1.0, a=0.0, alpha=0.5)
    walkers = Walkers.from_positions(system.initial_positions(40, np.random.default_rng(2)), 0, system.cache_size())
    dt, energy = 0.02, 3.0
    driver = _FixedEnergies(walkers, [energy] * 40, dt, accepted_r2=0.5)
    dmc = DMC(system, walkers, dt=dt, energy_cap=False, driver=driver, effective_time_step=effective)
    for tau in (0.5 * dt, 0.75 * dt):
        dmc.trial_energy = energy - 10.0  # every walker's weight is exp(−τ · 10)
        record = dmc.step()
        assert dmc.tau_eff == pytest.approx(tau, rel=1e-14)
        used = tau if effective else dt
        assert record.weight == pytest.approx(40 * math.exp(-10.0 * used), rel=1e-12)
        driver.accepted_r2 = 1.0
        dmc.driver.walkers, dmc.energies = walkers, np.full(40, energy)  # keep 40 walkers for the next step
        driver._e = np.full(40, energy)
    dmc.set_dt(dt)
    assert dmc.tau_eff == dt and dmc.diffusion_sums == [0.0, 0.0]  # a new Δτ starts τ_eff anew
