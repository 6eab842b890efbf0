"""Study 002 (Nikolaisen 2011), atoms part: Table 7.1 and the Ne conflict, with the published values
of ``data/atoms.json``.

:func:`vmc_energy` runs one VMC (exact Metropolis–Hastings unless sampler options say otherwise) and
:func:`dt_scan` a series at equal simulated time per time step; :func:`table71_rows` and
:func:`markdown_table71` put qmckit's energies next to the thesis's and Sandsdalen's with pulls.
:data:`THESIS_SAMPLER` and :data:`SANDSDALEN_SAMPLER` name the two published samplers' deviations
from exact Metropolis–Hastings, as far as the sources show them (see ``data/atoms.json``).
:func:`gpu_dmc` reads the recorded GPU fixed-node DMC series (``qmckit_recorded.gpu_h100``) and
:func:`nuclear_cusp_coefficient` measures how far ψ_T misses the electron–nucleus cusp.

Energies are total energies in hartree.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..runs import RunConfig, make_run
from ..stats import format_value_error
from ..systems.atom import Atom, local_energy
from ..resources import data_path

DATA = data_path("atoms.json")
ELEMENTS = ("He", "Be", "Ne")

# Study 002's VMC sampler: Green's-function ratio summed over all electrons (D1), the Box–Muller
# angle uniform reused for acceptance (D2), no drift cap (the thesis mentions none).
THESIS_SAMPLER = {"green": "all", "accept_uniform": "reuse", "drift_cap": False}
# Sandsdalen 2010's sampler as his listing shows it: the all-electron Green's-function sum, a fresh
# uniform for acceptance, no drift cap.
SANDSDALEN_SAMPLER = {"green": "all", "drift_cap": False}


def reference_data() -> dict:
    """Table 7.1, the values it quotes, exact and fixed-node energies, with sources (``data/atoms.json``)."""
    if not DATA.exists():
        raise FileNotFoundError(f"reference data not found at {DATA} (a broken install: reinstall qmckit)")
    return json.loads(DATA.read_text())


def reference(element: str, *path: str) -> tuple[float, float]:
    """A published ``(value, error)`` pair, e.g. ``reference("Ne", "vmc", "thesis")``; error 0.0 where the
    source gives none."""
    node = reference_data()["atoms"][element]
    for key in path:
        node = node[key]
    value, error = node
    return float(value), float(error) if error is not None else 0.0


def _same_cap(a, b) -> bool:
    """Energy caps compare as RunConfig reads them: True/False are not the numbers 1/0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return float(a) == float(b)


def gpu_dmc(element: str, energy_cap: bool | float = 8.0, file: str | None = None) -> dict:
    """The recorded GPU fixed-node DMC points of ``element`` (``qmckit_recorded.gpu_h100.dmc`` of
    ``data/atoms.json``) with one branching cut (``energy_cap`` as RunConfig takes it: a number c of
    σ₀, default 8; True: Zen's cut alone; False: none), optionally from one result ``file`` only.

    Returns arrays ``dt``, ``energy``, ``error``, ``population``, ``energy_cut`` (nan without a cut)
    and the list ``file``, sorted by decreasing Δτ; empty arrays when nothing matches.
    """
    points = [p for p in reference_data()["qmckit_recorded"]["gpu_h100"]["dmc"][element]
              if _same_cap(p["energy_cap"], energy_cap) and (file is None or p["file"] == file)]
    points.sort(key=lambda p: -p["dt"])
    out = {key: np.array([p[key] for p in points], dtype=float) for key in ("dt", "energy", "error", "population")}
    out["energy_cut"] = np.array([np.nan if p["energy_cut"] is None else p["energy_cut"] for p in points], dtype=float)
    out["file"] = [p["file"] for p in points]
    return out


def nuclear_cusp_coefficient(element: str, r: float = 1e-5, seed: int = 0, params: dict | None = None) -> float:
    """lim r·E_L as one electron approaches the nucleus (the others fixed), in E_h·bohr.

    ψ_T obeys the electron–nucleus cusp when this is 0. Hydrogenic orbitals of effective charge α
    have ∂ ln φ/∂r = −α at the nucleus (1s and 2s alike), so E_L → −(Z − α)/r there. Estimated as
    (E_L(r) − E_L(r/10)) / (1/r − 10/r) for electron 0 at distance r along a fixed direction, the
    other electrons where :meth:`Atom.initial_positions` puts them with ``seed``.
    """
    atom = Atom(element=element, **(params or {}))
    R = atom.initial_positions(1, np.random.default_rng(seed))[0].copy()
    cache = np.zeros(atom.cache_size())
    direction = np.array([0.3, 0.5, 0.81]) / np.linalg.norm([0.3, 0.5, 0.81])
    energies = []
    for distance in (r, r / 10):
        R[0] = distance * direction
        energies.append(local_energy(R, atom.kernel_params, cache))
    return float((energies[0] - energies[1]) / (1 / r - 10 / r))


def pull(value: float, error: float, ref: tuple[float, float]) -> float:
    """(value − reference) in units of the combined standard error √(σ² + σ_ref²)."""
    from .reports import pull as combined_pull

    return combined_pull(value, error, *ref)


def weighted_mean(values, errors) -> tuple[float, float, float, int]:
    """Inverse-variance weighted mean of independent estimates: ``(mean, error, chi2, dof)``; χ² is
    against a constant, so χ²/dof ≈ 1 when the values agree within their errors."""
    values, errors = np.asarray(values, dtype=float), np.asarray(errors, dtype=float)
    if values.shape != errors.shape or values.size < 1 or np.any(errors <= 0):
        raise ValueError("values and errors must be non-empty arrays of equal shape with errors > 0")
    w = 1.0 / errors**2
    mean = float(np.sum(w * values) / np.sum(w))
    chi2 = float(np.sum(((values - mean) / errors) ** 2))
    return mean, float(np.sum(w) ** -0.5), chi2, values.size - 1


def vmc_energy(element: str, walkers: int, steps: int, dt: float = 0.01, seed: int = 0,
               params: dict | None = None, **options) -> dict:
    """One VMC run of ``element`` at Sandsdalen's optimal (α, β) unless ``params`` overrides them.

    ``options`` go to :class:`~qmckit.RunConfig` (``sampler``, ``green``, ``accept_uniform``,
    ``drift_cap``, ``equilibration``, ...). Returns the run's result dictionary with ``energy``
    (mean, error) added at the top level.
    """
    result = make_run(RunConfig(system="atom", params={"element": element, **(params or {})}, dt=dt,
                                walkers=walkers, steps=steps, seed=seed, **options)).run()
    energy = result["estimates"]["energy"]
    result["energy"] = (energy["mean"], energy["error"])
    return result


def dt_scan(element: str, dts, walkers: int, simulated_time: float, seed: int = 0, min_steps: int = 100,
            **options) -> dict:
    """VMC at each Δt for the same simulated time (steps = max(min_steps, ⌈time/Δt⌉)), with the same
    options; returns arrays ``dt``, ``energy``, ``error``, ``acceptance`` and the ``steps`` used. Each
    Δt gets its own seed (``seed + k``)."""
    out = {"dt": [], "energy": [], "error": [], "acceptance": [], "steps": []}
    for k, dt in enumerate(dts):
        steps = max(min_steps, math.ceil(simulated_time / dt))
        result = vmc_energy(element, walkers, steps, dt=float(dt), seed=seed + k, **options)
        out["dt"].append(float(dt))
        out["energy"].append(result["energy"][0])
        out["error"].append(result["energy"][1])
        out["acceptance"].append(result["acceptance"])
        out["steps"].append(steps)
    return {key: np.asarray(value) for key, value in out.items()}


def table71_rows(energies: dict) -> list[dict]:
    """Table 7.1 next to qmckit: ``energies`` maps an element to qmckit's ``(mean, error)``.

    Each row has the element, α, β, qmckit's energy, the thesis's and Sandsdalen's values and the pulls
    against both (in combined σ), and the exact energy.
    """
    atoms = reference_data()["atoms"]
    rows = []
    for element, (mean, error) in energies.items():
        a = atoms[element]
        thesis, sandsdalen = reference(element, "vmc", "thesis"), reference(element, "vmc", "sandsdalen")
        rows.append({"element": element, "alpha": a["alpha"], "beta": a["beta"], "qmckit": (mean, error),
                     "thesis": thesis, "pull_thesis": pull(mean, error, thesis),
                     "sandsdalen": sandsdalen, "pull_sandsdalen": pull(mean, error, sandsdalen),
                     "exact": a["exact"][0]})
    return rows


def markdown_table71(rows: list[dict], caption: str = "") -> str:
    """The rows of :func:`table71_rows` as a markdown table."""
    lines = ([caption, ""] if caption else []) + [
        "| atom | α | β | qmckit (exact sampler) | thesis | pull | Sandsdalen 2010 | pull | exact |",
        "|---|---:|---:|---|---|---:|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['element']} | {r['alpha']:g} | {r['beta']:g} | {format_value_error(*r['qmckit'])} "
                     f"| {format_value_error(*r['thesis'])} | {r['pull_thesis']:+.1f} "
                     f"| {format_value_error(*r['sandsdalen'])} | {r['pull_sandsdalen']:+.1f} | {r['exact']} |")
    return "\n".join(lines)


# ``qmckit reproduce atoms`` and the notebook's §2 and §5 (notebooks/atoms.ipynb): element → (walkers, measured
# sweeps, Δt) for Table 7.1; (walkers, simulated time per Δt in ħ/E_h) for Ne with Sandsdalen's sampler
PRESETS = {
    "fast": {"table71": {"He": (400, 3000, 0.05), "Be": (400, 3000, 0.05), "Ne": (400, 3000, 0.01)},
             "ne_recipe": (300, 15.0)},
    "full": {"table71": {"He": (1000, 20000, 0.05), "Be": (1000, 20000, 0.05), "Ne": (400, 40000, 0.01)},
             "ne_recipe": (400, 60.0)},
}


def table71(sizes: dict, seed: int = 71, progress=None) -> dict:
    """Table 7.1 with the exact sampler: ``sizes`` maps an element to (walkers, measured sweeps, Δt).

    Returns ``energies`` (element → (mean, error) in E_h), the :func:`table71_rows` and, for Ne, the pull
    against qmckit's recorded long runs (``qmckit_recorded.Ne.exact_combined``)."""
    energies = {}
    for element, (walkers, steps, dt) in sizes.items():
        if progress:
            progress(f"Table 7.1: {element} VMC, {walkers} walkers × {steps} sweeps")
        energies[element] = vmc_energy(element, walkers, steps, dt=dt, seed=seed)["energy"]
    out = {"sizes": sizes, "energies": energies, "rows": table71_rows(energies)}
    if "Ne" in energies:
        recorded = tuple(reference_data()["qmckit_recorded"]["Ne"]["exact_combined"])
        out["ne_recorded"] = recorded
        out["ne_pull_recorded"] = pull(*energies["Ne"], recorded)
    return out


def ne_verdict(walkers: int, simulated_time: float, seed: int = 600, progress=None) -> dict:
    """Ne with Sandsdalen's sampler at his time steps: does it reproduce his points, and where do the two
    published values come from?

    Returns his points (``sandsdalen``), this run (``live``: arrays ``dt``, ``energy``, ``error``), qmckit's
    recorded run of the same recipe (``recorded``), the pulls of both against his points, his straight line
    to Δt = 0 (``sandsdalen_fit``: energy, error) and the exact sampler's recorded value with its pulls against
    the thesis and Sandsdalen."""
    ref = reference_data()
    sands = ref["atoms"]["Ne"]["sandsdalen_dt_points"]
    if progress:
        progress(f"Ne with Sandsdalen's sampler at Δt = {', '.join(map(str, sands['dt']))}")
    live = dt_scan("Ne", sands["dt"], walkers, simulated_time, seed=seed, **SANDSDALEN_SAMPLER)
    recorded = ref["qmckit_recorded"]["Ne"]["sandsdalen_recipe"]
    exact = tuple(ref["qmckit_recorded"]["Ne"]["exact_combined"])
    from ..stats import extrapolate

    fit = extrapolate(sands["dt"], sands["energy"], sands["error"], order=1, n_points=3)
    points = list(zip(sands["energy"], sands["error"]))
    return {"walkers": walkers, "simulated_time": simulated_time, "sandsdalen": sands,
            "live": {k: live[k] for k in ("dt", "energy", "error")},
            "live_pulls": [pull(e, s, p) for e, s, p in zip(live["energy"], live["error"], points)],
            "recorded": recorded,
            "recorded_pulls": [pull(e, s, p) for e, s, p in zip(recorded["energy"], recorded["error"], points)],
            "sandsdalen_fit": (fit.energy, fit.error), "exact_sampler": exact,
            "exact_pull_thesis": pull(*exact, reference("Ne", "vmc", "thesis")),
            "exact_pull_sandsdalen": pull(*exact, reference("Ne", "vmc", "sandsdalen"))}


def plot_ne_verdict(ax, verdict: dict) -> None:
    """Sandsdalen's Ne points and line, qmckit with his sampler (recorded and this run), the exact sampler."""
    from ..stats import extrapolate, plot_extrapolation

    sands, recorded, live = verdict["sandsdalen"], verdict["recorded"], verdict["live"]
    fit = extrapolate(sands["dt"], sands["energy"], sands["error"], order=1, n_points=3)
    plot_extrapolation(ax, sands["dt"], sands["energy"], sands["error"], fit, color="C2",
                       label="Sandsdalen 2010, Table 8.9, and his line to Δt = 0")
    ax.errorbar(np.array(recorded["dt"]) * 1.04, recorded["energy"], yerr=recorded["error"], fmt="s", ms=5, capsize=2,
                color="C1", label=f"qmckit, his sampler, recorded ({recorded['walkers']} walkers)")
    ax.errorbar(np.array(live["dt"]) * 0.96, live["energy"], yerr=live["error"], fmt="o", ms=4, capsize=2, color="C4",
                alpha=0.7, label=f"qmckit, his sampler, this run ({verdict['walkers']} walkers)")
    exact = verdict["exact_sampler"]
    ax.axhspan(exact[0] - exact[1], exact[0] + exact[1], color="C0", alpha=0.3, lw=0)
    ax.axhline(exact[0], color="C0", lw=1, label=f"qmckit, exact sampler (recorded): {format_value_error(*exact)}")
    thesis = reference("Ne", "vmc", "thesis")
    ax.errorbar([0.0], [thesis[0]], yerr=[thesis[1]], fmt="*", ms=11, color="k",
                label=f"thesis (Δt → 0): {format_value_error(*thesis)}")
    ax.set_xlabel("Δt  (ħ/E$_h$)")
    ax.set_ylabel("E  (E$_h$)")
    ax.set_title("Ne, α = 9.546, β = 0.177: where the two published values come from")
    ax.legend(fontsize=8)


def reproduce(precision: str = "fast", seed: int = 71, progress=None) -> dict:
    """``qmckit reproduce atoms``: :func:`table71` and :func:`ne_verdict` at a preset of :data:`PRESETS`."""
    from .reports import check_precision

    check_precision(precision, PRESETS)
    pre = PRESETS[precision]
    walkers, simulated_time = pre["ne_recipe"]
    return {"seed": seed, "table71": table71(pre["table71"], seed=seed, progress=progress),
            "ne_verdict": ne_verdict(walkers, simulated_time, seed=seed + 529, progress=progress)}


def markdown(result: dict) -> str:
    """Table 7.1 beside qmckit, then the Ne verdict, as markdown."""
    fmt = format_value_error
    t71, verdict = result["table71"], result["ne_verdict"]
    lines = [markdown_table71(t71["rows"], caption=f"Study 002, Table 7.1: VMC energies in E_h (precision preset "
                                                   f"`{result['precision']}`, qmckit's exact Metropolis–Hastings; "
                                                   "pulls in combined σ)")]
    if "ne_recorded" in t71:
        lines += ["", f"Ne against qmckit's recorded long runs {fmt(*t71['ne_recorded'])}: "
                      f"{t71['ne_pull_recorded']:+.1f} σ."]
    lines += ["", f"**The Ne verdict.** Sandsdalen's sampler at his time steps ({verdict['walkers']} walkers × "
                  f"{verdict['simulated_time']:g} ħ/E_h per point):", "",
              "| Δt (ħ/E_h) | Sandsdalen 2010 | qmckit, his sampler | pull | qmckit recorded | pull |",
              "|---:|---|---|---:|---|---:|"]
    sands, live, rec = verdict["sandsdalen"], verdict["live"], verdict["recorded"]
    for k, dt in enumerate(sands["dt"]):
        lines.append(f"| {dt:g} | {fmt(sands['energy'][k], sands['error'][k])} "
                     f"| {fmt(live['energy'][k], live['error'][k])} "
                     f"| {verdict['live_pulls'][k]:+.1f} | {fmt(rec['energy'][k], rec['error'][k])} "
                     f"| {verdict['recorded_pulls'][k]:+.1f} |")
    exact = verdict["exact_sampler"]
    lines += ["", f"His straight line through these points gives {fmt(*verdict['sandsdalen_fit'])} at Δt = 0, his "
                  f"published {fmt(*reference('Ne', 'vmc', 'sandsdalen'))}; the exact sampler "
                  "(no time-step error) gives "
                  f"{fmt(*exact)}: {verdict['exact_pull_sandsdalen']:+.1f} σ from Sandsdalen and "
                  f"{verdict['exact_pull_thesis']:+.1f} σ from the thesis ({fmt(*reference('Ne', 'vmc', 'thesis'))}). "
                  "Both published Ne values are wrong for this trial function: Sandsdalen's is an artefact of his "
                  "extrapolation, the thesis's lies below the variational energy."]
    return "\n".join(lines)


def figure(result: dict):
    """Left: pulls of He, Be, Ne against the thesis and Sandsdalen; right: the Ne verdict."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.4), layout="constrained")
    ax_pull, ax_ne = fig.subplots(1, 2, width_ratios=(1, 2))
    rows = result["table71"]["rows"]
    x = np.arange(len(rows))
    for shift, key, label in ((-0.15, "pull_thesis", "thesis"), (0.15, "pull_sandsdalen", "Sandsdalen 2010")):
        ax_pull.bar(x + shift, [r[key] for r in rows], width=0.3, label=label)
    ax_pull.axhspan(-2, 2, color="0.9", zorder=0, label="±2σ")
    ax_pull.axhline(0, color="k", lw=0.8)
    ax_pull.set_xticks(x, [r["element"] for r in rows])
    ax_pull.set_ylabel("pull: (qmckit − published) / σ")
    ax_pull.set_title("Table 7.1, VMC")
    ax_pull.legend(fontsize=8)
    plot_ne_verdict(ax_ne, result["ne_verdict"])
    return fig
