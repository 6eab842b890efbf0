"""Physical systems, one module each, registered by name.

Every system implements the protocol of :mod:`qmckit.systems.protocol` (parameters with metadata,
kernels, declared capabilities). ``SYSTEMS`` maps each name to its class; the CLI (``qmckit run
NAME``), the widgets, scans and the conformance tests read this registry, so a system registered
here (or with :func:`register`) appears in all of them. ``make_system(name, **params)`` builds one.
"""
from .atom import Atom, AtomParams
from .bec import BosonParams, TrappedBosons
from .helium import Helium, HeliumParams
from .lattice_rvb import LatticeParams, LatticeRVB
from .molecule import Molecule, MoleculeParams
from .qdot import QuantumDot, QuantumDotParams
from .user import UserSystem, UserSystemBase
from .protocol import (Capabilities, Kernels, ParameterInfo, System, Unsupported, parameter, parameters, require,
                       validate)

SYSTEMS: dict[str, type[System]] = {}


def register(cls: type[System]) -> type[System]:
    """Add a :class:`System` subclass to ``SYSTEMS`` under ``cls.name`` (usable as a decorator).

    Checks the declarations a consumer relies on: a name, a parameter dataclass whose every field
    carries metadata, and kernels for a continuum system."""
    if not (isinstance(cls, type) and issubclass(cls, System)):
        raise TypeError(f"register needs a qmckit.System subclass, got {cls!r}")
    if not cls.name or not cls.name.isidentifier():
        raise ValueError(f"{cls.__name__}.name must be a short identifier, got {cls.name!r}")
    parameters(cls.Params)  # TypeError if a field lacks metadata
    if cls.kind not in ("continuum", "lattice"):
        raise ValueError(f"{cls.__name__}.kind must be continuum or lattice, got {cls.kind!r}")
    if cls.kind == "continuum" and not isinstance(cls.kernels, Kernels):
        raise TypeError(f"{cls.__name__}.kernels must be a qmckit.systems.Kernels")
    SYSTEMS[cls.name] = cls
    return cls


for _cls in (TrappedBosons, Atom, Molecule, Helium, LatticeRVB, QuantumDot):
    register(_cls)


def adopt(system: System) -> str:
    """Register the class of ``system`` (an instance, e.g. from :func:`qmckit.UserSystem`) unless it is registered
    already, and return its name. A system defined at run time replaces an earlier one of the same name (a notebook
    cell run again); a built-in name is refused in one line."""
    cls = type(system)
    present = SYSTEMS.get(cls.name)
    if present is cls:
        return cls.name
    if present is not None and not getattr(present, "user_defined", False):
        raise ValueError(f"system: {cls.name!r} is a built-in system's name; give yours another (name=...)")
    register(cls)
    return cls.name


def system_class(name: str) -> type[System]:
    """The registered system class called ``name``."""
    try:
        return SYSTEMS[name]
    except (KeyError, TypeError):
        raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, got {name!r}") from None


def make_system(name: str, **params) -> System:
    """The system called ``name`` (one of ``SYSTEMS``) with the given physics parameters."""
    return system_class(name)(**params)


__all__ = ["SYSTEMS", "register", "adopt", "UserSystem", "UserSystemBase", "system_class", "make_system", "System", "Capabilities", "Kernels",
           "ParameterInfo", "Unsupported", "parameter", "parameters", "require", "validate",
           "TrappedBosons", "BosonParams", "Atom", "AtomParams", "Molecule", "MoleculeParams", "Helium",
           "HeliumParams", "LatticeRVB", "LatticeParams", "QuantumDot", "QuantumDotParams"]
