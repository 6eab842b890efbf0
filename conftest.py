import os

# Tests and notebooks (their kernels inherit this environment) run at CI-friendly sizes.
os.environ.setdefault("QMCKIT_FAST", "1")

_NOTEBOOK_SECONDS: dict = {}


def pytest_runtest_logreport(report):
    """Sum each notebook's cell times (setup, call and teardown), for the summary below."""
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _NOTEBOOK_SECONDS[path] = _NOTEBOOK_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line per notebook: its whole run time (issue 26 asks for at most two minutes each in fast mode)."""
    if _NOTEBOOK_SECONDS:
        mode = "fast mode" if os.environ.get("QMCKIT_FAST", "") not in ("", "0") else "full size"
        terminalreporter.write_line(f"notebook run times ({mode}): " + ", ".join(
            f"{os.path.basename(path)} {seconds:.0f} s" for path, seconds in sorted(_NOTEBOOK_SECONDS.items())))
