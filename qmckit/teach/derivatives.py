"""A student's local energy and drift against finite differences of a known ln ψ_T (qmckit.check), as a task's
feedback."""
from __future__ import annotations

from .feedback import Feedback


def derivatives_feedback(task: str, expected: str, local_energy=None, drift=None, **system) -> Feedback:
    """The feedback of ``task`` on the student's ``local_energy(R, p)`` and/or ``drift(R, p)`` (∇ ln ψ_T of every
    particle, (N, d)): a :func:`qmckit.UserSystem` of ``system`` (n, dim, params, log_psi, potential, …) with them,
    checked by :func:`qmckit.check` at configurations from |ψ_T|²; the check's diagnoses become the likely cause."""
    from ..systems import UserSystem
    from ..systems.user_check import check

    if local_energy is None and drift is None:
        raise ValueError(f"{task}: give local_energy=, drift= or both")
    try:
        built = UserSystem(local_energy=local_energy, drift=drift, **system)
    except ValueError as err:  # numba cannot compile it, or a wrong shape: the message says which
        return Feedback(task, False, expected, "a function qmckit could not use", str(err))
    report = check(built)
    lines = [line for line in report.lines if not line.startswith("derived")]
    if report.ok:
        return Feedback(task, True, expected, "; ".join(line.strip() for line in lines))
    obtained, causes, subject = [], [], "it"
    for line in lines:  # a finding ("drift: …", "local energy: …") and, indented below it, its diagnoses
        text = line.strip()
        if line.startswith(" "):
            causes.append(f"your {subject} {text[3:]}" if text.startswith("it ") else text)
        else:
            subject = "drift" if text.startswith("drift") else "E_L"
            if "agrees" not in text:
                obtained.append(text)
    return Feedback(task, False, expected, "; ".join(obtained), "; ".join(causes) or "see the comparison above",
                    ["qmckit.check(system) prints the whole comparison"])
