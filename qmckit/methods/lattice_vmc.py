"""A complete, checkpointed lattice VMC run of the projected RVB state (study 000).

:class:`LatticeRun` is the one :class:`~qmckit.methods.run.Run` over lattice chains, as
:class:`qmckit.runs.VMCRun` is over continuum walkers: it equilibrates, runs blocks of sweeps, records
the chain-averaged energies of every sweep, writes an atomic HDF5 checkpoint after equilibration and
after every block, and reduces the series to :class:`~qmckit.stats.Estimate` values. A run resumed
from its checkpoint continues with the same
configurations, inverses, random streams and series, so it ends with the numbers of an
uninterrupted run. The result dictionary follows the CLI contract (``energy_per_site`` in t).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import checkpoint as ckpt
from ..samplers import lattice as chains_mod
from ..rng import seed_states
from ..stats import estimate
from ..systems.lattice_rvb import LatticeRVB
from .run import PIECE_S, Run

CHECKPOINT_FORMAT = "qmckit-lattice-checkpoint-1"
SERIES = ("kinetic", "exchange", "double", "acceptance")
BACKENDS = ("auto", "cpu", "cuda")


@dataclass
class LatticeRunConfig:
    """Everything that determines a lattice run's numbers.

    params           :class:`~qmckit.systems.lattice_rvb.LatticeParams` fields
    chains           Markov chains (study 000: nMarkov = 32)
    steps            measured sweeps per chain (one energy per sweep)
    equilibration    sweeps before measuring (default max(50, steps // 5))
    moves_per_sweep  proposals per sweep (default N_e)
    refresh_every    sweeps between rebuilds of A⁻¹ from scratch, and one at the end of every block
                     (default 100)
    block            sweeps per block / checkpoint (default steps / 20)
    """

    params: dict = field(default_factory=dict)
    chains: int = 32
    steps: int = 1000
    equilibration: int | None = None
    moves_per_sweep: int | None = None
    refresh_every: int = chains_mod.REFRESH_EVERY
    block: int | None = None
    seed: int = 0
    backend: str = "cpu"

    def __post_init__(self):
        system = LatticeRVB(**self.params)  # validates the physics parameters
        self.params = system.params.as_dict()
        for name in ("chains", "steps", "refresh_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.equilibration is None:
            self.equilibration = max(50, self.steps // 5)
        if self.moves_per_sweep is None:
            self.moves_per_sweep = system.n_electrons
        if self.block is None:
            self.block = max(1, math.ceil(self.steps / 20))
        for name, low in (("equilibration", 0), ("moves_per_sweep", 1), ("block", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an integer ≥ {low}, got {value!r}")
        if self.resolved_backend() == "cuda" and not chains_mod.cuda_available():
            raise ValueError("backend cuda: no CUDA GPU found (use cpu or auto)")

    def resolved_backend(self) -> str:
        if self.backend != "auto":
            return self.backend
        return "cuda" if chains_mod.cuda_available() else "cpu"

    @property
    def n_blocks(self) -> int:
        return math.ceil(self.steps / self.block)


class LatticeRun(Run):
    """A lattice VMC run (the one :class:`~qmckit.methods.run.Run` over lattice chains); iterate
    :meth:`blocks` (or call :meth:`run`), then :meth:`result`."""

    method = "vmc"
    CHECKPOINT_FORMAT = CHECKPOINT_FORMAT

    def __init__(self, config: LatticeRunConfig, checkpoint_path=None):
        self.system = LatticeRVB(**config.params)
        start_seq, stream_seq = np.random.SeedSequence(config.seed).spawn(2)
        state = self.system.random_configurations(config.chains, np.random.default_rng(start_seq))
        self.backend = config.resolved_backend()
        self._start(config, checkpoint_path, SERIES)
        self.chains = self._make_chains(state, seed_states(stream_seq, config.chains))

    def _make_chains(self, state, states):
        cfg = self.config
        return chains_mod.make_chains(self.system, state, states, cfg.moves_per_sweep, cfg.refresh_every, self.backend)

    # --- running ------------------------------------------------------------------------------
    def _pieces(self, sweeps: int, measure: bool, phase: str):
        """``self.chains.sweep(sweeps, measure)`` as pieces (a generator of ``(phase, done, sweeps)``) returning
        the (W, sweeps, 3) energies. A CPU chain rebuilds A⁻¹ every ``refresh_every`` sweeps of a call and at
        its end, so pieces of whole refresh intervals give the numbers of one call; the GPU kernel runs the
        whole call in one launch."""
        every = self.config.refresh_every
        if self.backend != "cpu" or sweeps <= every:
            with self.timer("sampling"):
                return self.chains.sweep(sweeps, measure=measure)
        parts, done, size = [], 0, every
        while True:
            k = min(size, sweeps - done)
            start = time.perf_counter()
            parts.append(self.chains.sweep(k, measure=measure))
            elapsed = time.perf_counter() - start
            self.timer.add("sampling", elapsed)
            done += k
            if done >= sweeps:
                break
            size = every * max(1, min(8 * k // every, int(k * PIECE_S / max(elapsed, 1e-6)) // every))
            yield phase, done, sweeps
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)

    def _equilibration_pieces(self):
        if self.config.equilibration:
            yield from self._pieces(self.config.equilibration, False, "equilibration")
        self.chains.counts[:] = 0  # acceptance counts the measured sweeps only

    def _block_pieces(self, sweeps: int):
        before = self.chains.counts.sum(axis=0).copy()
        energies = (yield from self._pieces(sweeps, True, "block")).mean(axis=0)  # chain average per sweep: (sweeps, 3)
        delta = self.chains.counts.sum(axis=0) - before
        proposed = delta[chains_mod.HOPS_PROPOSED] + delta[chains_mod.SWAPS_PROPOSED]
        accepted = delta[chains_mod.HOPS_ACCEPTED] + delta[chains_mod.SWAPS_ACCEPTED]
        records = {"kinetic": energies[:, 0], "exchange": energies[:, 1], "double": energies[:, 2],
                   "acceptance": np.array([accepted / max(proposed, 1)])}
        return {name: np.asarray(records[name], dtype=float) for name in SERIES}

    # --- results ------------------------------------------------------------------------------
    def energy_series(self) -> np.ndarray:
        """Chain-averaged energy per site of every measured sweep, in t."""
        return (self.series_of("kinetic") + self.series_of("exchange")) / self.system.n_sites

    def estimates(self) -> dict:
        if not self.blocks_done:
            return {}
        n = self.system.n_sites
        return {"energy_per_site": estimate(self.energy_series()),
                "kinetic_per_site": estimate(self.series_of("kinetic") / n),
                "exchange_per_site": estimate(self.series_of("exchange") / n),
                "double_occupancy": estimate(self.series_of("double") / n)}

    @property
    def acceptance(self) -> float:
        acc = self.series_of("acceptance")
        sizes = np.array([len(p) for p in self.series["kinetic"]])
        return float(np.dot(acc, sizes) / sizes.sum()) if sizes.size else float("nan")

    def result(self) -> dict:
        """The JSON-ready summary (the CLI/JSON contract, docs/architecture.md)."""
        start = time.perf_counter()
        cfg, counts = self.config, self.chains.counts.sum(axis=0)
        s = self.system
        estimates, run_warnings = self.estimates_and_warnings()
        self.timer.set("analysis", time.perf_counter() - start)
        return {
            "system": "lattice", "method": "vmc", "params": dict(cfg.params), "seed": int(cfg.seed),
            "backend": self.backend, "walkers": int(cfg.chains), "steps": int(cfg.steps),
            "equilibration": int(cfg.equilibration), "moves_per_sweep": int(cfg.moves_per_sweep),
            "n_sites": s.n_sites, "n_electrons": s.n_electrons, "n_pairs": s.n_pairs, "gamma_ghost": bool(s.ghost),
            "energy_unit": s.energy_unit,
            "estimates": {name: est.to_dict() for name, est in estimates.items()},
            "acceptance": self.acceptance,
            "hops": {"proposed": int(counts[chains_mod.HOPS_PROPOSED]),
                     "accepted": int(counts[chains_mod.HOPS_ACCEPTED])},
            "swaps": {"proposed": int(counts[chains_mod.SWAPS_PROPOSED]),
                      "accepted": int(counts[chains_mod.SWAPS_ACCEPTED])},
            "inverse_drift": float(self.chains.drift.max()), "inverse_rebuilds": int(counts[chains_mod.REBUILDS]),
            "wall_s": self.wall_s, "warnings": run_warnings, "profile": self.profile(),
        }

    # --- checkpoints --------------------------------------------------------------------------
    def _save_state(self, f) -> None:
        state = self.chains.host_state()
        ckpt.write_arrays(f.create_group("chains"), state | {"states": self.chains.states_to_host(),
                                                             "counts": self.chains.counts,
                                                             "drift": self.chains.drift})


def resume_lattice_run(path) -> LatticeRun:
    """Continue the lattice run checkpointed at ``path`` (and keep checkpointing there)."""
    with ckpt.read_checkpoint(path) as f:
        attrs = ckpt.read_attrs(f)
        if attrs.get("format") != CHECKPOINT_FORMAT:
            raise ckpt.CheckpointError(f"resume: {path} is not a qmckit lattice checkpoint")
        config = LatticeRunConfig(**attrs["config"])
        run = LatticeRun.__new__(LatticeRun)
        run.system = LatticeRVB(**config.params)
        run.backend = config.resolved_backend()
        run._start(config, path, SERIES)
        arrays = ckpt.read_arrays(f["chains"])
        states = arrays.pop("states")
        counts, drift = arrays.pop("counts"), arrays.pop("drift")
        run.chains = run._make_chains(arrays, states)
        run.chains.counts[:] = counts
        run.chains.drift[:] = drift
        run._restore_progress(f, attrs)
    return run
