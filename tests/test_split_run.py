"""One VMC run split over workers (issue 27, item 4): walkers partitioned, per-sweep averages merged with the walker
counts as weights; reproducible from (seed, parts) on any executor; the same statistics as one process."""
import math
import warnings

import numpy as np
import pytest

from qmckit.runs import RunConfig, make_run
from qmckit.scans.split import part_seed, partition, split_run
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


def test_dmc_is_refused_in_one_line():
    with pytest.raises(ValueError, match="only VMC runs can be split"):
        split_run(RunConfig(system="atom", params=dict(element="He"), method="dmc", walkers=20, steps=20), 2)
