"""One run split over workers (issue 27, item 4): walkers partitioned; VMC's per-sweep averages merged with the walker
counts as weights; DMC's parts branching locally with one global E_T per block, their steps merged with the branching
weights and their populations rebalanced; reproducible from (seed, parts) on any executor; the same statistics as one
process."""
import dataclasses
import math
import warnings

import numpy as np
import pytest

from qmckit.runs import RunConfig, make_run
from qmckit.scans.split import DMCPart, part_seed, partition, split_run
from qmckit.stats import ShortSeriesWarning
from qmckit.systems.bec import noninteracting_energy_per_particle

FREE = RunConfig(system="bec", params=dict(n=10, lam=1.0, a=0.0, alpha=0.45), walkers=300, steps=1500, seed=21)


def test_walkers_are_partitioned_evenly_and_parts_seeded_apart():
    assert partition(10, 3) == [4, 3, 3] and sum(partition(1001, 7)) == 1001
    with pytest.raises(ValueError, match="parts"):
        partition(3, 4)
    seeds = {part_seed(21, 4, k) for k in range(4)}
    assert len(seeds) == 4 and part_seed(21, 4, 0) != part_seed(21, 2, 0)


@pytest.mark.filterwarnings("ignore::qmckit.stats.ShortSeriesWarning")
def test_the_merged_run_has_the_statistics_of_one_process():
    single = make_run(FREE).run()["estimates"]["energy_per_particle"]
    merged = split_run(FREE, 3)["estimates"]["energy_per_particle"]
    exact = noninteracting_energy_per_particle(0.45, 1.0)
    for est in (single, merged):  # both on the closed form
        assert abs(est["mean"] - exact) < 3 * est["error"]
    assert abs(merged["mean"] - single["mean"]) < 3 * math.hypot(merged["error"], single["error"])
    assert 0.5 < merged["error"] / single["error"] < 2  # the same walkers and sweeps: the same precision


@pytest.mark.filterwarnings("ignore::qmckit.stats.ShortSeriesWarning")
def test_a_split_run_is_the_same_on_two_dask_workers():
    distributed = pytest.importorskip("distributed")
    serial = split_run(FREE, 2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        parallel = split_run(FREE, 2, client=client)
    assert np.array_equal(serial["series"], parallel["series"]) and serial["seeds"] == parallel["seeds"]


# non-interacting bosons with α ≠ ½: DMC projects onto the exact ground state, E/N = (2 + λ)/2 = 1.5, while VMC stays
# at (2 + λ)(α/2 + 1/(8α)) = 1.5375; 0.0375 is 40 error bars of these runs, so a DMC stuck at VMC fails
FREE_DMC = RunConfig(system="bec", params=dict(n=10, lam=1.0, a=0.0, alpha=0.4), method="dmc", dt=0.01, walkers=400,
                     steps=3000, block=20, seed=2)


@pytest.mark.filterwarnings("ignore::qmckit.stats.ShortSeriesWarning")
def test_a_split_dmc_run_has_the_statistics_of_one_process():
    single = make_run(FREE_DMC).run()["estimates"]["energy_per_particle"]
    split = split_run(FREE_DMC, 2)
    merged = split["estimates"]["energy_per_particle"]
    vmc = noninteracting_energy_per_particle(0.4, 1.0)
    for est in (single, merged):  # both on the exact ground state, far from the VMC energy
        assert abs(est["mean"] - 1.5) < 3 * est["error"] < 0.1 * (vmc - 1.5)
    assert abs(merged["mean"] - single["mean"]) < 3 * math.hypot(merged["error"], single["error"])
    assert 0.5 < merged["error"] / single["error"] < 2
    # the global feedback holds the total population near its target
    assert abs(split["estimates"]["population"]["mean"] - 400) < 40
    assert np.all(split["trial_energy"][:20] == split["trial_energy"][0])  # one E_T per block of 20 steps


@pytest.mark.filterwarnings("ignore::qmckit.stats.ShortSeriesWarning")
def test_a_split_dmc_run_is_reproducible_from_seed_and_parts_on_dask_actors():
    distributed = pytest.importorskip("distributed")
    config = dataclasses.replace(FREE_DMC, walkers=150, steps=200)
    serial = split_run(config, 3)
    assert np.array_equal(serial["series"], split_run(config, 3)["series"])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        parallel = split_run(config, 3, client=client)  # three parts on two workers: one worker holds two
    for name in ("series", "weights", "population"):
        assert np.array_equal(serial[name], parallel[name])
    assert serial["rebalanced"] == parallel["rebalanced"] > 0  # three small parts drift apart: walkers moved


def test_rebalancing_moves_whole_walkers_between_parts():
    base = dataclasses.asdict(dataclasses.replace(FREE_DMC, walkers=40, steps=10, equilibration=5,
                                                  dmc_equilibration=2))
    donor, receiver = DMCPart(base, 30, 20, 1), DMCPart(base, 10, 20, 2)
    for part in (donor, receiver):
        part.equilibrate()
    before = donor.run.dmc.walkers.positions.copy()
    d, r = donor.run.dmc.walkers.n_walkers, receiver.run.dmc.walkers.n_walkers  # after the equilibration's branching
    given = donor.give(10)
    assert receiver.receive(given) == r + 10 and donor.run.dmc.walkers.n_walkers == d - 10
    moved = receiver.run.dmc.walkers
    assert np.array_equal(moved.positions[-10:], before[-10:])  # the donor's last walkers, streams and energies too
    assert np.array_equal(moved.rng_states[-10:], given["walkers"].rng_states)
    assert np.array_equal(receiver.run.dmc.energies[-10:], given["energies"])
    # the caches travelled with the walkers: a recomputation leaves the energies as they were
    receiver.run.vmc.recompute()
    assert np.allclose(receiver.run.vmc.local_energies(), receiver.run.dmc.energies, rtol=1e-12)


def test_a_dmc_step_without_feedback_keeps_the_trial_energy():
    part = DMCPart(dataclasses.asdict(dataclasses.replace(FREE_DMC, walkers=50, equilibration=5,
                                                          dmc_equilibration=2)), 50, 50, 1)
    part.equilibrate()
    dmc = part.run.dmc
    dmc.trial_energy = 17.0
    for _ in range(3):
        assert dmc.step(feedback=False).trial_energy == 17.0
    dmc.step()
    assert dmc.trial_energy != 17.0


def test_a_split_dmc_run_is_refused_on_an_executor_without_actors_and_with_a_density():
    from concurrent.futures import ThreadPoolExecutor

    config = dataclasses.replace(FREE_DMC, walkers=20, steps=20)
    with ThreadPoolExecutor(2) as pool, pytest.raises(ValueError, match="^client: a DMC run is split on 'serial'"):
        split_run(config, 2, client=pool)
    with pytest.raises(ValueError, match="^density"):
        split_run(dataclasses.replace(config, density="x"), 2)
