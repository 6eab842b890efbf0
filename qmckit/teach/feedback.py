"""The feedback of an exercise check and the registry of tasks."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

TASKS: dict = {}


@dataclass
class Feedback:
    """What a check found. ``passed``; ``expected`` and ``obtained`` (text, with units and error bars); ``cause``: the
    likely reason when it did not pass (empty when it did); ``details``: further lines."""

    task: str
    passed: bool
    expected: str
    obtained: str
    cause: str = ""
    details: list = field(default_factory=list)

    @property
    def text(self) -> str:
        lines = [f"{self.task}: {'passed' if self.passed else 'not yet'}", f"  expected: {self.expected}",
                 f"  obtained: {self.obtained}"]
        if self.cause:
            lines.append(f"  likely cause: {self.cause}")
        lines += [f"  {line}" for line in self.details]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#b35900"
        return (f"<div style='border-left: 4px solid {colour}; padding-left: 8px'><pre style='margin: 0; white-space: "
                f"pre-wrap; word-break: normal; overflow-wrap: break-word'>"
                f"{html.escape(self.text)}</pre></div>")


class Unusable(Exception):
    """A student's function raised, or returned something a check cannot use: ``feedback`` says how."""

    def __init__(self, feedback: Feedback):
        super().__init__(feedback.text)
        self.feedback = feedback


def attempt(name: str, expected: str, what: str, compute):
    """``compute()``: the call of a student's function (``what``, as the student would write it) with the conversion
    of its result. If that raises, the check of task ``name`` stops with a Feedback saying how."""
    try:
        return compute()
    except Exception as err:
        raise Unusable(Feedback(name, False, expected, f"{what} raised {type(err).__name__}: {err}")) from None


def task(name: str):
    """Register the decorated function as the check of task ``name`` (e.g. "p1.a")."""
    def register(check):
        TASKS[name] = check
        return check
    return register


def check_task(name: str, *args, **kwargs) -> Feedback:
    """Run the check of task ``name`` on the student's answer (its arguments: see the task's docstring)."""
    from . import notebook

    if name not in TASKS:
        raise ValueError(f"task must be one of {', '.join(sorted(TASKS))}, got {name!r}")
    try:
        feedback = TASKS[name](*args, **kwargs)
    except Unusable as unusable:
        feedback = unusable.feedback
    if notebook.solutions_in and not feedback.passed:  # a teacher's solution must pass its check
        raise AssertionError(f"the solution of {name} does not pass its check:\n{feedback.text}")
    return feedback
