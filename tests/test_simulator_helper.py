"""tests/_simulator.py: the lock it puts around the CUDA simulator's shared-array lookup."""
import threading
import time
import types

import numpy as np
import pytest

import _simulator


def _two_threads_allocate(kernelapi):
    """Two threads of one simulated block reach one ``cuda.shared.array`` line while the first is
    still allocating (a slow ``np.empty`` widens the window a thread switch hits by chance)."""
    def slow_empty(shape, dtype):
        time.sleep(0.05)
        return np.empty(shape, dtype)

    shared = kernelapi.FakeCUDAShared(0)
    got = [None, None]

    def thread(i):
        got[i] = shared.array(4, np.float64)  # one call site for both threads, as in a kernel

    saved = kernelapi.np
    kernelapi.np = types.SimpleNamespace(empty=slow_empty, zeros=np.zeros, frombuffer=np.frombuffer)
    try:
        threads = [threading.Thread(target=thread, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        kernelapi.np = saved
    return got


def test_block_threads_share_one_array(monkeypatch):
    kernelapi = pytest.importorskip("numba.cuda.simulator.kernelapi")
    monkeypatch.setattr(kernelapi.FakeCUDAShared, "array", kernelapi.FakeCUDAShared.array)
    monkeypatch.setattr(kernelapi.FakeCUDAShared, "_qmckit_locked", False, raising=False)
    _simulator.thread_safe_shared_arrays()
    first, second = _two_threads_allocate(kernelapi)
    assert first is second
    first[:] = 1.0  # and it is a real array of the requested shape
    assert second.shape == (4,) and (second == 1.0).all()
