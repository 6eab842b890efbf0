"""FYS4411 project 2 (electrons in two-dimensional quantum dots): the checks of its tasks.

Atomic units of the dot (ħ = m* = e²/(4πε) = 1), two electrons of opposite spin in the trap ½ω² Σ r² with the
Coulomb repulsion 1/r₁₂, and the trial function ψ_T = exp(−αω(r₁² + r₂²)/2) exp(r₁₂/(1 + βr₁₂)) (the Jastrow
factor's a = 1 gives the cusp of antiparallel spins). Exact at ω = 1: 2 without the repulsion (α = 1, zero variance),
3 with it (Taut). Without the Jastrow factor, ⟨E⟩ = ω(α + 1/α) + √(παω/2) (the Gaussian's ⟨1/r₁₂⟩), whose minimum at
ω = 1 is 3.1684 at α = 0.763.

Taut's exact ground state at ω = 1 is ψ = (1 + r₁₂) exp(−(r₁² + r₂²)/2), E = 3 (the centre of mass carries ω = 1,
the relative motion 2). Its relative coordinate r = r₁₂ has the density ∝ (1 + r)² exp(−r²/2) r, so with
Z = 3 + √(2π): ⟨r₁₂⟩ = (4 + 2√(2π))/Z = 1.6368, ⟨1/r₁₂⟩ = (2 + √(2π))/Z = 0.8184 and ⟨r₁₂²⟩ = (10 + 3√(2π))/Z; the
centre of mass R = (r₁ + r₂)/2 has ⟨R²⟩ = ½, so ⟨V_trap⟩ = ⟨R²⟩ + ⟨r₁₂²⟩/4 = 1.2954 and ⟨T⟩ = 3 − ⟨V_trap⟩ − ⟨V_ee⟩.
The virial theorem for V_k ∝ r^(n_k) reads 2⟨T⟩ = Σ n_k ⟨V_k⟩ = 2⟨V_trap⟩ − ⟨V_ee⟩ for an eigenstate.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .derivatives import derivatives_feedback
from .feedback import Feedback, attempt, task

_Z = 3 + math.sqrt(2 * math.pi)
TAUT = {"r12": (4 + 2 * math.sqrt(2 * math.pi)) / _Z, "coulomb": (2 + math.sqrt(2 * math.pi)) / _Z,
        "trap": 0.5 + (10 + 3 * math.sqrt(2 * math.pi)) / (4 * _Z)}  # Taut's ω = 1 state: ⟨r₁₂⟩, ⟨V_ee⟩, ⟨V_trap⟩
TAUT["kinetic"] = 3 - TAUT["trap"] - TAUT["coulomb"]


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


def _taut_log_psi(R, p):
    return math.log(1 + math.sqrt(np.sum((R[0] - R[1]) ** 2))) - 0.5 * np.sum(R * R)


def taut_system(r12=None, name: str = "p2_taut"):
    """Taut's exact two-electron dot at ω = 1 as a :func:`qmckit.UserSystem` that reports ``kinetic_energy``,
    ``potential_trap``, ``potential_coulomb`` and, given ``r12(R, p)``, the observable ``r12``."""
    from ..systems import UserSystem

    return UserSystem(n=2, dim=2, params={"omega": 1.0}, log_psi=_taut_log_psi,
                      potential={"trap": _trap, "coulomb": _coulomb}, energy_terms=True,
                      observables={"r12": r12} if r12 is not None else None, name=name, width=1.0,
                      title="Taut's exact two-electron quantum dot at ω = 1")


def _distance_slip(values, configs) -> str:
    """What the student's r₁₂ at ``configs`` (M, 2, 2) computes instead of |r₁ − r₂| ("" when it is right)."""
    d = configs[:, 0] - configs[:, 1]
    right = np.sqrt(np.sum(d * d, axis=1))
    slips = [(right, ""), (right ** 2, "that is r₁₂², the squared distance: take its square root"),
             (np.abs(np.sqrt(np.sum(configs[:, 0] ** 2, axis=1)) - np.sqrt(np.sum(configs[:, 1] ** 2, axis=1))),
              "that is ||r₁| − |r₂||, the difference of the distances from the centre: take |r₁ − r₂|"),
             (np.sqrt(np.sum(configs[:, 0] ** 2, axis=1)) - np.sqrt(np.sum(configs[:, 1] ** 2, axis=1)),
              "that is |r₁| − |r₂|, the difference of the distances from the centre: take |r₁ − r₂|"),
             (np.sum(np.abs(d), axis=1), "that is |x₁ − x₂| + |y₁ − y₂|: the distance is √((x₁ − x₂)² + (y₁ − y₂)²)")]
    for slip_values, slip in slips:
        if np.allclose(values, slip_values, rtol=1e-9, atol=1e-12):
            return slip
    return "that is not the distance |r₁ − r₂| = √((x₁ − x₂)² + (y₁ − y₂)²) between the electrons"


_TAUT_SYSTEMS: dict = {}  # r12 function → taut_system(r12)

# the virial residual's coefficients (of ⟨T⟩, ⟨V_trap⟩, ⟨V_ee⟩) that typical slips give, relative to 2⟨T⟩
_VIRIAL_SLIPS = [((2, -2, -1), "the Coulomb term has the wrong sign: V_ee ∝ r⁻¹ enters as n⟨V⟩ = −⟨V_ee⟩"),
                 ((2, -2, 0), "the Coulomb term is missing: every homogeneous term V ∝ rⁿ enters as n⟨V⟩"),
                 ((2, -1, 1), "the trap enters with its degree: V_trap ∝ r², so 2⟨V_trap⟩"),
                 ((2, -1, -1), "the theorem weighs each term by its degree n: 2⟨V_trap⟩ − ⟨V_ee⟩, not ⟨V⟩"),
                 ((2, -2, -2), "⟨T⟩ = ⟨V⟩ holds for the trap alone: V_ee ∝ r⁻¹ enters as −⟨V_ee⟩"),
                 ((2, -2, 2), "V_ee ∝ r⁻¹ has degree −1: it enters once, as −⟨V_ee⟩"),
                 ((2, -4, 2), "the kinetic energy enters twice: 2⟨T⟩")]


def virial_residual(run, virial):
    """The Estimate of ``virial(kinetic, trap, coulomb)`` on a finished VMC ``run`` of a two-electron dot with
    ``energy_terms`` (the names of :func:`taut_system`), from its per-sweep averages (reblocked: the terms are
    correlated with each other and in time)."""
    from ..stats import ShortSeriesWarning, estimate

    terms = (run.series_of(f"obs_{key}") for key in ("kinetic_energy", "potential_trap", "potential_coulomb"))
    with warnings.catch_warnings():  # 7–15 blocks at the optimal size: enough for a 4σ test, so no warning for it
        warnings.simplefilter("ignore", ShortSeriesWarning)
        return estimate(virial(*terms))


@task("p2.d")
def virial_theorem(r12, virial, walkers: int = 50, steps: int = 2000, seed: int = 1) -> Feedback:
    """Task d: the student's observable ``r12(R, p)`` (the distance between the two electrons) and
    ``virial(kinetic, trap, coulomb)``, the residual 2T − (2V_trap − V_ee) of the virial theorem (any nonzero multiple
    of it; it must work on numbers and on NumPy arrays). A VMC run of Taut's exact state (:func:`taut_system`) with
    the student's ``r12`` measures ⟨r₁₂⟩ against 1.6368, and the residual, evaluated on the run's per-sweep
    averages, against 0 within 4σ."""
    from ..runs import RunConfig, make_run

    expected = (f"⟨r₁₂⟩ = {TAUT['r12']:.4f} and a virial residual 2⟨T⟩ − 2⟨V_trap⟩ + ⟨V_ee⟩ = 0 for Taut's exact "
                "state (ω = 1, E = 3 a.u.)")
    configs = np.random.default_rng(5).normal(size=(30, 2, 2))
    mine = attempt("p2.d", expected, "r12", lambda: np.array([float(r12(R.copy(), np.array([1.0]))) for R in configs]))
    slip = _distance_slip(mine, configs)
    coefficients = attempt("p2.d", expected, "virial", lambda: np.array(
        [float(virial(*unit)) for unit in np.eye(3)]) - float(virial(0.0, 0.0, 0.0)))
    offset = attempt("p2.d", expected, "virial", lambda: float(virial(0.0, 0.0, 0.0)))
    causes = [f"your r12: {slip}"] if slip else []
    if not np.any(coefficients):
        causes.append("your virial returns the same value whatever T, V_trap and V_ee: write 2T − (2V_trap − V_ee)")
    elif offset != 0 or coefficients[0] == 0:
        causes.append("your virial must be 2T − (2V_trap − V_ee), linear in the three energies with no constant")
    else:
        ratio = 2 * coefficients / coefficients[0]
        if not np.allclose(ratio, (2, -2, 1), atol=1e-9):
            named = next((text for c, text in _VIRIAL_SLIPS if np.allclose(ratio, c, atol=1e-9)), None)
            causes.append(f"your virial: {named}" if named else
                          "your virial is not 2T − (2V_trap − V_ee) (for V ∝ rⁿ the theorem reads 2⟨T⟩ = n⟨V⟩)")
    if slip:  # a run would only repeat it
        return Feedback("p2.d", False, expected, "r12 at test configurations is not the distance", "; ".join(causes))
    if r12 not in _TAUT_SYSTEMS:  # compiled once for each r12 (a checked-again answer runs at once)
        try:
            _TAUT_SYSTEMS[r12] = taut_system(r12)
        except ValueError as err:
            return Feedback("p2.d", False, expected, "an r12 qmckit could not use", str(err))
    system = _TAUT_SYSTEMS[r12]
    run = make_run(RunConfig(system=system, walkers=walkers, steps=steps, seed=seed))
    out = run.run()["estimates"]
    distance = out["r12"]
    residual = virial_residual(run, virial)
    obtained = (f"⟨r₁₂⟩ = {distance['mean']:.4f} ± {distance['error']:.4f}, virial residual "
                f"{residual.mean:+.4f} ± {residual.error:.4f} (⟨T⟩ = {out['kinetic_energy']['mean']:.4f}, ⟨V_trap⟩ = "
                f"{out['potential_trap']['mean']:.4f}, ⟨V_ee⟩ = {out['potential_coulomb']['mean']:.4f} a.u.)")
    if not causes and abs(distance["mean"] - TAUT["r12"]) > 4 * distance["error"]:
        causes.append(f"⟨r₁₂⟩ is {abs(distance['mean'] - TAUT['r12']) / distance['error']:.1f}σ off: run longer")
    if not causes and abs(residual.mean) > 4 * residual.error:
        causes.append(f"the residual is {abs(residual.mean) / residual.error:.1f}σ from zero: run longer")
    return Feedback("p2.d", not causes, expected, obtained, "; ".join(causes))


def _integral(y, x) -> float:
    """The trapezoidal ∫ y dx (``np.trapezoid`` from NumPy 2, ``np.trapz`` before)."""
    return float((getattr(np, "trapezoid", None) or np.trapz)(y, x))


def free_density(rho, omega):
    """n(ρ) of one electron in the dot's non-interacting ground state, exp(−ωρ²/2) squared: (ω/π) exp(−ωρ²), per
    unit area, with ∫ 2πρ n(ρ) dρ = 1 (qmckit's ``density="rho"``)."""
    return omega / math.pi * np.exp(-omega * np.asarray(rho) ** 2)


@task("p2.e")
def noninteracting_density(density) -> Feedback:
    """Task e: the student's ``density(rho, omega)``: the one-body density n(ρ) per electron (∫ 2πρ n dρ = 1) of the
    non-interacting ground state, against :func:`free_density` at ω = 1 and ω = 0.5 on a grid (relative 1e-6)."""
    expected = "n(ρ) = (ω/π) exp(−ωρ²), per electron: ∫ 2πρ n(ρ) dρ = 1"
    rho = np.linspace(0.0, 3.0, 31)
    causes, obtained = [], []
    for omega in (1.0, 0.5):
        mine = attempt("p2.e", expected, f"density(rho, {omega})",
                       lambda: np.broadcast_to(np.asarray(density(rho.copy(), omega), dtype=float), rho.shape))
        right = free_density(rho, omega)
        if np.allclose(mine, right, rtol=1e-6, atol=0):
            continue
        obtained.append(f"at ω = {omega}: n(0) = {mine[0]:.4g} (expected {right[0]:.4g}), "
                        f"∫ 2πρ n dρ = {_integral(2 * np.pi * rho * mine, rho):.3f} on [0, 3]")
        if not (np.all(np.isfinite(mine)) and np.all(mine > 0)):
            causes.append("n(ρ) must be positive and finite everywhere")
            break
        slope = np.polyfit(rho ** 2, np.log(mine), 1)[0]  # ln n = ln n(0) + slope ρ²
        ratio = mine[0] / right[0]
        if math.isclose(slope, -omega / 2, rel_tol=1e-6):
            causes.append("the exponent is −ωρ²/2, that of ψ: the density is |ψ|², exp(−ωρ²)")
        elif not math.isclose(slope, -omega, rel_tol=1e-6):
            causes.append(f"the density falls off as exp({slope:.3g} ρ²) at ω = {omega}: it is exp(−ωρ²)")
        elif math.isclose(ratio, 2, rel_tol=1e-6):
            causes.append("normalised to both electrons (∫ = 2): qmckit's n(ρ) is per electron, ∫ 2πρ n dρ = 1")
        elif math.isclose(ratio, math.pi, rel_tol=1e-6):
            causes.append("the 1/π is missing: ∫ 2πρ exp(−ωρ²) dρ = π/ω")
        elif math.isclose(ratio, math.sqrt(omega / math.pi), rel_tol=1e-6):
            causes.append("a three-dimensional normalisation (ω/π)^(3/2): in two dimensions it is ω/π")
        else:
            causes.append(f"the shape is right but the normalisation is off by a factor {ratio:.4g}: "
                          "∫ 2πρ n(ρ) dρ must be 1")
        break
    if not causes:
        return Feedback("p2.e", True, expected, "agrees at ω = 1 and 0.5")
    return Feedback("p2.e", False, expected, "; ".join(obtained), causes[0])
