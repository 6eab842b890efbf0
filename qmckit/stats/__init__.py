"""Error analysis of serially correlated Monte Carlo data.

    >>> from qmckit.stats import estimate
    >>> est = estimate(energies)            # shape (n_steps,) or (n_steps, n_walkers)
    >>> print(repr(est))                    # Estimate(-0.49987(12), τ=4.1, n_eff=2.3e+03)

Methods: Flyvbjerg-Petersen blocking with the Wolff/Lee optimal block
(default), Jonsson's automatic M-test blocking, and the integrated
autocorrelation time with Sokal's window.
"""

from .autocorr import autocorrelation, integrated_autocorr_time
from .blocking import ReblockTable, ShortSeriesWarning, estimate, jonsson_block, optimal_block, reblock
from .estimate import Estimate, format_value_error
from .extrapolate import Extrapolation, best_extrapolation, extrapolate, plot_extrapolation
from .finite_size import canonical_shift, density_curvature, structure_factor_at_zero

__all__ = [
    "Estimate",
    "Extrapolation",
    "best_extrapolation",
    "canonical_shift",
    "density_curvature",
    "extrapolate",
    "plot_extrapolation",
    "ReblockTable",
    "ShortSeriesWarning",
    "autocorrelation",
    "estimate",
    "format_value_error",
    "integrated_autocorr_time",
    "jonsson_block",
    "optimal_block",
    "reblock",
    "structure_factor_at_zero",
]
