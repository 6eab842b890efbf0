"""Exercise checks that give physics feedback, not just pass or fail (issue 28).

    >>> from qmckit.teach import check_task
    >>> check_task("p1.a", local_energy=my_local_energy, drift=my_drift)   # FYS4411 project 1, task a
    >>> check_task("p1.e", blocking=my_blocking)                          # task e: blocking

Each check returns a :class:`Feedback`: the expected physics (an exact value or a reference with its error), what was
obtained, whether it passed, and, when it did not, the likely cause ("your E_L misses the ∇² ln ψ part of the kinetic
energy", "your error is the naive σ/√n: the samples are correlated, τ_int ≈ 9.5"). Tasks register themselves with
:func:`task`; ``docs/teaching.md`` says how to add one.
"""
from .feedback import TASKS, Feedback, check_task, task
from .notebook import start
from . import dmc_intro, p1_bosons, p2_quantum_dots  # noqa: F401  (they register their tasks)

__all__ = ["check_task", "Feedback", "TASKS", "task", "start"]
