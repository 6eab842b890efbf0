"""Samplers: how walkers move, behind one interface that the drivers (:mod:`qmckit.methods`, :mod:`qmckit.runs`) use.

A sampler owns a walker ensemble (:class:`~qmckit.walkers.Walkers`) of one continuum system and offers

    sweep(n_sweeps, measure=True) -> (energies (n_sweeps or 0, W), acceptance)
        n sweeps of N single-particle moves on every walker; with ``measure`` the local energy of every
        walker after each sweep
    equilibrate(n_sweeps) -> acceptance     sweeps without measuring (the brute-force step is tuned)
    equilibration_pieces(n_sweeps)          (optional) the same as a generator of the sweeps done, so that a
                                            run can pause on Stop between chunks
    exact_in_pieces                         (optional) True when sweep(a) then sweep(b) gives the numbers
                                            of sweep(a + b): a run then cuts its blocks into pieces
    recompute()                             rebuild the walkers' caches from their positions
    local_energies() -> (W,)                E_L of every walker now
    sync()                                  bring the walkers to the host ``walkers`` (checkpoints)
    branch(index, children, source_states)  DMC branching: keep ``walkers[index]``; the rows ``children``
                                            (copies) get streams forked from ``source_states``
    walkers, sampler ("brute" | "drift"), dt, step, target_acceptance
    track_diffusion                         set True to have ``sweep`` sum the drift moves' squared diffusion
                                            displacements (DMC's effective time step; a GPU sweeper then runs
                                            a kernel variant that does, the CPU always does)
    last_diffusion                          (2, W) of the last sweep: Σ over the proposed (row 0) and the
                                            accepted (row 1) moves of |r' − r − Δt s v|² (None if not tracked)

Registered samplers, by backend: ``"cpu"`` — :class:`~qmckit.samplers.cpu.CpuSampler`, generic over any
system's kernels (moves ``brute`` and ``drift``); ``"cuda"`` — :class:`~qmckit.samplers.cuda.CudaSampler`,
which drives the system's own GPU sweeper named in ``capabilities.gpu`` (a class in :mod:`qmckit.backends`).
A system may add moves of its own in ``capabilities.samplers`` (helium's ``gauss``: study 004's move, one
class for both backends). :func:`make_sampler` picks one; the drivers never import :mod:`qmckit.backends`.
"""
from __future__ import annotations

import numpy as np

from ..backends.cpu_kernels import SAMPLERS, variant_flags
from ..systems.protocol import Unsupported
from .cpu import CpuSampler, equilibrate, equilibration_pieces, evaluate_configurations

BACKENDS = ("cpu", "cuda")


def make_sampler(system, walkers, backend: str = "cpu", *, sampler: str = "drift", dt: float = 0.05,
                 step: float = 1.0, target_acceptance: float = 0.5, drift_cap: bool = True, dtype=np.float64,
                 nuclear_moves: bool = False, **variants):
    """The sampler of ``backend`` ("cpu" or "cuda") for ``system`` on ``walkers``.

    ``variants`` are study 002's Metropolis deviations (``green``, ``accept_uniform``, ``hard_core``),
    CPU only; ``dtype`` (float64 or float32) is for the GPU; ``nuclear_moves``: the drift sampler's
    Umrigar–Nightingale–Runge moves near the system's nuclei (:mod:`qmckit.backends.nuclear_moves`)."""
    if sampler in system.capabilities.samplers:
        if variant_flags(**variants):
            raise ValueError(f"study 002's Metropolis variants go with the brute and drift samplers, not {sampler!r}")
        if nuclear_moves:
            raise Unsupported(f"nuclear_moves go with the drift sampler, not {sampler!r}")
        return _load(system.capabilities.samplers[sampler])(system, walkers, backend=backend, step=step, dt=dt,
                                                            target_acceptance=target_acceptance, dtype=dtype)
    if backend == "cuda":
        from .cuda import CudaSampler

        return CudaSampler(system, walkers, sampler=sampler, dt=dt, step=step, target_acceptance=target_acceptance,
                           drift_cap=drift_cap, dtype=np.dtype(dtype), nuclear_moves=nuclear_moves, **variants)
    if backend != "cpu":
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if np.dtype(dtype) != np.float64:
        raise ValueError("dtype float32 exists only for backend cuda")
    return CpuSampler(system, walkers, sampler=sampler, dt=dt, step=step, target_acceptance=target_acceptance,
                      drift_cap=drift_cap, nuclear_moves=nuclear_moves, **variants)


def _load(path: str):
    import importlib

    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def samplers_of(system) -> tuple[str, ...]:
    """The moves ``system`` can be sampled with: the generic ones and its own."""
    return SAMPLERS + tuple(system.capabilities.samplers)


def check_gpu(system, sampler: str = "drift") -> None:
    """Raise ValueError unless ``system`` has a GPU sampler for ``sampler`` (naming the system)."""
    if sampler in system.capabilities.samplers:
        return
    from .cuda import sweeper_class

    sweeper_class(system)


def cuda_available(system, sampler: str = "drift") -> bool:
    """Whether ``system`` has a GPU sampler for ``sampler`` and a real CUDA GPU is present."""
    if sampler in system.capabilities.samplers:
        from ..backends.cuda_import import available

        return available()
    from .cuda import cuda_available as available

    return available(system)


def gpu_takes(system) -> bool:
    """Whether the system's GPU sweeper takes this instance (a sweeper class may say no with ``fits(system)``, e.g. a
    molecule too large for the kernel's constant memory); ``backend="auto"`` then runs on the CPU."""
    from .cuda import sweeper_class

    fits = getattr(sweeper_class(system), "fits", None)
    return fits is None or bool(fits(system))


__all__ = ["SAMPLERS", "BACKENDS", "CpuSampler", "make_sampler", "samplers_of", "check_gpu", "cuda_available", "gpu_takes",
           "equilibrate", "equilibration_pieces", "evaluate_configurations", "variant_flags"]
