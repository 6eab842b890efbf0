"""Run a test module's ``_child()`` under the CUDA simulator in a subprocess (so NUMBA_ENABLE_CUDASIM
never leaks into the other tests) and return the JSON it printed after ``marker``.

Run as a script (``python _simulator.py test_module.py``) it makes the simulator's shared arrays and its swaps of
the ``cuda`` module thread-safe and then runs ``test_module.py`` as ``__main__``: that is how :func:`simulator_results`
starts every child.

The children are single-threaded Python (the simulator runs a kernel's threads one after another) and take minutes
in all, so the test session starts them in the background, one at a time, as soon as the tests are collected
(:func:`prefetch`, called from the root ``conftest.py``): on CI's two cores they run beside the other tests, and a
test that needs a child's results waits for it (or runs it itself if it has not started)."""
import json
import os
import runpy
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor


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


_PREFETCHED: dict = {}  # absolute path of a test module -> Future of its child's (returncode, stdout, stderr)
_RUNNING: set = set()  # the background children's processes (killed when the session ends)
_LOCK = threading.Lock()  # between starting a child and the session's end
_STOPPED = False
_POOL = None


def _run_child(path: str, timeout: int, env: dict | None = None, cwd: str | None = None) -> tuple[int, str, str]:
    """Run the child of ``path`` in ``env`` and ``cwd`` (this process's now, unless given: a background child gets
    them as they were when it was queued, not as a test has changed them since)."""
    env = dict(os.environ if env is None else env, NUMBA_ENABLE_CUDASIM="1")
    with _LOCK:
        if _STOPPED:
            raise RuntimeError("the test session has ended")
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), path], env=env, cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _RUNNING.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    finally:
        _RUNNING.discard(proc)
    return proc.returncode, out, err


def prefetch(paths, timeout: int = 900) -> None:
    """Start the simulator children of the test modules ``paths`` in the background, one after another, each with
    this process's environment and working directory as they are now, and a ``timeout`` of its own (the largest any
    child needs: a test's own timeout applies only to a child it runs itself)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(1, thread_name_prefix="simulator-child")
    env, cwd = dict(os.environ), os.getcwd()
    for path in paths:
        _PREFETCHED.setdefault(os.path.abspath(path), _POOL.submit(_run_child, path, timeout, env, cwd))


def stop_prefetching() -> None:
    """Cancel the children not started and kill the running one (the session is over)."""
    global _STOPPED
    with _LOCK:
        _STOPPED = True
        for proc in list(_RUNNING):
            proc.kill()
    if _POOL is not None:
        _POOL.shutdown(wait=False, cancel_futures=True)


def simulator_results(path: str, marker: str, timeout: int = 900) -> dict:
    future = _PREFETCHED.pop(os.path.abspath(path), None)
    if future is not None and not future.cancel():  # started in the background: wait for it
        returncode, stdout, stderr = future.result()
    else:
        returncode, stdout, stderr = _run_child(path, timeout)
    lines = [line for line in stdout.splitlines() if line.startswith(marker)]
    assert returncode == 0 and lines, f"simulator child failed:\n{stdout[-3000:]}\n{stderr[-5000:]}"
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


def thread_safe_module_swaps():
    """Make the simulator's swap of a function's ``cuda`` global for the fake module safe between block threads.

    ``kernelapi.swapped_cuda_module`` replaces every global of the function's module that is ``numba.cuda`` by the
    kernel's fake module for the call and puts the originals back after it. Two block threads inside device functions
    of one module race: the second finds the fake already there and saves nothing, the first puts ``numba.cuda`` back
    when it returns, and the second then calls ``cuda.syncthreads`` on the real module (CI saw it once in
    test_lattice_cuda: "module 'numba.cuda' has no attribute 'syncthreads'"). The replacement counts the calls inside
    each module under one lock: the first swaps, the last restores."""
    from contextlib import contextmanager

    from numba.cuda.simulator import kernel, kernelapi

    if getattr(kernelapi, "_qmckit_swaps_locked", False):
        return
    lock = threading.Lock()
    inside = {}  # id of a module's globals -> [calls inside, the globals that were numba.cuda]

    @contextmanager
    def swapped_cuda_module(fn, fake_cuda_module):
        from numba import cuda

        globs, key = fn.__globals__, id(fn.__globals__)
        with lock:
            if key not in inside:
                original = {k: v for k, v in globs.items() if v is cuda}
                globs.update({k: fake_cuda_module for k in original})
                inside[key] = [0, original]
            inside[key][0] += 1
        try:
            yield
        finally:
            with lock:
                entry = inside[key]
                entry[0] -= 1
                if entry[0] == 0:
                    globs.update(entry[1])
                    del inside[key]

    kernelapi.swapped_cuda_module = kernel.swapped_cuda_module = swapped_cuda_module
    kernelapi._qmckit_swaps_locked = True


if __name__ == "__main__":  # the simulator child: python _simulator.py test_module.py
    thread_safe_shared_arrays()
    thread_safe_module_swaps()
    runpy.run_path(sys.argv[1], run_name="__main__")
