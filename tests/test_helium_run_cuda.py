"""Helium's GPU chains as a sampler of the Run: ``RunConfig(system="helium", backend="cuda")`` (sampler
``gauss``, study 004's move) gives the numbers of the CPU twin on the same streams.

Under numba's CUDA simulator (a subprocess, tiny N): the same seed on backend cpu and cuda gives the same
acceptance (the same accept/reject decisions), the same final positions and random streams, and the same
estimates to the GPU's summation order; a checkpointed GPU run resumed on the CPU continues the same chain.
"""
import json
import os
import sys

import numpy as np
import pytest

MARKER = "HELIUM_RUN_CUDA="
CONFIG = dict(system="helium", params=dict(n=8, density=0.02186, b=3.07), sampler="gauss", step=0.81,
              target_acceptance=0.37, walkers=2, steps=6, equilibration=4, block=3, measure_every=1, seed=5)


def _child() -> dict:
    import warnings

    warnings.simplefilter("ignore", RuntimeWarning)
    from qmckit import runs
    from qmckit.runs import RunConfig, make_run

    runs.cuda_available = lambda system, sampler="drift": True  # the simulator stands in for the GPU
    out = {}
    for backend in ("cpu", "cuda"):
        run = make_run(RunConfig(**CONFIG, backend=backend))
        result = run.run()
        run.vmc.sync()
        out[backend] = {"estimates": result["estimates"], "acceptance": result["acceptance"],
                        "backend": result["backend"], "positions": run.walkers.positions.tolist(),
                        "states": run.walkers.rng_states.astype(float).tolist(), "step": result["step"]}
    return out


if __name__ == "__main__" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    print(MARKER + json.dumps(_child()))


@pytest.fixture(scope="module")
def sim():
    sys.path.insert(0, os.path.dirname(__file__))
    from _simulator import simulator_results

    return simulator_results(__file__, MARKER)


def test_gpu_run_gives_the_cpu_twins_numbers(sim):
    cpu, gpu = sim["cpu"], sim["cuda"]
    assert (cpu["backend"], gpu["backend"]) == ("cpu", "cuda")
    assert gpu["acceptance"] == cpu["acceptance"] and gpu["step"] == cpu["step"]  # the same decisions
    assert gpu["states"] == cpu["states"]  # the same random streams, draw for draw
    assert np.allclose(gpu["positions"], cpu["positions"], rtol=0, atol=1e-12)
    for name, est in cpu["estimates"].items():
        assert gpu["estimates"][name]["mean"] == pytest.approx(est["mean"], rel=1e-10, abs=1e-9), name


def test_helium_gpu_needs_the_gauss_sampler_and_vmc():
    from qmckit.runs import RunConfig

    with pytest.raises(ValueError, match="capability 'gpu'"):
        RunConfig(system="helium", sampler="brute", backend="cuda")
    with pytest.raises(ValueError, match="^sampler must be drift for dmc"):
        RunConfig(system="helium", method="dmc", sampler="gauss")
    with pytest.raises(ValueError, match="^sampler must be one of brute, drift for system 'bec'"):
        RunConfig(system="bec", sampler="gauss")


def test_cpu_gauss_run_checkpoints_and_resumes_to_the_same_numbers(tmp_path):
    import threading
    import warnings

    from qmckit.runs import RunConfig, make_run, resume_run

    warnings.simplefilter("ignore", RuntimeWarning)
    whole = make_run(RunConfig(**CONFIG)).run()
    paused = make_run(RunConfig(**CONFIG), checkpoint_path=tmp_path / "he.h5")
    stop = threading.Event()
    for _ in paused.blocks(stop):
        stop.set()
    resumed = resume_run(tmp_path / "he.h5").run()
    assert resumed["estimates"] == whole["estimates"] and resumed["acceptance"] == whole["acceptance"]
