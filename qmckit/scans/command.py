"""``qmckit scan SYSTEM``: the command line of :func:`qmckit.scan`.

    qmckit scan bec --param alpha=0.40:0.60:11 --param n=10,20 --a 0 --walkers 200 --steps 2000 --store scan.h5
    qmckit scan bec --param alpha=0.3:0.7:5 --a 0 --refine alpha --rounds 6 --serial --json

Every flag of ``qmckit run SYSTEM`` fixes that parameter or setting for all points; ``--param`` (repeatable) gives
an axis; the points are the axes' Cartesian product. ``--workers K`` sizes the local Dask cluster (default: one
worker per core), ``--scheduler ADDRESS`` uses a running one, ``--serial`` runs in this process.
"""
from __future__ import annotations

import json
import sys


def add_parser(commands, parser_class, add_system_parameters, add_method_options, add_verbose) -> None:
    """The ``scan`` command with one subcommand per registered system."""
    from ..systems import SYSTEMS

    scan = commands.add_parser("scan", help="scan a system's parameters and run settings over a grid",
                               description="Run a system at every point of a grid of its parameters and run "
                                           "settings, serially or on a Dask cluster, into a resumable table.")
    systems = scan.add_subparsers(dest="system", metavar="SYSTEM", parser_class=parser_class)
    systems.required = True
    for name, system_class in SYSTEMS.items():
        sub = systems.add_parser(name, help=system_class.title, description=system_class.description)
        add_verbose(sub)
        add_system_parameters(sub, system_class)
        add_method_options(sub, system_class)
        sub.add_argument("--param", action="append", default=[], metavar="NAME=START:STOP:COUNT|V1,V2,…",
                         help="an axis of the grid (repeatable): a parameter or run setting and its values")
        sub.add_argument("--refine", metavar="NAME", default=None,
                         help="golden-section refinement of the energy minimum along this (one) axis")
        sub.add_argument("--rounds", type=int, default=6, help="refinement rounds, one point each (default 6)")
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--workers", type=int, default=None, help="local Dask cluster size (default: cores)")
        where.add_argument("--scheduler", metavar="ADDRESS", default=None, help="a running Dask scheduler")
        where.add_argument("--serial", action="store_true", help="run the points one by one in this process")
        where.add_argument("--gpus", type=int, nargs="?", const=0, default=None, metavar="N",
                           help="one worker per GPU (N of them; all without N), points on --backend cuda")
        sub.add_argument("--store", metavar="FILE", default=None,
                         help="HDF5 results table, written after every point; rerunning the scan skips finished "
                              "points")


def run(args, fail, given_parameters, run_keys, flag_for) -> int:
    """Parse the axes, run the scan, print the table (or ``--json``)."""
    from ..systems import SYSTEMS
    from .grid import parse_axis
    from .execute import refine_minimum, scan

    system_class = SYSTEMS[args.system]
    if args.checkpoint or args.resume:
        return fail("--checkpoint/--resume: a scan keeps its rows in --store instead")
    if args.workers is not None and args.workers < 1:
        return fail(f"--workers must be ≥ 1, got {args.workers}")
    try:
        axes = dict(parse_axis(text) for text in args.param)
    except ValueError as err:
        return fail(str(err))
    if not axes:
        return fail("--param: give at least one axis, e.g. --param alpha=0.4:0.6:5")
    fixed = given_parameters(args, system_class) | {k: getattr(args, k) for k in run_keys
                                                     if getattr(args, k, None) is not None and k != "seed"}
    clash = sorted(set(axes) & set(fixed))
    if clash:
        return fail(f"--param {clash[0]}: also fixed by its own flag; give it once")
    if args.refine is not None and (len(axes) != 1 or args.refine not in axes):
        return fail(f"--refine needs a scan of that one axis, got axes {', '.join(axes)}")
    from .execute import start_executor

    if args.scheduler:
        try:
            from distributed import Client
        except ImportError:
            return fail("--scheduler needs Dask: pip install 'qmckit[dask]'")
    if args.gpus is not None:
        fixed.setdefault("backend", "cuda")
    try:  # one cluster for the whole command (a refinement runs several scans)
        executor, close = start_executor("serial" if args.serial
                                         else Client(args.scheduler) if args.scheduler else None,
                                         args.workers, None, args.gpus)
    except (ValueError, OSError, TimeoutError) as err:  # no GPU, no Dask, no scheduler at that address
        where = "--scheduler: " if args.scheduler and not isinstance(err, ValueError) else ""
        return fail(where + (str(err).splitlines()[0] if str(err) else type(err).__name__))
    if args.scheduler:
        close = executor.close  # our connection to the user's cluster, not the cluster
    options = dict(seed=args.seed or 0, client=executor if executor is not None else "serial", store=args.store)
    from ..terminal import Progress, interactive

    bar = Progress(interactive(args.json))
    progress = (lambda done, total, row: bar(done, total, "points")) if bar.enabled else None
    try:
        result = scan(args.system, axes, fixed, progress=progress, **options)
        minimum = None
        if args.refine:
            result, x0, e0 = refine_minimum(args.system, result, args.refine, system_class.energy_key,
                                            rounds=args.rounds, fixed=None, progress=progress, **options)
            minimum = {"name": args.refine, "value": x0, system_class.energy_key: e0}
    except ValueError as err:
        return fail(flag_for(str(err).splitlines()[0], system_class))
    finally:
        close()
        bar.close()
    warned = result.warned()
    if warned:  # one line, as `qmckit run` counts its warnings; the rows hold the texts
        first = warned[0]
        where = ", ".join(f"{k}={_cell(first['point'][k])}" for k in axes)
        print(f"warning: {len(warned)} of {len(result.rows)} points warned, e.g. at {where}: {first['warnings'][0]} "
              f"(each row's warnings: --json)", file=sys.stderr)
    if args.json:
        print(json.dumps(result.json() | ({"minimum": minimum} if minimum else {})))
        return 0
    print(format_table(result, system_class.energy_key))
    if minimum:
        print(f"minimum along {args.refine}: {minimum['value']:.6g} (parabola through the lowest points)")
    return 0


def format_table(result, energy_key: str) -> str:
    """The scan's rows: point values, the energy estimate with its error, acceptance."""
    from ..stats import format_value_error

    rows = result.rows
    names = list(rows[0]["point"]) if rows else []
    lines = ["  ".join(f"{n:>12s}" for n in names) + f"  {energy_key:>24s}  acceptance        seed"]
    for r in rows:
        e = r["estimates"][energy_key]
        lines.append("  ".join(f"{_cell(r['point'][n]):>12s}" for n in names)
                     + f"  {format_value_error(e['mean'], e['error']):>24s}  {r['acceptance']:10.3f}  {r['seed']:>10d}")
    return "\n".join(lines)


def _cell(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
