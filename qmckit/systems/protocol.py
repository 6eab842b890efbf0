"""The System protocol: what every physical system declares, and what every consumer reads.

A system is one module (see ``docs/architecture.md``, "Adding a system"). It declares

* its **parameters** as a frozen dataclass whose fields are made with :func:`parameter`: unit,
  bounds or choices, a one-line help and the default. :func:`validate` checks an instance against
  that metadata (type, finiteness, bounds, choices), so the CLI (``qmckit run SYSTEM --FLAG``), the
  widgets, scans and optimisers all read one source, and a bad value gives one line naming the
  parameter and what is allowed;
* its **kernels** (:class:`Kernels`, numba functions of one walker, below) for continuum systems;
* its **capabilities** (:class:`Capabilities`): what it offers beyond the kernels. A driver that
  needs one the system lacks calls :func:`require`, which raises :class:`Unsupported` (a
  ``ValueError``) with one line naming both. Nothing probes systems with ``hasattr``.

Kernel protocol of a continuum system (one walker at a time). ``R`` is one walker's positions
``(N, d)``, ``p`` the system's float64 parameter vector (:attr:`System.kernel_params`) and
``cache`` the walker's cache row ``(C,)`` whose layout the system owns:

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
                                            function (capability ``green_all``; a system without it
                                            passes :func:`no_other_drift_change`, never called)
potential(R, p)                             V(R) in the energy unit (conformance tests: E_L − V is
                                            the kinetic energy, checked by finite differences of ln ψ)

Units: lengths, energies and times are the system's own (``length_unit``, ``energy_unit``,
``time_unit``); the drift-diffusion step of Δt has variance (ħ²/m) Δt per component with
ħ²/m = :attr:`System.hbar2_over_m` (1 in the units of every system but helium).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, NamedTuple

import numba as nb
import numpy as np


class Kernels(NamedTuple):
    """The numba kernels of a continuum system (see the module docstring for the signatures)."""

    recompute: Callable
    gradient: Callable
    test_move: Callable
    accept_move: Callable
    local_energy: Callable
    log_psi: Callable
    other_drift_change: Callable
    potential: Callable


SystemKernels = Kernels  # the earlier name


@nb.njit(cache=True)
def no_other_drift_change(R, p, cache, i, r_new, dt):
    """Placeholder kernel of a system without capability ``green_all``; drivers refuse the
    all-particle Green's function for such a system before any sweep, so this is never called."""
    return np.nan


class Unsupported(ValueError):
    """A driver needs a capability (or option) that the system does not declare."""


# --------------------------------------------------------------------------------------------
# parameters with metadata
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParameterSpec:
    """The metadata of one parameter (stored in its dataclass field's ``metadata["qmckit"]``).

    unit       unit of the value ("" for counts, switches and names)
    help       one line: what it is (the CLI's and the widget's text)
    low, high  bounds (None: unbounded); ``low_open``/``high_open`` make them strict
    choices    the allowed values of a string parameter
    flag       the CLI flag (default ``--name`` with ``_`` → ``-``; for a switch, see ``switch``)
    switch     for a bool: the CLI flag that flips the default (default ``--no-name`` when the
               default is True, ``--name`` when it is False)
    aliases    further CLI spellings
    variational  a variational parameter of ψ_T (what optimisers and scans of ψ vary)
    typical    (low, high) a range that covers ordinary use (widget sliders, scan suggestions)
    default_text  how the CLI help describes a default that the system resolves (None → text)
    symbol     a short label for panels ("α", "N", …; default: the name)
    """

    unit: str = ""
    help: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    flag: str | None = None
    switch: str | None = None
    aliases: tuple[str, ...] = ()
    variational: bool = False
    typical: tuple[float, float] | None = None
    default_text: str | None = None
    symbol: str | None = None


def parameter(default, *, unit: str = "", help: str, low=None, high=None, low_open: bool = False,
              high_open: bool = False, choices=None, flag=None, switch=None, aliases=(), variational=False,
              typical=None, default_text=None, symbol=None):
    """A dataclass field for a system parameter, with its metadata (see :class:`ParameterSpec`).

    ``default`` may be None when the system resolves it from other parameters (say it in
    ``default_text``)."""
    spec = ParameterSpec(unit=unit, help=help, low=low, high=high, low_open=low_open, high_open=high_open,
                         choices=tuple(choices) if choices is not None else None, flag=flag, switch=switch,
                         aliases=tuple(aliases), variational=variational, typical=typical,
                         default_text=default_text, symbol=symbol)
    return dataclasses.field(default=default, metadata={"qmckit": spec})


@dataclass(frozen=True)
class ParameterInfo:
    """One parameter as the consumers see it: name, type, default and :class:`ParameterSpec`."""

    name: str
    kind: type           # int, float, bool or str
    default: Any
    spec: ParameterSpec

    @property
    def flag(self) -> str:
        """The CLI flag that sets it (for a switch: the flag that flips the default)."""
        if self.kind is bool:
            return self.spec.switch or (f"--no-{self._dashed}" if self.default else f"--{self._dashed}")
        return self.spec.flag or f"--{self._dashed}"

    @property
    def label(self) -> str:
        """A short label for a control: the symbol, else the name."""
        return self.spec.symbol or self.name

    @property
    def _dashed(self) -> str:
        return self.name.replace("_", "-")

    def allowed(self) -> str:
        """What values are allowed, in words ("a finite number > 0", "one of He, Be, Ne", …)."""
        s = self.spec
        if self.kind is bool:
            return "True or False"
        if s.choices is not None:
            return "one of " + ", ".join(map(str, s.choices))
        if self.kind is str:
            return "a non-empty string"
        noun = "an integer" if self.kind is int else "a finite number"
        parts = []
        if s.low is not None:
            parts.append(f"{'>' if s.low_open else '≥'} {s.low:g}")
        if s.high is not None:
            parts.append(f"{'<' if s.high_open else '≤'} {s.high:g}")
        return noun + (" " + " and ".join(parts) if parts else "")

    def describe(self) -> str:
        """The help line with unit, allowed values and default (CLI help, widget tooltips)."""
        s = self.spec
        unit = f" [{s.unit}]" if s.unit else ""
        if self.default is None:
            default = s.default_text or "resolved by the system"
        elif self.kind is bool:
            default = "on" if self.default else "off"
        else:
            default = f"{self.default:g}" if isinstance(self.default, float) else str(self.default)
        allowed = "" if self.kind is bool else f"; {self.allowed()}"
        return f"{s.help}{unit}{allowed} (default {default})"

    def check(self, value):
        """``value`` coerced to the parameter's type, or ValueError naming the parameter and what is allowed."""
        bad = ValueError(f"{self.name} must be {self.allowed()}, got {value!r}")
        if value is None and self.default is None:
            return None
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise bad
            return bool(value)
        if self.kind is str:
            if not isinstance(value, str) or not value.strip():
                raise bad
            if self.spec.choices is not None and value not in self.spec.choices:
                raise bad
            return value
        if isinstance(value, (bool, np.bool_)):
            raise bad
        if self.kind is int:
            if not isinstance(value, (int, np.integer)):
                raise bad
            value = int(value)
        else:
            if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
                raise bad
            value = float(value)
        s = self.spec
        if s.low is not None and (value <= s.low if s.low_open else value < s.low):
            raise bad
        if s.high is not None and (value >= s.high if s.high_open else value > s.high):
            raise bad
        return value


_KINDS = {"int": int, "float": float, "bool": bool, "str": str}


def _kind_of(field: dataclasses.Field) -> type:
    annotation = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
    first = annotation.replace(" ", "").split("|")[0]
    if first not in _KINDS:
        raise TypeError(f"parameter {field.name}: annotation {field.type!r} is not int, float, bool or str")
    return _KINDS[first]


def parameters(params_class) -> tuple[ParameterInfo, ...]:
    """The declared parameters of a parameter dataclass (class or instance), in field order."""
    out = []
    for f in dataclasses.fields(params_class):
        spec = f.metadata.get("qmckit")
        if spec is None:
            raise TypeError(f"{getattr(params_class, '__name__', params_class)}.{f.name} has no metadata: declare it "
                            "with qmckit.parameter(...)")
        out.append(ParameterInfo(f.name, _kind_of(f), f.default, spec))
    return tuple(out)


def validate(params) -> None:
    """Check and coerce every field of a frozen parameter dataclass against its metadata (call it
    first in ``__post_init__``; cross-field rules follow it there)."""
    for info in parameters(type(params)):
        object.__setattr__(params, info.name, info.check(getattr(params, info.name)))


# --------------------------------------------------------------------------------------------
# capabilities and the System base class
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Capabilities:
    """What a system offers beyond the kernels of the protocol.

    fixed_node     fermions: :meth:`System.for_dmc` gives the system with moves across a node of ψ_T
                   rejected, which fixed-node DMC uses (equilibration too)
    gpu            "module:Class" of the system's CUDA sampler (None: CPU only)
    observables    names of estimators beyond the energy that :meth:`System.measure` returns (VMC)
    observables_gpu  whether the GPU sampler also measures them
    parameter_derivatives  the variational parameters whose ∂ ln ψ/∂p :meth:`System.log_psi_parameter_derivatives`
                   computes exactly (the others: finite differences, :mod:`qmckit.methods.parameter_derivatives`)
    green_all      the kernel ``other_drift_change`` (study 002's all-particle Green's function)
    density        one-body density histograms of the positions make sense (continuum systems)
    gpu_nuclear_moves  the GPU sampler also makes the drift sampler's moves near nuclei (``nuclear_moves``)
    samplers       moves of the system's own beyond the generic ``brute`` and ``drift``: name →
                   "module:Class" of a sampler that takes ``backend`` ("cpu" or "cuda"), e.g. helium's
                   ``gauss`` (study 004's random-atom Gaussian move, twin kernels on CPU and GPU)
    """

    fixed_node: bool = False
    gpu: str | None = None
    observables: tuple[str, ...] = ()
    observables_gpu: bool = False
    parameter_derivatives: tuple[str, ...] = ()
    green_all: bool = False
    density: bool = True
    gpu_nuclear_moves: bool = False
    samplers: dict = dataclasses.field(default_factory=dict)


def require(system, capability: str, needed_by: str) -> None:
    """Raise :class:`Unsupported` unless ``system`` declares ``capability`` (truthy)."""
    if not getattr(system.capabilities, capability):
        raise Unsupported(f"{needed_by} needs capability {capability!r}, which system {system.name!r} does not have")


class System:
    """Base class of every system: the declarations a system module fills in, and sensible defaults.

    Class attributes to declare
    ---------------------------
    name          registry key and CLI subcommand (``qmckit run NAME``)
    title         one line for ``qmckit run --help``
    description   a paragraph for ``qmckit run NAME --help``: units, what it reports
    Params        the frozen parameter dataclass (fields from :func:`parameter`)
    kind          "continuum" (walkers of N particles in d dimensions, the kernels below) or "lattice"
    dim           spatial dimension d of a continuum system (an instance may override it)
    kernels       :class:`Kernels` (continuum systems)
    energy_key    the estimate the energy is reported as ("energy", "energy_per_particle", …)
    energy_unit, length_unit, time_unit   units, as text
    capabilities  :class:`Capabilities`
    run_defaults  run settings whose sensible default differs for this system, by method:
                  ``{"vmc": {"sampler": "brute", …}, "dmc": {"dt": …}}``
    cli_implies   ``{param: {other: value}}``: giving ``param`` on the command line sets ``other``
                  unless it is given too (a convenience of the CLI, not of the API)
    exact_cases   parameter sets where ψ_T is an eigenstate of H (zero variance), as
                  ``((params dict, energy in the reported normalisation), …)``: the conformance
                  suite checks each one
    examples      small parameter sets (dicts) that together exercise every branch of the kernels:
                  the conformance suite (``tests/test_conformance.py``) runs each one
    cache_layout  a number that changes whenever the meaning of a cache row changes (entries moved,
                  added or reinterpreted): checkpoints record it, and a run resumed from a checkpoint
                  written with another layout rebuilds its caches from the positions

    Instances hold ``params`` (a ``Params``) and answer the questions drivers ask (below).
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Params: ClassVar[type] = None
    kind: ClassVar[str] = "continuum"
    dim: int = 3
    kernels: ClassVar[Kernels] = None
    energy_key: ClassVar[str] = "energy"
    energy_unit: ClassVar[str] = ""
    length_unit: ClassVar[str] = ""
    time_unit: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    run_defaults: ClassVar[dict] = {}
    cli_implies: ClassVar[dict] = {}
    exact_cases: ClassVar[tuple] = ()
    examples: ClassVar[tuple] = ({},)
    cache_layout: ClassVar[int] = 1

    def __init__(self, params=None, **kwargs):
        if params is not None and kwargs:
            raise TypeError(f"{type(self).__name__}: pass a {self.Params.__name__} or keyword parameters, not both")
        self.params = params if params is not None else self.Params(**kwargs)

    def __repr__(self):
        values = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                           for k, v in self.params.as_dict().items())
        return f"{type(self).__name__}({values})"

    @classmethod
    def parameters(cls) -> tuple[ParameterInfo, ...]:
        """The declared parameters (name, type, default, metadata) in order."""
        return parameters(cls.Params)

    # --- what drivers ask ------------------------------------------------------------------------
    @property
    def n_particles(self) -> int:
        raise NotImplementedError

    @property
    def kernel_params(self) -> np.ndarray:
        """The float64 parameter vector ``p`` the kernels read."""
        raise NotImplementedError

    @property
    def hbar2_over_m(self) -> float:
        """ħ²/m in the system's units (1 where the units make it so)."""
        return 1.0

    def cache_size(self) -> int:
        """Length C of one walker's cache row."""
        raise NotImplementedError

    def energy_scale(self) -> float:
        """Walker energies are divided by this for the reported ``energy_key`` (N for per-particle energies)."""
        return 1.0

    def density_range(self) -> float:
        """A histogram half-width / r_max that holds the particles (the system's length unit)."""
        raise NotImplementedError

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        """Starting positions (W, N, d) for equilibration."""
        raise NotImplementedError

    def for_dmc(self) -> "System":
        """The system fixed-node DMC uses (capability ``fixed_node``); others return themselves."""
        return self

    def nuclei(self) -> np.ndarray:
        """(M, 4) fixed point charges [x, y, z, Z] in the length unit (atoms and molecules: the nuclei), for the
        drift sampler's ``nuclear_moves`` (:mod:`qmckit.backends.nuclear_moves`); (0, 4) for a system without."""
        return np.zeros((0, 4))

    def measure(self, positions: np.ndarray) -> np.ndarray:
        """(W, 1 + K) whole-walker E_L and the K ``capabilities.observables`` (capability ``observables``)."""
        require(self, "observables", "measure")
        raise NotImplementedError

    def log_psi_parameter_derivatives(self, configs: np.ndarray, names: tuple) -> np.ndarray:
        """(M, P) ∂ ln|ψ_T|/∂p at configurations (M, N, d) for ``names``, those of
        ``capabilities.parameter_derivatives`` (in the units of 1/p)."""
        require(self, "parameter_derivatives", "log_psi_parameter_derivatives")
        raise NotImplementedError
