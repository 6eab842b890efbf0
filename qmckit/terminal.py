"""What the command line shows besides its result: progress on a terminal, and warnings kept short.

* :class:`Progress` draws a tqdm bar on stderr for a run's phases (equilibration, then the measured blocks) when
  stderr is a terminal and the output is not ``--json``; piped or in JSON mode it draws nothing.
* :func:`collected_warnings` gathers Python warnings (the reblocking notes of short series, above all) and, unless
  ``-v`` was given, prints one line counting them instead of each one. A run's own ``warnings`` (one line per
  problem, in its result) are always printed: they say when a number should not be trusted.
"""
from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager


UNITS = {"equilibration": "sweep", "DMC equilibration": "step", "blocks": "block", "points": "point"}  # what a phase counts


def interactive(json_output: bool = False, stream=None) -> bool:
    """True when progress should be drawn: stderr is a terminal and the output is not JSON."""
    stream = stream or sys.stderr
    return not json_output and hasattr(stream, "isatty") and stream.isatty()


class Progress:
    """A progress bar per phase: call it as ``progress(done, total, phase="…")``; ``close()`` at the end.

    ``phase`` names what is counted (e.g. ``"equilibration"``, ``"blocks"``); a new phase starts a new bar.
    Without a terminal (``enabled=False``) every call does nothing."""

    def __init__(self, enabled: bool, stream=None, mininterval: float = 0.1):
        self.enabled = enabled
        self.mininterval = mininterval  # seconds between redraws, however often the bar is called
        self.stream = stream or sys.stderr
        self._bar = None
        self._phase = None

    def __call__(self, done: int, total: int, phase: str = "blocks") -> None:
        if not self.enabled:
            return
        if phase != self._phase or self._bar is None:
            self.close()
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=f"qmckit: {phase}", unit=" " + UNITS.get(phase, "it"),
                             file=self.stream, leave=False, dynamic_ncols=True, mininterval=self.mininterval)
            self._phase = phase
        self._bar.total = total
        self._bar.update(done - self._bar.n)  # redrawn at most every mininterval

    def piece(self, phase: str, done: int, total: int) -> None:
        """A run's ``pieces`` callback: bars for the equilibration phases (a block's pieces are left to the
        per-block bar)."""
        if phase != "block":
            self(done, total, phase)

    def step(self, message: str) -> None:
        """One line saying what comes next (a study's stages), on a terminal only."""
        if self.enabled:
            self.close()
            print(f"qmckit: {message}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._phase = None


@contextmanager
def collected_warnings(verbose: bool, stream=None):
    """Collect Python warnings inside the block; print each (``verbose``) or one line counting them."""
    stream = stream or sys.stderr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    lines = []
    for w in caught:  # the same warning from many series: once
        line = f"qmckit: warning: {w.message}"
        if line not in lines:
            lines.append(line)
    if verbose:
        for line in lines:
            print(line, file=stream)
    elif caught:
        print(f"qmckit: {len(caught)} warning{'s' if len(caught) > 1 else ''} about error bars and settings hidden "
              "(-v shows them)", file=stream)
