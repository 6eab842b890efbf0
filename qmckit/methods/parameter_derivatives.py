"""∂ ln|ψ_T|/∂p and ∂E_L/∂p of a system's variational parameters at stored configurations, for any continuum system.

These are what the optimisers (:mod:`qmckit.methods.optimizers`) read. A system lists in
``capabilities.parameter_derivatives`` the parameters whose ∂ ln ψ/∂p it computes itself
(:meth:`~qmckit.systems.protocol.System.log_psi_parameter_derivatives`, exact); every other parameter, and ∂E_L/∂p
always, comes from central finite differences of :func:`~qmckit.methods.optimize.evaluate` at p ± h with
h = :data:`FD_RELATIVE` · max(|p|, 1) (relative error about 1e-9; where p − h or p + h is outside the parameter's
bounds, the one-sided second-order difference from p, p ± h, p ± 2h). :attr:`Derivatives.analytic` says which
parameters were exact.

    >>> d = parameter_derivatives(system, configs, ("alpha", "beta"))   # configs (M, N, d)
    >>> d.d_log_psi.shape, d.d_local_energy.shape                        # (M, 2), (M, 2)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .optimize import evaluate, with_parameter

FD_RELATIVE = 1e-5  # the step h relative to max(|p|, 1): truncation h² and round-off ε/h of E_L balance near 1e-5


@dataclass
class Derivatives:
    """At M configurations: ``log_psi``, ``local_energy`` (M,) (E_L of the whole configuration), ``d_log_psi`` and
    ``d_local_energy`` (M, P) with respect to ``names`` (None when not asked for); ``analytic``: the names whose
    ∂ ln ψ/∂p the system computed exactly."""

    names: tuple
    log_psi: np.ndarray
    local_energy: np.ndarray
    d_log_psi: np.ndarray
    d_local_energy: np.ndarray | None
    analytic: tuple


def variational_names(system) -> tuple:
    """The system's variational parameters, in declaration order."""
    return tuple(info.name for info in system.parameters() if info.spec.variational)


def resolve_names(system, names=None) -> tuple:
    """``names`` (a sequence, or "alpha,beta") checked against the system's variational parameters; None: all of
    them. One ValueError naming what is allowed otherwise."""
    allowed = variational_names(system)
    if names is None:
        names = allowed
    elif isinstance(names, str):
        names = tuple(n.strip() for n in names.split(",") if n.strip())
    names = tuple(names)
    bad = [n for n in names if n not in allowed]
    if bad or not names or len(set(names)) < len(names):
        raise ValueError(f"params must be distinct variational parameters of {system.name!r} "
                         f"({', '.join(allowed) or 'none'}), got {', '.join(map(repr, names)) or 'none'}")
    return names


def _shifted(system, name: str, value: float):
    """The system at ``name = value``, or None where the value is not allowed."""
    try:
        return with_parameter(system, name, value)
    except ValueError:
        return None


def _difference(system, configs, name: str, value: float, log_psi0, energy0, need_energy: bool):
    """(∂ ln ψ/∂p, ∂E_L/∂p or None) of every configuration for one parameter by finite differences."""
    h = FD_RELATIVE * max(abs(value), 1.0)
    up, down = _shifted(system, name, value + h), _shifted(system, name, value - h)
    if up is not None and down is not None:  # central
        (lp, ep), (lm, em) = evaluate(up, configs), evaluate(down, configs)
        return (lp - lm) / (2 * h), ((ep - em) / (2 * h) if need_energy else None)
    sign = 1.0 if up is not None else -1.0  # one-sided, second order: (−3 f(p) + 4 f(p ± h) − f(p ± 2h))/(±2h)
    one, two = _shifted(system, name, value + sign * h), _shifted(system, name, value + 2 * sign * h)
    if one is None or two is None:
        raise ValueError(f"{name} = {value:g}: no room within its bounds for a finite difference of step {h:g}")
    (l1, e1), (l2, e2) = evaluate(one, configs), evaluate(two, configs)
    d_log = (-3 * log_psi0 + 4 * l1 - l2) / (2 * sign * h)
    return d_log, ((-3 * energy0 + 4 * e1 - e2) / (2 * sign * h) if need_energy else None)


def parameter_derivatives(system, configs, names=None, local_energy: bool = True) -> Derivatives:
    """ln ψ, E_L and their derivatives with respect to the variational parameters ``names`` (default all) at
    ``configs`` (M, N, d); ∂E_L/∂p only when ``local_energy``. See the module docstring for how."""
    names = resolve_names(system, names)
    configs = np.ascontiguousarray(np.asarray(configs, dtype=np.float64).reshape((-1,) + np.shape(configs)[-2:]))
    log_psi0, energy0 = evaluate(system, configs)
    values = system.params.as_dict()
    analytic = tuple(n for n in names if n in system.capabilities.parameter_derivatives)
    d_log = np.empty((len(configs), len(names)))
    d_energy = np.empty((len(configs), len(names))) if local_energy else None
    if analytic:
        exact = system.log_psi_parameter_derivatives(configs, analytic)
        for k, name in enumerate(analytic):
            d_log[:, names.index(name)] = exact[:, k]
    for k, name in enumerate(names):
        if name in analytic and not local_energy:
            continue
        fd_log, fd_energy = _difference(system, configs, name, float(values[name]), log_psi0, energy0, local_energy)
        if name not in analytic:
            d_log[:, k] = fd_log
        if local_energy:
            d_energy[:, k] = fd_energy
    return Derivatives(names, log_psi0, energy0, d_log, d_energy, analytic)


__all__ = ["Derivatives", "FD_RELATIVE", "parameter_derivatives", "resolve_names", "variational_names"]
