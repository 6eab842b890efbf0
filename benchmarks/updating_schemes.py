#!/usr/bin/env python
"""Study 003 (Uejima & Maezono 2012), issue 7 item 4: bias of the updating schemes (particle-by-particle,
configuration-by-configuration, and both readings of quasi-simultaneous updating) against the exact answer
of a free-electron Slater–Jastrow model, in hartree per primitive cell against 003's 1e-3 criterion.

Model and schemes: qmckit.studies.updating_schemes (jellium at r_s = 2 bohr, Si's valence density; n
electrons per spin in a closed shell of plane waves; Jastrow u(r) = A (1 − r/r_c)³, r_c = L/2).

Parts (all chains at equal cost: the same sweeps, N orbital rows each, the same measurements):
  1. A = 0 (bare determinant): every scheme against the EXACT energy (Hartree–Fock energy of the finite
     jellium, from the counted S(G)) and the exact S(G).
  2. A = r_c/6 (antiparallel cusp): every scheme against an independent particle-by-particle run of twice
     the length (the exact |Ψ|² expectation within its error bar).
  3. Q.S. reading A (literal Eq. 11) at A = 0: bias against the step δ (fractions of the tuned δ).
  4. Q.S. reading A at A = 0: bias against the electron count at each size's tuned δ.
  5. Q.S. reading C with study 003's B-spline orbitals (32³ grid) at A = 0: the spline error alone.
Error bars: reblocking (qmckit.stats.estimate). Hartree per primitive cell = per electron × 8 (Si; r_s = 2
is Si's valence density), and × 24 (cubic TiO2's electron count at the same density) alongside.

Usage:
  python benchmarks/updating_schemes.py                 # full run, ≈ 6–8 min on the 2-core VM, writes
                                                        # benchmarks/results/updating_schemes_vm_<date>.{md,json}
  python benchmarks/updating_schemes.py --quick --out /tmp/us   # ≈ 1 min smoke run
  python benchmarks/updating_schemes.py --render benchmarks/results/updating_schemes_vm_<date>.json  # md only
Chains run on --workers processes (default 2); the numbers do not depend on the worker count.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import datetime
import json
import os
import platform
import socket
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numba  # noqa: E402

from qmckit.stats import estimate, format_value_error as fve  # noqa: E402
from qmckit.studies import updating_schemes as us  # noqa: E402


def _cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _row_json(row):
    return {k: (float(v) if isinstance(v, (np.floating, float)) else v) for k, v in row.items()}


def _literal_row(model, run, reference_e, reference_s0):
    e = estimate(run.energy)
    s0 = estimate(run.s[:, 0])
    bias = e.mean - reference_e
    return {"n_per_spin": model.n_per_spin, "electrons": model.n_electrons, "step": run.step,
            "acceptance": run.acceptance, "energy": e.mean, "error": e.error, "tau": e.tau, "bias": bias,
            "bias_sigma": bias / e.error, "bias_per_cell": bias * model.electrons_per_cell,
            "bias_per_cell_error": e.error * model.electrons_per_cell,
            "s1": s0.mean, "s1_error": s0.error, "s1_exact": float(reference_s0), "wall_s": run.wall_s}


def _literal_table(rows, key, label):
    lines = [f"| {label} | δ (bohr) | acceptance | E/N (Ha) | bias/N (Ha) | bias/σ | bias (Ha per Si cell, ×8) "
             f"| S(G₁) | S(G₁) exact |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r[key]} | {r['step']:.4f} | {r['acceptance']:.3f} | {fve(r['energy'], r['error'])} "
                     f"| {fve(r['bias'], r['error'])} | {r['bias_sigma']:+.1f} "
                     f"| {fve(r['bias_per_cell'], r['bias_per_cell_error'])} | {fve(r['s1'], r['s1_error'])} "
                     f"| {r['s1_exact']:.4f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="≈ 1 min smoke run (writes only with --out)")
    ap.add_argument("--out", default=None, help="output directory (default benchmarks/results)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n-per-spin", type=int, default=19)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--render", metavar="JSON", default=None,
                    help="only rewrite the .md next to a results JSON of an earlier run (no sampling)")
    args = ap.parse_args(argv)
    if args.render:
        path = Path(args.render)
        path.with_suffix(".md").write_text(render(json.loads(path.read_text())))
        print(f"wrote {path.with_suffix('.md')}")
        return

    q = args.quick
    sweeps_exact = 30_000 if q else 400_000  # part 1
    sweeps_jastrow = 10_000 if q else 100_000  # part 2 (the reference runs twice as long)
    sweeps_step = 10_000 if q else 40_000  # part 3
    sweeps_size = 6_000 if q else 20_000  # part 4 (N_σ = 57 uses half)
    sweeps_spline = 10_000 if q else 50_000  # part 5
    equil, every = (300, 2) if q else (2000, 2)
    out_dir = Path(args.out) if args.out else (None if q else REPO / "benchmarks" / "results")

    t_start = time.perf_counter()
    model = us.FreeElectronModel(n_per_spin=args.n_per_spin)
    jmodel = dataclasses.replace(model, jastrow_a=model.cusp_jastrow_a)
    # compile once here so that the workers load the numba cache instead of compiling concurrently
    us.run_scheme(us.FreeElectronModel(n_per_spin=7), "cbc", 0.5, 20, 5, 2)
    for s in us.SCHEMES:
        us.run_scheme(us.FreeElectronModel(n_per_spin=7), s, 1.0, 20, 5, 2)
    report = {"date": datetime.date.today().isoformat(), "host": socket.gethostname(), "cpu": _cpu_model(),
              "cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
              "numba": numba.__version__, "command": "python benchmarks/updating_schemes.py" + (" --quick" if q else ""),
              "workers": args.workers, "seed": args.seed, "parts": {}}

    with cf.ProcessPoolExecutor(max_workers=args.workers) as pool:
        # ---- part 1: A = 0, exact answer ----
        t0 = time.perf_counter()
        steps = {"pbp": us.tune_step(model, "pbp", sweeps=300), "cbc": us.tune_step(model, "cbc", sweeps=300)}
        res1 = us.compare_schemes(model, sweeps=sweeps_exact, equil=equil, measure_every=every, seed=args.seed,
                                  steps=steps, executor=pool)
        ref = res1["reference"]
        report["parts"]["exact"] = {
            "model": dataclasses.asdict(model), "sweeps": sweeps_exact, "steps": res1["steps"],
            "exact_energy_per_electron": ref["energy"], "exact_kinetic_per_electron": ref["kinetic"],
            "exact_potential_per_electron": ref["potential"], "exact_s": ref["s"].tolist(),
            "shell_g": model.shell_g.tolist(), "rows": [_row_json(r) for r in res1["rows"]],
            "wall_s": time.perf_counter() - t0}
        print(us.format_table(res1), flush=True)

        # ---- part 2: A = r_c/6, reference = independent longer PbP run ----
        t0 = time.perf_counter()
        jsteps = {"pbp": us.tune_step(jmodel, "pbp", sweeps=300), "cbc": us.tune_step(jmodel, "cbc", sweeps=300)}
        res2 = us.compare_schemes(jmodel, sweeps=sweeps_jastrow, equil=equil, measure_every=every,
                                  seed=args.seed + 1, steps=jsteps, executor=pool, reference_factor=2)
        report["parts"]["jastrow"] = {
            "model": dataclasses.asdict(jmodel), "sweeps": sweeps_jastrow, "steps": res2["steps"],
            "reference": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in res2["reference"].items()},
            "rows": [_row_json(r) for r in res2["rows"]], "wall_s": time.perf_counter() - t0}
        print(us.format_table(res2), flush=True)

        # ---- part 3: reading A against the step ----
        t0 = time.perf_counter()
        factors = (0.125, 0.25, 0.5, 1.0, 2.0)
        futs = [pool.submit(us.run_scheme, model, "qs_literal", steps["pbp"] * f, sweeps_step, equil, every,
                            args.seed + 10 + k) for k, f in enumerate(factors)]
        rows3 = []
        for f, fut in zip(factors, futs):
            row = _literal_row(model, fut.result(), ref["energy"], ref["s"][0])
            row["factor"] = f
            rows3.append(row)
        report["parts"]["literal_step"] = {"rows": rows3, "sweeps": sweeps_step, "wall_s": time.perf_counter() - t0}
        print(_literal_table(rows3, "factor", "δ / δ_PbP"), flush=True)

        # ---- part 4: reading A against N ----
        t0 = time.perf_counter()
        sizes = (7, 19, 33, 57)
        models = [dataclasses.replace(model, n_per_spin=n) for n in sizes]
        size_steps = [steps["pbp"] if m.n_per_spin == model.n_per_spin else us.tune_step(m, "pbp", sweeps=300)
                      for m in models]
        futs = [pool.submit(us.run_scheme, m, "qs_literal", st, sweeps_size // (2 if m.n_per_spin >= 57 else 1),
                            equil, every, args.seed + 20 + k) for k, (m, st) in enumerate(zip(models, size_steps))]
        rows4 = [_literal_row(m, fut.result(), m.exact_energy_per_electron(), m.exact_shell_s[0])
                 for m, fut in zip(models, futs)]
        report["parts"]["literal_size"] = {"rows": rows4, "sweeps": sweeps_size, "wall_s": time.perf_counter() - t0}
        print(_literal_table(rows4, "electrons", "N"), flush=True)

        # ---- part 5: reading C with B-spline orbitals ----
        t0 = time.perf_counter()
        smodel = dataclasses.replace(model, orbitals="bspline", grid=32)
        run5 = us.run_scheme(smodel, "qs_batched", steps["pbp"], sweeps_spline, equil, every, args.seed + 30)
        row5 = _literal_row(smodel, run5, ref["energy"], ref["s"][0])
        kin = estimate(run5.kinetic)
        row5.update({"kinetic": kin.mean, "kinetic_error": kin.error, "kinetic_exact": ref["kinetic"],
                     "grid": 32, "scheme": "qs_batched"})
        report["parts"]["bspline"] = {"row": row5, "sweeps": sweeps_spline, "wall_s": time.perf_counter() - t0}

    report["wall_s"] = time.perf_counter() - t_start
    md = render(report)
    print(md)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"updating_schemes_{'vm' if report['host'] == 'vm' else report['host']}_{report['date']}"
        (out_dir / f"{stem}.md").write_text(md)
        (out_dir / f"{stem}.json").write_text(json.dumps(report, indent=1, default=float))
        print(f"wrote {out_dir / stem}.md/.json")


def render(report):
    """The results file (markdown) from the report dict (also as read back from its JSON)."""
    p1, p2 = report["parts"]["exact"], report["parts"]["jastrow"]
    res1 = {"model": us.FreeElectronModel(**p1["model"]), "rows": p1["rows"]}
    res2 = {"model": us.FreeElectronModel(**p2["model"]), "rows": p2["rows"]}
    m = p1["model"]
    rows1 = {r["scheme"]: r for r in p1["rows"]}
    rows2 = {r["scheme"]: r for r in p2["rows"]}
    lit, bat = rows1["qs_literal"], rows1["qs_batched"]
    step_rows = report["parts"]["literal_step"]["rows"]
    size_rows = report["parts"]["literal_size"]["rows"]
    spl = report["parts"]["bspline"]["row"]
    n = 2 * m["n_per_spin"]
    fmt_cell = lambda r: fve(r["bias_per_cell"], r["bias_per_cell_error"])  # noqa: E731
    def verdict(r):
        return "consistent with zero" if abs(r["bias_sigma"]) < 3 else "NOT consistent with zero"

    step_list = ", ".join(f"{fve(r['bias_per_cell'], r['bias_per_cell_error'])} (δ×{r['factor']:g}, acceptance "
                          f"{r['acceptance']:.2f})" for r in sorted(step_rows, key=lambda r: -r["factor"]))
    unresolved = ", ".join(f"δ×{r['factor']:g}" for r in step_rows if abs(r["bias_sigma"]) < 2)
    step_note = (f"it falls steeply with δ and is unresolved (< 2σ) at {unresolved}, where the chain also "
                 f"decorrelates far more slowly" if unresolved else "it falls with δ")
    size_list = ", ".join(f"{fve(r['bias'], r['error'])} (N = {r['electrons']})" for r in size_rows)
    paper_sigma = 1.75e-4  # 003 Table IX error bar, Ha per primitive cell
    lines = [
        f"# Study 003: updating schemes against an exact answer (free-electron Slater–Jastrow), "
        f"{report['date']} on {report['host']}",
        "",
        f"- machine: {report['cpu']}, {report['cores']} cores (shared with other work), hostname `{report['host']}`",
        f"- versions: Python {report['python']}, numpy {report['numpy']}, numba {report['numba']}",
        f"- command: `{report['command']}` (wall time {report['wall_s']:.0f} s, {report['workers']} worker processes, "
        f"seed {report['seed']}); raw numbers in the .json next to this file, from which "
        f"`python benchmarks/updating_schemes.py --render <json>` rewrites this file",
        f"- model (`qmckit.studies.updating_schemes.FreeElectronModel`): jellium, r_s = {m['rs']} bohr (Si's valence "
        f"density), {m['n_per_spin']} + {m['n_per_spin']} electrons (N = {n}, closed shell), periodic cube, exact "
        f"plane-wave orbitals, Ewald e–e energy; Jastrow u(r) = A (1 − r/r_c)³, r_c = L/2",
        "- schemes (study 003 §IV.A, notes §2.2–2.3): **pbp** particle-by-particle (Eq. 10, Sherman–Morrison); "
        "**qs_batched** Q.S. reading C (all N trial orbital rows in one batch, then sequential acceptance); "
        "**qs_literal** Q.S. reading A (literal Eq. 11: each electron against the old configuration, accepted "
        "moves applied together); **cbc** configuration-by-configuration (Eq. 9)",
        "- equal cost: every chain runs the same sweeps (N trial moves and N orbital rows each) and measures every "
        "2 sweeps; δ tuned to 50 % acceptance for pbp (used by all three single-electron schemes) and 25 % for cbc",
        "- per primitive cell: bias per electron × 8 (Si, the system of 003's Table IX, whose valence density r_s = 2 "
        "mimics); × 24 (cubic TiO2's electrons per cell, at the same density) alongside. Criterion: 1e-3 Ha per "
        "primitive cell (003 §5.6). Error bars: reblocking at the optimal block.",
        "",
        "## Conclusion",
        "",
        f"- **Reading C (batched orbitals, sequential acceptance) is exact**: it is particle-by-particle bit for bit "
        f"given the same random numbers (tested); here, with its own random numbers, its energy bias against "
        f"the exact answer is {fve(bat['bias_per_cell'], bat['bias_per_cell_error'])} Ha per Si cell "
        f"({bat['bias_sigma']:+.1f}σ, {verdict(bat)}; S(G) worst shell {bat['s_max_dev_sigma']:+.1f}σ), and "
        f"{fmt_cell(rows2['qs_batched'])} Ha per cell ({rows2['qs_batched']['bias_sigma']:+.1f}σ, "
        f"{verdict(rows2['qs_batched'])}) with the Jastrow factor.",
        f"- **Reading A (literal Eq. 11) is biased**: at the same δ ({lit['step']:.3f} bohr; acceptance "
        f"{lit['acceptance']:.2f} against pbp's {rows1['pbp']['acceptance']:.2f}) S(G) is off by "
        f"{lit['s_max_dev']:+.3f} ({lit['s_max_dev_sigma']:+.0f}σ) at |G| = {lit['s_max_dev_g']:.3f} bohr⁻¹ "
        f"(S(G₁) = {lit['s_first_shell']:.3f} against the exact {p1['exact_s'][0]:.3f}: the exchange hole fills in) "
        f"and the energy by {fve(lit['bias'], lit['bias_error'])} Ha per electron = "
        f"**{fmt_cell(lit)} Ha per Si cell** ({fve(lit['bias_per_cell_tio2'], lit['bias_per_cell_tio2_error'])} per "
        f"TiO2 cell), {abs(lit['bias_per_cell']) / us.CHEMICAL_ACCURACY:.0f}× the 1e-3 criterion "
        f"({lit['bias_sigma']:+.0f}σ). With the Jastrow factor: {fmt_cell(rows2['qs_literal'])} Ha per cell "
        f"({rows2['qs_literal']['bias_sigma']:+.1f}σ; S(G) worst shell {rows2['qs_literal']['s_max_dev_sigma']:+.0f}σ; "
        f"its local energy has heavy tails there: standard deviation {rows2['qs_literal']['energy_sd']:.3g} Ha per "
        f"electron against pbp's {rows2['pbp']['energy_sd']:.3g}: reading A puts weight near the nodes, where "
        f"E_L ~ 1/distance once there is a Jastrow factor, so that energy and its error bar mean little; S(G) is "
        f"the clean measure there).",
        f"- Reading A's energy bias per Si cell against δ (part 3): {step_list}: {step_note}. "
        f"Per electron against N at the tuned δ (part 4): {size_list}.",
        f"- 003's Table IX found Q.S. within 0.28σ of PbP with σ = {paper_sigma:.2e} Ha per cell. Reading A's bias "
        f"at 50 % acceptance here is {abs(lit['bias_per_cell']) / paper_sigma:.0f}× that σ; reading C agrees by "
        f"construction. Table IX is what reading C gives; reading A could only match it if its bias in Si were "
        f"orders of magnitude below this model's (this is jellium at Si's density, not Si).",
        f"- pbp ({fmt_cell(rows1['pbp'])}, {verdict(rows1['pbp'])}) and cbc ({fmt_cell(rows1['cbc'])}, "
        f"{verdict(rows1['cbc'])}) Ha per cell. cbc decorrelates slowly (energy τ = {rows1['cbc']['tau']:.1f} "
        f"measurements against pbp's {rows1['pbp']['tau']:.1f}), so at equal cost its error bar is the largest.",
        f"- Resolution: at this cost the exact schemes' per-cell error bars are "
        f"{min(r['bias_per_cell_error'] for r in p1['rows'] if r['scheme'] != 'qs_literal'):.1e}–"
        f"{max(r['bias_per_cell_error'] for r in p1['rows'] if r['scheme'] != 'qs_literal'):.1e} Ha (A = 0), "
        f"comparable to the 1e-3 criterion: the table bounds their bias at that level. Their exactness rests on "
        f"the tests (reading C = pbp bit for bit; every kernel against a plain implementation of Eqs. 9–11 fed "
        f"the same random numbers; pbp and cbc against the exact E and S(G)) and on S(G) here.",
        "",
        f"## 1. Bare determinant (A = 0): bias against the exact answer ({p1['sweeps']} sweeps per chain)",
        "",
        f"Exact: E/N = {p1['exact_energy_per_electron']:.8f} Ha (T/N = {p1['exact_kinetic_per_electron']:.8f}, "
        f"constant: zero variance; ⟨V⟩/N = {p1['exact_potential_per_electron']:.8f} = ξ/2 − (4π/ΩN) Σ c(G)/G²); "
        f"S(G) = 1 − c(G)/n per shell. 'S(G) worst shell': the largest |S − S_exact|/σ over the "
        f"{len(p1['exact_s'])} shells |G| ≤ 2k_F + (and the deviation, |G| in bohr⁻¹); 'rms': over all shells.",
        "",
        us.format_table(res1),
        "",
        f"## 2. Slater–Jastrow (A = r_c/6 = {p2['model']['jastrow_a']:.4f}, antiparallel cusp): bias against "
        f"particle-by-particle ({p2['sweeps']} sweeps per chain)",
        "",
        f"Reference: {p2['reference']['kind']}: E/N = {fve(p2['reference']['energy'], p2['reference']['error'])} Ha; "
        f"σ of each bias combines both error bars.",
        "",
        us.format_table(res2),
        "",
        f"## 3. Reading A against the step (A = 0, N = {n}, {report['parts']['literal_step']['sweeps']} sweeps each)",
        "",
        _literal_table(step_rows, "factor", "δ / δ_PbP"),
        "",
        f"## 4. Reading A against N (A = 0, δ tuned to 50 % pbp acceptance at each N; "
        f"{report['parts']['literal_size']['sweeps']} sweeps, half for N = 114)",
        "",
        _literal_table(size_rows, "electrons", "N"),
        "",
        f"## 5. Reading C with study 003's B-spline orbitals ({spl['grid']}³ grid, A = 0, "
        f"{report['parts']['bspline']['sweeps']} sweeps)",
        "",
        f"E/N = {fve(spl['energy'], spl['error'])} Ha (bias {fve(spl['bias_per_cell'], spl['bias_per_cell_error'])} Ha "
        f"per Si cell against the exact plane-wave answer), S(G₁) = {fve(spl['s1'], spl['s1_error'])} "
        f"(exact {spl['s1_exact']:.4f}); T/N = {fve(spl['kinetic'], spl['kinetic_error'])} Ha against the exact "
        f"{spl['kinetic_exact']:.8f} (the spline's Laplacian error; no longer zero-variance), acceptance "
        f"{spl['acceptance']:.3f}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
