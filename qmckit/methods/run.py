"""The one Run: what every QMC run of qmckit shares, whatever its sampler.

A run equilibrates, then runs blocks; each block appends one record per sweep (or DMC step) to named
series; an atomic HDF5 checkpoint is written after equilibration and after every block; ``blocks(stop)``
yields after each block and pauses cleanly when ``stop`` (a ``threading.Event``) is set; ``run(progress)``
runs to the end and returns the JSON-ready result. :class:`qmckit.runs.VMCRun` and
:class:`qmckit.runs.DMCRun` (continuum walkers, any sampler of :mod:`qmckit.samplers`) and
:class:`qmckit.methods.lattice_vmc.LatticeRun` (lattice chains) are this class with their own
``_equilibrate``, ``_block``, estimates and checkpoint state, so blocks, checkpoints and resume, progress
and Stop behave alike for all of them.

A subclass sets ``CHECKPOINT_FORMAT`` and ``series_names`` and implements

    _equilibrate()              the equilibration sweeps (and whatever must follow them), or
    _equilibration_pieces()     the same as a generator that yields (phase, done, total) between pieces of work
    _block(n) -> dict           n sweeps or steps: {series name: records of this block}, or
    _block_pieces(n)            the same as a generator that yields (phase, done, total) and returns the records
    _sync()                     bring device-held state to the host before a checkpoint
    _checkpoint_attrs() -> dict scalar state for the checkpoint's attributes
    _save_state(f)              arrays (walkers, chains, …) into the open HDF5 file ``f``
    estimates(), result(), acceptance
    _health() -> list[str]      (optional) one line for each problem of the run a user must know of

Pieces: a Stop is seen between pieces of work, not only between blocks. A run whose equilibration or block
is a generator of pieces (VMC and DMC runs of continuum walkers, lattice runs on the CPU) pauses there and,
on the next ``blocks`` or ``equilibrate`` call, goes on with the same generator, so a paused-and-continued
run gives the numbers of an uninterrupted one. Pieces are cut only where cutting changes no number (sweeps
of a sampler whose whole state lives in its walkers, DMC steps, lattice sweeps between inverse rebuilds).
The optional ``progress(phase, done, total)`` callback sees every piece: phase ``"equilibration"`` (VMC
sweeps), ``"DMC equilibration"`` (DMC steps) or ``"block"`` (sweeps or steps of the current block).

A result carries ``warnings``: those lines, acceptance below :data:`MIN_ACCEPTANCE`, and one line for all
error bars that rest on too short a series, naming the ``steps`` that would do (:meth:`Run.warnings`).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import asdict

import numpy as np

from .. import checkpoint as ckpt
from ..perf.run_profile import RunTimer, device_description, profile_dict
from ..stats.blocking import MIN_BLOCKS, ShortSeriesWarning

MIN_ACCEPTANCE = 1e-3  # below it the walkers hardly move: a run says so in its warnings
TAU_MARGIN = 2.0  # a short series underestimates its correlation time: suggest steps for this many times it
PIECE_S = 0.1  # wall seconds a piece of sweeps aims at (a Stop waits at most about one piece)
_STOPPED = object()  # what _advance returns when a Stop paused the pending work


def _round_up(x: float) -> int:
    """x rounded up to 1, 2 or 5 × a power of ten (a number of steps to suggest)."""
    if x <= 1:
        return 1
    power = 10 ** math.floor(math.log10(x))
    return int(next(m * power for m in (1, 2, 5, 10) if m * power >= x))


def reliable_length(n: int, tau: float) -> int:
    """The shortest series, at least ``n`` long, whose optimal blocking level (B³ > 2 n (2τ)², B a power of 2;
    :func:`qmckit.stats.optimal_block`) keeps :data:`MIN_BLOCKS` blocks, for correlation time ``tau``."""
    n = max(int(n), 2)
    while True:
        B = 2 ** math.ceil(math.log2(max(1.0, (8.0 * n * max(tau, 0.5) ** 2) ** (1.0 / 3.0))))
        if n // B >= MIN_BLOCKS:
            return n
        n = math.ceil(n * 1.25)


class Run:
    """Equilibration, blocks, series, atomic checkpoints, progress and Stop (see the module docstring)."""

    method = ""
    CHECKPOINT_FORMAT = ""

    def _start(self, config, checkpoint_path, series_names) -> None:
        self.config = config
        self.checkpoint_path = checkpoint_path
        if checkpoint_path is not None:
            ckpt.remove_stale_temporaries(checkpoint_path)  # a killed run's half-written checkpoint, never put in place
        self.series_names = tuple(series_names)
        self.series: dict[str, list[np.ndarray]] = {name: [] for name in self.series_names}
        self.equilibrated = False
        self.blocks_done = 0
        self.wall_s = 0.0
        self.timer = RunTimer()  # seconds per phase (qmckit.perf.run_profile): the result's "profile"
        self._pending = None  # the generator of the equilibration or block a Stop paused part-way

    # --- running ------------------------------------------------------------------------------
    def equilibrate(self, stop=None, progress=None) -> bool:
        """Run the equilibration, or what a Stop left of it; True once it is done, False if ``stop``
        paused it between two pieces (a later call goes on where it stopped: the same numbers).
        ``stop`` and ``progress`` as for :meth:`blocks`."""
        if self.equilibrated:
            return True
        if self._pending is None:
            self._pending = self._equilibration_pieces()
        start = time.perf_counter()
        try:
            finished = self._advance(stop, progress) is not _STOPPED
        finally:
            self.wall_s += time.perf_counter() - start
        if finished:
            self.equilibrated = True
            self.save_checkpoint()
        return finished

    def blocks(self, stop=None, progress=None):
        """Run the remaining blocks (after the equilibration), yielding ``(blocks_done, n_blocks)`` after each.

        ``stop`` is an optional ``threading.Event``; when set, the run pauses at the next piece of work
        (see the module docstring; the equilibration included) or block boundary, and calling ``blocks``
        again continues it with the numbers of an uninterrupted run. Checkpoints are written after the
        equilibration and after every block, never part-way. ``progress(phase, done, total)`` is called
        after every piece (often: keep it cheap).
        """
        if not self.equilibrate(stop, progress):
            return
        cfg = self.config
        while self.blocks_done < cfg.n_blocks:
            if self._pending is None:
                if stop is not None and stop.is_set():
                    return
                self._pending = self._block_pieces(min(cfg.block, cfg.steps - self.blocks_done * cfg.block))
            start = time.perf_counter()
            records = self._advance(stop, progress)
            if records is _STOPPED:
                self.wall_s += time.perf_counter() - start
                return
            for name in self.series_names:
                self.series[name].append(np.asarray(records[name]))
            self.blocks_done += 1
            self.wall_s += time.perf_counter() - start
            self.save_checkpoint()
            yield self.blocks_done, cfg.n_blocks

    def _advance(self, stop, progress):
        """Drive the pending generator to its end (its return value), or until ``stop`` is set after a piece
        (``_STOPPED``: the generator stays pending, and the next call goes on with it)."""
        pieces = self._pending
        try:
            while True:
                phase, done, total = next(pieces)
                if progress is not None:
                    progress(phase, done, total)
                if stop is not None and stop.is_set():
                    return _STOPPED
        except StopIteration as end:
            self._pending = None
            return end.value
        except BaseException:
            self._pending = None  # a failed piece cannot be continued
            raise

    @property
    def paused_part_way(self) -> bool:
        """Whether a Stop paused the run inside its equilibration or a block (the next call goes on there)."""
        return self._pending is not None

    def run(self, progress=None, pieces=None) -> dict:
        """Run to completion; ``progress(done, total)`` is called after every block, ``pieces(phase, done,
        total)`` after every piece of work (the equilibration's included; see :meth:`blocks`)."""
        for done, total in self.blocks(progress=pieces):
            if progress is not None:
                progress(done, total)
        return self.result()

    def estimates_and_warnings(self) -> tuple[dict, list[str]]:
        """(:meth:`estimates`, warnings): one line for each problem a user must know of (see the module
        docstring). The estimates' short-series warnings are gathered into one line instead of one per
        series; any other warning passes on."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            estimates = self.estimates()
        short = []
        for w in caught:
            if isinstance(w.message, ShortSeriesWarning):
                short.append(w.message)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        lines = []
        if short:
            steps, n = int(self.config.steps), max(w.n for w in short)
            tau = TAU_MARGIN * max(est.tau for est in estimates.values())
            suggested = _round_up(reliable_length(n, tau) * steps / n)
            lines.append(f"{len(short)} error bar{'s rest' if len(short) > 1 else ' rests'} on too short a series "
                         f"({steps} measured steps, fewer than {MIN_BLOCKS} independent blocks): run about "
                         f"steps = {suggested} (--steps) for reliable ones")
        acceptance = self.acceptance
        if acceptance < MIN_ACCEPTANCE:
            lines.append(f"acceptance {acceptance:.1e} is below {MIN_ACCEPTANCE:g}: the walkers hardly move, so the "
                         f"estimates mean little (lower dt or the step)")
        return estimates, lines + self._health()

    def warnings(self) -> list[str]:
        """The run's warnings (see :meth:`estimates_and_warnings`)."""
        return self.estimates_and_warnings()[1]

    def _health(self) -> list[str]:
        return []

    def profile(self) -> dict:
        """Where the run's time went, by phase (:func:`qmckit.perf.run_profile.profile_dict`): the result's "profile"."""
        return profile_dict(self.timer, self.wall_s, device_description(getattr(self, "backend", "cpu")))

    def series_of(self, name: str) -> np.ndarray:
        parts = self.series[name]
        return np.concatenate(parts) if parts else np.empty(0)

    # --- checkpoints --------------------------------------------------------------------------
    def save_checkpoint(self) -> None:
        """Write the run's whole state atomically to ``checkpoint_path`` (nothing when it is None)."""
        if self.checkpoint_path is None:
            return
        with self.timer("checkpoint"):
            self._sync()
            with ckpt.atomic_h5(self.checkpoint_path) as f:
                ckpt.write_attrs(f, {"format": self.CHECKPOINT_FORMAT, "config": asdict(self.config),
                                     "equilibrated": self.equilibrated, "blocks_done": self.blocks_done,
                                     **self._checkpoint_attrs(), "wall_s": self.wall_s, "profile": self.timer.state()})
                self._save_state(f)
                for name, parts in self.series.items():
                    group = f.create_group(f"series/{name}")
                    for k, part in enumerate(parts):
                        group.create_dataset(f"{k:06d}", data=part)

    def _restore_progress(self, f, attrs: dict) -> None:
        """The progress and series of a checkpoint opened as ``f`` with attributes ``attrs``."""
        self.equilibrated = attrs["equilibrated"]
        self.blocks_done = attrs["blocks_done"]
        self.wall_s = attrs["wall_s"]
        if "profile" in attrs:  # the phases of the run so far (a checkpoint of an older qmckit has none)
            self.timer = RunTimer(**attrs["profile"])
        for name in self.series_names:
            group = f[f"series/{name}"]
            self.series[name] = [np.array(group[key]) for key in sorted(group)]

    # --- what a run type provides ------------------------------------------------------------------
    def _equilibrate(self) -> None:
        raise NotImplementedError

    def _block(self, n: int) -> dict:
        raise NotImplementedError

    def _equilibration_pieces(self):
        """The equilibration as a generator of ``(phase, done, total)`` between pieces; by default
        :meth:`_equilibrate` in one piece."""
        self._equilibrate()
        return
        yield  # a generator that yields nothing

    def _block_pieces(self, n: int):
        """A block of ``n`` sweeps or steps as a generator of ``(phase, done, total)`` that returns the
        block's records; by default :meth:`_block` in one piece."""
        return self._block(n)
        yield  # a generator that yields nothing

    def _sync(self) -> None:
        pass

    def _checkpoint_attrs(self) -> dict:
        return {}

    def _save_state(self, f) -> None:
        pass

    def result(self) -> dict:
        raise NotImplementedError
