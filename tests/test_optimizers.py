"""Many-parameter optimisation (issue 29): the linear method, SR and Adam reach exact or published optima, the
gradients are the derivatives of the correlated-sampling estimators, and the safeguard refuses a bad step."""
import math

import numpy as np
import pytest

from qmckit.methods import optimizers
from qmckit.methods.optimize import reweighted, sample_configurations, with_parameter
from qmckit.methods.optimizers import optimize
from qmckit.methods.parameter_derivatives import parameter_derivatives
from qmckit.systems import make_system

HE_THESIS = (-2.8903, 0.0002)  # the thesis's optimum of the He Padé–Jastrow ψ_T (α = 1.839, β = 0.348; study 001)


def bosons(alpha=0.3):
    return make_system("bec", n=10, lam=1.0, a=0.0, alpha=alpha)


@pytest.mark.parametrize("method", ["linear", "sr"])
def test_noninteracting_bosons_reach_the_exact_alpha_with_zero_variance(method):
    result = optimize(bosons(), "alpha", method=method, steps=12, seed=1)
    assert abs(result.params["alpha"] - 0.5) < 1e-3, result.params
    assert result.estimates["energy"].mean == pytest.approx(1.5, abs=1e-6)  # ħω per particle
    assert result.estimates["energy_variance"]["mean"] < 1e-6  # 0.043 at the start
    assert result.history[0].energy.mean > 1.6


def test_adam_moves_alpha_towards_the_exact_value():
    result = optimize(bosons(), "alpha", method="adam", learning_rate=0.01, steps=30, seed=1)
    assert abs(result.params["alpha"] - 0.5) < 0.01 and result.estimates["energy"].mean < 1.501


def test_helium_reaches_the_published_optimum_from_a_poor_start():
    """From α = 1.6, β = 0.1 (0.1 hartree above), the linear method ends within 3σ of the thesis's −2.8903(2) or
    below it."""
    start = make_system("atom", element="He", alpha=1.6, beta=0.1)
    result = optimize(start, ("alpha", "beta"), method="linear", steps=12, final_samples=400, seed=2)
    energy = result.estimates["energy"]
    assert result.history[0].energy.mean > -2.80
    assert energy.mean < HE_THESIS[0] + 3 * math.hypot(energy.error, HE_THESIS[1]), (result.params, energy)
    assert abs(result.params["alpha"] - 1.84) < 0.03 and abs(result.params["beta"] - 0.35) < 0.05, result.params


def test_gradients_are_the_derivatives_of_the_reweighted_estimators():
    """On one set of samples, 2⟨ΔO E_L⟩ + ⟨∂E_L⟩ and the variance gradient equal the derivatives of the
    correlated-sampling energy and variance (central differences of reweighted estimates, α and β of He)."""
    system = make_system("atom", element="He", alpha=1.75, beta=0.25)
    configs = sample_configurations(system, n_walkers=40, n_samples=50, seed=3)
    S, W = configs.shape[:2]
    d = parameter_derivatives(system, configs.reshape((-1,) + configs.shape[2:]), ("alpha", "beta"))
    axis, labels, g = optimizers._groups(S, W, 20, 8)
    reference = d.local_energy.mean()
    m = optimizers._moments(optimizers._averages(d.local_energy.reshape(S, W) - reference,
                                                 d.d_log_psi.reshape(S, W, 2), d.d_local_energy.reshape(S, W, 2),
                                                 (axis, labels), g))
    for k, name in enumerate(("alpha", "beta")):
        h = 1e-4
        value = system.params.as_dict()[name]
        scan = reweighted(system, configs, [with_parameter(system, name, value + h),
                                            with_parameter(system, name, value - h)])
        d_energy = (scan.energy[0] - scan.energy[1]) / (2 * h)
        d_variance = (scan.variance[0] - scan.variance[1]) / (2 * h)
        assert m["grad_energy"][0, k] + m["D"][0, k] == pytest.approx(d_energy, rel=1e-5), name
        assert m["grad_variance"][0, k] == pytest.approx(d_variance, rel=1e-5), name


def test_the_safeguard_refuses_a_linear_method_step_from_a_noisy_hessian(monkeypatch):
    """Noise that turns the Hessian's curvature over (H_kl − E S_kl → −(H_kl − E S_kl), as too few samples can give)
    points every candidate step uphill, even at shifts 1000× larger: reweighted from the samples each raises the
    energy (or keeps too few effective samples), so the step is refused and α stays. The same run without the noise
    takes its step at once."""
    clean = optimize(bosons(), "alpha", method="linear", steps=1, seed=4)
    assert clean.history[0].accepted and clean.history[0].note == "" and clean.params["alpha"] > 0.35
    moments = optimizers._moments

    def noisy(a):
        m = moments(a)
        m["H_kl"] = 2 * m["H_00"][:, None, None] * m["S"] - m["H_kl"]
        return m

    monkeypatch.setattr(optimizers, "_moments", noisy)
    result = optimize(bosons(), "alpha", method="linear", steps=1, seed=4)
    step = result.history[0]
    assert not step.accepted and step.note.startswith("refused") and not np.any(step.delta), step
    assert result.params["alpha"] == 0.3


@pytest.mark.parametrize("settings, words", [
    (dict(params="gamma"), "^params must be distinct variational parameters of 'bec' \\(alpha\\), got 'gamma'"),
    (dict(method="newton"), "^method must be one of linear, sr, adam, gd, got 'newton'"),
    (dict(target="both"), "^target must be energy, variance or a weight of the variance in \\[0, 1\\]"),
    (dict(target="variance"), "^target: the linear method here minimises the energy"),
    (dict(steps=0), "^steps must be an integer ≥ 1, got 0"),
    (dict(learning_rate=-1.0, method="gd"), "^learning_rate must be a finite number ≥ 0"),
    (dict(shift=0.0), "^shift must be a finite number > 0, got 0.0"),
    (dict(n_groups=1), "^n_groups must be an integer ≥ 2, got 1"),
    (dict(max_samples=10, n_samples=100), "^max_samples must be an integer ≥ 100, got 10"),
])
def test_bad_settings_are_refused_in_one_line(settings, words):
    with pytest.raises(ValueError, match=words):
        optimize(bosons(), **({"params": "alpha"} | settings))


def test_the_cli_prints_one_json_object_with_the_best_params_estimates_and_history(capsys, tmp_path):
    import json

    from qmckit import cli

    plot = tmp_path / "history.png"
    assert cli.main(["optimize", "bec", "--n", "10", "--a", "0", "--alpha", "0.3", "--params", "alpha", "--steps", "6",
                     "--json", "--plot", str(plot)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["params"]["alpha"] - 0.5) < 1e-3 and out["estimates"]["energy"]["mean"] == pytest.approx(1.5)
    assert len(out["history"]) >= 3 and out["history"][0]["params"] == {"alpha": 0.3}
    assert {"energy", "energy_variance", "gradient_norm", "accepted"} <= set(out["history"][0])
    assert plot.stat().st_size > 10_000


@pytest.mark.parametrize("argv, words", [
    (["optimize", "bec", "--params", "gamma"], "params must be distinct variational parameters of 'bec'"),
    (["optimize", "bec", "--alpha", "-1"], "alpha must be"),
    (["optimize", "bec", "--steps", "0"], "--steps must be an integer ≥ 1, got 0"),
    (["optimize", "bec", "--method", "linear", "--target", "variance"], "target: the linear method"),
])
def test_the_cli_refuses_bad_input_with_one_line_and_exit_2(argv, words, capsys):
    from qmckit import cli

    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err


def test_a_dask_client_samples_each_step_on_its_workers():
    """The walkers of every step are split over the client's workers (two here, threads of this process); the exact
    α of the non-interacting bosons comes out as before."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        calls = []
        submit = client.submit

        def counted(*args, **kwargs):
            calls.append(kwargs["n_walkers"])
            return submit(*args, **kwargs)

        client.submit = counted
        result = optimize(bosons(), "alpha", steps=6, n_walkers=40, n_samples=50, seed=1, client=client)
    assert abs(result.params["alpha"] - 0.5) < 1e-3
    assert calls[:2] == [20, 20] and sum(calls) == 40 * (len(result.history) + 1)  # the steps and the closing sample


def test_a_gradient_step_across_a_bound_is_halved_until_it_stays_inside():
    """From α = 0.8 the energy gradient is +0.91 ħω per particle; plain gradient descent with a learning rate far too
    large (10) would step to α ≈ −8.3. The step is halved until α stays > 0, and the step says so."""
    result = optimize(bosons(alpha=0.8), "alpha", method="gd", learning_rate=10.0, steps=2, seed=1)
    assert all(step.params["alpha"] > 0 for step in result.history) and result.params["alpha"] > 0
    assert any(step.note == "halved to stay within the bounds" for step in result.history), \
        [step.note for step in result.history]
