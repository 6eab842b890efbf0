"""Bring your own ψ (issue 28): a system written as plain Python functions runs VMC and DMC through
qmckit.UserSystem, exact where the physics is, and qmckit.check names the typical slips in a local energy or drift."""
import math
import warnings

import numba as nb
import numpy as np
import pytest

import qmckit
from qmckit.runs import RunConfig, make_run

N, D = 2, 3  # two particles in a 3D isotropic harmonic trap, ħ = m = ω = 1: E(α) = N·D·(α/2 + 1/(8α)), exact 3 at ½


def log_psi(R, p):
    return -p[0] * np.sum(R * R)


def trap(R, p):
    return 0.5 * np.sum(R * R)


@nb.njit  # a function the user compiled already is taken as it is (the catalogue below calls this one)
def local_energy(R, p):
    a = p[0]
    return R.shape[0] * R.shape[1] * a + (0.5 - 2.0 * a * a) * np.sum(R * R)


def drift(R, p):
    return -2.0 * p[0] * R


def closed_form(alpha):
    return N * D * (alpha / 2 + 1 / (8 * alpha))


@pytest.fixture(scope="module")
def oscillators():
    """The oscillator twice: with the drift and local energy by finite differences, and with the analytic ones (each
    class compiles its sweeps once, in this process)."""
    return {label: qmckit.UserSystem(n=N, dim=D, params={"alpha": 0.5}, log_psi=log_psi, potential=trap,
                                     name=f"oscillator_{label}", bounds={"alpha": (0, None)}, **given)
            for label, given in (("fd", {}), ("analytic", {"local_energy": local_energy, "drift": drift}))}


@pytest.fixture(params=["fd", "analytic"])
def oscillator(request, oscillators):
    return oscillators[request.param]


def run(system, **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_run(RunConfig(system=system, **settings)).run()


def test_vmc_is_exact_with_zero_variance_at_the_exact_alpha_and_on_the_closed_form_elsewhere(oscillator):
    exact = run(oscillator, params={"alpha": 0.5}, walkers=50, steps=200, seed=1)
    assert exact["system"] == type(oscillator).name and exact["params"] == {"alpha": 0.5}
    # finite differences of ln ψ are good to about 1e-8 relative: far below any statistical error
    assert abs(exact["estimates"]["energy"]["mean"] - 3.0) < 1e-7
    assert exact["estimates"]["energy_variance"]["mean"] < 1e-12
    away = run(oscillator, params={"alpha": 0.4}, walkers=100, steps=1000, seed=2)["estimates"]["energy"]
    assert abs(away["mean"] - closed_form(0.4)) < 3 * away["error"]


def test_dmc_of_a_user_system_reaches_the_exact_energy_not_the_vmc_one(oscillator):
    result = run(oscillator, params={"alpha": 0.4}, method="dmc", dt=0.01, walkers=400, steps=3000, seed=3)
    energy = result["estimates"]["energy"]
    assert abs(energy["mean"] - 3.0) < 3 * energy["error"] < 0.2 * (closed_form(0.4) - 3.0)


def test_finite_differences_and_analytic_kernels_take_the_same_steps(oscillators):
    """The same walkers and streams through both: the same moves (the drifts agree to ~1e-9)."""
    a, b = (run(oscillators[k], params={"alpha": 0.45}, walkers=20, steps=50, seed=4)["estimates"]["energy"]["mean"]
            for k in ("fd", "analytic"))
    assert abs(a - b) < 1e-6


@nb.njit
def pair(R, p):
    total = 0.0
    for i in range(R.shape[0]):
        for j in range(i + 1, R.shape[0]):
            total += p[1] / np.sqrt(np.sum((R[i] - R[j]) ** 2))
    return total


@nb.njit
def right(R, p):
    return local_energy(R, p) + pair(R, p)


@nb.njit
def forgot_interaction(R, p):
    return local_energy(R, p)


@nb.njit
def laplacian_sign(R, p):
    return local_energy(R, p) - 2 * R.shape[0] * R.shape[1] * p[0] + pair(R, p)


@nb.njit
def forgot_gradient_squared(R, p):
    return local_energy(R, p) + 2 * p[0] ** 2 * np.sum(R * R) + pair(R, p)


@nb.njit
def quantum_force(R, p):
    return -4.0 * p[0] * R


@nb.njit
def wrong_sign_drift(R, p):
    return 2.0 * p[0] * R


# the typical slips and the words their diagnosis must contain
CATALOGUE = [
    (dict(local_energy=forgot_interaction), "misses the 'interaction' term of the potential"),
    (dict(local_energy=laplacian_sign), "wrong sign of the ∇² ln ψ part of the kinetic energy"),
    (dict(local_energy=forgot_gradient_squared), "misses the |∇ ln ψ|² part of the kinetic energy"),
    (dict(drift=quantum_force), "you gave the quantum force F = 2∇ψ/ψ"),
    (dict(drift=wrong_sign_drift), "the sign is wrong"),
]


def interacting(**given):
    return qmckit.UserSystem(n=3, dim=3, params={"alpha": 0.4, "g": 0.3}, log_psi=log_psi,
                             potential={"trap": trap, "interaction": pair}, name="interacting", **given)


def test_check_passes_a_right_local_energy_and_drift():
    report = qmckit.check(interacting(local_energy=right, drift=drift))
    assert report.ok and "local energy: agrees" in report.text and "drift: agrees" in report.text


@pytest.mark.parametrize("given, words", CATALOGUE, ids=[w[:24] for _, w in CATALOGUE])
def test_check_names_the_slip(given, words):
    report = qmckit.check(interacting(**given))
    assert not report.ok and words in report.text, report.text
    worst = report.worst["drift" if "drift" in given else "local_energy"]
    assert worst["relative_error"] > 1e-3 and 0 <= worst["configuration"] < 40


def test_bad_definitions_are_refused_in_one_line():
    def helper(R):
        return np.sum(R * R)

    with pytest.raises(ValueError, match="^log_psi: numba cannot compile it .*helper"):
        qmckit.UserSystem(n=2, dim=3, params={"a": 0.5}, log_psi=lambda R, p: -p[0] * helper(R), potential=trap)
    with pytest.raises(ValueError, match=r"^drift: must return an array of shape \(N, d\) = \(2, 3\)"):
        qmckit.UserSystem(n=2, dim=3, params={"a": 0.5}, log_psi=log_psi, potential=trap,
                          drift=lambda R, p: R[0])
    with pytest.raises(ValueError, match="^system: 'bec' is a built-in system's name"):
        RunConfig(system=qmckit.UserSystem(n=2, dim=3, params={"a": 0.5}, log_psi=log_psi, potential=trap,
                                           name="bec"))
    system = qmckit.UserSystem(n=2, dim=3, params={"a": 0.5}, log_psi=log_psi, potential=trap, name="bounded",
                               bounds={"a": (0, 2)})
    with pytest.raises(ValueError, match="a must be"):
        RunConfig(system=system, params={"a": 3.0})
    assert math.isclose(RunConfig(system=system, params={"a": 1.5}).params["a"], 1.5)


def test_a_user_system_scans_here_and_on_dask_workers_which_get_it_once(oscillators):
    from concurrent.futures import ProcessPoolExecutor

    distributed = pytest.importorskip("distributed")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = qmckit.scan(oscillators["analytic"], {"alpha": [0.4, 0.5]}, dict(walkers=50, steps=400), seed=3)
    energy = {r["point"]["alpha"]: r["estimates"]["energy"] for r in result.rows}
    assert abs(energy[0.5]["mean"] - 3.0) < 1e-12
    assert abs(energy[0.4]["mean"] - closed_form(0.4)) < 3 * energy[0.4]["error"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        parallel = qmckit.scan(oscillators["analytic"], {"alpha": [0.4, 0.5]}, dict(walkers=50, steps=400), seed=3,
                               client=client)
        plugins = client.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert [r["estimates"] for r in parallel.rows] == [r["estimates"] for r in result.rows]  # bit for bit
    for names in plugins.values():  # the system went to each worker once, as a plugin, not with every task
        assert sum(name.startswith("qmckit-system-oscillator_analytic-") for name in names) == 1
    with ProcessPoolExecutor(1) as pool, pytest.raises(ValueError, match="^client: the qmckit.UserSystem"):
        qmckit.scan(oscillators["analytic"], {"alpha": [0.4]}, client=pool)


MODULE = '''
import numpy as np
import qmckit

oscillator = qmckit.UserSystem(n=2, dim=3, params={"alpha": 0.5}, log_psi=lambda R, p: -p[0] * np.sum(R * R),
                               potential=lambda R, p: 0.5 * np.sum(R * R), name="cli_oscillator",
                               bounds={"alpha": (0, None)})
'''


def test_the_cli_runs_a_user_system_named_by_module_and_attribute(tmp_path, capsys):
    import json
    import subprocess
    import sys

    from qmckit.cli import main

    (tmp_path / "student.py").write_text(MODULE)
    out = subprocess.run([sys.executable, "-m", "qmckit", "run", "--system", "student:oscillator", "--alpha", "0.5",
                          "--walkers", "20", "--steps", "50", "--json"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["system"] == "cli_oscillator" and abs(result["estimates"]["energy"]["mean"] - 3.0) < 1e-7
    for spec, words in ((f"{tmp_path / 'student.py'}:nothing", "is not a qmckit System"),
                        ("no_such_module:oscillator", "cannot import 'no_such_module'"), ("oscillator", "MODULE:NAME")):
        assert main(["run", "--system", spec, "--alpha", "0.5"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def test_the_optimiser_finds_the_exact_alpha_of_a_user_system(oscillators):
    from qmckit.methods.optimize import optimize_parameter

    start = type(oscillators["analytic"])(alpha=0.4)  # an instance never given to RunConfig: not registered
    result = optimize_parameter(start, "alpha", seed=2)
    assert abs(result.value - 0.5) < max(3 * result.error, 2e-3), (result.value, result.error)


def test_the_many_parameter_optimiser_finds_the_exact_alpha_of_a_user_system(oscillators):
    """∂ ln ψ/∂α and ∂E_L/∂α by finite differences (a user system declares no derivatives): the linear method still
    reaches α = ½ with zero variance."""
    from qmckit.methods.optimizers import optimize

    start = oscillators["fd"].__class__(alpha=0.3)
    result = optimize(start, "alpha", steps=8, n_walkers=40, n_samples=50, seed=1)
    assert abs(result.params["alpha"] - 0.5) < 1e-3 and result.estimates["energy_variance"]["mean"] < 1e-6
    assert result.estimates["energy"].mean == pytest.approx(3.0, abs=1e-4)


def test_the_system_panel_runs_a_user_system_from_its_values(oscillators):
    from qmckit.widgets import SystemPanel

    system = oscillators["analytic"]
    panel = SystemPanel(type(system)(alpha=0.4), method="vmc", walkers=40, steps=300, seed=4)
    assert panel.controls["alpha"].value == 0.4 and panel.system_name == type(system).name  # the instance's value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        panel.run_sync()
        panel.controls["alpha"].value = 0.5
        panel.run_sync()
    energy = panel.last_run.estimates()["energy"]
    assert abs(energy.mean - 3.0) < 1e-9 and "E = 3.0" in panel.status.value  # ψ_T exact at α = ½


def test_the_scan_panel_scans_a_user_system_from_its_values(oscillators):
    from qmckit.widgets import ScanPanel

    system = oscillators["analytic"]
    panel = ScanPanel(type(system)(alpha=0.45), workers=0, seed=2, alpha="0.45,0.5", walkers="20", steps="200")
    assert panel.system == type(system).name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = panel.run_sync()
    energies = {row["point"]["alpha"]: row["estimates"]["energy"] for row in result.rows}
    assert abs(energies[0.5]["mean"] - 3.0) < 1e-9  # exact at α = ½
    assert abs(energies[0.45]["mean"] - closed_form(0.45)) < 3 * energies[0.45]["error"]


def test_energy_terms_and_observables_are_averaged_by_vmc_without_changing_the_walk(oscillators):
    """⟨T⟩ = N·D·α/2, ⟨V⟩ = N·D/(8α) and ⟨Σ r²⟩ = N·D/(4α) for |ψ_T|² = exp(−2α Σ r²); measuring them leaves the
    energy of the same seeded run unchanged."""
    alpha = 0.4
    measured = qmckit.UserSystem(n=N, dim=D, params={"alpha": 0.5}, log_psi=log_psi, potential={"trap": trap},
                                 name="oscillator_measured", energy_terms=True,
                                 observables={"r2": lambda R, p: np.sum(R * R)})
    assert measured.capabilities.observables == ("kinetic_energy", "potential_trap", "r2")
    settings = dict(params={"alpha": alpha}, walkers=100, steps=1500, seed=4)
    out = run(measured, **settings)["estimates"]
    assert out["energy"] == run(oscillators["fd"], **settings)["estimates"]["energy"]
    for key, exact in (("kinetic_energy", N * D * alpha / 2), ("potential_trap", N * D / (8 * alpha)),
                       ("r2", N * D / (4 * alpha))):
        assert abs(out[key]["mean"] - exact) < 3 * out[key]["error"], (key, out[key], exact)
    # T + V = E_L walker by walker
    positions = np.random.default_rng(0).normal(size=(20, N, D))
    values = measured.measure(positions)
    assert np.allclose(values[:, 1] + values[:, 2], values[:, 0], rtol=1e-12, atol=1e-12)
    assert np.allclose(values[:, 3], np.sum(positions ** 2, axis=(1, 2)))


@pytest.mark.parametrize("observables, energy_terms, words", [
    ({"energy": log_psi}, False, "^observables must map short identifiers other than energy"),
    ({"r 2": log_psi}, False, "^observables must map short identifiers"),
    ({"r2": 3.0}, False, "^observables must map short identifiers"),
    ({"kinetic_energy": log_psi}, True, "^observables: kinetic_energy use a name kept for the energy terms"),
    ({"kinetic_energy": log_psi}, False, "^observables: kinetic_energy use a name kept for the energy terms"),
    ({"potential_trap": log_psi}, False, "^observables: potential_trap use a name kept for the energy terms"),
    ({"first": lambda R, p: R[0]}, False, r"^observable 'first': must return a number, got shape \(3,\)"),
    ({}, "yes", "^energy_terms must be True or False")])
def test_bad_observables_are_refused_in_one_line(observables, energy_terms, words):
    with pytest.raises(ValueError, match=words):
        qmckit.UserSystem(n=N, dim=D, params={"alpha": 0.5}, log_psi=log_psi, potential=trap, name="observed",
                          observables=observables, energy_terms=energy_terms)
