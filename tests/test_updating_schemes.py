"""Updating schemes of study 003 on the free-electron Slater–Jastrow model
(qmckit.studies.updating_schemes): exact answers (zero-variance kinetic energy, S(G) by counting checked
by enumeration, Ewald/Madelung), the kernels against plain-numpy implementations of Eqs. 9–11 fed the
same random numbers, Sherman–Morrison drift, and the bias of each scheme against the exact answer
(particle-by-particle and Q.S. reading C exact, the literal reading A biased).

Sizes are tiny (7 electrons per spin) so the file, numba compilation included, runs in well under 30 s.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from qmckit.stats import estimate
from qmckit.studies import updating_schemes as us

SMALL = us.FreeElectronModel(n_per_spin=7)  # N = 14, r_s = 2 bohr, bare determinant: exact answers
STEP = 1.5  # bohr: ≈ 50 % particle-by-particle acceptance for SMALL
SWEEPS, EQUIL, EVERY = 12000, 300, 3  # 4000 measurements per chain, a fraction of a second each


@pytest.fixture(scope="module")
def runs():
    """One chain per scheme on SMALL, fixed seeds, independent random streams, equal cost."""
    return {s: us.run_scheme(SMALL, s, STEP if s != "cbc" else 0.6, SWEEPS, EQUIL, EVERY, seed=100 + k)
            for k, s in enumerate(us.SCHEMES)}


def _z(series, exact):
    e = estimate(series)
    return (e.mean - exact) / e.error, e


# ------------------------------------------------------------------ exact answers
def test_closed_shells_and_model_validation():
    assert us.closed_shells(130) == [1, 7, 19, 27, 33, 57, 81, 93, 123]
    with pytest.raises(ValueError, match="n_per_spin"):
        us.FreeElectronModel(n_per_spin=8)
    with pytest.raises(ValueError, match="jastrow_rc"):
        us.FreeElectronModel(n_per_spin=7, jastrow_rc=100.0)
    with pytest.raises(ValueError, match="scheme"):
        us.Chain(SMALL, "jacobi", 1.0)


def test_structure_factor_formula_by_enumeration():
    """S(G) = 1 − c(G)/n against a direct average of |ρ_G|²/n over |det|² for 3 electrons (k = 0, b1, b2,
    not a closed shell) on a 4³ grid per electron: every integrand is a trigonometric polynomial of degree
    ≤ 3 per axis, so the grid average is the exact integral."""
    occ = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    gs = np.array([[1, 0, 0], [-1, 0, 0], [1, -1, 0], [-1, 1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1], [1, 1, 1]])
    n = 4
    u = np.stack(np.meshgrid(*(np.arange(n) / n,) * 3, indexing="ij"), -1).reshape(-1, 3)  # fractional
    phase = np.exp(2j * np.pi * u @ occ.T)  # (64, 3): orbital k at grid point
    num = np.zeros(len(gs))
    den = 0.0
    eg = np.exp(2j * np.pi * u @ gs.T)  # (64, M)
    for a in range(len(u)):  # electron 1 fixed at grid point a, electrons 2 and 3 everywhere
        m = np.empty((len(u) ** 2, 3, 3), complex)
        m[:, 0, :] = phase[a]
        m[:, 1, :] = np.repeat(phase, len(u), axis=0)
        m[:, 2, :] = np.tile(phase, (len(u), 1))
        w = np.abs(np.linalg.det(m)) ** 2
        rho = eg[a][None, :] + np.repeat(eg, len(u), axis=0) + np.tile(eg, (len(u), 1))
        num += w @ (np.abs(rho) ** 2)
        den += w.sum()
    direct = num / den / 3
    assert np.abs(direct - us.exact_structure_factor(occ, gs)).max() < 1e-12
    assert us.overlap_count(occ, gs).tolist() == [1, 1, 1, 1, 0, 0, 0, 0]


def test_real_orbitals_span_the_closed_shell():
    """|det| of the model's real plane waves (1, cos, sin) is a constant multiple of |det| of the complex
    closed shell e^{ik·r} whose S(G) the formula gives, so the two sample the same |Ψ|²."""
    pw = SMALL.plane_waves
    k = 2 * np.pi / SMALL.box * SMALL.occupied_millers
    rng = np.random.default_rng(3)
    ratios = []
    for _ in range(5):
        r = rng.random((7, 3)) * SMALL.box
        ratios.append(abs(np.linalg.det(pw.evaluate(r)[0])) / abs(np.linalg.det(np.exp(1j * r @ k.T))))
    assert np.ptp(ratios) < 1e-10 * ratios[0]
    assert SMALL.exact_shell_s[:4].tolist() == pytest.approx([5 / 7, 5 / 7, 1.0, 6 / 7])  # hand count


def test_ewald_madelung_and_kappa_independence():
    assert us.madelung_constant(7.3) * 7.3 == pytest.approx(-2.837297479, abs=1e-8)  # simple cubic
    rng = np.random.default_rng(0)
    pos = rng.random((SMALL.n_electrons, 3)) * SMALL.box
    values = []
    for x in (3.6, 6.0):
        m = dataclasses.replace(SMALL, ewald_x=x)
        chain = us.Chain(m, "pbp", 1.0)
        chain.pos[:] = pos
        chain.refresh()
        out_e, out_s = np.empty(2), np.empty(len(m.shell_m2))
        us.measure(chain.pos, chain.inv, *m.kernel_args(), out_e, out_s)
        values.append(out_e.copy())
    assert abs(values[0][1] - values[1][1]) < 1e-6 * SMALL.n_electrons  # < 1e-6 Ha per electron


def test_zero_variance_kinetic_energy_every_scheme(runs):
    """A = 0: T_L = Σ_σ Σ_k |k|²/2 at every configuration visited by every scheme."""
    t_exact = SMALL.exact_kinetic() / SMALL.n_electrons
    for s, r in runs.items():
        assert len(r.kinetic) == SWEEPS // EVERY
        assert np.abs(r.kinetic - t_exact).max() < 1e-12 * t_exact, s
    rng = np.random.default_rng(5)  # and at arbitrary configurations
    chain = us.Chain(SMALL, "pbp", 1.0)
    for _ in range(5):
        chain.pos[:] = rng.random(chain.pos.shape) * SMALL.box
        chain.refresh()
        out_e, out_s = np.empty(2), np.empty(len(SMALL.shell_m2))
        us.measure(chain.pos, chain.inv, *SMALL.kernel_args(), out_e, out_s)
        assert out_e[0] == pytest.approx(SMALL.exact_kinetic(), rel=1e-12)


def test_kinetic_energy_with_jastrow_matches_finite_differences():
    m = us.FreeElectronModel(n_per_spin=7, jastrow_a=0.8, jastrow_rc=3.5)
    chain = us.Chain(m, "pbp", 1.2, seed=4)
    chain.advance(30)
    pos0 = chain.pos.copy()

    def log_psi(p):
        chain.pos[:] = p
        chain.refresh()
        return chain.log_psi()

    h, lp0, lap = 1e-4, log_psi(pos0), 0.0
    for i, d in itertools.product(range(m.n_electrons), range(3)):
        p = pos0.copy()
        p[i, d] += h
        a = log_psi(p)
        p[i, d] -= 2 * h
        b = log_psi(p)
        lap += (a - 2 * lp0 + b) / h ** 2 + ((a - b) / (2 * h)) ** 2
    log_psi(pos0)
    out_e, out_s = np.empty(2), np.empty(len(m.shell_m2))
    us.measure(chain.pos, chain.inv, *m.kernel_args(), out_e, out_s)
    assert out_e[0] == pytest.approx(-0.5 * lap, rel=1e-5)


# ------------------------------------------------------------------ the kernels follow Eqs. 9–11
def _reference_sweeps(model, scheme, pos, normals, uniforms, step):
    """Plain-numpy Eqs. 9 (cbc), 10 (pbp, qs_batched) and 11 (qs_literal), full determinants, no updates."""
    box, n, a, rc = model.box, model.n_per_spin, model.jastrow_a, model.rc

    def log_psi(p):
        v = model.plane_waves.evaluate(p)[0]
        d = p[:, None, :] - p[None, :, :]
        d -= box * np.floor(d / box + 0.5)
        r = np.linalg.norm(d, axis=-1)[np.triu_indices(len(p), 1)]
        return (sum(np.linalg.slogdet(v[s * n:(s + 1) * n])[1] for s in range(2))
                - np.sum(np.where(r < rc, a * (1 - r / rc) ** 3, 0.0)))

    pos = pos.copy()
    for t in range(len(normals)):
        x = pos + step * normals[t]
        trials = x - box * np.floor(x / box)
        if scheme == "cbc":
            if uniforms[t, 0] < math.exp(min(0.0, 2 * (log_psi(trials) - log_psi(pos)))):
                pos = trials
            continue
        old = log_psi(pos)
        accept = np.zeros(len(pos), bool)
        for i in range(len(pos)):
            new = pos.copy()
            new[i] = trials[i]
            base = old if scheme == "qs_literal" else log_psi(pos)  # Eq. 11: always the old configuration
            accept[i] = uniforms[t, i] < math.exp(min(0.0, 2 * (log_psi(new) - base)))
            if accept[i] and scheme != "qs_literal":
                pos = new
        if scheme == "qs_literal":
            pos[accept] = trials[accept]
    return pos


@pytest.mark.parametrize("scheme", us.SCHEMES)
def test_kernels_follow_the_equations(scheme):
    m = us.FreeElectronModel(n_per_spin=7, jastrow_a=0.8)
    rng = np.random.default_rng(11)
    sweeps = 10
    normals = rng.standard_normal((sweeps, m.n_electrons, 3))
    uniforms = rng.random((sweeps, m.n_electrons))
    step = 0.8 if scheme == "cbc" else 1.5
    chain = us.Chain(m, scheme, step, seed=11)
    pos0 = chain.pos.copy()
    out_e, out_s = np.empty((0, 2)), np.empty((0, len(m.shell_m2)))
    us.run_sweeps(us.SCHEME_CODES[scheme], chain.pos, chain.inv, chain.rows, step, normals, uniforms, 0,
                  out_e, out_s, chain.counts, *chain._args)
    expected = _reference_sweeps(m, scheme, pos0, normals, uniforms, step)
    assert 0 < chain.counts[1] < chain.counts[0]  # some moves accepted, some rejected
    assert np.abs(chain.pos - expected).max() < 1e-12


@pytest.mark.parametrize("orbitals", ["exact", "bspline"])
def test_batched_reading_is_particle_by_particle_bit_for_bit(orbitals):
    """Q.S. reading C = PbP given the same proposals and uniforms (003 notes §7.2), also with study 003's
    B-spline orbital evaluation."""
    m = us.FreeElectronModel(n_per_spin=7, jastrow_a=0.5, orbitals=orbitals, grid=12)
    a = us.run_scheme(m, "pbp", STEP, 600, 50, 3, seed=9)
    b = us.run_scheme(m, "qs_batched", STEP, 600, 50, 3, seed=9)
    assert np.array_equal(a.energy, b.energy) and np.array_equal(a.s, b.s) and a.acceptance == b.acceptance


def test_sherman_morrison_against_full_recomputation():
    m = us.FreeElectronModel(n_per_spin=19, jastrow_a=0.5)
    for scheme in ("pbp", "qs_batched"):
        chain = us.Chain(m, scheme, 1.4, seed=2, block=10 ** 6)
        chain.advance(400, refresh=False)  # 400 sweeps × 38 moves, ~50 % accepted, no recomputation
        assert chain.counts[1] > 5000
        updated = chain.inv.copy()
        chain.refresh()
        assert np.abs(updated - chain.inv).max() <= 1e-10 * np.abs(chain.inv).max()


# ------------------------------------------------------------------ bias against the exact answer
def test_exact_schemes_reproduce_exact_energy_and_structure_factor(runs):
    exact_e = SMALL.exact_energy_per_electron()
    for s in ("pbp", "qs_batched", "cbc"):
        r = runs[s]
        z, _ = _z(r.energy, exact_e)
        assert abs(z) < 3, (s, z)
        zs = [_z(r.s[:, k], SMALL.exact_shell_s[k])[0] for k in range(r.s.shape[1])]
        assert abs(zs[0]) < 3 and max(map(abs, zs)) < 4, (s, zs)
    a, b = estimate(runs["pbp"].energy), estimate(runs["qs_batched"].energy)  # independent seeds
    assert abs(a.mean - b.mean) < 3 * math.hypot(a.error, b.error)


def test_literal_reading_is_biased(runs):
    """Literal Eq. 11 at ~50 % acceptance: the exchange hole fills in (S(G) of the first shell too
    large) and the energy rises, each by many error bars; far outside 1e-3 Ha per primitive cell."""
    r = runs["qs_literal"]
    z, e = _z(r.energy, SMALL.exact_energy_per_electron())
    z_s, _ = _z(r.s[:, 0], SMALL.exact_shell_s[0])
    assert z > 8 and z_s > 8, (z, z_s)
    assert (e.mean - SMALL.exact_energy_per_electron() - 3 * e.error) * SMALL.electrons_per_cell > us.CHEMICAL_ACCURACY
    assert r.acceptance > runs["pbp"].acceptance  # it accepts moves the exact kernel rejects


def test_literal_bias_shrinks_with_the_step():
    """Reading A's bias vanishes as δ → 0 (the Langevin limit): smaller at δ/3 than at δ."""
    exact = SMALL.exact_shell_s[0]
    big = us.run_scheme(SMALL, "qs_literal", STEP, 20000, 300, 3, seed=21)
    small = us.run_scheme(SMALL, "qs_literal", STEP / 3, 20000, 300, 3, seed=22)
    eb, es = estimate(big.s[:, 0]), estimate(small.s[:, 0])
    assert (eb.mean - exact) - (es.mean - exact) > 4 * math.hypot(eb.error, es.error)


def test_compare_schemes_table_fast():
    res = us.compare_schemes(SMALL, sweeps=3000, equil=200, measure_every=3, fast=True)
    rows = {r["scheme"]: r for r in res["rows"]}
    assert set(rows) == set(us.SCHEMES) and res["reference"]["kind"] == "exact"
    assert 0.35 < rows["pbp"]["acceptance"] < 0.65 and 0.1 < rows["cbc"]["acceptance"] < 0.4  # tuned steps
    assert rows["qs_literal"]["bias_sigma"] > 5 and not rows["qs_literal"]["within_chemical_accuracy"]
    for s in ("pbp", "qs_batched"):
        assert abs(rows[s]["bias_sigma"]) < 3.5
        assert rows[s]["bias_per_cell"] == pytest.approx(rows[s]["bias"] * 8)
    assert "qs_literal" in us.format_table(res)
