"""Tests for qmckit.precision: float32 / Kahan / truncating inner products against exact sums.

Exact references: the product of two float32 values is exact in float64 (24 + 24 < 53 bits), so
``math.fsum`` of those products is the correctly rounded exact inner product; ``Fraction`` gives
exact rationals where float64 inputs are involved. U = 2**-24 is the float32 unit roundoff.
"""
from fractions import Fraction
import math

import numpy as np
import pytest

from qmckit import precision as P

U = P.U32
FLT_MAX = float(np.finfo(np.float32).max)


def exact_dot(a, b):
    """Correctly rounded float64 value of the exact inner product of float32 vectors."""
    return math.fsum((np.asarray(a, np.float64) * np.asarray(b, np.float64)).tolist())


def ulp32(x):
    """Spacing of float32 numbers at |x| (the gap to the next larger magnitude)."""
    x = np.float32(abs(x))
    return float(np.nextafter(x, np.float32(np.inf)) - x)


def uniform_vectors(K, seed):
    rng = np.random.default_rng(seed)
    return rng.random(K, dtype=np.float32), rng.random(K, dtype=np.float32)


def mean_rel_error(dot, K, trials, seed):
    rng = np.random.default_rng(seed)
    errs = []
    for _ in range(trials):
        a, b = rng.random(K, dtype=np.float32), rng.random(K, dtype=np.float32)
        ex = exact_dot(a, b)
        errs.append(abs(float(dot(a, b)) - ex) / ex)
    return float(np.mean(errs))


# ---------------------------------------------------------------------------------------------
# the reference itself
# ---------------------------------------------------------------------------------------------
def test_reference_dot_is_exact_to_float64_rounding():
    # float32 inputs: Dot2 must agree with fsum of the exact products to within one float64 ulp
    for seed in range(3):
        a, b = uniform_vectors(100_000, seed)
        b = b - np.float32(0.5)  # signed terms: the sum cancels
        ex = exact_dot(a, b)
        assert abs(P.dot_ref(a, b) - ex) <= 2 * P.U64 * abs(ex)
    # float64 inputs with heavy cancellation, against exact rationals: Dot2's bound
    rng = np.random.default_rng(7)
    x = rng.standard_normal(2000) * np.exp(rng.uniform(-20, 20, 2000))
    y = rng.standard_normal(2000)
    x[-1] = -float(np.dot(x[:-1], y[:-1])) / y[-1]  # exact result ~ 1e-8 of the terms' size
    exact = sum(Fraction(float(p)) * Fraction(float(q)) for p, q in zip(x, y))
    scale = float(np.abs(x) @ np.abs(y))
    bound = P.U64 * abs(float(exact)) + (2000 * P.U64) ** 2 * scale * 1.01
    assert abs(Fraction(P.dot_ref(x, y)) - exact) <= Fraction(bound)
    assert abs(float(exact)) < 1e-6 * scale  # the test really cancels


# ---------------------------------------------------------------------------------------------
# plain and Kahan float32, round to nearest
# ---------------------------------------------------------------------------------------------
def test_dot_f32_is_sequential_ieee_float32():
    # bit-for-bit the same as a numpy float32 loop in order k = 0, 1, ...: no reassociation,
    # no FMA contraction, no float64 promotion
    a, b = uniform_vectors(3000, 11)
    s = np.float32(0)
    for x, y in zip(a, b):
        s = np.float32(s + np.float32(x * y))
    assert P.dot_f32(a, b) == s
    r = P.dot_f32(a, b)  # numba hands float32 scalars back as Python floats
    assert float(np.float32(r)) == r


def test_kahan_f32_is_ulp_accurate_at_K_1e5():
    """Bound: |err| <= (3U + 4 K U^2) sum|a_k b_k| (Kahan sum 2U, product rounding U;
    4 K U^2 = 1.4e-9 at K = 1e5), i.e. relative error <= 3.01 U = 1.8e-7 for positive data.
    In practice the result is within 2 float32 ulp of the exact value (measured: < 1)."""
    K = 100_000
    for seed in range(5):
        a, b = uniform_vectors(K, 100 + seed)
        ex = exact_dot(a, b)
        s_kahan = float(P.dot_kahan_f32(a, b))
        s_plain = float(P.dot_f32(a, b))
        assert abs(s_kahan - ex) <= (3 * U + 4 * K * U**2) * ex
        assert abs(s_kahan - ex) <= 2 * ulp32(ex)
        assert abs(s_plain - ex) > 10 * abs(s_kahan - ex)  # compensation is doing the work


def test_plain_f32_error_grows_like_sqrt_K_and_kahan_does_not():
    """Round-to-nearest errors are a random walk: mean relative error ~ U sqrt(K) (slope 0.5
    in log-log; measured 0.51-0.58). Kahan is flat (slope ~ 0). Bands: [0.35, 0.75], [-0.2, 0.2]."""
    e2 = mean_rel_error(P.dot_f32, 100, 400, 1)
    e5 = mean_rel_error(P.dot_f32, 100_000, 20, 2)
    slope = P.growth_exponent(1e2, e2, 1e5, e5)
    assert 0.35 <= slope <= 0.75, slope
    assert e5 <= 100_000 * U  # far inside the worst-case K U
    k2 = mean_rel_error(P.dot_kahan_f32, 100, 400, 1)
    k5 = mean_rel_error(P.dot_kahan_f32, 100_000, 20, 2)
    assert -0.2 <= P.growth_exponent(1e2, k2, 1e5, k5) <= 0.2
    assert k5 < U  # about U/3 on average


# ---------------------------------------------------------------------------------------------
# round toward zero
# ---------------------------------------------------------------------------------------------
def random_float64s(n, seed):
    """Signed float64 values over the whole float32 range and beyond: normal, subnormal,
    underflowing and overflowing magnitudes, with random 52-bit mantissas."""
    rng = np.random.default_rng(seed)
    mant = 1.0 + rng.random(n)
    expo = rng.integers(-155, 132, n)
    return np.ldexp(mant, expo) * rng.choice([-1.0, 1.0], n)


def test_round_toward_zero_exact_values_agree_with_numpy():
    rng = np.random.default_rng(3)
    f32 = rng.standard_normal(20_000).astype(np.float32) * np.float32(1e3)
    special = np.array([0.0, -0.0, 1.0, -2.5, FLT_MAX, -FLT_MAX, 2.0**-126, 2.0**-149,
                        -(2.0**-149), 3 * 2.0**-140, np.inf, -np.inf], np.float32)
    x = np.concatenate([f32, special]).astype(np.float64)
    np.testing.assert_array_equal(P.round_toward_zero_f32(x), x.astype(np.float32))
    assert np.isnan(P.round_toward_zero_f32(np.nan))
    assert P.round_toward_zero_f32(-0.0) == 0 and np.signbit(P.round_toward_zero_f32(-0.0))


def test_round_toward_zero_is_a_truncation_within_one_ulp():
    x = random_float64s(200_000, 4)
    rz = P.round_toward_zero_f32(x).astype(np.float64)
    with np.errstate(over="ignore"):
        rn = x.astype(np.float32).astype(np.float64)  # round to nearest (numpy)
    # never larger in magnitude than the exact value nor than round-to-nearest; same sign
    assert np.all(np.abs(rz) <= np.abs(x))
    assert np.all(np.abs(rz) <= np.abs(rn))
    assert np.all((rz == 0) | (np.sign(rz) == np.sign(x)))
    # the next float32 away from zero is beyond |x|: rz is THE truncation, less than 1 ulp off
    with np.errstate(over="ignore"):
        nxt = np.nextafter(np.abs(rz).astype(np.float32), np.float32(np.inf)).astype(np.float64)
    finite = np.isfinite(nxt)  # rz == FLT_MAX has no finite successor
    assert np.all(nxt[finite] > np.abs(x)[finite])
    assert np.all(np.abs(x)[~finite] >= FLT_MAX)
    # rz is either the round-to-nearest value or one float32 step below it in magnitude
    differs = (rz != rn) & np.isfinite(rn)
    step = np.nextafter(np.abs(rz[differs]).astype(np.float32), np.float32(np.inf))
    np.testing.assert_array_equal(step.astype(np.float64), np.abs(rn[differs]))
    assert differs.mean() > 0.3  # about half the random values round up under RN
    # overflow truncates to FLT_MAX, underflow to signed zero
    assert P.round_toward_zero_f32(1e39) == np.float32(FLT_MAX)
    assert P.round_toward_zero_f32(-1e39) == -np.float32(FLT_MAX)
    assert P.round_toward_zero_f32(1e-46) == 0.0
    assert np.signbit(P.round_toward_zero_f32(-1e-46))


def test_round_toward_zero_against_exact_rationals():
    # independent check with Fractions: |rz| <= |x| < |rz| + ulp(rz)
    for x in random_float64s(2000, 5):
        r = float(P.round_toward_zero_f32(x))
        if abs(r) == FLT_MAX:
            assert abs(x) >= FLT_MAX
            continue
        ulp = float(np.nextafter(np.float32(abs(r)), np.float32(np.inf))) - abs(r)
        assert Fraction(abs(r)) <= Fraction(abs(x)) < Fraction(abs(r)) + Fraction(ulp)


# ---------------------------------------------------------------------------------------------
# truncating arithmetic: the 2006 GPU effect
# ---------------------------------------------------------------------------------------------
def is_truncation(got, exact: Fraction) -> bool:
    """``got`` is the float32 of largest magnitude <= |exact|, with the sign of ``exact``."""
    g = Fraction(float(got))
    if exact == 0:
        return g == 0
    step = Fraction(ulp32(float(got))) if got != 0 else Fraction(2.0**-149)
    return (g == 0 or (g > 0) == (exact > 0)) and abs(g) <= abs(exact) < abs(g) + step


def test_truncating_operations_are_exact_round_toward_zero():
    # each multiply and add equals the truncation of the exact rational result, including sums
    # whose float64 value is itself rounded (addends up to e^60 apart)
    rng = np.random.default_rng(6)
    a = (rng.standard_normal(3000) * np.exp(rng.uniform(-30, 30, 3000))).astype(np.float32)
    b = (rng.standard_normal(3000) * np.exp(rng.uniform(-30, 30, 3000))).astype(np.float32)
    ones = np.ones(2, np.float32)
    for x, y in zip(a, b):
        prod = P.dot_truncating_f32(np.array([x], np.float32), np.array([y], np.float32))
        assert is_truncation(prod, Fraction(float(x)) * Fraction(float(y)))
        total = P.dot_truncating_f32(np.array([x, y], np.float32), ones)  # 0 + x*1 + y*1
        assert is_truncation(total, Fraction(float(x)) + Fraction(float(y)))
    # a sum that the float64 adder rounds onto the float32 grid from inside: 1 - 2**-60
    got = P.dot_truncating_f32(np.array([1.0, -(2.0**-60)], np.float32), ones)
    assert got == np.nextafter(np.float32(1), np.float32(0))


def test_truncating_sum_of_equal_numbers_is_biased_low_like_K_eps():
    """Summing K copies of x on a chopping adder loses the fraction of x below the partial sum's
    last bit at every step: the error is always negative, bounded by (K + 1) U in relative terms,
    and on average about -0.37 K U (growth exponent 1). Round to nearest has no such bias."""
    rng = np.random.default_rng(5)
    xs = rng.uniform(0.1, 1.0, 8).astype(np.float32)
    rel_rz = {K: [] for K in (1000, 100_000)}
    rel_rn = {K: [] for K in (1000, 100_000)}
    for K in rel_rz:
        ones = np.ones(K, np.float32)
        for x in xs:
            v = np.full(K, x, np.float32)
            ex = exact_dot(v, ones)
            rel_rz[K].append((float(P.dot_truncating_f32(v, ones)) - ex) / ex)
            rel_rn[K].append((float(P.dot_f32(v, ones)) - ex) / ex)
        r = np.array(rel_rz[K])
        assert np.all(r < 0)
        assert np.all(r >= -(K + 1) * U)
        assert -0.6 * K * U <= r.mean() <= -0.15 * K * U
        assert abs(np.mean(rel_rn[K])) < 0.3 * abs(r.mean())
    slope = P.growth_exponent(1000, -np.mean(rel_rz[1000]), 100_000, -np.mean(rel_rz[100_000]))
    assert 0.9 <= slope <= 1.1, slope


def test_truncating_random_dot_grows_linearly_and_kahan_repairs_it():
    """Uniform data: truncating error ~ 0.37 K U (slope 1, band [0.9, 1.1]); Kahan under
    truncation stays flat below its bound 3 * (2U) = 6U (measured ~1.7 U)."""
    e2 = mean_rel_error(P.dot_truncating_f32, 100, 300, 8)
    e5 = mean_rel_error(P.dot_truncating_f32, 100_000, 8, 9)
    assert 0.9 <= P.growth_exponent(1e2, e2, 1e5, e5) <= 1.1
    k5 = mean_rel_error(P.dot_kahan_truncating_f32, 100_000, 8, 9)
    assert k5 <= 6 * U
    assert k5 < e5 / 1000


# ---------------------------------------------------------------------------------------------
# matrix products
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["uniform", "basis"])
def test_matmul_kernels_within_bounds_of_numpy_float64(kind):
    M, K, N = 12, 3000, 9
    rng = np.random.default_rng(21)
    if kind == "uniform":
        A, B = P.uniform_pair(M, K, rng, N)
    else:
        A, B = P.gaussian_basis_like(M, K, rng, N)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    C64 = A64 @ B64  # numpy float64 (BLAS) on the same float32 inputs
    scale = np.abs(A64) @ np.abs(B64)
    gamma = lambda u: K * u / (1 - K * u)  # noqa: E731
    blas = gamma(P.U64) * scale  # numpy's own error allowance
    bounds = {
        P.matmul_f32: gamma(U),
        P.matmul_truncating_f32: gamma(2 * U),
        P.matmul_kahan_f32: 3 * U + 4 * K * U**2,
        P.matmul_kahan_truncating_f32: 6 * U + 16 * K * U**2,
        P.matmul_f64: gamma(P.U64),
    }
    for kernel, bound in bounds.items():
        C = kernel(A, B)
        assert C.shape == (M, N)
        assert C.dtype == (np.float64 if kernel is P.matmul_f64 else np.float32)
        err = np.abs(C.astype(np.float64) - C64)
        assert np.all(err <= bound * scale + blas), kernel.__name__
    # the Dot2 reference is at least as close to the exact value as numpy float64
    ref = P.matmul_ref(A, B)
    assert np.all(np.abs(ref - C64) <= blas)
    # every element is its dot kernel (same order, same bits)
    i, j = 5, 7
    assert P.matmul_kahan_truncating_f32(A, B)[i, j] == P.dot_kahan_truncating_f32(A[i], B[:, j].copy())
    assert P.matmul_f32(A, B)[i, j] == P.dot_f32(A[i], B[:, j].copy())


def test_gaussian_basis_like_structure():
    A, B = P.gaussian_basis_like(40, 500, np.random.default_rng(0), 30)
    assert A.shape == (40, 500) and B.shape == (500, 30)
    assert A.dtype == B.dtype == np.float32
    assert np.all(A >= 0) and A.max() > 1.0  # normalised core functions are large near centres
    assert np.mean(A < 1e-6 * A.max()) > 0.1  # ... and negligible far away: wide dynamic range
    assert (B < 0).mean() > 0.4 and (B > 0).mean() > 0.4
    C = A.astype(np.float64) @ B.astype(np.float64)
    ratio = np.abs(C) / (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64)))
    assert np.median(ratio) < 0.5  # signed coefficients cancel
    _, Bu = P.gaussian_basis_like(4, 50, 0, coefficients="uniform")
    assert np.all((Bu >= 0) & (Bu < 1))
    with pytest.raises(ValueError):
        P.gaussian_basis_like(4, 50, 0, coefficients="bogus")


def test_error_vs_length_shape_and_ordering():
    res = P.error_vs_length([16, 256, 4096], "uniform", trials=2, rng=1, work=2.0**18)
    assert list(res.stats) == list(P.ARITHMETICS)
    for a in P.ARITHMETICS:
        for stat in ("mean", "median", "max", "mean_signed", "mean_scaled"):
            assert res.stats[a][stat].shape == (3,)
        assert np.all(res.stats[a]["max"] >= res.stats[a]["mean"])
        # non-negative data: relative and scaled errors coincide
        np.testing.assert_allclose(res.stats[a]["mean"], res.stats[a]["mean_scaled"], rtol=1e-6)
    s = res.stats
    assert np.all(s["f64"]["mean"] < 1e-14)
    assert s["f32_rz"]["mean"][-1] > 100 * s["f32_rz"]["mean"][0]  # ~ linear in K
    np.testing.assert_allclose(s["f32_rz"]["mean_signed"], -s["f32_rz"]["mean"])  # all low
    assert np.all(np.abs(s["f32"]["mean_signed"]) < s["f32"]["mean"])
    assert s["kahan_f32"]["mean"][-1] < s["f32"]["mean"][-1] / 10
    assert s["kahan_f32_rz"]["mean"][-1] < s["f32"]["mean"][-1]  # 001: KSF beats CPU single
    assert len(res.table()) == 3 and res.table()[0][0] == 16


def test_error_vs_length_accepts_any_pair_of_matrices():
    calls = []

    def pair(M, K, rng):
        calls.append((M, K))
        return rng.random((M, K)), rng.standard_normal((K, M))  # float64 inputs are rounded

    res = P.error_vs_length([50], pair, trials=1, rng=2, size=6, arithmetics=("f32", "f64"))
    assert calls == [(6, 50)] and res.kind == "pair" and res.shapes == [(6, 6)]
    assert res.stats["f64"]["mean_scaled"][0] < 1e-15 < res.stats["f32"]["mean_scaled"][0] < 1e-6


def test_plot_error_vs_length_draws_one_line_per_arithmetic():
    import matplotlib
    matplotlib.use("Agg")
    names = (*P.ARITHMETICS, "blas_f32", "exact_f32")
    res = P.error_vs_length([10, 100], "uniform", trials=1, rng=0, size=8, arithmetics=names)
    ax = P.plot_error_vs_length(res, guides=False)
    assert [line.get_label() for line in ax.get_lines()] == [P.LABELS[a] for a in names]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    ax = P.plot_error_vs_length(res, stat="mean_signed")  # plots |bias|
    assert len(ax.get_lines()) == len(names) + 2  # + the u·√K and u·K guides
