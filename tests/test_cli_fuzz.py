"""Hypothesis fuzzes ``qmckit run`` (issue 25 item 7): any value of any system parameter flag and of the run flags —
NaN, ±inf, huge, negative, zero, text where a number belongs — ends with exit status 0 or 2 and never a
traceback. Runs are kept tiny (a few walkers and steps) so that a value that passes validation really runs."""
import contextlib
import io

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from qmckit import cli  # noqa: E402
from qmckit.systems import SYSTEMS  # noqa: E402

FUZZED_SYSTEMS = ("bec", "atom", "qdot", "helium", "lattice")  # the molecule needs PySCF and seconds per RHF
NUMBERS = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e308", "-1e308", "0", "-1", "1e-300", "abc", "", "3", "0.5", "2"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10 ** 12, max_value=10 ** 12).map(str))
RUN_FLAGS = ("--dt", "--step", "--energy-cap", "--feedback-time", "--target-walkers", "--dmc-equil", "--acceptance",
             "--every", "--block", "--seed")


def _argv(data, system):
    cls = SYSTEMS[system]
    argv = ["run", system, "--walkers", str(data.draw(st.integers(1, 4))), "--steps", str(data.draw(st.integers(1, 6))),
            "--equil", "2", "--backend", "cpu", "--json"]
    if system != "lattice":
        argv += ["--method", data.draw(st.sampled_from(["vmc", "dmc"]))]
        for flag in data.draw(st.lists(st.sampled_from(RUN_FLAGS), max_size=3, unique=True)):
            argv += [flag, data.draw(NUMBERS)]
    for info in cls.parameters():
        if isinstance(info.default, bool) or not data.draw(st.booleans()):
            continue
        choices = info.spec.choices if info.spec.choices else None
        value = data.draw(st.sampled_from(list(map(str, choices)) + ["nonsense"]) if choices else NUMBERS)
        argv += [info.flag, value]
    return argv


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(data=st.data())
def test_any_flag_value_exits_0_or_2_without_a_traceback(data):
    system = data.draw(st.sampled_from(FUZZED_SYSTEMS))
    argv = _argv(data, system)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:  # argparse's own refusals
            code = exit_.code
    assert code in (0, 2), (argv, err.getvalue()[-2000:])
    assert "Traceback" not in err.getvalue(), argv
    if code == 2:
        errors = [line for line in err.getvalue().splitlines() if "error:" in line]
        assert len(errors) == 1, (argv, err.getvalue())
