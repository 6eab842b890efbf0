"""Blocking (reblocking) analysis of serially correlated Monte Carlo data.

References
----------
H. Flyvbjerg and H. G. Petersen, J. Chem. Phys. 91, 461 (1989).
U. Wolff, Comput. Phys. Commun. 156, 143 (2004).
R. M. Lee, G. J. Conduit, N. Nemec, P. Lopez Rios and N. D. Drummond,
    Phys. Rev. E 83, 066706 (2011).
M. Jonsson, Phys. Rev. E 98, 043304 (2018).
J. S. Spencer, pyblock (the conventions of ``reblock``/``find_optimal_block``
    are reproduced here, including the weighted variant).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np

from .autocorr import integrated_autocorr_time
from .estimate import Estimate

# Fewest blocks for a trustworthy error (error of the error ~18 %): fewer
# triggers a warning, and it is the fallback when no level is optimal.
MIN_BLOCKS = 16


class ShortSeriesWarning(RuntimeWarning):
    """A series too short for a reliable error bar. ``n``: its length; ``blocks``: the blocks left at the
    optimal blocking level, or None when no level meets the criterion (a run summarises these into one line:
    :func:`qmckit.methods.run.Run.warnings`)."""

    def __init__(self, message: str, n: int, blocks: int | None):
        super().__init__(message)
        self.n = int(n)
        self.blocks = blocks


@dataclass
class ReblockTable:
    """Flyvbjerg-Petersen blocking table, one entry per blocking level.

    Level k has blocks of ``block_size[k] = 2**k`` consecutive samples.

    Attributes
    ----------
    block_size, n_blocks : int arrays, shape (n_levels,)
    mean : float array, shape (n_levels,)
        Mean of the samples covered by the blocks kept at that level (an odd
        trailing block is dropped at every pairing, as in pyblock).
    error : float array, shape (n_levels,)
        Standard error of the mean assuming the blocks are independent.
    error_of_error : float array, shape (n_levels,)
        error / sqrt(2 (n_blocks - 1)), with the Kish effective number of
        blocks instead of n_blocks for weighted data.
    optimal : int or None
        Level chosen by :func:`optimal_block`; None if the series is too
        short for the criterion to be met.
    """

    block_size: np.ndarray
    n_blocks: np.ndarray
    mean: np.ndarray
    error: np.ndarray
    error_of_error: np.ndarray
    optimal: int | None = None

    @property
    def n(self) -> int:
        """Number of samples in the original series."""
        return int(self.n_blocks[0])

    def to_estimate(self) -> Estimate:
        """Estimate at the optimal level.

        If no level satisfies the optimal-block criterion, warns (series too
        short) and falls back to the largest level with at least 16 blocks
        (level 0 if there is none); that error is likely an underestimate.
        Also warns if the optimal level keeps fewer than 16 blocks.
        """
        return _table_estimate(self, stacklevel=3)


def _table_estimate(table: ReblockTable, stacklevel: int) -> Estimate:
    level = table.optimal
    if level is None:
        ok = np.flatnonzero(table.n_blocks >= MIN_BLOCKS)
        level = int(ok[-1]) if ok.size else 0
        warnings.warn(ShortSeriesWarning(
            f"reblock: no blocking level satisfies the optimal-block "
            f"criterion; the series (n={table.n}) is too short for a "
            f"reliable error estimate. Using block size "
            f"{int(table.block_size[level])} ({int(table.n_blocks[level])} "
            f"blocks); the error is probably underestimated.", table.n, None), stacklevel=stacklevel)
    elif table.n_blocks[level] < MIN_BLOCKS:
        warnings.warn(ShortSeriesWarning(
            f"reblock: the optimal block size leaves only "
            f"{int(table.n_blocks[level])} blocks; the series (n={table.n}) "
            f"is too short for a reliable error estimate.", table.n, int(table.n_blocks[level])),
            stacklevel=stacklevel)
    err, err0 = float(table.error[level]), float(table.error[0])
    # err0 == 0 only for constant data: no fluctuation, no correlation.
    tau = 0.5 * (err / err0) ** 2 if err0 > 0 else 0.5
    return Estimate(mean=float(table.mean[0]), error=err,
                    error_of_error=float(table.error_of_error[level]),
                    tau=tau, n_eff=_n_eff(table.n, tau), n=table.n)


def _n_eff(n: int, tau: float) -> float:
    # tau == 0 happens for exactly periodic data (the mean is exact).
    return n / (2 * tau) if tau > 0 else float("inf")


def _as_series(x, weights=None):
    """Reduce input to a 1-D time series (and 1-D weights, or None).

    A 2-D ``x`` of shape (n_steps, n_walkers) is averaged over walkers at
    each step (weighted by ``weights`` if they have the same shape, the step
    weight then being the walkers' total weight).
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 0 or x.ndim > 2:
        raise ValueError(f"x must be 1-D or 2-D (n_steps, n_walkers), got shape {x.shape}")
    if x.shape[0] == 0 or x.size == 0:
        raise ValueError("x is empty")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains non-finite values")
    if x.ndim == 2:
        # Shifted by the first walker so that a step where all walkers agree
        # gives exactly that value (constant data must give error 0).
        x0 = x[:, 0]
        dev = x - x0[:, None]
    if weights is None:
        return (x0 + dev.mean(axis=1) if x.ndim == 2 else x), None

    w = np.asarray(weights, dtype=float)
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ValueError("weights must be finite and strictly positive")
    if x.ndim == 2 and w.shape == x.shape:
        wsum = w.sum(axis=1)
        return x0 + (w * dev).sum(axis=1) / wsum, wsum
    if x.ndim == 2:
        x = x0 + dev.mean(axis=1)
    if w.shape != x.shape:
        raise ValueError(f"weights shape {w.shape} does not match data")
    return x, w


def reblock(x, weights=None) -> ReblockTable:
    """Flyvbjerg-Petersen blocking analysis.

    Neighbouring pairs are averaged repeatedly (dropping an odd last element)
    while at least two blocks remain; each level records the mean and the
    naive standard error sigma / sqrt(n_blocks) (unbiased variance).

    Parameters
    ----------
    x : array, shape (n,) or (n_steps, n_walkers)
        Time series. 2-D input is first averaged over walkers (axis 1).
    weights : array, shape (n,) or (n_steps, n_walkers), optional
        Strictly positive sample weights. Pairs are combined into weighted
        averages that carry the summed weight, and each level uses the
        weighted variance with pyblock's effective-number correction:
        n_eff = (sum w)^2 / sum w^2, var = n_eff/(n_eff-1) sum w (x-m)^2 / sum w,
        error = sqrt(var / n_eff), error_of_error = error / sqrt(2 (n_eff-1)).
        With equal weights this is exactly the unweighted analysis. It is not
        the analysis of a series with each sample repeated w times (blocks
        would then straddle different samples); the weighted mean at every
        level, however, is sum(w x) / sum(w) over the samples kept.

    Returns
    -------
    ReblockTable, with ``optimal`` set by :func:`optimal_block`.
    """
    x, w = _as_series(x, weights)
    rows = []
    level = 0
    while x.size >= 2:
        nb = x.size
        if w is not None:
            wn = w / w.sum()  # normalised at every level, as pyblock does
        if x[0] == x[-1] and np.all(x == x[0]):
            # Exact zero rather than round-off noise from x - mean(x).
            mean, err, n_eff = float(x[0]), 0.0, float(nb)
        elif w is None:
            mean = x.mean()
            n_eff = nb
            err = np.sqrt(x.var(ddof=1) / nb)
        else:
            mean = np.dot(wn, x)
            n_eff = 1.0 / np.dot(wn, wn)
            var = n_eff / (n_eff - 1) * np.dot(wn, (x - mean) ** 2)
            err = np.sqrt(var / n_eff)
        rows.append((2**level, nb, mean, err, err / np.sqrt(2 * (n_eff - 1))))

        last = 2 * (nb // 2)
        if w is None:
            x = 0.5 * (x[0:last:2] + x[1:last:2])
        else:
            w = wn[0:last:2] + wn[1:last:2]
            # x0 + (x1-x0) w1/(w0+w1) is the weighted pair average, written
            # so that equal neighbours stay bit-for-bit equal.
            x = x[0:last:2] + (x[1:last:2] - x[0:last:2]) * (wn[1:last:2] / w)
        level += 1

    cols = list(zip(*rows)) if rows else [[]] * 5
    table = ReblockTable(
        block_size=np.asarray(cols[0], dtype=np.int64),
        n_blocks=np.asarray(cols[1], dtype=np.int64),
        mean=np.asarray(cols[2], dtype=float),
        error=np.asarray(cols[3], dtype=float),
        error_of_error=np.asarray(cols[4], dtype=float),
    )
    return dataclasses.replace(table, optimal=optimal_block(table))


def optimal_block(table: ReblockTable) -> int | None:
    """Optimal blocking level (Wolff 2004; Lee et al. 2011; as in pyblock).

    The smallest level whose block size B satisfies
    ``B**3 > 2 n (error_B / error_0)**4``, n the number of samples. Blocks
    must be long compared with the correlation time (error_B / error_0)**2
    but not so long that too few remain; this balances the two.

    Returns None if no level qualifies (series too short); 0 for constant
    data, which has no correlation to remove.
    """
    if table.error.size == 0:
        return None
    err0 = table.error[0]
    if err0 == 0:
        return 0
    B3 = table.block_size.astype(float) ** 3
    ok = np.flatnonzero(B3 > 2 * table.n * (table.error / err0) ** 4)
    return int(ok[0]) if ok.size else None


def jonsson_block(x) -> tuple[int, Estimate]:
    """Automatic blocking with Jonsson's M-test, Phys. Rev. E 98, 043304 (2018).

    For each level k = 0..d-1 (n_k = 2**(d-k) blocks) compute the variance
    s_k (1/n_k normalisation), the lag-1 autocovariance gamma_k about the
    overall mean, and the statistic

        M_j = sum_{k=j}^{d-1} n_k ((n_k - 1) s_k / n_k**2 + gamma_k)**2 / s_k**2,

    which for uncorrelated blocks is asymptotically chi^2 with d - j degrees
    of freedom. The chosen level is the smallest j with M_j below the 99 %
    quantile of that distribution, and var(mean) = s_j / n_j.

    This follows the paper: the (n_k - 1) s_k / n_k^2 term removes the bias
    of gamma_k from subtracting the sample mean, and the quantile for M_j has
    d - j degrees of freedom (as in the reference C++ and R codes; the
    reference Python code omits the bias term and pairs M_j with the
    (j+1)-dof quantile, which only makes it block more than needed).

    Parameters
    ----------
    x : array, shape (n,) or (n_steps, n_walkers)
        2-D input is averaged over walkers first. The test needs a length
        that is a power of two: only the FIRST 2**floor(log2 n) samples are
        used (the tail is discarded), and ``mean`` and ``n`` of the returned
        Estimate refer to those samples.

    Returns
    -------
    level : int
        Chosen blocking level j (block size 2**j).
    Estimate
        Error sqrt(s_j / n_j); error_of_error = error / sqrt(2 (n_j - 1)).
        Warns (series too short) if fewer than 16 blocks remain at level j.
    """
    x, _ = _as_series(x)
    if x.size < 2:
        warnings.warn("jonsson_block: need at least 2 samples; error is NaN",
                      RuntimeWarning, stacklevel=2)
        return 0, _single_sample_estimate(x)
    d = int(np.floor(np.log2(x.size)))
    x = x[: 2**d]
    n = x.size
    mu = x.mean()
    if np.all(x == x[0]):
        return 0, Estimate(float(x[0]), 0.0, 0.0, 0.5, float(n), n)

    nk = 2.0 ** np.arange(d, 0, -1)
    s = np.empty(d)
    gamma = np.empty(d)
    y = x
    for k in range(d):
        dev = y - mu
        s[k] = np.dot(dev, dev) / y.size
        gamma[k] = np.dot(dev[:-1], dev[1:]) / y.size
        y = 0.5 * (y[0::2] + y[1::2])

    with np.errstate(divide="ignore", invalid="ignore"):
        terms = nk * ((nk - 1) * s / nk**2 + gamma) ** 2 / s**2
    # A level with s_k == 0 is exactly constant: nothing left to decorrelate.
    terms = np.where(s > 0, terms, 0.0)
    M = np.cumsum(terms[::-1])[::-1]
    from scipy.stats import chi2  # imported here: scipy.stats costs ~0.7 s at start-up

    q = chi2.ppf(0.99, df=np.arange(d, 0, -1))

    passed = np.flatnonzero(M < q)
    # The last level (two blocks) passes identically once the bias term is
    # included, so "no level passed" is only a safeguard; the useful warning
    # is that too few blocks remain for the error to be trusted.
    j = int(passed[0]) if passed.size else d - 1
    if not passed.size or nk[j] < MIN_BLOCKS:
        warnings.warn(
            f"jonsson_block: M-test chose {int(nk[j])} blocks; the series "
            f"(n={n}) is too short for a reliable error estimate.",
            RuntimeWarning, stacklevel=2)
    err = float(np.sqrt(s[j] / nk[j]))
    tau = 0.5 * err**2 * n / x.var(ddof=1)
    return j, Estimate(mean=float(mu), error=err,
                       error_of_error=err / np.sqrt(2 * (nk[j] - 1)),
                       tau=tau, n_eff=_n_eff(n, tau), n=n)


def _single_sample_estimate(x) -> Estimate:
    return Estimate(float(x[0]), float("nan"), float("nan"), float("nan"),
                    float("nan"), int(x.size))


def estimate(x, method: str = "auto", weights=None) -> Estimate:
    """Mean and standard error of a correlated Monte Carlo series.

    Parameters
    ----------
    x : array, shape (n,) or (n_steps, n_walkers)
        Time series in its own units. For 2-D input (many independent
        walkers or chains) the walkers are averaged at each step first (axis
        1, weighted if ``weights`` has the same shape) and the resulting
        time series is analysed, so correlations between steps are kept.
    method : {"auto", "fp", "jonsson", "acf"}
        "auto"/"fp": Flyvbjerg-Petersen blocking at the optimal block size
        (:func:`reblock`, :func:`optimal_block`). "jonsson": Jonsson's M-test
        (:func:`jonsson_block`, uses the first 2**floor(log2 n) samples).
        "acf": error = sqrt(2 tau var / n) with tau from
        :func:`integrated_autocorr_time`.
    weights : array, optional
        Positive weights; only with "auto"/"fp".

    Returns
    -------
    Estimate. A constant series gives error 0 and tau 0.5 exactly. A series
    too short for the chosen method gives a RuntimeWarning, not an error.
    """
    if method not in ("auto", "fp", "jonsson", "acf"):
        raise ValueError(f"unknown method {method!r}")
    if weights is not None and method not in ("auto", "fp"):
        raise ValueError(f"weights are only supported by method='fp'/'auto', not {method!r}")
    series, w = _as_series(x, weights)
    if series.size < 2:
        warnings.warn("estimate: a single sample has no error estimate; error is NaN",
                      RuntimeWarning, stacklevel=2)
        return _single_sample_estimate(series)

    if method in ("auto", "fp"):
        return _table_estimate(reblock(series, w), stacklevel=3)
    if method == "jonsson":
        return jonsson_block(series)[1]

    n = series.size
    if np.all(series == series[0]):
        return Estimate(float(series[0]), 0.0, 0.0, 0.5, float(n), n)
    tau, tau_err = integrated_autocorr_time(series)
    # Strongly anticorrelated data can drive the windowed sum below zero.
    tau = max(tau, 0.0)
    var = series.var(ddof=1)
    err = float(np.sqrt(2 * tau * var / n))
    return Estimate(mean=float(series.mean()), error=err,
                    error_of_error=0.5 * err * tau_err / tau if tau > 0 else 0.0,
                    tau=float(tau), n_eff=_n_eff(n, tau), n=n)
