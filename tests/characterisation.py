"""Characterisation set: seeded runs of every system with explicit parameters.

A redesign keeps every number. This module lists small seeded runs (VMC, DMC and lattice chains,
CPU backend, every parameter and run setting given explicitly) and reduces each run to the numbers
that would move if anything in the physics, the sampler or the run loop changed: the estimates
(mean, error, τ), the acceptance, the population and moments of the final walker positions.

    python tests/characterisation.py            # write tests/data/characterisation_cpu.json
    python tests/characterisation.py --check    # compare this checkout with the recorded file

``tests/test_characterisation.py`` runs the same comparison in CI (a regression test of recorded
numbers: it says nothing about whether they are right, only that they did not change).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

RECORD = Path(__file__).resolve().parent / "data" / "characterisation_cpu.json"
RTOL = 1e-10  # the recorded runs are bitwise reproducible on one machine; this leaves room for libm's last bit

_BEC = dict(n=8, lam=2.82843, a=0.0433, alpha=0.49)
CASES = {
    "bec_vmc_drift": dict(system="bec", method="vmc", params=_BEC, sampler="drift", dt=0.05, walkers=12,
                          steps=60, equilibration=20, block=20, seed=3, backend="cpu"),
    "bec_vmc_brute": dict(system="bec", method="vmc", params=_BEC, sampler="brute", step=1.0, walkers=12,
                          steps=60, equilibration=20, block=20, seed=4, backend="cpu"),
    "bec_vmc_density": dict(system="bec", method="vmc", params=_BEC, sampler="drift", dt=0.05, walkers=8,
                            steps=40, equilibration=20, block=20, seed=5, backend="cpu", density="r",
                            density_bins=10),
    "bec_vmc_seed_variants": dict(system="bec", method="vmc", params=_BEC, sampler="drift", dt=0.05, walkers=8,
                                  steps=40, equilibration=20, block=20, seed=6, backend="cpu", green="all",
                                  accept_uniform="reuse", hard_core="redraw"),
    "bec_dmc": dict(system="bec", method="dmc", params=_BEC, sampler="drift", dt=0.01, walkers=16, steps=60,
                    equilibration=20, block=20, dmc_equilibration=20, seed=7, backend="cpu"),
    # Δτ in the branching, not τ_eff (study 002's way): the numbers bec_dmc had before τ_eff
    "bec_dmc_no_tau_eff": dict(system="bec", method="dmc", params=_BEC, sampler="drift", dt=0.01, walkers=16,
                               steps=60, equilibration=20, block=20, dmc_equilibration=20, seed=7, backend="cpu",
                               effective_time_step=False),
    "atom_he_vmc": dict(system="atom", method="vmc",
                        params=dict(element="He", alpha=1.839, beta=0.348, jastrow=True, ee=True, en_cusp=False),
                        sampler="drift", dt=0.05, walkers=12, steps=60, equilibration=20, block=20, seed=8,
                        backend="cpu"),
    "atom_be_cusp_vmc": dict(system="atom", method="vmc",
                             params=dict(element="Be", alpha=3.925, beta=0.109, jastrow=True, ee=True,
                                         en_cusp=True, beta_en=7.85),
                             sampler="drift", dt=0.02, walkers=8, steps=40, equilibration=20, block=20, seed=9,
                             backend="cpu"),
    "atom_be_dmc": dict(system="atom", method="dmc",
                        params=dict(element="Be", alpha=3.925, beta=0.109, jastrow=True, ee=True, en_cusp=False),
                        sampler="drift", dt=0.01, walkers=12, steps=40, equilibration=20, block=20,
                        dmc_equilibration=10, seed=10, backend="cpu"),
    "atom_ne_vmc_brute": dict(system="atom", method="vmc",
                              params=dict(element="Ne", alpha=9.546, beta=0.177, jastrow=True, ee=True,
                                          en_cusp=False),
                              sampler="brute", step=0.3, walkers=4, steps=20, equilibration=20, block=10, seed=11,
                              backend="cpu"),
    "molecule_h2_vmc": dict(system="molecule", method="vmc",
                            params=dict(xyz="h2", basis="sto-3g", charge=0, jastrow=True, jastrow_ee=True,
                                        jastrow_en=True, beta_ee=4.0, beta_en=300.0, cusp=False),
                            sampler="drift", dt=0.02, walkers=8, steps=40, equilibration=20, block=20, seed=12,
                            backend="cpu"),
    "molecule_h2o_cusp_dmc": dict(system="molecule", method="dmc",
                                  params=dict(xyz="h2o", basis="sto-3g", charge=0, jastrow=True, jastrow_ee=True,
                                              jastrow_en=False, beta_ee=4.0, beta_en=300.0, cusp=True),
                                  sampler="drift", dt=0.005, walkers=8, steps=20, equilibration=20, block=10,
                                  dmc_equilibration=10, seed=13, backend="cpu"),
    "helium_vmc_brute": dict(system="helium", method="vmc",
                             params=dict(n=16, density=0.02186, b=3.07, hbar2_over_m=12.1194, potential="hfdb",
                                         tail=True),
                             sampler="brute", step=2.8, target_acceptance=0.37, walkers=8, steps=40,
                             equilibration=20, block=20, seed=14, backend="cpu"),
    "helium_vmc_every": dict(system="helium", method="vmc",
                             params=dict(n=16, density=0.02186, b=3.07, hbar2_over_m=12.1194, potential="hfdb",
                                         tail=False),
                             sampler="drift", dt=0.002, walkers=8, steps=20, equilibration=20, block=10,
                             measure_every=3, seed=15, backend="cpu"),
    "helium_dmc": dict(system="helium", method="dmc",
                       params=dict(n=16, density=0.02186, b=3.07, hbar2_over_m=12.1194, potential="hfdb",
                                   tail=True),
                       sampler="drift", dt=0.002, walkers=12, steps=40, equilibration=20, block=20,
                       dmc_equilibration=10, seed=16, backend="cpu"),
    # added with the system (issue 24), to hold its numbers through later refactors
    "qdot_2d_vmc": dict(system="qdot", method="vmc",
                        params=dict(n=6, dim=2, omega=1.0, alpha=0.93, beta=0.55, interaction=True, jastrow=True),
                        sampler="drift", dt=0.05, walkers=8, steps=40, equilibration=20, block=20, seed=19,
                        backend="cpu"),
    "qdot_3d_dmc": dict(system="qdot", method="dmc",
                        params=dict(n=8, dim=3, omega=0.5, alpha=0.9, beta=0.3, interaction=True, jastrow=True),
                        sampler="drift", dt=0.01, walkers=8, steps=40, equilibration=20, block=20,
                        dmc_equilibration=10, seed=20, backend="cpu"),
}
_LATTICE = dict(L=3, doping=0.2, J=0.3, delta=1.5, mu=0.0, tp_v=0.0, tp=0.0, tpp=0.0, kind="tilted", free=False)
LATTICE_CASES = {
    "lattice_l3": dict(params=_LATTICE, chains=4, steps=60, equilibration=20, moves_per_sweep=8,
                       refresh_every=25, block=20, seed=17, backend="cpu"),
    "lattice_l4_square": dict(params=dict(_LATTICE, L=4, kind="square", doping=0.125), chains=3, steps=30,
                              equilibration=10, moves_per_sweep=14, refresh_every=10, block=10, seed=18,
                              backend="cpu"),
}


def _moments(x: np.ndarray) -> list[float]:
    x = np.asarray(x, dtype=float)
    return [float(x.sum()), float((x * x).sum()), float(x.ravel()[0]), float(x.ravel()[-1])]


def run_case(name: str) -> dict:
    """Run one case and reduce it to its characteristic numbers."""
    if name in LATTICE_CASES:
        from qmckit.methods.lattice_vmc import LatticeRun, LatticeRunConfig

        run = LatticeRun(LatticeRunConfig(**LATTICE_CASES[name]))
        result = run.run()
        state = run.chains.host_state()
        final = {"up_site": _moments(state["up_site"]), "dn_site": _moments(state["dn_site"]),
                 "hops": result["hops"], "swaps": result["swaps"]}
    else:
        from qmckit.runs import RunConfig, make_run

        run = make_run(RunConfig(**CASES[name]))
        result = run.run()
        final = {"population": int(run.walkers.n_walkers), "positions": _moments(run.walkers.positions),
                 "rng_states": _moments(run.walkers.rng_states.astype(np.float64))}
        if "density" in result:
            final["density"] = _moments(np.asarray(result["density"]["density"]))
    return {"estimates": result["estimates"], "acceptance": result["acceptance"], "final": final}


def all_cases() -> list[str]:
    return [*CASES, *LATTICE_CASES]


def compare(recorded, now, path="") -> list[str]:
    """Differences between two reduced runs beyond ``RTOL`` (relative), as readable lines."""
    if isinstance(recorded, dict):
        out = [f"{path}: keys {sorted(set(recorded) ^ set(now))} differ"] if set(recorded) != set(now) else []
        for key in set(recorded) & set(now):
            out += compare(recorded[key], now[key], f"{path}.{key}")
        return out
    if isinstance(recorded, list):
        if len(recorded) != len(now):
            return [f"{path}: length {len(recorded)} → {len(now)}"]
        return [line for k, (a, b) in enumerate(zip(recorded, now)) for line in compare(a, b, f"{path}[{k}]")]
    if isinstance(recorded, (int, float)) and not isinstance(recorded, bool):
        a, b = float(recorded), float(now)
        if (np.isnan(a) and np.isnan(b)) or a == b or abs(a - b) <= RTOL * max(abs(a), abs(b)):
            return []
        return [f"{path}: {a!r} → {b!r}"]
    return [] if recorded == now else [f"{path}: {recorded!r} → {now!r}"]


def main(argv) -> int:
    if "--check" in argv:
        recorded = json.loads(RECORD.read_text())["runs"]
        bad = 0
        for name in all_cases():
            diffs = compare(recorded[name], json.loads(json.dumps(run_case(name))))
            print(f"{name:24s} {'same' if not diffs else 'CHANGED'}")
            for line in diffs[:8]:
                print("   ", line)
            bad += bool(diffs)
        return 1 if bad else 0
    runs = {}
    for name in all_cases():
        runs[name] = run_case(name)
        print(name, runs[name]["estimates"])
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps({"command": "python tests/characterisation.py", "rtol": RTOL, "runs": runs},
                                 indent=1) + "\n")
    print("written", RECORD)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
