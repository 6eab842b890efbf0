"""Where a run's time goes: phase timers for the one Run (:mod:`qmckit.methods.run`) and the ``profile`` of its result.

Every run times its work by phase, in seconds of wall time:

=============  ==========================================================================================
sampling       the sampler's sweeps (VMC and DMC moves with the local energy they measure, equilibration
               included, cache rebuilds); on a GPU the measured sweeps' and DMC steps' kernels alone, timed with
               CUDA events (the equilibration's pieces count whole)
measurements   observables measured apart from the sweep (helium's estimators)
density        the one-body density histogram (``density``)
branching      DMC branching (weights, copies and kills, the walkers' gather on a device)
transfers      host↔device copies: a GPU sweep's call beyond its kernels (energies and counts back), walkers
               brought to the host (for a density or a checkpoint)
checkpoint     writing the atomic HDF5 checkpoints
analysis       the estimates of the result (reblocking, densities' summaries)
analysis wait  with ``analysis="async"``: the sampler waiting for the worker thread's histogram (the part of the
               analysis that masking did not hide)
other          the rest of the run's wall time (Python between the phases, series bookkeeping)
=============  ==========================================================================================

With ``analysis="async"`` the worker thread's own time is the profile's ``masked`` entry (seconds and calls): it
ran beside the phases above, so it is not a share of the run.

The result's ``profile`` gives each phase's seconds, fraction of the total and calls, the device, and the total (the
run's wall time plus its checkpoints and its analysis), so the fractions sum to 1. ``qmckit run … --profile`` prints
it as a table (:func:`format_profile`). The timers cost a clock read and a dictionary update per phase entry, a few
hundred nanoseconds against the milliseconds of a sweep or DMC step (``benchmarks/profile_overhead.py``).
"""
from __future__ import annotations

import os
import time

PHASES = ("sampling", "measurements", "density", "branching", "transfers", "checkpoint", "analysis", "analysis wait")
MASKED = "masked density"  # the worker thread's time (analysis="async"), beside the phases
OUTSIDE_WALL = ("checkpoint", "analysis")  # a run's wall_s excludes these (it times equilibration and blocks)


class RunTimer:
    """Seconds and calls per phase of one run. ``with timer("branching"): …`` or ``timer.add("sampling", seconds)``.
    Without a lock: the run's thread and its one analysis thread (``analysis="async"``) add to different phases, each
    addition is a dictionary update under the GIL, and readers take a snapshot (:func:`profile_dict`)."""

    clock = staticmethod(time.perf_counter)

    def __init__(self, totals: dict | None = None, counts: dict | None = None):
        self.totals = dict(totals or {})
        self.counts = dict(counts or {})

    def add(self, name: str, seconds: float, calls: int = 1) -> None:
        self.totals[name] = self.totals.get(name, 0.0) + seconds
        self.counts[name] = self.counts.get(name, 0) + calls

    def set(self, name: str, seconds: float, calls: int = 1) -> None:
        """Phase ``name`` took ``seconds`` in all (the result's analysis, timed anew at every call of ``result``)."""
        self.totals[name] = seconds
        self.counts[name] = calls

    def __call__(self, name: str) -> "_Phase":
        return _Phase(self, name)

    def state(self) -> dict:
        """{"totals": …, "counts": …}: what a checkpoint keeps, so that a resumed run's profile covers the whole run."""
        return {"totals": dict(self.totals), "counts": dict(self.counts)}


class NullTimer(RunTimer):
    """A timer that records nothing (to measure what the timers cost)."""

    def add(self, name: str, seconds: float, calls: int = 1) -> None:
        pass

    def set(self, name: str, seconds: float, calls: int = 1) -> None:
        pass


class _Phase:
    __slots__ = ("timer", "name", "start")

    def __init__(self, timer, name):
        self.timer = timer
        self.name = name

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.timer.add(self.name, time.perf_counter() - self.start)
        return False


def timed_sweep(timer: RunTimer, sampler, n: int, measure: bool = True):
    """``sampler.sweep(n, measure)``, its time added to ``sampling``; a GPU sampler that reports its kernels' own time
    (``last_kernel_s``, from CUDA events) has only that counted as sampling and the rest of the call as transfers."""
    start = time.perf_counter()
    out = sampler.sweep(n) if measure else sampler.sweep(n, measure=False)  # the sampler interface's two calls
    elapsed = time.perf_counter() - start
    kernel = getattr(sampler, "last_kernel_s", None)
    if kernel is None:
        timer.add("sampling", elapsed)
    else:
        kernel = min(kernel, elapsed)
        timer.add("sampling", kernel)
        timer.add("transfers", elapsed - kernel)
    return out


def device_description(backend: str) -> str:
    """The device a run computed on: the GPU's name for backend cuda, else the CPU's model and numba's thread count."""
    if backend == "cuda":
        try:
            from numba import cuda

            name = cuda.get_current_device().name
            return name.decode() if isinstance(name, bytes) else str(name)
        except Exception:  # noqa: BLE001  (the simulator, or no driver: say what ran)
            return "CUDA (simulator)" if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else "CUDA"
    import numba

    return f"{cpu_model()}, {numba.get_num_threads()} numba threads"


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo; ``platform.processor()`` or the machine type where there is none)."""
    import platform

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return model


def profile_dict(timer: RunTimer, wall_s: float, device: str) -> dict:
    """The result's ``profile``: ``{"device", "total_s", "phases": {name: {"seconds", "fraction", "calls"}}}`` with
    the phases of :data:`PHASES` that ran and ``other`` (the run's wall time not in a phase). Fractions of total_s."""
    totals, counts = dict(timer.totals), dict(timer.counts)  # a snapshot: an analysis thread may be adding to them
    inside = sum(s for name, s in totals.items() if name not in OUTSIDE_WALL and name != MASKED)
    outside = sum(totals.get(name, 0.0) for name in OUTSIDE_WALL)
    other = max(wall_s - inside, 0.0)
    total = max(wall_s, inside) + outside
    phases = {}
    for name in PHASES:
        if name in totals:
            s = totals[name]
            phases[name] = {"seconds": s, "fraction": s / total if total > 0 else 0.0, "calls": counts[name]}
    phases["other"] = {"seconds": other, "fraction": other / total if total > 0 else 0.0, "calls": 0}
    out = {"device": device, "total_s": total, "phases": phases}
    if MASKED in totals:
        out["masked"] = {"seconds": totals[MASKED], "calls": counts[MASKED]}
    return out


def format_profile(profile: dict) -> str:
    """A text table of a result's ``profile``: phase, seconds, share of the run, calls and a bar."""
    lines = [f"profile on {profile['device']}: {profile['total_s']:.3g} s",
             f"{'phase':<14}{'seconds':>10}{'share':>8}{'calls':>9}"]
    for name, row in profile["phases"].items():
        bar = "█" * round(30 * row["fraction"])
        lines.append(f"{name:<14}{row['seconds']:>10.4g}{100 * row['fraction']:>7.1f}%{row['calls']:>9}  {bar}")
    if "masked" in profile:
        lines.append(f"beside them, in the analysis thread: {profile['masked']['seconds']:.4g} s "
                     f"({profile['masked']['calls']} histograms)")
    return "\n".join(lines)
