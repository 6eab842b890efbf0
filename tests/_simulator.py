"""Run a test module's ``_child()`` under the CUDA simulator in a subprocess (so NUMBA_ENABLE_CUDASIM
never leaks into the other tests) and return the JSON it printed after ``marker``."""
import json
import os
import subprocess
import sys


def simulator_results(path: str, marker: str, timeout: int = 900) -> dict:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=timeout)
    line = next((l for l in proc.stdout.splitlines() if l.startswith(marker)), None)
    assert line is not None, f"simulator child failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return json.loads(line[len(marker):])


def import_without_simulator(module: str) -> tuple[bool, str]:
    """Import ``module`` in a fresh process without NUMBA_ENABLE_CUDASIM: (whether that import loaded
    numba.cuda, repr of its ``available()``)."""
    code = (f"import sys; import {module} as m; before = 'numba.cuda' in sys.modules; "
            "print(before, repr(m.available()))")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported, available = proc.stdout.split()
    return imported == "True", available
