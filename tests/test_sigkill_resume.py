"""SIGKILL in the middle of a run, then ``--resume`` (issue 25 item 7): the resumed run prints the JSON of an
uninterrupted run, number for number (all but the wall time), for VMC and DMC of every system (VMC only for the
lattice). The kill comes once the first block's checkpoint is on disk and before the last one; the test checks
that the run really was interrupted."""
import json
import os
import signal
import subprocess
import sys
import time

import h5py
import pytest

from qmckit.systems import SYSTEMS

QMCKIT = [sys.executable, "-m", "qmckit", "run"]
ARGS = {"bec": ["--n", "6"], "atom": ["--element", "He"], "molecule": ["--xyz", "h2", "--basis", "sto-3g"],
        "helium": ["--n", "16"], "lattice": ["--L", "3", "--doping", "0.2"], "qdot": ["--n", "2"]}
RUN = ["--walkers", "20", "--steps", "800", "--block", "10", "--equil", "20", "--seed", "5", "--json"]
CASES = [(name, method) for name in SYSTEMS for method in ("vmc", "dmc")
         if name in ARGS and not (name == "lattice" and method == "dmc")]


def _blocks_done(path) -> int:
    try:
        with h5py.File(path, "r") as f:
            return int(json.loads(f.attrs["blocks_done"]))
    except (OSError, KeyError):
        return -1


@pytest.mark.parametrize("name, method", CASES)
def test_sigkill_then_resume_gives_the_uninterrupted_json(name, method, tmp_path):
    if name == "molecule":
        pytest.importorskip("pyscf")
    args = QMCKIT + [name, *ARGS[name], *RUN] + (["--method", "dmc", "--dt", "0.005"] if method == "dmc" else [])
    if name == "helium" and method == "dmc":
        args += ["--sampler", "drift"]
    whole = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert whole.returncode == 0, whole.stderr
    path = tmp_path / "run.h5"
    proc = subprocess.Popen(args + ["--checkpoint", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while _blocks_done(path) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    # killed, not finished: a run that had already ended would exit 0 (the kill then finds no process to stop)
    assert proc.wait() == -signal.SIGKILL, "the run ended before the kill: nothing was interrupted"
    done = _blocks_done(path)
    assert done >= 1, "no block's checkpoint was on disk at the kill"
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["config"])
    assert done * config["block"] < config["steps"], f"the checkpoint holds the whole run ({done} blocks)"
    resumed = subprocess.run(QMCKIT + [name, "--resume", str(path), "--json"], capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    a, b = json.loads(whole.stdout), json.loads(resumed.stdout)
    a.pop("wall_s"), b.pop("wall_s"), a.pop("profile"), b.pop("profile")
    assert b == a
