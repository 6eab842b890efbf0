"""qmckit's xoroshiro128+ streams as CUDA device functions, from the very same source.

:mod:`qmckit.rng` writes the generator as plain numba functions (``_rotl``, ``next_uint64``,
``uniform``, ``normal_pair``). This module compiles those functions' Python source (their
``.py_func``) a second time with ``numba.cuda.jit(device=True)``; the only change is that the
names they call each other by are bound to the CUDA twins instead of the CPU dispatchers. The
integer arithmetic is therefore the CPU's, bit for bit: a walker's stream on the GPU is the one
it has on the CPU (uniforms identical; normals differ only by the last-bit differences of the
GPU's libdevice ``log``/``cos``/``sin``/``sqrt`` from the host's libm).

Use from a kernel: keep the walker's state in a ``cuda.local.array((1, 2), uint64)`` (registers
after inlining), load it from global memory at the start, call ``uniform(st, 0)`` /
``normal_pair(st, 0)`` and store it back at the end.

Importing this module imports ``numba.cuda`` (it is imported lazily by
:mod:`qmckit.backends.cuda_bec`, so ``import qmckit`` never needs CUDA).
"""
from __future__ import annotations

import types

import numba
from numba import cuda

from .. import rng as _rng

SIMULATED = bool(numba.config.ENABLE_CUDASIM)
# NVVM-level inlining keeps the (1, 2) state array in registers; the simulator takes no such flag
_DEVICE_KW = {"device": True} if SIMULATED else {"device": True, "forceinline": True}


def _device_twins(module):
    """CUDA device twins of every numba CPU function defined in ``module``, as a dict by name.

    All twins share one globals dict: the module's namespace with every jitted function replaced
    by its twin, so calls between them resolve to device functions at compile time.
    """
    jitted = {name: obj for name, obj in vars(module).items()
              if hasattr(obj, "py_func") and getattr(obj.py_func, "__module__", None) == module.__name__}
    namespace = dict(vars(module))
    twins = {}
    for name, dispatcher in jitted.items():
        f = dispatcher.py_func
        clone = types.FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)
        clone.__qualname__ = f"{f.__qualname__}[cuda]"
        clone.__doc__ = f.__doc__
        twins[name] = cuda.jit(**_DEVICE_KW)(clone)
    namespace.update(twins)
    return twins


_TWINS = _device_twins(_rng)

next_uint64 = _TWINS["next_uint64"]
uniform = _TWINS["uniform"]
normal_pair = _TWINS["normal_pair"]
uniform_from_bits = _TWINS["uniform_from_bits"]
box_muller = _TWINS["box_muller"]

__all__ = ["SIMULATED", "next_uint64", "uniform", "normal_pair", "uniform_from_bits", "box_muller"]
