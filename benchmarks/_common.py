"""Helpers shared by the benchmark scripts. They run as ``python benchmarks/<script>.py``, so this folder
is on ``sys.path`` and ``from _common import …`` works: flushing log lines, a wall-clock budget and the
CPU's model name for the results files."""
from __future__ import annotations

import platform
import time
from pathlib import Path


def log(*args):
    """print, flushed at once (device runs are read from a tail of their output)."""
    print(*args, flush=True)


class Budget:
    """A wall-clock budget of ``total`` seconds, counted from construction."""

    def __init__(self, total: float):
        self.t0 = time.perf_counter()
        self.total = total

    def left(self) -> float:
        return self.total - (time.perf_counter() - self.t0)

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (``platform.processor()`` where there is none, else "?")."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"
