"""A producer/consumer load-masking pipeline (study 004, §4.4 and Fig. 3), and the m-scan experiment.

The generator advances the Markov chains by m macroupdates and hands over a **copy** of the
configurations (one *writeout*); the analysis consumes writeouts. :func:`run_pipeline` runs them

* ``mode="sync"``: generate, then analyse, in the calling thread — Eq. 11, ``t_step = m t_G + t_A``;
* ``mode="async"``: the generator runs in a worker thread feeding a bounded queue while the calling
  thread analyses — Eq. 13, ``t_step = max(m t_G, t_A)``. The queue holds ``depth`` writeouts
  (default 2: double buffering, like the study's separate host-memory slots), so the generator is
  at most ``depth + 1`` writeouts ahead of the one being analysed (``depth`` queued, one finished and
  waiting for a slot); memory stays bounded and a slow analysis throttles the generator.

**The GIL.** Two Python threads only overlap if both sides spend their time with the GIL released.
numba kernels compiled with ``@njit(nogil=True)`` release it for the duration of the call, numpy
releases it in most array operations (copies included), and a CUDA kernel launch returns at once
(the GPU computes while the host thread analyses). Pure-Python work on either side serialises the
two threads and the "async" mode then gains nothing.

The generator must return an array that it will not modify afterwards (``positions.copy()``): the
pipeline does not copy. Exceptions on either side stop both and are re-raised in the caller.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .masking import InverseFit, ThresholdFit, fit_a_plus_b_over_m, fit_masked_threshold
from .timers import PhaseTimer

__all__ = ["MaskingScan", "PipelineResult", "masking_scan", "measure_phase_times", "run_pipeline"]

MODES = ("sync", "async")
_DONE = object()


@dataclass(frozen=True)
class PipelineResult:
    """Timings of one pipeline run (seconds).

    wall_s               total wall time, first generate to last analysis
    generate_s           sum of the generate() calls
    analyse_s            sum of the analyse() calls
    generate_idle_s      wall_s − generate_s: the generator (the "GPU") not working
    analyse_idle_s       wall_s − analyse_s: the analysis side (the CPU) not working
    queue_wait_s         time the analysis spent waiting for a writeout (async; 0 for sync)
    put_wait_s           time the generator spent blocked on a full queue (async; 0 for sync)
    outputs              the values analyse() returned, in order (None unless ``keep_outputs``)
    """

    mode: str
    n_writeouts: int
    wall_s: float
    generate_s: float
    analyse_s: float
    generate_idle_s: float
    analyse_idle_s: float
    queue_wait_s: float = 0.0
    put_wait_s: float = 0.0
    outputs: list | None = field(default=None, repr=False)

    @property
    def overlap_s(self) -> float:
        """generate_s + analyse_s − wall_s: the time both sides worked at once (≈ 0 for sync)."""
        return self.generate_s + self.analyse_s - self.wall_s

    @property
    def masked_fraction(self) -> float:
        """overlap_s / min(generate_s, analyse_s): 1 when the shorter side is fully hidden."""
        shorter = min(self.generate_s, self.analyse_s)
        return max(0.0, self.overlap_s) / shorter if shorter > 0 else float("nan")

    def __str__(self):
        return (f"{self.mode}: {self.n_writeouts} writeouts in {self.wall_s:.3f} s "
                f"(generate {self.generate_s:.3f} s, analyse {self.analyse_s:.3f} s, "
                f"idle: generator {self.generate_idle_s:.3f} s, analysis {self.analyse_idle_s:.3f} s)")


def _check(n_writeouts, mode, depth):
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if int(n_writeouts) != n_writeouts or n_writeouts < 0:
        raise ValueError(f"n_writeouts must be a non-negative integer, got {n_writeouts!r}")
    if int(depth) != depth or depth < 1:
        raise ValueError(f"depth must be an integer ≥ 1, got {depth!r}")


def run_pipeline(generate: Callable[[], Any], analyse: Callable[[Any], Any], n_writeouts: int,
                 mode: str = "async", depth: int = 2, keep_outputs: bool = False,
                 timer: PhaseTimer | None = None) -> PipelineResult:
    """Generate ``n_writeouts`` writeouts and analyse each one, synchronously or masked.

    generate     ``generate()`` → one writeout (an array the generator will not touch again); the
                 caller closes over m, the macroupdates per writeout
    analyse      ``analyse(writeout)`` → anything (kept in ``outputs`` with ``keep_outputs=True``)
    mode         "sync": both in the calling thread; "async": generator in a worker thread
    depth        queue capacity in writeouts (async, ≥ 1, default 2): how far the generator may run ahead
    timer        an optional :class:`PhaseTimer` that also receives the "generate", "analyse",
                 "queue_wait" and "put_wait" phases

    Returns a :class:`PipelineResult`. See the module docstring for the GIL requirement.
    """
    _check(n_writeouts, mode, depth)
    n = int(n_writeouts)
    own = PhaseTimer()
    outputs: list | None = [] if keep_outputs else None

    def record(name, seconds):
        own.add(name, seconds)
        if timer is not None:
            timer.add(name, seconds)

    clock = time.perf_counter
    if mode == "sync":
        start = clock()
        for _ in range(n):
            t0 = clock()
            item = generate()
            t1 = clock()
            out = analyse(item)
            t2 = clock()
            record("generate", t1 - t0)
            record("analyse", t2 - t1)
            if outputs is not None:
                outputs.append(out)
        wall = clock() - start
    else:
        slots: queue.Queue = queue.Queue(maxsize=int(depth))
        stop = threading.Event()
        failure: list[BaseException] = []

        def put(item) -> bool:
            t0 = clock()
            try:
                while True:
                    try:
                        slots.put(item, timeout=0.05)
                        return True
                    except queue.Full:
                        if stop.is_set():
                            return False
            finally:
                record("put_wait", clock() - t0)

        def producer():
            try:
                for _ in range(n):
                    if stop.is_set():
                        return
                    t0 = clock()
                    item = generate()
                    record("generate", clock() - t0)
                    if not put(item):
                        return
            except BaseException as exc:  # handed to the calling thread
                failure.append(exc)
                put(_DONE)

        worker = threading.Thread(target=producer, name="qmckit-generator", daemon=True)
        start = clock()
        worker.start()
        try:
            for _ in range(n):
                t0 = clock()
                item = slots.get()
                record("queue_wait", clock() - t0)
                if item is _DONE:
                    raise failure[0]
                t0 = clock()
                out = analyse(item)
                record("analyse", clock() - t0)
                if outputs is not None:
                    outputs.append(out)
            wall = clock() - start
        finally:
            stop.set()
            worker.join()
    gen, ana = own.total("generate"), own.total("analyse")
    return PipelineResult(mode=mode, n_writeouts=n, wall_s=wall, generate_s=gen, analyse_s=ana,
                          generate_idle_s=max(0.0, wall - gen), analyse_idle_s=max(0.0, wall - ana),
                          queue_wait_s=own.total("queue_wait"), put_wait_s=own.total("put_wait"),
                          outputs=outputs)


# --- the Fig. 3 experiment ---------------------------------------------------------------------------------------

def measure_phase_times(generate_factory: Callable[[int], Callable[[], Any]], analyse: Callable[[Any], Any],
                        m: int = 1, repeats: int = 5) -> tuple[float, float]:
    """Time the two sides alone, one thread: (t_G per macroupdate, t_A per analysis), in seconds.

    ``generate_factory(m)`` is called once; its generator runs ``repeats`` times (after one warm-up
    call, which also triggers JIT compilation) and each writeout is analysed. The minimum over
    repeats is reported, the usual estimate of the undisturbed cost. α = t_A/t_G.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be ≥ 1, got {repeats!r}")
    generate = generate_factory(m)
    analyse(generate())  # warm-up (compilation, caches)
    t_g, t_a = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        item = generate()
        t1 = time.perf_counter()
        analyse(item)
        t2 = time.perf_counter()
        t_g.append(t1 - t0)
        t_a.append(t2 - t1)
    return min(t_g) / m, min(t_a)


@dataclass
class MaskingScan:
    """Total wall time against the analysis period m at a fixed number of macroupdates (Fig. 3).

    m, n_writeouts    the periods and the writeouts per run (total_macroupdates / m)
    wall              {mode: array of wall times (s), one per m (minimum over repeats)}
    runs              {mode: [PipelineResult, …]} (the fastest repeat of each m)
    """

    m: np.ndarray
    n_writeouts: np.ndarray
    total_macroupdates: int
    wall: dict[str, np.ndarray]
    runs: dict[str, list[PipelineResult]]

    def fit_sync(self) -> InverseFit:
        """``a + b/m`` through the synchronous curve: a ≈ K t_G, b ≈ K t_A, b/a ≈ α."""
        return fit_a_plus_b_over_m(self.m, self.wall["sync"])

    def fit_async(self) -> ThresholdFit:
        """The threshold fit of the asynchronous curve: m* ≈ α."""
        return fit_masked_threshold(self.m, self.wall["async"])

    def as_dict(self) -> dict:
        return {"m": self.m.tolist(), "n_writeouts": self.n_writeouts.tolist(),
                "total_macroupdates": self.total_macroupdates,
                "wall_s": {k: v.tolist() for k, v in self.wall.items()}}


def masking_scan(generate_factory: Callable[[int], Callable[[], Any]], analyse: Callable[[Any], Any],
                 m_values: Sequence[int], total_macroupdates: int, modes: Sequence[str] = MODES,
                 repeats: int = 1, depth: int = 2, warmup: bool = True,
                 progress: Callable[[str], None] | None = None) -> MaskingScan:
    """Run the load-masking experiment: for every m, K/m writeouts of m macroupdates, in each mode.

    generate_factory   ``generate_factory(m)`` → a fresh ``generate()`` that performs m macroupdates
                       per call and returns a copy of the configurations (swap in any kernel: a
                       synthetic workload, the helium-4 sweep, a GPU persistent kernel …)
    analyse            ``analyse(writeout)``
    m_values           analysis periods; each must divide ``total_macroupdates`` so that every run
                       does exactly the same generation work (study 004 uses divisors of 9240)
    repeats            runs per (m, mode); the fastest is kept
    """
    m_values = np.asarray([int(m) for m in m_values])
    K = int(total_macroupdates)
    if m_values.size == 0 or np.any(m_values < 1) or np.any(K % m_values):
        raise ValueError(f"every m must be a positive divisor of total_macroupdates = {K}, got {m_values.tolist()}")
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"modes must be among {', '.join(MODES)}, got {mode!r}")
    if warmup:  # compile and touch everything once, outside the timings
        gen = generate_factory(int(m_values[0]))
        analyse(gen())
    wall = {mode: np.empty(m_values.size) for mode in modes}
    runs: dict[str, list[PipelineResult]] = {mode: [] for mode in modes}
    for i, m in enumerate(m_values):
        for mode in modes:
            best = None
            for _ in range(max(1, int(repeats))):
                res = run_pipeline(generate_factory(int(m)), analyse, K // int(m), mode=mode, depth=depth)
                if best is None or res.wall_s < best.wall_s:
                    best = res
            wall[mode][i] = best.wall_s
            runs[mode].append(best)
            if progress is not None:
                progress(f"m = {m}: {best}")
    return MaskingScan(m=m_values, n_writeouts=K // m_values, total_macroupdates=K, wall=wall, runs=runs)
