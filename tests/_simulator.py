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
