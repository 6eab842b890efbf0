"""What the command line prints besides its result (issue 26): a bar on a terminal only, warnings kept short."""
import io
import subprocess
import sys
import warnings

from qmckit.terminal import Progress, collected_warnings


def test_warnings_become_one_counting_line_unless_verbose():
    quiet = io.StringIO()
    with collected_warnings(False, stream=quiet):
        for k in range(3):
            warnings.warn(f"reblock: series {k} too short", RuntimeWarning)
    assert quiet.getvalue().splitlines() == ["qmckit: 3 warnings about error bars and settings hidden (-v shows them)"]
    loud = io.StringIO()
    with collected_warnings(True, stream=loud):
        for k in (0, 1, 1):
            warnings.warn(f"reblock: series {k} too short", RuntimeWarning)
    assert loud.getvalue().splitlines() == ["qmckit: warning: reblock: series 0 too short",
                                            "qmckit: warning: reblock: series 1 too short"]


def test_the_bar_draws_each_phase_on_a_terminal_and_nothing_otherwise():
    silent = io.StringIO()
    off = Progress(False, stream=silent)
    off(3, 10, "equilibration")
    off.step("next")
    off.close()
    assert silent.getvalue() == ""
    shown = io.StringIO()
    on = Progress(True, stream=shown, mininterval=0)
    on(5, 10, "equilibration")
    on(1, 4, "blocks")
    on.close()
    text = shown.getvalue()
    assert "qmckit: equilibration" in text and "5/10" in text and "qmckit: blocks" in text and "1/4" in text


def test_a_piped_run_prints_its_result_and_its_own_warnings_only():
    res = subprocess.run([sys.executable, "-m", "qmckit", "run", "bec", "--walkers", "10", "--steps", "50"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0
    # the run's own warning (too short a series, naming the steps that would do) and nothing else: no bar
    assert res.stderr.splitlines() == [line for line in res.stderr.splitlines() if line.startswith("qmckit: warning: ")]
    assert len(res.stderr.splitlines()) == 1 and "\r" not in res.stderr and "bec vmc" in res.stdout
