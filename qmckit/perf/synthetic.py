"""Synthetic nogil workloads with a chosen cost, for pipeline tests and the load-masking notebook.

The cost is a dependent floating-point recurrence (``x ← x·c + d``, which the compiler can neither
vectorise nor remove because its result is used), so its duration is proportional to the iteration
count and it is real compute — no sleeping. Every kernel is ``@njit(nogil=True)``: two threads
running them overlap on two cores.

A :class:`SyntheticWorkload` stands in for a QMC code: ``generate_factory(m)`` returns a generator that
performs m "macroupdates" (each moving every coordinate a little and costing ``t_generate`` seconds)
and returns a copy of the configurations; ``analyse(configs)`` costs ``t_analyse`` seconds and returns a
number computed from the configurations. Replace both with real kernels (the helium-4 sweep and
energy) without changing the experiment code.
"""
from __future__ import annotations

import threading
import time

import numba as nb
import numpy as np

__all__ = ["SyntheticWorkload", "spin", "spin_rate", "thread_overlap"]


@nb.njit(nogil=True, cache=True)
def spin(n_iter, x):
    """``n_iter`` steps of a dependent recurrence starting from x; returns the final value."""
    for _ in range(n_iter):
        x = x * 0.9999999 + 1e-7
    return x


@nb.njit(nogil=True, cache=True)
def _advance(positions, n_macro, work, state):
    """m macroupdates: every coordinate takes a small pseudo-random step (an LCG in ``state[0]``),
    and each macroupdate spends ``work`` recurrence steps whose result feeds back into the positions."""
    flat = positions.reshape(-1)
    s = state[0]
    for _ in range(n_macro):
        for i in range(flat.size):
            s = (s * np.uint64(6364136223846793005) + np.uint64(1442695040888963407))
            flat[i] += 1e-3 * ((s >> np.uint64(11)) * (1.0 / 9007199254740992.0) - 0.5)
        x = spin(work, flat[0])
        flat[0] += 1e-12 * x
    state[0] = s


@nb.njit(nogil=True, cache=True)
def _analyse(positions, work):
    """A stand-in analysis: the mean squared coordinate, plus ``work`` recurrence steps."""
    flat = positions.reshape(-1)
    acc = 0.0
    for i in range(flat.size):
        acc += flat[i] * flat[i]
    acc /= flat.size
    return acc + 1e-12 * spin(work, acc)


def spin_rate(duration: float = 0.03, repeats: int = 3) -> float:
    """Recurrence steps per second of :func:`spin` on one core of this machine (best of ``repeats``)."""
    spin(10, 0.5)  # compile / load from cache
    n = 100_000
    while True:  # grow n until one call takes a measurable time
        t0 = time.perf_counter()
        spin(n, 0.5)
        dt = time.perf_counter() - t0
        if dt > duration / 4 or n > 1 << 34:
            break
        n *= 4
    n = max(1, int(n * duration / max(dt, 1e-9)))
    best = float("inf")
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        spin(n, 0.5)
        best = min(best, time.perf_counter() - t0)
    return n / best


def thread_overlap(seconds: float = 0.04, rate: float | None = None, repeats: int = 3) -> float:
    """How many nogil threads' worth of compute two threads get right now: ≈ 2 on two free cores,
    ≈ 1 when only one core is available (other processes, a one-core machine). Best of ``repeats``.

    Load masking on the CPU needs this to be near 2; use it to tell a busy machine from a broken
    pipeline.
    """
    rate = spin_rate() if rate is None else float(rate)
    n = max(1, int(seconds * rate))
    spin(n, 0.5)
    best = 0.0
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        spin(n, 0.5)
        one = time.perf_counter() - t0
        worker = threading.Thread(target=spin, args=(n, 0.5))
        t0 = time.perf_counter()
        worker.start()
        spin(n, 0.5)
        worker.join()
        two = time.perf_counter() - t0
        best = max(best, 2.0 * one / two)
    return best


class SyntheticWorkload:
    """A generator/analysis pair with chosen costs (seconds per macroupdate, seconds per analysis).

    shape    the configuration array, (walkers, particles, 3) by default
    rate     recurrence steps per second (measured with :func:`spin_rate` when not given)
    """

    def __init__(self, t_generate: float, t_analyse: float, shape=(8, 64, 3), seed: int = 0,
                 rate: float | None = None):
        if not (t_generate >= 0 and t_analyse >= 0):
            raise ValueError("t_generate and t_analyse must be non-negative")
        self.rate = float(rate) if rate is not None else spin_rate()
        self.t_generate, self.t_analyse = float(t_generate), float(t_analyse)
        self.generate_work = int(round(self.t_generate * self.rate))
        self.analyse_work = int(round(self.t_analyse * self.rate))
        self.shape = tuple(shape)
        self.seed = int(seed)
        _advance(np.zeros(self.shape), 1, 1, np.ones(1, np.uint64))  # compile now, not in a timing
        _analyse(np.zeros(self.shape), 1)

    @property
    def alpha(self) -> float:
        """The nominal α = t_A/t_G."""
        return self.t_analyse / self.t_generate

    def generate_factory(self, m: int):
        """A fresh chain (same seed every time) whose ``generate()`` performs m macroupdates and
        returns a copy of the configurations."""
        m = int(m)
        rng = np.random.default_rng(self.seed)
        positions = rng.random(self.shape)
        state = np.array([rng.integers(1, 2**63)], dtype=np.uint64)
        work = self.generate_work

        def generate():
            _advance(positions, m, work, state)
            return positions.copy()

        return generate

    def analyse(self, configs) -> float:
        return float(_analyse(configs, self.analyse_work))

    def __repr__(self):
        return (f"SyntheticWorkload(t_generate={self.t_generate:g}, t_analyse={self.t_analyse:g}, "
                f"shape={self.shape}, rate={self.rate:.3g}/s)")
