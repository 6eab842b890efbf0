"""DMC's population-control bias, measured: E at two target populations against the long reference E(1/W).

The population feedback correlates the branching weights with the energy and biases DMC by about a/W. For one
boson in an isotropic trap with a poor Gaussian ψ_T (α = 0.3: VMC 1.7, exact 1.5 ħω) and a tight leash
(τ_fb = 0.05) the bias at W = 10 is about 0.01 ħω, resolved in seconds. ``data/dmc_population_bias_toy.json``
holds the reference (``python benchmarks/dmc_population_bias.py --system toy``: W = 10 … 1000, 10× the work of
this test per point). The test fails if the population does not follow its target, if the small-W bias is not
resolved, or if its size differs from the reference's a(1/10 − 1/1000) by more than 3σ.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from dmc_population_bias import point  # noqa: E402

REFERENCE = json.loads((REPO / "data" / "dmc_population_bias_toy.json").read_text())
FEEDBACK = 0.05


@pytest.fixture(scope="module")
def small_and_large():
    return {W: point("toy", W, FEEDBACK, 2_000_000, seed, "cpu") for W, seed in ((10, 71), (1000, 72))}


def test_the_population_follows_its_target(small_and_large):
    for W, r in small_and_large.items():
        assert abs(r["population"] - W) < 0.02 * W, r


def test_the_small_population_bias_is_resolved_and_has_the_reference_size(small_and_large):
    small, large = small_and_large[10], small_and_large[1000]
    diff, err = small["energy"] - large["energy"], math.hypot(small["error"], large["error"])
    fit = REFERENCE["fits"][str(FEEDBACK)]
    predicted = fit["slope"] * (1 / 10 - 1 / 1000)
    predicted_err = fit["slope_error"] * (1 / 10 - 1 / 1000)
    assert abs(diff) > 3 * err, (diff, err)  # the test resolves the bias it guards
    assert abs(diff - predicted) < 3 * math.hypot(err, predicted_err), (diff, err, predicted, predicted_err)


def test_the_large_population_lies_at_the_reference_limit(small_and_large):
    """W = 1000 carries a bias of a/1000, a tenth of its error bar: it must sit at the reference E₀ (which lies at
    the exact 1.5 ħω up to the time-step error of Δτ = 0.05)."""
    large, fit = small_and_large[1000], REFERENCE["fits"][str(FEEDBACK)]
    assert abs(large["energy"] - fit["intercept"]) < 3 * math.hypot(large["error"], fit["intercept_error"])
