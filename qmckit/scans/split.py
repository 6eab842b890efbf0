"""One big run split over workers (PyQMC's ``vmc_parallel`` pattern): the walkers are partitioned and every part
runs with a seed derived from (seed, parts, part), so a split run is reproducible from (seed, parts) whatever executor
runs the parts; its merged statistics are those of one process with all the walkers (in distribution: the random
streams differ).

**VMC** (:func:`split_run` of a VMC config): every part is a whole run on a worker; the per-sweep walker averages are
merged with the walker counts as weights.

**DMC**: every part (:class:`DMCPart`) is a DMC run of its share W_k of the walkers that stays on one worker for the
whole run (a Dask actor; an object in this process for ``client="serial"``), so its walkers travel only when the
parts must be evened out. A part branches its own walkers with renormalised branching (``DMC.fixed_population``):
⌊W_k q/Σq + u⌋ copies of each walker, so its population stays at W_k within rounding and no part waits for a larger
one. The weight that the renormalisation takes out is carried instead: every walker of part k has the weight Π_k,
and each step multiplies it by (Σq)/W_k, the sum over the part's walkers (their weight after the step) over the
walkers they become. It equilibrates on its own (VMC sweeps, then the unrecorded DMC equilibration steps), then runs the blocks, branching with one E_T for the
whole block. Between blocks the driver merges the parts' steps, every part's with its weight Π_k (relative to the
walkers' mean weight):

* mixed estimator Σ_k Π_k Σq E_L' / Σ_k Π_k Σq, with the step's weight Σ_k Π_k Σq (as Σq of one process);
  populations, kills, copies and removals summed; acceptance weighted by population;
* E_ref follows the merged steps as in one process (a moving average with time constant τ_block =
  max(τ_fb, block × Δτ)), and E_T = E_ref: with renormalised branching E_T scales every q alike and steers no
  population; the sums of E_best (the centre of the energy cut) and of τ_eff add up the merged steps.

The weights Π_k wander apart (branching is heavy-tailed near a hard-core contact, where one walker can make dozens of
copies). Unequal weights cost statistics, n_eff/n = (Σ Π_k W_k)² / (W Σ Π_k² W_k); when that falls below
:data:`WEIGHT_EFFICIENCY`, every part resamples its walkers to Π_k/Π̄ copies each on average (⌊Π_k/Π̄ + u⌋, the
renormalised rule again), all weights become equal, and walkers move from the parts then above their shares to those
below: positions, caches, random streams and energies. A part more than :data:`REBALANCE_FRACTION` from its share
(rounding only, in a small part) is evened out the same way, weights first: a walker that moved without it would take
its receiver's weight.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict

import numpy as np

from .grid import SEED_BOUND
from .share import share

REBALANCE_FRACTION = 0.05  # a part this far from its share of the population (relative) triggers a rebalance
WEIGHT_EFFICIENCY = 0.98  # the parts' weights are evened out when their spread leaves this n_eff/n


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
    """One VMC part on a worker: its per-sweep energy series (the reported unit), its walker count and acceptance."""
    from ..runs import RunConfig, make_run

    run = make_run(RunConfig(**(config | {"walkers": walkers, "seed": seed})))
    result = run.run()
    return {"series": run.energy_series(), "walkers": walkers, "acceptance": result["acceptance"],
            "energy_key": run.system.energy_key, "seed": seed}


class DMCPart:
    """One part of a split DMC run: a :class:`~qmckit.runs.DMCRun` of ``walkers`` walkers with seed ``seed`` whose
    branching keeps ``target`` walkers (renormalised), driven block by block with the E_T the driver sets (see the
    module docstring)."""

    def __init__(self, config: dict, walkers: int, target: int, seed: int):
        from ..runs import RunConfig, make_run

        self.run = make_run(RunConfig(**(config | {"walkers": walkers, "target_walkers": target, "seed": seed})))
        self.run.fixed_population = self.target = int(target)

    def equilibrate(self) -> dict:
        """VMC equilibration and the DMC equilibration steps; returns what the driver merges."""
        for _ in self.run._equilibration_pieces():
            pass
        dmc = self.run.dmc
        return {"population": dmc.walkers.n_walkers, "reference_energy": dmc.reference_energy,
                "start_sigma": dmc.start_sigma, "best_sums": list(dmc.best_sums),
                "diffusion_sums": list(dmc.diffusion_sums), "energy_key": self.run.system.energy_key,
                "energy_scale": self.run.system.energy_scale()}

    def block(self, steps: int, trial_energy: float, best_sums, diffusion_sums, start_sigma: float) -> dict:
        """``steps`` DMC steps branching with ``trial_energy``, starting from the global E_best and τ_eff sums and the
        global σ₀ of the energy cut. Returns the steps' series, the populations before each step
        (``start_population``), ln Π of this part's walkers before each step and after the last, relative to the
        block's start (``log_weight``, steps + 1 values), and this part's increments of the τ_eff sums."""
        from ..runs import DMCRun

        dmc = self.run.dmc
        dmc.trial_energy, dmc.start_sigma = float(trial_energy), float(start_sigma)
        dmc.best_sums, dmc.diffusion_sums = [float(x) for x in best_sums], [float(x) for x in diffusion_sums]
        self.run.vmc.recompute()  # discard the round-off of incremental cache updates, as a run's block does
        if hasattr(dmc.driver, "release_shared"):  # the walkers given on the device have been copied
            dmc.driver.release_shared()
        records, starts, log_weight = [], [], [0.0]
        for _ in range(steps):
            starts.append(dmc.walkers.n_walkers)
            records.append(dmc.step(feedback=False))
            log_weight.append(log_weight[-1] + math.log(records[-1].weight / self.target))
        return {"series": {name: [getattr(r, name) for r in records] for name in DMCRun.SERIES},
                "start_population": starts, "log_weight": log_weight,
                "diffusion_sums": [a - b for a, b in zip(dmc.diffusion_sums, diffusion_sums)],
                "cap_warnings": dmc.cap_warnings}

    def resample(self, copies: float) -> int:
        """Replace every walker by ⌊copies + u⌋ copies of itself (evening out the parts' weights; never thinned to
        ``max_walkers``, which would lose weight); returns the population."""
        dmc = self.run.dmc
        dmc.branch(np.full(dmc.walkers.n_walkers, float(copies)), dmc.energies, cap=False)
        return dmc.walkers.n_walkers

    def where(self) -> dict | None:
        """Where this part's walkers live when they are on a GPU that shares them (host, device and the devices this
        process sees: :func:`~qmckit.samplers.cuda.device_identity`, and the process); None when they are on the
        host."""
        if not getattr(self.run.vmc, "shares_device", False):
            return None
        import os

        from ..samplers.cuda import device_identity

        return {**device_identity(), "pid": os.getpid()}

    def give(self, counts, shared) -> list[dict]:
        """Remove this part's last walkers, ``counts[j]`` for the j-th receiver, and return them with their energies:
        left on this GPU for a receiver that can copy them from there where ``shared[j]``, else through the host."""
        dmc = self.run.dmc
        out = []
        for n, on_device in zip(counts, shared):
            keep = dmc.walkers.n_walkers - n
            walkers = dmc.driver.take_last_shared(n) if on_device else dmc.driver.take_last(n)
            out.append({"walkers": walkers, "energies": dmc.energies[keep:].copy()})
            dmc.energies = dmc.energies[:keep].copy()
        return out

    def receive(self, given: list[dict]) -> int:
        """Append the walkers that other parts gave (:meth:`give`), in turn; returns the population."""
        dmc = self.run.dmc
        for g in given:
            dmc.driver.append(g["walkers"])
            dmc.energies = np.concatenate([dmc.energies, g["energies"]])
        return dmc.walkers.n_walkers


def split_run(config, parts: int, client="serial", progress=None) -> dict:
    """Run ``config`` (a VMC or DMC :class:`~qmckit.runs.RunConfig`) as ``parts`` parts on ``client`` and merge them.

    ``client``: ``"serial"`` (in this process), or a ``dask.distributed.Client`` (parts spread over its workers in
    address order); a VMC run also takes any executor with ``submit``. ``progress(done, total)`` is called after every
    DMC block. Returns ``{"estimates": {name: Estimate dict}, "series" (the merged energy per step or sweep, in the
    reported unit), "walkers" (the parts' counts), "parts", "seeds", "acceptance"}``; a DMC run adds ``weights``,
    ``population``, ``trial_energy`` (series), ``tau_eff``, ``equilibration_s`` and ``blocks_s`` (wall times),
    ``rebalanced`` (walkers moved between parts; ``moved_on_device`` of them straight from GPU to GPU),
    ``resampled`` (how often the parts' weights were evened out), ``rebalance_s`` (wall time spent evening out),
    ``setup_s`` (wall time to start the parts), ``calls_s`` (wall time of the calls to the parts, by method),
    ``load_imbalance`` (the mean over steps of the largest part's population over the parts' mean, minus one: the
    fraction of a step the other parts wait), ``weight_efficiency`` (the mean over steps of n_eff/n of the parts'
    weights) and ``population_cap_hits``."""
    if parts < 1 or int(parts) != parts:
        raise ValueError(f"parts must be a positive integer, got {parts!r}")
    if config.method == "dmc":
        return _split_dmc(config, int(parts), client, progress)
    from ..stats import estimate

    counts = partition(config.walkers, parts)
    seeds = [part_seed(config.seed, parts, k) for k in range(parts)]
    base = asdict(config)
    share(client, config.system)
    if client == "serial":
        results = [run_part(base, w, s) for w, s in zip(counts, seeds)]
    else:
        futures = [client.submit(run_part, base, w, s) for w, s in zip(counts, seeds)]
        results = [f.result() for f in futures]
    weights = np.array(counts, dtype=float)
    series = np.tensordot(weights / weights.sum(), np.array([r["series"] for r in results]), axes=1)
    _check_finite(series)
    key = results[0]["energy_key"]
    acceptance = float(np.dot(weights, [r["acceptance"] for r in results]) / weights.sum())
    return {"estimates": {key: estimate(series).to_dict()}, "series": series, "walkers": counts, "parts": parts,
            "seeds": seeds, "acceptance": acceptance}


def _check_finite(series) -> None:
    if not np.all(np.isfinite(series)):  # as a one-process run: no estimate rather than a silent NaN
        raise FloatingPointError("a part's local energy was not finite: ψ_T fails somewhere it samples")


class _Parts:
    """The parts of a DMC run and a way to call a method on all of them at once (in this process, or on Dask
    actors, whose calls run concurrently)."""

    def __init__(self, client, base: dict, counts, targets, seeds):
        args = list(zip(counts, targets, seeds))
        self.moved_on_device = 0  # walkers copied from GPU to GPU between parts
        self.seconds = {}  # wall time of the calls to the parts, by method
        if client == "serial":
            self.handles, self.remote = [DMCPart(base, *a) for a in args], False
            return
        if not (type(client).__module__.startswith("distributed") and hasattr(client, "scheduler_info")):
            raise ValueError("client: a DMC run is split on 'serial' or a dask.distributed Client (its parts keep "
                             f"their walkers on a worker between blocks), got {client!r}")
        share(client, base["system"])
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise ValueError("client: the Dask cluster has no workers")
        futures = [client.submit(DMCPart, base, *a, actor=True, pure=False, workers=[workers[k % len(workers)]],
                                 allow_other_workers=False) for k, a in enumerate(args)]
        self.handles, self.remote = [f.result() for f in futures], True
        self.places = self.call("where", [()] * len(self.handles))

    def shares_device(self, giver: int, receiver: int) -> bool:
        """Whether ``receiver`` can copy ``giver``'s walkers straight from its GPU: both on GPUs, in other processes of
        one host, the giver's GPU visible to the receiver."""
        if not self.remote:
            return False
        g, r = self.places[giver], self.places[receiver]
        return g is not None and r is not None and g["host"] == r["host"] and g["pid"] != r["pid"] and \
            g["device"] in r["visible"]

    def call(self, method: str, args, which=None) -> list:
        """``handle.method(*a)`` for each part (or each part numbered in ``which``) and its ``a`` in ``args``; the
        results in that order."""
        start = time.perf_counter()
        handles = self.handles if which is None else [self.handles[k] for k in which]
        calls = [getattr(h, method)(*a) for h, a in zip(handles, args)]
        out = [c.result() for c in calls] if self.remote else calls
        self.seconds[method] = self.seconds.get(method, 0.0) + time.perf_counter() - start
        return out


def _split_dmc(config, parts: int, client, progress) -> dict:
    import warnings

    from ..stats import ShortSeriesWarning, estimate

    if config.density is not None:
        raise ValueError("density: a split DMC run measures no density histogram (run it in one process)")
    counts = partition(config.walkers, parts)
    targets = partition(config.target_walkers, parts)
    seeds = [part_seed(config.seed, parts, k) for k in range(parts)]
    start = time.perf_counter()
    group = _Parts(client, asdict(config), counts, targets, seeds)
    setup_s = time.perf_counter() - start

    start = time.perf_counter()
    states = group.call("equilibrate", [()] * parts)
    equilibration_s = time.perf_counter() - start
    pops = [s["population"] for s in states]
    population = sum(pops)
    tau_block = max(config.feedback_time, config.block * config.dt)
    reference = sum(s["reference_energy"] * s["population"] for s in states) / population
    sigma = float(np.dot(counts, [s["start_sigma"] for s in states]) / sum(counts))
    best = np.sum([s["best_sums"] for s in states], axis=0)
    diffusion = np.sum([s["diffusion_sums"] for s in states], axis=0)
    log_weight = np.zeros(parts)  # ln Π_k: the weight of every walker of part k, relative
    merged = {name: [] for name in ("mixed_energy", "weight", "population", "trial_energy", "killed", "copied",
                                    "removed", "acceptance")}
    cap_hits, imbalance, efficiency = 0, [], []
    start = time.perf_counter()
    moved, resampled = _rebalance(group, pops), 0  # the parts' equilibrations ended near, not at, their shares
    rebalance_s = time.perf_counter() - start
    blocks_start = time.perf_counter()
    sizes = [config.block] * (config.steps // config.block) + ([config.steps % config.block] if config.steps %
                                                                 config.block else [])
    for done, size in enumerate(sizes, start=1):
        trial = reference  # renormalised branching: E_T scales every q alike and steers no population
        out = group.call("block", [(size, trial, best.tolist(), diffusion.tolist(), sigma)] * parts)
        series = {name: np.array([o["series"][name] for o in out], dtype=float) for name in merged}  # (parts, size)
        ln_pi = log_weight[:, None] + np.array([o["log_weight"][:-1] for o in out])  # before each step
        walkers = np.array([o["start_population"] for o in out], dtype=float)
        pi = np.exp(ln_pi - ln_pi.max(axis=0))
        pi /= (pi * walkers).sum(axis=0) / walkers.sum(axis=0)  # relative to the walkers' mean weight
        efficiency.extend((pi * walkers).sum(axis=0) ** 2 / (walkers.sum(axis=0) * (pi ** 2 * walkers).sum(axis=0)))
        part_weight = pi * series["weight"]
        weight = part_weight.sum(axis=0)
        mixed = (part_weight * series["mixed_energy"]).sum(axis=0) / weight
        pop = series["population"].sum(axis=0)
        for name in ("killed", "copied", "removed"):
            merged[name].extend(series[name].sum(axis=0))
        merged["acceptance"].extend((series["population"] * series["acceptance"]).sum(axis=0) / pop)
        merged["mixed_energy"].extend(mixed)
        merged["weight"].extend(weight)
        merged["population"].extend(pop)
        merged["trial_energy"].extend([trial] * size)
        for e in mixed:  # E_ref follows the merged steps
            reference += min(1.0, config.dt / tau_block) * (e - reference)
        best += [float(np.dot(weight, mixed)), float(weight.sum())]
        diffusion += np.sum([o["diffusion_sums"] for o in out], axis=0)
        cap_hits = sum(o["cap_warnings"] for o in out)
        # the largest part sets the pace of a step: its excess over the mean is the time the others wait
        imbalance.extend(series["population"].max(axis=0) / series["population"].mean(axis=0) - 1)
        pops = [int(p[-1]) for p in series["population"]]
        log_weight += [o["log_weight"][-1] for o in out]
        log_weight -= log_weight.max()
        start = time.perf_counter()
        pi, n = np.exp(log_weight), np.array(pops, dtype=float)
        # a walker that moves takes its receiver's weight: the weights are evened out first, whichever triggers it
        if np.dot(pi, n) ** 2 < WEIGHT_EFFICIENCY * n.sum() * np.dot(pi ** 2, n) or not _balanced(pops):
            pops = group.call("resample", [(p,) for p in pi * n.sum() / np.dot(pi, n)])
            log_weight[:] = 0.0
            resampled += 1
            moved += _rebalance(group, pops, always=True)  # the resampled parts' surpluses to the others
        rebalance_s += time.perf_counter() - start
        if progress:
            progress(done, len(sizes))

    blocks_s = time.perf_counter() - blocks_start
    scale, key = states[0]["energy_scale"], states[0]["energy_key"]
    energies = np.array(merged["mixed_energy"]) / scale
    _check_finite(energies)
    weights = np.array(merged["weight"])
    estimates = {key: estimate(energies, weights=weights).to_dict()}
    with warnings.catch_warnings():  # diagnostics of the population control, as a one-process run reports them
        warnings.simplefilter("ignore", ShortSeriesWarning)
        estimates["population"] = estimate(np.array(merged["population"], dtype=float)).to_dict()
        estimates["trial_energy"] = estimate(np.array(merged["trial_energy"]) / scale).to_dict()
    proposed, accepted = diffusion
    return {"estimates": estimates, "series": energies, "weights": weights,
            "population": np.array(merged["population"]), "trial_energy": np.array(merged["trial_energy"]) / scale,
            "walkers": counts, "parts": parts, "seeds": seeds, "acceptance": float(np.mean(merged["acceptance"])),
            "tau_eff": config.dt * accepted / proposed if proposed > 0 else config.dt,
            "equilibration_s": equilibration_s, "blocks_s": blocks_s, "rebalanced": moved,
            "moved_on_device": group.moved_on_device, "resampled": resampled,
            "rebalance_s": rebalance_s, "setup_s": setup_s, "calls_s": dict(group.seconds),
            "load_imbalance": float(np.mean(imbalance)), "weight_efficiency": float(np.mean(efficiency)), "population_cap_hits": cap_hits}


def _balanced(pops: list[int], fraction: float = REBALANCE_FRACTION) -> bool:
    """Whether every part is within ``fraction`` of its share of the total (or one walker)."""
    return all(abs(p - s) <= max(1.0, fraction * s) for p, s in zip(pops, partition(sum(pops), len(pops))))


def _rebalance(group: _Parts, pops: list[int], always: bool = False) -> int:
    """Move walkers from the parts above their shares of the total to those below, when one is more than
    :data:`REBALANCE_FRACTION` (and one walker) away, or ``always``; updates ``pops`` and returns the walkers
    moved. The parts' weights must be equal (just after the equilibration, or a resampling). Each giver hands its
    walkers straight to its receivers' GPUs where they see its GPU (CUDA IPC: parts on one host,
    :func:`~qmckit.scans.execute.start_executor`'s GPU workers), else through this process."""
    if _balanced(pops, 0.0 if always else REBALANCE_FRACTION):
        return 0
    shares = partition(sum(pops), len(pops))
    # givers and receivers matched in order: (giver, receiver, walkers)
    surplus = [[k, pops[k] - shares[k]] for k in range(len(pops)) if pops[k] > shares[k]]
    transfers = []
    for k in range(len(pops)):
        need = shares[k] - pops[k]
        while need > 0:
            n = min(need, surplus[0][1])
            transfers.append((surplus[0][0], k, n))
            need -= n
            surplus[0][1] -= n
            if surplus[0][1] == 0:
                surplus.pop(0)
    givers = sorted({g for g, _, _ in transfers})
    receivers = sorted({r for _, r, _ in transfers})
    mine = {g: [t for t in transfers if t[0] == g] for g in givers}
    shared = {(g, r): group.shares_device(g, r) for g, r, _ in transfers}
    group.moved_on_device += sum(n for g, r, n in transfers if shared[g, r])
    given = group.call("give", [([n for _, _, n in mine[g]], [shared[g, r] for g, r, _ in mine[g]]) for g in givers],
                       givers)
    payloads = {r: [] for r in receivers}
    for g, out in zip(givers, given):
        for (_, r, _), payload in zip(mine[g], out):
            payloads[r].append(payload)
    group.call("receive", [(payloads[r],) for r in receivers], receivers)
    pops[:] = shares
    return sum(n for _, _, n in transfers)
