"""The ``qmckit`` command line.

    qmckit run bec --method vmc --n 20 --lam 1 --a 0.00433 --alpha 0.495 --json
    qmckit run bec --checkpoint run.h5 ...      # checkpoint after every block
    qmckit run bec --resume run.h5 --json       # continue an interrupted run
    qmckit run atom --element Be --method vmc --dt 0.01 --json
    qmckit run molecule --xyz h2o --basis cc-pvdz --no-jastrow --dt 0.02 --json   # needs qmckit[chem]
    qmckit run helium --n 64 --b 3.07 --method vmc --json
    qmckit run SYSTEM --help                    # every registered system; flags from its parameter metadata
    qmckit bench helium --n 64,256,512 --backend cpu
    qmckit scan bec --param alpha=0.4:0.6:11 --a 0 --walkers 200 --store scan.h5   # a grid, on a local Dask cluster

Bad input ends with exit status 2 and one line on stderr that names the parameter.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

from .terminal import Progress, collected_warnings, interactive


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

def _parameter_type(info):
    """The argparse type of a declared parameter: parses the text; the system validates the value."""
    if info.kind is int:
        return int
    if info.kind is float:
        return _finite_float
    return str


def _add_system_parameters(parser, system_class) -> None:
    """One flag per declared parameter of ``system_class`` (help, unit and default from its metadata)."""
    for info in system_class.parameters():
        flags = (info.flag, *info.spec.aliases)
        if info.kind is bool:
            verb = "leave out" if info.default else "use"
            parser.add_argument(*flags, dest=info.name, action="store_false" if info.default else "store_true",
                                default=None, help=f"{verb} {info.spec.help}")
        else:
            parser.add_argument(*flags, dest=info.name, type=_parameter_type(info), default=None,
                                metavar=info.name.upper(), help=info.describe())


VERBOSE_HELP = "print every warning (the reblocking details of each error bar), not one line counting them"


def _add_verbose(parser) -> None:
    """-v after the subcommand too (``qmckit run bec -v``); SUPPRESS keeps a -v given before it."""
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="qmckit", description="Quantum Monte Carlo toolkit (VMC/DMC on CPU and GPU).")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    run = commands.add_parser("run", help="run one QMC calculation", description="Run one QMC calculation.")
    systems = run.add_subparsers(dest="system", metavar="SYSTEM", parser_class=_Parser)
    systems.required = True
    from .systems import SYSTEMS

    for name, system_class in SYSTEMS.items():
        sub = systems.add_parser(name, help=system_class.title, description=system_class.description)
        _add_verbose(sub)
        _add_system_parameters(sub, system_class)
        if system_class.kind == "lattice":
            _add_lattice_options(sub)
        else:
            _add_method_options(sub, system_class)

    bench = commands.add_parser("bench", help="time a study's kernels on this machine",
                                description="Time a study's kernels on this machine and print a table.")
    benches = bench.add_subparsers(dest="bench", metavar="STUDY", parser_class=_Parser)
    benches.required = True
    he_bench = benches.add_parser("helium", help="study 004: Metropolis generation for liquid ⁴He",
                                  description="Time per macroupdate (N single-atom moves) per chain and pair "
                                              "evaluations per second of study 004's generation kernel.")
    _add_verbose(he_bench)
    he_bench.add_argument("--n", default="64,256,512,1000",
                          help="comma-separated atom counts (default 64,256,512,1000)")
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
    _add_verbose(orb_bench)
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

    from .scans import command as scan_command
    from .methods import optimize_command

    scan_command.add_parser(commands, _Parser, _add_system_parameters, _add_method_options, _add_verbose)
    optimize_command.add_parser(commands, _Parser, _add_system_parameters, _add_verbose)

    from .studies.reports import PRECISIONS, STUDIES

    reproduce = commands.add_parser("reproduce", help="reproduce a seed study's published numbers",
                                    description="Reproduce a seed study: run it, set qmckit's numbers beside the "
                                                "published ones with pulls, and write markdown, JSON and a figure.")
    studies = reproduce.add_subparsers(dest="study", metavar="STUDY", parser_class=_Parser)
    studies.required = True
    for name, study in STUDIES.items():
        p = studies.add_parser(name, help=study.summary, description=f"Study {study.summary}.")
        _add_verbose(p)
        p.add_argument("--precision", choices=PRECISIONS, default="fast",
                       help="fast: at most about two minutes on two cores (default); full: the notebook's full sizes")
        p.add_argument("--out", default=f"qmckit-{name}-{study.stem}",
                       help=f"output directory (default qmckit-{name}-{study.stem})")
        p.add_argument("--seed", type=int, default=study.seed, help=f"random seed (default {study.seed})")
        if name == "bec":
            p.add_argument("--sets", default="B1,B2,B3", help="comma-separated parameter sets among B1,B2,B3,B4")
    return parser


# lattice run settings (LatticeRunConfig field → flag)
_LATTICE_RUN = {"chains": "--walkers", "steps": "--steps", "equilibration": "--equil", "moves_per_sweep": "--moves",
                "refresh_every": "--refresh", "block": "--block", "seed": "--seed", "backend": "--backend"}


def _add_lattice_options(p):
    p.add_argument("--method", choices=["vmc", "dmc"], default="vmc", help="QMC method (vmc only for lattices)")
    p.add_argument("--walkers", dest="chains", type=_positive_int, default=None,
                   help="Markov chains (default 32, study 000's nMarkov)")
    p.add_argument("--steps", type=_positive_int, default=None, help="measured sweeps per chain (default 1000)")
    p.add_argument("--equil", dest="equilibration", type=int, default=None,
                   help="equilibration sweeps (default max(50, steps/5))")
    p.add_argument("--moves", dest="moves_per_sweep", type=_positive_int, default=None,
                   help="proposals per sweep (default N_e)")
    p.add_argument("--refresh", dest="refresh_every", type=_positive_int, default=None,
                   help="sweeps between rebuilds of A⁻¹ from scratch (default 100, and one after every block)")
    p.add_argument("--block", type=_positive_int, default=None, help="sweeps per block / checkpoint")
    p.add_argument("--seed", type=int, default=None, help="random seed, ≥ 0 (default 0)")
    p.add_argument("--backend", choices=["auto", "cpu", "cuda"], default=None, help="kernel backend (default cpu)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--profile", action="store_true", help="print where the run's time went, by phase (on stderr "
                   "with --json); the JSON always has it as 'profile'")
    p.add_argument("--checkpoint", metavar="FILE", default=None, help="write an HDF5 checkpoint after every block")
    p.add_argument("--resume", metavar="FILE", default=None, help="continue the run checkpointed in FILE")


def _add_method_options(p, system_class):
    own = tuple(system_class.capabilities.samplers)
    p.add_argument("--method", choices=["vmc", "dmc"], default=None, help="QMC method (default vmc)")
    p.add_argument("--sampler", choices=["drift", "brute", *own], default=None,
                   help="drift: importance sampling (default); brute: uniform moves, step auto-tuned"
                        + "".join(f"; {name}: this system's own move" for name in own))
    p.add_argument("--dt", type=_finite_float, default=None, help="time step of the drift sampler (default 0.05)")
    p.add_argument("--step", type=_finite_float, default=None,
                   help="initial side of the brute-force move cube (tuned during equilibration)")
    p.add_argument("--acceptance", dest="target_acceptance", type=_finite_float, default=None,
                   help="acceptance the brute-force step is tuned to, in (0, 1) (default 0.5)")
    p.add_argument("--every", dest="measure_every", type=_positive_int, default=None,
                   help="VMC: sweeps between measurements (study 004's m; default 1)")
    p.add_argument("--no-drift-cap", dest="drift_cap", action="store_false", default=None,
                   help="use the raw drift (exact either way; the cap only helps near hard-core contacts)")
    p.add_argument("--nuclear-moves", dest="nuclear_moves", action="store_true", default=None,
                   help="drift moves near nuclei by Umrigar–Nightingale–Runge 1993 (atom, molecule): smaller DMC "
                        "time-step errors, exact VMC either way")
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
    p.add_argument("--feedback-time", dest="feedback_time", type=_finite_float, default=None,
                   help="DMC population feedback time τ_fb, in the system's time unit, > 0 (default 0.1)")
    p.add_argument("--no-tau-eff", dest="effective_time_step", action="store_false", default=None,
                   help="DMC: branch with Δτ itself, not the effective time step Δτ⟨R²_acc⟩/⟨R²_prop⟩ "
                        "(study 002's way)")
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
    p.add_argument("--measure-density", dest="density_histogram", choices=["x", "y", "z", "r", "rho", "pair"],
                   default=None, help="measure the one-body density along x, y or z, of r, or of rho (2D radius), or "
                   "the distribution of pair distances (pair); 'density' in the JSON")
    p.add_argument("--density-every", dest="density_every", type=_positive_int, default=None,
                   help="sweeps (DMC steps) between density samples (default 1)")
    p.add_argument("--analysis", choices=["sync", "async"], default=None,
                   help="async: histogram the density in a worker thread beside the sampler (the same numbers; "
                        "needs --measure-density)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--profile", action="store_true", help="print where the run's time went, by phase (on stderr "
                   "with --json); the JSON always has it as 'profile'")
    p.add_argument("--checkpoint", metavar="FILE", default=None, help="write an HDF5 checkpoint after every block")
    p.add_argument("--resume", metavar="FILE", default=None, help="continue the run checkpointed in FILE")


_RUN_KEYS = ("method", "sampler", "dt", "step", "target_acceptance", "measure_every", "drift_cap", "energy_cap",
             "feedback_time", "effective_time_step", "nuclear_moves", "walkers", "steps",
             "equilibration", "block", "seed",
             "backend", "target_walkers", "dmc_equilibration", "green", "accept_uniform", "hard_core", "dtype",
             "density_every", "analysis")


# RunConfig fields whose flag is not "--" + the field's name
_RUN_FLAGS = {"equilibration": "--equil", "target_walkers": "--target-walkers", "dmc_equilibration": "--dmc-equil",
              "energy_cap": "--energy-cap", "target_acceptance": "--acceptance", "measure_every": "--every",
              "feedback_time": "--feedback-time", "nuclear_moves": "--nuclear-moves",
              "effective_time_step": "--no-tau-eff", "drift_cap": "--no-drift-cap",
              "accept_uniform": "--accept-uniform", "density_every": "--density-every", "density": "--measure-density",
              "hard_core": "--hard-core"}


def _fail(message: str) -> int:
    print(f"qmckit: error: {message}", file=sys.stderr)
    return 2


def _flag_for(message: str, system_class=None) -> str:
    """Turn 'alpha must be …' into '--alpha must be …' so the message names the CLI flag."""
    name = message.split(" ", 1)[0]
    flags = dict(_RUN_FLAGS)
    if system_class is not None:
        flags |= {info.name: info.flag for info in system_class.parameters()}
        if system_class.kind == "lattice":
            flags |= _LATTICE_RUN
    if name in flags:
        return flags[name] + message[len(name):]
    if name in _RUN_KEYS:
        return "--" + message
    return message


def _given_parameters(args, system_class) -> dict:
    """The system parameters given on the command line, with the CLI's implied settings added."""
    given = {info.name: getattr(args, info.name) for info in system_class.parameters()
             if getattr(args, info.name) is not None}
    for name, implied in system_class.cli_implies.items():
        if given.get(name):
            for other, value in implied.items():
                given.setdefault(other, value)
    return given


def _clashes(given: dict, saved: dict, flags: dict) -> str | None:
    """The flags whose given value differs from a checkpoint's, as text (None when all agree)."""
    names = [k for k, v in given.items() if saved.get(k) != v]
    return ", ".join(flags.get(k) or _RUN_FLAGS.get(k, "--" + k) for k in names) if names else None


def _clash_message(named: str) -> str:
    one = "," not in named
    return (f"--resume: {named} {'differs' if one else 'differ'} from the checkpoint; omit {'it' if one else 'them'} "
            f"to continue the saved run")


def _run(args) -> int:
    from .systems import SYSTEMS

    system_class = SYSTEMS[args.system]
    if system_class.kind == "lattice":
        return _run_lattice(args, system_class)
    from .checkpoint import CheckpointError
    from .runs import RunConfig, make_run, resume_run

    given_params = _given_parameters(args, system_class)
    given_run = {k: getattr(args, k) for k in _RUN_KEYS if getattr(args, k, None) is not None}
    if args.density_histogram is not None:  # RunConfig's density (helium's --density is its number density)
        given_run["density"] = args.density_histogram
    try:
        if args.resume:
            if not os.path.exists(args.resume):
                return _fail(f"--resume: no checkpoint file {args.resume!r}")
            try:
                run = resume_run(args.resume)
            except CheckpointError as err:
                return _fail(str(err))
            except ValueError as err:  # the saved settings, valid where they ran, cannot run here (a backend)
                return _fail(f"--resume: the checkpoint cannot continue here: {err}")
            saved = run.config
            flags = {info.name: info.flag for info in system_class.parameters()}
            named = _clashes(given_params, saved.params, flags) or _clashes(given_run, vars(saved), {})
            if saved.system != args.system:
                return _fail(f"--resume: the checkpoint holds a run of system {saved.system!r}, not {args.system!r}")
            if named:
                return _fail(_clash_message(named))
        else:
            method = given_run.get("method", "vmc")
            run_defaults = system_class.run_defaults.get(f"{method} {given_run.get('backend')}",
                                                         system_class.run_defaults.get(method, {}))
            if "sampler" in given_run:  # a chosen sampler brings its own defaults
                run_defaults = {k: v for k, v in run_defaults.items() if k == "dt"}
            config = RunConfig(system=args.system, params=given_params, **(run_defaults | given_run))
            run = make_run(config, checkpoint_path=args.checkpoint)
    except ValueError as err:
        return _fail(_flag_for(str(err), system_class))
    except ImportError as err:  # an optional dependency (PySCF for molecules): one line naming the extra
        return _fail(str(err).splitlines()[0] if str(err) else type(err).__name__)

    progress = Progress(interactive(args.json))
    try:
        result = run.run(progress, pieces=progress.piece if progress.enabled else None)
    except (FloatingPointError, ValueError) as err:  # a run that cannot go on (ψ_T fails, the population dies)
        return _fail(f"the run stopped: {str(err).splitlines()[0]}")
    finally:
        progress.close()
    _print_warnings(result)
    if args.json:
        print(json.dumps(result))
    else:
        print(format_result(result))
    _print_profile(args, result)
    return 0


def _print_profile(args, result: dict) -> None:
    """With --profile, the result's phase table (stderr in JSON mode, which prints one object on stdout)."""
    if args.profile:
        from .perf.run_profile import format_profile

        print(format_profile(result["profile"]), file=sys.stderr if args.json else sys.stdout)


def _print_warnings(result: dict) -> None:
    """The run's warnings (result["warnings"]), one line each on stderr, in JSON mode too."""
    for line in result.get("warnings", ()):
        print(f"qmckit: warning: {line}", file=sys.stderr)


def _run_lattice(args, system_class) -> int:
    from .methods.lattice_vmc import LatticeRun, LatticeRunConfig, resume_lattice_run

    if args.method != "vmc":
        return _fail(f"--method: lattice runs support vmc only, got {args.method!r}")
    given_params = _given_parameters(args, system_class)
    given_run = {k: getattr(args, k) for k in _LATTICE_RUN if getattr(args, k) is not None}
    try:
        if args.resume:
            if not os.path.exists(args.resume):
                return _fail(f"--resume: no checkpoint file {args.resume!r}")
            run = resume_lattice_run(args.resume)
            flags = {info.name: info.flag for info in system_class.parameters()} | _LATTICE_RUN
            named = _clashes(given_params, run.config.params, flags) or _clashes(given_run, vars(run.config), flags)
            if named:
                return _fail(_clash_message(named))
        else:
            run = LatticeRun(LatticeRunConfig(params=given_params, **given_run), checkpoint_path=args.checkpoint)
    except ValueError as err:
        return _fail(_flag_for(str(err), system_class))
    progress = Progress(interactive(args.json))
    try:
        result = run.run(progress, pieces=progress.piece if progress.enabled else None)
    except (FloatingPointError, ValueError) as err:
        return _fail(f"the run stopped: {str(err).splitlines()[0]}")
    finally:
        progress.close()
    _print_warnings(result)
    print(json.dumps(result) if args.json else format_result(result | {"sampler": "hop/swap"}))
    _print_profile(args, result)
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
    table = (grid[0] * grid[1] * grid[2] * orbitals * (8 if args.precision == "f32" else 16)
             // (1 if not args.real else 2))
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
    from .studies import reports

    if args.seed < 0:
        return _fail(f"--seed must be a non-negative integer, got {args.seed}")
    options = {}
    if args.study == "bec":
        from .studies import bec

        sets = tuple(s.strip() for s in args.sets.split(",") if s.strip())
        try:
            known = bec.reference_data()["sets"]
        except FileNotFoundError as err:
            return _fail(str(err))
        if not sets or any(s not in known for s in sets):
            return _fail(f"--sets must be a comma-separated list of {', '.join(known)}, got {args.sets!r}")
        options["sets"] = sets
    progress = Progress(interactive() or args.verbose)
    try:
        result = reports.reproduce(args.study, args.precision, seed=args.seed, progress=progress.step, **options)
    except (ValueError, FileNotFoundError) as err:
        return _fail(str(err).splitlines()[0])
    finally:
        progress.close()
    paths = reports.write_report(args.study, result, args.out)
    print(reports.STUDIES[args.study].load().markdown(result))
    print(f"\nwritten in {result['wall_s']:.0f} s: {paths['markdown']}, {paths['json']}, {paths['figure']}")
    return 0


def _optimize(args) -> int:
    from .methods import optimize_command

    return optimize_command.run(args, _fail, _given_parameters)


def _scan(args) -> int:
    from .scans import command

    return command.run(args, _fail, _given_parameters, _RUN_KEYS, _flag_for)


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
    timestep = ""
    if result.get("tau_eff") is not None:
        timestep = (f", Δτ = {result['dt']:g}, τ_eff = {result['tau_eff']:.6g}"
                    f"{'' if result['effective_time_step'] else ' (not used: --no-tau-eff)'}")
    lines.append(f"  acceptance {result['acceptance']:.3f}{timestep}, wall time {result['wall_s']:.1f} s")
    return "\n".join(lines)


def _one_line_warning(message, category, filename, lineno, line=None):
    return f"qmckit: warning: {message}\n"


def _with_user_system(argv: list) -> list:
    """``qmckit run|scan --system MODULE:NAME …``: import MODULE (a module name, or a path to a .py file; the current
    folder is searched first), take its System instance NAME (a :func:`qmckit.UserSystem`), register it, and put its
    name where the SYSTEM argument goes. Other command lines are returned as they are."""
    where = [k for k, a in enumerate(argv) if a == "--system" or a.startswith("--system=")]
    if not where or len(argv) < 1 or argv[0] not in ("run", "scan", "optimize"):
        return argv
    k = where[0]
    spec = argv[k].split("=", 1)[1] if "=" in argv[k] else (argv[k + 1] if k + 1 < len(argv) else "")
    rest = argv[:k] + argv[k + (1 if "=" in argv[k] else 2):]
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise ValueError(f"--system must be MODULE:NAME (a module or .py file and a System in it), got {spec!r}")
    import importlib
    import importlib.util
    import os

    from .systems import System, adopt

    try:
        if module_name.endswith(".py"):
            loader_spec = importlib.util.spec_from_file_location(os.path.basename(module_name)[:-3], module_name)
            module = importlib.util.module_from_spec(loader_spec)
            loader_spec.loader.exec_module(module)
        else:
            sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except (ImportError, OSError) as err:
        raise ValueError(f"--system: cannot import {module_name!r} ({err})") from None
    system = getattr(module, attr, None)
    if not isinstance(system, System):
        raise ValueError(f"--system: {module_name}:{attr} is not a qmckit System (make it with qmckit.UserSystem), "
                         f"got {type(system).__name__}")
    return rest[:1] + [adopt(system)] + rest[1:]


def main(argv=None) -> int:
    import warnings

    warnings.formatwarning = _one_line_warning  # a physicist wants the message, not our source line
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = _with_user_system(argv)
    except ValueError as err:
        return _fail(str(err))
    parser = build_parser()
    args = parser.parse_args(argv)
    commands = {"run": _run, "reproduce": _reproduce, "bench": _bench, "scan": _scan, "optimize": _optimize}
    with collected_warnings(args.verbose):
        return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
