"""Systems sent to each worker once (pyqmc #169): what a task carries is a system's name and parameters, and a worker
builds the system from them. A built-in system is importable everywhere. A :func:`qmckit.UserSystem` exists only in
the process that made it, so :func:`share` registers a Dask worker plugin that makes it again on every worker, now
and on any worker that joins or restarts later; the user's functions travel once, by value (cloudpickle).
"""
from __future__ import annotations

import hashlib
import pickle


def share(client, system: str) -> None:
    """Make the registered system ``system`` known to the workers of ``client`` (``"serial"``, None or a thread pool:
    this process; a Dask Client: a worker plugin for a :func:`qmckit.UserSystem`; another executor: refused for a
    user system)."""
    from ..systems import system_class

    from concurrent.futures import ThreadPoolExecutor

    cls = system_class(system)
    if not getattr(cls, "user_defined", False) or client in (None, "serial") or isinstance(client, ThreadPoolExecutor):
        return  # built in, or run in this process
    if not (type(client).__module__.startswith("distributed") and hasattr(client, "register_plugin")):
        raise ValueError(f"client: the qmckit.UserSystem {system!r} exists only in this process; run it with "
                         "client='serial' or on a dask.distributed Client (which gets it once per worker)")
    client.register_plugin(_plugin(cls.recipe), name=f"qmckit-system-{system}-{_digest(cls.recipe)}")


def _digest(recipe: dict) -> str:
    import cloudpickle

    return hashlib.sha256(cloudpickle.dumps(recipe, protocol=pickle.DEFAULT_PROTOCOL)).hexdigest()[:12]


def _plugin(recipe: dict):
    from distributed.diagnostics.plugin import WorkerPlugin

    class UserSystemPlugin(WorkerPlugin):
        """Makes a qmckit.UserSystem on a worker and registers it by name."""

        idempotent = False

        def __init__(self, recipe):
            self.recipe = recipe

        def setup(self, worker):
            from qmckit.systems import adopt
            from qmckit.systems.user import UserSystem

            adopt(UserSystem(**self.recipe))

    return UserSystemPlugin(recipe)
