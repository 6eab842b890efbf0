"""Lattice chain samplers: Markov chains of lattice configurations behind one interface.

``make_chains`` returns :class:`qmckit.backends.lattice_chains.CpuChains` (backend ``"cpu"``) or
:class:`qmckit.backends.lattice_cuda.CudaChains` (``"cuda"``, study 000's GPU kernel). Both offer

    sweep(n_sweeps, measure=True) -> (chains, n_sweeps, 3) kinetic, exchange, double occupancy per sweep
    counts (chains, N_COUNTERS)   proposals/acceptances of hops and swaps, and inverse rebuilds
    drift (chains,)               the largest |A⁻¹ drift| seen at a refresh
    host_state() / states_to_host()   configurations, inverses and random streams on the host

and are built from a system's chain state (:meth:`~qmckit.systems.lattice_rvb.LatticeRVB.chain_state`)
and per-chain random states. The lattice driver (:mod:`qmckit.methods.lattice_vmc`) uses only this.
"""
from __future__ import annotations

from ..backends.lattice_chains import (HOPS_ACCEPTED, HOPS_PROPOSED, REBUILDS, REFRESH_EVERY, SWAPS_ACCEPTED,
                                       SWAPS_PROPOSED, CpuChains)

BACKENDS = ("cpu", "cuda")


def cuda_available() -> bool:
    """Whether the lattice GPU kernel can run here (a real CUDA GPU)."""
    try:
        from ..backends import lattice_cuda
    except ImportError:
        return False
    return lattice_cuda.available()


def make_chains(system, state: dict, states, moves_per_sweep: int, refresh_every: int, backend: str = "cpu"):
    """The chains of ``backend`` for ``system`` from ``state`` (chain arrays) and random ``states``."""
    if backend == "cuda":
        from ..backends.lattice_cuda import CudaChains

        return CudaChains(system, state, states, moves_per_sweep, refresh_every)
    if backend != "cpu":
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return CpuChains(system, state, states, moves_per_sweep, refresh_every)


__all__ = ["make_chains", "cuda_available", "REFRESH_EVERY", "HOPS_PROPOSED", "HOPS_ACCEPTED", "SWAPS_PROPOSED",
           "SWAPS_ACCEPTED", "REBUILDS"]
