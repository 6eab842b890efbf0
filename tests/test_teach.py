"""Exercise checks (issue 28): each task's right answer passes, and each typical mistake of the catalogue gets its
own message, not just a fail."""
from pathlib import Path

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
    with pytest.raises(ValueError, match="task must be one of dmc.a, dmc.b, dmc.c, p1.a, "):
        check_task("p9.z")
    assert {f"p1.{x}" for x in "abcdefgh"} <= set(TASKS)


# the exercise notebooks: every task cell has the teacher's solution, which nbval runs in its place (conftest.py sets
# QMCKIT_EXERCISE_SOLUTIONS=1; qmckit.teach.start), and every check passes on it there
EXERCISES = Path(__file__).resolve().parents[1] / "notebooks" / "exercises"


@pytest.mark.parametrize("exercise", ["p1_bosons", "p2_quantum_dots", "dmc_intro"])
def test_every_task_cell_of_an_exercise_has_a_solution_and_a_check(exercise):
    import nbformat

    from qmckit.teach.notebook import read_solutions

    cells = nbformat.read(EXERCISES / f"{exercise}.ipynb", as_version=4).cells
    tasks = [c.source.splitlines()[0].split()[2] for c in cells
             if c.cell_type == "code" and c.source.startswith("# task ")]
    solutions = read_solutions(EXERCISES / "solutions" / f"{exercise}.py")
    assert tasks and sorted(tasks) == sorted(solutions)
    checked = {name for c in cells for name in tasks if f'check_task("{name}"' in c.source}
    assert checked == set(tasks) and checked <= set(TASKS)


def _solutions(exercise: str) -> dict:
    """The solution functions of ``exercise``, defined as the notebook defines them."""
    from qmckit.teach.notebook import read_solutions

    namespace = {"np": np}
    for source in read_solutions(EXERCISES / "solutions" / f"{exercise}.py").values():
        exec(source, namespace)
    return namespace


def _metropolis(alpha, n, dim, steps, seed=0, step=1.0, squared=True, record_rejected=True):
    """A brute-force walk with two typical mistakes to switch on: |ψ| sampled for |ψ|², energies of accepted moves
    only."""
    rng = np.random.default_rng(seed)
    R = rng.normal(size=(n, dim)) * 0.5
    log_psi, energies, accepted = -alpha * np.sum(R * R), [], 0
    for _ in range(steps):
        trial = R + step * (rng.random((n, dim)) - 0.5)
        log_trial = -alpha * np.sum(trial * trial)
        if rng.random() < np.exp((2 if squared else 1) * (log_trial - log_psi)):
            R, log_psi, accepted = trial, log_trial, accepted + 1
            if not record_rejected:
                energies.append(local_energy(R, np.array([alpha])))
        if record_rejected:
            energies.append(local_energy(R, np.array([alpha])))
    return np.array(energies), accepted / steps


def _importance(alpha, n, dim, steps, seed=0, dt=0.05, green=1):
    """A Langevin walk whose Green's-function ratio is right (green=1), missing (0) or inverted (−1)."""
    rng = np.random.default_rng(seed)
    R = rng.normal(size=(n, dim)) * 0.5
    log_psi, force, energies, accepted = -alpha * np.sum(R * R), -4 * alpha * R, np.empty(steps), 0
    for k in range(steps):
        trial = R + 0.5 * force * dt + np.sqrt(dt) * rng.normal(size=(n, dim))
        log_trial, force_trial = -alpha * np.sum(trial * trial), -4 * alpha * trial
        forward = np.sum((trial - R - 0.5 * dt * force) ** 2)
        backward = np.sum((R - trial - 0.5 * dt * force_trial) ** 2)
        if rng.random() < np.exp(2 * (log_trial - log_psi) + green * (forward - backward) / (2 * dt)):
            R, log_psi, force, accepted = trial, log_trial, force_trial, accepted + 1
        energies[k] = local_energy(R, np.array([alpha]))
    return energies, accepted / steps


SOLUTIONS = _solutions("p1_bosons")


def test_the_solutions_pass_tasks_b_to_h():
    solutions = SOLUTIONS
    for name, answer in (("p1.b", dict(metropolis=solutions["metropolis"])),
                         ("p1.c", dict(importance=solutions["importance"])),
                         ("p1.d", dict(energy_gradient=solutions["energy_gradient"])),
                         ("p1.f", dict(merge=solutions["merge"])),
                         ("p1.g", dict(log_psi=solutions["log_psi_interacting"],
                                       potential=solutions["potential_interacting"])),
                         ("p1.h", dict(radial_density=solutions["radial_density"]))):
        feedback = check_task(name, **answer)
        assert feedback.passed and not feedback.cause, feedback.text


@pytest.mark.parametrize("name, answer, words", [
    ("p1.b", dict(metropolis=lambda *a, **k: _metropolis(*a, **k, squared=False)), "sample |ψ_T|, not |ψ_T|²"),
    ("p1.b", dict(metropolis=lambda *a, **k: _metropolis(*a, **k, record_rejected=False)),
     "you record E_L only when a move is accepted"),
    ("p1.b", dict(metropolis=lambda a, n, d, s, seed=0, step=1.0: _metropolis(a, n, d, s, seed, step=40.0)),
     "the acceptance is 0.000"),
    ("p1.c", dict(importance=lambda *a, **k: _importance(*a, **k, green=0)), "Green's-function ratio"),
    ("p1.c", dict(importance=lambda *a, **k: _importance(*a, **k, green=-1)), "Green's-function ratio"),
    ("p1.d", dict(energy_gradient=lambda e, d: np.mean(e * d) - np.mean(e) * np.mean(d)), "half the gradient"),
    ("p1.d", dict(energy_gradient=lambda e, d: 2 * (np.mean(e) * np.mean(d) - np.mean(e * d))), "sign is reversed"),
    ("p1.d", dict(energy_gradient=lambda e, d: 2 * np.mean(e * d)), "forgot to subtract ⟨E_L⟩⟨∂lnψ⟩"),
])
def test_typical_mistakes_in_tasks_b_c_and_d_get_their_own_message(name, answer, words):
    feedback = check_task(name, **answer)
    assert not feedback.passed and words in feedback.cause, feedback.text


def _psi(R, p):
    return SOLUTIONS["log_psi_interacting"](R, p)


def _trap(R, p):
    return SOLUTIONS["potential_interacting"](R, p)


def _density(positions, bins, r_max):
    return SOLUTIONS["radial_density"](positions, bins, r_max)


def _histogram_of_r(positions, bins, r_max):  # counts per configuration and Δr: no shell volumes
    counts, edges = np.histogram(np.sqrt(np.sum(positions ** 2, axis=-1)).ravel(), bins, (0.0, r_max))
    return 0.5 * (edges[1:] + edges[:-1]), counts / (positions.shape[0] * r_max / bins)


@pytest.mark.parametrize("name, answer, words", [
    ("p1.f", dict(merge=lambda m, e, n: (np.mean(m), np.mean(e))), "weight each by its samples"),
    ("p1.f", dict(merge=lambda m, e, n: (np.dot(n, m) / n.sum(), np.mean(e))), "add in quadrature"),
    ("p1.f", dict(merge=lambda m, e, n: (np.dot(n, m) / n.sum(), np.sqrt(np.sum(e ** 2)))),
     "the error of a sum of the means"),
    ("p1.g", dict(log_psi=lambda R, p: -p[0] * np.sum(R * R * np.array([1, 1, p[1]])), potential=_trap),
     "misses the Jastrow factor"),
    ("p1.g", dict(log_psi=lambda R, p: _psi(R, p) + p[0] * (p[1] - 1) * np.sum(R[:, 2] ** 2), potential=_trap),
     "lacks β on z²"),
    ("p1.g", dict(log_psi=lambda R, p: 2 * _psi(R, p), potential=_trap), "that is ln |ψ_T|²"),
    ("p1.g", dict(log_psi=_psi, potential=lambda R, p: 0.5 * (np.sum(R[:, :2] ** 2) + p[1] * np.sum(R[:, 2] ** 2))),
     "has β on z² where it has β²"),
    ("p1.g", dict(log_psi=_psi, potential=lambda R, p: 2 * _trap(R, p)), "lacks the ½ of the trap"),
    ("p1.g.run", dict(yours={"mean": 2.42, "error": 0.005}, built_in={"mean": 2.42, "error": 0.005}),
     "your energy is per particle already"),
    ("p1.g.run", dict(yours={"mean": 25.0, "error": 0.05}, built_in={"mean": 2.42, "error": 0.005}),
     "σ apart although ln ψ_T and V agree"),
    ("p1.h", dict(radial_density=_histogram_of_r), "divide each bin by its volume"),
    ("p1.h", dict(radial_density=lambda x, b, r: (_density(x, b, r)[0], _density(x, b, r)[1] / x.shape[1])),
     "normalised to one particle"),
    ("p1.h", dict(radial_density=lambda x, b, r: (np.linspace(0, r, b + 1)[:-1], _density(x, b, r)[1])),
     "the r of a bin is its centre"),
])
def test_typical_mistakes_in_tasks_f_g_and_h_get_their_own_message(name, answer, words):
    feedback = check_task(name, **answer)
    assert not feedback.passed and words in feedback.cause, feedback.text


def test_equal_energies_of_the_two_interacting_systems_pass_the_run_check_of_task_g():
    feedback = check_task("p1.g.run", yours={"mean": 24.23, "error": 0.05}, built_in={"mean": 2.42, "error": 0.005})
    assert feedback.passed and "+0.4σ" in feedback.obtained, feedback.text


DMC = _solutions("dmc_intro")


def test_the_solutions_pass_the_dmc_checks():
    for name, answer in (("dmc.a", dict(branching_weight=DMC["branching_weight"])),
                         ("dmc.b", dict(energy={"mean": 0.5031, "error": 0.0031})),
                         ("dmc.c", dict(extrapolate=DMC["extrapolate"]))):
        feedback = check_task(name, **answer)
        assert feedback.passed and not feedback.cause, feedback.text


@pytest.mark.parametrize("name, answer, words", [
    ("dmc.a", dict(branching_weight=lambda e0, e1, et, dt: np.exp(dt * (0.5 * (e0 + e1) - et))), "sign is reversed"),
    ("dmc.a", dict(branching_weight=lambda e0, e1, et, dt: np.exp(-dt * (e1 - et))), "first order in Δτ"),
    ("dmc.a", dict(branching_weight=lambda e0, e1, et, dt: np.exp(-dt * 0.5 * (e0 + e1))), "E_T is missing"),
    ("dmc.b", dict(energy={"mean": 0.5668, "error": 0.002}), "that is the VMC energy"),
    ("dmc.b", dict(energy={"mean": 0.53, "error": 0.002}), "still relaxing"),
    ("dmc.b", dict(energy={"mean": 0.48, "error": 0.002}), "below the ground state"),
    ("dmc.b", dict(energy={"mean": 0.52, "error": 0.02}), "cannot tell DMC from VMC"),
    ("dmc.c", dict(extrapolate=lambda x, y, s: (np.polyfit(x, y, 1)[1], 0.001)), "an unweighted fit"),
    ("dmc.c", dict(extrapolate=lambda x, y, s: (y[np.argmin(x)], s[np.argmin(x)])), "smallest time step's energy"),
    ("dmc.c", dict(extrapolate=lambda x, y, s: (DMC["extrapolate"](x, y, s)[0], s.min())), "the intercept is right"),
])
def test_typical_mistakes_in_the_dmc_tasks_get_their_own_message(name, answer, words):
    feedback = check_task(name, **answer)
    assert not feedback.passed and words in feedback.cause, feedback.text


DOTS = _solutions("p2_quantum_dots")


@nb.njit
def dot_without_coulomb(R, p):
    alpha, beta, omega = p[0], p[1], p[2]
    d = R[0] - R[1]
    r12 = np.sqrt(np.sum(d * d))
    u, u2 = 1 / (1 + beta * r12) ** 2, -2 * beta / (1 + beta * r12) ** 3
    g1, g2 = -alpha * omega * R[0] + u * d / r12, -alpha * omega * R[1] - u * d / r12
    laplacian = -4 * alpha * omega + 2 * (u2 + u / r12)
    return -0.5 * (laplacian + np.sum(g1 * g1) + np.sum(g2 * g2)) + 0.5 * omega ** 2 * np.sum(R * R)


@nb.njit
def free_without_laplacian(R, p):
    return 0.5 * p[1] ** 2 * (1 - p[0] ** 2) * np.sum(R * R)


def test_the_solutions_pass_project_2():
    for name, answer in (("p2.a", dict(local_energy=DOTS["free_local_energy"])),
                         ("p2.b", dict(local_energy=DOTS["dot_local_energy"])),
                         ("p2.c", dict(energy={"mean": 3.0009, "error": 0.0002})),
                         ("p2.d", dict(r12=DOTS["r12"], virial=DOTS["virial"])),
                         ("p2.e", dict(density=DOTS["density"]))):
        feedback = check_task(name, **answer)
        assert feedback.passed and not feedback.cause, feedback.text


@pytest.mark.parametrize("name, answer, words", [
    ("p2.a", dict(local_energy=free_without_laplacian), "misses the ∇² ln ψ part of the kinetic energy"),
    ("p2.b", dict(local_energy=dot_without_coulomb), "coulomb"),
    ("p2.c", dict(energy={"mean": 3.1690, "error": 0.001}), "no better than the Gaussian alone"),
    ("p2.c", dict(energy={"mean": 2.95, "error": 0.001}), "below the exact ground state"),
    ("p2.c", dict(energy={"mean": 3.03, "error": 0.001}), "not at their best"),
    ("p2.d", dict(r12=lambda R, p: np.sum((R[0] - R[1]) ** 2), virial=DOTS["virial"]), "the squared distance"),
    ("p2.d", dict(r12=lambda R, p: np.sqrt(np.sum(R[0] ** 2)) - np.sqrt(np.sum(R[1] ** 2)), virial=DOTS["virial"]),
     "the difference of the distances from the centre"),
    ("p2.d", dict(r12=DOTS["r12"], virial=lambda t, trap, coulomb: 2 * t - 2 * trap - coulomb),
     "the Coulomb term has the wrong sign"),
    ("p2.d", dict(r12=DOTS["r12"], virial=lambda t, trap, coulomb: 2 * t - 2 * trap), "the Coulomb term is missing"),
    ("p2.d", dict(r12=DOTS["r12"], virial=lambda t, trap, coulomb: 2 * t - trap - coulomb),
     "weighs each term by its degree"),
    ("p2.d", dict(r12=DOTS["r12"], virial=lambda t, trap, coulomb: t - trap - coulomb), "holds for the trap alone"),
    ("p2.d", dict(r12=DOTS["r12"], virial=lambda t, trap, coulomb: t - 2 * trap + coulomb),
     "the kinetic energy enters twice"),
    ("p2.e", dict(density=lambda rho, w: 2 * w / np.pi * np.exp(-w * rho ** 2)), "normalised to both electrons"),
    ("p2.e", dict(density=lambda rho, w: w / np.pi * np.exp(-w * rho ** 2 / 2)), "that of ψ: the density is |ψ|²"),
    ("p2.e", dict(density=lambda rho, w: w * np.exp(-w * rho ** 2)), "the 1/π is missing"),
    ("p2.e", dict(density=lambda rho, w: (w / np.pi) ** 1.5 * np.exp(-w * rho ** 2)), "three-dimensional"),
])
def test_typical_mistakes_in_project_2_get_their_own_message(name, answer, words):
    feedback = check_task(name, **answer)
    assert not feedback.passed and words in feedback.cause, feedback.text


def test_taut_closed_forms_satisfy_the_energy_and_the_virial_theorem():
    """⟨T⟩ + ⟨V_trap⟩ + ⟨V_ee⟩ = 3 and 2⟨T⟩ = 2⟨V_trap⟩ − ⟨V_ee⟩ for Taut's exact state: the closed forms p2.d and
    the notebook quote are consistent (⟨V_trap⟩ is fixed independently of ⟨T⟩ by ⟨r₁₂²⟩)."""
    from qmckit.teach.p2_quantum_dots import TAUT

    assert TAUT["kinetic"] + TAUT["trap"] + TAUT["coulomb"] == pytest.approx(3.0)
    assert 2 * TAUT["kinetic"] == pytest.approx(2 * TAUT["trap"] - TAUT["coulomb"], abs=1e-12)
    assert TAUT["r12"] == pytest.approx(1.6368013, abs=1e-7) and TAUT["trap"] == pytest.approx(1.2953998, abs=1e-7)
