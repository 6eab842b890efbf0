"""numba.cuda, imported on first use into a kernel module's globals.

Device code names ``cuda`` as a module global: numba resolves it when it compiles a kernel, and its
simulator swaps it for a fake while one runs. So every kernel module keeps a ``cuda = None`` global,
and imports numba.cuda only when a kernel is first wanted, which keeps ``import qmckit`` free of CUDA.
"""
from __future__ import annotations

import numpy as np


def bind(namespace: dict):
    """numba.cuda, stored as ``namespace["cuda"]`` (a module's ``globals()``) on the first call."""
    if namespace.get("cuda") is None:
        if not hasattr(np, "row_stack"):
            # numpy ≥ 2.5 removed row_stack (an alias of vstack), but numba-cuda ≤ 0.30's array typing
            # still registers an overload for it while compiling its first kernel
            np.row_stack = np.vstack
        from numba import cuda

        namespace["cuda"] = cuda
    return namespace["cuda"]
