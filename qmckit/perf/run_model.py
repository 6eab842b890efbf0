"""The modified Amdahl law of study 004 applied to one run's own profile: what a faster sampler could still buy.

From a run's ``profile`` (:mod:`qmckit.perf.run_profile`) the run's time splits into study 004's three parts
(:mod:`qmckit.perf.amdahl`), as fractions of the run:

    P   sampling: the part an accelerator speeds up M-fold (on a GPU run, the GPU's kernels),
    S   transfers: tied to the accelerator but not parallel (host↔device copies, at the reference speed),
    R   everything else: measurements, the density, branching, checkpoints, analysis and the rest (on the CPU).

:func:`report` gives the accelerated fraction P, the speed-up over this run if the sampler were infinitely fast
(synchronous 1/(R + S); with the CPU's work masked behind the sampler's, 1/max(R, S)), and the saturation point
M* = P/(R − S) at which a masked run stops gaining. For a VMC run that measures observables apart from its sweeps
every m sweeps (``measure_every``; without them, the density every ``density_every``) it adds study 004's analysis
period: with
α = t_A/t_G (one measurement's time over one sweep's) and m_c = τ_int − ½ of the energy (in sweeps),
m_opt = √(2 m_c α) when analysis and sampling take turns, m_opt = α when they overlap (Eqs. 12, 14).

    >>> result = make_run(RunConfig(system="helium", method="vmc", ...)).run()
    >>> print(qmckit.perf.report(result))
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .amdahl import saturation_point
from .masking import optimal_period_masked, optimal_period_sequential

SERIAL = ("transfers",)
ACCELERATED = ("sampling",)


@dataclass(frozen=True)
class RunModel:
    """The modified Amdahl law fitted to one run (fractions of the run's total time; see the module docstring)."""

    device: str
    total_s: float
    accelerated: float            # P
    serial: float                 # S
    cpu: float                    # R
    limit_synchronous: float      # 1/(R + S)
    limit_masked: float           # 1/max(R, S)
    saturation_point: float       # M* = P/(R − S), inf for R ≤ S
    period: int | None = None     # the run's analysis period m (sweeps), when it measured apart from the sweeps
    alpha: float | None = None    # t_A/t_G
    m_c: float | None = None      # τ_int − ½ of the energy, in sweeps
    m_opt_sequential: float | None = None
    m_opt_masked: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        lines = [f"run on {self.device}: {self.total_s:.3g} s",
                 f"  sampling (accelerated) P = {self.accelerated:.3f}, transfers S = {self.serial:.3f}, "
                 f"CPU side R = {self.cpu:.3f}",
                 f"  an infinitely fast sampler would make this run {_times(self.limit_synchronous)} faster "
                 f"(synchronous), {_times(self.limit_masked)} with the CPU's work masked",
                 (f"  saturation point M* = {_times(self.saturation_point)}: beyond a sampler this much faster, "
                  "masking gains nothing more" if self.saturation_point >= 1 else
                  f"  saturation point M* = {self.saturation_point:.3g} < 1: the CPU side already outlasts the "
                  "sampling, so the CPU side is what to speed up")]
        if self.alpha is not None:
            # three short lines: a notebook's output area and a terminal wrap long ones mid-word
            lines += [f"  analysis every m = {self.period} sweeps: α = t_A/t_G = {self.alpha:.3g}, "
                      f"m_c = {self.m_c:.3g} sweeps",
                      f"  after the sampling: m_opt = √(2 m_c α) = {self.m_opt_sequential:.3g}, so analyse every "
                      f"{max(1, round(self.m_opt_sequential))} sweeps",
                      f"  beside it (masked): m_opt = α = {self.m_opt_masked:.3g}, so analyse every "
                      f"{max(1, round(self.m_opt_masked))} sweeps"]
        return "\n".join(lines)


def _times(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.3g}×"


def _share(phases: dict, names) -> float:
    return sum(phases[name]["fraction"] for name in names if name in phases)


def sweep_and_analysis_times(profile: dict, sweeps: int) -> tuple[float, float] | None:
    """(t_G, t_A) in s from a run's ``profile``: one sweep's sampling time (the run made ``sweeps`` sweeps,
    equilibration included) and one measurement's time apart from the sweeps (the observables every measure_every
    sweeps, else the density every density_every, on the main thread or masked). None without such measurements."""
    phases = profile["phases"]
    kind = "measurements" if phases.get("measurements", {}).get("calls") else "density"
    measured = phases.get(kind) or (profile.get("masked") if kind == "density" else None)
    if not (measured and measured["calls"] and "sampling" in phases):
        return None
    return phases["sampling"]["seconds"] / sweeps, measured["seconds"] / measured["calls"]


def report(run_or_result, period: int | None = None) -> RunModel:
    """The :class:`RunModel` of a run (a :class:`~qmckit.methods.run.Run`, whose result is taken) or of its result
    dict (e.g. a recorded ``qmckit run --json``). ``period``: the sweeps between measurements apart from the sweeps
    (default: the run's ``measure_every``, or ``density_every`` with a density; 1 for a result dict)."""
    if isinstance(run_or_result, dict):
        result, config = run_or_result, None
    else:
        result, config = run_or_result.result(), run_or_result.config
    profile = result.get("profile")
    if not profile:
        raise ValueError("report: the result has no 'profile' (a run of an older qmckit)")
    phases = profile["phases"]
    P, S = _share(phases, ACCELERATED), _share(phases, SERIAL)
    R = max(1.0 - P - S, 0.0)
    model = dict(device=profile["device"], total_s=profile["total_s"], accelerated=P, serial=S, cpu=R,
                 limit_synchronous=1.0 / (R + S) if R + S > 0 else math.inf,
                 limit_masked=1.0 / max(R, S) if max(R, S) > 0 else math.inf,
                 saturation_point=float(saturation_point(R, S, P)) if R > S else math.inf)
    every = getattr(config, "measure_every", 1)  # sweeps per energy measurement (1 for a result dict)
    times = (sweep_and_analysis_times(profile, result["equilibration"] + result["steps"] * every)
             if result.get("method") == "vmc" else None)
    if times is not None:
        if period is None:
            period = 1 if config is None else (config.measure_every if phases.get("measurements", {}).get("calls")
                                               else config.density_every)
        t_G, t_A = times
        alpha = t_A / t_G
        energy = next(iter(result["estimates"].values()))  # the energy comes first
        m_c = max(energy["tau"] - 0.5, 0.0) * every
        model.update(period=int(period), alpha=alpha, m_c=m_c,
                     m_opt_sequential=float(optimal_period_sequential(alpha, m_c)),
                     m_opt_masked=float(optimal_period_masked(alpha)))
    return RunModel(**model)
