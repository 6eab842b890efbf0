"""One big VMC run split over workers (PyQMC's ``vmc_parallel`` pattern): the walkers are partitioned, every worker
runs its part with a seed derived from (seed, parts, part), and the per-sweep walker averages are merged with the
walker counts as weights, so the merged series is the one a single run of all the walkers would record (in
distribution: the random streams differ). Reproducible from (seed, parts), whatever executor runs the parts.

DMC is not split yet (its trial energy must be updated globally once per block): a DMC config is refused.
"""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from .grid import SEED_BOUND


def part_seed(seed: int, parts: int, part: int) -> int:
    """The seed of part ``part`` of ``parts`` of a run with seed ``seed``."""
    return int(np.random.SeedSequence([int(seed), int(parts), int(part)]).generate_state(1, np.uint64)[0] % SEED_BOUND)


def partition(walkers: int, parts: int) -> list[int]:
    """``walkers`` as ``parts`` counts differing by at most one (the first ones larger)."""
    if not 1 <= parts <= walkers:
        raise ValueError(f"parts must be between 1 and the {walkers} walkers, got {parts}")
    base, extra = divmod(walkers, parts)
    return [base + (k < extra) for k in range(parts)]


def run_part(config: dict, walkers: int, seed: int) -> dict:
    """One part on a worker: its per-sweep energy series (the reported unit), its walker count and acceptance."""
    from ..runs import RunConfig, make_run

    run = make_run(RunConfig(**(config | {"walkers": walkers, "seed": seed})))
    result = run.run()
    return {"series": run.energy_series(), "walkers": walkers, "acceptance": result["acceptance"],
            "energy_key": run.system.energy_key, "seed": seed}


def split_run(config, parts: int, client="serial") -> dict:
    """Run ``config`` (a VMC :class:`~qmckit.runs.RunConfig`) as ``parts`` parts on ``client`` (``"serial"`` or an
    executor with ``submit``) and merge them. Returns ``{"estimates": {energy_key: Estimate dict}, "series",
    "walkers", "parts", "seeds", "acceptance"}``."""
    from ..stats import estimate

    if config.method != "vmc":
        raise ValueError(f"method: only VMC runs can be split over workers yet, got {config.method!r}")
    counts = partition(config.walkers, parts)
    seeds = [part_seed(config.seed, parts, k) for k in range(parts)]
    base = asdict(config)
    if client == "serial":
        results = [run_part(base, w, s) for w, s in zip(counts, seeds)]
    else:
        futures = [client.submit(run_part, base, w, s) for w, s in zip(counts, seeds)]
        results = [f.result() for f in futures]
    weights = np.array(counts, dtype=float)
    series = np.tensordot(weights / weights.sum(), np.array([r["series"] for r in results]), axes=1)
    if not np.all(np.isfinite(series)):  # as a one-process run: no estimate rather than a silent NaN
        raise FloatingPointError("a part's local energy was not finite: ψ_T fails somewhere it samples")
    key = results[0]["energy_key"]
    acceptance = float(np.dot(weights, [r["acceptance"] for r in results]) / weights.sum())
    return {"estimates": {key: estimate(series).to_dict()}, "series": series, "walkers": counts, "parts": parts,
            "seeds": seeds, "acceptance": acceptance}
