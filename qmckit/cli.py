"""The ``qmckit`` command line.

    qmckit run bec --method vmc --n 20 --lam 1 --a 0.00433 --alpha 0.495 --json
    qmckit run bec --checkpoint run.h5 ...      # checkpoint after every block
    qmckit run bec --resume run.h5 --json       # continue an interrupted run
    qmckit run atom --element Be --method vmc --dt 0.01 --json
    qmckit run molecule --xyz h2o --basis cc-pvdz --no-jastrow --dt 0.02 --json   # needs qmckit[chem]
    qmckit run helium --n 64 --b 3.07 --method vmc --json
    qmckit bench helium --n 64,256,512 --backend cpu

Bad input ends with exit status 2 and one line on stderr that names the parameter.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block), exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise ValueError
    return value


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError
    return value


_positive_int.__name__ = "positive integer"
_finite_float.__name__ = "finite number"


def _energy_cap(text):
    if text in ("zen", "off"):
        return text == "zen"
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise ValueError
    return value


_energy_cap.__name__ = "energy cut (zen, off or a positive number of σ)"

# name in the system's parameter object → (flag, type, help)
_BEC_PARAMS = {
    "n": ("--n", int, "number of bosons N (default 20)"),
    "lam": ("--lam", _finite_float, "trap anisotropy λ = ω_z/ω_⊥ (default 1; the thesis's elliptic trap is 2.8284)"),
    "a": ("--a", _finite_float, "hard-sphere diameter in a_⊥, ≥ 0 (default 0.00433 = a_Rb; 0 = no interaction)"),
    "alpha": ("--alpha", _finite_float, "variational α in a_⊥⁻², > 0 (default 0.495)"),
}
_BEC_DEFAULTS = {"n": 20, "lam": 1.0, "a": 0.00433, "alpha": 0.495}
_ATOM_PARAMS = {
    "element": ("--element", str, "atom: He, Be or Ne (default He)"),
    "alpha": ("--alpha", _finite_float, "orbital exponent α in bohr⁻¹, > 0 (default: the element's published "
                                        "optimum, He 1.839, Be 3.925, Ne 9.546)"),
    "beta": ("--beta", _finite_float, "Padé–Jastrow β in bohr⁻¹, ≥ 0 (default He 0.348, Be 0.109, Ne 0.177)"),
    "beta_en": ("--beta-en", _finite_float, "β_en of the --en-cusp factor in bohr⁻¹, > 0 (default 2α)"),
}
_ATOM_SWITCHES = {"jastrow": "--no-jastrow", "ee": "--no-ee", "en_cusp": "--en-cusp"}
_MOLECULE_PARAMS = {
    "xyz": ("--xyz", str, "geometry in Å: a built-in name (h2o, ne, h2, acetic-acid, glycine, benzoic-acid), an .xyz file, or inline "
                          "'O 0 0 0; H 0 0.76 0.59' (default h2o)"),
    "basis": ("--basis", str, "Gaussian basis set known to PySCF, used with Cartesian functions (default cc-pvdz)"),
    "charge": ("--charge", int, "total charge; must leave an even number of electrons (default 0)"),
    "beta_ee": ("--beta-ee", _finite_float, "β of the e–e Padé–Jastrow term in bohr⁻¹, ≥ 0 (default 4)"),
    "beta_en": ("--beta-en", _finite_float, "β of the e–n Padé–Jastrow term in bohr⁻¹, > 0 (default 300)"),
}
_MOLECULE_SWITCHES = {"jastrow": "--no-jastrow", "jastrow_ee": "--no-ee-jastrow", "jastrow_en": "--no-en-jastrow",
                      "cusp": "--cusp"}
_HELIUM_PARAMS = {
    "n": ("--n", int, "number of ⁴He atoms N, ≥ 2 (default 64)"),
    "density": ("--density", _finite_float, "number density ρ in Å⁻³, > 0 (default 0.02186, the equilibrium liquid)"),
    "b": ("--b", _finite_float, "McMillan parameter b of u = −½(b/r)⁵ in Å, ≥ 0 (default 3.07)"),
    "hbar2_over_m": ("--hbar2-over-m", _finite_float, "ħ²/m in K Å² (default 12.1194, ⁴He)"),
    "potential": ("--potential", str, "pair potential: hfdb (Aziz HFD-B(HE), default) or none"),
}
_HELIUM_SWITCHES = {"tail": "--no-tail"}
_LATTICE_PARAMS = {
    "L": ("--L", int, "cluster side: tilted L²+1 sites with L odd (study 000), or L×L with --kind square (default 5)"),
    "doping": ("--doping", _finite_float, "hole doping x in [0, 1); N_e = 2·round(N_s(1−x)/2) (default 0.1)"),
    "J": ("--J", _finite_float, "exchange J in units of t, ≥ 0 (default 0.3; 0 with --free)"),
    "delta": ("--delta", _finite_float, "d-wave variational gap Δ, Δ_k = (Δ/2)(cos k_x − cos k_y), ≥ 0 (default 1.5; "
                                        "0: projected Fermi sea)"),
    "mu": ("--mu", _finite_float, "variational chemical potential μ in units of t (default 0)"),
    "tp_v": ("--tp-v", _finite_float, "variational t′ in the pair function's ξ_k (default 0)"),
    "tp": ("--tp", _finite_float, "Hamiltonian next-neighbour hopping t′ (default 0)"),
    "tpp": ("--tpp", _finite_float, "Hamiltonian third-neighbour hopping t″ (default 0)"),
    "kind": ("--kind", str, "cluster: tilted (L²+1, periodic; default) or square (L×L, antiperiodic in x)"),
}
_LATTICE_RUN = {"chains": "--walkers", "steps": "--steps", "equilibration": "--equil", "moves_per_sweep": "--moves",
                "refresh_every": "--refresh", "block": "--block", "seed": "--seed", "backend": "--backend"}
# system → (parameter flags, defaults); every parameter is passed to make_system by its name
_SYSTEM_PARAMS = {"bec": ({k: v[0] for k, v in _BEC_PARAMS.items()}, _BEC_DEFAULTS),
                  "atom": ({k: v[0] for k, v in _ATOM_PARAMS.items()} | _ATOM_SWITCHES, {"element": "He"}),
                  "molecule": ({k: v[0] for k, v in _MOLECULE_PARAMS.items()} | _MOLECULE_SWITCHES, {}),
                  "helium": ({k: v[0] for k, v in _HELIUM_PARAMS.items()} | _HELIUM_SWITCHES, {})}
# run settings whose sensible default depends on the system (helium: Metropolis moves at study 004's
# acceptance for VMC; Δτ in K⁻¹ for DMC)
_RUN_DEFAULTS = {"helium": {"vmc": {"sampler": "brute", "target_acceptance": 0.37, "step": 2.8},
                            "dmc": {"dt": 0.002}}}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="qmckit", description="Quantum Monte Carlo toolkit (VMC/DMC on CPU and GPU).")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    run = commands.add_parser("run", help="run one QMC calculation", description="Run one QMC calculation.")
    systems = run.add_subparsers(dest="system", metavar="SYSTEM", parser_class=_Parser)
    systems.required = True
    bec = systems.add_parser("bec", help="hard-sphere bosons in an elliptic harmonic trap (study 002)",
                             description="Trapped hard-sphere bosons. Lengths in a_⊥, energies in ħω_⊥; "
                                         "reports energy_per_particle.")
    for name, (flag, kind, text) in _BEC_PARAMS.items():
        bec.add_argument(flag, dest=name, type=kind, default=None, help=text)
    _add_method_options(bec)
    atom = systems.add_parser("atom", help="He, Be or Ne: hydrogenic orbitals + Padé–Jastrow (study 002)",
                              description="An atom (He, Be, Ne) with hydrogenic orbitals of effective charge α and "
                                          "a Padé–Jastrow factor. Lengths in bohr, energies in hartree; reports the "
                                          "total energy as 'energy'. DMC is fixed-node (moves across a node of ψ_T "
                                          "are rejected).")
    for name, (flag, kind, text) in _ATOM_PARAMS.items():
        atom.add_argument(flag, dest=name, type=kind, default=None, help=text)
    atom.add_argument("--no-jastrow", dest="jastrow", action="store_false", default=None,
                      help="leave out the Jastrow factor (ψ_T = D↑ D↓)")
    atom.add_argument("--no-ee", dest="ee", action="store_false", default=None,
                      help="leave out the electron–electron repulsion (with --no-jastrow and α = Z: exact, zero variance)")
    atom.add_argument("--en-cusp", dest="en_cusp", action="store_true", default=None,
                      help="add the e–n Padé factor exp(−Σ_i (Z − α) r_i/(1 + β_en r_i)) that restores the nuclear "
                           "cusp of the s orbitals (default off: the study's ψ_T)")
    _add_method_options(atom)
    molecule = systems.add_parser(
        "molecule", help="closed-shell molecule: RHF orbitals in a Gaussian basis + Padé–Jastrow (study 001)",
        description="A closed-shell molecule with the occupied RHF orbitals of PySCF (Cartesian Gaussian basis) "
                    "and an optional Padé–Jastrow factor (e–e and e–n terms). Lengths in bohr, energies in "
                    "hartree (nuclear repulsion included); reports the total energy as 'energy'. Needs the "
                    "optional 'chem' extra (PySCF). DMC is fixed-node.")
    for name, (flag, kind, text) in _MOLECULE_PARAMS.items():
        molecule.add_argument(flag, dest=name, type=kind, default=None, help=text)
    molecule.add_argument("--no-jastrow", dest="jastrow", action="store_false", default=None,
                          help="leave out the Jastrow factor: ψ_T = D↑ D↓, whose VMC energy is the RHF energy")
    molecule.add_argument("--no-ee-jastrow", dest="jastrow_ee", action="store_false", default=None,
                          help="leave out the e–e Padé term")
    molecule.add_argument("--no-en-jastrow", dest="jastrow_en", action="store_false", default=None,
                          help="leave out the e–n Padé term that restores the nuclear cusps")
    molecule.add_argument("--cusp", dest="cusp", action="store_true", default=None,
                          help="cusp-corrected orbitals near each nucleus instead of the e–n Padé term (implies "
                               "--no-en-jastrow); smaller E_L variance and DMC time-step error")
    _add_method_options(molecule)
    helium = systems.add_parser(
        "helium", help="liquid ⁴He: Aziz HFD-B(HE) potential + McMillan Jastrow in a periodic box (study 004)",
        description="Bulk ⁴He in a cubic periodic box (minimum image, cut-offs at L/2). Lengths in Å, energies in K, "
                    "DMC time step in K⁻¹; reports energy_per_particle and, for VMC, the potential and both kinetic "
                    "estimators per particle. VMC defaults to Metropolis moves tuned to acceptance 0.37.")
    for name, (flag, kind, text) in _HELIUM_PARAMS.items():
        helium.add_argument(flag, dest=name, type=kind, default=None, help=text)
    helium.add_argument("--no-tail", dest="tail", action="store_false", default=None,
                        help="leave out the potential tail correction beyond L/2 (study 004's sample run has none)")
    _add_method_options(helium)
    lattice = systems.add_parser(
        "lattice", help="t–J model: Gutzwiller-projected d-wave RVB state on a square-lattice cluster (study 000)",
        description="Lattice VMC of the projected d-wave BCS (RVB) state for the t–J model on a tilted L²+1 or square "
                    "cluster: hops to empty sites and spin swaps, Sherman–Morrison updates. Energies in units of t; "
                    "reports energy_per_site, kinetic_per_site, exchange_per_site and double_occupancy.")
    for name, (flag, kind, text) in _LATTICE_PARAMS.items():
        lattice.add_argument(flag, dest=name, type=kind, default=None, help=text)
    lattice.add_argument("--free", dest="free", action="store_true", default=None,
                         help="unprojected free fermions with the Fermi-sea pair function (needs a closed shell; J = 0): "
                              "every configuration has the exact Fermi-sea energy")
    lattice.add_argument("--method", choices=["vmc", "dmc"], default="vmc", help="QMC method (vmc only for lattices)")
    lattice.add_argument("--walkers", dest="chains", type=_positive_int, default=None,
                         help="Markov chains (default 32, study 000's nMarkov)")
    lattice.add_argument("--steps", type=_positive_int, default=None, help="measured sweeps per chain (default 1000)")
    lattice.add_argument("--equil", dest="equilibration", type=int, default=None,
                         help="equilibration sweeps (default max(50, steps/5))")
    lattice.add_argument("--moves", dest="moves_per_sweep", type=_positive_int, default=None,
                         help="proposals per sweep (default N_e)")
    lattice.add_argument("--refresh", dest="refresh_every", type=_positive_int, default=None,
                         help="sweeps between rebuilds of A⁻¹ from scratch (default 100, and one after every block)")
    lattice.add_argument("--block", type=_positive_int, default=None, help="sweeps per block / checkpoint")
    lattice.add_argument("--seed", type=int, default=None, help="random seed, ≥ 0 (default 0)")
    lattice.add_argument("--backend", choices=["auto", "cpu", "cuda"], default=None, help="kernel backend (default cpu)")
    lattice.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    lattice.add_argument("--checkpoint", metavar="FILE", default=None, help="write an HDF5 checkpoint after every block")
    lattice.add_argument("--resume", metavar="FILE", default=None, help="continue the run checkpointed in FILE")

    bench = commands.add_parser("bench", help="time a study's kernels on this machine",
                                description="Time a study's kernels on this machine and print a table.")
    benches = bench.add_subparsers(dest="bench", metavar="STUDY", parser_class=_Parser)
    benches.required = True
    he_bench = benches.add_parser("helium", help="study 004: Metropolis generation for liquid ⁴He",
                                  description="Time per macroupdate (N single-atom moves) per chain and pair "
                                              "evaluations per second of study 004's generation kernel.")
    he_bench.add_argument("--n", default="64,256,512,1000", help="comma-separated atom counts (default 64,256,512,1000)")
    he_bench.add_argument("--walkers", type=_positive_int, default=None,
                          help="chains (default: one per CPU core; 8 per SM on a GPU)")
    he_bench.add_argument("--backend", choices=["cpu", "cuda"], default="cpu", help="kernel backend (default cpu)")
    he_bench.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                          help="GPU coordinates and sums (default float64)")
    he_bench.add_argument("--macro", type=_positive_int, default=2, help="macroupdates per timing (default 2)")
    he_bench.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    orb_bench = benches.add_parser(
        "orbitals", help="study 003: B-spline (blip) orbital evaluation, values + gradients + Laplacians",
        description="Time one N × L evaluation of B-spline orbital values, gradients and Laplacians on the CPU "
                    "(random coefficients on a periodic grid; study 003's kernel): median seconds, achieved bytes/s "
                    "of coefficient reads (64 coefficients × L per electron) and GFLOP/s.")
    orb_bench.add_argument("--size", choices=["Si", "TiO2-648", "TiO2-1536"], default=None,
                           help="take N, L and the grid of a study 003 Table II system (explicit flags override)")
    orb_bench.add_argument("--electrons", type=_positive_int, default=None, help="electrons N (default 216)")
    orb_bench.add_argument("--orbitals", type=_positive_int, default=None, help="orbitals L (default 56)")
    orb_bench.add_argument("--grid", default=None,
                           help="spline grid: n (cubic) or n1,n2,n3, every n ≥ 4 (default 50)")
    orb_bench.add_argument("--precision", choices=["f32", "f64"], default="f64",
                           help="coefficients complex64 (f32) or complex128 (f64; default)")
    orb_bench.add_argument("--layout", choices=["coalesced", "uncoalesced"], default="coalesced",
                           help="coefficients (n1,n2,n3,L), orbital index fastest (default), or (L,n1,n2,n3)")
    orb_bench.add_argument("--real", action="store_true", help="real orbitals (default complex, as in study 003)")
    orb_bench.add_argument("--values-only", dest="values_only", action="store_true",
                           help="values alone, study 003's kernel (coalesced layout only)")
    orb_bench.add_argument("--repeats", type=_positive_int, default=5, help="timed evaluations (default 5)")
    orb_bench.add_argument("--threads", type=_positive_int, default=None,
                           help="numba threads (default: all; study 003's CPU column is one core)")
    orb_bench.add_argument("--seed", type=int, default=0, help="seed of the random coefficients and positions")
    orb_bench.add_argument("--json", action="store_true", help="print one JSON object on stdout")

    reproduce = commands.add_parser("reproduce", help="reproduce a study's published table",
                                    description="Reproduce a published table and write markdown, JSON and a figure.")
    studies = reproduce.add_subparsers(dest="study", metavar="STUDY", parser_class=_Parser)
    studies.required = True
    table = studies.add_parser("bec", help="study 002, Table 7.2: trapped bosons B1–B4, VMC and DMC",
                               description="Trapped bosons (study 002), Table 7.2: exact VMC and a DMC time-step "
                                           "series extrapolated to Δτ = 0, next to the published values.")
    table.add_argument("--precision", choices=["fast", "full"], default="fast",
                       help="fast: about a minute on two cores (default); full: the recorded results")
    table.add_argument("--sets", default="B1,B2,B3", help="comma-separated parameter sets among B1,B2,B3,B4")
    table.add_argument("--out", default="qmckit-bec-table72", help="output directory (default qmckit-bec-table72)")
    table.add_argument("--seed", type=int, default=2011, help="random seed (default 2011)")
    return parser


def _add_method_options(p):
    p.add_argument("--method", choices=["vmc", "dmc"], default=None, help="QMC method (default vmc)")
    p.add_argument("--sampler", choices=["drift", "brute"], default=None,
                   help="drift: importance sampling (default); brute: uniform moves, step auto-tuned")
    p.add_argument("--dt", type=_finite_float, default=None, help="time step of the drift sampler (default 0.05)")
    p.add_argument("--step", type=_finite_float, default=None,
                   help="initial side of the brute-force move cube (tuned during equilibration)")
    p.add_argument("--acceptance", dest="target_acceptance", type=_finite_float, default=None,
                   help="acceptance the brute-force step is tuned to, in (0, 1) (default 0.5)")
    p.add_argument("--every", dest="measure_every", type=_positive_int, default=None,
                   help="VMC: sweeps between measurements (study 004's m; default 1)")
    p.add_argument("--no-drift-cap", dest="drift_cap", action="store_false", default=None,
                   help="use the raw drift (exact either way; the cap only helps near hard-core contacts)")
    p.add_argument("--green", choices=["moved", "all"], default=None,
                   help="Green's-function ratio: moved (exact, default) or all (study 002's variant)")
    p.add_argument("--accept-uniform", dest="accept_uniform", choices=["fresh", "reuse"], default=None,
                   help="acceptance uniform: fresh (exact, default) or reuse (study 002's variant)")
    p.add_argument("--hard-core", dest="hard_core", choices=["reject", "redraw"], default=None,
                   help="overlapping proposal: reject (exact, default) or redraw (study 002's variant)")
    p.add_argument("--walkers", type=_positive_int, default=None, help="number of walkers (default 200)")
    p.add_argument("--energy-cap", dest="energy_cap", type=_energy_cap, default=None,
                   help="DMC branching cut of E_L − E_T: c (default 8) cuts at max(0.2√(N/Δτ), c σ₀); "
                        "zen: 0.2√(N/Δτ) alone; off: none")
    p.add_argument("--target-walkers", dest="target_walkers", type=_positive_int, default=None,
                   help="DMC population target (default: --walkers)")
    p.add_argument("--dmc-equil", dest="dmc_equilibration", type=int, default=None,
                   help="DMC steps before measuring (default: one time unit, 1/dt)")
    p.add_argument("--steps", type=_positive_int, default=None, help="measured sweeps per walker (default 1000)")
    p.add_argument("--equil", type=int, default=None, dest="equilibration",
                   help="equilibration sweeps (default max(50, steps/5), at least 1/dt)")
    p.add_argument("--block", type=_positive_int, default=None, help="sweeps per block / checkpoint")
    p.add_argument("--seed", type=int, default=None, help="random seed, ≥ 0 (default 0)")
    p.add_argument("--backend", choices=["auto", "cpu", "cuda"], default=None, help="kernel backend (default auto)")
    p.add_argument("--dtype", choices=["float64", "float32"], default=None,
                   help="floating-point type of the GPU kernels (default float64)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--checkpoint", metavar="FILE", default=None, help="write an HDF5 checkpoint after every block")
    p.add_argument("--resume", metavar="FILE", default=None, help="continue the run checkpointed in FILE")


_RUN_KEYS = ("method", "sampler", "dt", "step", "target_acceptance", "measure_every", "drift_cap", "energy_cap", "walkers", "steps", "equilibration", "block", "seed",
             "backend", "target_walkers", "dmc_equilibration", "green", "accept_uniform", "hard_core", "dtype")


def _fail(message: str) -> int:
    print(f"qmckit: error: {message}", file=sys.stderr)
    return 2


def _flag_for(message: str) -> str:
    """Turn 'alpha must be …' into '--alpha must be …' so the message names the CLI flag."""
    name = message.split(" ", 1)[0]
    flags = {k: v[0] for k, v in _BEC_PARAMS.items()} | _SYSTEM_PARAMS["atom"][0] | _SYSTEM_PARAMS["molecule"][0] | {
        "equilibration": "--equil", "target_walkers": "--target-walkers", "dmc_equilibration": "--dmc-equil",
        "energy_cap": "--energy-cap", "target_acceptance": "--acceptance", "measure_every": "--every"}
    flags |= _SYSTEM_PARAMS["helium"][0] | {k: v[0] for k, v in _LATTICE_PARAMS.items()} | _LATTICE_RUN
    if name in flags:
        return flags[name] + message[len(name):]
    if name in _RUN_KEYS:
        return "--" + message
    return message


def _run(args) -> int:
    if args.system == "lattice":
        return _run_lattice(args)
    from .runs import RunConfig, make_run, resume_run

    param_flags, param_defaults = _SYSTEM_PARAMS[args.system]
    given_params = {k: getattr(args, k) for k in param_flags if getattr(args, k) is not None}
    if given_params.get("cusp"):  # the corrected orbitals carry the nuclear cusp; the e–n term would double it
        given_params.setdefault("jastrow_en", False)
    given_run = {k: getattr(args, k) for k in _RUN_KEYS if getattr(args, k, None) is not None}
    try:
        if args.resume:
            if not os.path.exists(args.resume):
                return _fail(f"--resume: no checkpoint file {args.resume!r}")
            run = resume_run(args.resume)
            saved = run.config
            clashes = [k for k, v in given_params.items() if saved.params.get(k) != v]
            clashes += [k for k, v in given_run.items() if getattr(saved, k) != v]
            if clashes:
                named = ", ".join(param_flags.get(c, "--" + c) for c in clashes)
                return _fail(f"--resume: {named} differ from the checkpoint; omit them to continue the saved run")
        else:
            run_defaults = _RUN_DEFAULTS.get(args.system, {}).get(given_run.get("method", "vmc"), {})
            if "sampler" in given_run:  # a chosen sampler brings its own defaults
                run_defaults = {k: v for k, v in run_defaults.items() if k == "dt"}
            config = RunConfig(system=args.system, params=param_defaults | given_params, **(run_defaults | given_run))
            run = make_run(config, checkpoint_path=args.checkpoint)
    except ValueError as err:
        return _fail(_flag_for(str(err)))
    except ImportError as err:  # an optional dependency (PySCF for molecules): one line naming the extra
        return _fail(str(err).splitlines()[0] if str(err) else type(err).__name__)

    show_progress = not args.json and sys.stderr.isatty()
    result = run.run(_progress_printer(show_progress))
    if show_progress:
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(result))
    else:
        print(format_result(result))
    return 0


def _progress_printer(enabled: bool):
    def progress(done, total):
        if enabled:
            bar = "#" * int(30 * done / total)
            print(f"\r[{bar:<30}] block {done}/{total}", end="", file=sys.stderr, flush=True)
    return progress


def _run_lattice(args) -> int:
    from .methods.lattice_vmc import LatticeRun, LatticeRunConfig, resume_lattice_run

    if args.method != "vmc":
        return _fail(f"--method: lattice runs support vmc only, got {args.method!r}")
    given_params = {k: getattr(args, k) for k in (*_LATTICE_PARAMS, "free") if getattr(args, k) is not None}
    if given_params.get("free") and "J" not in given_params:
        given_params["J"] = 0.0
    given_run = {k: getattr(args, k) for k in _LATTICE_RUN if getattr(args, k) is not None}
    try:
        if args.resume:
            if not os.path.exists(args.resume):
                return _fail(f"--resume: no checkpoint file {args.resume!r}")
            run = resume_lattice_run(args.resume)
            clashes = [k for k, v in given_params.items() if run.config.params.get(k) != v]
            clashes += [k for k, v in given_run.items() if getattr(run.config, k) != v]
            if clashes:
                named = ", ".join((_LATTICE_PARAMS[c][0] if c in _LATTICE_PARAMS else _LATTICE_RUN.get(c, "--" + c))
                                  for c in clashes)
                return _fail(f"--resume: {named} differ from the checkpoint; omit them to continue the saved run")
        else:
            run = LatticeRun(LatticeRunConfig(params=given_params, **given_run), checkpoint_path=args.checkpoint)
    except ValueError as err:
        return _fail(_flag_for(str(err)))
    show = not args.json and sys.stderr.isatty()
    result = run.run(_progress_printer(show))
    if show:
        print(file=sys.stderr)
    print(json.dumps(result) if args.json else format_result(result | {"sampler": "hop/swap"}))
    return 0


def _bench(args) -> int:
    if args.bench == "orbitals":
        return _bench_orbitals(args)
    import numpy as np

    from .studies import helium4

    try:
        sizes = [int(x) for x in args.n.split(",") if x.strip()]
        if not sizes or min(sizes) < 2:
            raise ValueError
    except ValueError:
        return _fail(f"--n must be a comma-separated list of atom counts ≥ 2, got {args.n!r}")
    options = {}
    if args.backend == "cuda":
        from .backends import helium_chains

        if not helium_chains.available():
            return _fail("--backend cuda: no CUDA GPU found (use cpu)")
        options["dtype"] = np.dtype(args.dtype)
        from numba import cuda

        walkers = args.walkers or 8 * cuda.get_current_device().MULTIPROCESSOR_COUNT
    else:
        walkers = args.walkers or (os.cpu_count() or 1)
    rows = [helium4.time_generation(n, walkers, backend=args.backend, n_macro=args.macro, **options) for n in sizes]
    if args.json:
        print(json.dumps({"study": "helium", "backend": args.backend, "walkers": walkers, "rows": rows}, default=str))
        return 0
    print(f"helium generation, backend {args.backend}, {walkers} chains, {args.macro} macroupdates per timing")
    print(f"{'N':>7} {'ms/macroupdate/chain':>21} {'pair evaluations/s':>19} {'acceptance':>10}")
    for r in rows:
        print(f"{r['n']:>7} {1e3 * r['s_per_macroupdate_per_chain']:>21.4f} {r['pair_evaluations_per_s']:>19.3e} "
              f"{r['acceptance']:>10.3f}")
    return 0


def _bench_orbitals(args) -> int:
    from .systems import bspline_orbitals as bo

    sizes = bo.TABLE_II_SIZES[args.size] if args.size else {"electrons": 216, "orbitals": 56, "grid": (50, 50, 50)}
    electrons = args.electrons or sizes["electrons"]
    orbitals = args.orbitals or sizes["orbitals"]
    grid = sizes["grid"]
    if args.grid is not None:
        try:
            grid = tuple(int(x) for x in args.grid.replace("x", ",").split(","))
            if len(grid) == 1:
                grid = grid * 3
            if len(grid) != 3 or min(grid) < bo.MIN_GRID:
                raise ValueError
        except ValueError:
            return _fail(f"--grid must be n or n1,n2,n3 with every n ≥ {bo.MIN_GRID}, got {args.grid!r}")
    if args.seed < 0:
        return _fail(f"--seed must be a non-negative integer, got {args.seed}")
    table = grid[0] * grid[1] * grid[2] * orbitals * (8 if args.precision == "f32" else 16) // (1 if not args.real else 2)
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = None
    if memory and 2.5 * table > memory:
        return _fail(f"--grid/--orbitals: the coefficient table needs {table / 2**30:.1f} GiB, too much for this "
                     f"machine's {memory / 2**30:.1f} GiB")
    try:
        row = bo.time_evaluation(electrons, orbitals, grid, precision=args.precision, layout=args.layout,
                                 complex=not args.real, repeats=args.repeats, threads=args.threads, seed=args.seed,
                                 values_only=args.values_only)
    except ValueError as err:
        message = str(err)
        flags = {"n_electrons": "--electrons", "n_orbitals": "--orbitals", "grid": "--grid", "precision": "--precision",
                 "layout": "--layout", "repeats": "--repeats", "threads": "--threads"}
        name = message.split(" ", 1)[0]
        return _fail(flags.get(name, name) + message[len(name):])
    if args.size:
        row["table_ii"] = {"size": args.size} | {k: v for k, v in bo.TABLE_II_SIZES[args.size].items()
                                                  if k in ("system", "cpu_ms", "gpu_ms", "acceleration")}
    if args.json:
        print(json.dumps({"study": "orbitals", "backend": "cpu"} | row))
        return 0
    print(f"B-spline orbitals, cpu, {row['threads']} threads: N={electrons}, L={orbitals}, grid "
          f"{'x'.join(map(str, grid))}, {row['dtype']}, {row['layout']}, {row['quantities']}, median of "
          f"{row['repeats']}")
    print(f"{'ms/evaluation':>14} {'GB/s (coeff.)':>14} {'GFLOP/s':>9} {'GFLOP/s (003 rule)':>19}")
    print(f"{1e3 * row['median_s']:>14.3f} {row['bytes_per_s'] / 1e9:>14.2f} {row['gflops']:>9.2f} "
          f"{row['paper_gflops']:>19.2f}")
    return 0


def _reproduce(args) -> int:
    from .studies import bec

    sets = tuple(s.strip() for s in args.sets.split(",") if s.strip())
    if args.seed < 0:
        return _fail(f"--seed must be a non-negative integer, got {args.seed}")
    try:
        bec.reference_data()
        unknown = [s for s in sets if s not in bec.reference_data()["sets"]]
        if not sets or unknown:
            return _fail(f"--sets must be a comma-separated list of B1, B2, B3, B4, got {args.sets!r}")
    except FileNotFoundError as err:
        return _fail(str(err))
    result = bec.reproduce_table72(args.precision, sets=sets, seed=args.seed,
                                   progress=lambda msg: print(f"qmckit: {msg}", file=sys.stderr, flush=True))
    paths = bec.write_report(result, args.out)
    print(bec.markdown_table(result))
    print(f"\nwritten: {paths['markdown']}, {paths['json']}, {paths['figure']}")
    return 0


def format_result(result: dict) -> str:
    """A short human-readable report of a run's result dictionary."""
    from .stats import format_value_error

    params = ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else f"{k}={v}"
                       for k, v in result["params"].items())
    unit_of_work = "DMC steps" if result["method"] == "dmc" else "sweeps"
    lines = [f"{result['system']} {result['method']} ({params}), {result['walkers']} walkers × "
             f"{result['steps']} {unit_of_work}, sampler {result['sampler']}, seed {result['seed']}"]
    for name, est in result["estimates"].items():
        unit = result["energy_unit"] if name.startswith("energy_per") or name == "energy" else ""
        lines.append(f"  {name:22s} {format_value_error(est['mean'], est['error'])} {unit}"
                     f"   (τ = {est['tau']:.2f} {unit_of_work})")
    lines.append(f"  acceptance {result['acceptance']:.3f}, wall time {result['wall_s']:.1f} s")
    return "\n".join(lines)


def _one_line_warning(message, category, filename, lineno, line=None):
    return f"qmckit: warning: {message}\n"


def main(argv=None) -> int:
    import warnings

    warnings.formatwarning = _one_line_warning  # a physicist wants the message, not our source line
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "reproduce":
        return _reproduce(args)
    if args.command == "bench":
        return _bench(args)
    return _fail(f"unknown command {args.command!r}")


if __name__ == "__main__":
    sys.exit(main())
