#!/usr/bin/env python
"""GPU peer of ``molecule_gpu.py``'s throughput: QMCTorch 0.4.0 (PyTorch) sampling H2O on the same device, with
the same geometry (``data/molecules/h2o.xyz``), basis and walker counts, in our unit, walker-steps per second.

One walker-step (ours) = every electron of a walker proposed once + one local energy E_L. QMCTorch's ``Metropolis``
sampler (symmetric Gaussian proposals, no drift, so Metropolis–Hastings reduces to Metropolis) evaluates the whole
ψ_T again at every proposal: all basis functions of all N = 10 electrons, both determinants, the Jastrow factor.
Conversions, per walker:

* ``one-elec``: a step moves one randomly chosen electron, so N steps = one walker-step (each electron once on
  average);
* ``all-elec-iter``: a step moves electrons 0 … N−1 one after the other (N evaluations of ψ_T) = one walker-step,
  exactly our proposals;
* ``all-elec``: a step moves all N electrons at once (one evaluation of ψ_T), counted as one walker-step (each
  electron proposed once, but jointly: cheaper, lower acceptance, not our move).

E_L is ``wf.local_energy`` (QMCTorch's Jacobi-formula kinetic energy, under ``torch.no_grad``) on the same W
walkers. With t_s the seconds per walker-step of all W walkers and t_E the seconds per E_L of all W walkers:
sampling-only W/t_s, E_L-only W/t_E, combined W/(t_s + t_E) walker-steps/s. Each figure is the median of ``--reps``
timings after warm-up calls (CUDA synchronised before and after); a timed call runs k walker-steps, with at least
32 evaluations of ψ_T (QMCTorch's sampler evaluates ψ_T once more at the start of every call, ≤ 3 % then) and k
doubled until the call takes 0.2 s. The proposal's variance per coordinate is ``--dt`` bohr² (0.02, the Δτ of
our H2O runs): QMCTorch's ``step_size`` = dt · 2√(2 ln 2), because its ``MultivariateNormal`` takes
step_size/(2√(2 ln 2)) as the covariance.

Trial function, as close to ours as QMCTorch allows: one determinant per spin of the occupied RHF orbitals of PySCF
(``include_all_mo=False``, as ours); QMCTorch's default e–e Padé–Jastrow exp(Σ_{i<j} a r_ij/(1 + w r_ij)),
a = ¼ parallel, ½ antiparallel (our form), w fixed at our β_ee = 4 bohr⁻¹; no e–n Jastrow, no cusp correction, no
backflow; float64 (``set_torch_double_precision``). QMCTorch runs PySCF with spherical functions (``cart=False``)
and evaluates the orbitals on Cartesian Gaussians through PySCF's cart2sph matrix: the same 25 (cc-pVDZ) / 65
(cc-pVTZ) Cartesian functions per point as ours, which solves RHF in the Cartesian basis (``cart=True``). Two
repairs before timing, neither changes the cost of a step:

1. QMCTorch 0.4.0 reads s, p, d shells only (cc-pVTZ has f on O): its tables get PySCF's l = 3 Cartesian exponents.
2. Its basis functions differ from PySCF's by one factor each (a general contraction's second function is halved,
   Cartesian d/f components are normalised one by one), which bends the orbitals away from the RHF ones; the MO
   coefficient rows are divided by those factors, measured at random points. The record keeps the basis functions'
   residual (shape) and the orbitals' deviation before and after.

Units: bohr, hartree, seconds.

    PYTHONPATH=/tmp/site:$PWD python3 benchmarks/molecule_gpu_peer.py [--basis cc-pvtz,cc-pvdz] [--tag h100]
    python benchmarks/molecule_gpu_peer.py --smoke --device cpu      # STO-3G, W = 8, one rep: a check of the script

Writes $OUT (or benchmarks/results)/molecule_gpu_peer_<tag>_<date>.{json,md}.
"""
from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import platform
import sys
import tempfile
import textwrap
import time
import traceback
import types
import warnings
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np  # noqa: E402
import torch  # noqa: E402

from _common import Budget, cpu_model, log, results_stem  # noqa: E402

XYZ = Path(__file__).resolve().parents[1] / "data" / "molecules" / "h2o.xyz"
BETA_EE = 4.0  # bohr⁻¹, qmckit's Molecule default
MOVES = ("one-elec", "all-elec-iter", "all-elec")
NOTES = []  # what had to be worked around, into the record


def import_qmctorch():
    """QMCTorch's modules, after two stand-ins that only matter where the real thing is missing."""
    try:
        import pyscf.dft  # noqa: F401
    except (OSError, AttributeError) as err:  # our PySCF has no XC library (ctypes says so with either error);
        # QMCTorch imports pyscf.dft but uses it for scf="dft" only
        sys.modules["pyscf.dft"] = types.ModuleType("pyscf.dft")
        NOTES.append(f"pyscf.dft replaced by an empty module ({err})")
    try:
        import mendeleev  # noqa: F401  (QMCTorch's Molecule asks it for Z and the electron count)
    except ImportError as err:  # e.g. a Python without sqlite3: the same two numbers from PySCF
        from pyscf.data.elements import charge

        sys.modules["mendeleev"] = types.SimpleNamespace(
            element=lambda s: types.SimpleNamespace(atomic_number=charge(s), electrons=charge(s)))
        NOTES.append(f"mendeleev replaced by PySCF's charges ({err})")
    import twiggy

    warnings.filterwarnings("ignore", category=SyntaxWarning)  # Python 3.12 on escapes in QMCTorch's docstrings
    import qmctorch
    from qmctorch.sampler import Metropolis
    from qmctorch.scf import Molecule
    from qmctorch.scf.calculator import pyscf as calculator
    from qmctorch.utils import set_torch_double_precision
    from qmctorch.wavefunction import SlaterJastrow
    from qmctorch.wavefunction.jastrows.elec_elec.jastrow_factor_electron_electron import \
        JastrowFactorElectronElectron
    from qmctorch.wavefunction.jastrows.elec_elec.kernels import PadeJastrowKernel

    qmctorch.log.min_level = twiggy.levels.WARNING  # its INFO lines would bury ours
    set_torch_double_precision()
    allow_f_shells(calculator.CalculatorPySCF)
    return types.SimpleNamespace(version=qmctorch.__version__, Molecule=Molecule, SlaterJastrow=SlaterJastrow,
                                 Metropolis=Metropolis, Jastrow=JastrowFactorElectronElectron, Pade=PadeJastrowKernel)


def allow_f_shells(cls) -> None:
    """Repair 1: add l = 3 to the Cartesian exponent tables of QMCTorch 0.4.0's PySCF reader, in PySCF's order
    (xxx, xxy, xxz, xyy, xyz, xzz, yyy, yyz, yzz, zzz); each edit must match its source exactly once."""
    l3 = {"2: [-2, -1, 0, 1, 2]}": "3: [-3, -2, -1, 0, 1, 2, 3]",  # m (unused for Cartesian functions)
          "2: [2, 1, 1, 0, 0, 0]}": "3: [3, 2, 2, 1, 1, 1, 0, 0, 0, 0]",  # x exponents
          "2: [0, 1, 0, 2, 1, 0]}": "3: [0, 1, 0, 2, 1, 0, 3, 2, 1, 0]",  # y
          "2: [0, 0, 1, 0, 1, 2]}": "3: [0, 0, 1, 0, 1, 2, 0, 1, 2, 3]"}  # z
    edits = {"get_basis_data": [(old, f"{old[:-1]}, {new}}}") for old, new in l3.items()],
             "get_bas_n": [('["s", "p", "d"]', '["s", "p", "d", "f"]'), ('"d": 3}', '"d": 3, "f": 4}')]}
    for name, subs in edits.items():
        source = textwrap.dedent(inspect.getsource(getattr(cls, name)))
        for old, new in subs:
            assert source.count(old) == 1, f"QMCTorch's {name} is not 0.4.0's: {old!r}"
            source = source.replace(old, new)
        scope = {}
        exec(source, vars(sys.modules[cls.__module__]), scope)
        setattr(cls, name, scope[name])


def build(qt, basis: str, device: str):
    """QMCTorch's Slater–Jastrow ψ_T for H2O in ``basis`` (RHF run by QMCTorch through PySCF) and the orbital record."""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:  # its Molecule writes (and would later reuse) an HDF5 file in the cwd
        os.chdir(tmp)
        try:
            mol = qt.Molecule(atom=str(XYZ), unit="angs", calculator="pyscf", scf="hf", basis=basis, name="h2o")
        finally:
            os.chdir(cwd)
    cuda = device == "cuda"
    jastrow = qt.Jastrow(mol, qt.Pade, kernel_kwargs={"w": BETA_EE}, cuda=cuda)
    wf = qt.SlaterJastrow(mol, jastrow=jastrow, include_all_mo=False, cuda=cuda)  # kinetic="jacobi", no backflow
    info = {"basis": basis, "n_ao": int(mol.basis.nao), "n_primitive_columns": int(wf.ao.nbas),
            "n_orbitals": int(wf.mo.mo_scf.shape[1]), "e_rhf": float(mol.basis.TotalEnergy)}
    info |= rhf_orbitals(wf, mol, basis, device)
    return mol, wf, info


def rhf_orbitals(wf, mol, basis, device) -> dict:
    """Repair 2: QMCTorch's basis function μ is s_μ × PySCF's (Cartesian, PySCF's normalisation), so its orbitals
    Σ_μ χ_μ C_μj are not the RHF ones; fit s_μ at 640 random points and divide row μ of C by it."""
    from pyscf import gto

    pmol = gto.M(atom=list(zip(mol.atoms, mol.atom_coords)), basis=basis, unit="Bohr", verbose=0)
    r = np.random.default_rng(0).normal(scale=1.5, size=(64, wf.nelec, 3))  # bohr, around the molecule
    x = torch.as_tensor(r.reshape(64, -1), device=device)
    ref_ao = pmol.eval_gto("GTOval_cart", r.reshape(-1, 3))
    n = wf.mo.mo_scf.shape[1]
    ref_mo = ref_ao @ mol.basis.mos[:, :n]  # the RHF orbitals (QMCTorch's C, PySCF's functions)

    def residual(a, ref):  # worst relative misfit of a column after its best scale factor
        s = (a * ref).sum(0) / (ref * ref).sum(0)
        return s, float((np.abs(a - s * ref).max(0) / np.abs(a).max(0)).max())

    with torch.no_grad():
        ao = wf.ao(x).cpu().numpy().reshape(-1, ref_ao.shape[1])
        _, before = residual(wf.mo(wf.ao(x)).cpu().numpy().reshape(-1, n), ref_mo)
        scale, ao_shape = residual(ao, ref_ao)
        wf.mo.mo_scf = torch.as_tensor(mol.basis.mos[:, :n] / scale[:, None], device=device)
        _, after = residual(wf.mo(wf.ao(x)).cpu().numpy().reshape(-1, n), ref_mo)
    log(f"{basis}: basis functions' shape residual {ao_shape:.1e}; orbitals vs RHF {before:.1e} → {after:.1e} "
        f"(factors {scale.min():.3f}…{scale.max():.3f})")
    return {"ao_shape_residual": ao_shape, "orbital_dev_before": before, "orbital_dev_after": after,
            "ao_factor_range": [float(scale.min()), float(scale.max())]}


def start(mol, W: int, device: str) -> torch.Tensor:
    """W walkers (W, 3N), electrons 0.5 bohr (Gaussian) around the nuclei, each nucleus getting its neutral count,
    spin-up electrons first as QMCTorch orders them (the timed warm-up equilibrates them further)."""
    atom = np.repeat(np.arange(mol.natom), mol.atomic_nelec)  # O×8, H, H
    atom = np.concatenate([atom[0::2], atom[1::2]])  # half of each atom's electrons per spin
    centres = torch.as_tensor(np.asarray(mol.atom_coords)[atom])
    return (centres + 0.5 * torch.randn(W, len(atom), 3)).reshape(W, -1).to(device)


def timings(call, reps: int, sync, budget=None) -> list:
    """Seconds of ``reps`` calls, each synchronised before and after; fewer (at least one) once ``budget`` is spent."""
    times = []
    for _ in range(reps):
        if times and budget is not None and budget.left() <= 0:
            break
        sync()
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return times


def time_sampler(qt, mol, wf, move, pos, args, budget, sync) -> dict:
    """Seconds per walker-step of all W walkers with QMCTorch's Metropolis ``move``; leaves the walkers moved."""
    W = pos.shape[0]
    per = mol.nelec if move == "one-elec" else 1  # sampler steps per walker-step
    sampler = qt.Metropolis(nwalkers=W, nstep=per, step_size=args.dt * 2 * np.sqrt(2 * np.log(2)), nelec=mol.nelec,
                            ndim=3, init=mol.domain("normal"), move={"type": move, "proba": "normal"},
                            cuda=args.device == "cuda")
    sampler.walkers.pos = pos  # QMCTorch updates it in place: the next case starts from where this one ended

    def run(k):  # k walker-steps from the current positions; QMCTorch copies the last step's positions to the host
        sampler.nstep, sampler.ntherm = k * per, k * per - 1
        sampler(wf.pdf, pos=sampler.walkers.pos, with_tqdm=False)

    evals = 1 if move == "all-elec" else mol.nelec  # evaluations of ψ_T per walker-step
    k = max(1, 32 // evals)  # a call also evaluates ψ_T once at its start: keep that within 1/32 of the call
    timings(lambda: run(1), 1, sync)  # warm-up (CUDA context and kernels, library handles, first moves)
    (t,) = timings(lambda: run(k), 1, sync)
    while t < 0.2 and k < 256 and 4 * t * (args.reps + 1) < budget.left():
        k *= 2
        (t,) = timings(lambda: run(k), 1, sync)
    before = sampler.walkers.pos.clone()
    sampler.nstep, sampler.ntherm = 1, 0  # one sampler step: the share of its proposals that were accepted
    sampler(wf.pdf, pos=sampler.walkers.pos, with_tqdm=False)
    moved = (sampler.walkers.pos - before).view(W, mol.nelec, 3).abs().amax(-1) > 0  # (walker, electron)
    accepted = moved.float().mean() if move == "all-elec-iter" else moved.any(1).float().mean()
    times = timings(lambda: run(k), args.reps, sync, budget)
    med = float(np.median(times))
    return {"sampler": move, "steps_per_walker_step": per, "walker_steps_per_call": k, "times_s": times,
            "s_per_walker_step_batch": med / k, "walker_steps_per_s": W * k / med, "acceptance": float(accepted)}


def time_local_energy(wf, pos, args, budget, sync) -> dict:
    with torch.no_grad():
        e = wf.local_energy(pos)  # warm-up
        times = timings(lambda: wf.local_energy(pos), args.reps, sync, budget)
    med = float(np.median(times))
    return {"sampler": "local energy", "times_s": times, "s_per_walker_step_batch": med,
            "walker_steps_per_s": pos.shape[0] / med, "energy_mean": float(e.mean()), "dtype": str(e.dtype)}


def case(fn, label: str) -> dict:
    """Run one timing; an out-of-memory or any other failure becomes the row's error and the script goes on."""
    try:
        return fn()
    except Exception as err:  # noqa: BLE001  (one failed case must not lose the others' numbers)
        oom = isinstance(err, (torch.cuda.OutOfMemoryError, MemoryError)) or "out of memory" in str(err)
        log(f"{label}: {'OUT OF MEMORY' if oom else 'FAILED'}: {type(err).__name__}: {str(err)[:300]}")
        if not oom:
            traceback.print_exc()
        return {"error": "out of memory" if oom else f"{type(err).__name__}: {str(err)[:300]}"}
    finally:
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def markdown(record) -> str:
    lines = [f"# QMCTorch {record['qmctorch']} as the molecule sampler's GPU peer ({record['date']}, "
             f"{record['device']})", "",
             f"Command: `{record['command']}`. torch {record['torch']}, numpy {record['numpy']}, "
             f"PySCF {record['pyscf']}, Python {record['python']}, host {record['host_cpu']}; {record['dtype']}. "
             "H2O (`data/molecules/h2o.xyz`), "
             "RHF orbitals (PySCF, spherical RHF on Cartesian functions, coefficient rows repaired), e–e Padé–Jastrow "
             f"w = {BETA_EE} bohr⁻¹; Metropolis, Gaussian proposals of variance {record['dt']} bohr² per coordinate. "
             "One walker-step = every electron proposed once + one E_L: one-elec N steps, all-elec-iter 1 step, "
             "all-elec 1 step (all electrons jointly). Medians of "
             f"{record['reps']} timings; budget {record['budget_s']} s, wall {record['wall_s']:.0f} s.", ""]
    for b in record["bases"]:
        lines.append(f"- {b['basis']}: {b['n_ao']} Cartesian functions ({b['n_primitive_columns']} primitive "
                     f"columns), {b['n_orbitals']} orbitals per spin, E_RHF {b['e_rhf']:.6f} E_h; basis-function "
                     f"shape residual {b['ao_shape_residual']:.1e}, orbitals vs RHF {b['orbital_dev_before']:.1e} "
                     f"→ {b['orbital_dev_after']:.1e}")
    lines += [f"- note: {n}" for n in record["notes"]]
    lines += ["", "| basis | W | sampler | walker-steps per call | s per walker-step batch | walker-steps/s | "
              "with E_L, walker-steps/s | acceptance |", "|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in record["rows"]:
        if "error" in r:
            lines.append(f"| {r['basis']} | {r['walkers']} | {r['sampler']} | – | – | {r['error']} | – | – |")
            continue
        el = next((e for e in record["rows"] if e["sampler"] == "local energy" and e["basis"] == r["basis"]
                   and e["walkers"] == r["walkers"] and "error" not in e), None)
        both = f"{r['walkers'] / (r['s_per_walker_step_batch'] + el['s_per_walker_step_batch']):.3e}" \
            if el and r["sampler"] != "local energy" else "–"
        extra = f"⟨E_L⟩ {r['energy_mean']:.3f}" if r["sampler"] == "local energy" else f"{r['acceptance']:.2f}"
        lines.append(f"| {r['basis']} | {r['walkers']} | {r['sampler']} | {r.get('walker_steps_per_call', 1)} | "
                     f"{r['s_per_walker_step_batch']:.4g} | {r['walker_steps_per_s']:.3e} | {both} | {extra} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--basis", default="cc-pvtz", help="comma-separated, e.g. cc-pvtz,cc-pvdz")
    parser.add_argument("--walkers", default="4096,16384")
    parser.add_argument("--moves", default=",".join(MOVES), help="QMCTorch Metropolis move types")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dt", type=float, default=0.02, help="proposal variance per coordinate, bohr²")
    parser.add_argument("--budget", type=float, default=150.0, help="seconds; cases not started by then are skipped")
    parser.add_argument("--tag", default="gpu")
    parser.add_argument("--smoke", action="store_true", help="STO-3G, W = 8, one rep (a check of the script)")
    args = parser.parse_args()
    if args.smoke:
        args.basis, args.walkers, args.reps = "sto-3g", "8", 1
    budget = Budget(args.budget)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device: use --device cpu")
    qt = import_qmctorch()
    import pyscf

    torch.manual_seed(7)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    record = {"benchmark": "molecule_gpu_peer", "date": date.today().isoformat(), "qmctorch": qt.version,
              "torch": torch.__version__, "numpy": np.__version__, "pyscf": pyscf.__version__,
              "python": platform.python_version(), "host_cpu": cpu_model(), "dtype": str(torch.get_default_dtype()),
              "device": torch.cuda.get_device_name() if args.device == "cuda" else f"CPU ({cpu_model()}, "
              f"{torch.get_num_threads()} threads)", "command": "python benchmarks/molecule_gpu_peer.py "
              + " ".join(sys.argv[1:]), "dt": args.dt, "reps": args.reps, "budget_s": args.budget, "beta_ee": BETA_EE,
              "bases": [], "rows": [], "notes": NOTES}
    log(f"QMCTorch {qt.version}, torch {torch.__version__}, {record['device']}, {record['dtype']}")
    for basis in args.basis.split(","):
        if budget.left() <= 0:
            NOTES.append(f"{basis} skipped (budget)")
            continue
        mol, wf, info = build(qt, basis, args.device)
        record["bases"].append(info)
        for W in [int(w) for w in args.walkers.split(",")]:
            pos = start(mol, W, args.device)
            for move in args.moves.split(",") + ["local energy"]:
                label = f"{basis} W={W} {move}"
                if budget.left() <= 0:
                    row = {"error": "skipped (budget)"}
                elif move == "local energy":
                    row = case(lambda: time_local_energy(wf, pos, args, budget, sync), label)
                else:
                    row = case(lambda: time_sampler(qt, mol, wf, move, pos, args, budget, sync), label)
                row = {"basis": basis, "walkers": W, "sampler": move} | row
                record["rows"].append(row)
                if "error" not in row:
                    log(f"{label}: {row['walker_steps_per_s']:.3e} walker-steps/s "
                        f"({row['s_per_walker_step_batch']:.4g} s per walker-step batch)")
    record["wall_s"] = budget.elapsed()
    stem = results_stem(f"molecule_gpu_peer_{args.tag}_{record['date']}")
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    stem.with_suffix(".md").write_text(markdown(record))
    log(markdown(record))


if __name__ == "__main__":
    main()
