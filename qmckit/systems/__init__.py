"""Physical systems, one module each. ``make_system(name, **params)`` builds one by name."""
from .atom import Atom, AtomParams
from .bec import BosonParams, TrappedBosons
from .helium import Helium, HeliumParams
from .molecule import Molecule, MoleculeParams

SYSTEMS = {"bec": TrappedBosons, "atom": Atom, "molecule": Molecule, "helium": Helium}


def make_system(name: str, **params):
    """The system called ``name`` (one of ``SYSTEMS``) with the given physics parameters."""
    try:
        cls = SYSTEMS[name]
    except KeyError:
        raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, got {name!r}") from None
    return cls(**params)


__all__ = ["SYSTEMS", "make_system", "TrappedBosons", "BosonParams", "Atom", "AtomParams", "Molecule", "MoleculeParams", "Helium", "HeliumParams"]
