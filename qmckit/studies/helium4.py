"""Study 004 (Lutsyshyn, QL package): the sample run, generation speed and time-to-error, on CPU or GPU.

All of it drives W independent Metropolis chains (:mod:`qmckit.backends.helium_chains`) of
:class:`~qmckit.systems.helium.Helium` and analyses them every m macroupdates, like 004:

* :func:`sample_run`: the distributed sample (N = 1000, b = 3.07 Å, no tail correction, m = 4):
  E/N, V/N, T/N (Laplacian form) and T/N (gradient form) with reblocked errors;
* :func:`time_generation`: time per macroupdate per chain (wall time / (W × macroupdates)), 004's
  Fig. 4 unit, and pair evaluations per second (2(N − 1) u(r) evaluations per microupdate: the old
  and the new distance to every other atom);
* :func:`time_to_error`: t σ² of E/N in s·mK² (004's Fig. 5 invariant), from the wall time of
  generation plus analysis and the reblocked error of the mean.

Published numbers (study 004 notes §2.4, §3.7–3.8) are in :data:`PUBLISHED`.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .. import rng
from ..backends import helium_chains as hc
from ..stats import estimate
from ..systems.helium import Helium

PUBLISHED = {
    # e.dat rows 1, 19, 20 of the sample run: mean and block-to-block sd of those three rows (K)
    "sample_run": {"energy_per_particle": (-5.7974, 0.0147), "potential_energy_per_particle": (-20.9296, 0.0236),
                   "kinetic_energy_per_particle": (15.1321, 0.0174), "acceptance": 0.3723,
                   "n": 1000, "b": 3.07, "walkers": 16, "m": 4, "analyses": 2000},
    "t_sigma2_s_mK2": {"K20": {512: 130.0}, "M2090": {512: 200.0}},
    "generation_ms_per_macroupdate_per_chain": {"K20": {40960: 418.0}},
}
OBSERVABLES = ("energy_per_particle", "potential_energy_per_particle", "kinetic_energy_per_particle",
               "kinetic_energy_gradient_per_particle")


def make_chains(system: Helium, walkers: int, seed: int = 0, backend: str = "cpu", sigma: float | None = None,
                acceptance: float = 0.37, **gpu_options):
    """W chains started from the system's lattice start, on ``backend`` "cpu" or "cuda"."""
    if backend not in ("cpu", "cuda"):
        raise ValueError(f"backend must be cpu or cuda, got {backend!r}")
    seq = np.random.SeedSequence(seed)
    start, streams = seq.spawn(2)
    positions = system.initial_positions(walkers, np.random.default_rng(start))
    states = rng.seed_states(streams, walkers)
    sigma = hc.step_for_acceptance(acceptance, system.params.density) if sigma is None else sigma
    if backend == "cpu":
        return hc.HeliumChainsCPU(system, positions, states, sigma)
    return hc.HeliumChains(system, positions, states, sigma, **gpu_options)


def _sync(chains):
    if chains.backend == "cuda":
        chains.synchronize()


def analysed_run(chains, analyses: int, m: int, equilibration: int = 0, progress=None) -> dict:
    """Equilibrate, then ``analyses`` × (m macroupdates + one energy analysis of every chain).

    Returns per-analysis walker means of E/N, V/N, T_lap/N, T_grad/N (arrays), the wall times of
    generation and analysis, and the acceptance of the measured part.
    """
    n = chains.system.n_particles
    if equilibration:
        chains.generate(equilibration)
        _sync(chains)
    accepted0, proposed0 = _accepted(chains), chains.proposed
    series = np.empty((analyses, 4))
    t_gen = t_ana = 0.0
    for k in range(analyses):
        start = time.perf_counter()
        chains.generate(m)
        _sync(chains)
        mid = time.perf_counter()
        series[k] = chains.energies().mean(axis=0) / n
        t_ana += time.perf_counter() - mid
        t_gen += mid - start
        if progress is not None:
            progress(k + 1, analyses)
    acceptance = (_accepted(chains) - accepted0) / max(1, (chains.proposed - proposed0) * _walkers(chains))
    return {"series": {name: series[:, i] for i, name in enumerate(OBSERVABLES)}, "t_generate_s": t_gen,
            "t_analyse_s": t_ana, "acceptance": float(acceptance)}


def _accepted(chains) -> int:
    a = chains.accepted
    return int((a if isinstance(a, np.ndarray) else a.copy_to_host()).sum())


def _walkers(chains) -> int:
    return getattr(chains, "n_walkers", None) or len(chains.accepted)


def sample_run(backend: str = "cpu", walkers: int = 16, analyses: int = 2000, m: int = 4, equilibration: int = 200,
               n: int = 1000, b: float = 3.07, seed: int = 2013, progress=None, **gpu_options) -> dict:
    """Study 004's sample run (no tail correction, like its e.dat): estimates next to the published values."""
    system = Helium(n=n, b=b, tail=False)
    chains = make_chains(system, walkers, seed=seed, backend=backend, **gpu_options)
    run = analysed_run(chains, analyses, m, equilibration, progress)
    estimates = {name: estimate(values) for name, values in run["series"].items()}
    return {"backend": backend, "n": n, "b": b, "walkers": walkers, "analyses": analyses, "m": m,
            "equilibration": equilibration, "acceptance": run["acceptance"],
            "estimates": {k: v.to_dict() for k, v in estimates.items()},
            "wall_s": run["t_generate_s"] + run["t_analyse_s"], "t_generate_s": run["t_generate_s"],
            "t_analyse_s": run["t_analyse_s"]}


# the study prints b as 0.307 nm, three digits: every b in [3.065, 3.075) Å prints so. As an input
# uncertainty that is uniform, with standard deviation 0.005 Å/√3.
B_ROUNDING_SD = 0.005 / math.sqrt(3)
SAMPLE_OBSERVABLES = ("energy_per_particle", "potential_energy_per_particle", "kinetic_energy_per_particle")


def b_slopes(scan: list[dict], b0: float = 3.07) -> dict:
    """dO/db at ``b0`` in K/Å for E/N, V/N, T/N: the derivative of a weighted quadratic in b through a b scan
    (rows with "b" and [mean, error] per observable, e.g. ``helium4_recorded.json["sample_b_scan"]``)."""
    bs = np.array([row["b"] for row in scan])
    slopes = {}
    for name in SAMPLE_OBSERVABLES:
        values, errors = (np.array([row[name][i] for row in scan]) for i in (0, 1))
        coefficients = np.polyfit(bs, values, 2, w=1.0 / errors)
        slopes[name] = float(np.polyval(np.polyder(coefficients), b0))
    return slopes


def compare_sample_run(result: dict, slopes: dict | None = None) -> list[dict]:
    """Rows (observable, qmckit, published, pull in combined σ) for a :func:`sample_run` result.

    The published uncertainty is the spread of e.dat's three printed rows over √3; with ``slopes``
    (dO/db in K/Å, :func:`b_slopes`) it also carries the rounding of the printed b (σ_b |dO/db|,
    σ_b = :data:`B_ROUNDING_SD`): V/N and T/N move with b by ±15 K/Å where E/N is stationary.
    """
    rows = []
    for name in SAMPLE_OBSERVABLES:
        mean, sd = PUBLISHED["sample_run"][name]
        published_error = sd / math.sqrt(3)  # the mean of the three printed rows
        if slopes is not None:
            published_error = math.hypot(published_error, B_ROUNDING_SD * slopes[name])
        est = result["estimates"][name]
        pull = (est["mean"] - mean) / math.hypot(est["error"], published_error)
        rows.append({"observable": name, "mean": est["mean"], "error": est["error"], "published": mean,
                     "published_error": published_error, "pull": pull})
    return rows


def time_generation(n: int, walkers: int, backend: str = "cpu", n_macro: int = 4, repeats: int = 3,
                    seed: int = 1, **gpu_options) -> dict:
    """Median time per macroupdate per chain (s) and pair evaluations per second after a warm-up."""
    system = Helium(n=n)
    chains = make_chains(system, walkers, seed=seed, backend=backend, **gpu_options)
    chains.generate(1)  # compile / warm up
    _sync(chains)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        chains.generate(n_macro)
        _sync(chains)
        times.append(time.perf_counter() - start)
    wall = float(np.median(times))
    per_chain = wall / (walkers * n_macro)
    pairs = 2.0 * (n - 1) * n * n_macro * walkers
    return {"n": n, "walkers": walkers, "backend": backend, "s_per_macroupdate_per_chain": per_chain,
            "pair_evaluations_per_s": pairs / wall, "wall_s": wall, "acceptance": chains.acceptance,
            "times_s": times, **{k: (str(v) if k == "dtype" else v) for k, v in gpu_options.items()}}


def time_to_error(n: int, walkers: int, backend: str = "cpu", m: int = 4, analyses: int = 200,
                  equilibration: int = 50, seed: int = 3, **gpu_options) -> dict:
    """t σ² (s·mK²) of E/N: wall time of generation + analysis times the squared reblocked error."""
    system = Helium(n=n)
    chains = make_chains(system, walkers, seed=seed, backend=backend, **gpu_options)
    run = analysed_run(chains, analyses, m, equilibration)
    est = estimate(run["series"]["energy_per_particle"])
    wall = run["t_generate_s"] + run["t_analyse_s"]
    return {"n": n, "walkers": walkers, "backend": backend, "m": m, "analyses": analyses,
            "energy_per_particle": est.to_dict(), "wall_s": wall, "t_generate_s": run["t_generate_s"],
            "t_analyse_s": run["t_analyse_s"], "t_sigma2_s_mK2": wall * (1e3 * est.error) ** 2}


def sample_configurations(n: int = 64, b: float = 3.07, walkers: int = 8, samples_per_walker: int = 250, m: int = 2,
                          equilibration: int = 100, seed: int = 5, backend: str = "cpu", **kwargs) -> tuple:
    """Configurations (S, N, 3) drawn from |ψ_b|² every ``m`` macroupdates (S = walkers × samples),
    ordered analysis by analysis, and the system they belong to."""
    system = Helium(n=n, b=b, **kwargs)
    chains = make_chains(system, walkers, seed=seed, backend=backend)
    chains.generate(equilibration)
    out = np.empty((samples_per_walker, walkers, n, 3))
    for k in range(samples_per_walker):
        chains.generate(m)
        out[k] = chains.positions()
    return out.reshape(-1, n, 3), system


def correlated_energy_scan(system: Helium, samples: np.ndarray, bs, blocks: int = 20) -> list[dict]:
    """E/N(b) for every b in ``bs`` from ONE set of configurations drawn at ``system.params.b``
    (correlated sampling): weights |ψ_b/ψ_b0|², E = Σ w E_L(b) / Σ w, errors by jackknife over
    ``blocks`` consecutive blocks. Also the effective sample fraction (Σw)²/(S Σw²), which says where
    the reweighting stops being trustworthy (≲ 0.1)."""
    from dataclasses import replace

    from ..systems import helium as he

    samples = np.ascontiguousarray(samples, dtype=np.float64)
    S, n = samples.shape[0], system.n_particles
    p0 = system.kernel_params
    log0 = np.array([he.log_psi(R, p0) for R in samples])
    usable = S - S % blocks
    rows = []
    for b in bs:
        other = Helium(replace(system.params, b=float(b)))
        p = other.kernel_params
        energies = other.measure(samples)[:, 0] / n
        log_w = 2.0 * (np.array([he.log_psi(R, p) for R in samples]) - log0)
        w = np.exp(log_w - log_w.max())
        wb = w[:usable].reshape(blocks, -1).sum(axis=1)
        ewb = (w * energies)[:usable].reshape(blocks, -1).sum(axis=1)
        full = ewb.sum() / wb.sum()
        leave_one_out = (ewb.sum() - ewb) / (wb.sum() - wb)
        error = math.sqrt((blocks - 1) / blocks * np.sum((leave_one_out - leave_one_out.mean()) ** 2))
        rows.append({"b": float(b), "energy_per_particle": float(full), "error": error,
                     "effective_fraction": float(w.sum() ** 2 / (S * np.sum(w ** 2)))})
    return rows
