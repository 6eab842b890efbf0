"""The DMC introduction's checks (notebooks/exercises/dmc_intro.ipynb).

ħ = m = ω = 1. The one-dimensional oscillator V = ½x² with ψ_T = exp(−αx²): VMC gives α/2 + 1/(8α), DMC projects
onto the ground state, exactly ½ at any α (a nodeless ψ_T), with a time-step error of order Δτ and a
population-control bias of order 1/W.
"""
from __future__ import annotations

import numpy as np

from .feedback import Feedback, attempt, task


@task("dmc.a")
def branching_weight(branching_weight, dt: float = 0.01) -> Feedback:
    """Task a: the student's ``branching_weight(e_old, e_new, e_trial, dt) -> q``, the expected number of copies of a
    walker after a step, q = exp(−Δτ (½(E_L(R) + E_L(R′)) − E_T)), elementwise on arrays."""
    rng = np.random.default_rng(1)
    e_old, e_new = 0.5 + rng.normal(size=200), 0.5 + rng.normal(size=200)
    e_trial = 0.45
    right = np.exp(-dt * (0.5 * (e_old + e_new) - e_trial))
    expected = "q = exp(−Δτ (½(E_L(R) + E_L(R′)) − E_T)): walkers below E_T multiply, those above die out"
    q = attempt("dmc.a", expected, "branching_weight",
                lambda: np.asarray(branching_weight(e_old.copy(), e_new.copy(), e_trial, dt), dtype=float))
    if q.shape == right.shape and np.allclose(q, right, rtol=1e-12):
        return Feedback("dmc.a", True, expected, "q agrees at 200 pairs of energies")
    obtained = f"q = {np.ravel(q)[:3].round(5)}… where {right[:3].round(5)}…" if q.size else "no q"
    if q.shape == right.shape and np.allclose(q, 1 / right, rtol=1e-9):
        cause = "the sign is reversed: a walker of low energy (below E_T) must make more copies, q > 1"
    elif q.shape == right.shape and np.allclose(q, np.exp(-dt * (e_new - e_trial)), rtol=1e-9):
        cause = ("only the new energy: that is right to first order in Δτ only; the average ½(E_L(R) + E_L(R′)) "
                 "is correct to second order")
    elif q.shape == right.shape and np.allclose(q, np.exp(-dt * 0.5 * (e_old + e_new)), rtol=1e-9):
        cause = "E_T is missing: without it the population dies out or explodes; q = exp(−Δτ (Ē_L − E_T))"
    elif q.shape == right.shape and np.allclose(q, np.exp(-dt * (e_old + e_new - e_trial)), rtol=1e-9):
        cause = "the ½ of the average is missing: ½(E_L(R) + E_L(R′))"
    else:
        cause = "compare term by term with q = exp(−Δτ (½(E_L(R) + E_L(R′)) − E_T))"
    return Feedback("dmc.a", False, expected, obtained, cause)


@task("dmc.b")
def ground_state_energy(energy, alpha: float = 0.3) -> Feedback:
    """Task b: the student's DMC estimate of the one-dimensional oscillator's energy (``energy``: a run's
    ``estimates["energy"]``, with mean and error) from ψ_T = exp(−αx²), against the exact ½ and VMC's
    α/2 + 1/(8α)."""
    mean, error = float(energy["mean"]), float(energy["error"])
    vmc = alpha / 2 + 1 / (8 * alpha)
    expected = f"½ ħω within the error bar (VMC with this ψ_T: {vmc:.4f})"
    obtained = f"{mean:.5f} ± {error:.5f} ħω"
    if not error > 0:
        return Feedback("dmc.b", False, expected, obtained, "an error bar of zero: the run has too few steps to "
                        "estimate one (QMCKIT_FAST shortens runs; give steps= explicitly)")
    if abs(mean - 0.5) < 3 * error and 3 * error < 0.5 * (vmc - 0.5):
        return Feedback("dmc.b", True, expected, obtained + f" ({(mean - 0.5) / error:+.1f}σ from ½)")
    if 3 * error >= 0.5 * (vmc - 0.5):
        cause = (f"the error bar ±{error:.4f} cannot tell DMC from VMC ({vmc - 0.5:.4f} apart): run more steps or "
                 "walkers")
    elif abs(mean - vmc) < 3 * error:
        cause = ("that is the VMC energy: the walkers have not been projected (is it a DMC run? are the DMC "
                 "equilibration steps and the run longer than a few time units, steps × dt ≳ 3?)")
    elif mean > 0.5:
        cause = (f"between ½ and VMC's {vmc:.4f}: still relaxing (the projection takes a few time units, 1/ω: "
                 "equilibrate longer, dmc_equilibration × dt ≳ 3), or too few walkers, whose population control "
                 "biases the energy upward by about 1/W (W ≳ 100)")
    else:
        cause = ("below the ground state, which DMC with a nodeless ψ_T reaches only through its time-step error: "
                 "lower Δτ (≲ 0.01)")
    return Feedback("dmc.b", False, expected, obtained, cause)


@task("dmc.c")
def time_step_extrapolation(extrapolate) -> Feedback:
    """Task c: the student's ``extrapolate(dts, energies, errors) -> (E(0), error)``: a straight line through the
    points weighted by 1/error², its intercept and the intercept's error, on data with a known intercept."""
    from ..stats import extrapolate as reference

    dts = np.array([0.005, 0.01, 0.02, 0.04, 0.08])
    errors = np.array([0.004, 0.003, 0.002, 0.0015, 0.001])
    energies = -2.9037 + 0.25 * dts + np.array([0.003, -0.002, 0.001, -0.001, 0.0005])
    right = reference(dts, energies, errors, order=1, n_points=None)
    expected = (f"E(0) = {right.energy:.5f} ± {right.error:.5f} (a line weighted by 1/σ², through all "
                f"{dts.size} time steps)")
    value, error = attempt("dmc.c", expected, "extrapolate",
                           lambda: [float(x) for x in extrapolate(dts.copy(), energies.copy(), errors.copy())])
    obtained = f"E(0) = {value:.5f} ± {error:.5f}"
    if np.isclose(value, right.energy, atol=1e-7, rtol=0) and np.isclose(error, right.error, rtol=0.05):
        return Feedback("dmc.c", True, expected, obtained)
    unweighted = np.polyfit(dts, energies, 1)[1]
    if np.isclose(value, right.energy, atol=1e-7, rtol=0):
        cause = (f"the intercept is right; its error is √((AᵀWA)⁻¹)₀₀ = {right.error:.5f}, from the covariance of "
                 "the weighted fit (not the scatter of the residuals, nor the smallest time step's error)")
    elif np.isclose(value, unweighted, atol=1e-7, rtol=0):
        cause = "an unweighted fit: the points with small error bars must count more, weight them by 1/σ²"
    elif np.isclose(value, energies[np.argmin(dts)], atol=1e-7, rtol=0):
        cause = ("that is the smallest time step's energy: it still carries a time-step error of "
                 f"{0.25 * dts.min():.4f}; extrapolate the line to Δτ = 0")
    elif np.isclose(value, reference(dts, energies, errors, order=2, n_points=None).energy, atol=1e-7, rtol=0):
        cause = "a quadratic: with five points whose E(Δτ) is straight, fit a line (order 1)"
    else:
        cause = "fit E = E(0) + k Δτ by weighted least squares and return E(0)"
    return Feedback("dmc.c", False, expected, obtained, cause)
