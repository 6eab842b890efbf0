"""Study 002 (Nikolaisen 2011), Table 7.2: VMC and DMC energies of trapped bosons B1–B4.

:func:`reproduce_table72` runs, for each parameter set, exact VMC (drift sampler; it has no
time-step bias, so one Δτ suffices) and a DMC time-step series at equal simulated time per
point, extrapolated linearly through the three smallest Δτ as the thesis does (and also with
the best of the linear/quadratic fits). :func:`write_report` writes the comparison with the
published numbers (``data/bec_table72.json``) as markdown, JSON and a figure.

Precision presets: ``"fast"`` (CI, about a minute on two cores), ``"full"`` (the recorded
results; minutes to tens of minutes on a CPU).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np

from ..runs import RunConfig, make_run, time_step_series
from ..stats import best_extrapolation, extrapolate, format_value_error
from ..resources import data_path

DATA = data_path("bec_table72.json")


def reference_data() -> dict:
    """Table 7.2 and the literature values it quotes, with sources (from ``data/``)."""
    if not DATA.exists():
        raise FileNotFoundError(f"reference data not found at {DATA} (a broken install: reinstall qmckit)")
    return json.loads(DATA.read_text())


@dataclass(frozen=True)
class Precision:
    vmc_walkers: int
    vmc_steps: int
    dmc_walkers: int
    dmc_dts: tuple
    dmc_time: float          # simulated time per Δτ point (time units 1/ω_⊥)


PRESETS = {
    # DMC energies are correlated over about one time unit: a point needs many time units, more
    # than it needs walkers, for its error bar to be trustworthy
    # (B3's E(Δτ) is curved above Δτ ≈ 0.01: the fast preset stays below that, short as it is)
    "fast": Precision(vmc_walkers=200, vmc_steps=1500, dmc_walkers=100, dmc_dts=(0.02, 0.01, 0.005),
                      dmc_time=6.0),
    "full": Precision(vmc_walkers=1000, vmc_steps=20000, dmc_walkers=2000, dmc_dts=(0.02, 0.01, 0.005, 0.0025),
                      dmc_time=20.0),
}


def reproduce_table72(precision: str = "fast", sets=("B1", "B2", "B3"), seed: int = 2011, progress=None) -> dict:
    """Run VMC and a DMC Δτ series for each set; return a JSON-ready dictionary.

    progress(message) is called before each run.
    """
    if precision not in PRESETS:
        raise ValueError(f"precision must be one of {', '.join(PRESETS)}, got {precision!r}")
    ref = reference_data()["sets"]
    unknown = [s for s in sets if s not in ref]
    if unknown:
        raise ValueError(f"sets must be among {', '.join(ref)}, got {', '.join(unknown)}")
    pre = PRESETS[precision]
    out = {"precision": precision, "preset": pre.__dict__, "seed": seed, "sets": {}}
    for k, name in enumerate(sets):
        s = ref[name]
        params = {key: s[key] for key in ("n", "lam", "a", "alpha")}
        start = time.perf_counter()
        if progress:
            progress(f"{name}: VMC")
        vmc = make_run(RunConfig(system="bec", params=params, method="vmc", sampler="drift", dt=0.05,
                                 walkers=pre.vmc_walkers, steps=pre.vmc_steps, seed=seed + 10 * k)).run()
        if progress:
            progress(f"{name}: DMC at Δτ = {', '.join(map(str, pre.dmc_dts))}")
        series = time_step_series(RunConfig(system="bec", params=params, method="dmc", walkers=pre.dmc_walkers,
                                            steps=1, seed=seed + 10 * k + 1),
                                  pre.dmc_dts, pre.dmc_time)
        dts = np.array([r["dt"] for r in series])
        energies = np.array([r["estimates"]["energy_per_particle"]["mean"] for r in series])
        errors = np.array([r["estimates"]["energy_per_particle"]["error"] for r in series])
        linear = extrapolate(dts, energies, errors, order=1, n_points=3)
        entry = {
            "params": params,
            "vmc": vmc["estimates"]["energy_per_particle"],
            "vmc_dt": 0.05,
            "dmc_points": {"dt": dts.tolist(), "energy": energies.tolist(), "error": errors.tolist(),
                           "population": [r["estimates"]["population"]["mean"] for r in series]},
            "dmc_linear3": {"energy": linear.energy, "error": linear.error, "chi2_dof": linear.reduced_chi2},
            "wall_s": time.perf_counter() - start,
        }
        if len(dts) > 3:
            best = best_extrapolation(dts, energies, errors)
            entry["dmc_best"] = {"energy": best.energy, "error": best.error, "order": best.order,
                                 "n_points": best.n_points, "chi2_dof": best.reduced_chi2}
        out["sets"][name] = entry
    return out


def _pull(value, error, ref):
    from .reports import pull

    return pull(value, error, *ref)


def comparison_rows(result: dict) -> list[dict]:
    """One row per set: qmckit's numbers, the published ones and the pulls (in combined σ)."""
    ref = reference_data()["sets"]
    rows = []
    for name, entry in result["sets"].items():
        r = ref[name]
        vmc, dmc = entry["vmc"], entry["dmc_linear3"]
        row = {"set": name, **entry["params"],
               "vmc": (vmc["mean"], vmc["error"]), "vmc_thesis": tuple(r["vmc"]["thesis"]),
               "vmc_pull": _pull(vmc["mean"], vmc["error"], r["vmc"]["thesis"]),
               "dmc": (dmc["energy"], dmc["error"]), "dmc_thesis": tuple(r["dmc"]["thesis"]),
               "dmc_pull_thesis": _pull(dmc["energy"], dmc["error"], r["dmc"]["thesis"])}
        if "blume" in r["dmc"]:
            row["dmc_blume"] = tuple(r["dmc"]["blume"])
            row["dmc_pull_blume"] = _pull(dmc["energy"], dmc["error"], r["dmc"]["blume"])
        if "nilsen2005" in r["vmc"]:
            row["vmc_nilsen2005"] = tuple(r["vmc"]["nilsen2005"])
            row["vmc_pull_nilsen2005"] = _pull(vmc["mean"], vmc["error"], r["vmc"]["nilsen2005"])
        rows.append(row)
    return rows


def markdown_table(result: dict) -> str:
    """Table 7.2 side by side with qmckit, as markdown."""
    fmt = format_value_error
    lines = [f"Trapped bosons, E/N in ħω_⊥ (precision preset `{result['precision']}`). "
             "Pulls are (qmckit − published)/combined σ.",
             "",
             "| set | N | λ | a | α | VMC qmckit | VMC thesis | pull | DMC qmckit (Δτ→0) | DMC thesis | pull "
             "| DMC Blume & Greene | pull |",
             "|---|---:|---:|---:|---:|---|---|---:|---|---|---:|---|---:|"]
    for row in comparison_rows(result):
        blume = fmt(*row["dmc_blume"]) if "dmc_blume" in row else "—"
        blume_pull = f"{row['dmc_pull_blume']:+.1f}" if "dmc_blume" in row else "—"
        lines.append(
            f"| {row['set']} | {row['n']} | {row['lam']:.4g} | {row['a']:g} | {row['alpha']:g} "
            f"| {fmt(*row['vmc'])} | {fmt(*row['vmc_thesis'])} | {row['vmc_pull']:+.1f} "
            f"| {fmt(*row['dmc'])} | {fmt(*row['dmc_thesis'])} | {row['dmc_pull_thesis']:+.1f} "
            f"| {blume} | {blume_pull} |")
    lines += ["", "VMC: exact Metropolis–Hastings with drift (Δτ = 0.05, no time-step bias). "
              "DMC: linear fit through the three smallest Δτ, equal simulated time per point "
              f"({result['preset']['dmc_time']} / ω_⊥), {result['preset']['dmc_walkers']} walkers."]
    return "\n".join(lines)


def figure(result: dict):
    """E/N against Δτ for every set, with the extrapolation and the published values."""
    from matplotlib.figure import Figure

    from ..stats import plot_extrapolation

    ref = reference_data()["sets"]
    names = list(result["sets"])
    fig = Figure(figsize=(4.2 * len(names), 3.4))
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, name in zip(axes, names):
        entry = result["sets"][name]
        points = entry["dmc_points"]
        fit = extrapolate(points["dt"], points["energy"], points["error"], order=1, n_points=3)
        plot_extrapolation(ax, points["dt"], points["energy"], points["error"], fit, label="DMC qmckit")
        value, error = ref[name]["dmc"].get("blume", ref[name]["dmc"]["thesis"])
        ax.axhspan(value - error, value + error, color="C3", alpha=0.2, lw=0)
        ax.axhline(value, color="C3", lw=0.8, ls="--",
                   label="Blume & Greene" if "blume" in ref[name]["dmc"] else "thesis DMC")
        t_value, t_error = ref[name]["dmc"]["thesis"]
        ax.errorbar([0.0], [t_value], yerr=[t_error], fmt="D", ms=4, color="C2", label="thesis DMC")
        ax.set_title(f"{name}: N={entry['params']['n']}, λ={entry['params']['lam']:.3g}, a={entry['params']['a']:g}")
        ax.set_xlabel("Δτ  (1/ω$_\\perp$)")
        ax.set_ylabel("E/N  (ħω$_\\perp$)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def reproduce(precision: str = "fast", seed: int = 2011, progress=None, sets=("B1", "B2", "B3")) -> dict:
    """``qmckit reproduce bec``: :func:`reproduce_table72` (see :mod:`qmckit.studies.reports`)."""
    return reproduce_table72(precision, sets=sets, seed=seed, progress=progress)


markdown = markdown_table


def write_report(result: dict, out_dir) -> dict:
    """Write ``table72.md``, ``table72.json`` and ``table72.png`` into ``out_dir``; return their paths."""
    from .reports import write_report as write

    return write("bec", result, out_dir)


SEED_FAITHFUL = dict(green="all", accept_uniform="reuse", hard_core="redraw", drift_cap=False)


def seed_faithful_vmc(name: str, dts=(0.01, 0.005, 0.0025), walkers: int = 400, simulated_time: float = 10.0,
                      seed: int = 11, variants: dict | None = None) -> dict:
    """VMC for set ``name`` the way study 002 did it: its three Metropolis deviations (all-particle
    Green's function, reused uniform, redraw until allowed), no drift cap, a Δt series and a linear
    fit through the three smallest Δt. Returns the points and E₀ next to the thesis's value, and
    the same recipe with the exact sampler for comparison."""
    ref = reference_data()["sets"][name]
    params = {key: ref[key] for key in ("n", "lam", "a", "alpha")}
    out = {"set": name, "params": params, "thesis": ref["vmc"]["thesis"], "dts": list(dts)}
    for label, options in (("seed_faithful", variants or SEED_FAITHFUL), ("exact", {})):
        energies, errors = [], []
        for dt in dts:
            config = RunConfig(system="bec", params=params, method="vmc", dt=dt, walkers=walkers,
                               steps=max(1, int(simulated_time / dt)), seed=seed, **options)
            est = make_run(config).run()["estimates"]["energy_per_particle"]
            energies.append(est["mean"])
            errors.append(est["error"])
        fit = extrapolate(dts, energies, errors, order=1, n_points=3)
        out[label] = {"energy": energies, "error": errors, "E0": fit.energy, "E0_error": fit.error,
                      "pull_vs_thesis": _pull(fit.energy, fit.error, ref["vmc"]["thesis"])}
    return out

