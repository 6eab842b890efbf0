"""GPU DMC (device-side branching) against CPU DMC on the same streams, under the CUDA simulator
(this file run as a script in a child process: tests/_simulator.py)."""
import json

from _simulator import simulator_results

MARKER = "CUDA_DMC_SIM="


def _child() -> dict:
    import numpy as np
    from qmckit.samplers.cuda import CudaSampler as CudaVMC
    from qmckit.methods.dmc import DMC
    from qmckit.methods.vmc import VMC
    from qmckit.systems.bec import TrappedBosons
    from qmckit.walkers import Walkers

    system = TrappedBosons(n=4, lam=1.0, a=0.2, alpha=0.5)

    def make(gpu):
        start = system.initial_positions(6, np.random.default_rng(0))
        walkers = Walkers.from_positions(start, 1, 0 if gpu else system.cache_size())
        # the block layout on the GPU (its tracking kernel; test_cuda_bec checks the thread layout's)
        driver = (CudaVMC(system, walkers, sampler="drift", dt=0.05, layout="block") if gpu
                  else VMC(system, walkers, sampler="drift", dt=0.05))
        # a tight population leash, so that 8 steps of 6 walkers branch (the twins must agree on it)
        return DMC(system, walkers, dt=0.05, driver=driver, seed=6, feedback_time=0.1)

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
    # the tracking kernel's diffusion sums give the CPU's τ_eff
    assert abs(gpu.tau_eff - cpu.tau_eff) < 1e-12 * cpu.tau_eff and cpu.tau_eff < cpu.dt
    return {"branched": int(branched), "moved": _moved_walkers_round_trip(), "waits": _branching_waits_for_its_plan()}


def _branching_waits_for_its_plan() -> list:
    """DMC branching on the atom sweeper writes its plan into mapped host memory, which the previous branching's launch
    may still read unless a sweep has waited for it since (a split run resamples right after a step): the
    synchronisations of branch, branch, sweep, branch."""
    import numpy as np
    from qmckit.backends import cuda_atom
    from qmckit.rng import seed_states
    from qmckit.samplers.cuda import CudaSampler
    from qmckit.systems.atom import Atom
    from qmckit.walkers import Walkers

    system = Atom(element="He")
    sampler = CudaSampler(system, Walkers.from_positions(system.initial_positions(4, np.random.default_rng(2)), 3, 0),
                          sampler="drift", dt=0.05)
    sampler.sweep(1)
    c, counted = cuda_atom._cuda(), []
    original = c.synchronize
    c.synchronize = lambda: (counted.append(1), original())[1]
    try:
        waits = []
        for action in ("branch", "branch", "sweep", "branch"):
            before = len(counted)
            if action == "sweep":
                sampler.sweep(1)
            else:  # walker 0 twice (one copy with a fresh stream), walkers 1 and 3, walker 2 dies
                sampler.branch(np.array([0, 0, 1, 3]), np.array([1]), seed_states(5, 1))
            waits.append(len(counted) - before)
    finally:
        c.synchronize = original
    return waits


def _moved_walkers_round_trip() -> list:
    """A split DMC run's rebalancing (take_last, then append elsewhere) on the device layouts of the boson and the
    atom sweepers: the walkers that leave are the last ones, those that stay are untouched, and appending them back
    restores the ensemble, positions and streams."""
    import numpy as np
    from qmckit.samplers.cuda import CudaSampler
    from qmckit.systems.atom import Atom
    from qmckit.systems.bec import TrappedBosons
    from qmckit.walkers import Walkers

    checked = []
    for system, options in ((TrappedBosons(n=4, lam=1.0, a=0.2, alpha=0.5), {"layout": "block"}),
                            (TrappedBosons(n=3, lam=1.0, a=0.2, alpha=0.5), {"layout": "thread"}),
                            (Atom(element="He"), {})):
        start = system.initial_positions(5, np.random.default_rng(1))
        sampler = CudaSampler(system, Walkers.from_positions(start, 2, 0), sampler="drift", dt=0.05, **options)
        sampler.sweep(1)
        sampler.sync()
        before = sampler.walkers.copy()
        tail = sampler.take_last(2)
        sampler.sync()
        assert np.array_equal(tail.positions, before.positions[3:]), system
        assert np.array_equal(tail.rng_states, before.rng_states[3:])
        assert np.array_equal(sampler.walkers.positions, before.positions[:3])
        sampler.append(tail)
        sampler.sync()
        assert np.array_equal(sampler.walkers.positions, before.positions)
        assert np.array_equal(sampler.walkers.rng_states, before.rng_states)
        checked.append(type(system).__name__)
    return checked


def test_gpu_dmc_twin_under_simulator():
    results = simulator_results(__file__, MARKER, timeout=300)
    assert results["branched"] > 0
    assert results["moved"] == ["TrappedBosons", "TrappedBosons", "Atom"]
    assert results["waits"] == [0, 1, 0, 0]  # only a branching that follows a branching waits


if __name__ == "__main__":  # the simulator child
    print(MARKER + json.dumps(_child()))
