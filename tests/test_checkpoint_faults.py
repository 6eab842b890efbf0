"""Damaged checkpoints (issue 25 item 7): a truncated file, a file that is not HDF5, an HDF5 file missing what a run
needs, and a checkpoint of another system each give exit status 2 and one line naming the file, with no traceback,
and leave the file as it was."""
import subprocess
import sys

import h5py
import pytest

QMCKIT = [sys.executable, "-m", "qmckit", "run"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("ck") / "run.h5"
    res = subprocess.run(QMCKIT + ["atom", "--element", "He", "--walkers", "10", "--steps", "40", "--seed", "3",
                                   "--checkpoint", str(path), "--json"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return path


def _damaged(checkpoint, tmp_path, kind):
    path = tmp_path / f"{kind}.h5"
    data = checkpoint.read_bytes()
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 3])
    elif kind == "not_hdf5":
        path.write_bytes(b"not a checkpoint\n" * 100)
    else:  # an HDF5 checkpoint whose walkers are gone
        path.write_bytes(data)
        with h5py.File(path, "r+") as f:
            del f["walkers"]
    return path


@pytest.mark.parametrize("kind, says", [("truncated", "cannot be read as a checkpoint"),
                                        ("not_hdf5", "cannot be read as a checkpoint"),
                                        ("no_walkers", "is damaged: KeyError")])
@pytest.mark.parametrize("system", ["atom", "lattice"])
def test_a_damaged_checkpoint_is_refused_in_one_line_and_left_alone(checkpoint, tmp_path, kind, says, system):
    if system == "lattice" and kind == "no_walkers":
        pytest.skip("an atom checkpoint given to the lattice is the wrong-system case (below)")
    path = _damaged(checkpoint, tmp_path, kind)
    before = path.read_bytes()
    args = ["--element", "He"] if system == "atom" else []
    res = subprocess.run(QMCKIT + [system, *args, "--resume", str(path)], capture_output=True, text=True)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qmckit: error: resume: ") and str(path) in lines[0], lines
    assert says in lines[0] and "Traceback" not in res.stderr
    assert path.read_bytes() == before


def test_a_checkpoint_of_another_system_is_refused(checkpoint):
    before = checkpoint.read_bytes()
    res = subprocess.run(QMCKIT + ["bec", "--resume", str(checkpoint)], capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.strip() == "qmckit: error: --resume: the checkpoint holds a run of system 'atom', not 'bec'"
    assert checkpoint.read_bytes() == before


def test_a_gpu_checkpoint_on_a_machine_without_a_gpu_is_refused_in_one_line(checkpoint, tmp_path):
    """A checkpoint keeps the backend it ran on; where that backend is missing, resume says so in one line."""
    import json

    path = tmp_path / "gpu.h5"
    path.write_bytes(checkpoint.read_bytes())
    with h5py.File(path, "r+") as f:
        config = json.loads(f.attrs["config"])
        f.attrs["config"] = json.dumps(config | {"backend": "cuda"})
    before = path.read_bytes()
    res = subprocess.run(QMCKIT + ["atom", "--resume", str(path)], capture_output=True, text=True)
    if res.returncode == 0:
        pytest.skip("this machine has a GPU: the checkpoint resumes on it")
    assert res.returncode == 2 and res.stderr.strip() == ("qmckit: error: --resume: the checkpoint cannot continue here: "
                                                          "backend cuda: no CUDA GPU found (use cpu or auto)")
    assert path.read_bytes() == before


def test_a_checkpoint_is_not_moved_to_another_backend_silently(checkpoint):
    """A CPU checkpoint continues on the CPU; asking to continue it on the GPU is refused in one line (the run's
    numbers are reproducible only on the backend that made them: the GPU's last bits differ)."""
    before = checkpoint.read_bytes()
    res = subprocess.run(QMCKIT + ["atom", "--resume", str(checkpoint), "--backend", "cuda"], capture_output=True,
                         text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().splitlines() == ["qmckit: error: --resume: --backend differs from the checkpoint; omit "
                                               "it to continue the saved run"], res.stderr
    assert checkpoint.read_bytes() == before
