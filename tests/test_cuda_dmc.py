"""GPU DMC (device-side branching) against CPU DMC on the same streams, under the CUDA simulator."""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import numpy as np
    from qmckit.backends.cuda_driver import CudaVMC
    from qmckit.methods.dmc import DMC
    from qmckit.methods.vmc import VMC
    from qmckit.systems.bec import TrappedBosons
    from qmckit.walkers import Walkers

    system = TrappedBosons(n=4, lam=1.0, a=0.2, alpha=0.5)

    def make(gpu):
        start = system.initial_positions(6, np.random.default_rng(0))
        walkers = Walkers.from_positions(start, 1, 0 if gpu else system.cache_size())
        driver = (CudaVMC if gpu else VMC)(system, walkers, sampler="drift", dt=0.05)
        return DMC(system, walkers, dt=0.05, driver=driver, seed=3)

    gpu, cpu = make(True), make(False)
    branched = 0
    for _ in range(8):
        rg, rc = gpu.step(), cpu.step()
        assert (rg.population, rg.killed, rg.copied) == (rc.population, rc.killed, rc.copied)
        assert abs(rg.mixed_energy - rc.mixed_energy) < 1e-10
        branched += rg.killed + rg.copied
    gpu.driver.sync()
    assert np.abs(gpu.walkers.positions - cpu.walkers.positions).max() < 1e-12
    assert np.array_equal(gpu.walkers.rng_states, cpu.walkers.rng_states)
    assert branched > 0, "the test must exercise branching"
    print("ok", branched)
""")


def test_gpu_dmc_twin_under_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stderr[-2000:]
