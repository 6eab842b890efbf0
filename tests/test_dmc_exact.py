"""DMC against exact ground-state energies, where the trial function's own VMC energy lies many error bars away.

Each system here has a nodeless ground state, so fixed-node DMC is exact but for the time step and the
population bias, both below the error bars at these settings. Each test fails if DMC stayed at the VMC
energy (the VMC–DMC gap must be more than 10 σ) or if it missed the exact energy by more than 3 σ. The error
bars are honest with a population feedback time τ_fb = 1 E_h⁻¹·ħ (12 He runs scatter 0.8 times their quoted
error bar; at qmckit's default 0.1, 1.6 times: experiments/dmc_feedback_errors_2026-11-26.md). Fixed seeds;
about 30 s on the 2-core CI machine.
"""
import pytest

from qmckit.runs import RunConfig, make_run

HE_EXACT = -2.903724  # E_h, non-relativistic He ground state (Pekeris; Drake)
H2_EXACT = -1.1744757  # E_h, H2 at R = 1.4 bohr (Kołos & Wolniewicz)
FEEDBACK_TIME = 1.0  # ħ/E_h: honest error bars (see the module docstring)


def _vmc_and_dmc(system, params, walkers, steps, dt, seed):
    config = dict(system=system, params=params, walkers=walkers, steps=steps, dt=dt, seed=seed, backend="cpu")
    vmc = make_run(RunConfig(**config)).run()
    dmc_run = make_run(RunConfig(**config, method="dmc", feedback_time=FEEDBACK_TIME))
    dmc = dmc_run.run()
    key = dmc_run.system.energy_key
    return vmc["estimates"][key], dmc["estimates"][key], dmc_run, dmc


def _assert_dmc_left_vmc_for_the_exact_energy(vmc, dmc, exact):
    assert vmc["mean"] - dmc["mean"] > 10 * dmc["error"], (vmc, dmc)  # DMC moved: the gap is resolved
    assert abs(dmc["mean"] - exact) < 3 * dmc["error"], (dmc, exact)  # … and it reached the exact energy


def test_he_atom_dmc_reaches_the_exact_energy():
    # study 002's ψ_T with the e–n cusp factor (finite E_L at the nucleus): VMC −2.8917, 0.012 E_h above exact
    vmc, dmc, run, result = _vmc_and_dmc("atom", dict(element="He", en_cusp=True), 500, 8000, 0.01, seed=0)
    assert dmc["error"] < 1e-3
    _assert_dmc_left_vmc_for_the_exact_energy(vmc, dmc, HE_EXACT)
    assert result["warnings"] == []


@pytest.mark.filterwarnings("ignore:reblock")
def test_h2_molecule_dmc_reaches_the_exact_energy():
    pytest.importorskip("pyscf")
    # STO-3G orbitals with the nuclear cusp correction and an e–e Jastrow: VMC about −1.115, 0.06 E_h above exact
    vmc, dmc, run, _ = _vmc_and_dmc("molecule", dict(xyz="h2", basis="sto-3g", cusp=True, jastrow_en=False), 400,
                                    4000, 0.01, seed=1)
    assert run.system.reject_node_crossing  # fixed node (H2's ground state has no node to fix)
    assert dmc["error"] < 5e-3
    _assert_dmc_left_vmc_for_the_exact_energy(vmc, dmc, H2_EXACT)
