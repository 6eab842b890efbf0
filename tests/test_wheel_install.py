"""qmckit installed from its wheel works outside the checkout (issue 26): the reference data ship inside the package.

Builds the wheel, installs it with the ``chem`` extra into a fresh virtual environment, and from a temporary folder
runs ``qmckit reproduce STUDY`` (fast) for every study, ``qmckit run molecule --xyz h2o --basis sto-3g`` and a short
run of every system. Before the data moved into the wheel, the first of these failed with "reference data not found at
…/site-packages/data/bec_table72.json".
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHORT = ["--walkers", "4", "--steps", "20", "--seed", "1", "--json"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the venv's python, a working folder outside the checkout)"""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(root / "dist"),
                    str(REPO)], check=True, timeout=600)
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300)
    python = root / "venv" / "bin" / "python"
    wheel = next((root / "dist").glob("qmckit-*.whl"))
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"{wheel}[chem]"], check=True, timeout=1200)
    work = root / "elsewhere"
    work.mkdir()
    return python, work


def _qmckit(installed, *args, timeout=600):
    python, work = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QMCKIT_FAST")}
    return subprocess.run([str(python), "-m", "qmckit", *args], cwd=work, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_installed_package_reads_its_own_data(installed):
    python, work = installed
    code = "import qmckit, qmckit.resources as r; print(qmckit.__file__); print(r.data_path('atoms.json'))"
    out = subprocess.run([str(python), "-c", code], cwd=work, capture_output=True, text=True, check=True).stdout.split()
    venv = str(python.parents[1])
    assert out[0].startswith(venv) and out[1].startswith(venv) and Path(out[1]).is_file(), out


# one published number each report must carry (JSON path → value)
PUBLISHED = {"bec": (("sets", "B1", "params", "a"), 0.00433),
             "atoms": (("ne_verdict", "sandsdalen", "energy", 0), -127.732),
             "molecules": (("fig7_cpu", 0, "paper", "total_standard"), 3.2),
             "helium": (("published", "energy_per_particle", 0), -5.7974),
             "lattice": (("table61", 0, "thesis_table41", "n_electrons"), 24),
             "tio2": (("table_ii", 0, "paper_cpu_ms"), 2.77)}


@pytest.mark.parametrize("study", list(PUBLISHED))
def test_reproduce_every_study_from_outside_the_checkout(installed, study):
    from qmckit.studies.reports import STUDIES

    res = _qmckit(installed, "reproduce", study)
    assert res.returncode == 0, res.stderr[-2000:]
    stem = STUDIES[study].stem
    report = json.loads((installed[1] / f"qmckit-{study}-{stem}" / f"{stem}.json").read_text())
    path, value = PUBLISHED[study]
    node = report
    for key in path:
        node = node[key]
    assert report["study"] == study and report["precision"] == "fast" and node == value
    assert (installed[1] / f"qmckit-{study}-{stem}" / f"{stem}.png").stat().st_size > 10000


@pytest.mark.parametrize("system, extra", [("bec", []), ("atom", []), ("helium", []), ("lattice", []), ("qdot", []),
                                           ("molecule", ["--xyz", "h2o", "--basis", "sto-3g"])])
def test_a_short_run_of_every_system(installed, system, extra):
    res = _qmckit(installed, "run", system, *extra, *SHORT)
    assert res.returncode == 0, res.stderr[-2000:]
    result = json.loads(res.stdout)
    assert result["system"] == system and result["estimates"]
