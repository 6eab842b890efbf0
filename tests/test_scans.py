"""Parameter scans (issue 27): grids, point seeds, serial against a 2-worker Dask cluster, the closed form of the
non-interacting BEC scan, golden-section refinement, and a store that survives a SIGKILL of the client."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import qmckit
from qmckit.scans import ScanStore, parse_axis, point_seed, refine_minimum
from qmckit.scans import execute as scan_module
from qmckit.systems.bec import noninteracting_energy_per_particle

# non-interacting bosons (a = 0): ψ_T is exact at α = ½, where E/N = (2 + λ)/2 with zero variance
FREE = dict(n=10, lam=1.0, a=0.0, walkers=100, steps=1000)
ALPHAS = [0.32, 0.42, 0.52, 0.62, 0.72]  # the minimum α = ½ is not on the grid


def test_axes_parse_ranges_and_lists_and_refuse_bad_ones():
    assert parse_axis("alpha=0.40:0.60:5") == ("alpha", [0.4, 0.45, 0.5, 0.55, 0.6])
    assert parse_axis("n=10,20,50") == ("n", [10, 20, 50])
    assert parse_axis("walkers=100:400:4") == ("walkers", [100, 200, 300, 400])  # integer ends: integers
    assert parse_axis("alpha=0:1:3") == ("alpha", [0, 0.5, 1])
    assert parse_axis("element=He,Be") == ("element", ["He", "Be"])
    for bad in ("alpha", "alpha=0.4:0.6", "alpha=0.4:x:3", "alpha=0.4:0.6:1"):
        with pytest.raises(ValueError, match="--param"):
            parse_axis(bad)


def test_a_point_seed_depends_on_the_scan_seed_and_the_point_only():
    a = point_seed(7, "bec", {"alpha": 0.5, "n": 10})
    assert a == point_seed(7, "bec", {"n": 10, "alpha": 0.5})  # not on the order of the names
    assert a != point_seed(8, "bec", {"alpha": 0.5, "n": 10}) and a != point_seed(7, "bec", {"alpha": 0.51, "n": 10})
    assert 0 <= a < 2**31 - 1


def test_the_free_boson_scan_follows_the_closed_form_and_its_minimum_refines_to_one_half(monkeypatch):
    result = qmckit.scan("bec", {"alpha": ALPHAS}, FREE, seed=11, client="serial")
    for row in result.rows:
        est = row["estimates"]["energy_per_particle"]
        exact = noninteracting_energy_per_particle(row["point"]["alpha"], FREE["lam"])
        assert est["error"] > 0 and abs(est["mean"] - exact) < 3 * est["error"], (row["point"], est, exact)
    calls = []
    original = scan_module.run_point
    monkeypatch.setattr(scan_module, "run_point", lambda *args: calls.append(args) or original(*args))
    refined, alpha0, energy0 = refine_minimum("bec", result, "alpha", "energy_per_particle", rounds=8,
                                              client="serial")
    assert len(refined.rows) == len(ALPHAS) + 8 and len(calls) == 8  # one new point a round, none run again
    assert [r["seed"] for r in refined.rows[:len(ALPHAS)]] == [r["seed"] for r in result.rows]  # the scan's seeds
    assert abs(alpha0 - 0.5) < 1e-3, alpha0
    assert abs(energy0 - 1.5) < 1e-4


def test_a_row_reruns_alone_with_its_seed():
    (row,) = qmckit.scan("bec", {"alpha": [0.45]}, FREE, seed=3, client="serial").rows
    res = subprocess.run([sys.executable, "-m", "qmckit", "run", "bec", "--n", "10", "--lam", "1", "--a", "0",
                          "--alpha", "0.45", "--walkers", "100", "--steps", "1000", "--seed", str(row["seed"]),
                          "--json"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["estimates"] == row["estimates"]


def test_two_dask_workers_give_the_serial_table_bit_for_bit():
    pytest.importorskip("distributed")
    grid = {"alpha": [0.45, 0.5, 0.55], "n": [5, 10]}
    fixed = dict(lam=1.0, a=0.00433, walkers=40, steps=300)
    serial = qmckit.scan("bec", grid, fixed, seed=5, client="serial").frame().drop(columns="wall_s")
    dask = qmckit.scan("bec", grid, fixed, seed=5, workers=2).frame().drop(columns="wall_s")
    assert len(serial) == 6 and serial.equals(dask)


SCRIPT = textwrap.dedent("""
    import sys, qmckit
    if __name__ == "__main__":
        qmckit.scan("bec", {"alpha": [0.40, 0.44, 0.48, 0.52, 0.56, 0.60]}, dict(n=10, lam=1.0, a=0.0, walkers=200,
                    steps=int(sys.argv[2])), seed=9, client="serial", store=sys.argv[1])
""")


def test_a_scan_killed_mid_way_resumes_to_the_uninterrupted_table(tmp_path):
    store = tmp_path / "scan.h5"
    script = tmp_path / "scan.py"
    script.write_text(SCRIPT)
    steps = "4000"
    proc = subprocess.Popen([sys.executable, str(script), str(store), steps])
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:  # kill once two rows are on disk
        if store.exists() and len(ScanStore(store)) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the scan finished before it could be killed: make its points longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = ScanStore(store)
    assert 2 <= len(kept) < 6
    subprocess.run([sys.executable, str(script), str(store), steps], check=True, timeout=600)
    resumed = ScanStore(store)
    subprocess.run([sys.executable, str(script), str(tmp_path / "reference.h5"), steps], check=True, timeout=600)
    reference = ScanStore(tmp_path / "reference.h5")
    assert sorted(resumed.rows) == sorted(reference.rows) and len(resumed) == 6
    for key, row in reference.rows.items():
        assert resumed.rows[key]["estimates"] == row["estimates"] and resumed.rows[key]["seed"] == row["seed"]
    for key, row in kept.rows.items():  # the rows written before the kill were kept, not rerun
        assert resumed.rows[key]["wall_s"] == row["wall_s"]


def test_a_store_of_another_scan_is_refused(tmp_path):
    store = tmp_path / "scan.h5"
    first = qmckit.scan("bec", {"alpha": [0.5]}, FREE, seed=1, client="serial", store=store)
    with pytest.raises(ValueError, match="another scan"):
        qmckit.scan("bec", {"alpha": [0.5]}, FREE, seed=2, client="serial", store=store)
    with pytest.raises(ValueError, match="another scan"):  # the store object too, not only its file
        qmckit.scan("bec", {"alpha": [0.5]}, FREE, seed=2, client="serial", store=first.store)


def test_a_point_may_carry_its_own_seed():
    rows = qmckit.scan("bec", {"seed": [5, 6]}, FREE | {"alpha": 0.45}, client="serial").rows
    assert [r["seed"] for r in rows] == [5, 6] and rows[0]["estimates"] != rows[1]["estimates"]


@pytest.mark.parametrize("args, words", [
    (["--param", "beta=1,2"], "'beta' is neither a parameter of bec"),
    (["--param", "alpha=0.4:0.6"], "--param alpha"),
    (["--param", "alpha=0.4,0.5", "--alpha", "0.5"], "--param alpha: also fixed"),
    ([], "--param: give at least one axis"),
])
def test_bad_scans_end_with_one_line(args, words):
    res = subprocess.run([sys.executable, "-m", "qmckit", "scan", "bec", "--serial", *args], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_the_cli_prints_one_json_row_per_point():
    res = subprocess.run([sys.executable, "-m", "qmckit", "scan", "bec", "--param", "alpha=0.45,0.55", "--a", "0",
                          "--n", "10", "--walkers", "20", "--steps", "200", "--serial", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["rows"]
    assert [r["alpha"] for r in rows] == [0.45, 0.55]
    assert all({"seed", "estimates", "acceptance", "wall_s"} <= set(r) and r["a"] == 0 for r in rows)
    assert all(math.isfinite(r["estimates"]["energy_per_particle"]["mean"]) for r in rows)


def test_a_killed_worker_is_restarted_and_its_point_rerun():
    distributed = pytest.importorskip("distributed")
    grid = {"alpha": [0.42, 0.46, 0.54, 0.58]}
    fixed = dict(n=10, lam=1.0, a=0.0, walkers=200, steps=3000)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
        killed = []

        def kill_one(done, total, row):  # after the first finished point, while the others run
            if not killed:
                victim = next(iter(pids.values()))
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

        result = qmckit.scan("bec", grid, fixed, seed=4, client=client, progress=kill_one)
        client.wait_for_workers(2, timeout=60)
        assert killed and killed[0] not in client.run(os.getpid).values()  # the nanny started a new process
    serial = qmckit.scan("bec", grid, fixed, seed=4, client="serial")
    assert [r["estimates"] for r in result.rows] == [r["estimates"] for r in serial.rows]


def test_the_scan_panel_runs_its_grid_and_refuses_a_bad_axis_in_one_line():
    from qmckit.widgets import ScanPanel

    panel = ScanPanel("bec", workers=0, seed=3, alpha="0.45,0.55", n="10", a="0", walkers="20", steps="200")
    assert panel.grid() == ({"alpha": [0.45, 0.55]}, {"n": 10, "lam": 1.0, "a": 0, "method": "vmc", "dt": 0.05,
                                                       "walkers": 20, "steps": 200})
    result = panel.run_sync()
    serial = qmckit.scan("bec", {"alpha": [0.45, 0.55]}, dict(n=10, lam=1.0, a=0, method="vmc", dt=0.05, walkers=20,
                                                              steps=200), seed=3, client="serial")
    assert [r["estimates"] for r in result.rows] == [r["estimates"] for r in serial.rows]
    assert len(panel.plot.outputs) == 1 and panel.progress.description == "done"
    panel.boxes["alpha"].value = "0.5"
    panel.boxes["method"].value = "vmc,dmc"  # a text axis: the points in order on the plot
    panel.boxes["steps"].value = "100"
    assert len(panel.run_sync().rows) == 2 and len(panel.plot.outputs) == 1
    panel.boxes["alpha"].value = "0.4:x:5"
    assert panel.run_sync() is None
    assert panel.status.value.startswith("error: alpha") and panel.plot.outputs == ()


def test_a_resumed_scan_deletes_what_a_killed_writer_left_half_written(tmp_path):
    store = tmp_path / "scan.h5"
    qmckit.scan("bec", {"alpha": [0.5]}, FREE, seed=1, client="serial", store=store)
    stale = tmp_path / ".scan.h5.tmp-k1ll3d.h5"  # atomic_h5's temporary, as SIGKILL leaves it
    stale.write_bytes(b"half a table")
    other = tmp_path / ".other.h5.tmp-k1ll3d.h5"  # another file's: not this store's to delete
    other.write_bytes(b"")
    ScanStore(store)  # a reader deletes nothing (a writer may be using its temporary)
    assert stale.exists()
    qmckit.scan("bec", {"alpha": [0.5, 0.55]}, FREE, seed=1, client="serial", store=store)
    assert not stale.exists() and other.exists() and len(ScanStore(store)) == 2


def test_the_rows_carry_their_runs_warnings_and_the_cli_counts_them_in_one_line(capsys):
    from qmckit.cli import main

    short = FREE | {"steps": 40}  # too short a series for honest error bars: every run warns
    result = qmckit.scan("bec", {"alpha": [0.5, 0.55]}, short, client="serial")
    assert len(result.warned()) == 2 and all(result.frame()["warnings"].str.contains("steps"))
    assert main(["scan", "bec", "--param", "alpha=0.5,0.55", "--n", "10", "--a", "0", "--walkers", "50",
                 "--steps", "40", "--serial"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: 2 of 2 points warned, e.g. at alpha=0.5:")
