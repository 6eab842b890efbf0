"""Named phase timers.

qmckit had no timer class before this one (the drivers time themselves inline with
``time.perf_counter()``); :class:`PhaseTimer` is the reusable form::

    timer = PhaseTimer()
    for block in range(n):
        with timer("generate"):
            configs = sweep(m)
        with timer("analyse"):
            energy(configs)
    print(timer)                 # phase, total s, calls, mean ms, share
    timer.totals["analyse"]      # seconds

It is thread-safe (the load-masking pipeline times both of its threads with one timer), phases may
nest, and :meth:`PhaseTimer.add` records an externally measured duration.
"""
from __future__ import annotations

import threading
import time

__all__ = ["PhaseTimer"]


class _Phase:
    """The context manager returned by ``PhaseTimer(name)``; ``elapsed`` holds the last duration."""

    __slots__ = ("_timer", "name", "elapsed", "_start")

    def __init__(self, timer: "PhaseTimer", name: str):
        self._timer = timer
        self.name = name
        self.elapsed = 0.0
        self._start = 0.0

    def __enter__(self):
        self._start = self._timer.clock()
        return self

    def __exit__(self, *exc):
        self.elapsed = self._timer.clock() - self._start
        self._timer.add(self.name, self.elapsed)
        return False


class PhaseTimer:
    """Accumulate wall time and call counts per named phase (``time.perf_counter`` by default)."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self._lock = threading.Lock()
        self._totals: dict[str, float] = {}
        self._counts: dict[str, int] = {}

    def __call__(self, name: str) -> _Phase:
        """``with timer("name"): …`` adds the block's wall time to phase ``name``."""
        return _Phase(self, str(name))

    phase = __call__

    def add(self, name: str, seconds: float, count: int = 1) -> None:
        """Record ``seconds`` (and ``count`` calls) for phase ``name``."""
        with self._lock:
            self._totals[name] = self._totals.get(name, 0.0) + float(seconds)
            self._counts[name] = self._counts.get(name, 0) + int(count)

    def total(self, name: str) -> float:
        """Accumulated seconds of phase ``name`` (0 if it never ran)."""
        with self._lock:
            return self._totals.get(name, 0.0)

    def count(self, name: str) -> int:
        with self._lock:
            return self._counts.get(name, 0)

    def mean(self, name: str) -> float:
        """Mean seconds per call of phase ``name`` (nan if it never ran)."""
        with self._lock:
            n = self._counts.get(name, 0)
            return self._totals.get(name, 0.0) / n if n else float("nan")

    @property
    def totals(self) -> dict[str, float]:
        """A copy of {phase: seconds}, in the order the phases first ran."""
        with self._lock:
            return dict(self._totals)

    @property
    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._totals.clear()
            self._counts.clear()

    def as_dict(self) -> dict[str, dict[str, float]]:
        """{phase: {"seconds", "calls", "mean_s"}} — JSON-friendly."""
        with self._lock:
            return {k: {"seconds": v, "calls": self._counts[k],
                        "mean_s": v / self._counts[k] if self._counts[k] else 0.0}
                    for k, v in self._totals.items()}

    def __str__(self):
        rows = self.as_dict()
        if not rows:
            return "PhaseTimer (no phases)"
        total = sum(r["seconds"] for r in rows.values())
        width = max(len(k) for k in rows)
        lines = [f"{'phase':<{width}}  {'total s':>9}  {'calls':>6}  {'mean ms':>9}  {'share':>6}"]
        for k, r in rows.items():
            share = r["seconds"] / total if total > 0 else 0.0
            lines.append(f"{k:<{width}}  {r['seconds']:9.4f}  {r['calls']:6d}  {1e3 * r['mean_s']:9.3f}  {share:6.1%}")
        return "\n".join(lines)

    def __repr__(self):
        return f"PhaseTimer({self.totals!r})"
