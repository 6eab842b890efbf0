"""``qmckit optimize SYSTEM``: the command line of :func:`qmckit.methods.optimizers.optimize`.

    qmckit optimize atom --element He --alpha 1.6 --beta 0.1 --params alpha,beta
    qmckit optimize bec --n 10 --a 0 --alpha 0.3 --params alpha --method sr --json

Every parameter flag of ``qmckit run SYSTEM`` sets the starting point (or fixes a parameter that is not freed);
``--params`` names the variational parameters to free (default: all of them). It prints one line per step and the
best parameters with their correlated-sampling energy, and writes the history plot (``--plot``). ``--workers K``
samples on a local Dask cluster of K workers, ``--scheduler ADDRESS`` on a running one (default: this process).
"""
from __future__ import annotations

import json
import sys

from .optimizers import METHODS


def add_parser(commands, parser_class, add_system_parameters, add_verbose) -> None:
    """The ``optimize`` command with one subcommand per registered continuum system."""
    from ..systems import SYSTEMS

    optimize = commands.add_parser("optimize", help="optimise a system's variational parameters",
                                   description="Optimise the variational parameters of a system's trial function "
                                               "(linear method, SR, Adam or gradient descent).")
    systems = optimize.add_subparsers(dest="system", metavar="SYSTEM", parser_class=parser_class)
    systems.required = True
    for name, system_class in SYSTEMS.items():
        if system_class.kind != "continuum":
            continue
        sub = systems.add_parser(name, help=system_class.title, description=system_class.description)
        add_verbose(sub)
        add_system_parameters(sub, system_class)
        sub.add_argument("--params", default=None, metavar="NAME,NAME",
                         help="the variational parameters to free (default: all)")
        sub.add_argument("--method", choices=METHODS, default="linear", help="the optimiser (default linear)")
        sub.add_argument("--target", default="energy", metavar="energy|variance|W",
                         help="minimise the energy, the variance of E_L, or (1 − W)E + Wσ² (default energy)")
        sub.add_argument("--steps", type=int, default=12, help="at most this many steps (default 12)")
        sub.add_argument("--walkers", type=int, default=100, help="walkers per step (default 100)")
        sub.add_argument("--samples", type=int, default=100,
                         help="samples per walker and step; doubles when noise dominates (default 100)")
        sub.add_argument("--learning-rate", dest="learning_rate", type=float, default=0.01,
                         help="η of --method adam or gd (default 0.01)")
        sub.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        sub.add_argument("--plot", default=None, metavar="FILE",
                         help="the history plot (default optimize_SYSTEM.png; 'none': no plot)")
        sub.add_argument("--json", action="store_true",
                         help="print one JSON object: params, estimates, history")
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--workers", type=int, default=None, help="sample on a local Dask cluster of N workers")
        where.add_argument("--scheduler", metavar="ADDRESS", default=None, help="sample on a running Dask scheduler")


def run(args, fail, given_parameters) -> int:
    """Optimise, print the steps (or ``--json``), write the plot."""
    from ..systems import SYSTEMS, make_system
    from .optimizers import optimize

    system_class = SYSTEMS[args.system]
    for flag, value, low in (("--steps", args.steps, 1), ("--walkers", args.walkers, 2),
                             ("--samples", args.samples, 1)):
        if value < low:
            return fail(f"{flag} must be an integer ≥ {low}, got {value}")
    try:
        system = make_system(args.system, **given_parameters(args, system_class))
    except ValueError as err:
        return fail(str(err).splitlines()[0])
    executor, close = None, (lambda: None)
    if args.workers is not None or args.scheduler:
        if args.workers is not None and args.workers < 1:
            return fail(f"--workers must be ≥ 1, got {args.workers}")
        try:
            from ..scans.execute import start_executor

            if args.scheduler:
                from distributed import Client

                executor = Client(args.scheduler)
                close = executor.close
            else:
                executor, close = start_executor(None, args.workers)
        except (ImportError, ValueError, OSError, TimeoutError) as err:
            return fail(f"{'--scheduler' if args.scheduler else '--workers'}: {str(err).splitlines()[0]}")
    unit = system.energy_unit

    def show(step):
        if not args.json:
            print(format_step(step, unit), flush=True)

    try:
        result = optimize(system, args.params, method=args.method, target=args.target, steps=args.steps,
                          n_walkers=args.walkers, n_samples=args.samples, learning_rate=args.learning_rate,
                          seed=args.seed, client=executor, progress=show)
    except ValueError as err:
        return fail(str(err).splitlines()[0])
    except KeyboardInterrupt:
        print("qmckit: interrupted", file=sys.stderr)
        return 130
    finally:
        close()
    plot = args.plot or f"optimize_{args.system}.png"
    if plot != "none":
        write_plot(result, plot, unit)
    if args.json:
        print(json.dumps(result.as_dict()))
        return 0
    e, v = result.estimates["energy"], result.estimates["energy_variance"]
    from ..stats import format_value_error

    values = ", ".join(f"{k} = {x:.6g}" for k, x in result.params.items())
    ended = {"steps": "all", "converged": "converged (steps below their noise) after"}[result.stopped]
    print(f"best: {values}: energy {format_value_error(e.mean, e.error)} {unit}, variance "
          f"{format_value_error(v['mean'], v['error'])} (correlated sampling; {ended} {len(result.history)} steps, "
          f"{result.wall_s:.1f} s)")
    if plot != "none":
        print(f"history plot: {plot}")
    return 0


def format_step(step, unit: str) -> str:
    """One line of the per-step table."""
    from ..stats import format_value_error

    values = " ".join(f"{k}={x:.5g}" for k, x in step.params.items())
    state = "" if step.accepted else "  refused"
    return (f"step {step.step:3d}  {values}  E = {format_value_error(step.energy.mean, step.energy.error)} {unit}  "
            f"σ² = {format_value_error(step.variance, step.variance_error)}  |g| = {step.gradient_norm:.3g}  "
            f"samples {step.samples}{state}")


def write_plot(result, path: str, unit: str) -> None:
    """Energy (with errors) and every parameter against the step, one panel each."""
    from matplotlib.figure import Figure  # no pyplot: the caller's backend (a notebook's) stays as it is
    from matplotlib.ticker import MaxNLocator

    steps = [s.step for s in result.history]
    fig = Figure(figsize=(6, 2 + 1.6 * len(result.names)), layout="constrained")
    axes = fig.subplots(1 + len(result.names), 1, sharex=True, squeeze=False)[:, 0]
    axes[0].errorbar(steps, [s.energy.mean for s in result.history], [s.energy.error for s in result.history],
                     fmt="o-")
    best = result.estimates["energy"]
    axes[0].axhspan(best.mean - best.error, best.mean + best.error, color="C1", alpha=0.3, label="best")
    axes[0].set_ylabel(f"E ({unit})" if unit else "E")
    axes[0].legend()
    for ax, name in zip(axes[1:], result.names):
        ax.plot(steps, [s.params[name] for s in result.history], "o-")
        ax.axhline(result.params[name], color="C1")
        ax.set_ylabel(name)
    axes[-1].set_xlabel("step")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(f"{result.system}: {result.method}, target {result.target}")
    fig.savefig(path, dpi=100)
