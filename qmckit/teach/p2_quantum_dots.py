"""FYS4411 project 2 (electrons in two-dimensional quantum dots): the checks of its tasks.

Atomic units of the dot (ħ = m* = e²/(4πε) = 1), two electrons of opposite spin in the trap ½ω² Σ r² with the
Coulomb repulsion 1/r₁₂, and the trial function ψ_T = exp(−αω(r₁² + r₂²)/2) exp(r₁₂/(1 + βr₁₂)) (the Jastrow
factor's a = 1 gives the cusp of antiparallel spins). Exact at ω = 1: 2 without the repulsion (α = 1, zero variance),
3 with it (Taut). Without the Jastrow factor, ⟨E⟩ = ω(α + 1/α) + √(παω/2) (the Gaussian's ⟨1/r₁₂⟩), whose minimum at
ω = 1 is 3.1684 at α = 0.763.
"""
from __future__ import annotations

import math

import numpy as np

from .derivatives import derivatives_feedback
from .feedback import Feedback, task


def energy_without_jastrow(alpha: float, omega: float = 1.0) -> float:
    """⟨E⟩ of ψ_T = exp(−αω(r₁² + r₂²)/2) for the two-electron dot, in a.u.: ω(α + 1/α) + √(παω/2)."""
    return omega * (alpha + 1 / alpha) + math.sqrt(math.pi * alpha * omega / 2)


def _gaussian(R, p):
    return -0.5 * p[0] * p[1] * np.sum(R * R)


def _trap(R, p):
    return 0.5 * p[-1] ** 2 * np.sum(R * R)


def _log_psi(R, p):
    r12 = np.sqrt(np.sum((R[0] - R[1]) ** 2))
    return -0.5 * p[0] * p[2] * np.sum(R * R) + r12 / (1 + p[1] * r12)


def _coulomb(R, p):
    return 1.0 / np.sqrt(np.sum((R[0] - R[1]) ** 2))


@task("p2.a")
def noninteracting_local_energy(local_energy, alpha: float = 0.9, omega: float = 1.0) -> Feedback:
    """Task a: the student's ``local_energy(R, p)``, p = [α, ω], of two electrons in 2D without the repulsion, for
    ψ_T = exp(−αω Σ r²/2): E_L = 2αω + ½ω²(1 − α²) Σ r², 2ω at α = 1."""
    expected = "E_L = 2αω + ½ω²(1 − α²) Σ r² (2ω at α = 1), as finite differences of ln ψ_T give it"
    return derivatives_feedback("p2.a", expected, local_energy, None, n=2, dim=2,
                                params={"alpha": alpha, "omega": omega}, log_psi=_gaussian, potential=_trap,
                                name="p2_free_electrons")


@task("p2.b")
def interacting_local_energy(local_energy, alpha: float = 0.99, beta: float = 0.4, omega: float = 1.0) -> Feedback:
    """Task b: the student's ``local_energy(R, p)``, p = [α, β, ω], of the two-electron dot with the repulsion and the
    Padé–Jastrow factor, against finite differences of ln ψ_T with V = ½ω² Σ r² + 1/r₁₂ (a missing term is named)."""
    expected = ("E_L = −½ ∇²ψ_T/ψ_T + ½ω² Σ r² + 1/r₁₂ for ψ_T = exp(−αω Σ r²/2 + r₁₂/(1 + βr₁₂)), as finite "
                "differences of ln ψ_T give it")
    return derivatives_feedback("p2.b", expected, local_energy, None, n=2, dim=2,
                                params={"alpha": alpha, "beta": beta, "omega": omega}, log_psi=_log_psi,
                                potential={"trap": _trap, "coulomb": _coulomb}, name="p2_dot")


@task("p2.c")
def taut_energy(energy, tolerance: float = 0.005) -> Feedback:
    """Task c: the student's VMC energy of the two-electron dot at ω = 1 with α and β of their choice (``energy``: a
    run's ``estimates["energy"]``), against Taut's exact 3 a.u.: an upper bound, passed within ``tolerance`` above."""
    mean, error = float(energy["mean"]), float(energy["error"])
    best_gaussian = energy_without_jastrow(0.7630755)
    expected = (f"3 a.u. (Taut) from above, within {tolerance} (VMC is an upper bound; without the Jastrow factor the "
                f"best is {best_gaussian:.4f})")
    obtained = f"{mean:.5f} ± {error:.5f} a.u."
    if not error > 0:
        return Feedback("p2.c", False, expected, obtained, "an error bar of zero: run more steps")
    if mean < 3 - 3 * error:
        cause = ("below the exact ground state, which a variational energy cannot be: check the sign of the Coulomb "
                 "term (+1/r₁₂) and of the Jastrow factor (+r₁₂/(1 + βr₁₂))")
    elif mean <= 3 + tolerance + 3 * error and 3 * error < tolerance:
        return Feedback("p2.c", True, expected, obtained + f" ({mean - 3:+.4f} above 3)")
    elif 3 * error >= tolerance:
        cause = f"the error bar ±{error:.4f} is too large to judge {tolerance}: run more steps or walkers"
    elif mean >= best_gaussian - 3 * error:
        cause = (f"no better than the Gaussian alone (at best {best_gaussian:.4f}): check that the Jastrow factor, "
                 "with a = 1 for two electrons of opposite spin, is in ψ_T and that β is not near 0 or large")
    else:
        cause = "the Jastrow factor helps, but α and β are not at their best: minimise the energy over both"
    return Feedback("p2.c", False, expected, obtained, cause)
