"""Bring your own ψ: a continuum system from plain Python functions of one configuration.

    >>> import numpy as np, qmckit
    >>> def log_psi(R, p):                      # R: (N, d) positions, p: the parameters in the order given
    ...     return -p[0] * np.sum(R * R)
    >>> def potential(R, p):
    ...     return 0.5 * np.sum(R * R)
    >>> oscillator = qmckit.UserSystem(n=2, dim=3, params={"alpha": 0.4}, log_psi=log_psi, potential=potential)
    >>> qmckit.run(oscillator, walkers=200, steps=2000)          # or RunConfig(system=oscillator, ...)

:func:`UserSystem` compiles the functions with numba (``nb.njit``: write them with NumPy on arrays, as above)
and builds the kernels of the System protocol (:mod:`qmckit.systems.protocol`) around them, recomputing ln ψ
of the whole configuration at every move (O(cost of log_psi) per move; a hand-written system updates
incrementally). Required: ``log_psi(R, p)`` (ln|ψ_T|) and ``potential(R, p)`` (V, or a dict of named terms whose
sum is V, so that :func:`qmckit.check` can name a term the local energy misses). Optional:

* ``drift(R, p)``: ∇ ln ψ_T of every particle, (N, d). Note: qmckit's drift is ∇ ln ψ, half of the quantum force
  F = 2∇ψ/ψ of many course notes;
* ``local_energy(R, p)``: E_L = −(ħ²/2m) ∇²ψ/ψ + V;
* ``observables={name: f(R, p)}``: further estimators of one configuration (⟨r₁₂⟩, …), averaged in VMC;
* ``energy_terms=True``: VMC also reports the kinetic energy ``kinetic_energy`` = E_L − V and every potential term,
  ``potential_energy`` for one function or ``potential_<name>`` for each named one (the virial theorem's terms).

What is not given is derived by central finite differences of ln ψ with step :data:`FD_STEP` (the gradient with
2d evaluations of ln ψ per particle, the local energy with 2Nd + 1): correct to about 1e-8 relative, and slower,
which :meth:`UserSystemBase.derived` says. :func:`qmckit.check` compares a given drift and local energy with those
finite differences and explains what differs.

Every driver takes the result like a registered system: ``RunConfig(system=<the instance>, ...)`` registers its
class under its ``name`` in this process. Energies are reported as ``energy`` (of the whole configuration).
"""
from __future__ import annotations

import dataclasses

import numba as nb
import numpy as np

from .protocol import Capabilities, Kernels, System, no_other_drift_change, parameter, validate

FD_STEP = 1e-4  # length units: near ε^(1/4), the step that balances truncation and round-off in a second difference


ENERGY_KEYS = ("energy", "energy_variance")  # what a run reports anyway: not names of observables


class UserSystemBase(System):
    """The base of the classes :func:`UserSystem` makes (one per call: its kernels are class attributes)."""

    kind = "continuum"
    energy_key = "energy"
    user_defined = True  # compiled in memory (qmckit.backends.specialise), not from a module on disk
    n: int = 1
    width: float = 1.0
    given: tuple[str, ...] = ()          # which of "drift", "local_energy" the user gave
    potential_terms: tuple[str, ...] = ()
    user_functions: dict = {}            # the compiled user functions (log_psi, drift, local_energy, terms)
    recipe: dict = {}                    # the arguments of UserSystem that made it (to make it again elsewhere)
    fd_functions: dict = {}              # gradient and local energy by finite differences (for qmckit.check)
    columns: tuple = ()                  # compiled column(positions, p, out, k) of every measured function
    energy_terms: bool = False           # whether columns 1, 2, … are V (made T by measure) and the potential terms

    @property
    def n_particles(self) -> int:
        return self.n

    @property
    def kernel_params(self) -> np.ndarray:
        return np.array([float(v) for v in self.params.as_dict().values()], dtype=np.float64)

    def cache_size(self) -> int:
        return 2  # [ln ψ(R), ln ψ of the configuration tested last]

    def density_range(self) -> float:
        return 5.0 * self.width

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(scale=self.width, size=(n_walkers, self.n, self.dim))

    def measure(self, positions: np.ndarray) -> np.ndarray:
        """(W, 1 + K) whole-walker E_L and the K ``capabilities.observables`` of positions (W, N, d): the kinetic
        energy and potential terms first when ``energy_terms`` was asked for, then the user's observables."""
        positions = np.ascontiguousarray(positions, dtype=np.float64)
        p = self.kernel_params
        out = np.empty((positions.shape[0], len(self.columns)))
        for k, column in enumerate(self.columns):
            column(positions, p, out, k)
        if self.energy_terms:  # column 1 holds V: T = E_L − V
            out[:, 1] = out[:, 0] - out[:, 1]
        return out

    @classmethod
    def derived(cls) -> list[str]:
        """What qmckit derives by finite differences (slower than an analytic version, and said so)."""
        return [name for name in ("drift", "local_energy") if name not in cls.given]


def UserSystem(n: int, dim: int, params: dict, log_psi, potential, local_energy=None, drift=None, bounds=None,
               name: str = "user", title: str = "", energy_unit: str = "", length_unit: str = "",
               width: float = 1.0, hbar2_over_m: float = 1.0, exact_cases=(), examples=({},), observables=None,
               energy_terms: bool = False) -> UserSystemBase:
    """A system of ``n`` particles in ``dim`` dimensions from plain Python functions (see the module docstring).

    params      {name: default} of the parameters, in the order the functions read them from ``p``
    bounds      {name: (low, high)} (either may be None): values outside are refused in one line
    name        the registry name (``RunConfig(system=...)`` registers it; a built-in name is refused)
    width       the spread of the starting positions (normal, in length units)
    hbar2_over_m  ħ²/m in the system's units (1: E_L = −½∇²ψ/ψ + V)
    exact_cases, examples  as a System declares them (``((params, exact energy), …)``, ``(params, …)``): the
                  conformance suite (tests/test_conformance.py) runs a registered system's
    observables   {name: f(R, p)} of further estimators (numbers, in their own units), averaged by VMC
    energy_terms  VMC also reports ``kinetic_energy`` and every potential term (see the module docstring)
    """
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if dim not in (1, 2, 3):
        raise ValueError(f"dim must be 1, 2 or 3, got {dim!r}")
    if not name.isidentifier():
        raise ValueError(f"name must be a short identifier, got {name!r}")
    for label, f in (("log_psi", log_psi), ("local_energy", local_energy), ("drift", drift)):
        if f is not None and not callable(f):
            raise ValueError(f"{label} must be a function of (R, p), got {f!r}")
    terms = dict(potential) if isinstance(potential, dict) else {"potential": potential}
    if not terms or not all(callable(f) for f in terms.values()):
        raise ValueError("potential must be a function of (R, p) or a dict of named functions")
    observables = dict(observables or {})
    for key, f in observables.items():
        if not (isinstance(key, str) and key.isidentifier()) or key in ENERGY_KEYS or not callable(f):
            raise ValueError(f"observables must map short identifiers other than {' and '.join(ENERGY_KEYS)} to "
                             f"functions of (R, p), got {key!r}: {f!r}")
    if not isinstance(energy_terms, (bool, np.bool_)):
        raise ValueError(f"energy_terms must be True or False, got {energy_terms!r}")
    term_keys = (("potential_energy",) if not isinstance(potential, dict) else
                 tuple(f"potential_{key}" for key in terms))
    names = (("kinetic_energy",) + term_keys if energy_terms else ()) + tuple(observables)
    if len(set(names)) < len(names) or set(observables) & {"kinetic_energy", "potential_energy"} or any(
            key.startswith("potential_") for key in observables):
        raise ValueError(f"observables: {', '.join(sorted(observables))} use a name kept for the energy terms "
                         "(kinetic_energy, potential_energy, potential_<term>)")
    bounds = dict(bounds or {})
    unknown = set(bounds) - set(params)
    if unknown:
        raise ValueError(f"bounds: {', '.join(sorted(unknown))} not among the params ({', '.join(params)})")
    fields = []
    for key, default in params.items():
        low, high = bounds.get(key, (None, None))
        fields.append((key, float, parameter(float(default), help=f"parameter {key} of {name}", low=low, high=high,
                                             variational=True)))
    Params = dataclasses.make_dataclass(f"{name}_params", fields, frozen=True, namespace={
        "__post_init__": lambda self: validate(self), "as_dict": lambda self: dataclasses.asdict(self)})

    # what rebuilds this system in another process (a Dask worker: qmckit.scans.share)
    recipe = dict(n=int(n), dim=dim, params=dict(params), log_psi=log_psi, potential=potential,
                  local_energy=local_energy, drift=drift, bounds=bounds or None, name=name, title=title,
                  energy_unit=energy_unit, length_unit=length_unit, width=width, hbar2_over_m=hbar2_over_m,
                  exact_cases=exact_cases, examples=examples, observables=observables or None,
                  energy_terms=bool(energy_terms))
    compiled = _compile(log_psi, terms, drift, local_energy, n, dim, float(hbar2_over_m))
    measured = ([compiled["local_energy"]] + ([compiled["user"]["potential"]] if energy_terms else [])
                + (list(compiled["user"]["terms"].values()) if energy_terms else [])
                + [_jit(f) for f in observables.values()])
    compiled["user"]["observables"] = dict(zip(observables, measured[len(measured) - len(observables):]))
    cls = type(f"UserSystem_{name}", (UserSystemBase,), {
        "name": name, "title": title or f"a user-defined system of {n} particles in {dim} D",
        "description": "defined in Python with qmckit.UserSystem", "Params": Params, "dim": dim, "n": int(n),
        "width": float(width), "energy_unit": energy_unit, "length_unit": length_unit,
        "capabilities": Capabilities(observables=names), "kernels": compiled["kernels"],
        "columns": tuple(_column(f) for f in measured), "energy_terms": bool(energy_terms),
        "given": tuple(k for k, f in (("drift", drift), ("local_energy", local_energy)) if f is not None),
        "potential_terms": tuple(terms), "user_functions": compiled["user"], "fd_functions": compiled["fd"],
        "hbar2_over_m": property(lambda self, value=float(hbar2_over_m): value), "recipe": recipe,
        "exact_cases": tuple(exact_cases), "examples": tuple(examples),
        "__module__": __name__})
    system = cls()
    _try_once(system)
    return system


def _try_once(system) -> None:
    """Call every user function once at a starting configuration: numba compiles it now, and a function numba cannot
    compile, or one that returns the wrong shape, is refused here in one line rather than inside a sweep."""
    from numba.core.errors import NumbaError

    R = system.initial_positions(1, np.random.default_rng(0))[0]
    p = system.kernel_params
    user = system.user_functions
    calls = [("log_psi", user["log_psi"], ())] + [(f"potential {key!r}" if len(user["terms"]) > 1 else "potential",
                                                  f, ()) for key, f in user["terms"].items()]
    calls += [(name, user[name], (system.n, system.dim) if name == "drift" else ())
              for name in ("drift", "local_energy") if name in user]
    calls += [(f"observable {key!r}", f, ()) for key, f in user["observables"].items()]
    for label, f, shape in calls:
        try:
            value = np.asarray(f(R, p))
        except NumbaError as err:
            reason = next((line.strip() for line in str(err).splitlines() if "Untyped global name" in line
                           or "Unknown attribute" in line or "No implementation" in line), str(err).splitlines()[0])
            reason = reason.replace("\x1b[1m", "").replace("\x1b[0m", "")
            raise ValueError(f"{label}: numba cannot compile it ({reason}); a helper it calls must be decorated "
                             "with @numba.njit, and it may use NumPy on arrays but no Python objects") from None
        if value.shape != shape:
            want = "a number" if not shape else f"an array of shape (N, d) = {shape}"
            raise ValueError(f"{label}: must return {want}, got shape {value.shape}")


def _jit(f):
    """``f`` compiled with numba (a function the user already decorated is taken as it is)."""
    from numba.core.dispatcher import Dispatcher

    return f if isinstance(f, Dispatcher) else nb.njit(f)


def _sum_of(functions):
    """One compiled function of (R, p) returning the sum of ``functions`` (each compiled)."""
    total = functions[0]
    for f in functions[1:]:
        total = _added(total, f)
    return total


def _added(a, b):
    @nb.njit
    def added(R, p):
        return a(R, p) + b(R, p)
    return added


def _compile(log_psi, terms: dict, drift, local_energy, n: int, dim: int, hbar2_over_m: float) -> dict:
    """The user's functions compiled, their finite-difference stand-ins, and the protocol's kernels."""
    lp = _jit(log_psi)
    term_functions = {key: _jit(f) for key, f in terms.items()}
    potential = _sum_of(list(term_functions.values()))
    h = FD_STEP

    # the two loops below shift one coordinate by ±h in place; written out in each (not a shared helper) because
    # the shared version was slower in benchmarks/user_system_speed.py
    @nb.njit
    def fd_gradient(R, p, i, out):
        X = R.copy()
        for k in range(R.shape[1]):
            x = R[i, k]
            X[i, k] = x + h
            up = lp(X, p)
            X[i, k] = x - h
            down = lp(X, p)
            X[i, k] = x
            out[k] = (up - down) / (2.0 * h)

    @nb.njit
    def fd_local_energy(R, p):
        X = R.copy()
        centre = lp(X, p)
        kinetic = 0.0
        for i in range(R.shape[0]):
            for k in range(R.shape[1]):
                x = R[i, k]
                X[i, k] = x + h
                up = lp(X, p)
                X[i, k] = x - h
                down = lp(X, p)
                X[i, k] = x
                g = (up - down) / (2.0 * h)
                kinetic += (up - 2.0 * centre + down) / (h * h) + g * g
        return -0.5 * hbar2_over_m * kinetic + potential(R, p)

    user = {"log_psi": lp, "potential": potential, "terms": term_functions}
    if drift is not None:
        user_drift = _jit(drift)
        user["drift"] = user_drift

        @nb.njit
        def grad(R, p, i, out):
            out[:] = user_drift(R, p)[i]
    else:
        grad = fd_gradient
    if local_energy is not None:
        user_local_energy = _jit(local_energy)
        user["local_energy"] = user_local_energy

        @nb.njit
        def energy(R, p):
            return user_local_energy(R, p)
    else:
        energy = fd_local_energy

    @nb.njit
    def recompute(R, p, cache):
        cache[0] = lp(R, p)

    @nb.njit
    def gradient(R, p, cache, i, out):
        grad(R, p, i, out)

    @nb.njit
    def test_move(R, p, cache, i, r_new, grad_new):
        X = R.copy()
        X[i] = r_new
        new = lp(X, p)
        cache[1] = new
        grad(X, p, i, grad_new)
        return new - cache[0]

    @nb.njit
    def accept_move(R, p, cache, i, r_new, grad_new):
        R[i] = r_new
        cache[0] = cache[1]

    @nb.njit
    def kernel_local_energy(R, p, cache):
        return energy(R, p)

    kernels = Kernels(recompute, gradient, test_move, accept_move, kernel_local_energy, lp, no_other_drift_change,
                      potential)
    return {"kernels": kernels, "user": user, "fd": {"gradient": fd_gradient, "local_energy": fd_local_energy},
            "local_energy": energy}


def _column(f):
    """A compiled loop that writes f(R, p) of every walker of positions (W, N, d) into column k of out (W, K)."""
    @nb.njit
    def column(positions, p, out, k):
        for w in range(positions.shape[0]):
            out[w, k] = f(positions[w], p)
    return column


def is_user_system(cls) -> bool:
    return isinstance(cls, type) and issubclass(cls, UserSystemBase)


__all__ = ["UserSystem", "UserSystemBase", "FD_STEP", "is_user_system"]
