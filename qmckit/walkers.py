"""Walker ensembles: the state every QMC method carries.

A :class:`Walkers` object is structure-of-arrays state for ``W`` walkers of ``N`` particles in
``d`` dimensions:

* ``positions``  ``(W, N, d)`` float64, in the system's length unit;
* ``caches``     ``(W, C)`` float64, per-walker state that a system keeps between moves (for
  trapped bosons: the gradient of log ψ and pair scratch); its layout belongs to the system;
* ``weights``    ``(W,)`` float64, DMC weights (1 in VMC);
* ``rng_states`` ``(W, 2)`` uint64, one xoroshiro128+ stream per walker (see :mod:`qmckit.rng`).

It can be copied, split, merged, saved to and restored from HDF5 (random state included).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import rng


@dataclass
class Walkers:
    positions: np.ndarray
    caches: np.ndarray
    weights: np.ndarray
    rng_states: np.ndarray

    def __post_init__(self):
        W = self.positions.shape[0]
        if self.positions.ndim != 3:
            raise ValueError(f"positions must have shape (W, N, d), got {self.positions.shape}")
        for name in ("caches", "weights", "rng_states"):
            if getattr(self, name).shape[0] != W:
                raise ValueError(f"{name} has {getattr(self, name).shape[0]} rows for {W} walkers")

    @classmethod
    def from_positions(cls, positions: np.ndarray, seed, cache_size: int = 0) -> "Walkers":
        """Walkers at ``positions`` (W, N, d) with unit weights and streams seeded from ``seed``."""
        positions = np.ascontiguousarray(positions, dtype=np.float64)
        W = positions.shape[0]
        return cls(positions=positions,
                   caches=np.zeros((W, cache_size)),
                   weights=np.ones(W),
                   rng_states=rng.seed_states(seed, W))

    @property
    def n_walkers(self) -> int:
        return self.positions.shape[0]

    @property
    def n_particles(self) -> int:
        return self.positions.shape[1]

    @property
    def dim(self) -> int:
        return self.positions.shape[2]

    def __len__(self) -> int:
        return self.n_walkers

    def copy(self) -> "Walkers":
        return Walkers(self.positions.copy(), self.caches.copy(), self.weights.copy(), self.rng_states.copy())

    def take(self, index) -> "Walkers":
        """The walkers selected by ``index`` (indices or boolean mask), as a new ensemble.

        Repeated indices copy a walker (DMC branching); the copies share its random state,
        so a caller that duplicates walkers must reseed the copies.
        """
        index = np.asarray(index)
        return Walkers(self.positions[index].copy(), self.caches[index].copy(),
                       self.weights[index].copy(), self.rng_states[index].copy())

    def split(self, n_parts: int) -> list["Walkers"]:
        """Split into ``n_parts`` nearly equal ensembles (for independent runs on several workers)."""
        return [self.take(idx) for idx in np.array_split(np.arange(self.n_walkers), n_parts)]

    @classmethod
    def merge(cls, parts: list["Walkers"]) -> "Walkers":
        return cls(np.concatenate([p.positions for p in parts]),
                   np.concatenate([p.caches for p in parts]),
                   np.concatenate([p.weights for p in parts]),
                   np.concatenate([p.rng_states for p in parts]))

    # --- HDF5 -------------------------------------------------------------------------------
    def save(self, group) -> None:
        """Write into an open ``h5py`` group (datasets ``positions``, ``caches``, ``weights``, ``rng_states``)."""
        for name in ("positions", "caches", "weights", "rng_states"):
            if name in group:
                del group[name]
            group.create_dataset(name, data=getattr(self, name))

    @classmethod
    def load(cls, group) -> "Walkers":
        return cls(*(np.array(group[name]) for name in ("positions", "caches", "weights", "rng_states")))

    def to_file(self, path) -> None:
        """Save to an HDF5 file at ``path`` atomically."""
        from .checkpoint import atomic_h5

        with atomic_h5(path) as f:
            self.save(f.require_group("walkers"))

    @classmethod
    def from_file(cls, path) -> "Walkers":
        import h5py

        with h5py.File(path, "r") as f:
            return cls.load(f["walkers"])
