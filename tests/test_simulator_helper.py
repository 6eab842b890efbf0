"""tests/_simulator.py: the locks it puts around the CUDA simulator's shared-array lookup and its swaps of the
``cuda`` module."""
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


def test_a_block_thread_keeps_the_fake_module_while_another_returns(monkeypatch):
    """Thread A enters a device function of a module, thread B enters one of the same module, A returns: B must
    still see the fake module (numba's own swap puts numba.cuda back under B here), and after both the module has
    numba.cuda again."""
    kernel = pytest.importorskip("numba.cuda.simulator.kernel")
    kernelapi = pytest.importorskip("numba.cuda.simulator.kernelapi")
    from numba import cuda

    monkeypatch.setattr(kernelapi, "swapped_cuda_module", kernelapi.swapped_cuda_module)
    monkeypatch.setattr(kernel, "swapped_cuda_module", kernel.swapped_cuda_module)
    monkeypatch.setattr(kernelapi, "_qmckit_swaps_locked", False, raising=False)
    _simulator.thread_safe_module_swaps()
    module = {"cuda": cuda}
    fn = types.FunctionType((lambda: None).__code__, module)
    fake = object()
    a_inside, b_inside, a_returned = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def a():
        with kernel.swapped_cuda_module(fn, fake):
            a_inside.set()
            b_inside.wait(5)
        a_returned.set()

    def b():
        a_inside.wait(5)
        with kernel.swapped_cuda_module(fn, fake):
            b_inside.set()
            a_returned.wait(5)
            seen.append(module["cuda"])

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [fake] and module["cuda"] is cuda
