"""Time-step extrapolation against synthetic data with known truth and against numpy.polyfit."""
import numpy as np
import pytest

from qmckit.stats import best_extrapolation, extrapolate

DTS = np.array([0.001, 0.002, 0.005, 0.01, 0.02, 0.05])


def test_linear_fit_matches_polyfit_and_recovers_truth():
    rng = np.random.default_rng(0)
    errors = np.full(DTS.size, 2e-4) * (1 + DTS * 20)
    energies = 1.5 + 0.3 * DTS + rng.normal(size=DTS.size) * errors
    fit = extrapolate(DTS, energies, errors, order=1, n_points=None)
    coef, cov = np.polyfit(DTS, energies, 1, w=1 / errors, cov="unscaled")
    assert fit.energy == pytest.approx(coef[1], rel=1e-12)
    assert fit.error == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-9)
    assert abs(fit.energy - 1.5) < 3 * fit.error
    assert fit.dof == DTS.size - 2


def test_error_bars_have_the_right_coverage():
    rng = np.random.default_rng(1)
    errors = np.full(DTS.size, 1e-3)
    pulls = []
    for _ in range(2000):
        energies = 2.0 - 0.5 * DTS + 3.0 * DTS**2 + rng.normal(size=DTS.size) * errors
        fit = extrapolate(DTS, energies, errors, order=2, n_points=None)
        pulls.append((fit.energy - 2.0) / fit.error)
    pulls = np.array(pulls)
    assert abs(np.mean(np.abs(pulls) < 1) - 0.683) < 0.03
    assert abs(pulls.std() - 1) < 0.05


def test_three_smallest_points_and_model_choice():
    errors = np.full(DTS.size, 1e-4)
    energies = 1.0 + 0.2 * DTS + 40.0 * DTS**2  # strongly curved at large Δτ
    linear3 = extrapolate(DTS, energies, errors, order=1, n_points=3)
    assert list(linear3.dts) == [0.001, 0.002, 0.005]
    best = best_extrapolation(DTS, energies + np.random.default_rng(2).normal(size=DTS.size) * errors, errors)
    assert best.order == 2 and abs(best.energy - 1.0) < 3 * best.error


@pytest.mark.parametrize("bad", [dict(errors=[1e-3, 0.0, 1e-3]), dict(n_points=1), dict(order=-1)])
def test_bad_input(bad):
    kwargs = dict(dts=[0.01, 0.02, 0.03], energies=[1.0, 1.1, 1.2], errors=[1e-3] * 3)
    kwargs.update(bad)
    with pytest.raises(ValueError):
        extrapolate(**kwargs)
