"""Conformance suite: every registered system, every example parameter set, the same checks.

A system registered in :data:`qmckit.systems.SYSTEMS` is tested here without a line of its own:

* the kernels' ∇ ln ψ against finite differences of ``log_psi``, and the kinetic energy E_L − V
  against −½ (ħ²/m) Σ_i (∇_i² ln ψ + |∇_i ln ψ|²) from finite differences (continuum systems);
* ``test_move``'s log-ratio against the difference of ``log_psi``, its new gradient (and, with
  ``green_all``, study 002's all-particle drift change) against a rebuilt cache;
* the incremental cache after many accepted moves against a full recompute (through the protocol:
  gradients and move ratios read from both caches);
* zero variance at the exact energy for each declared ``exact_cases`` entry;
* a checkpoint round trip: a run paused after its first block and resumed from the file ends with
  the numbers of an uninterrupted run (VMC, and DMC for continuum systems);
* a bad value of every bounded or enumerated parameter gives one ValueError naming it, and the CLI
  exits 2 with one line naming the flag.

Fourth-order central differences: h = 1e-4 (gradient) and 1e-3 (Laplacian) in the system's length
unit times its length scale (``density_range()/5``): the differences agreed with the kernels to 2e-10
(gradients) and 6e-8 (kinetic energy, relative) on every example, so the tolerances are 1e-8 and 1e-6.
"""
from __future__ import annotations

import io
import math
import threading
from contextlib import redirect_stderr

import numpy as np
import pytest

from qmckit import Unsupported, cli
from qmckit.methods.vmc import VMC
from qmckit.runs import RunConfig, make_run, resume_run
from qmckit.systems import SYSTEMS, make_system
from qmckit.walkers import Walkers

import _user_oscillator  # noqa: F401,E402  (registers a qmckit.UserSystem: the suite runs it like a built-in system)

CONTINUUM = [(name, k) for name, cls in SYSTEMS.items() if cls.kind == "continuum" for k in range(len(cls.examples))]
EXACT = [(name, k) for name, cls in SYSTEMS.items() for k in range(len(cls.exact_cases))]
ALL = [(name, k) for name, cls in SYSTEMS.items() for k in range(len(cls.examples))]


def example(name, k):
    return make_system(name, **SYSTEMS[name].examples[k])


def equilibrated(system, walkers=2, sweeps=30, seed=5):
    """A VMC driver whose walkers were moved by ``sweeps`` drift sweeps (caches incremental, not rebuilt)."""
    rng = np.random.default_rng(seed)
    start = Walkers.from_positions(system.initial_positions(walkers, rng), np.random.SeedSequence(seed),
                                   system.cache_size())
    scale = system.density_range() / 5.0
    vmc = VMC(system, start, sampler="drift", dt=0.05 * scale ** 2 / system.hbar2_over_m)
    vmc.sweep(sweeps, measure=False)
    return vmc, scale


def fd_gradient_and_laplacian(system, R, i, scale):
    """∇_i ln ψ and ∇_i² ln ψ at R by fourth-order central differences of ``log_psi``."""
    p = system.kernel_params
    f0 = system.kernels.log_psi(R, p)
    grad = np.empty(system.dim)
    lap = 0.0
    for k in range(system.dim):
        def f(h):
            moved = R.copy()
            moved[i, k] += h
            return system.kernels.log_psi(moved, p)
        h = 1e-4 * scale
        grad[k] = (-f(2 * h) + 8 * f(h) - 8 * f(-h) + f(-2 * h)) / (12 * h)
        h = 1e-3 * scale
        lap += (-f(2 * h) + 16 * f(h) - 30 * f0 + 16 * f(-h) - f(-2 * h)) / (12 * h * h)
    return grad, lap


@pytest.mark.parametrize("name, k", CONTINUUM)
def test_gradient_and_kinetic_energy_match_finite_differences(name, k):
    system = example(name, k)
    vmc, scale = equilibrated(system)
    kern, p = system.kernels, system.kernel_params
    for w in range(vmc.walkers.n_walkers):
        R = vmc.walkers.positions[w].copy()
        cache = np.zeros(system.cache_size())
        kern.recompute(R, p, cache)
        laplacian_sum = 0.0
        for i in range(system.n_particles):
            fd_grad, fd_lap = fd_gradient_and_laplacian(system, R, i, scale)
            grad = np.empty(system.dim)
            kern.gradient(R, p, cache, i, grad)
            atol = 1e-8 * (1.0 + np.abs(fd_grad).max())  # measured: ≤ 2e-10
            assert np.allclose(grad, fd_grad, rtol=0, atol=atol), (i, grad, fd_grad)
            laplacian_sum += fd_lap + fd_grad @ fd_grad
        kinetic_fd = -0.5 * system.hbar2_over_m * laplacian_sum
        kinetic = kern.local_energy(R, p, cache) - kern.potential(R, p)
        assert kinetic == pytest.approx(kinetic_fd, abs=1e-6 * (1.0 + abs(kinetic_fd))), (kinetic, kinetic_fd)  # ≤ 6e-8


@pytest.mark.parametrize("name, k", CONTINUUM)
def test_parameter_derivatives_match_differences_of_log_psi_and_local_energy(name, k):
    """∂ ln ψ/∂p and ∂E_L/∂p of every variational parameter (the optimisers' input) against a fourth-order central
    difference of ``evaluate`` with a step 20× the derivatives' own; exact (declared) ones against it too."""
    from qmckit.methods.optimize import evaluate, with_parameter
    from qmckit.methods.parameter_derivatives import parameter_derivatives, variational_names

    system = example(name, k)
    names = variational_names(system)
    if not names:
        pytest.skip(f"{name} has no variational parameters")
    vmc, _ = equilibrated(system, walkers=4)
    configs = vmc.walkers.positions.copy()
    d = parameter_derivatives(system, configs, names)
    assert set(d.analytic) == set(system.capabilities.parameter_derivatives) & set(names)
    for j, key in enumerate(names):
        value = system.params.as_dict()[key]
        h = 2e-4 * max(abs(value), 1.0)
        if value - 2 * h < 0:
            continue  # at a bound (β = 0): the derivatives use a one-sided difference there
        at = [evaluate(with_parameter(system, key, value + m * h), configs) for m in (-2, -1, 1, 2)]
        fourth = [(-at[3][q] + 8 * at[2][q] - 8 * at[1][q] + at[0][q]) / (12 * h) for q in (0, 1)]
        assert np.allclose(d.d_log_psi[:, j], fourth[0], rtol=1e-6, atol=1e-7 * (1 + np.abs(fourth[0]).max())), key
        assert np.allclose(d.d_local_energy[:, j], fourth[1], rtol=1e-5,
                           atol=1e-6 * (1 + np.abs(fourth[1]).max())), key


@pytest.mark.parametrize("name, k", CONTINUUM)
def test_move_ratio_and_new_gradient_match_log_psi_and_a_rebuilt_cache(name, k):
    system = example(name, k)
    vmc, scale = equilibrated(system, walkers=1)
    kern, p = system.kernels, system.kernel_params
    R = vmc.walkers.positions[0].copy()
    cache = np.zeros(system.cache_size())
    kern.recompute(R, p, cache)
    rng = np.random.default_rng(7)
    finite = 0
    for i in range(system.n_particles):
        r_new = R[i] + 0.1 * scale * rng.normal(size=system.dim)
        g_new = np.empty(system.dim)
        log_ratio = kern.test_move(R, p, cache, i, r_new, g_new)
        moved = R.copy()
        moved[i] = r_new
        expected = kern.log_psi(moved, p) - kern.log_psi(R, p)
        if not np.isfinite(expected):
            assert log_ratio == -np.inf  # a forbidden move (hard-core overlap) is signalled, never accepted
            continue
        finite += 1
        assert log_ratio == pytest.approx(expected, abs=1e-9 * (1 + abs(expected)))
        fresh = np.zeros_like(cache)
        kern.recompute(moved, p, fresh)
        g_ref = np.empty(system.dim)
        kern.gradient(moved, p, fresh, i, g_ref)
        assert np.allclose(g_new, g_ref, rtol=1e-9, atol=1e-9 * (1 + np.abs(g_ref).max()))
        if system.capabilities.green_all:  # study 002's all-particle Green's-function term, against both caches
            change, a, b = 0.0, np.empty(system.dim), np.empty(system.dim)
            for j in range(system.n_particles):
                if j != i:
                    kern.gradient(R, p, cache, j, a)
                    kern.gradient(moved, p, fresh, j, b)
                    change += a @ a - b @ b
            dt = 0.01
            assert kern.other_drift_change(R, p, cache, i, r_new, dt) == pytest.approx(0.5 * dt * change, rel=1e-8,
                                                                                       abs=1e-9)
    assert finite >= system.n_particles // 2


@pytest.mark.parametrize("name, k", CONTINUUM)
def test_incremental_cache_agrees_with_a_full_recompute_after_many_moves(name, k):
    system = example(name, k)
    sweeps = max(20, math.ceil(300 / system.n_particles))
    vmc, scale = equilibrated(system, walkers=2, sweeps=sweeps)
    kern, p = system.kernels, system.kernel_params
    rng = np.random.default_rng(3)
    for w in range(2):
        R = vmc.walkers.positions[w]
        incremental = vmc.walkers.caches[w].copy()
        fresh = np.zeros_like(incremental)
        kern.recompute(R, p, fresh)
        for i in range(system.n_particles):
            a, b = np.empty(system.dim), np.empty(system.dim)
            kern.gradient(R, p, incremental, i, a)
            kern.gradient(R, p, fresh, i, b)
            assert np.allclose(a, b, rtol=1e-9, atol=1e-9 * (1 + np.abs(b).max())), (i, a, b)
            r_new = R[i] + 0.1 * scale * rng.normal(size=system.dim)
            ratio_a = kern.test_move(R, p, incremental.copy(), i, r_new, a)
            ratio_b = kern.test_move(R, p, fresh.copy(), i, r_new, b)
            assert ratio_a == pytest.approx(ratio_b, abs=1e-9 * (1 + abs(ratio_b))) or ratio_a == ratio_b


@pytest.mark.parametrize("name, k", EXACT)
def test_exact_cases_have_zero_variance_at_the_exact_energy(name, k):
    params, energy = SYSTEMS[name].exact_cases[k]
    result = make_run(RunConfig(system=name, params=params, walkers=8, steps=40, equilibration=20, dt=0.02,
                                seed=2)).run()
    estimate = result["estimates"][SYSTEMS[name].energy_key]
    assert estimate["mean"] == pytest.approx(energy, abs=1e-9 * (1 + abs(energy)))
    assert result["estimates"]["energy_variance"]["mean"] < 1e-18 * (1 + energy ** 2)
    assert result["acceptance"] > 0.5


@pytest.mark.parametrize("method", ["vmc", "dmc"])
@pytest.mark.parametrize("name, k", ALL)
def test_checkpoint_round_trip_gives_the_uninterrupted_numbers(name, k, method, tmp_path):
    cls = SYSTEMS[name]
    if cls.kind == "lattice" and method == "dmc":
        with pytest.raises(Unsupported, match="method 'dmc'"):
            RunConfig(system=name, params=cls.examples[k], method=method)
        pytest.skip("lattice systems run VMC chains only")
    dt = {} if cls.kind == "lattice" else dict(dt=0.001 if name == "helium" else 0.01)
    config = RunConfig(system=name, params=cls.examples[k], method=method, walkers=4, steps=12, block=4,
                       equilibration=6, dmc_equilibration=3 if method == "dmc" else None, seed=4, **dt)
    # the one RunConfig and the one Run: make_run and resume_run serve continuum walkers and lattice chains alike
    whole = make_run(config).run()
    paused = make_run(config, checkpoint_path=tmp_path / "run.h5")
    stop = threading.Event()
    for done, _ in paused.blocks(stop):
        stop.set()  # pause after the first block: its checkpoint is on disk
    assert paused.blocks_done == 1
    resumed = resume_run(tmp_path / "run.h5").run()
    for key in ("estimates", "acceptance"):
        assert resumed[key] == whole[key]


def _bad_values(info):
    """Values of a declared parameter that its metadata forbids."""
    s = info.spec
    if info.kind is bool:
        return ["yes"]
    if s.choices is not None:
        return ["no-such-choice"]
    if info.kind is str:
        return [""]
    out = ["text", float("nan")]
    if s.low is not None:
        out.append(s.low if s.low_open else s.low - 1)
    if s.high is not None:
        out.append(s.high if s.high_open else s.high + 1)
    return out


BAD = [(name, info.name, value) for name, cls in SYSTEMS.items() for info in cls.parameters()
       for value in _bad_values(info)]


@pytest.mark.parametrize("name, parameter, value", BAD, ids=[f"{n}-{p}-{v!r}" for n, p, v in BAD])
def test_a_bad_parameter_gives_one_error_naming_it(name, parameter, value):
    with pytest.raises(ValueError, match=rf"^{parameter} must be"):
        make_system(name, **{parameter: value})


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_the_cli_refuses_a_bad_parameter_with_one_line_and_exit_2(name):
    info = next(i for i in SYSTEMS[name].parameters() if i.kind in (int, float) and i.spec.low is not None)
    bad = info.spec.low if info.spec.low_open else info.spec.low - 1
    err = io.StringIO()
    with redirect_stderr(err):
        code = cli.main(["run", name, info.flag, str(bad), "--steps", "5"])
    lines = err.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1 and info.flag in lines[0], lines
