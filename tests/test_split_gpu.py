"""A DMC run split over two GPUs (issue 27): the parts copy walkers straight from GPU to GPU (CUDA IPC) and the run
equals, bit for bit, the same split run in one process on one GPU (walkers through the host). Needs two CUDA GPUs
and Dask: skipped elsewhere (CI); run on the lent 2-GPU machines."""
import pytest

from qmckit.runs import RunConfig
from qmckit.scans.split import split_run


def _gpus() -> int:
    try:
        from numba import cuda

        return len(cuda.gpus) if cuda.is_available() else 0
    except Exception:  # no CUDA driver
        return 0


@pytest.mark.skipif(_gpus() < 2, reason="needs two CUDA GPUs")
@pytest.mark.filterwarnings("ignore::qmckit.stats.ShortSeriesWarning")
def test_a_split_dmc_run_on_two_gpus_copies_walkers_between_them_and_equals_the_one_gpu_run():
    import numpy as np

    pytest.importorskip("distributed")
    from qmckit.scans.execute import start_executor

    config = RunConfig(system="bec", params=dict(n=10, lam=1.0, a=0.0, alpha=0.4), method="dmc", backend="cuda",
                       dt=0.01, walkers=150, steps=200, block=20, seed=2)
    serial = split_run(config, 3)  # three parts in this process, on one GPU
    client, close = start_executor(gpus=2)
    try:
        parallel = split_run(config, 3, client)  # parts 0 and 2 on the first GPU's worker, part 1 on the second's
    finally:
        close()
    assert serial["moved_on_device"] == 0 and parallel["moved_on_device"] > 0
    assert parallel["rebalanced"] == serial["rebalanced"] > parallel["moved_on_device"]  # 0 ↔ 2: through the host
    for name in ("series", "weights", "population", "trial_energy"):
        assert np.array_equal(serial[name], parallel[name]), name
