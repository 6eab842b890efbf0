"""A complete, checkpointed QMC run: what the CLI and the widgets drive.

A run (:class:`VMCRun` or :class:`DMCRun`, built from a :class:`RunConfig` by :func:`make_run`)
owns a system, a walker ensemble and a driver. It equilibrates, runs blocks, accumulates one
record per sweep or DMC step, writes an atomic checkpoint after equilibration and after every
block, and reduces the data to :class:`~qmckit.stats.Estimate` values. A run resumed from its
checkpoint (:func:`resume_run`) continues with the same walkers, caches, random streams and
accumulated data, so it ends with exactly the numbers of a run that was never interrupted.
"""
from __future__ import annotations

import dataclasses
import math
import os
import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

from . import checkpoint as ckpt
from .methods.dmc import DMC, FEEDBACK_TIME
from .methods.run import PIECE_S, Run
from .samplers import SAMPLERS, check_gpu, cuda_available, gpu_takes, make_sampler, samplers_of, variant_flags
from .samplers.cpu import nuclei_for_moves
from .observables import DensityHistogram, density_summary
from .perf.run_profile import timed_sweep
from .stats import ShortSeriesWarning, estimate
from .systems import make_system, system_class
from .systems.protocol import System, Unsupported, require
from .walkers import Walkers

BACKENDS = ("auto", "cpu", "cuda")
METHODS = ("vmc", "dmc")
DTYPES = ("float64", "float32")
ANALYSES = ("sync", "async")
CHECKPOINT_FORMAT = "qmckit-run-checkpoint-1"
LATTICE_CHECKPOINT_FORMAT = "qmckit-lattice-checkpoint-1"
COLLAPSE_FRACTION = 0.2  # a DMC population below this fraction of its target is reported as collapsed
# the RunConfig fields a lattice system's run reads (walkers: its chains)
LATTICE_OPTIONS = ("system", "params", "walkers", "steps", "equilibration", "block", "seed", "backend")


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the OS says, else every core)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this OS
        return os.cpu_count() or 1


@dataclass
class RunConfig:
    """Everything that determines a run's numbers.

    steps        measured sweeps per walker (a sweep = N single-particle moves + one energy);
                 for DMC, measured DMC steps (each one sweep plus branching)
    equilibration  VMC sweeps before measuring (default: max(50, steps // 5), and ≥ 1/dt for drift)
    block        sweeps (steps) per block; a checkpoint is written after each block
    target_walkers  DMC population target (default: ``walkers``)
    dmc_equilibration  DMC steps with branching before measuring (default: one time unit, 1/dt)
    analysis     "sync": the density histogram takes each sample between sweeps; "async": a worker thread takes it
                 while the sampler goes on (study 004's load masking; the same numbers, as the analysis never feeds
                 back into the sampling; DMC branching stays in step); refused for a CPU-only run on one usable core

    A lattice system (``system="lattice"``) runs VMC chains: ``walkers`` is the number of chains, and
    ``params``, ``steps``, ``equilibration``, ``block``, ``seed`` and ``backend`` mean what they mean for
    walkers; the options of continuum walkers (dt, sampler, DMC, density, …) are refused. :meth:`lattice_config`
    gives the :class:`~qmckit.methods.lattice_vmc.LatticeRunConfig` that :func:`make_run` runs (which also sets
    the lattice's own ``moves_per_sweep`` and ``refresh_every``).
    """

    system: str = "bec"  # a registered name, or a System instance (registered by its class: qmckit.UserSystem)
    params: dict = field(default_factory=dict)
    method: str = "vmc"
    sampler: str = "drift"
    dt: float = 0.05
    step: float = 1.0
    drift_cap: bool = True
    energy_cap: bool | float = 8.0  # DMC: cut E_L − E_T in branching at max(Zen, c σ₀) (True: Zen alone; see dmc)
    feedback_time: float = FEEDBACK_TIME  # DMC: τ_fb of the population feedback, in the system's time unit (see dmc)
    effective_time_step: bool = True  # DMC: branch with τ_eff = Δτ ⟨R²_acc⟩/⟨R²_prop⟩ (False: Δτ, as study 002)
    nuclear_moves: bool = False     # drift moves near nuclei by Umrigar–Nightingale–Runge (atoms, molecules)
    walkers: int = 200
    steps: int = 1000
    equilibration: int | None = None
    block: int | None = None
    seed: int = 0
    backend: str = "auto"           # "auto": the GPU when one is present and the run allows it
    dtype: str = "float64"          # "float32" on the GPU only
    target_walkers: int | None = None
    dmc_equilibration: int | None = None
    density: str | None = None      # one-body density "x", "y", "z", "r" or "rho", or "pair" distances (None: off)
    density_bins: int = 60
    density_range: float | None = None  # histogram half-width / r_max (default 5 σ of the trap)
    density_every: int = 1              # sweeps between density samples
    measure_every: int = 1              # VMC: sweeps between measurements (study 004's m); steps counts measurements
    target_acceptance: float = 0.5      # brute-force sampler: acceptance the step is tuned to
    green: str = "moved"            # study 002's deviations, for demonstrations only:
    accept_uniform: str = "fresh"   # "all", "reuse" and "redraw" (see qmckit.backends.cpu_kernels)
    hard_core: str = "reject"
    analysis: str = "sync"          # "async": the density histogram in a worker thread beside the sampler

    def __post_init__(self):
        if isinstance(self.system, System):  # an instance (e.g. a qmckit.UserSystem): its class by name from now on
            from .systems import adopt

            self.params = self.system.params.as_dict() | dict(self.params)
            self.system = adopt(self.system)
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        variant_flags(self.green, self.accept_uniform, self.hard_core)
        if self.method == "dmc" and self.sampler != "drift":
            raise ValueError("sampler must be drift for dmc (importance-sampled drift-diffusion), "
                             f"got {self.sampler!r}")
        if not isinstance(self.sampler, str):
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {self.sampler!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.dtype != "float64" and self.backend != "cuda":
            raise ValueError("dtype float32 exists only for backend cuda")
        for name in ("dt", "step", "feedback_time"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not (isinstance(self.target_acceptance, (int, float)) and 0 < self.target_acceptance < 1):
            raise ValueError(f"target_acceptance must be in (0, 1), got {self.target_acceptance!r}")
        if not isinstance(self.measure_every, (int, np.integer)) or self.measure_every < 1:
            raise ValueError(f"measure_every must be a positive integer, got {self.measure_every!r}")
        if self.measure_every > 1 and (self.method != "vmc" or self.density is not None):
            raise ValueError("measure_every > 1 needs method vmc and no density histogram")
        if self.target_walkers is None:
            self.target_walkers = self.walkers
        if self.dmc_equilibration is None:
            self.dmc_equilibration = math.ceil(1.0 / self.dt) if self.method == "dmc" else 0
        for name in ("walkers", "steps", "target_walkers"):
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
        for name in ("equilibration", "block", "dmc_equilibration"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < (1 if name == "block" else 0):
                raise ValueError(f"{name} must be a {'positive' if name == 'block' else 'non-negative'} "
                                 f"integer, got {value!r}")
        # validate the physics parameters now, so bad input fails before any work
        system = make_system(self.system, **self.params)
        self.params = system.params.as_dict()
        if system.kind == "lattice":
            self._check_lattice_options()
            return
        if self.sampler not in samplers_of(system):
            raise ValueError(f"sampler must be one of {', '.join(samplers_of(system))} for system {self.system!r}, "
                             f"got {self.sampler!r}")
        if self.green == "all":
            require(system, "green_all", "green 'all' (study 002's all-particle Green's function)")
        if self.nuclear_moves:
            nuclei_for_moves(system, self.sampler, variant_flags(**self.variant_options()))
            if self.backend == "cuda":
                require(system, "gpu_nuclear_moves", "nuclear_moves on backend cuda")
        if self.backend == "cuda":
            check_gpu(system, self.sampler)  # Unsupported if the system has no GPU sampler for this move
            if variant_flags(**self.variant_options()):
                raise ValueError("backend cuda runs exact Metropolis–Hastings only; study 002's variants need cpu")
            if not cuda_available(system, self.sampler):
                raise ValueError("backend cuda: no CUDA GPU found (use cpu or auto)")
        if self.density is not None:
            if not isinstance(self.density_every, (int, np.integer)) or self.density_every < 1:
                raise ValueError(f"density_every must be a positive integer, got {self.density_every!r}")
            self.make_density(system)  # validates kind, bins and range
        elif self.density_every != 1:
            raise ValueError(f"density_every is the sweeps between density samples; set density too, got "
                             f"density_every={self.density_every!r} without one")
        if self.analysis not in ANALYSES:
            raise ValueError(f"analysis must be one of {', '.join(ANALYSES)}, got {self.analysis!r}")
        if self.analysis == "async" and self.density is None:
            raise ValueError("analysis async moves the density histogram beside the sampler; this run measures no "
                             "density (set density; --measure-density), so it cannot help")
        if self.analysis == "async" and self.resolved_backend() == "cpu" and usable_cores() < 2:
            raise ValueError("analysis async runs the histogram on a second core beside the sampler; this process may "
                             "use only one core, so it cannot help (use analysis sync)")

    def _check_lattice_options(self) -> None:
        """Refuse, by name, every option of continuum walkers set to other than its default (a lattice runs VMC
        chains, which have none of them)."""
        if self.method != "vmc":
            raise Unsupported(f"method {self.method!r}: system {self.system!r} runs VMC chains on a lattice (vmc only)")
        derived = {"target_walkers": self.walkers, "dmc_equilibration": 0}
        for f in dataclasses.fields(self):
            if f.name in LATTICE_OPTIONS or f.name == "method":
                continue
            default = derived.get(f.name, f.default)
            if getattr(self, f.name) != default:
                raise Unsupported(f"{f.name}={getattr(self, f.name)!r}: an option of continuum walkers; system "
                                  f"{self.system!r} runs VMC chains on a lattice "
                                  f"(options: {', '.join(LATTICE_OPTIONS)})")

    def lattice_config(self):
        """The :class:`~qmckit.methods.lattice_vmc.LatticeRunConfig` of a lattice system's run (``walkers`` chains)."""
        from .methods.lattice_vmc import LatticeRunConfig

        return LatticeRunConfig(params=dict(self.params), chains=self.walkers, steps=self.steps,
                                equilibration=self.equilibration, block=self.block, seed=self.seed,
                                backend=self.backend)

    def make_density(self, system) -> DensityHistogram | None:
        if self.density is None:
            return None
        allowed = {1: ("x", "pair"), 2: ("x", "y", "rho", "pair")}.get(system.dim)
        if allowed is not None and self.density not in allowed:
            raise ValueError(f"density must be one of {', '.join(allowed)} for a {system.dim}-dimensional system"
                             f"{' (rho is the radial density there)' if system.dim == 2 else ''}, got {self.density!r}")
        # a periodic system's pairs are counted at minimum-image distances, up to half its box (its density_range)
        box = float(getattr(system, "box", 0.0)) if self.density == "pair" else 0.0
        upper = self.density_range or system.density_range() * (2.0 if self.density == "pair" and not box else 1.0)
        return DensityHistogram(self.density, self.density_bins, upper, box)

    def resolved_backend(self) -> str:
        """"cpu" or "cuda": what ``backend`` means on this machine for this run."""
        if self.backend != "auto":
            return self.backend
        if system_class(self.system).kind == "lattice":
            return self.lattice_config().resolved_backend()
        if variant_flags(**self.variant_options()) or self.density is not None:
            return "cpu"
        system = make_system(self.system, **self.params)
        if self.nuclear_moves and not system.capabilities.gpu_nuclear_moves:
            return "cpu"
        return "cuda" if cuda_available(system, self.sampler) and gpu_takes(system) else "cpu"

    def variant_options(self) -> dict:
        return {"green": self.green, "accept_uniform": self.accept_uniform, "hard_core": self.hard_core}

    @property
    def n_blocks(self) -> int:
        return math.ceil(self.steps / self.block)


class _Run(Run):
    """What VMC and DMC runs of continuum walkers share: set-up, the sampler, series, checkpoints, the result."""

    SERIES: tuple[str, ...] = ()
    CHECKPOINT_FORMAT = CHECKPOINT_FORMAT

    def __init__(self, config: RunConfig, checkpoint_path=None):
        if config.method != self.method:
            raise ValueError(f"{type(self).__name__} needs method {self.method!r}, got {config.method!r}")
        self.system = make_system(config.system, **config.params)
        if config.method == "dmc":
            self.system = self.system.for_dmc()  # fixed node (equilibration too): no moves across a node of ψ_T
        seq = np.random.SeedSequence(config.seed)
        start_seq, walker_seq, self._branch_seq = seq.spawn(3)
        positions = self.system.initial_positions(config.walkers, np.random.default_rng(start_seq))
        self.backend = config.resolved_backend()
        # a GPU run keeps no host caches: the device rebuilds its own, and DMC branching would
        # otherwise copy 8N numbers per walker on the host at every step
        walkers = Walkers.from_positions(positions, walker_seq,
                                         0 if self.backend == "cuda" else self.system.cache_size())
        self.vmc = make_sampler(self.system, walkers, self.backend, sampler=config.sampler, dt=config.dt,
                                step=config.step, target_acceptance=config.target_acceptance,
                                drift_cap=config.drift_cap, dtype=config.dtype, nuclear_moves=config.nuclear_moves,
                                **config.variant_options())
        self.density = config.make_density(self.system)
        self._analysis_pool = self._analysis = None  # analysis="async": the worker thread and its pending histogram
        self._start(config, checkpoint_path, self.SERIES + (("density",) if self.density is not None else ()))

    @property
    def walkers(self) -> Walkers:
        return self.vmc.walkers

    # --- running ------------------------------------------------------------------------------
    def _equilibration_pieces(self):
        total = self.config.equilibration
        pieces = getattr(self.vmc, "equilibration_pieces", None)
        if pieces is None:  # a sampler that equilibrates in one call only
            with self.timer("sampling"):
                self.vmc.equilibrate(total)
        else:
            pieces, clock = pieces(total), time.perf_counter
            while True:  # each piece's sweeps are sampling; what a Stop waits for between them is not
                start = clock()
                done = next(pieces, None)
                self.timer.add("sampling", clock() - start)
                if done is None:
                    break
                yield "equilibration", done, total
        yield from self._after_equilibration_pieces()

    def _after_equilibration_pieces(self):
        return
        yield  # nothing after the VMC equilibration (DMC: its own equilibration steps)

    @staticmethod
    def resume(path) -> "_Run":
        """Continue the run checkpointed at ``path`` (see :func:`resume_run`)."""
        return resume_run(path)

    def _block_pieces(self, n: int):
        with self.timer("sampling"):
            self.vmc.recompute()  # discard the round-off of incremental cache updates
        records = yield from self._sweep_pieces(n)
        if self.density is not None:
            self._wait_for_analysis()
            records["density"] = self.density.take_block()[None, :]
            if self._analysis_pool is not None and self.blocks_done + 1 >= self.config.n_blocks:
                self._analysis_pool.shutdown()  # the last block (a continued run makes a new worker if it needs one)
                self._analysis_pool = None
        return records

    def _sweep_pieces(self, n: int):
        """The block's ``n`` sweeps or steps as pieces (generator of ``("block", done, n)``) returning its records."""
        raise NotImplementedError

    def _sweeps_in_pieces(self, n: int):
        """``self.vmc.sweep(n)`` for a sampler that is ``exact_in_pieces``, cut into pieces of about
        :data:`~qmckit.methods.run.PIECE_S` seconds so that a Stop waits no longer: (energies (n, W), acceptance),
        the numbers of one call. A sampler that is not (a GPU sweeper rebuilds its caches at every launch)
        sweeps the block in one call."""
        if not getattr(self.vmc, "exact_in_pieces", False):
            return timed_sweep(self.timer, self.vmc, n)
        w = self.vmc.walkers
        moves = w.n_walkers * w.n_particles  # proposed moves per sweep
        parts, accepted, done, size = [], 0, 0, 1
        while True:
            k = min(size, n - done)
            start = time.perf_counter()
            energies, acceptance = timed_sweep(self.timer, self.vmc, k)
            elapsed = time.perf_counter() - start
            parts.append(energies)
            # the integer count of accepted moves back from its ratio (exact: far below 2^52 moves), so that
            # the block's acceptance is count / proposed as in one call
            accepted += round(float(acceptance) * k * moves)
            done += k
            if done >= n:
                break
            size = max(1, min(8 * k, int(k * PIECE_S / max(elapsed, 1e-6))))
            yield "block", done, n
        return (parts[0] if len(parts) == 1 else np.concatenate(parts)), accepted / (n * moves)

    def _add_density(self) -> None:
        """The walkers' positions into the density histogram (a GPU sampler's walkers are brought to the host). With
        ``analysis="async"`` a worker thread adds a copy of them while the sampler goes on; the histogram sees the
        same samples in the same order, so the numbers are those of a synchronous run."""
        with self.timer("transfers"):
            self.vmc.sync()
        if self.config.analysis == "sync":
            with self.timer("density"):
                self.density.add(self.walkers.positions)
            return
        positions = self.walkers.positions.copy()  # the sampler moves the walkers on while the worker reads these
        self._wait_for_analysis()  # the previous sample first: the histogram's order is the synchronous one
        if self._analysis_pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._analysis_pool = ThreadPoolExecutor(1, thread_name_prefix="qmckit-analysis")
        self._analysis = self._analysis_pool.submit(self._histogram, positions)

    def _histogram(self, positions) -> None:
        """The worker's part of an asynchronous analysis (its time is the profile's "masked" entry)."""
        with self.timer("masked density"):
            self.density.add(positions)

    def _wait_for_analysis(self) -> None:
        """Wait for the worker's pending histogram (the time the sampler waits for it is "analysis wait")."""
        pending, self._analysis = getattr(self, "_analysis", None), None
        if pending is not None:  # a failure in the worker is raised here, once
            with self.timer("analysis wait"):
                pending.result()

    def _finite(self, series: np.ndarray) -> np.ndarray:
        """``series`` (the energies), or a FloatingPointError that says where ψ_T failed: an energy that is NaN
        or ±inf has no mean, and no estimate is better than a silent NaN."""
        bad = int(np.count_nonzero(~np.isfinite(series)))
        if bad:
            raise FloatingPointError(f"the local energy is not finite at {bad} of {series.size} measured steps: ψ_T "
                                     f"vanishes or overflows with these parameters ({self.system!r})")
        return series

    # --- results ------------------------------------------------------------------------------
    def result(self) -> dict:
        """The JSON-ready summary of the run (the CLI/JSON contract, docs/architecture.md)."""
        start = time.perf_counter()
        cfg = self.config
        estimates, run_warnings = self.estimates_and_warnings()
        out = {
            "system": cfg.system,
            "method": cfg.method,
            "params": dict(cfg.params),
            "seed": int(cfg.seed),
            "backend": self.backend,
            "sampler": cfg.sampler,
            "dt": cfg.dt if cfg.sampler == "drift" else None,
            "step": self.vmc.step if cfg.sampler != "drift" else None,
            "walkers": int(cfg.walkers),
            "steps": int(cfg.steps),
            "equilibration": int(cfg.equilibration),
            "energy_unit": self.system.energy_unit,
            "estimates": {name: est.to_dict() for name, est in estimates.items()},
            "acceptance": float(self.acceptance),
            "wall_s": self.wall_s,
            "warnings": run_warnings,
        }
        if variant_flags(**cfg.variant_options()):
            out["seed_variants"] = cfg.variant_options()
        if cfg.dtype != "float64":  # a reduced-precision run says so
            out["dtype"] = cfg.dtype
        out.update(self._extra_result())
        if self.density is not None and self.blocks_done:
            out["density"] = density_summary(self.density, self.series_of("density"))
        self.timer.set("analysis", time.perf_counter() - start)
        out["profile"] = self.profile()
        return out

    def _extra_result(self) -> dict:
        return {}

    # --- checkpoints --------------------------------------------------------------------------
    def _state(self) -> dict:
        return {}

    def _restore_state(self, state: dict) -> None:
        pass

    def _sync(self) -> None:
        self.vmc.sync()  # a GPU run's walkers live on the device

    def _checkpoint_attrs(self) -> dict:
        return {"step": self.vmc.step, "state": self._state(), "cache_layout": self.system.cache_layout}

    def _save_state(self, f) -> None:
        self.walkers.save(f.create_group("walkers"))
        self._save_arrays(f)

    def _save_arrays(self, f) -> None:
        pass

    def _load_arrays(self, f) -> None:
        pass


class VMCRun(_Run):
    """A VMC run from a :class:`RunConfig`; iterate :meth:`blocks` (or call :meth:`run`) then :meth:`result`."""

    method = "vmc"
    SERIES = ("energy_mean", "energy_var", "acceptance")

    @property
    def driver(self):
        return self.vmc

    def __init__(self, config: RunConfig, checkpoint_path=None):
        super().__init__(config, checkpoint_path)
        # systems with more estimators than E_L (helium: V, T_lap, T_grad) measure them all at once
        self.observables = self.system.capabilities.observables
        if self.observables and self.backend == "cuda":
            require(self.system, "observables_gpu", "VMC on backend cuda (the observables are measured there)")
        self.series_names += tuple(f"obs_{name}" for name in self.observables)
        self.series.update({f"obs_{name}": [] for name in self.observables})

    def _measured_sweeps(self, n: int):
        """``n`` measurements, each after ``measure_every`` sweeps, as pieces: returns (energies (n, W),
        extra (n, W, K), acceptance)."""
        every = self.config.measure_every
        if not self.observables:
            if every == 1:
                energies, acceptance = yield from self._sweeps_in_pieces(n)
                return energies, None, acceptance
            rows, accepted = [], 0.0
            for k in range(n):
                _, acc_skip = timed_sweep(self.timer, self.vmc, every - 1, measure=False)
                part, acc = timed_sweep(self.timer, self.vmc, 1)
                rows.append(part[0])
                accepted += acc_skip * (every - 1) + acc
                if k + 1 < n:
                    yield "block", k + 1, n
            return np.array(rows), None, accepted / (n * every)
        values, accepted = [], 0.0
        for k in range(n):
            _, acc = timed_sweep(self.timer, self.vmc, every, measure=False)
            with self.timer("measurements"):
                values.append(self.vmc.observables())
            accepted += acc
            if k + 1 < n:
                yield "block", k + 1, n
        values = np.array(values)  # (n, W, 1 + K)
        return values[:, :, 0], values[:, :, 1:], accepted / n

    def _sweep_pieces(self, sweeps: int):
        extra = None
        if self.density is None:
            energies, extra, acceptance = yield from self._measured_sweeps(sweeps)
        else:
            chunks, extras, accepted, done = [], [], 0.0, 0
            while done < sweeps:
                n = min(self.config.density_every, sweeps - done)
                if self.observables:  # measured apart from the sweep (helium's estimators), as without a density
                    part, part_extra, acc = yield from self._measured_sweeps(n)
                    extras.append(part_extra)
                else:
                    part, acc = timed_sweep(self.timer, self.vmc, n)
                self._add_density()
                chunks.append(part)
                accepted += acc * n
                done += n
                if done < sweeps:
                    yield "block", done, sweeps
            energies, acceptance = np.concatenate(chunks), accepted / sweeps
            extra = np.concatenate(extras) if extras else None
        var = energies.var(axis=1, ddof=1) if energies.shape[1] > 1 else np.zeros(sweeps)
        records = {"energy_mean": energies.mean(axis=1), "energy_var": var, "acceptance": [acceptance]}
        for k, name in enumerate(self.observables):
            records[f"obs_{name}"] = extra[:, :, k].mean(axis=1)
        return records

    def energy_series(self) -> np.ndarray:
        """Walker-averaged energy per particle (or per the system's normalisation) of every sweep."""
        return self.series_of("energy_mean") / self.system.energy_scale()

    def estimates(self) -> dict:
        series = self._finite(self.energy_series())
        if not series.size:
            return {}
        out = {self.system.energy_key: estimate(series),
               "energy_variance": estimate(self.series_of("energy_var"))}
        for name in self.observables:
            out[name] = estimate(self.series_of(f"obs_{name}") / self.system.energy_scale())
        return out

    @property
    def acceptance(self) -> float:
        # blocks differ in length only in the last one; weight each block by its sweeps
        acc, sizes = self.series_of("acceptance"), np.array([len(p) for p in self.series["energy_mean"]])
        return float(np.dot(acc, sizes) / sizes.sum()) if sizes.size else float("nan")


class DMCRun(_Run):
    """A DMC run: VMC equilibration, ``dmc_equilibration`` unrecorded DMC steps, then blocks."""

    method = "dmc"
    SERIES = ("mixed_energy", "weight", "population", "trial_energy", "killed", "copied", "removed",
              "acceptance")

    def __init__(self, config: RunConfig, checkpoint_path=None):
        super().__init__(config, checkpoint_path)
        self.dmc: DMC | None = None
        self.fixed_population: int | None = None  # the DMC's (a part of a split run sets it: qmckit.scans.split)

    def _make_dmc(self) -> DMC:
        dmc = DMC(self.system, self.vmc.walkers, dt=self.config.dt, target_walkers=self.config.target_walkers,
                  feedback_time=self.config.feedback_time, drift_cap=self.config.drift_cap,
                  energy_cap=self.config.energy_cap, seed=self._branch_seq, driver=self.vmc,
                  effective_time_step=self.config.effective_time_step)
        dmc.fixed_population = self.fixed_population
        dmc.timer = self.timer
        return dmc

    def _after_equilibration_pieces(self):
        self.dmc = self._make_dmc()
        self.vmc = self.dmc.driver
        # while the walkers relax from the VMC to the DMC distribution, hold the population on
        # a short leash (E_ref = the last step's energy, feedback over two steps); those steps
        # are not recorded, so the stronger population-control bias does not matter
        feedback, reference = self.dmc.feedback_time, self.dmc.reference_time
        self.dmc.feedback_time = self.dmc.reference_time = 2 * self.config.dt
        total = self.config.dmc_equilibration
        for k in range(total):
            self.dmc.step()
            if k + 1 < total:  # a Stop may pause between steps (the leash stays on until the last one)
                yield "DMC equilibration", k + 1, total
        self.dmc.feedback_time, self.dmc.reference_time = feedback, reference

    def _sweep_pieces(self, steps: int):
        records = []
        for k in range(steps):
            records.append(self.dmc.step())
            if self.density is not None and (k + 1) % self.config.density_every == 0:
                self._add_density()
            if k + 1 < steps:
                yield "block", k + 1, steps
        return {name: [getattr(r, name) for r in records] for name in self.SERIES}

    def _restore_progress(self, f, attrs: dict) -> None:
        super()._restore_progress(f, attrs)
        if self.dmc is not None:  # made by _restore_state with the fresh timer: it times into the restored one
            self.dmc.timer = self.timer

    def energy_series(self) -> np.ndarray:
        """Mixed-estimator energy per particle of every recorded DMC step."""
        return self.series_of("mixed_energy") / self.system.energy_scale()

    def estimates(self) -> dict:
        series = self._finite(self.energy_series())
        if not series.size:
            return {}
        out = {self.system.energy_key: estimate(series, weights=self.series_of("weight"))}
        with warnings.catch_warnings():  # diagnostics of the population control: no warnings about their error bars
            warnings.simplefilter("ignore", ShortSeriesWarning)
            out["population"] = estimate(self.series_of("population").astype(float))
            out["trial_energy"] = estimate(self.series_of("trial_energy") / self.system.energy_scale())
        return out

    @property
    def acceptance(self) -> float:
        acc = self.series_of("acceptance")
        return float(acc.mean()) if acc.size else float("nan")

    def _health(self) -> list[str]:
        lines = []
        removed = int(self.series_of("removed").sum())
        if removed:
            lines.append(f"{removed} walkers became non-finite and were removed (dt too large, or a fault in ψ_T)")
        hits = int(self.dmc.cap_warnings if self.dmc else 0)
        if hits:
            lines.append(f"the population exceeded max_walkers at {hits} steps and was thinned (check dt, the trial "
                         f"function or the energy cap)")
        population = self.series_of("population")
        target = int(self.config.target_walkers)
        if population.size and population.min() < COLLAPSE_FRACTION * target:
            lines.append(f"the population fell to {int(population.min())} walkers (target {target}): the estimates "
                         f"carry a large population-control bias")
        return lines

    def _extra_result(self) -> dict:
        removed = int(self.series_of("removed").sum())
        return {"target_walkers": int(self.config.target_walkers),
                "dmc_equilibration": int(self.config.dmc_equilibration),
                "walkers_final": int(self.walkers.n_walkers),
                "killed": int(self.series_of("killed").sum()), "copied": int(self.series_of("copied").sum()),
                "nonfinite_removed": removed, "population_cap_hits": int(self.dmc.cap_warnings if self.dmc else 0),
                "tau_eff": self.dmc.tau_eff if self.dmc else None,
                "effective_time_step": bool(self.config.effective_time_step),
                "energy_cut": self.dmc.energy_cut() if self.dmc and self.dmc.energy_cap is not False else None}

    def _state(self) -> dict:
        if self.dmc is None:
            return {}
        return {"reference_energy": self.dmc.reference_energy, "trial_energy": self.dmc.trial_energy,
                "cap_warnings": self.dmc.cap_warnings, "start_sigma": self.dmc.start_sigma,
                "best_sums": list(self.dmc.best_sums), "diffusion_sums": list(self.dmc.diffusion_sums)}

    def _save_arrays(self, f) -> None:
        if self.dmc is not None:
            f.create_dataset("dmc_energies", data=self.dmc.energies)
            f.create_dataset("dmc_branch_states", data=self.dmc.branch_states)

    def _restore_state(self, state: dict) -> None:
        if state:
            self.dmc = self._make_dmc()
            self.vmc = self.dmc.driver
            self.dmc.reference_energy = state["reference_energy"]
            self.dmc.trial_energy = state["trial_energy"]
            self.dmc.cap_warnings = state["cap_warnings"]
            self.dmc.start_sigma = state.get("start_sigma", self.dmc.start_sigma)
            self.dmc.best_sums = list(state.get("best_sums", [self.dmc.reference_energy, 1.0]))
            self.dmc.diffusion_sums = list(state.get("diffusion_sums", [0.0, 0.0]))

    def _load_arrays(self, f) -> None:
        if self.dmc is not None:
            self.dmc.energies = np.array(f["dmc_energies"])
            self.dmc.branch_states = np.array(f["dmc_branch_states"])


RUNS = {"vmc": VMCRun, "dmc": DMCRun}


def make_run(config, checkpoint_path=None) -> Run:
    """The run of ``config``: a :class:`RunConfig` gives the :class:`VMCRun` or :class:`DMCRun` of its method,
    or for a lattice system the lattice run of :meth:`RunConfig.lattice_config`; a
    :class:`~qmckit.methods.lattice_vmc.LatticeRunConfig` gives a lattice run."""
    if isinstance(config, RunConfig):
        if system_class(config.system).kind != "lattice":
            return RUNS[config.method](config, checkpoint_path=checkpoint_path)
        config = config.lattice_config()
    from .methods.lattice_vmc import LatticeRun, LatticeRunConfig

    if isinstance(config, LatticeRunConfig):
        return LatticeRun(config, checkpoint_path=checkpoint_path)
    raise TypeError(f"make_run needs a RunConfig or LatticeRunConfig, got {type(config).__name__}")


def resume_run(path) -> Run:
    """Continue the run whose checkpoint is at ``path`` (and keep checkpointing there): a VMC or DMC
    run of continuum walkers, or a lattice run (:func:`qmckit.methods.lattice_vmc.resume_lattice_run`)."""
    with ckpt.read_checkpoint(path) as f:
        attrs = ckpt.read_attrs(f)
        if attrs.get("format") == LATTICE_CHECKPOINT_FORMAT:
            from .methods.lattice_vmc import resume_lattice_run

            f.close()
            return resume_lattice_run(path)
        if attrs.get("format") != CHECKPOINT_FORMAT:
            raise ckpt.CheckpointError(f"resume: {path} is not a qmckit run checkpoint")
        stored = dict(attrs["config"])
        if stored.get("analysis") == "async" and usable_cores() < 2:  # the same numbers either way
            warnings.warn("resume: this process may use one core, so the run goes on with analysis sync")
            stored["analysis"] = "sync"
        config = RunConfig(**stored)
        run = make_run(config, checkpoint_path=path)
        run.vmc.walkers = Walkers.load(f["walkers"])  # the population may differ from the start
        if attrs.get("cache_layout", 1) != run.system.cache_layout:
            # written by a version whose cache rows meant something else: start them from nothing (every
            # block rebuilds its caches from the positions anyway; a zeroed row keeps no orbital rows either)
            run.vmc.walkers.caches[...] = 0.0
        run.vmc.step = attrs["step"]
        run._restore_state(attrs["state"])
        run._load_arrays(f)
        run._restore_progress(f, attrs)
    return run


def time_step_series(config: RunConfig, dts, simulated_time: float, progress=None) -> list[dict]:
    """Run ``config`` at each Δτ in ``dts`` for the same simulated time (steps = ⌈time/Δτ⌉), as
    study 002 does, and return the result dictionaries (each with its ``dt``)."""
    results = []
    for k, dt in enumerate(dts):
        steps = max(1, math.ceil(simulated_time / dt))
        cfg = RunConfig(**(asdict(config) | {"dt": float(dt), "steps": steps, "block": None,
                                             "equilibration": None, "dmc_equilibration": None}))
        results.append(make_run(cfg).run())
        if progress is not None:
            progress(k + 1, len(dts))
    return results

