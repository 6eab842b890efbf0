"""Metropolis variational Monte Carlo with single-particle moves, generic over continuum systems.

Two move types (``sampler``):

* ``"brute"``: uniform displacement in a cube of side ``step`` around the particle; the step is
  tuned during equilibration towards a target acceptance.
* ``"drift"``: importance sampling with the Fokker–Planck drift (D = ½):
  r' = r + Δt ∇_i ln ψ(R) + √Δt χ,  χ ~ N(0, 1)^d, accepted with the exact Metropolis–Hastings
  ratio |ψ(R')/ψ(R)|² G(r'→r)/G(r→r'), where only the moved particle's Green's function enters.
  A fresh uniform decides acceptance and a hard-core overlap is rejected (never redrawn).

A VMC run is equilibration and measured sweeps of a sampler (:mod:`qmckit.samplers`; the blocks,
checkpoints and estimates are :class:`qmckit.runs.VMCRun`'s). :class:`VMC` is the generic CPU
sampler, :class:`qmckit.samplers.cpu.CpuSampler`, under the name this module has always given it.
"""
from __future__ import annotations

from ..samplers import SAMPLERS, equilibrate, variant_flags
from ..samplers.cpu import CpuSampler as VMC

__all__ = ["VMC", "SAMPLERS", "equilibrate", "variant_flags"]
