"""The command line: JSON contract, one-line errors, and SIGKILL/resume giving identical numbers."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import h5py
import pytest

from qmckit import RunConfig, VMCRun
from qmckit.checkpoint import read_attrs

QMCKIT = [sys.executable, "-m", "qmckit.cli"]


def qmckit(*args, **kwargs):
    return subprocess.run([*QMCKIT, *args], capture_output=True, text=True, timeout=300, **kwargs)


@pytest.mark.parametrize("args, name", [
    (["--n", "-5"], "--n"), (["--n", "0"], "--n"), (["--n", "ten"], "--n"), (["--alpha", "0"], "--alpha"),
    (["--alpha", "-1"], "--alpha"), (["--alpha", "abc"], "--alpha"), (["--lam", "nan"], "--lam"),
    (["--a", "-0.1"], "--a"), (["--dt", "-0.1"], "--dt"), (["--walkers", "0"], "--walkers"),
    (["--steps", "1.5"], "--steps"), (["--seed", "-1"], "--seed"), (["--sampler", "fast"], "--sampler"),
    (["--backend", "cuda"], "--backend"), (["--resume", "/nonexistent.h5"], "--resume"),
    (["--energy-cap", "-1"], "--energy-cap"), (["--energy-cap", "huge"], "--energy-cap"),
])
def test_bad_input_gives_exit_2_and_one_line(args, name):
    res = qmckit("run", "bec", *args)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert name in lines[0], lines[0]
    assert res.stdout == ""


def test_unknown_system_and_help():
    res = qmckit("run", "unicorn")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "unicorn" in res.stderr
    assert qmckit("--help").returncode == 0
    helped = qmckit("run", "bec", "--help")
    assert helped.returncode == 0 and "--alpha" in helped.stdout


def test_json_contract():
    res = qmckit("run", "bec", "--n", "4", "--lam", "1", "--a", "0", "--alpha", "0.5", "--steps", "30",
                 "--walkers", "10", "--seed", "1", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert {"system", "method", "params", "seed", "backend", "estimates", "acceptance", "wall_s"} <= set(out)
    energy = out["estimates"]["energy_per_particle"]
    assert energy["mean"] == pytest.approx(1.5, abs=1e-12) and energy["error"] < 1e-10
    assert out["params"] == {"n": 4, "lam": 1.0, "a": 0.0, "alpha": 0.5}


def test_a_molecules_dmc_takes_the_molecules_time_step():
    # all-electron DMC wants Δτ Z² ≲ 0.2: the run's general Δτ = 0.05 gave H2O −105.7 E_h (exact −76.4); a molecule's
    # DMC defaults to 0.002 (Molecule.run_defaults), and --dt still wins
    pytest.importorskip("pyscf")
    base = ("run", "molecule", "--xyz", "h2", "--basis", "sto-3g", "--method", "dmc", "--walkers", "4", "--steps", "2",
            "--equil", "2", "--dmc-equil", "1", "--json")
    for extra, dt in (((), 0.002), (("--dt", "0.01"), 0.01)):
        res = qmckit(*base, *extra)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["dt"] == dt


RUN = ["run", "bec", "--n", "24", "--lam", "2.8284271247461903", "--a", "0.1", "--alpha", "0.6",
       "--walkers", "120", "--steps", "3000", "--block", "50", "--seed", "7"]


def comparable(result):
    return {k: v for k, v in result.items() if k not in ("wall_s", "profile")}  # timings differ run to run


def test_sigkill_then_resume_matches_uninterrupted_run(tmp_path):
    checkpoint = tmp_path / "run.h5"
    proc = subprocess.Popen([*QMCKIT, *RUN, "--checkpoint", str(checkpoint), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    blocks_done = 0
    while time.monotonic() < deadline and proc.poll() is None and blocks_done < 3:
        if checkpoint.exists():
            with h5py.File(checkpoint, "r") as f:
                blocks_done = read_attrs(f)["blocks_done"]
        time.sleep(0.05)  # polling interval, not a wait for the result
    assert proc.poll() is None, "the run ended before it could be killed; make it longer"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # only now: run first, and the killed run could reach its last block (and checkpoint) before the kill
    uninterrupted = qmckit(*RUN, "--json")
    with h5py.File(checkpoint, "r") as f:
        attrs = read_attrs(f)
    assert 3 <= attrs["blocks_done"] < 60  # killed mid-run, checkpoint intact
    resumed = qmckit("run", "bec", "--resume", str(checkpoint), "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    assert comparable(json.loads(resumed.stdout)) == comparable(json.loads(uninterrupted.stdout))
    # a clashing parameter on resume is refused in one line
    clash = qmckit("run", "bec", "--resume", str(checkpoint), "--alpha", "0.7")
    assert clash.returncode == 2 and "--alpha" in clash.stderr and len(clash.stderr.strip().splitlines()) == 1


def test_paused_and_resumed_run_in_process_matches(tmp_path):
    config = dict(system="bec", params=dict(n=6, lam=1.0, a=0.2, alpha=0.5), sampler="brute", walkers=30,
                  steps=200, block=20, seed=3)
    whole = VMCRun(RunConfig(**config)).run()
    stop = threading.Event()
    first = VMCRun(RunConfig(**config), checkpoint_path=tmp_path / "c.h5")
    for done, _ in first.blocks(stop):
        if done == 4:
            stop.set()
    assert first.blocks_done == 4
    again = VMCRun.resume(tmp_path / "c.h5").run()
    assert comparable(again) == comparable(whole)
