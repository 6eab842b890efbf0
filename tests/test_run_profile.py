"""Every run's profile (qmckit.perf.run_profile, issue 31): the phases a run's work falls in, their calls, fractions
that sum to 1, a checkpoint's and a resume's share, the GPU split of a sweep into kernel and transfers, and
``qmckit run --profile``."""
import json
import os
import subprocess
import sys

import pytest

from qmckit.perf import run_profile
from qmckit.perf.run_profile import RunTimer, format_profile, profile_dict, timed_sweep
from qmckit.runs import RunConfig, make_run, resume_run, usable_cores

TWO_CORES = pytest.mark.skipif(usable_cores() < 2, reason="analysis async needs a second core (refused on one)")
AFFINITY = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")


def _one_core():
    """A child process's preexec_fn: run on one of this process's cores."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def _fractions_sum(profile):
    return sum(row["fraction"] for row in profile["phases"].values())


def test_a_vmc_and_a_dmc_run_put_their_work_in_the_right_phases(tmp_path):
    vmc = make_run(RunConfig(system="bec", params=dict(n=6), walkers=50, steps=200, block=50, seed=1)).run()
    profile = vmc["profile"]
    assert _fractions_sum(profile) == pytest.approx(1.0, abs=1e-12)
    assert set(profile["phases"]) == {"sampling", "analysis", "other"}  # no branching, no checkpoint without a path
    assert profile["phases"]["sampling"]["fraction"] > 0.5 and profile["phases"]["analysis"]["calls"] == 1
    assert profile["total_s"] >= vmc["wall_s"] and "numba threads" in profile["device"]

    steps, dmc_equil = 60, 10
    config = RunConfig(system="bec", params=dict(n=6), method="dmc", walkers=50, steps=steps, block=20,
                       dmc_equilibration=dmc_equil, equilibration=40, seed=1)
    dmc = make_run(config, checkpoint_path=tmp_path / "run.h5").run()
    phases = dmc["profile"]["phases"]
    assert _fractions_sum(dmc["profile"]) == pytest.approx(1.0, abs=1e-12)
    assert phases["branching"]["calls"] == steps + dmc_equil  # one branching per DMC step
    assert phases["checkpoint"]["calls"] == 1 + steps // 20  # after the equilibration and after every block
    # sampling: the VMC equilibration's pieces, each block's cache rebuild and one sweep per DMC step
    assert phases["sampling"]["calls"] > steps + dmc_equil


def test_a_resumed_run_keeps_the_phases_of_its_first_part(tmp_path):
    path = tmp_path / "run.h5"
    config = RunConfig(system="bec", params=dict(n=6), walkers=40, steps=200, block=50, seed=2)
    run = make_run(config, checkpoint_path=path)
    blocks = run.blocks()
    next(blocks), next(blocks)  # two blocks done, then the process "stops"
    sampled = run.timer.totals["sampling"]
    resumed = resume_run(path)
    assert resumed.timer.totals["sampling"] == pytest.approx(sampled)  # the checkpoint after block 2 carried them
    result = resumed.run()
    assert result["profile"]["phases"]["sampling"]["seconds"] > sampled
    assert _fractions_sum(result["profile"]) == pytest.approx(1.0, abs=1e-12)


class _GpuLike:
    """A sampler that reports its kernels' time, as the GPU sweepers do with CUDA events."""

    last_kernel_s = 0.25

    def sweep(self, n, measure=True):
        return n


def test_a_gpu_sweep_is_split_into_kernel_time_and_transfers(monkeypatch):
    ticks = iter([10.0, 11.0])  # the call takes 1 s on the host clock
    monkeypatch.setattr(run_profile.time, "perf_counter", lambda: next(ticks))
    timer = RunTimer()
    assert timed_sweep(timer, _GpuLike(), 3) == 3
    assert timer.totals == {"sampling": 0.25, "transfers": 0.75}


def test_profile_fractions_and_other_from_the_wall_time():
    timer = RunTimer({"sampling": 6.0, "branching": 1.0, "checkpoint": 2.0, "analysis": 1.0},
                     {"sampling": 3, "branching": 3, "checkpoint": 1, "analysis": 1})
    profile = profile_dict(timer, wall_s=8.0, device="test")
    assert profile["total_s"] == 11.0  # the wall time (equilibration and blocks) plus checkpoints and analysis
    assert profile["phases"]["other"]["seconds"] == 1.0  # 8 s of wall time, 7 of them in phases
    assert profile["phases"]["sampling"]["fraction"] == pytest.approx(6 / 11)
    assert _fractions_sum(profile) == pytest.approx(1.0)
    assert "sampling" in format_profile(profile).splitlines()[2]


def test_cli_profile_prints_a_table_on_stderr_and_keeps_one_json_object_on_stdout():
    out = subprocess.run([sys.executable, "-m", "qmckit", "run", "bec", "--n", "4", "--walkers", "20", "--steps", "50",
                          "--json", "--profile"], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert _fractions_sum(result["profile"]) == pytest.approx(1.0, abs=1e-12)
    table = [line for line in out.stderr.splitlines() if not line.startswith("qmckit: warning")]
    assert table[0].startswith("profile on ") and table[2].startswith("sampling")


def test_the_run_model_splits_the_profile_into_study_004s_parts():
    from qmckit.perf import report

    profile = {"device": "test", "total_s": 10.0, "phases": {
        "sampling": {"seconds": 7.0, "fraction": 0.7, "calls": 100},
        "transfers": {"seconds": 0.5, "fraction": 0.05, "calls": 100},
        "measurements": {"seconds": 2.0, "fraction": 0.2, "calls": 50},
        "other": {"seconds": 0.5, "fraction": 0.05, "calls": 0}}}
    result = {"method": "vmc", "equilibration": 0, "steps": 100, "profile": profile,
              "estimates": {"energy": {"mean": 1.0, "error": 0.1, "tau": 4.5}}}
    model = report(result, period=2)
    assert (model.accelerated, model.serial, model.cpu) == pytest.approx((0.7, 0.05, 0.25))
    assert model.limit_synchronous == pytest.approx(1 / 0.3) and model.limit_masked == pytest.approx(4.0)
    assert model.saturation_point == pytest.approx(0.7 / 0.2)  # M* = P/(R − S)
    # one sweep 0.07 s, one measurement 0.04 s: α = 4/7; m_c = τ − ½ = 4 sweeps; Eq. 12 and Eq. 14
    assert model.alpha == pytest.approx(4 / 7) and model.m_c == pytest.approx(4.0)
    assert model.m_opt_sequential == pytest.approx((2 * 4.0 * 4 / 7) ** 0.5) and model.m_opt_masked == model.alpha
    assert "m_opt" in str(model) and model.period == 2


def test_a_helium_run_that_measures_apart_gets_an_analysis_period():
    from qmckit.perf import report

    run = make_run(RunConfig(system="helium", params=dict(n=32), method="vmc", walkers=10, steps=100, seed=1))
    run.run()
    model = report(run)
    assert model.period == 1 and model.alpha > 0 and model.m_c >= 0
    assert 0 < model.accelerated < 1 and model.serial == 0.0  # a CPU run has no transfers


def test_the_panels_profile_view_shows_the_last_run_and_goes_back_to_the_energy_plot():
    from qmckit.widgets.system_panel import SystemPanel

    panel = SystemPanel("bec", walkers=20, steps=60)
    panel.run(blocking=True)
    panel.profile_button.value = True
    assert panel.plot.outputs[0]["data"]["text/plain"] == "<run profile and its Amdahl model>"
    panel.profile_button.value = False
    assert panel.plot.outputs[0]["data"]["text/plain"] == "<energy trace and reblocking plot>"


@pytest.mark.parametrize("method", ["vmc", "dmc"])
@TWO_CORES
def test_async_analysis_gives_the_numbers_of_sync_bit_for_bit(method):
    config = dict(system="bec", params=dict(n=8), method=method, walkers=40, steps=120, block=40, seed=6,
                  density="r", density_every=2)
    sync = make_run(RunConfig(**config)).run()
    run = make_run(RunConfig(**config, analysis="async"))
    masked = run.run()
    assert masked["estimates"] == sync["estimates"] and masked["density"] == sync["density"]
    assert masked["profile"]["masked"]["calls"] == 120 // 2  # every density sample went through the worker
    assert "density" not in masked["profile"]["phases"] and _fractions_sum(masked["profile"]) == pytest.approx(1)
    assert run._analysis_pool is None  # the worker thread ends with the last block


def test_async_analysis_without_a_density_is_refused_in_one_line():
    with pytest.raises(ValueError, match="^analysis async moves the density histogram beside the sampler"):
        RunConfig(system="bec", analysis="async")
    with pytest.raises(ValueError, match="^analysis must be one of sync, async"):
        RunConfig(system="bec", analysis="later")


@AFFINITY
def test_async_analysis_on_one_core_is_refused_in_one_line_with_exit_2():
    """A CPU-only async run on one usable core has no core to mask the histogram on: refused up front (the CLI with
    exit 2 and no traceback), while the same run on two cores is accepted."""
    args = [sys.executable, "-m", "qmckit", "run", "bec", "--n", "4", "--walkers", "10", "--steps", "20",
            "--measure-density", "x", "--analysis", "async", "--backend", "cpu"]
    one_core = subprocess.run(args, capture_output=True, text=True, timeout=300,
                              preexec_fn=_one_core)
    assert one_core.returncode == 2, one_core.stderr
    lines = one_core.stderr.strip().splitlines()
    assert len(lines) == 1 and "analysis async" in lines[0] and "one core" in lines[0], one_core.stderr
    if len(os.sched_getaffinity(0)) >= 2:
        RunConfig(system="bec", params=dict(n=4), density="x", analysis="async", backend="cpu")  # accepted


@TWO_CORES
@AFFINITY
def test_an_async_checkpoint_resumed_on_one_core_goes_on_sync_with_the_same_numbers(tmp_path):
    config = dict(system="bec", params=dict(n=6), walkers=20, steps=60, block=20, seed=4, density="x")
    whole = make_run(RunConfig(**config)).run()
    path = tmp_path / "run.h5"
    next(make_run(RunConfig(**config, analysis="async"), checkpoint_path=path).blocks())  # one block, then it "stops"
    code = ("import json, sys; from qmckit.runs import resume_run; r = resume_run(sys.argv[1]).run(); "
            "print(json.dumps([r['estimates'], r['density']]))")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300,
                         preexec_fn=_one_core)
    assert out.returncode == 0, out.stderr
    assert "goes on with analysis sync" in out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps([whole["estimates"], whole["density"]]))


@TWO_CORES
def test_a_system_that_measures_apart_takes_a_density_too_and_async_keeps_its_numbers():
    # helium measures V, T_lap and T_grad apart from its sweeps; with a density both went through one loop
    config = dict(system="helium", params=dict(n=32), walkers=5, steps=40, block=20, seed=2, density="x")
    sync = make_run(RunConfig(**config)).run()
    masked = make_run(RunConfig(**config, analysis="async")).run()
    assert set(sync["estimates"]) > {"energy_per_particle", "energy_variance"}  # the observables are there
    assert masked["estimates"] == sync["estimates"] and masked["density"] == sync["density"]


def test_a_resumed_dmc_run_times_its_later_steps_into_the_restored_profile(tmp_path):
    path = tmp_path / "run.h5"
    config = RunConfig(system="bec", params=dict(n=6), method="dmc", walkers=30, steps=60, block=20,
                       dmc_equilibration=5, seed=3)
    run = make_run(config, checkpoint_path=path)
    blocks = run.blocks()
    next(blocks)  # one block of 20 steps, then the process "stops"
    before = run.timer.counts["branching"]
    result = resume_run(path).run()
    assert result["profile"]["phases"]["branching"]["calls"] == before + 40  # the two blocks after the resume


def test_density_every_without_a_density_is_refused():
    with pytest.raises(ValueError, match="^density_every is the sweeps between density samples; set density too"):
        RunConfig(system="bec", density_every=5)
