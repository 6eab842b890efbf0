"""Study 004's Metropolis move for liquid ⁴He as a sampler of the one Run, on the CPU or the GPU.

Sampler ``"gauss"`` of :class:`~qmckit.systems.helium.Helium`: one microupdate picks a random atom and
proposes a Gaussian displacement of σ = ``step`` Å per component; a sweep is a macroupdate of N
microupdates (:mod:`qmckit.backends.helium_chains`). On the CPU it runs
:class:`~qmckit.backends.helium_chains.HeliumChainsCPU`, on the GPU study 004's persistent kernel
:class:`~qmckit.backends.helium_chains.HeliumChains`: the same walkers and random streams give the same
accept/reject decisions and positions to round-off, so a run on either backend gives the same numbers
(energies to the last bits of the GPU's summation order).

:class:`HeliumGaussSampler` has the sampler interface of :mod:`qmckit.samplers` (``sweep``,
``equilibrate``, ``recompute``, ``local_energies``, ``observables``, ``sync``, ``branch``) and is
named in the system's ``capabilities.samplers``. It has no drift, so it serves VMC only.
"""
from __future__ import annotations

import numpy as np

from ..systems.protocol import Unsupported
from . import helium_chains


class HeliumGaussSampler:
    """Study 004's chains of ``system`` on ``walkers``; ``backend`` "cpu" or "cuda" (``dtype`` for the GPU)."""

    sampler = "gauss"

    def __init__(self, system, walkers, backend: str = "cpu", step: float = 0.81, target_acceptance: float = 0.37,
                 dt: float = 0.05, dtype=np.float64, **_):
        if backend not in ("cpu", "cuda"):
            raise ValueError(f"backend must be cpu or cuda, got {backend!r}")
        if backend == "cpu" and np.dtype(dtype) != np.float64:
            raise ValueError("dtype float32 exists only for backend cuda")
        self.system = system
        self.backend = backend
        self.dtype = np.dtype(dtype)
        self.target_acceptance = float(target_acceptance)
        self.dt = float(dt)  # not used by this move; kept for the sampler interface
        self._step = float(step)
        self.walkers = walkers

    # the walkers live in the chains; assigning new ones rebuilds them (resume)
    @property
    def walkers(self):
        return self._walkers

    @walkers.setter
    def walkers(self, walkers) -> None:
        self._walkers = walkers
        if self.backend == "cuda":
            self._chains = helium_chains.HeliumChains(self.system, walkers.positions, walkers.rng_states, self._step,
                                                      dtype=self.dtype)
        else:
            self._chains = helium_chains.HeliumChainsCPU(self.system, walkers.positions, walkers.rng_states,
                                                         self._step)

    @property
    def step(self) -> float:
        """σ of the Gaussian proposal per component, in Å."""
        return self._step

    @step.setter
    def step(self, value: float) -> None:
        self._step = self._chains.sigma = float(value)

    def _accepted(self) -> int:
        accepted = self._chains.accepted
        return int((accepted if self.backend == "cpu" else accepted.copy_to_host()).sum())

    def sweep(self, n_sweeps: int, measure: bool = True):
        """``n_sweeps`` macroupdates of every chain: ``(energies (n_sweeps or 0, W), acceptance)``."""
        W, N = self._walkers.n_walkers, self._walkers.n_particles
        before = self._accepted()
        energies = np.empty((n_sweeps if measure else 0, W))
        if measure:
            for k in range(n_sweeps):
                self._chains.generate(1)
                energies[k] = self._chains.energies()[:, 0]
        elif n_sweeps:
            self._chains.generate(n_sweeps)
        proposed = n_sweeps * N * W
        return energies, ((self._accepted() - before) / proposed if proposed else 0.0)

    def equilibrate(self, n_sweeps: int, chunk: int = 10) -> float:
        from ..samplers.cpu import equilibrate

        return equilibrate(self, n_sweeps, chunk)

    def equilibration_pieces(self, n_sweeps: int, chunk: int = 10):
        from ..samplers.cpu import equilibration_pieces

        return equilibration_pieces(self, n_sweeps, chunk)

    def recompute(self) -> None:
        """Nothing to do: the chains keep no incremental cache (every move sums its pair terms afresh)."""

    def local_energies(self) -> np.ndarray:
        return self._chains.energies()[:, 0]

    def observables(self) -> np.ndarray:
        """(W, 4) whole-walker E_L, V, T_lap, T_grad in K (as :meth:`Helium.measure`), where the walkers are."""
        return self._chains.energies()

    def sync(self) -> None:
        """Copy the chains' positions and random states into ``walkers`` (checkpoints, densities)."""
        w = self._walkers
        w.positions[...] = self._chains.positions()
        states = self._chains.states if self.backend == "cpu" else self._chains.states_to_host()
        w.rng_states[...] = states

    def branch(self, index, children, source_states) -> None:
        raise Unsupported("DMC needs the drift sampler; sampler gauss (study 004's move) serves VMC only")
