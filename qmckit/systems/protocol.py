"""The kernel protocol every continuum system implements (one walker at a time, numba functions).

``R`` is one walker's positions ``(N, d)``, ``p`` the system's float64 parameter vector and
``cache`` the walker's cache row ``(C,)`` whose layout the system owns.

recompute(R, p, cache)                      rebuild the cache from scratch
gradient(R, p, cache, i, out)               ∇_i ln ψ(R) into ``out`` (d,)
test_move(R, p, cache, i, r_new, grad_new)  ln|ψ(R')/ψ(R)| for particle i moved to r_new (−inf if
                                            forbidden); ∇_i ln ψ(R') into ``grad_new``
accept_move(R, p, cache, i, r_new, grad_new) commit the move tested last, updating the cache
local_energy(R, p, cache)                   E_L(R) of the walker, in the system's energy unit
log_psi(R, p)                               ln|ψ_T(R)| (tests and finite differences)
other_drift_change(R, p, cache, i, r_new, dt)
                                            (Δt/2) Σ_{j≠i} (|∇_j ln ψ(R)|² − |∇_j ln ψ(R')|²) after
                                            test_move: only for study 002's all-particle Green's
                                            function (a system may return NaN if it has none)
"""
from typing import Callable, NamedTuple


class SystemKernels(NamedTuple):
    recompute: Callable
    gradient: Callable
    test_move: Callable
    accept_move: Callable
    local_energy: Callable
    log_psi: Callable
    other_drift_change: Callable
