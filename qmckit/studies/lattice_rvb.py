"""Study 000 (Rajagopalan, LSU MS thesis 2013): projected d-wave RVB VMC on tilted clusters.

The thesis reports no energies, only sizes and timings; the energies qmckit produces at its Table
6.1 parameters are new reference numbers (``data/lattice_rvb_recorded.json``), fixed by the conventions of
:mod:`qmckit.systems.lattice_rvb`. This module holds the study's parameters and published numbers,
the exact checks on small clusters (enumeration of every projected configuration, exact
diagonalisation) and the runs behind the notebook's tables.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..backends.lattice_chains import configuration_energies
from ..methods.lattice_vmc import LatticeRun, LatticeRunConfig
from ..systems import lattice_exact
from ..systems.lattice_rvb import LatticeRVB, add_correlations
from ..resources import data_dir

DATA = data_dir()
RECORDED = DATA / "lattice_rvb_recorded.json"   # energies (benchmarks/lattice_energies.py)
TIMINGS = DATA / "lattice_rvb_timings.json"     # device timings (benchmarks/lattice_chains.py)

# Table 6.1: t = 1, t′ = t″ = 0, J = 0.3, x = 0.1, Δ = 1.5, μ = 0; 32 chains, 5000 + 5000 sweeps
TABLE_61 = {"J": 0.3, "doping": 0.1, "delta": 1.5, "mu": 0.0}
TABLE_61_RUN = {"chains": 32, "equilibration": 5000, "steps": 5000}
# Tables 6.2/6.3 (32 chains; s): CPU i7-2600 one core, chains in sequence; GPU Tesla M2070
PUBLISHED_SECONDS = {5: {"cpu_one_core": 22.66, "gpu_bfactor8": 3.19, "gpu_bfactor16": 2.48, "cpu_per_chain": 0.70},
                     9: {"cpu_one_core": 287.13, "gpu_bfactor8": 17.37, "gpu_bfactor16": 14.44, "cpu_per_chain": 9.07},
                     15: {"cpu_one_core": 4992.24, "gpu_bfactor8": 309.72, "gpu_bfactor16": 256.83,
                          "cpu_per_chain": 156.02}}
# Table 4.1 as printed (bytes; kB = 1000 B)
TABLE_41 = {5: {"n_sites": 26, "n_electrons": 24, "n_pairs": 12, "psi_inv": 1152, "pair_function": 5408, "plist": 96},
            9: {"n_sites": 82, "n_electrons": 74, "n_pairs": 37, "psi_inv": 10952, "pair_function": 53792,
                "plist": 296},
            15: {"n_sites": 226, "n_electrons": 204, "n_pairs": 102, "psi_inv": 83232, "pair_function": 408608,
                 "plist": 816}}


def recorded(path: Path = RECORDED) -> dict | None:
    """A recorded-results file as a dict (None if it has not been written yet)."""
    return json.loads(path.read_text()) if path.exists() else None


def all_configurations(system: LatticeRVB) -> tuple[np.ndarray, np.ndarray]:
    """Every configuration of the state's space in the exact-diagonalisation basis order: (D, N_p) site lists."""
    return lattice_exact.basis(system.n_sites, system.n_pairs, projected=system.projected)


def amplitudes(system: LatticeRVB, up_sites: np.ndarray, dn_sites: np.ndarray) -> np.ndarray:
    """Ψ(x) for configurations given as (D, N_p) ascending site lists (the Fock-basis amplitudes)."""
    state = system.chain_state(up_sites, dn_sites)
    up, dn = state["up_site"], state["dn_site"]
    return np.linalg.det(system.pair[up[:, :, None], dn[:, None, :]])


def hamiltonian(system: LatticeRVB):
    """The t–J (or, for ``free``, tight-binding) Hamiltonian of the state's cluster as a sparse matrix."""
    hops, amps = system.cluster.hop_list()
    return lattice_exact.hamiltonian(system.n_sites, system.n_pairs, hops, amps, system.cluster.bonds,
                                     system.params.J, projected=system.projected)


def exact_check(system: LatticeRVB) -> dict:
    """The state's exact variational energy two independent ways, and the exact ground state (per site, t).

    ``enumeration``: Σ_x Ψ(x)² E_L(x) / Σ_x Ψ(x)² with qmckit's local-energy kernel over every
    configuration (what VMC samples); ``expectation``: ⟨Ψ|H|Ψ⟩/⟨Ψ|Ψ⟩ with H built from fermion
    operators (:mod:`qmckit.systems.lattice_exact`): equal only if every ratio and sign of the local
    energy is right. ``ground_state``: the lowest eigenvalue of H (the variational bound).
    """
    up, dn = all_configurations(system)
    psi = amplitudes(system, up, dn)
    keep = np.abs(psi) > 1e-12 * np.abs(psi).max()
    state = system.chain_state(up[keep], dn[keep])
    local = configuration_energies(*system.kernel_args(), state["up_site"], state["dn_site"], state["up_at"],
                                   state["dn_at"], state["ainv"])
    weights = psi[keep] ** 2 / np.sum(psi[keep] ** 2)
    h = hamiltonian(system)
    n = system.n_sites
    return {"dimension": int(len(psi)), "zero_amplitudes": int((~keep).sum()),
            "enumeration": float(weights @ (local[:, 0] + local[:, 1])) / n,
            "kinetic": float(weights @ local[:, 0]) / n, "exchange": float(weights @ local[:, 1]) / n,
            "expectation": lattice_exact.variational_energy(h, psi) / n,
            "ground_state": lattice_exact.ground_state_energy(h) / n}


def correlations(system: LatticeRVB, state: dict, weights: np.ndarray | None = None) -> dict:
    """Spin and d-wave pair correlations per displacement r, averaged over configurations (chain arrays
    of :meth:`LatticeRVB.chain_state`) with ``weights`` (default equal): ``spin`` (N_s,) ⟨S^z_0 S^z_r⟩,
    ``pairing`` (N_s,) P_d(r): the sum of :func:`~qmckit.systems.lattice_rvb.add_correlations` divided by
    the number of (i, δ, δ′) terms whose bonds share no site (the mean signed bond-pair correlation;
    0 where every term overlaps), ``distance`` (N_s,) |r| (minimum image), ``terms`` those terms per i."""
    n, m = system.n_sites, system.size
    translate = system.cluster.translations()
    step, step_sign = system.cluster.unit_steps()
    n_conf = state["up_site"].shape[0]
    weights = np.full(n_conf, 1.0 / n_conf) if weights is None else np.asarray(weights) / np.sum(weights)
    spin, pairing, counts = np.zeros(n), np.zeros(n), np.zeros(n)
    F, G = np.empty((n, m)), np.empty((m, n))
    for w in range(n_conf):
        s, p, c = np.zeros(n), np.zeros(n), np.zeros(n)
        add_correlations(system.pair, translate, step, step_sign, state["up_site"][w], state["dn_site"][w],
                         state["up_at"][w], state["dn_at"][w], state["ainv"][w], F, G, s, p, c)
        spin += weights[w] * s
        pairing += weights[w] * p
        counts = c
    return {"spin": spin, "pairing": np.divide(pairing * n, counts, out=np.zeros(n), where=counts > 0),
            "distance": minimum_image_distances(system.cluster), "terms": counts / n}


def sample_correlations(L: int, chains: int = 8, samples: int = 200, sweeps_between: int = 2, equilibration: int = 200,
                        seed: int = 1, **params) -> dict:
    """VMC spin and pair correlations (:func:`correlations`) at Table 6.1 parameters (overridden by
    ``params``): mean over ``samples`` × ``chains`` configurations, with the standard error over chains."""
    from ..backends.lattice_chains import CpuChains
    from ..rng import seed_states

    system = LatticeRVB(**({"L": L} | TABLE_61 | params))
    start, streams = np.random.SeedSequence(seed).spawn(2)
    runner = CpuChains(system, system.random_configurations(chains, np.random.default_rng(start)),
                       seed_states(streams, chains))
    runner.sweep(equilibration, measure=False)
    per_chain = {"spin": np.zeros((chains, system.n_sites)), "pairing": np.zeros((chains, system.n_sites))}
    for _ in range(samples):
        runner.sweep(sweeps_between, measure=False)
        for w in range(chains):
            one = correlations(system, {k: v[w:w + 1] for k, v in runner.state.items()})
            for key in per_chain:
                per_chain[key][w] += one[key] / samples
    out = {"distance": minimum_image_distances(system.cluster), "system": system}
    for key, values in per_chain.items():
        out[key] = values.mean(axis=0)
        out[key + "_error"] = values.std(axis=0, ddof=1) / np.sqrt(chains)
    return out


def minimum_image_distances(cluster) -> np.ndarray:
    """|r| of each displacement r (site index read from site 0), the shortest periodic image."""
    L = cluster.L
    r = cluster.coords - cluster.coords[0]
    images = ([(a * L - b, a + b * L) for a in (-1, 0, 1) for b in (-1, 0, 1)] if cluster.kind == "tilted"
              else [(a * L, b * L) for a in (-1, 0, 1) for b in (-1, 0, 1)])
    return np.min([np.hypot(r[:, 0] + dx, r[:, 1] + dy) for dx, dy in images], axis=0)


def run_energy(L: int, chains: int = 32, steps: int = 5000, equilibration: int = 5000, seed: int = 13213,
               progress=None, backend: str = "cpu", **params) -> dict:
    """One VMC run at study 000's Table 6.1 parameters (overridden by ``params``); the run's result dict."""
    config = LatticeRunConfig(params={"L": L, **TABLE_61, **params}, chains=chains, steps=steps,
                              equilibration=equilibration, seed=seed, backend=backend)
    return LatticeRun(config).run(progress)


def energy_scan(deltas, L: int = 5, chains: int = 32, steps: int = 2000, equilibration: int = 500, seed: int = 1,
                progress=None, **params) -> list[dict]:
    """E/N_s(Δ) at fixed μ: one run per Δ with the same seed; a list of {delta, energy, error, result}."""
    rows = []
    for k, delta in enumerate(deltas):
        result = run_energy(L, chains, steps, equilibration, seed, **(params | {"delta": float(delta)}))
        est = result["estimates"]["energy_per_site"]
        rows.append({"delta": float(delta), "energy": est["mean"], "error": est["error"], "result": result})
        if progress is not None:
            progress(k + 1, len(deltas))
    return rows


def parabola_minimum(x, y, dy) -> tuple[float, float]:
    """Minimum of the weighted quadratic fit y ≈ a + b x + c x², with its error from the fit covariance
    (scaled by √(χ²/dof) when the parabola fits worse than the error bars allow)."""
    x, y, dy = (np.asarray(v, dtype=float) for v in (x, y, dy))
    coef, cov = np.polyfit(x, y, 2, w=1.0 / dy, cov="unscaled")
    chi2 = float(np.sum(((np.polyval(coef, x) - y) / dy) ** 2))
    cov = cov * max(1.0, chi2 / max(len(x) - 3, 1))
    c, b = coef[0], coef[1]
    x0 = -b / (2 * c)
    grad = np.array([b / (2 * c * c), -1 / (2 * c), 0.0])  # ∂x0/∂(c, b, a)
    return float(x0), float(np.sqrt(grad @ cov @ grad))


def memory_table(sizes=(5, 9, 15), doping: float = 0.1) -> list[dict]:
    """Table 4.1 redone: sizes and bytes of Ψ⁻¹, the pair function and the site list."""
    return [{"L": L} | LatticeRVB(L=L, doping=doping).memory_bytes() for L in sizes]


def time_cpu(L: int, chains: int = 32, sweeps: int = 100, threads: int | None = None, seed: int = 1) -> dict:
    """Seconds per sweep per chain (equilibration and measured sweeps) of the CPU kernel at Table 6.1
    parameters, and the extrapolation to study 000's 5000 + 5000 sweeps for ``chains`` chains."""
    import numba

    from ..backends.lattice_chains import CpuChains
    from ..rng import seed_states

    system = LatticeRVB(L=L, **TABLE_61)
    state = system.random_configurations(chains, np.random.default_rng(seed))
    runner = CpuChains(system, state, seed_states(seed, chains))
    previous = numba.get_num_threads()
    numba.set_num_threads(threads or previous)
    try:
        runner.sweep(1)  # compile outside the clock
        start = time.perf_counter()
        runner.sweep(sweeps, measure=False)
        equilibration = (time.perf_counter() - start) / sweeps
        start = time.perf_counter()
        runner.sweep(sweeps)
        accumulation = (time.perf_counter() - start) / sweeps
    finally:
        numba.set_num_threads(previous)
    full = 5000 * (equilibration + accumulation)
    return {"L": L, "chains": chains, "threads": threads or previous, "sweeps_timed": sweeps,
            "s_per_sweep_equilibration": equilibration, "s_per_sweep_accumulation": accumulation,
            "s_full_run": full, "core_s_per_chain": full / chains * (threads or previous)}


# ``qmckit reproduce lattice`` and notebooks/lattice_rvb.ipynb (§2.2, §3, §6):
#   l3: chains, measured sweeps, equilibration sweeps of the VMC on the 10-site cluster; table61: L → (chains, measured
#   sweeps, equilibration sweeps) of the live Table 6.1 runs; timing: sizes L, sweeps timed per phase on the CPU
PRESETS = {
    "fast": {"l3": (16, 1500, 100), "table61": {5: (16, 1000, 200), 9: (16, 300, 100)}, "timing": ((5, 9), 40)},
    "full": {"l3": (32, 4000, 200), "table61": {5: (32, 5000, 5000), 9: (32, 5000, 5000)}, "timing": ((5, 9, 15), 200)},
}
# the 10-site cluster (L = 3, 8 electrons): Table 6.1's couplings at x = 0.2, and a case with every hopping term
L3_CASES = {"Table 6.1, x = 0.2": dict(L=3, doping=0.2, J=0.3, delta=1.5, mu=0.0),
            "t′ = −0.2, t″ = 0.1, Δ = 0.7, μ = −0.8, t′_v = −0.1": dict(L=3, doping=0.2, J=0.3, delta=0.7, mu=-0.8,
                                                                      tp=-0.2, tpp=0.1, tp_v=-0.1)}
EXACT_KEYS = {"energy_per_site": "enumeration", "kinetic_per_site": "kinetic", "exchange_per_site": "exchange"}


def vmc_against_exact(params: dict, exact: dict, chains: int, steps: int, equilibration: int, seed: int) -> dict:
    """A VMC run of ``params`` next to its :func:`exact_check` ``exact``: per-site energy, kinetic and exchange
    parts (mean, error), the exact values and the pulls; also the double occupancy and the inverse drift."""
    from .reports import pull

    result = LatticeRun(LatticeRunConfig(params=params, chains=chains, steps=steps, equilibration=equilibration,
                                         seed=seed)).run()
    est = result["estimates"]
    rows = {key: {"vmc": (est[key]["mean"], est[key]["error"]), "exact": exact[ref],
                  "pull": pull(est[key]["mean"], est[key]["error"], exact[ref])} for key, ref in EXACT_KEYS.items()}
    return {"rows": rows, "double_occupancy": est["double_occupancy"]["mean"], "inverse_drift": result["inverse_drift"],
            "acceptance": result["acceptance"]}


def reproduce(precision: str = "fast", seed: int = 4, progress=None) -> dict:
    """``qmckit reproduce lattice``: the exact checks at L = 3, live Table 6.1 energies against qmckit's recorded
    ones (the thesis prints none) and Table 4.1's sizes, the CPU timing next to Tables 6.2/6.3, and the GPU
    timing of the Table 6.2 workload where a GPU is present."""
    from ..samplers import lattice as lattice_samplers
    from .reports import check_precision, pull

    check_precision(precision, PRESETS)
    pre = PRESETS[precision]
    out = {"seed": seed,
           "preset": {k: (v if k != "table61" else {str(L): s for L, s in v.items()}) for k, v in pre.items()}}
    exact = {}
    for k, (name, params) in enumerate(L3_CASES.items()):
        if progress:
            progress(f"L = 3 exact check and VMC: {name}")
        ex = exact_check(LatticeRVB(**params))
        exact[name] = ex | {"vmc": vmc_against_exact(params, ex, *pre["l3"], seed=seed + k)}
    out["exact_l3"] = exact
    rec = {row["L"]: row for row in recorded()["table_61"]}
    table = []
    for k, (L, (chains, steps, equilibration)) in enumerate(pre["table61"].items()):
        if progress:
            progress(f"Table 6.1, L = {L}: {chains} chains × ({equilibration} + {steps}) sweeps")
        result = run_energy(L, chains=chains, steps=steps, equilibration=equilibration, seed=2013 + k)
        system = LatticeRVB(L=L, **TABLE_61)
        e = result["estimates"]["energy_per_site"]
        r = rec[L]["energy_per_site"]
        table.append({"L": L, "n_sites": system.n_sites, "n_electrons": system.n_electrons, "n_pairs": system.n_pairs,
                      "thesis_table41": {k_: TABLE_41[L][k_] for k_ in ("n_sites", "n_electrons", "n_pairs")},
                      "energy_per_site": (e["mean"], e["error"]), "recorded": tuple(r),
                      "pull_recorded": pull(e["mean"], e["error"], *r), "chains": chains,
                      "sweeps": (equilibration, steps), "acceptance": result["acceptance"]})
    out["table61"] = table
    sizes, sweeps = pre["timing"]
    timing = []
    for L in sizes:
        if progress:
            progress(f"CPU timing, L = {L}")
        one = time_cpu(L, sweeps=sweeps, threads=1)
        timing.append({"L": L, "cpu_one_core_s": one["s_full_run"], "thesis": PUBLISHED_SECONDS[L]})
    out["timing_cpu"] = timing
    recorded_gpu = json.loads(TIMINGS.read_text())
    out["timing_gpu_recorded"] = {"machine": recorded_gpu["machine"], "date": recorded_gpu["date"],
                                  "rows": [{"L": row["L"], "gpu_s": row["gpu_s"]} for row in recorded_gpu["table_62"]]}
    if lattice_samplers.cuda_available():
        if progress:
            progress("GPU timing of the Table 6.2 workload (L = 15, 32 chains × 5000 + 5000 sweeps)")
        from numba import cuda

        run_energy(15, chains=32, steps=10, equilibration=10, backend="cuda")  # compile outside the clock
        start = time.perf_counter()
        run_energy(15, **TABLE_61_RUN, backend="cuda")  # the whole run as a user starts it, set-up included
        out["timing_gpu"] = {"L": 15, "gpu_s": time.perf_counter() - start, "device": cuda.get_current_device().name,
                             "thesis_m2070_s": PUBLISHED_SECONDS[15]["gpu_bfactor8"]}
    return out


def markdown(result: dict) -> str:
    """The exact checks, Table 6.1 and the timings as markdown."""
    from ..stats import format_value_error as fmt

    lines = [f"Study 000: the projected d-wave RVB state of the t–J model (precision preset `{result['precision']}`), "
             "energies per site in units of t. Pulls in combined σ.", "",
             "**Exact checks on the 10-site cluster (L = 3, 8 electrons).** Enumeration of every configuration "
             "(Σ Ψ² E_L / Σ Ψ²) against ⟨Ψ|H|Ψ⟩ from fermion operators, the exact ground state, and VMC against the "
             "enumeration:", "",
             "| parameters | enumeration | ⟨Ψ\\|H\\|Ψ⟩ | ground state | VMC E | pull | VMC E_kin | pull "
             "| VMC E_J | pull |",
             "|---|---:|---:|---:|---|---:|---|---:|---|---:|"]
    for name, ex in result["exact_l3"].items():
        rows = ex["vmc"]["rows"]
        lines.append(f"| {name} | {ex['enumeration']:.10f} | {ex['expectation']:.10f} | {ex['ground_state']:.6f} | "
                     + " | ".join(f"{fmt(*rows[key]['vmc'])} | {rows[key]['pull']:+.1f}" for key in EXACT_KEYS) + " |")
    lines += ["", "**Table 6.1** (J = 0.3, x = 0.1, Δ = 1.5, μ = 0). The thesis prints no energies: the live runs "
                  "are set "
                  "beside qmckit's recorded long runs (`data/lattice_rvb_recorded.json`), the sizes beside its "
                  "Table 4.1.",
              "", "| L | N_s | N_e | N_p | thesis N_s, N_e, N_p | E/N_s live | chains × sweeps | E/N_s recorded "
                  "| pull |",
              "|---:|---:|---:|---:|---|---|---|---|---:|"]
    for row in result["table61"]:
        t41 = row["thesis_table41"]
        lines.append(f"| {row['L']} | {row['n_sites']} | {row['n_electrons']} | {row['n_pairs']} | "
                     f"{t41['n_sites']}, {t41['n_electrons']}, {t41['n_pairs']} | {fmt(*row['energy_per_site'])} | "
                     f"{row['chains']} × ({row['sweeps'][0]} + {row['sweeps'][1]}) | {fmt(*row['recorded'])} | "
                     f"{row['pull_recorded']:+.1f} |")
    machine = result.get("machine", {})
    lines += ["", f"**Timing** (32 chains × 5000 + 5000 sweeps, seconds; this machine: {machine.get('cpu', '?')}, one "
                  "core, extrapolated from timed sweeps; the thesis: Tables 6.2/6.3, one i7-2600 core and a "
                  "Tesla M2070):",
              "", "| L | this CPU, one core | thesis CPU, one core | thesis GPU (M2070) | qmckit GPU |",
              "|---:|---:|---:|---:|---:|"]
    gpu_rows = {row["L"]: row["gpu_s"] for row in result["timing_gpu_recorded"]["rows"]}
    for row in result["timing_cpu"]:
        live = result.get("timing_gpu", {})
        gpu = (f"{live['gpu_s']:.2f} ({_name(live['device'])}, whole run)" if live.get("L") == row["L"] else
               f"{gpu_rows[row['L']]:.2f} (recorded)" if row["L"] in gpu_rows else "—")
        lines.append(f"| {row['L']} | {row['cpu_one_core_s']:.1f} | {row['thesis']['cpu_one_core']} | "
                     f"{row['thesis']['gpu_bfactor8']} | {gpu} |")
    if "timing_gpu" in result and all(row["L"] != 15 for row in result["timing_cpu"]):
        live = result["timing_gpu"]
        lines.append(f"| 15 | — | {PUBLISHED_SECONDS[15]['cpu_one_core']} | {live['thesis_m2070_s']} | "
                     f"{live['gpu_s']:.2f} ({_name(live['device'])}, whole run) |")
    rec = result["timing_gpu_recorded"]
    lines += ["", f"Recorded GPU times: {rec['machine']['gpu']}, {rec['date']} (`data/lattice_rvb_timings.json`)."]
    return "\n".join(lines)


def _name(device) -> str:
    return device.decode() if isinstance(device, bytes) else str(device)


def figure(result: dict):
    """Left: pulls of the exact checks and Table 6.1; right: the timings against the thesis's."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.2), layout="constrained")
    ax_p, ax_t = fig.subplots(1, 2)
    labels, pulls = [], []
    for k, ex in enumerate(result["exact_l3"].values()):
        for key, row in ex["vmc"]["rows"].items():
            labels.append(f"L=3 #{k + 1} {key.split('_')[0]}")
            pulls.append(row["pull"])
    for row in result["table61"]:
        labels.append(f"L={row['L']} vs recorded")
        pulls.append(row["pull_recorded"])
    ax_p.barh(np.arange(len(pulls)), pulls, color="C0")
    ax_p.axvspan(-2, 2, color="0.9", zorder=0)
    ax_p.set_yticks(np.arange(len(pulls)), labels, fontsize=8)
    ax_p.set_xlabel("pull (σ)")
    ax_p.set_title("VMC against exact and recorded energies")
    Ls = [row["L"] for row in result["timing_cpu"]]
    ax_t.plot(Ls, [row["cpu_one_core_s"] for row in result["timing_cpu"]], "o-", label="this CPU, one core")
    ax_t.plot(Ls, [row["thesis"]["cpu_one_core"] for row in result["timing_cpu"]], "s--", mfc="none",
              label="thesis, i7-2600 one core")
    ax_t.plot(list(PUBLISHED_SECONDS), [v["gpu_bfactor8"] for v in PUBLISHED_SECONDS.values()], "^--", mfc="none",
              label="thesis, Tesla M2070")
    rec = result["timing_gpu_recorded"]
    ax_t.plot([row["L"] for row in rec["rows"]], [row["gpu_s"] for row in rec["rows"]], "D-",
              label=f"qmckit, {rec['machine']['gpu']} (recorded)")
    if "timing_gpu" in result:
        live = result["timing_gpu"]
        ax_t.plot([live["L"]], [live["gpu_s"]], "*", ms=12, color="C3",
                  label=f"qmckit, {_name(live['device'])} (this run)")
    ax_t.set(yscale="log", xlabel="L (N_s = L² + 1)", ylabel="seconds, 32 chains × 5000 + 5000 sweeps",
             title="Tables 6.2/6.3")
    ax_t.legend(fontsize=8)
    return fig
