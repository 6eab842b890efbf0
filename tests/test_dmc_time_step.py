"""DMC's time-step error, measured: a short E(Δτ) series at three Δτ against the long reference series.

The He atom with study 002's ψ_T (no e–n cusp factor, so the time-step error is large: E moves by about
0.008 E_h between Δτ = 0.1 and 0.025) on the CPU backend, τ_fb = 1 (honest error bars), branching with
τ_eff. ``data/dmc_time_step_he.json`` holds the reference (``python benchmarks/dmc_time_step_reference.py``,
20× the work of this test). Each point, and the slope and intercept of the line through the three points (unweighted:
the same map of the points for both series, since E(Δτ) is curved here), must agree with the reference within 3σ;
a propagator or branching change that moves E(Δτ) by a few thousandths of a
hartree at any Δτ fails, and so does a DMC that stayed at the VMC energy (0.013 E_h above).

The fit's intercept over Δτ = 0.1 … 0.025 is not the Δτ → 0 limit (E(Δτ) bends there; the GPU series at
Δτ = 0.01 … 0.0025 and τ_fb = 1 is flat and ends at −2.90370(19) against the exact −2.903724:
benchmarks/results/atom_dmc_he_h200_fb1_unr_2026-11-27.md); the test compares like with like.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from dmc_time_step_reference import DTS, linear_fit, series  # noqa: E402

REFERENCE = json.loads((REPO / "data" / "dmc_time_step_he.json").read_text())
VMC_ENERGY = -2.8903  # study 002's He ψ_T: qmckit's VMC, -2.89030(28) (data/atoms.json)


@pytest.fixture(scope="module")
def short_series():
    points = series(DTS, walkers=2000, time_units=100.0, seed=11)
    return points, linear_fit(points)


def test_each_point_agrees_with_the_long_reference(short_series):
    points, _ = short_series
    for p, ref in zip(points, REFERENCE["points"]):
        assert p["dt"] == ref["dt"]
        assert abs(p["energy"] - ref["energy"]) < 3 * math.hypot(p["error"], ref["error"]), (p, ref)
        assert p["error"] < 0.003  # resolves the 0.008 E_h time-step error across the series


def test_slope_and_intercept_agree_with_the_reference(short_series):
    _, fit = short_series
    ref = REFERENCE["linear_fit"]
    assert abs(fit["slope"] - ref["slope"]) < 3 * math.hypot(fit["slope_error"], ref["slope_error"]), (fit, ref)
    assert abs(fit["intercept"] - ref["intercept"]) < 3 * math.hypot(fit["intercept_error"], ref["intercept_error"])
    # the test resolves what it guards: a time-step error many error bars from zero, a DMC far below VMC
    assert abs(fit["slope"]) > 4 * fit["slope_error"], fit
    assert VMC_ENERGY - fit["intercept"] > 10 * fit["intercept_error"], fit


def test_the_effective_time_step_follows_the_acceptance(short_series):
    """τ_eff/Δτ falls below one as rejections grow with Δτ (about 0.83 at Δτ = 0.1 for He)."""
    points, _ = short_series
    ratios = np.array([p["tau_eff"] / p["dt"] for p in points])
    assert np.all(np.diff(ratios) > 0) and ratios[0] < 0.9 and ratios[-1] < 1.0, ratios
    for p, ref in zip(points, REFERENCE["points"]):
        assert p["tau_eff"] == pytest.approx(ref["tau_eff"], rel=2e-3)
