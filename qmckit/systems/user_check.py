"""``qmckit.check(system)``: a user's analytic drift and local energy against finite differences of their ln ψ.

The configurations are drawn from |ψ_T|² by a short Metropolis walk on the user's own ln ψ. At each, the drift
∇ ln ψ (N, d) and the local energy are compared with central differences of ln ψ (:data:`~qmckit.systems.user.FD_STEP`,
accurate to about 1e-8 relative). When they differ, the report names the worst configuration, particle and
coordinate and tries the mistakes students make, each a multiple c of a known term fitted to the difference D:

* the drift: c ≈ 2 is the quantum force F = 2∇ψ/ψ given for ∇ ln ψ; c ≈ −1 a sign;
* the local energy: a constant (the kinetic term's N·d·α, say), a potential term missing, doubled or of the wrong
  sign (the terms of a ``potential`` dict are named), the kinetic energy missing or of the wrong sign, and each of
  its two parts, −(ħ²/2m) Σ ∇² ln ψ and −(ħ²/2m) Σ |∇ ln ψ|², missing or of the wrong sign.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .user import UserSystemBase

DRIFT_TOLERANCE = 1e-5   # relative to the rms of the drift over the configurations
ENERGY_TOLERANCE = 1e-5  # relative to 1 + the rms of the local energy
NICE = (-2.0, -1.0, -0.5, 0.5, 1.0, 2.0)  # the multiples a typical slip produces


@dataclass
class CheckReport:
    """What :func:`check` found: ``ok``, one line per finding (``lines``) and the worst points (``worst``)."""

    ok: bool
    lines: list = field(default_factory=list)
    worst: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def check(system: UserSystemBase, configurations: int = 40, seed: int = 0) -> CheckReport:
    """Compare ``system``'s given drift and local energy (a :func:`qmckit.UserSystem`) with finite differences of its
    ln ψ at ``configurations`` configurations drawn from |ψ|²; returns a :class:`CheckReport`."""
    if not isinstance(system, UserSystemBase):
        raise ValueError(f"system: check reads the Python functions of a qmckit.UserSystem, got {system!r}")
    p = system.kernel_params
    configs = _sample(system, p, configurations, np.random.default_rng(seed))
    lines, worst, ok = [], {}, True
    derived = system.derived()
    if derived:
        lines.append(f"derived by finite differences of ln ψ (correct, slower): {', '.join(derived)}")
    if "drift" in system.given:
        good, found, where = _check_drift(system, p, configs)
        ok &= good
        lines += found
        worst["drift"] = where
    if "local_energy" in system.given:
        good, found, where = _check_energy(system, p, configs)
        ok &= good
        lines += found
        worst["local_energy"] = where
    if not system.given:
        lines.append("nothing to compare: give drift= or local_energy= to have them checked")
    return CheckReport(ok, lines, worst)


def _sample(system, p, count: int, rng) -> np.ndarray:
    """``count`` configurations (count, N, d) from |ψ|²: Metropolis with uniform moves, 30 sweeps from the start."""
    lp = system.user_functions["log_psi"]
    configs = system.initial_positions(count, rng)
    step = system.width
    for c in range(count):
        R = configs[c]
        current = lp(R, p)
        for _ in range(30):
            for i in range(system.n):
                old = R[i].copy()
                R[i] = old + step * (rng.random(system.dim) - 0.5)
                new = lp(R, p)
                if np.isfinite(new) and np.log(rng.random()) < 2.0 * (new - current):
                    current = new
                else:
                    R[i] = old
    return configs


def _fd_gradients(system, p, configs) -> np.ndarray:
    grad = system.fd_functions["gradient"]
    out = np.empty(configs.shape)
    for c, R in enumerate(configs):
        for i in range(system.n):
            grad(R, p, i, out[c, i])
    return out


def _check_drift(system, p, configs):
    given = np.array([system.user_functions["drift"](R, p) for R in configs])
    expected = _fd_gradients(system, p, configs)
    if given.shape != expected.shape:
        return False, [f"drift: returns shape {given.shape[1:]}, not (N, d) = {expected.shape[1:]}"], {}
    scale = float(np.sqrt(np.mean(expected ** 2))) or 1.0
    error = np.abs(given - expected) / scale
    c, i, k = np.unravel_index(int(np.argmax(error)), error.shape)
    where = {"configuration": int(c), "particle": int(i), "coordinate": int(k), "relative_error": float(error.max()),
             "given": float(given[c, i, k]), "finite_differences": float(expected[c, i, k])}
    if error.max() <= DRIFT_TOLERANCE:
        return True, [f"drift: agrees with finite differences (worst relative error {error.max():.1e})"], where
    lines = [f"drift: differs from finite differences of ln ψ: worst at configuration {c}, particle {i}, coordinate "
             f"{'xyz'[k]}: {given[c, i, k]:.6g} against {expected[c, i, k]:.6g} (relative error {error.max():.2g})"]
    factor = _multiple(given.ravel(), expected.ravel())
    if factor == 2.0:
        lines.append("  it is twice ∇ ln ψ: you gave the quantum force F = 2∇ψ/ψ; qmckit's drift is ∇ ln ψ = F/2")
    elif factor == -1.0:
        lines.append("  it is −∇ ln ψ: the sign is wrong")
    elif factor is not None:
        lines.append(f"  it is {factor:g} × ∇ ln ψ: check the factor in front")
    else:
        bad = np.nonzero(error.max(axis=(0, 2)) > DRIFT_TOLERANCE)[0]
        lines.append(f"  particles {', '.join(map(str, bad[:8]))}{' …' if bad.size > 8 else ''} are off; "
                     "compare your ∂ ln ψ/∂r_i with the derivative of your log_psi term by term")
    return False, lines, where


def _check_energy(system, p, configs):
    user = system.user_functions
    given = np.array([user["local_energy"](R, p) for R in configs])
    expected = np.array([system.fd_functions["local_energy"](R, p) for R in configs])
    difference = given - expected
    scale = 1.0 + float(np.sqrt(np.mean(expected ** 2)))
    c = int(np.argmax(np.abs(difference)))
    where = {"configuration": c, "given": float(given[c]), "finite_differences": float(expected[c]),
             "relative_error": float(abs(difference[c]) / scale)}
    if np.max(np.abs(difference)) <= ENERGY_TOLERANCE * scale:
        return True, [f"local energy: agrees with finite differences (worst relative error "
                      f"{np.max(np.abs(difference)) / scale:.1e})"], where
    lines = [f"local energy: differs from −(ħ²/2m)∇²ψ/ψ + V by finite differences: worst at configuration {c}: "
             f"{given[c]:.6g} against {expected[c]:.6g}"]
    lines.append("  " + _diagnose_energy(system, p, configs, difference, expected))
    return False, lines, where


def _diagnose_energy(system, p, configs, difference, expected) -> str:
    """The typical slip that explains ``difference`` (given − expected, per configuration), in one line."""
    terms = system.user_functions["terms"]
    candidates = {}
    for key, f in terms.items():
        label = "the potential" if len(terms) == 1 else f"the {key!r} term of the potential"
        candidates[label] = np.array([f(R, p) for R in configs])
    kinetic = expected - sum(candidates.values())
    grads = _fd_gradients(system, p, configs)
    gradient_part = -0.5 * system.hbar2_over_m * np.sum(grads ** 2, axis=(1, 2))
    candidates["the kinetic energy"] = kinetic
    candidates["the ∇² ln ψ part of the kinetic energy, −(ħ²/2m) Σ∇² ln ψ"] = kinetic - gradient_part
    candidates["the |∇ ln ψ|² part of the kinetic energy, −(ħ²/2m) Σ|∇ ln ψ|²"] = gradient_part
    verbs = {-1.0: "misses", -2.0: "has the wrong sign of", 1.0: "counts twice", -0.5: "has half of",
             0.5: "has 1.5 times", 2.0: "counts three times"}
    constant = _constant(system, p, difference)
    for label, values in candidates.items():
        factor = _multiple(difference, values)
        if factor is not None:
            return f"it {verbs[factor]} {label}" + (f" ({constant})" if constant else "")
    if constant:
        return f"it is {constant}: check the constant terms of the kinetic energy"
    return ("no single typical slip explains it: compare your E_L with −(ħ²/2m) Σ (∇² ln ψ + |∇ ln ψ|²) + V term by "
            "term")


def _constant(system, p, difference) -> str:
    """'off by the constant c (= ±k·N·d·name)' when ``difference`` is the same at every configuration, else ''."""
    shift = float(np.mean(difference))
    if float(np.std(difference)) > 1e-6 * (1.0 + abs(shift)):
        return ""
    text = f"off by the constant {shift:+.6g} at every configuration"
    for j, name in enumerate(system.params.as_dict()):
        for k in (0.5, 1.0, 2.0):
            term = k * system.n * system.dim * p[j] * system.hbar2_over_m
            if term and abs(abs(shift) - abs(term)) <= 1e-6 * abs(term):
                return text + f" = {'−' if shift < 0 else '+'}{'' if k == 1.0 else f'{k:g}·'}N·d·{name}"
    return text


def _multiple(values: np.ndarray, basis: np.ndarray):
    """c in :data:`NICE` when ``values`` ≈ c × ``basis`` (to 1e-4 of their size), else None."""
    norm = float(np.dot(basis, basis))
    if norm == 0.0:
        return None
    c = float(np.dot(values, basis) / norm)
    residual = float(np.linalg.norm(values - c * basis))
    if residual > 1e-4 * float(np.linalg.norm(values)):
        return None
    for nice in NICE:
        if abs(c - nice) <= 1e-3:
            return nice
    return None
