"""Run a test module's ``_child()`` under the CUDA simulator in a subprocess (so NUMBA_ENABLE_CUDASIM
never leaks into the other tests) and return the JSON it printed after ``marker``.

Run as a script (``python _simulator.py test_module.py``) it makes the simulator's shared arrays
thread-safe and then runs ``test_module.py`` as ``__main__``: that is how :func:`simulator_results`
starts every child."""
import json
import os
import runpy
import subprocess
import sys
import threading


def thread_safe_shared_arrays():
    """Make ``cuda.shared.array`` under numba's simulator hand every thread of a block the same array.

    The simulator (``kernelapi.FakeCUDAShared.array``) finds a block's array by its call site and
    creates it when missing, with no lock between the lookup and the store. A thread switch there
    gives two threads of one block two different arrays, and one of them then reads ``np.empty``
    garbage: CI saw it once, the Kahan GEMM's Φ off by 4e7 in test_molecule_speedup. The
    replacement does the lookup and the store under one lock; everything else is as before."""
    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    cls = kernelapi.FakeCUDAShared
    if getattr(cls, "_qmckit_locked", False):
        return
    original = cls.array
    lock = threading.Lock()

    def array(self, shape, dtype):
        if shape == 0:  # dynamic shared memory: one buffer, no lookup
            return original(self, shape, dtype)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)  # the key the simulator uses
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = kernelapi.np.empty(shape, dtype)
                self._allocations[caller] = res
        return res

    cls.array = array
    cls._qmckit_locked = True


def simulator_results(path: str, marker: str, timeout: int = 900) -> dict:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), path], env=env, capture_output=True,
                          text=True, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(marker)]
    assert proc.returncode == 0 and lines, f"simulator child failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return json.loads(lines[-1][len(marker):])


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


if __name__ == "__main__":  # the simulator child: python _simulator.py test_module.py
    thread_safe_shared_arrays()
    runpy.run_path(sys.argv[1], run_name="__main__")
