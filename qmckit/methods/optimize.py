"""Variational optimisation of one trial-function parameter by correlated sampling (reweighting).

Generic over continuum systems: a parameter is changed by rebuilding the system with
``type(system)(**(system.params.as_dict() | {name: value}))``, and the system's
kernels (``recompute``, ``local_energy``, ``log_psi``) are evaluated at stored configurations by
:func:`qmckit.samplers.evaluate_configurations` (compiled once per system class, cached on disk).

    >>> from qmckit.systems import make_system
    >>> from qmckit.methods.optimize import optimize_parameter
    >>> bosons = make_system("bec", n=20, lam=1.0, a=0.0, alpha=0.6)
    >>> res = optimize_parameter(bosons, "alpha")
    >>> res.value, res.error                  # ≈ 0.5 (the exact ground state for a = 0)

Three layers:

:func:`sample_configurations`
    VMC configurations ``(n_samples, W, N, d)`` of ``|ψ_0|²`` (drift sampler), one every ``thin``
    sweeps after ``equilibration`` sweeps.
:func:`correlated_energies`
    For each value ``v`` of the parameter, every configuration gets the weight
    ``w = |ψ_v(R)/ψ_0(R)|²`` (from ``2 (ln ψ_v − ln ψ_0)``, shifted by its maximum before the
    exponential) and the local energy ``E_L^v(R)``; the energy is the ratio estimator
    ``E(v) = Σ w E_L^v / Σ w`` and the variance ``σ²(v) = Σ w (E_L^v − E(v))² / Σ w``. The Kish
    effective sample size ``(Σw)²/Σw²`` says how far the reweighting can be trusted (it falls
    exponentially with the distance from the sampled value and with the system size).
:func:`optimize_parameter`
    Iterate: sample at the current value, scan a bracket around it by correlated sampling, fit a
    parabola, move to its minimum (clipped to the bracket; the bracket shrinks when the minimum is
    inside), stop when the step is smaller than the statistical error of the minimum.

Error bars: delete-one-group jackknife over the walkers
-------------------------------------------------------
Samples are correlated along the sweep index, but the walkers are independent Markov chains
(own random streams, own starting points). The walkers are therefore split into ``G`` contiguous
groups and every derived quantity (the ratio ``E(v)``, the variance ``σ²(v)``, the location of
the parabola's minimum) is recomputed with one group left out; the jackknife variance is
``(G−1)/G Σ_g (θ_g − θ̄)²``. Each group carries its walkers' whole time series, so any
autocorrelation is accounted for without choosing a block length, the non-linear ratio estimator
gets its bias-consistent error, and the strong correlation between ``E(v)`` at neighbouring
``v`` (the point of correlated sampling) is carried into the error of the minimum. With fewer
than ``min_groups`` walkers the groups are contiguous blocks of the sample index instead (valid
when the blocks are long compared with the autocorrelation time). The ``tau`` of the returned
:class:`~qmckit.stats.Estimate` values is ``½ (error/naive error)²`` with the naive error that
of ``S·W`` independent weighted samples, so that ``error² = 2 τ var / n`` as everywhere else.

Energies and variances are reported in the system's reporting normalisation (``E_L`` divided by
``system.energy_scale()``: per particle for trapped bosons).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..samplers import evaluate_configurations, make_sampler
from ..stats import Estimate
from ..walkers import Walkers

TARGETS = ("energy", "variance")


# --- helpers -----------------------------------------------------------------------------------
def with_parameter(system, name: str, value):
    """A copy of ``system`` with parameter ``name`` set to ``value`` (validated by the system)."""
    _parameter(system, name)
    return type(system)(**(system.params.as_dict() | {name: value}))  # any System class, a UserSystem's included


def _parameter(system, name):
    params = system.params.as_dict()
    if name not in params:
        raise ValueError(f"name must be one of the parameters of {system.name!r} "
                         f"({', '.join(params)}), got {name!r}")
    return params[name]


def evaluate(system, configs):
    """``(ln ψ, E_L)`` of every configuration, each shaped like ``configs.shape[:-2]``.

    E_L is the walker total (not divided by ``energy_scale``); NaN where ψ = 0.
    """
    configs = np.asarray(configs, dtype=np.float64)
    lead = configs.shape[:-2]
    log_psi, e_loc = evaluate_configurations(system, configs.reshape((-1,) + configs.shape[-2:]))
    return log_psi.reshape(lead), e_loc.reshape(lead)


class StopRequested(Exception):
    """Sampling saw its ``stop`` event set (a panel's Stop): the caller ends where it is."""


def sample_configurations(system, n_walkers: int = 100, n_samples: int = 100, thin: int = 4, seed=0,
                          dt: float = 0.1, equilibration: int = 100, stop=None) -> np.ndarray:
    """VMC configurations of ``|ψ_T|²``: array ``(n_samples, n_walkers, N, d)``.

    Walkers start from ``system.initial_positions`` (seeded like :class:`~qmckit.runs.VMCRun`:
    ``SeedSequence(seed).spawn(2)`` for the start and the walker streams), are equilibrated for
    ``equilibration`` drift-sampler sweeps of time step ``dt``, and then one configuration is kept
    every ``thin`` sweeps. ``seed`` is an int or a ``numpy.random.SeedSequence``. ``stop`` (an object with
    ``is_set()``) is looked at before every sample: set, it raises :class:`StopRequested`.
    """
    for label, value, low in (("n_walkers", n_walkers, 1), ("n_samples", n_samples, 1), ("thin", thin, 1),
                              ("equilibration", equilibration, 0)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{label} must be an integer ≥ {low}, got {value!r}")
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    start_seq, walker_seq = seq.spawn(2)
    positions = system.initial_positions(int(n_walkers), np.random.default_rng(start_seq))
    walkers = Walkers.from_positions(positions, walker_seq, system.cache_size())
    driver = make_sampler(system, walkers, "cpu", sampler="drift", dt=dt)
    driver.equilibrate(int(equilibration))
    out = np.empty((int(n_samples),) + walkers.positions.shape)
    for s in range(int(n_samples)):
        if stop is not None and stop.is_set():
            raise StopRequested
        driver.sweep(int(thin), measure=False)
        out[s] = walkers.positions
    return out


def _groups(n_samples: int, n_walkers: int, n_groups: int, min_groups: int):
    """Group labels along the walker axis (or the sample axis when there are too few walkers)."""
    if n_walkers >= min_groups:
        g = min(n_groups, n_walkers)
        return 1, (np.arange(n_walkers) * g) // n_walkers, g
    g = min(n_groups, n_samples)
    if g < 2:
        raise ValueError("need at least 2 walkers or 2 samples for an error estimate")
    return 0, (np.arange(n_samples) * g) // n_samples, g


def _group_sums(x, axis, labels, g):
    """Sums of x (S, W) over all entries of each group, (g,)."""
    per = x.sum(axis=1 - axis)  # along the other axis: (W,) or (S,)
    return np.bincount(labels, weights=per, minlength=g)


def _jackknife(full, replicas):
    """Jackknife error of ``full`` from leave-one-group-out ``replicas`` (g, ...)."""
    g = replicas.shape[0]
    mean = replicas.mean(axis=0)
    return np.sqrt((g - 1) / g * ((replicas - mean) ** 2).sum(axis=0))


@dataclass
class CorrelatedScan:
    """Result of :func:`correlated_energies`; arrays are indexed like ``values``.

    energy, energy_error      reweighted E(v) and its jackknife error (reporting normalisation)
    variance, variance_error  reweighted σ²(v) of E_L (same normalisation, squared)
    ess                       Kish effective sample size (Σw)²/Σw² of the weights
    n                         number of configurations S·W (ess/n near 1: reliable)
    energy_replicas, variance_replicas  leave-one-group-out values (G, len(values)), for the
                              jackknife of anything derived from the scan
    tau                       ½ (error / naive error)² of the energy (see the module docstring)
    """

    name: str
    reference: float
    values: np.ndarray
    energy: np.ndarray
    energy_error: np.ndarray
    variance: np.ndarray
    variance_error: np.ndarray
    ess: np.ndarray
    n: int
    tau: np.ndarray
    energy_replicas: np.ndarray = field(repr=False)
    variance_replicas: np.ndarray = field(repr=False)

    @property
    def ess_fraction(self) -> np.ndarray:
        return self.ess / self.n

    def target(self, target: str = "energy"):
        """``(y, error, replicas)`` of the quantity to minimise."""
        if target == "energy":
            return self.energy, self.energy_error, self.energy_replicas
        if target == "variance":
            return self.variance, self.variance_error, self.variance_replicas
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")

    def difference_error(self, i: int, j: int, target: str = "energy") -> float:
        """Jackknife error of ``y[i] − y[j]`` (much smaller than either error: same samples)."""
        reps = self.target(target)[2]
        return float(_jackknife(0.0, reps[:, i] - reps[:, j]))

    def estimate(self, i: int) -> Estimate:
        """The energy at ``values[i]`` as an :class:`~qmckit.stats.Estimate`."""
        err = float(self.energy_error[i])
        g = self.energy_replicas.shape[0]
        tau = float(self.tau[i])
        return Estimate(mean=float(self.energy[i]), error=err, error_of_error=err / math.sqrt(2 * (g - 1)),
                        tau=tau, n_eff=self.n / (2 * tau) if tau > 0 else float("inf"), n=int(self.n))


def correlated_energies(system, configs, name: str, values, *, n_groups: int = 20,
                        min_groups: int = 8) -> CorrelatedScan:
    """Reweighted energies and variances at ``values`` of parameter ``name`` from ``configs``.

    ``configs`` ``(S, W, N, d)`` must be samples of ``|ψ|²`` for ``system`` (whose own value of
    ``name`` is the reference). Errors: delete-one-group jackknife over ``n_groups`` groups of
    walkers (see the module docstring). With ``values == [reference]`` all weights are 1 and
    the energy is the plain mean of E_L.
    """
    values = np.atleast_1d(np.asarray(values, dtype=float))
    reference = float(_parameter(system, name))
    others = [None if value == reference else with_parameter(system, name, value) for value in values]
    return reweighted(system, configs, others, n_groups=n_groups, min_groups=min_groups, name=name,
                      reference=reference, values=values)


def reweighted(system, configs, others, *, n_groups: int = 20, min_groups: int = 8, name: str = "",
               reference: float = math.nan, values=None, evaluated=None) -> CorrelatedScan:
    """Energies and variances of the systems ``others`` (the same system at other parameters; None: ``system``
    itself) from ``configs`` ``(S, W, N, d)``, samples of ``|ψ|²`` for ``system``, by reweighting; see
    :func:`correlated_energies`. ``values`` label the entries (default 0, 1, …); ``evaluated``: ``system``'s
    (ln ψ, E_L) at ``configs`` (S, W) when the caller has them already (:func:`evaluate` otherwise)."""
    configs = np.asarray(configs, dtype=np.float64)
    if configs.ndim != 4:
        raise ValueError(f"configs must have shape (n_samples, n_walkers, N, d), got {configs.shape}")
    values = np.arange(len(others), dtype=float) if values is None else values
    S, W = configs.shape[:2]
    axis, labels, g = _groups(S, W, n_groups, min_groups)
    scale = float(system.energy_scale())
    log_psi0, e0 = evaluate(system, configs) if evaluated is None else evaluated
    if not np.all(np.isfinite(log_psi0)):
        raise ValueError("configs contain configurations with ψ = 0: they are not samples of this system")

    n_v = len(others)
    energy, variance, ess = np.empty(n_v), np.empty(n_v), np.empty(n_v)
    tau = np.empty(n_v)
    e_rep, v_rep = np.empty((g, n_v)), np.empty((g, n_v))
    for k, other in enumerate(others):
        if other is None:
            log_psi, e_loc = log_psi0, e0
        else:
            log_psi, e_loc = evaluate(other, configs)
        log_w = 2.0 * (log_psi - log_psi0)
        w = np.exp(log_w - log_w.max())  # stabilised: the largest weight is 1
        e = np.where(w > 0, e_loc, 0.0) / scale
        # sums per group, then leave-one-out sums
        sw = _group_sums(w, axis, labels, g)
        swe = _group_sums(w * e, axis, labels, g)
        swee = _group_sums(w * e * e, axis, labels, g)
        tw, twe, twee = sw.sum(), swe.sum(), swee.sum()
        energy[k] = twe / tw
        # variance about the mean, written as a shifted sum for round-off safety
        d = e - energy[k]
        variance[k] = float((w * d * d).sum() / tw)
        ess[k] = tw * tw / float((w * w).sum())
        ow, owe, owee = tw - sw, twe - swe, twee - swee
        e_rep[:, k] = owe / ow
        # leave-one-out variance: Σw e²/Σw − (Σw e/Σw)², centred on the full mean to limit cancellation
        swd = _group_sums(w * d, axis, labels, g)
        swdd = _group_sums(w * d * d, axis, labels, g)
        owd, owdd = swd.sum() - swd, swdd.sum() - swdd
        v_rep[:, k] = owdd / ow - (owd / ow) ** 2
        naive = math.sqrt(float((w * w * d * d).sum())) / tw
        err = float(_jackknife(energy[k], e_rep[:, k]))
        tau[k] = 0.5 * (err / naive) ** 2 if naive > 0 else 0.5
    return CorrelatedScan(name=name, reference=reference, values=values, energy=energy,
                          energy_error=_jackknife(energy, e_rep), variance=variance,
                          variance_error=_jackknife(variance, v_rep), ess=ess, n=int(S * W), tau=tau,
                          energy_replicas=e_rep, variance_replicas=v_rep)


# --- parabola fits -------------------------------------------------------------------------------
def _fit_parabola(x, y, err, centre, width):
    """Weighted least-squares parabola y ≈ c0 + c1 u + c2 u², u = (x − centre)/width.

    Returns the coefficients and their covariance (from the weights alone). Errors are floored at
    1 % of the median error so that a point with (near) zero error cannot take over the fit.
    """
    floor = 1e-2 * np.median(err) if np.any(err > 0) else 1.0
    sig = np.maximum(err, max(floor, 1e-300))
    u = (x - centre) / width
    A = np.vander(u, 3, increasing=True) / sig[:, None]
    b = y / sig
    coef, *_ = np.linalg.lstsq(A, b, rcond=None)
    try:
        cov = np.linalg.inv(A.T @ A)
    except np.linalg.LinAlgError:
        cov = np.full((3, 3), np.nan)
    return coef, cov


def _minimum(coef, x, y, centre, width):
    """The parabola's minimiser clipped to [min x, max x], and whether it lies inside."""
    lo, hi = x.min(), x.max()
    c2, c1 = coef[2], coef[1]
    if c2 > 0:
        v = centre - 0.5 * width * c1 / c2
        if lo <= v <= hi:
            return v, True
        return float(np.clip(v, lo, hi)), False
    return float(x[np.argmin(y)]), False  # concave or flat: go to the lowest point


@dataclass
class ScanFit:
    """One parabola fit to a scan: minimiser, its jackknife error, and whether it was bracketed."""

    value: float
    error: float
    inside: bool
    coef: np.ndarray
    centre: float
    width: float

    def __call__(self, v):
        u = (np.asarray(v, dtype=float) - self.centre) / self.width
        return self.coef[0] + self.coef[1] * u + self.coef[2] * u * u


def fit_scan(scan: CorrelatedScan, target: str = "energy") -> ScanFit:
    """Fit a parabola to the scan's energy (or variance) and locate its minimum, with error.

    The error of the minimiser is the jackknife over the scan's groups: each leave-one-group-out
    replica of the scan is refitted (same weights) and its minimiser found.
    """
    y, err, reps = scan.target(target)
    x = scan.values
    centre = float(x.mean())
    width = float(max(np.ptp(x) / 2, 1e-300))
    coef, _ = _fit_parabola(x, y, err, centre, width)
    value, inside = _minimum(coef, x, y, centre, width)
    rep_values = np.array([_minimum(_fit_parabola(x, r, err, centre, width)[0], x, r, centre, width)[0]
                           for r in reps])
    error = float(_jackknife(value, rep_values))
    return ScanFit(value=float(value), error=error, inside=inside, coef=coef, centre=centre, width=width)


# --- the optimiser -------------------------------------------------------------------------------
@dataclass
class Iteration:
    """One step of :func:`optimize_parameter`: sampled at ``centre``, scanned ``values``."""

    iteration: int
    centre: float
    half_width: float
    values: np.ndarray
    y: np.ndarray
    y_error: np.ndarray
    ess_fraction: np.ndarray
    minimum: float
    minimum_error: float
    inside: bool
    next_centre: float
    energy: Estimate
    wall_s: float


@dataclass
class OptimizationResult:
    """Outcome of :func:`optimize_parameter`.

    value, error   the optimal parameter and its statistical error (jackknife over walker groups)
    energy         energy Estimate at ``value``, reweighted from the last iteration's samples
    variance       reweighted σ² of E_L at ``value`` (reporting normalisation, squared)
    converged      whether the last step was smaller than the error of the minimum
    history        one :class:`Iteration` per sampling round
    scan           the last :class:`CorrelatedScan` (its arrays: values, energy, variance, errors, ess)
    fit            the last :class:`ScanFit`
    """

    name: str
    target: str
    value: float
    error: float
    energy: Estimate
    variance: float
    converged: bool
    history: list
    scan: CorrelatedScan
    fit: ScanFit
    wall_s: float


def optimize_parameter(system, name: str = "alpha", start=None, *, target: str = "energy",
                       half_width=None, n_points: int = 7, n_walkers: int = 200, n_samples: int = 200,
                       thin: int = 4, dt: float = 0.1, equilibration: int = 100, max_iter: int = 8, stop_sigmas: float = 2.0,
                       tol: float = 0.0,
                       shrink: float = 0.5, min_ess_fraction: float = 0.3, bounds=(None, None),
                       n_groups: int = 20, seed=0, progress=None) -> OptimizationResult:
    """Minimise the VMC energy (or the variance of E_L) over one parameter ``name``.

    Each iteration samples ``|ψ|²`` at the current value (``n_walkers`` × ``n_samples``
    configurations, one every ``thin`` drift sweeps of step ``dt`` after ``equilibration``), scans
    ``n_points`` values over ``centre ± half_width`` by correlated sampling, fits a parabola
    (weighted by the jackknife errors) and moves to its minimum, clipped to the bracket. When the
    minimum lies inside, the bracket shrinks by ``shrink`` (but not below 3 errors of the minimum);
    if the weights at the bracket ends fall below ``min_ess_fraction`` effective samples the bracket
    is narrowed first (no resampling). Stops when the minimum lies inside the bracket and the
    step is smaller than ``stop_sigmas`` errors of the minimum (or than ``tol``), or after
    ``max_iter`` iterations. Once converged, the step is the difference of two independent
    estimates of the minimum, with spread √2 σ: a threshold of 1 σ would stop only about half the
    time, the default 2 σ about 85 % of the time. The result is the last fit's minimum, whose
    samples were drawn at (or next to) it.

    start        initial value (default: the system's own); half_width defaults to 10 % of |start|
    target       "energy" or "variance" (σ² of E_L, zero for an exact eigenstate)
    bounds       (low, high) limits on the parameter (None: unlimited, beyond the system's own checks)
    seed         int or SeedSequence; iteration k samples with the k-th spawned child
    progress     optional callable ``progress(iteration: Iteration)`` after every iteration

    Defaults: 200 walkers × 200 samples, thin 4, dt 0.1, 100 equilibration sweeps, 7 points,
    ≤ 8 iterations: about half a second per iteration for 20 trapped bosons on 2 cores (3–5
    iterations from 20 % off the optimum).
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    if n_points < 3:
        raise ValueError(f"n_points must be ≥ 3 to fit a parabola, got {n_points!r}")
    if not 0 < shrink <= 1:
        raise ValueError(f"shrink must be in (0, 1], got {shrink!r}")
    lo_b = -math.inf if bounds[0] is None else float(bounds[0])
    hi_b = math.inf if bounds[1] is None else float(bounds[1])
    centre = float(_parameter(system, name) if start is None else start)
    h = float(half_width) if half_width is not None else 0.1 * abs(centre)
    if not (h > 0 and math.isfinite(h)):
        raise ValueError(f"half_width must be positive, got {half_width!r} (start {centre!r})")
    seqs = (seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)).spawn(max_iter)
    t_start = time.perf_counter()
    history = []
    converged = False
    for it in range(max_iter):
        t0 = time.perf_counter()
        sys_c = with_parameter(system, name, centre)
        configs = sample_configurations(sys_c, n_walkers, n_samples, thin, seqs[it], dt=dt,
                                        equilibration=equilibration)
        while True:
            values = np.clip(np.linspace(centre - h, centre + h, n_points), lo_b, hi_b)
            values = np.unique(values)
            scan = correlated_energies(sys_c, configs, name, values, n_groups=n_groups)
            if scan.ess_fraction.min() >= min_ess_fraction or h < 1e-12 * max(abs(centre), 1.0):
                break
            h *= 0.5
        fit = fit_scan(scan, target)
        step = fit.value - centre
        if fit.inside:
            converged = abs(step) < max(stop_sigmas * fit.error, tol)
            h = max(h * shrink, 3.0 * fit.error)
        new_centre = float(np.clip(fit.value, lo_b, hi_b))
        at = correlated_energies(sys_c, configs, name, [new_centre], n_groups=n_groups)
        record = Iteration(iteration=it, centre=centre, half_width=float(np.ptp(values) / 2), values=values, y=scan.target(target)[0].copy(),
                           y_error=scan.target(target)[1].copy(), ess_fraction=scan.ess_fraction,
                           minimum=fit.value, minimum_error=fit.error, inside=fit.inside, next_centre=new_centre,
                           energy=at.estimate(0), wall_s=time.perf_counter() - t0)
        history.append(record)
        if progress is not None:
            progress(record)
        if converged:
            break
        centre = new_centre
    last = history[-1]
    return OptimizationResult(name=name, target=target, value=last.minimum, error=last.minimum_error,
                              energy=last.energy, variance=float(at.variance[0]), converged=converged,
                              history=history, scan=scan, fit=fit, wall_s=time.perf_counter() - t_start)
