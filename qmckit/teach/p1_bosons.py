"""FYS4411 project 1 (trapped bosons): the checks of its tasks.

ħ = m = ω_ho = 1; the spherical trap V = ½ Σ r², ψ_T = exp(−α Σ r²) for N bosons in d dimensions; without the
interaction E_L = N·d·α + (½ − 2α²) Σ r², ∇_i ln ψ = −2α r_i, and ⟨E⟩ = N·d·(α/2 + 1/(8α)), exact N·d/2 at α = ½;
|ψ_T|² is a Gaussian with variance 1/(4α) per coordinate, and dE/dα = N·d·(½ − 1/(8α²)).
"""
from __future__ import annotations

import math

import numpy as np

from .derivatives import derivatives_feedback
from .feedback import Feedback, attempt, task


def exact_energy(alpha: float, n: int, dim: int) -> float:
    """⟨E_L⟩ of ψ_T = exp(−α Σ r²) in the spherical trap, in ħω: N·d·(α/2 + 1/(8α))."""
    return n * dim * (alpha / 2 + 1 / (8 * alpha))


def _log_psi(R, p):
    return -p[0] * np.sum(R * R)


def _trap(R, p):
    return 0.5 * np.sum(R * R)


@task("p1.a")
def analytic_local_energy_and_drift(local_energy=None, drift=None, n: int = 3, dim: int = 3,
                                    alpha: float = 0.4) -> Feedback:
    """Task a: the student's ``local_energy(R, p)`` and/or ``drift(R, p)`` (∇ ln ψ of every particle, (N, d)) for the
    non-interacting trap, ``p = [α]``, against finite differences of ln ψ at configurations from |ψ|²."""
    expected = ("E_L = N·d·α + (½ − 2α²) Σ r² and ∇_i ln ψ = −2α r_i, as finite differences of ln ψ = −α Σ r² "
                "give them")
    return derivatives_feedback("p1.a", expected, local_energy, drift, n=n, dim=dim, params={"alpha": alpha},
                                log_psi=_log_psi, potential=_trap, name="p1_bosons")


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
    value = attempt("p1.e", expected, "blocking(series)", lambda: float(blocking(series.copy())))
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


def _sampler_answer(name: str, expected: str, sampler, alpha: float, n: int, dim: int, steps: int, seed: int,
                    **settings):
    """The student's sampler run: (energies, acceptance)."""
    def run():
        out = sampler(alpha, n, dim, steps, seed=seed, **settings)
        return np.asarray(out[0], dtype=float), float(out[1])
    return attempt(name, expected, f"{getattr(sampler, '__name__', 'your walk')}(...) giving (energies, acceptance)",
                   run)


def _sampler_feedback(name: str, sampler, n: int, dim: int, steps: int, seed: int, settings: list[dict],
                      setting_name: str, dependence: str) -> Feedback:
    """The shared check of tasks b and c: zero variance at α = ½, the closed form within 4σ at α = 0.4 for every
    setting (a step length, or δt), and the diagnoses of the typical mistakes; ``dependence`` is the likely cause
    when the mean changes with the setting."""
    from ..stats import estimate

    exact = exact_energy(0.4, n, dim)
    expected = (f"E_L = N·d/2 = {n * dim / 2:g} ħω at every step at α = ½ (zero variance); at α = 0.4 the mean "
                f"⟨E⟩ = N·d·(α/2 + 1/(8α)) = {exact:.4g} ħω within the error bar, for every {setting_name}")
    energies, _ = _sampler_answer(name, expected, sampler, 0.5, n, dim, steps // 4, seed, **settings[0])
    if energies.size == 0 or not np.allclose(energies, n * dim / 2, rtol=1e-9, atol=1e-9):
        spread = f"from {energies.min():.4g} to {energies.max():.4g}" if energies.size else "no samples"
        return Feedback(name, False, expected, f"at α = ½ the energies run {spread}",
                        "at α = ½ ψ_T is the exact ground state: every E_L must be N·d/2; check your local energy "
                        "(task a)")
    obtained, failures, means = [], [], []
    for k, setting in enumerate(settings):
        energies, acceptance = _sampler_answer(name, expected, sampler, 0.4, n, dim, steps, seed + 1 + k, **setting)
        label = ", ".join(f"{key} = {value:g}" for key, value in setting.items())
        if energies.size < 0.99 * steps:
            accepted_only = abs(energies.size - acceptance * steps) <= 0.01 * steps
            return Feedback(name, False, expected, f"{energies.size} energies from {steps} steps ({label})",
                            "you record E_L only when a move is accepted: a rejected move counts the old "
                            "configuration once more, so record E_L after every step" if accepted_only else
                            f"return one energy per step, {steps} of them (a burn-in belongs before the steps)")
        est = estimate(energies)
        means.append(est)
        pull = (est.mean - exact) / est.error if est.error > 0 else np.inf
        obtained.append(f"{est.mean:.4f} ± {est.error:.4f} ħω at {label} (acceptance {acceptance:.2f}, "
                        f"{pull:+.1f}σ)")
        if abs(pull) > 4:
            failures.append((setting, est, acceptance, label))
    if not failures:
        return Feedback(name, True, expected, "; ".join(obtained))
    setting, est, acceptance, label = failures[0]
    psi_not_squared = n * dim / (4 * 0.4)  # ⟨E_L⟩ over |ψ_T| instead of |ψ_T|²: r² per coordinate 1/(2α)
    if abs(est.mean - psi_not_squared) < 4 * est.error + 0.01 * psi_not_squared:
        cause = (f"your walkers sample |ψ_T|, not |ψ_T|²: ⟨E_L⟩ over |ψ_T| is N·d/(4α) = {psi_not_squared:.4g}; the "
                 "acceptance ratio is |ψ_T(R′)/ψ_T(R)|² = exp(2 (ln ψ_T(R′) − ln ψ_T(R)))")
    elif acceptance < 0.05 or acceptance > 0.995:
        cause = (f"the acceptance is {acceptance:.3f}: with so few {'rejections' if acceptance > 0.5 else 'moves'} "
                 f"the walk hardly explores |ψ_T|²; choose a {setting_name} that accepts 30–90 % of the moves")
    elif len(failures) < len(settings) or abs(means[0].mean - means[-1].mean) > 4 * np.hypot(means[0].error,
                                                                                             means[-1].error):
        cause = f"the mean changes with the {setting_name} ({label} is off): {dependence}"
    else:
        cause = (f"the mean is {abs(est.mean - exact) / est.error:.0f} error bars from the closed form: the walk does "
                 "not sample |ψ_T|² (check the acceptance test: accept when a uniform u < the ratio)")
    return Feedback(name, False, expected, "; ".join(obtained), cause)


@task("p1.b")
def brute_force_metropolis(metropolis, n: int = 2, dim: int = 3, steps: int = 20000, seed: int = 1) -> Feedback:
    """Task b: the student's ``metropolis(alpha, n, dim, steps, seed=, step=) -> (energies, acceptance)``, a
    brute-force Metropolis walk of one walker (uniform moves of length ``step``) recording E_L after every step,
    checked at two step lengths."""
    return _sampler_feedback("p1.b", metropolis, n, dim, steps, seed, [{"step": 1.0}, {"step": 2.0}], "step length",
                             "a symmetric move (uniform around R) is accepted with |ψ_T(R′)/ψ_T(R)|² alone, whatever "
                             "its length; check that the move is centred on R and the old configuration is kept when "
                             "a move is rejected")


@task("p1.c")
def importance_sampling(importance, n: int = 2, dim: int = 3, steps: int = 20000, seed: int = 1) -> Feedback:
    """Task c: the student's ``importance(alpha, n, dim, steps, seed=, dt=) -> (energies, acceptance)``, a Langevin
    (drift–diffusion) walk with the Metropolis–Hastings acceptance, checked at a small and a large time step: with
    the Green's-function ratio the mean is exact at any δt; without it, the bias grows with δt."""
    return _sampler_feedback("p1.c", importance, n, dim, steps, seed, [{"dt": 0.05}, {"dt": 0.8}], "time step δt",
                             "an importance-sampled walk is exact at any δt only with the Green's-function ratio "
                             "G(R←R′)/G(R′←R) in the acceptance; check that it is there and not inverted, "
                             "G(R′←R) ∝ exp(−|R′ − R − ½δt F(R)|²/(2δt)) with F = 2∇ln ψ_T")


@task("p1.d")
def energy_gradient(energy_gradient, n: int = 10, dim: int = 3, samples: int = 100_000, seed: int = 1) -> Feedback:
    """Task d: the student's ``energy_gradient(local_energies, dlnpsi) -> dE/dα`` from samples of |ψ_T|², with
    ``dlnpsi`` = ∂ ln ψ_T/∂α = −Σ r² at each sample: 2(⟨E_L ∂lnψ⟩ − ⟨E_L⟩⟨∂lnψ⟩), checked on exact samples at
    α = 0.4 and 0.6 against that estimator and the closed form N·d·(½ − 1/(8α²))."""
    rng = np.random.default_rng(seed)
    expected = "dE/dα = 2(⟨E_L ∂_α ln ψ⟩ − ⟨E_L⟩⟨∂_α ln ψ⟩), → N·d·(½ − 1/(8α²)) with many samples"
    obtained, cause = [], ""
    for alpha in (0.4, 0.6):
        R = rng.normal(scale=np.sqrt(1 / (4 * alpha)), size=(samples, n, dim))  # exact samples of |ψ_T|²
        r2 = np.sum(R * R, axis=(1, 2))
        e_l, dlnpsi = n * dim * alpha + (0.5 - 2 * alpha ** 2) * r2, -r2
        right = 2 * (np.mean(e_l * dlnpsi) - np.mean(e_l) * np.mean(dlnpsi))
        exact = n * dim * (0.5 - 1 / (8 * alpha ** 2))
        value = attempt("p1.d", expected, "energy_gradient", lambda: float(energy_gradient(e_l.copy(), dlnpsi.copy())))
        obtained.append(f"{value:.4g} at α = {alpha} (closed form {exact:.4g})")
        if np.isclose(value, right, rtol=1e-6):
            continue
        if np.isclose(value, right / 2, rtol=1e-6):
            cause = "half the gradient: dE/dα = 2(⟨E_L ∂lnψ⟩ − ⟨E_L⟩⟨∂lnψ⟩), with the factor 2"
        elif np.isclose(value, -right, rtol=1e-6) or np.isclose(value, -right / 2, rtol=1e-6):
            cause = "the sign is reversed: a descent step α ← α − η dE/dα would climb"
        elif np.isclose(value, 2 * np.mean(e_l * dlnpsi), rtol=1e-6) or np.isclose(value, np.mean(e_l * dlnpsi),
                                                                                       rtol=1e-6):
            cause = ("you forgot to subtract ⟨E_L⟩⟨∂lnψ⟩: the normalisation of ψ_T changes with α too, and "
                     "⟨E_L ∂lnψ⟩ alone is dominated by ⟨E_L⟩ times a large ⟨∂lnψ⟩")
        else:
            cause = f"the gradient should be {right:.4g} on these samples (the closed form is {exact:.4g})"
        break
    return Feedback("p1.d", not cause, expected, "; ".join(obtained), cause)


@task("p1.f")
def merge_parallel_runs(merge) -> Feedback:
    """Task f: the student's ``merge(means, errors, counts) -> (mean, error)`` that combines independent runs (one per
    process or worker) of ``counts`` samples each: the mean weighted by the counts, Σ n_k m_k / Σ n_k, and the error
    √(Σ n_k² σ_k²) / Σ n_k."""
    means, errors, counts = np.array([3.10, 3.04, 3.07]), np.array([0.02, 0.01, 0.03]), np.array([4000, 16000, 2000])
    mean = float(np.dot(counts, means) / counts.sum())
    error = float(np.sqrt(np.sum((counts * errors) ** 2)) / counts.sum())
    expected = (f"mean {mean:.5f} (weighted by the samples) and error {error:.5f} (in quadrature) for runs of "
                f"{', '.join(map(str, counts))} samples with means {means} and errors {errors}")
    got_mean, got_error = attempt("p1.f", expected, "merge",
                                  lambda: [float(x) for x in merge(means.copy(), errors.copy(), counts.copy())])
    obtained = f"mean {got_mean:.5f}, error {got_error:.5f}"
    causes = []
    if not np.isclose(got_mean, mean, rtol=1e-9):
        causes.append("the mean of the runs' means treats a short run like a long one: weight each by its samples"
                      if np.isclose(got_mean, means.mean(), rtol=1e-9) else
                      f"the merged mean is Σ n_k m_k / Σ n_k = {mean:.5f}")
    if not np.isclose(got_error, error, rtol=1e-6):
        if np.isclose(got_error, errors.mean(), rtol=1e-6) or np.isclose(got_error, np.average(errors, weights=counts),
                                                                           rtol=1e-6):
            causes.append("the error of the merged mean is smaller than each run's: independent errors add in "
                          "quadrature, √(Σ n_k² σ_k²) / Σ n_k, not as an average")
        elif np.isclose(got_error, np.sqrt(np.sum(errors ** 2)), rtol=1e-6) or np.isclose(
                got_error, errors.sum(), rtol=1e-6):
            causes.append("that is the error of a sum of the means, not of their weighted mean: divide by Σ n_k "
                          "with the weights n_k")
        else:
            causes.append(f"the merged error is √(Σ n_k² σ_k²) / Σ n_k = {error:.5f}")
    return Feedback("p1.f", not causes, expected, obtained, "; ".join(causes))


def _interacting_configurations(n: int, beta: float, a: float, count: int, seed: int) -> np.ndarray:
    """``count`` configurations (count, n, 3) of n bosons spread like the trap's ground state, no pair closer than 2a."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        R = rng.normal(size=(n, 3)) * np.array([1.0, 1.0, 1.0 / np.sqrt(beta)]) / np.sqrt(2.0)
        d = np.sqrt(np.sum((R[:, None] - R[None]) ** 2, axis=-1))
        if np.all(d[np.triu_indices(n, 1)] > 2 * a):
            out.append(R)
    return np.array(out)


@task("p1.g")
def interacting_trap(log_psi, potential, n: int = 10, alpha: float = 0.5, beta: float = 2.82843,
                     a: float = 0.0043) -> Feedback:
    """Task g: the student's ``log_psi(R, p)`` and ``potential(R, p)`` of the interacting elliptic trap, p = [α, β, a]:
    ψ_T = Π_i exp(−α(x_i² + y_i² + β z_i²)) Π_{i<j} (1 − a/r_ij) and V = ½ Σ (x² + y² + β² z²) (+∞ when r_ij ≤ a),
    against qmckit's trapped-boson system at many configurations: ln ψ_T up to a constant, V exactly."""
    from ..systems import bec

    p = np.array([alpha, beta, a])
    configs = _interacting_configurations(n, beta, a, 40, seed=3)
    expected = ("ln ψ_T = −α Σ (x² + y² + β z²) + Σ_{i<j} ln(1 − a/r_ij) (up to a constant) and "
                "V = ½ Σ (x² + y² + β² z²), as qmckit's trapped-boson system has them")
    mine_psi = attempt("p1.g", expected, "log_psi", lambda: np.array([float(log_psi(R.copy(), p.copy()))
                                                                      for R in configs]))
    mine_v = attempt("p1.g", expected, "potential", lambda: np.array([float(potential(R.copy(), p.copy()))
                                                                      for R in configs]))
    ref_psi = np.array([bec.log_psi(R, p) for R in configs])
    ref_v = np.array([bec.potential(R, p) for R in configs])
    # the terms a slip adds or drops, at each configuration
    iu = np.triu_indices(n, 1)
    r = np.array([np.sqrt(np.sum((R[:, None] - R[None]) ** 2, axis=-1))[iu] for R in configs])
    z2, xy2 = np.sum(configs[:, :, 2] ** 2, axis=1), np.sum(configs[:, :, :2] ** 2, axis=(1, 2))
    # (term, its multiple in the residual, what the slip is)
    psi_terms = [(np.sum(np.log(1 - a / r), axis=1), -1,
                  "your ln ψ_T misses the Jastrow factor Σ_{i<j} ln(1 − a/r_ij)"),
                 (-alpha * (beta - 1) * z2, -1, "your Gaussian lacks β on z²: exp(−α(x² + y² + β z²))"),
                 (ref_psi, 1, "your ln ψ_T is twice the right one: that is ln |ψ_T|²")]
    v_terms = [(0.5 * (beta ** 2 - beta) * z2, -1, "your trap has β on z² where it has β² (ω_z² = β² ω_⊥²)"),
               (0.5 * (beta ** 2 - 1) * z2, -1, "your trap is spherical: V = ½ Σ (x² + y² + β² z²)"),
               (ref_v, 1, "your V lacks the ½ of the trap: V = ½ Σ (x² + y² + β² z²)")]
    causes, obtained = [], []
    residual = (mine_psi - ref_psi) - np.mean(mine_psi - ref_psi)
    scale = np.abs(ref_psi).max()
    if not np.all(np.isfinite(mine_psi)) or np.abs(residual).max() > 1e-9 * scale:
        obtained.append(f"ln ψ_T off by up to {np.abs(residual).max():.3g} (beyond a constant)")
        causes.append(_named_slip(residual, psi_terms, "ln ψ_T"))
    else:
        obtained.append("ln ψ_T agrees up to a constant")
    if not np.allclose(mine_v, ref_v, rtol=1e-10, atol=1e-12):
        obtained.append(f"V off by up to {np.abs(mine_v - ref_v).max():.3g}")
        causes.append(_named_slip(mine_v - ref_v, v_terms, "V"))
    else:
        obtained.append("V agrees")
    return Feedback("p1.g", not causes, expected, "; ".join(obtained), "; ".join(causes))


def _named_slip(residual, terms: list, what: str) -> str:
    """The slip whose term, times its multiple, is the residual (student − reference; for ln ψ_T up to a constant)."""
    for term, multiple, slip in terms:
        t = term - np.mean(term) if what == "ln ψ_T" else term
        if np.abs(residual - multiple * t).max() <= 1e-6 * np.abs(residual).max() + 1e-12:
            return slip
    return f"your {what} differs from the reference by more than a known term: compare it term by term"


@task("p1.g.run")
def interacting_trap_run(yours, built_in, n: int = 10) -> Feedback:
    """After task g: the VMC energy of the student's system (``yours``: a run's ``estimates["energy"]``, of all ``n``
    bosons) against qmckit's trapped-boson system at the same parameters (``built_in``: its
    ``estimates["energy_per_particle"]``), per particle, within 4σ of their combined error (ħω)."""
    mine = (float(yours["mean"]) / n, float(yours["error"]) / n)
    ref = (float(built_in["mean"]), float(built_in["error"]))
    expected = f"your E/N equal to the built-in {ref[0]:.4f} ± {ref[1]:.4f} ħω within 4σ"
    obtained = f"E/N = {mine[0]:.4f} ± {mine[1]:.4f} ħω"
    sigma = math.hypot(mine[1], ref[1])
    if not (mine[1] > 0 and ref[1] > 0):
        return Feedback("p1.g.run", False, expected, obtained, "an error bar of zero: run more steps")
    if abs(mine[0] - ref[0]) <= 4 * sigma:
        return Feedback("p1.g.run", True, expected, obtained + f" ({(mine[0] - ref[0]) / sigma:+.1f}σ)")
    if abs(float(yours["mean"]) - ref[0]) <= 4 * sigma * n:
        cause = (f"your energy is per particle already: pass estimates['energy'] of all {n} bosons (the check "
                 "divides by N)")
    else:
        cause = (f"{abs(mine[0] - ref[0]) / sigma:.1f}σ apart although ln ψ_T and V agree: run both with the same α, "
                 "β, a and N (and the same trap: lam is β)")
    return Feedback("p1.g.run", False, expected, obtained, cause)


@task("p1.h")
def one_body_density(radial_density, n: int = 10, samples: int = 20000, bins: int = 30, r_max: float = 3.0,
                     seed: int = 1) -> Feedback:
    """Task h: the student's ``radial_density(positions, bins, r_max) -> (r, rho)`` from configurations ``positions``
    (M, N, 3): ρ(r) at the bin centres r, the mean number of particles per unit volume at distance r from the trap's
    centre, so that Σ ρ 4πr² Δr = N. Checked on exact samples of the non-interacting ground state (α = ½, spherical),
    ρ(r) = N π^(−3/2) exp(−r²)."""
    rng = np.random.default_rng(seed)
    positions = rng.normal(scale=np.sqrt(0.5), size=(samples, n, 3))
    expected = f"ρ(r) = N π^(−3/2) exp(−r²) at the bin centres (N = {n}), Σ ρ 4πr² Δr = N"
    r, rho = attempt("p1.h", expected, "radial_density",
                     lambda: [np.asarray(x, dtype=float) for x in radial_density(positions.copy(), bins, r_max)])
    edges = np.linspace(0.0, r_max, bins + 1)
    centres, width = 0.5 * (edges[1:] + edges[:-1]), r_max / bins
    if r.shape != (bins,) or rho.shape != (bins,):
        return Feedback("p1.h", False, expected, f"r of shape {r.shape} and ρ of shape {rho.shape}",
                        f"return the {bins} bin centres and ρ at each")
    exact = n * np.pi ** -1.5 * np.exp(-centres ** 2)
    # the statistical error of each bin: Poisson counts of the shell, per configuration and volume
    shell = 4 * np.pi / 3 * (edges[1:] ** 3 - edges[:-1] ** 3)
    counts = np.maximum(exact * shell * samples, 1.0)
    sigma = np.sqrt(counts) / (samples * shell)
    good = counts > 100  # bins with enough particles to judge
    obtained = f"ρ(0.05) = {rho[0]:.4g}, ρ(1.05) = {rho[np.argmin(abs(centres - 1.05))]:.4g} (exact " \
               f"{exact[0]:.4g}, {exact[np.argmin(abs(centres - 1.05))]:.4g})"
    if not np.allclose(r, centres, rtol=1e-9):
        cause = ("the r of a bin is its centre, not its left edge" if np.allclose(r, edges[:-1], rtol=1e-9)
                 else f"r should be the {bins} bin centres from {centres[0]:g} to {centres[-1]:g}")
        return Feedback("p1.h", False, expected, obtained, cause)
    pull = np.abs(rho - exact)[good] / sigma[good]
    if np.all(pull < 5):
        return Feedback("p1.h", True, expected, obtained + f"; every bin within {pull.max():.1f}σ")
    ratio = np.median(rho[good] / exact[good])
    if np.allclose(rho[good] / (exact[good] * shell[good] / width), 1.0, rtol=0.15):  # counts / (M Δr)
        cause = ("a histogram of r counts shells: divide each bin by its volume 4πr²Δr to get a density per unit "
                 "volume")
    elif abs(ratio * n - 1) < 0.05:
        cause = "normalised to one particle: ρ counts all N particles, Σ ρ 4πr² Δr = N (divide by the configurations)"
    elif abs(ratio / samples - 1) < 0.05:
        cause = "divide the counts by the number of configurations M (and by the shell volumes)"
    else:
        cause = f"ρ is {ratio:.3g} × the exact density in the middle bins: check the normalisation"
    return Feedback("p1.h", False, expected, obtained, cause)
