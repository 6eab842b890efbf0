"""Study 001 (Anderson, Goddard, Schröder 2007) for ``qmckit reproduce molecules``: three claims, on this machine.

1. **The bare determinant gives E_RHF.** VMC of a molecule's RHF determinant without a Jastrow factor samples
   ⟨Φ_RHF|H|Φ_RHF⟩ = E_RHF (PySCF's number) exactly: a check of the Gaussian basis, the orbitals and the local
   energy together (:func:`bare_determinant`).
2. **Float32 with Kahan summation keeps E_L to about 1e-6** (001 §6): :func:`~qmckit.studies.precision_energy.
   local_energy_precision` with the orbital product in each arithmetic.
3. **Fig. 7's CPU side**: qmckit's five-phase VMC step (:mod:`qmckit.studies.speedup_001`) timed on this CPU for
   Fig. 7's molecule sizes, one thread and all threads, and the share of each phase next to 001's HMX budget
   (basis functions 73 %, matrix products 15 %, e–e Jastrow 3.5 %). The GPU side is recorded in
   ``benchmarks/results/`` (``benchmarks/molecule_speedup.py``).

Energies in hartree; times in seconds per walker-step. Needs PySCF (``pip install qmckit[chem]``) for 1 and 2.
"""
from __future__ import annotations

import numpy as np

from ..runs import RunConfig, make_run
from ..stats import format_value_error as fmt
from . import speedup_001

# molecules (built-in name, basis) of the bare-determinant check; VMC walkers, sweeps; E_L precision: configurations;
# Fig. 7: how many of its sizes (smallest first), walkers, timing rounds
PRESETS = {
    # (a bare Gaussian determinant has no nuclear cusp: E_L's variance grows fast with Z, so H2O needs long runs)
    "fast": {"bare": (("h2", "sto-3g"), ("h2", "cc-pvdz")), "vmc": (200, 2000), "configurations": 20,
             "fig7": (2, 16, 3)},
    "full": {"bare": (("h2", "sto-3g"), ("h2", "cc-pvdz"), ("h2o", "sto-3g")), "vmc": (400, 20000),
             "configurations": 200, "fig7": (7, 32, 5)},
}


def bare_determinant(molecule: str, basis: str, walkers: int, sweeps: int, seed: int = 3) -> dict:
    """VMC of the RHF determinant alone (no Jastrow factor): energy (mean, error) against PySCF's E_RHF, pull."""
    from .reports import pull

    run = make_run(RunConfig(system="molecule", params=dict(xyz=molecule, basis=basis, jastrow=False),
                             walkers=walkers, steps=sweeps, seed=seed))
    result = run.run()
    e = result["estimates"]["energy"]
    rhf = float(run.system.rhf_energy)
    return {"molecule": molecule, "basis": basis, "walkers": walkers, "sweeps": sweeps,
            "energy": (e["mean"], e["error"]),
            "rhf": rhf, "pull": pull(e["mean"], e["error"], rhf), "acceptance": result["acceptance"]}


def _require_pyscf() -> None:
    try:
        import pyscf  # noqa: F401
    except ImportError:
        raise ValueError("qmckit reproduce molecules needs PySCF: pip install 'qmckit[chem]'") from None


def reproduce(precision: str = "fast", seed: int = 3, progress=None) -> dict:
    """``qmckit reproduce molecules``: the three checks of the module docstring at a preset of :data:`PRESETS`."""
    from .precision_energy import PUBLISHED_RELATIVE_ERROR, local_energy_precision
    from .reports import check_precision

    check_precision(precision, PRESETS)
    _require_pyscf()
    pre = PRESETS[precision]
    out = {"seed": seed, "preset": pre, "bare": []}
    for k, (molecule, basis) in enumerate(pre["bare"]):
        if progress:
            progress(f"bare determinant: {molecule}/{basis} VMC")
        out["bare"].append(bare_determinant(molecule, basis, *pre["vmc"], seed=seed + k))
    if progress:
        progress(f"E_L precision: H2O/cc-pVDZ, {pre['configurations']} configurations")
    prec = local_energy_precision("h2o", configurations=pre["configurations"], seed=seed)
    out["precision_h2o"] = {k: prec[k] for k in ("molecule", "basis", "n_electrons", "n_basis", "configurations")} | {
        "errors": {a: {s: v[s] for s in ("median", "p90", "max")} for a, v in prec["errors"].items()},
        "published_kahan": PUBLISHED_RELATIVE_ERROR}
    count, walkers, reps = pre["fig7"]
    sizes = speedup_001.fig7_sizes()[:count]
    cpu = {}
    for label, threads in (("one", 1), ("all", None)):
        if progress:
            progress(f"Fig. 7 sizes on the CPU, {'one thread' if threads == 1 else 'all threads'}: "
                     + ", ".join(name for name, _, _ in sizes))
        cpu[label] = speedup_001.measure_cpu_subprocess(threads, sizes, walkers=walkers, reps=reps, seed=seed,
                                                        f64=False)
        cpu[label].pop("log", None)
    rows = speedup_001.speedup_rows(cpu)
    out["fig7_cpu"] = []
    for row in rows:
        entry = {"name": row["name"], "n_electrons": row["n_electrons"], "n_basis": row["n_basis"]}
        for label in ("one", "all"):
            t = row[f"cpu_{label}"]["f32"]
            entry[label] = {"per_walker_step_s": {p: t[p] for p in speedup_001.S.PHASES} | {"total": t["total"]},
                            "shares": speedup_001.amdahl_rows(t)["shares"]}
        entry["threads_speedup"] = row["cpu_one"]["f32"]["total"] / row["cpu_all"]["f32"]["total"]
        entry["paper"] = row.get("paper")
        out["fig7_cpu"].append(entry)
    out["threads"] = cpu["all"]["numba_threads"]
    out["hmx_budget"] = speedup_001.reference_data()["hmx_time_budget"]["cpu_share"]
    return out


def markdown(result: dict) -> str:
    """The three checks as markdown."""
    lines = [f"Study 001 on this machine (precision preset `{result['precision']}`); energies in E_h.", "",
             "**The bare RHF determinant** (no Jastrow factor) must give PySCF's E_RHF:", "",
             "| molecule | basis | VMC (walkers × sweeps) | E_RHF (PySCF) | pull |", "|---|---|---|---:|---:|"]
    for b in result["bare"]:
        lines.append(f"| {b['molecule']} | {b['basis']} | {fmt(*b['energy'])} ({b['walkers']} × {b['sweeps']}) | "
                     f"{b['rhf']:.6f} | {b['pull']:+.1f} |")
    p = result["precision_h2o"]
    lines += ["", f"**Precision of E_L** with the orbital product in each arithmetic ({p['molecule']}/{p['basis']}, "
                  f"N_e = {p['n_electrons']}, N_bf = {p['n_basis']}, {p['configurations']} VMC configurations): "
                  "median / 90th percentile / max of |ΔE_L|/|E_L| against float64. 001 reports about "
                  f"{p['published_kahan']:.0e} with Kahan float32 (KSF).", "",
              "| arithmetic | median | 90 % | max |", "|---|---:|---:|---:|"]
    for a, s in p["errors"].items():
        lines.append(f"| {a} | {s['median']:.1e} | {s['p90']:.1e} | {s['max']:.1e} |")
    phases = speedup_001.S.PHASES
    budget = result["hmx_budget"]
    lines += ["", f"**Fig. 7's CPU side**: time per walker-step (µs) of qmckit's float32 VMC step on this CPU, "
                  "one thread "
                  f"and {result['threads']} threads, and each phase's share at one thread. 001's HMX budget on one "
                  f"Pentium 4: basis functions {100 * budget['basis_functions']:.0f} %, matrix products "
                  f"{100 * budget['matrix_multiplication']:.0f} %, e–e Jastrow {100 * budget['ee_jastrow']:.1f} %.", "",
              "| molecule | N_e | N_bf | one thread | all threads | threads speed-up | "
              + " | ".join(f"{ph} share" for ph in phases) + " | 001 total speed-up (GPU) |",
              "|---|---:|---:|---:|---:|---:|" + "---:|" * (len(phases) + 1)]
    for r in result["fig7_cpu"]:
        shares = " | ".join(f"{100 * r['one']['shares'][ph]:.0f} %" for ph in phases)
        paper = r["paper"]["total_standard"] if r.get("paper") else "–"
        lines.append(f"| {r['name']} | {r['n_electrons']} | {r['n_basis']} | "
                     f"{1e6 * r['one']['per_walker_step_s']['total']:.4g} | "
                     f"{1e6 * r['all']['per_walker_step_s']['total']:.4g} | "
                     f"{r['threads_speedup']:.2f} | {shares} | {paper} |")
    return "\n".join(lines)


def figure(result: dict):
    """Left: bare-determinant pulls and the precision medians; right: Fig. 7's CPU phase shares."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.2), layout="constrained")
    ax_e, ax_p = fig.subplots(1, 2)
    errors = result["precision_h2o"]["errors"]
    names = [a for a in errors if errors[a]["median"] > 0]
    ax_e.bar(names, [errors[a]["median"] for a in names], color="C0")
    ax_e.axhline(result["precision_h2o"]["published_kahan"], color="C3", ls="--", lw=1, label="001: ≈1e-6 with KSF")
    ax_e.set_yscale("log")
    ax_e.tick_params(axis="x", labelsize=8, rotation=20)
    ax_e.set_ylabel("median |ΔE_L| / |E_L|")
    bare = ", ".join(f"{b['molecule']}/{b['basis']} {b['pull']:+.1f}σ" for b in result["bare"])
    ax_e.set_title(f"E_L precision, H2O; bare determinant vs E_RHF: {bare}", fontsize=9)
    ax_e.legend(fontsize=8)
    rows = result["fig7_cpu"]
    bottom = np.zeros(len(rows))
    labels = [f"{r['name']}\n({r['n_electrons']}, {r['n_basis']})" for r in rows]
    for ph in speedup_001.S.PHASES:
        share = np.array([r["one"]["shares"][ph] for r in rows])
        ax_p.bar(labels, share, bottom=bottom, label=ph)
        bottom += share
    ax_p.set_ylabel("share of the step, one thread")
    ax_p.set_title("Fig. 7 sizes (N_e, N_bf): where the CPU time goes")
    ax_p.legend(fontsize=8)
    return fig
