"""Helpers shared by the benchmark scripts. They run as ``python benchmarks/<script>.py``, so this folder
is on ``sys.path`` and ``from _common import …`` works: flushing log lines, a wall-clock budget, the CPU's model
name and the path of a results file."""
from __future__ import annotations

import os
import time
from pathlib import Path

from qmckit.perf.run_profile import cpu_model  # noqa: F401  (the results files name the CPU)


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


def results_stem(name: str) -> Path:
    """``$OUT/<name>`` (the device machine's output folder) or ``benchmarks/results/<name>``, the folder made; add the
    suffixes .json and .md."""
    out = Path(os.environ.get("OUT") or Path(__file__).parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    return out / name
