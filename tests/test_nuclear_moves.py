"""Umrigar–Nightingale–Runge moves near nuclei (qmckit.backends.nuclear_moves, RunConfig(nuclear_moves=True)).

The move must be exact (its Green's function is a normalised density and the proposals follow it, so VMC still
samples |ψ|²), and it must do what it is for: a much smaller DMC time-step error for an all-electron atom.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numba as nb
import numpy as np
import pytest

from qmckit import rng
from qmckit.backends.nuclear_moves import nuclear_drift, nuclear_log_green, nuclear_propose
from qmckit.runs import RunConfig, make_run

REPO = Path(__file__).resolve().parents[1]
NUCLEI = np.array([[0.0, 0.0, 0.0, 10.0], [1.8, 0.0, 0.0, 1.0]])  # a Ne-like and an H-like nucleus


@nb.njit
def _proposals(states, r, v, dt, nuclei, n, out):
    drifted = np.empty(3)
    for m in range(n):
        k, p, zeta = nuclear_drift(r, v, dt, nuclei, drifted)
        nuclear_propose(states, 0, drifted, k, p, zeta, nuclei, dt, out[m])
    return k, p, zeta


@nb.njit
def _log_green_at(points, r, v, dt, nuclei, out):
    drifted = np.empty(3)
    k, p, zeta = nuclear_drift(r, v, dt, nuclei, drifted)
    for m in range(points.shape[0]):
        out[m] = nuclear_log_green(points[m], drifted, k, p, zeta, nuclei, dt)


# electrons near the heavy nucleus with the drift into it (a large p), beside it, and far from both (p ≈ 0)
CASES = [(np.array([0.05, 0.02, 0.0]), np.array([-9.0, -3.0, 0.5]), 0.05),
         (np.array([0.3, -0.2, 0.1]), np.array([-2.0, 1.0, 0.0]), 0.02),
         (np.array([3.0, 2.0, -1.0]), np.array([-0.4, -0.3, 0.2]), 0.1)]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_green_function_is_the_density_the_proposals_follow(case):
    """∫ G = 1 and E_G[f] for the sampled proposals equal the same integrals by importance sampling from a wide
    Gaussian (within 5 standard errors): a wrong normalisation, a wrong p or ζ, or a proposal that does not
    follow G fails."""
    r, v, dt = CASES[case]
    n = 200_000
    states = rng.seed_states(case, 1)
    samples = np.empty((n, 3))
    k, p, zeta = _proposals(states, r, v, dt, NUCLEI, n, samples)
    if case == 0:
        assert p > 0.3  # the 1s part matters here
    # importance sampling from a Gaussian around the nucleus and the electron, wide enough to cover both parts
    gen = np.random.default_rng(case)
    centre, width = 0.5 * (r + NUCLEI[k, :3]), 0.6 + np.linalg.norm(r - NUCLEI[k, :3])
    q_points = centre + width * gen.normal(size=(n, 3))
    log_q = -0.5 * np.sum(((q_points - centre) / width) ** 2, axis=1) - 1.5 * math.log(2 * math.pi * width ** 2)
    log_g = np.empty(n)
    _log_green_at(q_points, r, v, dt, NUCLEI, log_g)
    ratio = np.exp(log_g - log_q)
    assert abs(ratio.mean() - 1.0) < 5 * ratio.std() / math.sqrt(n)
    for f in (lambda x: np.linalg.norm(x - NUCLEI[k, :3], axis=1), lambda x: x[:, 0], lambda x: x[:, 1] * x[:, 2]):
        sampled, weighted = f(samples), ratio * f(q_points)
        err = math.hypot(sampled.std() / math.sqrt(n), weighted.std() / math.sqrt(n))
        assert abs(sampled.mean() - weighted.mean()) < 5 * err, (case, sampled.mean(), weighted.mean(), err)


def _he(method, nuclear_moves, dt, seed, **kw):
    cfg = RunConfig(system="atom", params=dict(element="He"), method=method, walkers=1000, dt=dt, seed=seed,
                    backend="cpu", nuclear_moves=nuclear_moves, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_run(cfg).run()


def test_vmc_with_nuclear_moves_samples_the_same_distribution():
    """He VMC (study 002's ψ_T) with and without the moves: the same energy within 4σ, and the moves accept more
    (the point of them near the nucleus)."""
    plain, unr = _he("vmc", False, 0.1, 3, steps=1500), _he("vmc", True, 0.1, 4, steps=1500)
    a, b = plain["estimates"]["energy"], unr["estimates"]["energy"]
    assert abs(a["mean"] - b["mean"]) < 4 * math.hypot(a["error"], b["error"]), (a, b)
    assert unr["acceptance"] > plain["acceptance"] + 0.03


def _reference(name: str) -> dict:
    """Δτ → point of a long CPU series (``python benchmarks/dmc_time_step_reference.py [--nuclear-moves]``)."""
    return {p["dt"]: p for p in json.loads((REPO / "data" / name).read_text())["points"]}


def test_dmc_time_step_error_is_much_smaller_with_nuclear_moves():
    """He DMC at Δτ = 0.1 (ψ_T without the e–n cusp) with the moves: within 3σ of the long series with the moves
    (data/dmc_time_step_he_unr.json, whose E(Δτ) slope is −0.018(2) against the plain moves' −0.108(3)) and far
    above the plain moves' E(0.1), 0.007 E_h lower (data/dmc_time_step_he.json)."""
    unr, plain = _reference("dmc_time_step_he_unr.json")[0.1], _reference("dmc_time_step_he.json")[0.1]
    e = _he("dmc", True, 0.1, 5, steps=600, feedback_time=1.0)["estimates"]["energy"]
    assert abs(e["mean"] - unr["energy"]) < 3 * math.hypot(e["error"], unr["error"]), (e, unr)
    assert e["mean"] - plain["energy"] > 8 * math.hypot(e["error"], plain["error"]), (e, plain)


@pytest.mark.parametrize("argv, needle", [(["bec"], "--nuclear-moves need nuclei, and system 'bec' has none"),
                                          (["atom", "--sampler", "brute"], "--nuclear-moves go with the exact drift"),
                                          (["atom", "--green", "all"], "--nuclear-moves go with the exact drift")])
def test_unsupported_combinations_are_refused_in_one_line(argv, needle):
    proc = subprocess.run([sys.executable, "-m", "qmckit", "run", *argv, "--nuclear-moves", "--steps", "10"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
