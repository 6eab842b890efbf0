import os

# Tests and notebooks (their kernels inherit this environment) run at CI-friendly sizes.
os.environ.setdefault("QMCKIT_FAST", "1")
# the exercise notebooks (notebooks/exercises) run the teacher's solutions in place of the students' cells
os.environ.setdefault("QMCKIT_EXERCISE_SOLUTIONS", "1")

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


def pytest_collection_finish(session):
    """Start the CUDA-simulator children of the collected test modules in the background (tests/_simulator.py):
    minutes of single-threaded work that then runs beside the other tests. QMCKIT_PREFETCH_SIMULATOR=0 turns it off."""
    if os.environ.get("QMCKIT_PREFETCH_SIMULATOR", "1") == "0" or session.config.option.collectonly:
        return
    paths = []
    for item in session.items:
        module = getattr(item, "module", None)
        path = getattr(module, "__file__", None)
        # a simulator module: a _child() that simulator_results runs, and the MARKER its results follow
        if path and callable(getattr(module, "_child", None)) and isinstance(getattr(module, "MARKER", None), str) \
                and path not in paths:
            paths.append(path)
    if paths:
        import _simulator  # tests/ is on sys.path once its modules are collected

        _simulator.prefetch(paths)


def pytest_sessionfinish(session, exitstatus):
    import sys

    if "_simulator" in sys.modules:
        sys.modules["_simulator"].stop_prefetching()
