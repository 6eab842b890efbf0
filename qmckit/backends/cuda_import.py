"""numba.cuda, imported on first use into a kernel module's globals.

Device code names ``cuda`` as a module global: numba resolves it when it compiles a kernel, and its
simulator swaps it for a fake while one runs. So every kernel module keeps a ``cuda = None`` global,
and imports numba.cuda only when a kernel is first wanted, which keeps ``import qmckit`` free of CUDA.
:func:`simulated` and :func:`available` answer, for every kernel module, whether CUDA code runs in the
simulator and whether a real GPU is there.
"""
from __future__ import annotations

import types

import numpy as np


def _numba_cuda():
    if not hasattr(np, "row_stack"):
        # numpy ≥ 2.5 removed row_stack (an alias of vstack), but numba-cuda ≤ 0.30's array typing
        # still registers an overload for it while compiling its first kernel
        np.row_stack = np.vstack
    from numba import cuda

    return cuda


def simulated() -> bool:
    """True when numba runs CUDA code in its simulator (NUMBA_ENABLE_CUDASIM=1 at import time)."""
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


def available() -> bool:
    """True when a real CUDA GPU can be used here (False under the simulator or without a GPU)."""
    try:
        if simulated():
            return False
        return bool(_numba_cuda().is_available())
    except Exception:  # no driver, no numba-cuda, broken toolkit: no GPU for us
        return False


def bind(namespace: dict):
    """numba.cuda, stored as ``namespace["cuda"]`` (a module's ``globals()``) on the first call."""
    if namespace.get("cuda") is None:
        namespace["cuda"] = _numba_cuda()
    return namespace["cuda"]


def device_twin(dispatcher, namespace: dict, device_kw: dict):
    """A CUDA device function compiled from a CPU kernel's own source (``dispatcher.py_func``), its
    globals replaced by ``namespace`` (where the names it calls are bound to their device twins)."""
    f = dispatcher.py_func
    clone = types.FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)
    clone.__qualname__ = f"{f.__qualname__}[cuda]"
    clone.__doc__ = f.__doc__
    return _numba_cuda().jit(**device_kw)(clone)


class LaunchEvents:
    """Two CUDA events around a sweeper's launches: ``start()`` before, ``stop()`` after, then (once the host has
    waited for the work anyway) ``seconds()`` gives the kernels' own time, the run profile's "sampling". Under the
    simulator, whose events time nothing, they do nothing and ``seconds()`` is None."""

    def __init__(self):
        self._pair = None if simulated() else (_numba_cuda().event(), _numba_cuda().event())

    def start(self) -> None:
        if self._pair:
            self._pair[0].record()

    def stop(self) -> None:
        if self._pair:
            self._pair[1].record()

    def seconds(self):
        if not self._pair:
            return None
        self._pair[1].synchronize()
        return self._pair[0].elapsed_time(self._pair[1]) / 1000.0
