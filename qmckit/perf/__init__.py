"""Performance models and measurement: the modified Amdahl law and load masking of study 004::

    from qmckit.perf import amdahl_masked, amdahl_synchronous, saturation_point
    amdahl_masked(65, R=0.02, S=0.005), amdahl_synchronous(65, R=0.02, S=0.005)   # 50.0, 25.0
    saturation_point(0.02, 0.005)                                                # M* = 65
    from qmckit.perf import run_pipeline, PhaseTimer
    result = run_pipeline(generate, analyse, n_writeouts=100, mode="async")      # nogil kernels overlap

Modules:

* :mod:`~qmckit.perf.amdahl` — Eqs. 16–18 (synchronous and masked accelerations), footnote 5 (a
  D-thread CPU side), the saturation point M* = P/(R − S), and :func:`fit_phases`.
* :mod:`~qmckit.perf.masking` — Eqs. 10–15: the error of an analysis every m macroupdates, step
  times, time to error, optimal periods √(2 m_c α) and α, penalties and their bounds, and the fits
  of Fig. 3 (``a + b/m`` and the masking threshold).
* :mod:`~qmckit.perf.pipeline` — a producer/consumer pipeline (sync or async) and the m-scan
  experiment of Fig. 3 for any ``generate_factory(m)`` and ``analyse``.
* :mod:`~qmckit.perf.timers` — :class:`PhaseTimer`.
* :mod:`~qmckit.perf.run_profile` — every run's phase timers and its result's ``profile``.
* :mod:`~qmckit.perf.run_model` — :func:`report`: the modified Amdahl law of one run's profile.
* :mod:`~qmckit.perf.synthetic` — nogil workloads of chosen cost (tests and notebooks).
* :mod:`~qmckit.perf.plots` — Fig. 1, penalty curves and Fig. 3 plots.
"""
from .amdahl import (Phases, amdahl, amdahl_complete_masking, amdahl_masked, amdahl_synchronous, amdahl_threads,
                     cpu_resident_fraction, fit_phases, masking_ratio, max_masked, max_synchronous,
                     parallel_fraction, saturation_point, workers_for_fraction_of_max)
from .masking import (InverseFit, ThresholdFit, error_factor, error_factor_exponential, fit_a_plus_b_over_m,
                      fit_masked_threshold, optimal_period_masked, optimal_period_sequential, penalty_bound_masked,
                      penalty_bound_sequential, penalty_masked, penalty_sequential, statistical_error,
                      step_time_masked, step_time_sequential, time_to_error, total_time_masked,
                      total_time_sequential)
from .pipeline import MaskingScan, PipelineResult, masking_scan, measure_phase_times, run_pipeline
from .run_model import RunModel, report
from .timers import PhaseTimer

__all__ = [
    # amdahl
    "Phases", "amdahl", "amdahl_complete_masking", "amdahl_masked", "amdahl_synchronous", "amdahl_threads",
    "cpu_resident_fraction", "fit_phases", "masking_ratio", "max_masked", "max_synchronous", "parallel_fraction",
    "saturation_point", "workers_for_fraction_of_max",
    # masking
    "InverseFit", "ThresholdFit", "error_factor", "error_factor_exponential", "fit_a_plus_b_over_m",
    "fit_masked_threshold", "optimal_period_masked", "optimal_period_sequential", "penalty_bound_masked",
    "penalty_bound_sequential", "penalty_masked", "penalty_sequential", "statistical_error", "step_time_masked",
    "step_time_sequential", "time_to_error", "total_time_masked", "total_time_sequential",
    # pipeline, timers
    "MaskingScan", "PipelineResult", "masking_scan", "measure_phase_times", "run_pipeline", "PhaseTimer",
    # a run's own profile and model
    "RunModel", "report",
]
