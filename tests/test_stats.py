"""Tests for qmckit.stats: blocking, Jonsson M-test, autocorrelation time."""

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.signal import lfilter

from qmckit.stats import (Estimate, ReblockTable, autocorrelation, estimate,
                          format_value_error, integrated_autocorr_time,
                          jonsson_block, optimal_block, reblock)

N_LONG = 2**18


def ar1(phi, n, seed):
    """x_t = phi x_{t-1} + sqrt(1-phi^2) eps_t, stationary variance 1."""
    eps = np.random.default_rng(seed).standard_normal(n + 2000)
    x = lfilter([np.sqrt(1 - phi**2)], [1.0, -phi], eps)
    return x[2000:]  # phi**2000 ~ 0: the start transient is gone


def exact_sem(phi, n):
    """Exact standard error of the mean of n AR(1) samples:
    var(mean) = n^-2 sum_{|k|<n} (n - |k|) phi^|k|."""
    k = np.arange(1, n)
    return math.sqrt((n + 2 * np.sum((n - k) * phi**k)) / n**2)


@pytest.fixture(scope="module", params=[0.0, 0.5, 0.9])
def ar1_long(request):
    phi = request.param
    return phi, ar1(phi, N_LONG, seed=0)


# --- accuracy against the exact AR(1) answer --------------------------------

@pytest.mark.parametrize("method", ["auto", "fp", "jonsson", "acf"])
def test_ar1_error_within_10_percent(ar1_long, method):
    phi, x = ar1_long
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 2^18 samples must not warn
        est = estimate(x, method=method)
    exact = exact_sem(phi, N_LONG)
    assert est.error == pytest.approx(exact, rel=0.10)
    assert est.n == N_LONG
    assert est.n_eff == pytest.approx(est.n / (2 * est.tau))
    # tau and error are tied by error^2 = 2 tau var / n
    assert est.error**2 == pytest.approx(2 * est.tau * x.var(ddof=1) / x.size, rel=1e-10)
    assert abs(est.mean) < 5 * exact


def test_ar1_tau_within_10_percent(ar1_long):
    phi, x = ar1_long
    tau, tau_err = integrated_autocorr_time(x)
    exact = (1 + phi) / (2 * (1 - phi))
    assert tau == pytest.approx(exact, rel=0.10)
    assert 0 < tau_err < 0.05 * tau


def test_jonsson_level_grows_with_correlation():
    levels = [jonsson_block(ar1(phi, 2**16, seed=1))[0] for phi in (0.0, 0.5, 0.9)]
    assert levels[0] == 0  # white noise needs no blocking
    assert levels[0] < levels[1] < levels[2]


def test_blocking_error_is_calibrated_over_replicas():
    """Mean of estimated variances of the mean over 200 independent short
    chains matches the exact variance (unbiasedness, not one lucky seed)."""
    phi, n = 0.9, 2**13
    est_var = [estimate(ar1(phi, n, seed)).error**2 for seed in range(100, 300)]
    assert np.mean(est_var) == pytest.approx(exact_sem(phi, n) ** 2, rel=0.10)


def test_autocorrelation_matches_direct_sum():
    x = ar1(0.7, 500, seed=3)
    rho = autocorrelation(x, max_lag=20)
    d = x - x.mean()
    direct = np.array([np.dot(d[: d.size - t], d[t:]) for t in range(21)]) / np.dot(d, d)
    assert rho.shape == (21,)
    np.testing.assert_allclose(rho, direct, atol=1e-12)
    # AR(1) has rho(t) = phi^t; a long series gets close
    rho_long = autocorrelation(ar1(0.7, 2**17, seed=4), max_lag=5)
    np.testing.assert_allclose(rho_long, 0.7 ** np.arange(6), atol=0.02)


# --- agreement with pyblock ---------------------------------------------------

@pytest.fixture(scope="module")
def pyblock_blocking():
    try:
        import pyblock.blocking
    except ImportError:  # only if it truly cannot be imported
        pytest.skip("pyblock not importable")
    return pyblock.blocking


@pytest.mark.parametrize("phi,n", [(0.9, 2**14), (0.5, 10007), (0.0, 3001)])
def test_reblock_matches_pyblock(pyblock_blocking, phi, n):
    x = ar1(phi, n, seed=5)
    ours = reblock(x)
    ref = pyblock_blocking.reblock(x)
    assert len(ref) == ours.mean.size
    np.testing.assert_array_equal(ours.n_blocks, [r.ndata for r in ref])
    np.testing.assert_array_equal(ours.block_size, 2 ** np.arange(len(ref)))
    np.testing.assert_allclose(ours.mean, [float(r.mean) for r in ref], rtol=1e-10)
    np.testing.assert_allclose(ours.error, [float(r.std_err) for r in ref], rtol=1e-10)
    np.testing.assert_allclose(ours.error_of_error,
                               [float(r.std_err_err) for r in ref], rtol=1e-10)
    ref_opt = pyblock_blocking.find_optimal_block(n, ref)[0]
    assert ours.optimal == (None if math.isnan(ref_opt) else ref_opt)
    assert optimal_block(ours) == ours.optimal


def test_weighted_reblock_matches_pyblock(pyblock_blocking):
    x = ar1(0.8, 5003, seed=6)
    w = np.random.default_rng(7).uniform(0.2, 3.0, x.size)
    ours = reblock(x, weights=w)
    ref = pyblock_blocking.reblock(x, weights=w)
    np.testing.assert_allclose(ours.mean, [float(r.mean) for r in ref], rtol=1e-10)
    np.testing.assert_allclose(ours.error, [float(r.std_err) for r in ref], rtol=1e-10)
    np.testing.assert_allclose(ours.error_of_error,
                               [float(r.std_err_err) for r in ref], rtol=1e-10)
    ref_opt = pyblock_blocking.find_optimal_block(x.size, ref)[0]
    assert ours.optimal == (None if math.isnan(ref_opt) else ref_opt)


# --- weighted identities ------------------------------------------------------
# Weighted blocking is NOT the blocking of a series with sample i repeated w_i
# times (the pairs would straddle different samples and the Kish effective
# size differs from sum(w)). The identities that do hold are tested instead.

def test_equal_weights_reproduce_unweighted():
    x = ar1(0.9, 4099, seed=8)
    plain = reblock(x)
    for c in (1.0, 3.7):
        weighted = reblock(x, weights=np.full(x.size, c))
        np.testing.assert_allclose(weighted.mean, plain.mean, rtol=1e-12)
        np.testing.assert_allclose(weighted.error, plain.error, rtol=1e-10)
        np.testing.assert_allclose(weighted.error_of_error, plain.error_of_error, rtol=1e-10)
        assert weighted.optimal == plain.optimal


def test_weighted_scale_invariance_and_level_means():
    x = ar1(0.5, 1001, seed=9)
    w = np.random.default_rng(10).integers(1, 5, x.size).astype(float)
    table = reblock(x, weights=w)
    scaled = reblock(x, weights=1e3 * w)
    np.testing.assert_allclose(scaled.error, table.error, rtol=1e-10)
    np.testing.assert_allclose(scaled.mean, table.mean, rtol=1e-10)
    # Level k mean is the weighted mean of the samples its blocks cover.
    for k, (bs, nb) in enumerate(zip(table.block_size, table.n_blocks)):
        used = bs * nb
        assert table.mean[k] == pytest.approx(np.dot(w[:used], x[:used]) / w[:used].sum(),
                                               rel=1e-12)
    # With integer weights, the level-0 mean is that of the repeated series.
    assert table.mean[0] == pytest.approx(np.repeat(x, w.astype(int)).mean(), rel=1e-12)
    # Kish effective size: a few heavy samples shrink the effective sample.
    n_kish = w.sum() ** 2 / np.dot(w, w)
    var_w = n_kish / (n_kish - 1) * np.dot(w, (x - table.mean[0]) ** 2) / w.sum()
    assert table.error[0] == pytest.approx(math.sqrt(var_w / n_kish), rel=1e-12)


def test_two_dimensional_input_averages_walkers():
    rng = np.random.default_rng(11)
    x = ar1(0.9, 2**12, seed=12)[:, None] + rng.standard_normal((2**12, 8))
    for method in ("fp", "jonsson", "acf"):
        a = estimate(x, method=method).to_dict()
        b = estimate(x.mean(axis=1), method=method).to_dict()
        assert a == pytest.approx(b, rel=1e-9)
    w = rng.uniform(0.5, 2.0, x.shape)
    est_2d = estimate(x, weights=w).to_dict()
    est_1d = estimate((w * x).sum(1) / w.sum(1), weights=w.sum(1)).to_dict()
    for key in est_2d:
        assert est_2d[key] == pytest.approx(est_1d[key], rel=1e-9)


# --- edge cases -----------------------------------------------------------------

@pytest.mark.parametrize("method", ["auto", "fp", "jonsson", "acf"])
@pytest.mark.parametrize("value", [0.1, -3.0, 1e300])
def test_constant_series(method, value):
    x = np.full(1000, value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = estimate(x, method=method)
    assert est.error == 0.0
    assert est.error_of_error == 0.0
    assert est.tau == 0.5
    assert est.mean == value
    assert all(math.isfinite(v) for v in est.to_dict().values())
    assert "(exact)" in repr(est)


def test_constant_weighted_and_2d():
    x = np.full((300, 4), 2.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = estimate(x, weights=np.random.default_rng(0).uniform(1, 2, x.shape))
    assert (est.error, est.tau, est.mean) == (0.0, 0.5, 2.5)
    est = estimate(np.full((300, 3), 0.1))  # 0.1+0.1+0.1 != 0.3 in floats
    assert (est.error, est.tau, est.mean) == (0.0, 0.5, 0.1)
    assert integrated_autocorr_time(np.ones(50)) == (0.5, 0.0)


@pytest.mark.parametrize("method", ["auto", "fp", "jonsson", "acf"])
def test_short_correlated_series_warns(method):
    x = ar1(0.95, 64, seed=13)  # tau = 19.5: 64 samples are far too few
    with pytest.warns(RuntimeWarning, match="too short"):
        est = estimate(x, method=method)
    assert math.isfinite(est.error) and est.error > 0


def test_short_series_fallback_uses_enough_blocks():
    # A random walk never decorrelates: no level can satisfy the criterion.
    walk = np.cumsum(np.random.default_rng(14).standard_normal(1000))
    table = reblock(walk)
    assert table.optimal is None
    with pytest.warns(RuntimeWarning, match="too short"):
        est = table.to_estimate()
    level = int(np.flatnonzero(table.n_blocks >= 16)[-1])
    assert est.error == table.error[level]


def test_single_sample_warns_not_raises():
    with pytest.warns(RuntimeWarning):
        est = estimate([1.0])
    assert est.mean == 1.0 and math.isnan(est.error)
    with pytest.warns(RuntimeWarning, match="too short"):
        est = estimate(np.arange(8.0), method="jonsson")  # < 16 blocks
    assert math.isfinite(est.error)


def test_bad_input_raises():
    with pytest.raises(ValueError):
        estimate([])
    with pytest.raises(ValueError):
        estimate([1.0, np.nan, 2.0])
    with pytest.raises(ValueError):
        estimate(np.arange(10.0), weights=-np.ones(10))
    with pytest.raises(ValueError):
        estimate(np.arange(10.0), method="bootstrap")
    with pytest.raises(ValueError):
        estimate(np.arange(10.0), method="acf", weights=np.ones(10))


def test_jonsson_truncates_from_start():
    x = ar1(0.5, 3000, seed=15)
    level, est = jonsson_block(x)
    assert est.n == 2048
    assert est.mean == pytest.approx(x[:2048].mean(), rel=1e-12)
    assert level == jonsson_block(x[:2048])[0]


def test_reblock_table_type():
    table = reblock(ar1(0.5, 1000, seed=16))
    assert isinstance(table, ReblockTable)
    assert table.n == 1000
    assert table.n_blocks[-1] >= 2 and table.n_blocks[-1] // 2 < 2
    assert isinstance(table.to_estimate(), Estimate)


# --- formatting -------------------------------------------------------------------

@pytest.mark.parametrize("mean,error,text", [
    (1.531998, 5e-6, "1.531998(5)"),
    (3.35664, 0.00023, "3.35664(23)"),
    (-0.5, 0.0123, "-0.500(12)"),
    (1.0, 0.0996, "1.00(10)"),
    (1234.5, 23.0, "1234(23)"),
    (12345.0, 560.0, "12300(600)"),
    (2.5e-9, 3.1e-11, "2.500(31)e-09"),
    (1.5, 0.0, "1.5(exact)"),
    (1.5, float("nan"), "1.5 ± nan"),
    (float("inf"), 0.1, "inf ± 0.1"),
])
def test_format_value_error(mean, error, text):
    assert format_value_error(mean, error) == text


def test_estimate_repr_and_dict():
    est = Estimate(np.float64(1.531998), np.float64(5e-6), 1e-7,
                   np.float64(3.2), 1.2e4, np.int64(40000))
    assert repr(est) == "Estimate(1.531998(5), τ=3.2, n_eff=1.2e+04)"
    assert str(est) == "1.531998(5)"
    d = est.to_dict()
    assert list(d) == ["mean", "error", "error_of_error", "tau", "n_eff", "n"]
    assert all(type(v) is float for k, v in d.items() if k != "n")
    assert type(d["n"]) is int
    assert json.loads(json.dumps(d)) == d


@settings(max_examples=200, deadline=None)
@given(mean=st.floats(-1e4, 1e4), error=st.floats(1e-3, 0.9))
def test_format_value_error_roundtrip(mean, error):
    text = format_value_error(mean, error)
    mean_txt, err_txt = text[:-1].split("(")
    unit = 10.0 ** -len(mean_txt.split(".")[1])
    shown = int(err_txt)
    assert 10 <= shown <= 35 or 4 <= shown <= 9  # PDG: 1-2 significant digits
    assert abs(float(mean_txt) - mean) <= 0.5 * unit * (1 + 1e-9) + 1e-9 * abs(mean)
    # rounded error within half a unit, or the 950-999 -> "10" round-up
    assert abs(shown * unit - error) <= 0.5 * unit * (1 + 1e-9) or shown == 10
