"""Exercise checks (issue 28): each task's right answer passes, and each typical mistake of the catalogue gets its
own message, not just a fail."""
import numba as nb
import numpy as np
import pytest

from qmckit.stats import estimate
from qmckit.teach import TASKS, check_task


@nb.njit
def local_energy(R, p):
    a = p[0]
    return R.shape[0] * R.shape[1] * a + (0.5 - 2.0 * a * a) * np.sum(R * R)


def drift(R, p):
    return -2.0 * p[0] * R


@nb.njit
def forgot_laplacian(R, p):  # only the |∇ ln ψ|² part and the trap
    a = p[0]
    return (0.5 - 2.0 * a * a) * np.sum(R * R)


@nb.njit
def forgot_gradient_squared(R, p):
    a = p[0]
    return R.shape[0] * R.shape[1] * a + 0.5 * np.sum(R * R)


def quantum_force(R, p):
    return -4.0 * p[0] * R


def plain_python_helper(R):
    return np.sum(R * R)


def uses_a_plain_helper(R, p):
    return R.shape[0] * R.shape[1] * p[0] + (0.5 - 2.0 * p[0] ** 2) * plain_python_helper(R)


def test_the_right_local_energy_and_drift_pass_task_a():
    feedback = check_task("p1.a", local_energy=local_energy, drift=drift)
    assert feedback.passed and "agrees" in feedback.obtained and not feedback.cause


@pytest.mark.parametrize("answer, words", [
    (dict(local_energy=forgot_laplacian), "your E_L misses the ∇² ln ψ part of the kinetic energy"),
    (dict(local_energy=forgot_gradient_squared), "your E_L misses the |∇ ln ψ|² part of the kinetic energy"),
    (dict(drift=quantum_force), "your drift is twice ∇ ln ψ: you gave the quantum force"),
    (dict(local_energy=uses_a_plain_helper), "must be decorated with @numba.njit"),
])
def test_typical_mistakes_in_task_a_get_their_own_message(answer, words):
    feedback = check_task("p1.a", **answer)
    assert not feedback.passed and words in feedback.cause, feedback.text


def test_the_constant_is_named_as_n_d_alpha():
    feedback = check_task("p1.a", local_energy=forgot_laplacian, n=4, dim=2, alpha=0.3)
    assert "−N·d·alpha" in feedback.cause and "-2.4" in feedback.cause  # N·d·α = 4·2·0.3


def test_reblocking_passes_task_e():
    feedback = check_task("p1.e", blocking=lambda x: estimate(x).error)
    assert feedback.passed, feedback.text


@pytest.mark.parametrize("answer, words", [
    (lambda x: x.std(ddof=1) / np.sqrt(x.size), "your error is the naive σ/√n"),
    (lambda x: x.std(ddof=1), "the spread σ of the samples, not the error of their mean"),
    (lambda x: 19 * x.var() / x.size, "it looks like a variance"),
    (lambda x: x.reshape(-1, 2).mean(axis=1).std(ddof=1) / np.sqrt(x.size / 2), "still correlated"),
    (lambda x: 1 / 0, "raised ZeroDivisionError"),
])
def test_typical_mistakes_in_task_e_get_their_own_message(answer, words):
    feedback = check_task("p1.e", blocking=answer)
    assert not feedback.passed and words in feedback.text, feedback.text


def test_an_unknown_task_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="task must be one of p1.a, p1.e"):
        check_task("p9.z")
    assert {"p1.a", "p1.e"} <= set(TASKS)
