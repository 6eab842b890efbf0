"""A complete, checkpointed QMC run: what the CLI and the widgets drive.

A :class:`VMCRun` owns a system, a walker ensemble and a :class:`~qmckit.methods.vmc.VMC`
driver. It equilibrates, runs blocks, accumulates the walker-averaged energy of every sweep,
writes an atomic checkpoint after equilibration and after every block, and reduces the data to
:class:`~qmckit.stats.Estimate` values. A run resumed from its checkpoint continues with the same
walkers, caches, random streams and accumulated data, so it ends with exactly the numbers of a
run that was never interrupted.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import h5py
import numpy as np

from . import checkpoint as ckpt
from .methods.vmc import SAMPLERS, VMC
from .stats import estimate
from .systems import make_system
from .walkers import Walkers

BACKENDS = ("auto", "cpu", "cuda")


@dataclass
class RunConfig:
    """Everything that determines a run's numbers.

    steps        measured sweeps per walker (a sweep = N single-particle moves + one energy)
    equilibration  sweeps before measuring (default: max(50, steps // 5), and ≥ 1/dt for drift)
    block        sweeps per block; a checkpoint is written after each block
    """

    system: str = "bec"
    params: dict = field(default_factory=dict)
    method: str = "vmc"
    sampler: str = "drift"
    dt: float = 0.05
    step: float = 1.0
    drift_cap: bool = True
    walkers: int = 200
    steps: int = 1000
    equilibration: int | None = None
    block: int | None = None
    seed: int = 0
    backend: str = "auto"

    def __post_init__(self):
        if self.method != "vmc":
            raise ValueError(f"method must be vmc (dmc arrives with the DMC driver), got {self.method!r}")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {self.sampler!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.backend == "cuda":
            raise ValueError("backend cuda has no VMC kernel for this system yet; use cpu or auto")
        for name in ("dt", "step"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        for name in ("walkers", "steps"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.equilibration is None:
            self.equilibration = max(50, self.steps // 5)
            if self.sampler == "drift":
                self.equilibration = max(self.equilibration, math.ceil(1.0 / self.dt))
        if self.block is None:
            self.block = max(1, math.ceil(self.steps / 20))
        for name in ("equilibration", "block"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < (0 if name == "equilibration" else 1):
                raise ValueError(f"{name} must be a {'non-negative' if name == 'equilibration' else 'positive'} "
                                 f"integer, got {value!r}")
        # validate the physics parameters now, so bad input fails before any work
        self.params = make_system(self.system, **self.params).params.as_dict()

    @property
    def n_blocks(self) -> int:
        return math.ceil(self.steps / self.block)


class VMCRun:
    """A VMC run from a :class:`RunConfig`; iterate :meth:`blocks` (or call :meth:`run`) then :meth:`result`."""

    def __init__(self, config: RunConfig, checkpoint_path=None):
        self.config = config
        self.checkpoint_path = checkpoint_path
        self.system = make_system(config.system, **config.params)
        seq = np.random.SeedSequence(config.seed)
        start_seq, walker_seq = seq.spawn(2)
        positions = self.system.initial_positions(config.walkers, np.random.default_rng(start_seq))
        self.walkers = Walkers.from_positions(positions, walker_seq, self.system.cache_size())
        self.driver = VMC(self.system, self.walkers, sampler=config.sampler, dt=config.dt, step=config.step,
                          drift_cap=config.drift_cap)
        self.equilibrated = False
        self.blocks_done = 0
        self.energy_mean: list[np.ndarray] = []  # per block: walker-mean energy of each sweep, (sweeps,)
        self.energy_var: list[np.ndarray] = []   # per block: across-walker variance of each sweep
        self.accepted_moves = 0.0
        self.proposed_moves = 0
        self.wall_s = 0.0

    # --- running ------------------------------------------------------------------------------
    def equilibrate(self) -> None:
        if not self.equilibrated:
            start = time.perf_counter()
            self.driver.equilibrate(self.config.equilibration)
            self.equilibrated = True
            self.wall_s += time.perf_counter() - start
            self.save_checkpoint()

    def blocks(self, stop=None):
        """Run the remaining blocks, yielding ``(blocks_done, n_blocks)`` after each one.

        ``stop`` is an optional ``threading.Event``; when set, the run pauses after the current
        block (its checkpoint is written), and can be continued by calling ``blocks`` again.
        """
        self.equilibrate()
        cfg = self.config
        while self.blocks_done < cfg.n_blocks:
            if stop is not None and stop.is_set():
                return
            start = time.perf_counter()
            sweeps = min(cfg.block, cfg.steps - self.blocks_done * cfg.block)
            self.driver.recompute()
            energies, acceptance = self.driver.sweep(sweeps)
            self.energy_mean.append(energies.mean(axis=1))
            self.energy_var.append(energies.var(axis=1, ddof=1) if energies.shape[1] > 1
                                   else np.zeros(sweeps))
            proposed = sweeps * self.walkers.n_walkers * self.walkers.n_particles
            self.accepted_moves += acceptance * proposed
            self.proposed_moves += proposed
            self.blocks_done += 1
            self.wall_s += time.perf_counter() - start
            self.save_checkpoint()
            yield self.blocks_done, cfg.n_blocks

    def run(self, progress=None):
        """Run to completion; ``progress(done, total)`` is called after every block."""
        for done, total in self.blocks():
            if progress is not None:
                progress(done, total)
        return self.result()

    # --- results ------------------------------------------------------------------------------
    def energy_series(self) -> np.ndarray:
        """Walker-averaged energy per particle (or per the system's normalisation) of every sweep."""
        if not self.energy_mean:
            return np.empty(0)
        return np.concatenate(self.energy_mean) / self.system.energy_scale()

    def estimates(self) -> dict:
        series = self.energy_series()
        out = {}
        if series.size:
            out[self.system.energy_key] = estimate(series)
            out["energy_variance"] = estimate(np.concatenate(self.energy_var))
        return out

    @property
    def acceptance(self) -> float:
        return self.accepted_moves / self.proposed_moves if self.proposed_moves else float("nan")

    def result(self) -> dict:
        """The JSON-ready summary of the run (the CLI contract of DESIGN.md)."""
        cfg = self.config
        return {
            "system": cfg.system,
            "method": cfg.method,
            "params": dict(cfg.params),
            "seed": int(cfg.seed),
            "backend": "cpu",
            "sampler": cfg.sampler,
            "dt": cfg.dt if cfg.sampler == "drift" else None,
            "step": self.driver.step if cfg.sampler == "brute" else None,
            "walkers": int(cfg.walkers),
            "steps": int(cfg.steps),
            "equilibration": int(cfg.equilibration),
            "energy_unit": self.system.energy_unit,
            "estimates": {name: est.to_dict() for name, est in self.estimates().items()},
            "acceptance": float(self.acceptance),
            "wall_s": self.wall_s,
        }

    # --- checkpoints --------------------------------------------------------------------------
    def save_checkpoint(self) -> None:
        if self.checkpoint_path is None:
            return
        with ckpt.atomic_h5(self.checkpoint_path) as f:
            ckpt.write_attrs(f, {
                "format": "qmckit-vmc-checkpoint-1",
                "config": asdict(self.config),
                "equilibrated": self.equilibrated,
                "blocks_done": self.blocks_done,
                "step": self.driver.step,
                "accepted_moves": self.accepted_moves,
                "proposed_moves": self.proposed_moves,
                "wall_s": self.wall_s,
            })
            self.walkers.save(f.create_group("walkers"))
            data = f.create_group("blocks")
            for k, (mean, var) in enumerate(zip(self.energy_mean, self.energy_var)):
                data.create_dataset(f"energy_mean_{k:06d}", data=mean)
                data.create_dataset(f"energy_var_{k:06d}", data=var)

    @classmethod
    def resume(cls, path) -> "VMCRun":
        """Continue the run whose checkpoint is at ``path`` (and keep checkpointing there)."""
        with h5py.File(path, "r") as f:
            attrs = ckpt.read_attrs(f)
            if attrs.get("format") != "qmckit-vmc-checkpoint-1":
                raise ValueError(f"resume: {path} is not a qmckit VMC checkpoint")
            run = cls(RunConfig(**attrs["config"]), checkpoint_path=path)
            saved = Walkers.load(f["walkers"])
            for name in ("positions", "caches", "weights", "rng_states"):
                getattr(run.walkers, name)[...] = getattr(saved, name)
            run.equilibrated = attrs["equilibrated"]
            run.blocks_done = attrs["blocks_done"]
            run.driver.step = attrs["step"]
            run.accepted_moves = attrs["accepted_moves"]
            run.proposed_moves = attrs["proposed_moves"]
            run.wall_s = attrs["wall_s"]
            blocks = f["blocks"]
            run.energy_mean = [np.array(blocks[f"energy_mean_{k:06d}"]) for k in range(run.blocks_done)]
            run.energy_var = [np.array(blocks[f"energy_var_{k:06d}"]) for k in range(run.blocks_done)]
        return run
