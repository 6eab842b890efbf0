"""Many-parameter wave-function optimisation for any continuum system: stochastic reconfiguration, the linear method,
and plain or Adam gradient descent, on the energy, the variance of E_L or a mixture.

    >>> from qmckit.systems import make_system
    >>> from qmckit.methods.optimizers import optimize
    >>> result = optimize(make_system("atom", element="He", alpha=1.6, beta=0.1), ("alpha", "beta"))
    >>> result.params, result.estimates["energy"]          # the best parameters and their energy ± error

Every step samples |ψ_T|² at the current parameters (:func:`~qmckit.methods.optimize.sample_configurations`,
``n_walkers`` × ``n_samples``), computes ln ψ, E_L and their parameter derivatives O_k = ∂ ln ψ/∂p_k and ∂_k E_L
(:mod:`qmckit.methods.parameter_derivatives`), and from their averages (ΔO = O − ⟨O⟩):

* the energy gradient g_k = 2⟨ΔO_k E_L⟩, the variance gradient 2⟨(E_L − E)∂_k E_L⟩ + 2⟨ΔO_k (E_L − E)²⟩, and for a
  ``target`` weight w ∈ [0, 1] the gradient of (1 − w)E + wσ² ("energy" is w = 0, "variance" w = 1);
* ``sr``: the natural-gradient direction δ = −S⁻¹ g/2 with S_kl = ⟨ΔO_k ΔO_l⟩ + ε δ_kl S_kk (Sorella's stochastic
  reconfiguration with the diagonal shift ε), then a correlated-sampling line search over the step length τ (as in
  PyQMC's line minimisation);
* ``linear``: the linear method (Umrigar, Toulouse, Filippi, Sorella & Hennig, PRL 98, 110201 (2007)) in the basis
  {ψ, ΔO_k ψ}: H_00 = ⟨E_L⟩, H_k0 = ⟨ΔO_k E_L⟩, H_0l = ⟨ΔO_l E_L⟩ + ⟨∂_l E_L⟩,
  H_kl = ⟨ΔO_k E_L ΔO_l⟩ + ⟨ΔO_k ∂_l E_L⟩ + a δ_kl, S as above without ε; the step Δp = c/c₀ of the eigenvector of
  H c = λ S c with the lowest eigenvalue (among those with |c₀| ≥ 0.01 in the S norm), for three shifts a
  (×0.1, ×1, ×10 the last one) tried by correlated sampling (energy target only);
* ``adam``, ``gd``: Δp = −η (Adam's moment estimates of) g (the FYS4411 exercise; no safeguard).

**Safeguard.** A ``sr`` or ``linear`` candidate is accepted only if, reweighted to it from the current samples, its
effective sample size (Σw)²/Σw² is at least :data:`MIN_ESS_FRACTION` of the samples and its target is not above the
current one by more than 2σ of their (correlated) difference. When no candidate is accepted the shift (``linear``)
or τ (``sr``) changes by 10× towards smaller steps and the step is retried, up to three times; then the parameters
stay and the step is reported as refused.

**Errors** are delete-one-group jackknife errors over groups of walkers (see :mod:`qmckit.methods.optimize`): of the
energy, the variance, the gradient and the step itself. When the step is smaller than twice its error (noise
dominates), the next step draws twice the samples, up to ``max_samples``; the run stops early once noise dominates
at ``max_samples`` twice in a row.

**The result** is not the last step: the last :data:`FINAL_CANDIDATES` distinct parameter sets are compared by
correlated sampling on ``final_samples`` fresh samples drawn at the last one, and the best is returned with its
reweighted energy, variance and jackknife errors. Energies are in the system's reporting normalisation (E_L divided
by ``energy_scale()``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..stats import Estimate
from .optimize import StopRequested, _groups, _jackknife, reweighted, sample_configurations, with_parameter
from .parameter_derivatives import parameter_derivatives, resolve_names

METHODS = ("linear", "sr", "adam", "gd")
MIN_ESS_FRACTION = 0.1   # below this the reweighted estimate of a candidate is not trusted (≥ 1000 of 10⁴ samples)
FINAL_CANDIDATES = 5
RETRIES = 3


def target_weight(target) -> float:
    """The weight w of the variance in (1 − w)E + wσ²: "energy" 0, "variance" 1, or a number in [0, 1]."""
    if target == "energy":
        return 0.0
    if target == "variance":
        return 1.0
    try:
        w = float(target)
    except (TypeError, ValueError):
        w = math.nan
    if not 0.0 <= w <= 1.0:
        raise ValueError(f"target must be energy, variance or a weight of the variance in [0, 1], got {target!r}")
    return w


@dataclass
class Step:
    """One optimisation step, measured at ``params`` (before the step): energy and variance of E_L with errors
    (reporting normalisation), the target's gradient with errors, the step taken (``delta``, zero when refused) and
    how it was chosen."""

    step: int
    params: dict
    energy: Estimate
    variance: float
    variance_error: float
    gradient: np.ndarray
    gradient_error: np.ndarray
    delta: np.ndarray
    delta_error: np.ndarray
    samples: int
    accepted: bool
    note: str
    setting: float          # the linear method's shift, SR's τ or the learning rate of the step taken
    ess_fraction: float     # of the accepted candidate reweighted from these samples (1 for adam/gd)
    wall_s: float

    @property
    def gradient_norm(self) -> float:
        return float(np.linalg.norm(self.gradient))

    def as_dict(self) -> dict:
        return {"step": self.step, "params": self.params, "energy": self.energy.to_dict(),
                "energy_variance": {"mean": self.variance, "error": self.variance_error},
                "gradient": self.gradient.tolist(), "gradient_error": self.gradient_error.tolist(),
                "gradient_norm": self.gradient_norm, "delta": self.delta.tolist(),
                "delta_error": self.delta_error.tolist(), "samples": self.samples, "accepted": self.accepted,
                "note": self.note, "setting": self.setting, "ess_fraction": self.ess_fraction,
                "wall_s": self.wall_s}


@dataclass
class OptimizeResult:
    """What :func:`optimize` found: the best ``params`` with their correlated-sampling ``estimates`` ("energy", an
    Estimate, and "energy_variance", mean and error), one :class:`Step` per step in ``history``, and how it ended:
    ``stopped`` is "steps" (all taken), "converged" (steps smaller than twice their errors at the largest sample,
    twice running, or zero variance) or "stopped". A stopped run skips the closing comparison: its ``params`` and
    ``estimates`` are those of the last step measured (none when it stopped during the first)."""

    system: str
    names: tuple
    method: str
    target: object
    params: dict
    estimates: dict
    history: list = field(default_factory=list)
    stopped: str = "steps"
    wall_s: float = 0.0

    def as_dict(self) -> dict:
        estimates = {} if not self.estimates else {"energy": self.estimates["energy"].to_dict(),
                                                   "energy_variance": self.estimates["energy_variance"]}
        return {"system": self.system, "method": self.method, "target": self.target, "params": self.params,
                "estimates": estimates,
                "history": [s.as_dict() for s in self.history], "stopped": self.stopped, "wall_s": self.wall_s}


# --- averages and their jackknife replicas --------------------------------------------------------------------------
def _averages(energy, d_log, d_energy, labels, g):
    """Means of the products the methods need, full and leave-one-group-out: each (1 + g, ...), entry 0 the full
    sample. energy (S, W), d_log and d_energy (S, W, P); ``labels`` = (axis, group of each walker or sample)."""
    S, W, P = d_log.shape
    e = energy[..., None]
    outer = lambda x, y: (x[..., :, None] * y[..., None, :]).reshape(S, W, P * P)  # noqa: E731
    terms = {"E": e, "EE": e * e, "O": d_log, "OE": d_log * e, "OEE": d_log * e * e, "D": d_energy,
             "ED": d_energy * e, "OO": outer(d_log, d_log), "OEO": outer(d_log * e, d_log),
             "OD": outer(d_log, d_energy)}
    tails = {"E": (), "EE": (), "OO": (P, P), "OEO": (P, P), "OD": (P, P)}
    axis, labels_ = labels
    counts = np.bincount(labels_, minlength=g) * (S if axis == 1 else W)
    out = {}
    for key, x in terms.items():
        per = x.sum(axis=1 - axis)  # (W, k) or (S, k)
        group = np.stack([np.bincount(labels_, weights=per[:, j], minlength=g) for j in range(per.shape[1])], -1)
        total = group.sum(axis=0)
        means = np.concatenate([total[None] / (S * W), (total - group) / (S * W - counts)[:, None]])
        out[key] = means.reshape((1 + g,) + tails.get(key, (P,)))
    return out


def _moments(a) -> dict:
    """Energy, variance, gradients and the matrices of the methods from the averages of :func:`_averages` (each
    batched over the leading axis)."""
    E, O = a["E"], a["O"]
    var = a["EE"] - E ** 2
    cov_oe = a["OE"] - O * E[:, None]                                     # ⟨ΔO E⟩
    S = a["OO"] - O[:, :, None] * O[:, None, :]                          # ⟨ΔO ΔO⟩
    d_mean = a["D"]
    grad_energy = 2 * cov_oe
    e_d = a["ED"] - E[:, None] * d_mean                                   # ⟨(E − Ē) ∂E⟩
    o_ee = a["OEE"] - 2 * E[:, None] * a["OE"] + (E ** 2)[:, None] * O - O * var[:, None]  # ⟨ΔO (E − Ē)²⟩
    grad_variance = 2 * e_d + 2 * o_ee
    # ⟨ΔO_k E ΔO_l⟩ and ⟨ΔO_k ∂_l E⟩
    oeo = (a["OEO"] - O[:, :, None] * a["OE"][:, None, :] - a["OE"][:, :, None] * O[:, None, :]
           + O[:, :, None] * O[:, None, :] * E[:, None, None])
    od = a["OD"] - O[:, :, None] * d_mean[:, None, :]
    return {"energy": E, "H_00": E, "D": d_mean, "variance": var, "S": S, "grad_energy": grad_energy,
            "grad_variance": grad_variance, "H_k0": cov_oe, "H_0l": cov_oe + d_mean, "H_kl": oeo + od}


def linear_method_step(m: dict, index: int, shift: float) -> np.ndarray:
    """Δp of the linear method from the moments ``m`` (entry ``index`` of the batch) with the shift ``shift``
    (energy units of E_L) on H's parameter diagonal: c/c₀ of the eigenvector of H c = λ S c with the lowest
    eigenvalue among those whose S-normalised |c₀| ≥ 0.01; NaN where the problem has no usable solution."""
    import scipy.linalg

    P = m["S"].shape[-1]
    H = np.empty((P + 1, P + 1))
    S = np.zeros((P + 1, P + 1))
    H[0, 0] = m["H_00"][index]
    H[1:, 0] = m["H_k0"][index]
    H[0, 1:] = m["H_0l"][index]
    H[1:, 1:] = m["H_kl"][index] + shift * np.eye(P)
    S[0, 0] = 1.0
    S[1:, 1:] = m["S"][index]
    try:
        values, vectors = scipy.linalg.eig(H, S)
    except (np.linalg.LinAlgError, ValueError):
        return np.full(P, np.nan)
    finite = np.isfinite(values) & (np.abs(values.imag) < 1e-8 * (1 + np.abs(values.real)))
    if not finite.any():
        return np.full(P, np.nan)
    vectors = vectors.real
    norms = np.sqrt(np.einsum("ij,ik,kj->j", vectors, S, vectors))
    overlap = np.where(finite, np.abs(vectors[0]) / np.where(norms > 0, norms, np.inf), -1.0)
    # the lowest eigenvalue whose vector keeps some of ψ (a spurious low root of noise is left to the safeguard)
    keeps = overlap >= 0.01
    c = vectors[:, int(np.argmin(np.where(keeps, values.real, np.inf)))] if keeps.any() else \
        vectors[:, int(np.argmax(overlap))]
    return c[1:] / c[0] if c[0] != 0 else np.full(P, np.nan)


def sr_direction(m: dict, index: int, gradient: np.ndarray, epsilon: float) -> np.ndarray:
    """The natural-gradient direction −(S + ε diag S)⁻¹ g/2 (entry ``index`` of the moments ``m``)."""
    S = m["S"][index].copy()
    S[np.diag_indices_from(S)] *= 1.0 + epsilon
    S[np.diag_indices_from(S)] += 1e-12 * max(float(np.trace(S)), 1e-300)  # a parameter ψ does not depend on
    try:
        return -np.linalg.solve(S, 0.5 * gradient)
    except np.linalg.LinAlgError:
        return np.full(len(gradient), np.nan)


def _estimate(mean: float, error: float, naive: float, groups: int, n: int) -> Estimate:
    """An Estimate from a jackknife ``error`` and the ``naive`` error of n independent samples: τ = ½(error/naive)²
    (error² = 2τσ²/n, as everywhere); τ = ½ where either is zero (a constant series, zero variance)."""
    tau = 0.5 * (error / naive) ** 2 if naive > 0 and error > 0 else 0.5
    return Estimate(mean=mean, error=error, error_of_error=error / math.sqrt(2 * (groups - 1)), tau=tau,
                    n_eff=n / (2 * tau), n=int(n))


# --- the driver -----------------------------------------------------------------------------------------------------
def _system_at(system, names, values):
    out = system
    for name, value in zip(names, values):
        out = with_parameter(out, name, float(value))
    return out


def _values(system, names) -> np.ndarray:
    params = system.params.as_dict()
    return np.array([float(params[n]) for n in names])


def _sample(system, n_walkers, n_samples, seed, settings, client, stop=None):
    """Samples (S, W, N, d) of |ψ_T|², the walkers split over ``client``'s workers when one is given; in this process
    ``stop`` is looked at before every sample (:class:`~qmckit.methods.optimize.StopRequested`)."""
    if client is None:
        return sample_configurations(system, n_walkers=n_walkers, n_samples=n_samples, seed=seed, stop=stop,
                                     **settings)
    workers = max(1, len(getattr(client, "scheduler_info", lambda: {"workers": [0]})().get("workers", [0])))
    parts = np.array_split(np.arange(n_walkers), min(workers, n_walkers))
    seeds = seed.spawn(len(parts))
    futures = [client.submit(sample_configurations, system, n_walkers=len(part), n_samples=n_samples, seed=s,
                             **settings) for part, s in zip(parts, seeds)]
    return np.concatenate([f.result() for f in futures], axis=1)


def _checked_step(method, m, gradient, setting, epsilon, system, names, values, current, configs, evaluated, weight,
                  n_groups, g):
    """A safeguarded step of the linear method or SR (see the module docstring): (Δp, its jackknife error, the shift
    or τ now, accepted, a note, the ESS fraction of the accepted candidate). ``evaluated``: (ln ψ, E_L) of
    ``current`` at ``configs``, each (S, W)."""
    P = len(names)
    if method == "linear":
        if setting is None:
            setting = 1e-3 * max(math.sqrt(max(float(m["variance"][0]), 0.0)), 1e-12)
        factors = (0.1, 1.0, 10.0)
    else:
        direction = sr_direction(m, 0, gradient[0], epsilon)
        metric = float(direction @ m["S"][0] @ direction)
        if setting is None:  # first step: a change of ψ of 10 % in norm
            setting = 0.1 / math.sqrt(metric) if metric > 0 else 1.0
        factors = (0.5, 1.0, 2.0)
    delta, chosen, note, ess, incoming = np.zeros(P), None, "", 1.0, setting
    for attempt in range(RETRIES + 1):
        if attempt:  # smaller steps: a larger shift, a shorter τ
            setting = setting * 10.0 if method == "linear" else setting * 0.1
        if method == "linear":
            trial = [linear_method_step(m, 0, setting * f) for f in factors]
        else:
            trial = [setting * f * direction for f in factors]
        usable, others = [], []
        for j, t in enumerate(trial):
            if np.all(np.isfinite(t)) and np.any(t != 0):
                try:
                    others.append(_system_at(system, names, values + t))
                    usable.append(j)
                except ValueError:  # outside a parameter's bounds: this candidate only
                    note = "every candidate leaves the parameters' bounds"
        if not usable:
            if note:
                continue  # out of bounds: a smaller step may fit
            note = "zero step: the gradient vanishes" if np.allclose(gradient[0], 0) else "no usable step"
            break
        diff, diff_err, ess_f = _candidates_checked(current, configs, evaluated, others, weight, n_groups)
        ok = [(diff[q], q) for q in range(len(usable)) if ess_f[q] >= MIN_ESS_FRACTION and diff[q] <= 2 * diff_err[q]]
        if ok:
            q = min(ok)[1]
            chosen, ess = usable[q], float(ess_f[q])
            delta = trial[chosen]
            setting = setting * factors[chosen]
            note = f"after {attempt} smaller tries" if attempt else ""
            break
        note = "every candidate raised the target or had too few effective samples"
    if chosen is None:  # the next step starts one notch smaller than this one did, not at the last try's setting
        setting = incoming * 10.0 if method == "linear" else incoming * 0.1
        return np.zeros(P), np.zeros(P), setting, False, (f"refused: {note}" if note else "refused"), ess
    # the step's error: the same choice (shift or τ) on each jackknife replica
    if method == "linear":
        reps = np.array([linear_method_step(m, r, setting) for r in range(1, g + 1)])
    else:
        reps = np.array([setting * sr_direction(m, r, gradient[r], epsilon) for r in range(1, g + 1)])
    return delta, _jackknife(delta, reps), setting, True, note, ess


def _candidates_checked(system, configs, evaluated, candidates, weight, n_groups):
    """Reweight ``configs`` (samples at ``system``, whose (ln ψ, E_L) there are ``evaluated``) to each candidate
    system: (target differences from the current one, their errors, the ESS fractions)."""
    others = [None] + list(candidates)
    scan = reweighted(system, configs, others, n_groups=n_groups, evaluated=evaluated)
    target = (1 - weight) * scan.energy + weight * scan.variance
    replicas = (1 - weight) * scan.energy_replicas + weight * scan.variance_replicas
    diff = target[1:] - target[0]
    diff_error = np.array([float(_jackknife(0.0, replicas[:, k + 1] - replicas[:, 0])) for k in range(len(candidates))])
    return diff, diff_error, scan.ess_fraction[1:]


def optimize(system, params=None, *, method: str = "linear", target="energy", steps: int = 12,
             n_walkers: int = 100, n_samples: int = 100, max_samples: int | None = None, thin: int = 4,
             dt: float = 0.1, equilibration: int = 100, shift: float | None = None, epsilon: float = 1e-3,
             learning_rate: float = 0.01, final_samples: int | None = None, n_groups: int = 20, seed=0,
             client=None, progress=None, stop=None) -> OptimizeResult:
    """Optimise the variational parameters ``params`` (names, "alpha,beta", or None for all) of a continuum
    ``system`` (see the module docstring).

    method        "linear" (default), "sr", "adam" or "gd"
    target        "energy", "variance" or the weight w ∈ [0, 1] of the variance in (1 − w)E + wσ² (linear: energy)
    steps         at most this many steps; n_walkers × n_samples samples each (n_samples doubles when noise
                  dominates, up to ``max_samples``, default 8 × n_samples)
    thin, dt, equilibration  the sampling (drift sweeps between samples, time step, sweeps before the first)
    shift         the linear method's first shift (default 1e-3 · σ of E_L); epsilon: SR's diagonal shift
    learning_rate η of adam and gd (units: parameter per unit of the target's gradient)
    final_samples samples for the closing correlated-sampling comparison (default 2 × the last n_samples)
    seed          int or SeedSequence; client: a Dask client (or anything with ``submit``) to sample on
    progress      callable(Step) after each step; stop: an object with ``is_set()`` (threading.Event) to stop early
    """
    names = resolve_names(system, params)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    weight = target_weight(target)
    if method == "linear" and weight != 0.0:
        raise ValueError("target: the linear method here minimises the energy; use method sr, adam or gd for "
                         f"target {target!r}")
    for label, value, low in (("steps", steps, 1), ("n_walkers", n_walkers, 2), ("n_samples", n_samples, 1)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{label} must be an integer ≥ {low}, got {value!r}")
    for label, value in (("learning_rate", learning_rate), ("epsilon", epsilon)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{label} must be a finite number ≥ 0, got {value!r}")
    if shift is not None and not (isinstance(shift, (int, float)) and math.isfinite(shift) and shift > 0):
        raise ValueError(f"shift must be a finite number > 0, got {shift!r}")
    for label, value, low in (("max_samples", max_samples, n_samples), ("final_samples", final_samples, 1),
                              ("n_groups", n_groups, 2)):
        if value is not None and (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))
                                  or value < low):
            raise ValueError(f"{label} must be an integer ≥ {low}, got {value!r}")
    if client is not None and getattr(system, "user_defined", False):
        raise ValueError("client: a UserSystem is optimised in this process (its class exists only here)")
    max_samples = int(max_samples or 8 * n_samples)
    settings = dict(thin=thin, dt=dt, equilibration=equilibration)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    step_seeds = seq.spawn(steps + 1)
    scale = float(system.energy_scale())
    start = time.perf_counter()
    values = _values(system, names)
    history, tried = [], [values.copy()]
    adam_m = adam_v = np.zeros(len(names))
    setting = shift if method == "linear" else (learning_rate if method in ("adam", "gd") else None)
    noisy_at_max, stopped, samples = 0, "steps", int(n_samples)
    for k in range(steps):
        if stop is not None and stop.is_set():
            stopped = "stopped"
            break
        t0 = time.perf_counter()
        current = _system_at(system, names, values)
        try:
            configs = _sample(current, int(n_walkers), samples, step_seeds[k], settings, client, stop)
        except StopRequested:  # Stop pressed while this step sampled: it ends here, with the steps before it
            stopped = "stopped"
            break
        S_, W_ = configs.shape[:2]
        flat = configs.reshape((-1,) + configs.shape[2:])
        d = parameter_derivatives(current, flat, names, local_energy=(method == "linear" or weight > 0))
        P = len(names)
        d_energy = (d.d_local_energy if d.d_local_energy is not None else np.zeros_like(d.d_log_psi)) / scale
        axis, labels, g = _groups(S_, W_, n_groups, 8)
        energies = d.local_energy.reshape(S_, W_) / scale
        reference = float(energies.mean())  # products of E_L − reference: no cancellation in σ² near zero variance
        a = _averages(energies - reference, d.d_log_psi.reshape(S_, W_, P), d_energy.reshape(S_, W_, P),
                      (axis, labels), g)
        m = _moments(a)
        m["energy"] = m["H_00"] + reference  # H_00 and H_kl both of E_L − reference: λ shifts, c does not
        gradient = (1 - weight) * m["grad_energy"] + weight * m["grad_variance"]  # (1 + g, P)
        energy_error = float(_jackknife(m["energy"][0], m["energy"][1:]))
        naive = math.sqrt(max(float(m["variance"][0]), 0.0) / (S_ * W_))
        energy = _estimate(float(m["energy"][0]), energy_error, naive, g, S_ * W_)
        note, accepted, ess = "", True, 1.0
        if method in ("adam", "gd"):
            if method == "gd":
                steps_all = -learning_rate * gradient
            else:
                beta1, beta2 = 0.9, 0.999
                m1 = beta1 * adam_m + (1 - beta1) * gradient
                m2 = beta2 * adam_v + (1 - beta2) * gradient ** 2
                steps_all = -learning_rate * (m1 / (1 - beta1 ** (k + 1))) / (
                    np.sqrt(m2 / (1 - beta2 ** (k + 1))) + 1e-8)
                adam_m, adam_v = m1[0], m2[0]
            delta = steps_all[0]
            delta_error = _jackknife(delta, steps_all[1:])
            for _ in range(30):  # a step across a parameter's bound is halved until it stays inside
                try:
                    _system_at(system, names, values + delta)
                    break
                except ValueError:
                    delta, delta_error, note = 0.5 * delta, 0.5 * delta_error, "halved to stay within the bounds"
            else:
                delta, delta_error, accepted = np.zeros(P), np.zeros(P), False
                note = "refused: every candidate leaves the parameters' bounds"
        else:
            evaluated = (d.log_psi.reshape(S_, W_), d.local_energy.reshape(S_, W_))  # no second evaluation
            delta, delta_error, setting, accepted, note, ess = _checked_step(
                method, m, gradient, setting, epsilon, system, names, values, current, configs, evaluated, weight,
                n_groups, g)
        step = Step(step=k, params=dict(zip(names, values.tolist())), energy=energy,
                    variance=float(m["variance"][0]), variance_error=float(_jackknife(m["variance"][0],
                                                                                     m["variance"][1:])),
                    gradient=gradient[0], gradient_error=_jackknife(gradient[0], gradient[1:]), delta=delta,
                    delta_error=np.asarray(delta_error), samples=int(S_ * W_), accepted=accepted, note=note,
                    setting=float(setting if setting is not None else math.nan), ess_fraction=ess,
                    wall_s=time.perf_counter() - t0)
        history.append(step)
        if progress is not None:
            progress(step)
        values = values + delta
        if accepted and np.any(delta != 0):
            tried.append(values.copy())
        error = float(np.linalg.norm(step.delta_error))
        bounded = note.startswith("refused: every candidate leaves")  # at a bound: more samples would not help
        noisy = not bounded and ((not accepted) or not math.isfinite(error) or np.linalg.norm(delta) < 2 * error)
        at_max = samples >= max_samples  # this step's own sample size
        noisy_at_max = noisy_at_max + 1 if noisy and at_max else 0
        if noisy and not at_max:
            samples = min(2 * samples, max_samples)
        zero_variance = float(m["variance"][0]) <= 1e-20 * (float(m["energy"][0]) ** 2 + 1.0)
        if noisy_at_max >= 2 or (zero_variance and np.linalg.norm(delta) <= 1e-10 * (1 + np.linalg.norm(values))):
            stopped = "converged"
            break
    if stopped != "stopped":
        try:
            best, estimates = _best(system, names, tried, int(n_walkers), int(final_samples or 2 * samples),
                                    step_seeds[-1], settings, client, weight, n_groups, stop)
        except StopRequested:  # Stop during the closing comparison
            stopped = "stopped"
    if stopped == "stopped":  # no closing comparison: the last parameters measured
        last = history[-1] if history else None
        best = _values(system, names) if last is None else np.array([last.params[n] for n in names])
        estimates = {} if last is None else {
            "energy": last.energy, "energy_variance": {"mean": last.variance, "error": last.variance_error},
            "ess_fraction": 1.0}
    return OptimizeResult(system=system.name, names=names, method=method, target=target,
                          params=dict(zip(names, best.tolist())), estimates=estimates, history=history,
                          stopped=stopped, wall_s=time.perf_counter() - start)


def _best(system, names, tried, n_walkers, n_samples, seed, settings, client, weight, n_groups, stop=None):
    """The best of the last FINAL_CANDIDATES distinct parameter vectors ``tried``, compared by correlated sampling
    on fresh samples at the last one: (its values, {"energy": Estimate, "energy_variance": {mean, error}})."""
    unique = []
    for v in reversed(tried):
        if not any(np.array_equal(v, u) for u in unique):
            unique.append(v)
        if len(unique) == FINAL_CANDIDATES:
            break
    last = _system_at(system, names, unique[0])
    configs = _sample(last, n_walkers, n_samples, seed, settings, client, stop)
    others = [None] + [_system_at(system, names, v) for v in unique[1:]]
    scan = reweighted(last, configs, others, n_groups=n_groups)
    target = (1 - weight) * scan.energy + weight * scan.variance
    replicas = (1 - weight) * scan.energy_replicas + weight * scan.variance_replicas
    trusted = scan.ess_fraction >= MIN_ESS_FRACTION
    k = int(np.argmin(np.where(trusted, target, np.inf)))
    if k and target[0] - target[k] <= 2 * float(_jackknife(0.0, replicas[:, k] - replicas[:, 0])):
        k = 0  # an earlier set wins only when it is better by more than 2σ than the one sampled
    e = scan.estimate(k)
    return unique[k], {"energy": _estimate(e.mean, e.error, e.error / math.sqrt(2 * e.tau) if e.tau > 0 else 0.0,
                                           scan.energy_replicas.shape[0], scan.n),
                       "energy_variance": {"mean": float(scan.variance[k]), "error": float(scan.variance_error[k])},
                       "ess_fraction": float(scan.ess_fraction[k])}


__all__ = ["METHODS", "OptimizeResult", "Step", "linear_method_step", "optimize", "sr_direction", "target_weight"]
