"""FYS4411 project 1 (trapped bosons): the checks of its tasks.

ħ = m = ω_ho = 1; the spherical trap V = ½ Σ r², ψ_T = exp(−α Σ r²) for N bosons in d dimensions; without the
interaction E_L = N·d·α + (½ − 2α²) Σ r², ∇_i ln ψ = −2α r_i, and ⟨E⟩ = N·d·(α/2 + 1/(8α)), exact N·d/2 at α = ½.
"""
from __future__ import annotations

import numpy as np

from .feedback import Feedback, task


def _log_psi(R, p):
    return -p[0] * np.sum(R * R)


def _trap(R, p):
    return 0.5 * np.sum(R * R)


@task("p1.a")
def analytic_local_energy_and_drift(local_energy=None, drift=None, n: int = 3, dim: int = 3,
                                    alpha: float = 0.4) -> Feedback:
    """Task a: the student's ``local_energy(R, p)`` and/or ``drift(R, p)`` (∇ ln ψ of every particle, (N, d)) for the
    non-interacting trap, ``p = [α]``, against finite differences of ln ψ at configurations from |ψ|²."""
    from ..systems import UserSystem
    from ..systems.user_check import check

    if local_energy is None and drift is None:
        raise ValueError("p1.a: give local_energy=, drift= or both")
    expected = ("E_L = N·d·α + (½ − 2α²) Σ r² and ∇_i ln ψ = −2α r_i, as finite differences of ln ψ = −α Σ r² "
                "give them")
    try:
        system = UserSystem(n=n, dim=dim, params={"alpha": alpha}, log_psi=_log_psi, potential=_trap,
                            local_energy=local_energy, drift=drift, name="p1_bosons")
    except ValueError as err:  # numba cannot compile it, or a wrong shape: the message says which
        return Feedback("p1.a", False, expected, "a function qmckit could not use", str(err))
    report = check(system)
    findings = [line.strip() for line in report.lines if not line.startswith("derived")]
    if report.ok:
        return Feedback("p1.a", True, expected, "; ".join(findings))
    obtained, causes, subject = [], [], "it"
    for line in findings:  # a finding ("drift: …", "local energy: …") and, indented below it, its diagnosis ("it …")
        if line.startswith("it "):
            causes.append(f"your {subject} {line[3:]}")
        else:
            subject = "drift" if line.startswith("drift") else "E_L"
            if "agrees" not in line:
                obtained.append(line)
    return Feedback("p1.a", False, expected, " ".join(obtained), "; ".join(causes) or "see the comparison above",
                    ["qmckit.check(system) prints the whole comparison"])


@task("p1.e")
def blocking(blocking, n: int = 2 ** 16, rho: float = 0.9, seed: int = 1) -> Feedback:
    """Task e: the student's ``blocking(series) -> error of the mean`` on a correlated series with a known answer: an
    AR(1) process x_t = ρ x_{t−1} + √(1 − ρ²) ε_t (unit variance), whose mean has the error
    √((1 + ρ)/(1 − ρ) / n), that is 2τ_int = (1 + ρ)/(1 − ρ) (τ_int = 9.5 at ρ = 0.9)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=n) * np.sqrt(1 - rho ** 2)
    series = np.empty(n)
    series[0] = rng.normal()
    for t in range(1, n):
        series[t] = rho * series[t - 1] + noise[t]
    two_tau = (1 + rho) / (1 - rho)
    truth = float(np.sqrt(two_tau / n))  # the error of the mean of a unit-variance AR(1) series
    expected = f"the error of the mean ≈ {truth:.3g} (τ_int = {two_tau / 2:.3g}, n = {n})"
    try:
        value = float(blocking(series.copy()))
    except Exception as err:  # the student's function failed: say how
        return Feedback("p1.e", False, expected, f"blocking(series) raised {type(err).__name__}: {err}")
    obtained = f"{value:.3g} ({value / truth:.2f} × the true error)"
    if not np.isfinite(value) or value <= 0:
        return Feedback("p1.e", False, expected, obtained, "an error bar is a positive number")
    ratio = value / truth
    if 0.8 < ratio < 1.25:  # blocking on 2^16 points is good to about 10 % at this τ
        return Feedback("p1.e", True, expected, obtained)
    sigma = float(series.std(ddof=1))
    naive = sigma / np.sqrt(n)
    if abs(value / naive - 1) < 0.05:
        cause = (f"your error is the naive σ/√n = {naive:.3g}, too small by √(2τ_int) ≈ {np.sqrt(two_tau):.1f}: the "
                 "samples are correlated; block them until the error stops growing")
    elif abs(value / sigma - 1) < 0.05:
        cause = "your number is the spread σ of the samples, not the error of their mean (divide by √n, then block)"
    elif abs(value / truth ** 2 - 1) < 0.2 or abs(value / naive ** 2 - 1) < 0.2:
        cause = "it looks like a variance: an error bar is its square root"
    elif ratio < 1:
        cause = (f"too small: the blocks you ended with are still correlated (τ_int ≈ {two_tau / 2:.3g} samples); "
                 "keep blocking to the plateau")
    else:
        cause = "too large: stop blocking at the plateau, before too few blocks are left to estimate a variance"
    return Feedback("p1.e", False, expected, obtained, cause)
