"""The result type of every error analysis, and value(error) formatting."""

from __future__ import annotations

import math
from dataclasses import dataclass


def format_value_error(mean: float, error: float) -> str:
    """Format ``mean`` and its standard error in parenthesised-digits notation.

    The error is rounded to one or two significant digits with the Particle
    Data Group rule (leading three digits 100-354: two digits, 355-949: one
    digit, 950-999: round up to 1000 and keep two digits), and the mean is
    rounded to the same decimal place::

        format_value_error(1.531998, 5e-6)    -> '1.531998(5)'
        format_value_error(3.35664, 0.00023)  -> '3.35664(23)'
        format_value_error(1234.5, 23)        -> '1234(23)'
        format_value_error(12345., 560.)      -> '12300(600)'
        format_value_error(2.5e-9, 3.1e-11)   -> '2.500(31)e-09'
        format_value_error(1.5, 0.0)          -> '1.5(exact)'
        format_value_error(1.5, float('nan')) -> '1.5 ± nan'

    Very small or very large numbers (largest of |mean|, error below 1e-3 or
    at least 1e6) are written with a common power-of-ten exponent, because a
    string of leading or trailing zeros hides the precision.
    """
    mean, error = float(mean), float(error)
    if not (math.isfinite(mean) and math.isfinite(error)) or error < 0:
        return f"{mean!r} ± {error!r}"
    if error == 0:
        return f"{mean!r}(exact)"

    scale = max(abs(mean), error)
    exp10 = math.floor(math.log10(scale))
    if exp10 < -3 or exp10 >= 6:
        body = format_value_error(mean / 10.0**exp10, error / 10.0**exp10)
        return f"{body}e{exp10:+03d}"

    e = math.floor(math.log10(error))
    lead = round(error / 10.0**(e - 2))  # three leading digits, 100..1000
    if lead >= 1000:  # log10 rounding put us one decade low
        e, lead = e + 1, round(lead / 10)
    if lead <= 354:
        place = e - 1
    elif lead <= 949:
        place = e
    else:
        place = e  # rounds up to "10" in units of 10**e
    shown = round(error / 10.0**place)
    if place < 0:
        return f"{mean:.{-place}f}({shown})"
    # Integer-valued output: print the error in full so trailing zeros are
    # not ambiguous about which digit the parentheses refer to.
    step = 10**place
    return f"{round(mean / step) * step:.0f}({shown * step})"


@dataclass(frozen=True)
class Estimate:
    """Mean of a (possibly correlated) series with its statistical error.

    Attributes
    ----------
    mean : float
        Sample mean, in the units of the data.
    error : float
        Standard error of ``mean`` (one sigma), units of the data.
    error_of_error : float
        Standard error of ``error`` itself, units of the data.
    tau : float
        Integrated autocorrelation time in units of the sampling interval,
        tau = 1/2 + sum_{t>=1} rho(t), so that error**2 = 2 tau var / n.
        0.5 for uncorrelated data.
    n_eff : float
        Effective number of independent samples, n / (2 tau).
    n : int
        Number of samples (time steps) that entered the analysis.

    ``str(est)`` gives just the value, e.g. ``1.531998(5)``; ``repr(est)``
    adds tau and n_eff.
    """

    mean: float
    error: float
    error_of_error: float
    tau: float
    n_eff: float
    n: int

    def __str__(self) -> str:
        return format_value_error(self.mean, self.error)

    def __repr__(self) -> str:
        return (f"Estimate({format_value_error(self.mean, self.error)}, "
                f"τ={self.tau:.1f}, n_eff={self.n_eff:.2g})")

    def to_dict(self) -> dict:
        """Plain-Python dict (floats and an int, no numpy scalars) for JSON."""
        return {
            "mean": float(self.mean),
            "error": float(self.error),
            "error_of_error": float(self.error_of_error),
            "tau": float(self.tau),
            "n_eff": float(self.n_eff),
            "n": int(self.n),
        }
