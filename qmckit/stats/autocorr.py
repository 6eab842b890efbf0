"""Autocorrelation function and integrated autocorrelation time.

Reference: A. D. Sokal, "Monte Carlo Methods in Statistical Mechanics:
Foundations and New Algorithms" (1996); N. Madras and A. D. Sokal,
J. Stat. Phys. 50, 109 (1988).
"""

from __future__ import annotations

import warnings

import numpy as np

MIN_LENGTH_IN_TAU = 100


def _series(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"x must be 1-D with at least 2 samples, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains non-finite values")
    return x


def autocorrelation(x, max_lag: int | None = None) -> np.ndarray:
    """Normalised autocorrelation function rho(t), t = 0..max_lag.

    Uses the FFT of the zero-padded series (O(n log n)) and the standard
    biased estimator C(t) = (1/n) sum_i (x_i - m)(x_{i+t} - m), whose 1/n
    rather than 1/(n-t) keeps the noise at large lags small.

    Parameters
    ----------
    x : array, shape (n,)
    max_lag : int, optional
        Largest lag returned; default n - 1.

    Returns
    -------
    rho : array, shape (max_lag + 1,), rho[0] == 1. A constant series is
    treated as uncorrelated (rho[t>0] = 0).
    """
    x = _series(x)
    n = x.size
    max_lag = n - 1 if max_lag is None else int(min(max_lag, n - 1))
    if max_lag < 0:
        raise ValueError("max_lag must be non-negative")
    dev = x - x.mean()
    # Padding to >= 2n turns the FFT's circular correlation into a linear one.
    nfft = 1 << int(2 * n - 1).bit_length()  # zero padding to a power of two ≥ 2n avoids wrap-around
    f = np.fft.rfft(dev, n=nfft)
    acov = np.fft.irfft(f * np.conj(f), n=nfft)[: max_lag + 1]
    rho = np.zeros(max_lag + 1)
    rho[0] = 1.0
    if acov[0] > 0 and not np.all(x == x[0]):
        rho = acov / acov[0]
    return rho


def integrated_autocorr_time(x, c: float = 5.0) -> tuple[float, float]:
    """Integrated autocorrelation time with Sokal's automatic window.

    tau(M) = 1/2 + sum_{t=1}^{M} rho(t), in units of the sampling interval
    (0.5 for uncorrelated data; error**2 = 2 tau var / n). The window M is
    the smallest with M >= c tau(M): long enough to capture the decay of
    rho, short enough not to sum pure noise. If no M qualifies (series
    shorter than ~c tau) the largest lag is used. Warns (RuntimeWarning) if
    n < 100 tau, where tau itself is unreliable and biased low.

    Parameters
    ----------
    x : array, shape (n,)
    c : float
        Window constant; 5 is adequate for roughly exponential decay.

    Returns
    -------
    tau : float
    tau_error : float
        Madras-Sokal estimate tau * sqrt(2 (2M + 1) / n).
    """
    x = _series(x)
    n = x.size
    if np.all(x == x[0]):
        return 0.5, 0.0
    rho = autocorrelation(x)
    taus = np.cumsum(rho) - 0.5  # taus[M] = 1/2 + sum_{t=1}^{M} rho(t)
    ok = np.flatnonzero(np.arange(n) >= c * taus)
    M = int(ok[0]) if ok.size else n - 1
    tau = float(taus[M])
    # The estimate of tau needs many correlation times (emcee uses the same
    # bound, 50 of its 2*tau); short series give a biased-low tau.
    if not ok.size or n < MIN_LENGTH_IN_TAU * tau:
        warnings.warn(
            f"integrated_autocorr_time: the series (n={n}) is too short for a "
            f"reliable estimate (tau ~ {tau:.3g}, want n > {MIN_LENGTH_IN_TAU} tau).",
            RuntimeWarning, stacklevel=2)
    return tau, tau * float(np.sqrt(2 * (2 * M + 1) / n))
