"""Parameter scans over any system's parameters and run settings, on any executor.

    >>> import qmckit
    >>> result = qmckit.scan("bec", {"alpha": [0.4, 0.45, 0.5]}, fixed=dict(n=10, a=0.0, walkers=100, steps=500),
    ...                      client="serial")
    >>> result.frame()            # pandas: one row per point, parameters and estimates (mean, error, τ) as columns

Execution (``client``): ``"serial"`` runs the points one after another in this process; any executor with
``submit(fn, *args)`` — a :class:`concurrent.futures.Executor` or a :class:`dask.distributed.Client` — runs them
there; ``None`` (the default) starts a local Dask cluster of ``workers`` process workers (one thread each,
numba threads shared out; scheduler and dashboard on 127.0.0.1) when Dask is installed, and runs serially
otherwise. A point's numbers depend only on the point and its seed (:func:`~qmckit.scans.grid.point_seed`), so every
way of running a scan gives the same table, bit for bit on the CPU backend.

``store=`` names an HDF5 file (:class:`~qmckit.scans.store.ScanStore`) written after every finished point; running
the same scan with the same store skips the finished points.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from .grid import canonical, cartesian, point_seed, split_point
from .share import share
from .store import ScanStore

GOLDEN = (5 ** 0.5 - 1) / 2  # 0.618…: the golden section


def run_point(system: str, point: dict, seed: int) -> dict:
    """Run one point (``RunConfig(system, params, **settings, seed)``) and return its row: the point's values by
    name, ``seed``, ``estimates`` (as ``qmckit run --json`` reports them), ``acceptance``, ``wall_s``, ``backend``,
    ``version`` and ``warnings``."""
    import warnings

    from .. import __version__
    from ..runs import RunConfig, make_run

    params, settings = split_point(system, point)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a scan's short points: their rows carry the run's own warnings
        result = make_run(RunConfig(system=system, params=params, **settings, seed=seed)).run()
    return {"key": canonical(point), "point": point, "seed": seed, "estimates": result["estimates"],
            "acceptance": result["acceptance"], "wall_s": time.perf_counter() - start,
            "backend": result.get("backend", settings.get("backend", "cpu")), "version": __version__,
            "warnings": result.get("warnings", [])}


@dataclass
class ScanResult:
    """The rows of a scan (in the order its points were listed) and its store."""
    system: str
    rows: list = field(default_factory=list)
    store: ScanStore | None = None
    stopped: bool = False

    def frame(self):
        """A pandas DataFrame: one row per point; the point's values, ``seed``, ``<estimate>_mean``,
        ``<estimate>_error``, ``<estimate>_tau``, ``acceptance``, ``wall_s``, ``backend``, ``version`` and
        ``warnings`` (the run's warnings joined by "; ", empty when it had none)."""
        import pandas as pd

        records = []
        for row in self.rows:
            record = dict(row["point"]) | {"seed": row["seed"]}
            for name, est in row["estimates"].items():
                for part in ("mean", "error", "tau"):
                    record[f"{name}_{part}"] = est[part]
            records.append(record | {k: row[k] for k in ("acceptance", "wall_s", "backend", "version")}
                           | {"warnings": "; ".join(row.get("warnings", []))})
        return pd.DataFrame.from_records(records)

    def to_xarray(self, axes, estimate: str):
        """The scan's ``estimate`` (mean and error) as an ``xarray.Dataset`` over the named ``axes`` (a grid)."""
        frame = self.frame().set_index(list(axes))
        return frame[[f"{estimate}_mean", f"{estimate}_error"]].to_xarray()

    def json(self) -> dict:
        """``{"system", "rows"}``: each row's point values by name, ``seed``, ``estimates``, ``acceptance``,
        ``wall_s``, ``backend`` and ``warnings`` (the ``qmckit scan --json`` contract)."""
        return {"system": self.system, "stopped": self.stopped,
                "rows": [dict(r["point"]) | {k: r.get(k, []) if k == "warnings" else r[k]
                                             for k in ("seed", "estimates", "acceptance", "wall_s", "backend",
                                                       "warnings")}
                         for r in self.rows]}

    def warned(self) -> list:
        """The rows whose runs warned (short series, low acceptance, a DMC population in trouble, …)."""
        return [r for r in self.rows if r.get("warnings")]


def scan(system: str, grid=None, fixed: dict | None = None, *, points=None, seed: int = 0, client=None,
         workers: int | None = None, gpus: int | None = None, store=None, progress=None,
         stop: threading.Event | None = None) -> ScanResult:
    """Run ``system`` at every point of ``grid`` (a dict name → values: their Cartesian product) and/or the
    explicit ``points`` (a list of dicts), each with ``fixed`` added; see the module docstring for ``client``,
    ``workers`` and ``store``. ``gpus`` (a count, 0: all) starts one Dask worker per GPU instead, each seeing only
    its own card (``CUDA_VISIBLE_DEVICES``), and runs the points on ``backend="cuda"`` unless they say otherwise.
    ``progress(done, total, row)`` is called as points finish; a set ``stop`` cancels
    the points not yet started and keeps the finished ones (``result.stopped``).

    ``system`` may also be a System instance (a :func:`qmckit.UserSystem`): its parameters are the fixed values the
    grid does not set. A user system runs serially by default (``client=None``), or on a Dask client, whose workers
    get it once (:mod:`qmckit.scans.share`); another executor is refused."""
    from ..systems import System, adopt, system_class

    if isinstance(system, System):
        fixed = system.params.as_dict() | dict(fixed or {})
        system = adopt(system)
    if getattr(system_class(system), "user_defined", False) and client is None and gpus is None:
        client = "serial"  # an unknown name: one line naming the known ones
    listed = (cartesian(grid) if grid else []) + [dict(p) for p in (points or [])]
    if not listed:
        raise ValueError("a scan needs a grid or explicit points")
    fixed = dict(fixed or {})
    if gpus is not None:
        fixed.setdefault("backend", "cuda")
    full = [fixed | p for p in listed]
    for p in full:
        split_point(system, p)  # unknown names are refused before anything runs
    tasks = {}
    for p in full:
        key = canonical(p)
        tasks[key] = (p, int(p["seed"]) if "seed" in p else point_seed(seed, system, p))
    description = {"system": system, "seed": int(seed)}
    if isinstance(store, ScanStore):
        table = store
        if table.description and table.description != description:
            raise ValueError(f"store: it holds another scan ({table.description}, not {description})")
        table.description = table.description or description
    else:
        table = ScanStore(store, description)
    table.claim()
    todo = [(key, p, s) for key, (p, s) in tasks.items() if key not in table]
    done = len(tasks) - len(todo)
    stopped = False
    if todo:
        executor, close = start_executor(client, workers, len(todo), gpus)
        try:
            share(executor, system)
            stopped = _drive(executor, system, todo, table, progress, stop, done, len(tasks))
        finally:
            close()
    return ScanResult(system, [table.rows[k] for k in tasks if k in table.rows], table, stopped)


def _drive(executor, system, todo, table, progress, stop, done, total) -> bool:
    """Run ``todo`` on ``executor`` (None: here), adding each row to ``table`` as it finishes; True if stopped."""
    if executor is None:
        for key, p, s in todo:
            if stop is not None and stop.is_set():
                return True
            row = run_point(system, p, s)
            table.add(row)
            done += 1
            if progress:
                progress(done, total, row)
        return False
    dask = type(executor).__module__.startswith("distributed")
    futures = [executor.submit(run_point, system, p, s, **({"pure": False} if dask else {})) for _, p, s in todo]
    pending = set(futures)
    try:
        while pending:
            _sleep_until_done(pending, 0.5)  # wake at least twice a second: a Stop is seen while long points run
            finished = {f for f in pending if f.done()}
            pending -= finished
            for future in finished:
                row = future.result()
                table.add(row)
                done += 1
                if progress:
                    progress(done, total, row)
            if stop is not None and stop.is_set() and pending:
                return True
        return False
    finally:
        for future in pending:  # stopped or failed: nothing queued keeps running on the executor
            future.cancel()


def _sleep_until_done(futures, timeout: float) -> None:
    """Wait up to ``timeout`` s for one of ``futures`` (concurrent.futures or Dask) to finish."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline and not any(f.done() for f in futures):
        time.sleep(0.02)


def start_executor(client=None, workers=None, n_points=None, gpus=None):
    """(executor or None for in-process, close()) for ``client`` / ``workers`` / ``gpus`` (see :func:`scan`); one
    cluster serves many scans (a refinement's rounds) when the caller starts it once and passes it as ``client``."""
    if gpus is not None:
        return _gpu_cluster(gpus)
    if client == "serial":
        return None, lambda: None
    if client is not None:
        if not hasattr(client, "submit"):
            raise ValueError(f"client must be 'serial', None or an executor with submit(), got {client!r}")
        return client, lambda: None
    try:
        from distributed import LocalCluster
    except ImportError:
        return None, lambda: None  # without Dask: in process, the same rows
    cores = os.cpu_count() or 1
    n = max(1, min(workers or cores, n_points or cores))
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address="127.0.0.1:0",
                           env={"NUMBA_NUM_THREADS": str(max(1, cores // n)), "OMP_NUM_THREADS": "1"})
    return _connect(cluster)


def _connect(cluster):
    """(a Client of ``cluster``, close()): close() shuts both down; a client that fails to connect closes the
    cluster it would have used."""
    from distributed import Client

    try:
        client = Client(cluster)
    except BaseException:
        cluster.close()
        raise

    def close():
        client.close()
        cluster.close()
    return client, close


def _gpu_cluster(gpus: int):
    """A Dask cluster of one process worker per GPU, each on its card by CUDA_VISIBLE_DEVICES (spawned, so no worker
    inherits this process's CUDA state); scheduler and dashboard on 127.0.0.1. Worker k sees the cards in turn from
    its own (k, k+1, …, 0, …, k−1, as dask-cuda's LocalCUDACluster does): it computes on its first card, and can open
    the others' memory to copy walkers between parts of a split run directly (CUDA IPC)."""
    try:
        from distributed import Nanny, Scheduler, SpecCluster
    except ImportError:
        raise ValueError("--gpus needs Dask: pip install 'qmckit[dask]'") from None
    from numba import cuda

    present = len(cuda.gpus) if cuda.is_available() else 0
    if present == 0:
        raise ValueError("--gpus: no CUDA GPU found")
    n = present if not gpus else int(gpus)
    if not 1 <= n <= present:
        raise ValueError(f"--gpus must be between 1 and the {present} GPUs present, got {gpus}")
    cores = os.cpu_count() or 1
    # the cards this process may use (a batch system's CUDA_VISIBLE_DEVICES, e.g. "2,3"), one per worker
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()] or \
        [str(k) for k in range(present)]
    workers = {f"gpu{k}": {"cls": Nanny, "options": {"nthreads": 1, "env": {
        "CUDA_VISIBLE_DEVICES": ",".join(visible[k:] + visible[:k]), "NUMBA_NUM_THREADS": str(max(1, cores // n)),
        "OMP_NUM_THREADS": "1"}}}
        for k in range(n)}
    cluster = SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {
        "host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}})
    return _connect(cluster)


def refine_minimum(system: str, result: ScanResult, name: str, estimate: str, rounds: int = 6, **scan_options) -> tuple:
    """Golden-section refinement of the minimum of ``estimate`` along ``name`` (a one-parameter scan): each round
    adds the golden-section point of the larger side of the bracket around the lowest point. Returns the grown
    :class:`ScanResult` and the minimum of a weighted parabola through the lowest point and up to two neighbours
    each side (value, and the parabola's minimum of ``estimate``). ``scan_options`` as for :func:`scan`; the store and
    seed default to ``result``'s, so no finished point runs again."""
    import numpy as np

    fixed = {k: v for k, v in result.rows[0]["point"].items() if k != name}
    varying = {k for r in result.rows for k, v in r["point"].items() if v != result.rows[0]["point"].get(k)} - {name}
    if varying:
        raise ValueError(f"refine: the scan varies {', '.join(sorted(varying))} besides {name}; refine a 1-D scan")
    # the scan's own table and seed: the finished points are not run again, and new points get the scan's seeds
    scan_options.setdefault("store", result.store)
    if result.store is not None and "seed" in result.store.description:
        scan_options.setdefault("seed", result.store.description["seed"])
    for _ in range(rounds):
        xs, ys = _curve(result, name, estimate)
        i = int(np.argmin(ys))
        if i == 0 or i == len(xs) - 1:
            raise ValueError(f"the lowest {estimate} lies at the end of the {name} range ({xs[i]:g}): widen the scan")
        left, right = xs[i] - xs[i - 1], xs[i + 1] - xs[i]
        x_new = xs[i] - (1 - GOLDEN) * left if left > right else xs[i] + (1 - GOLDEN) * right
        points = [dict(r["point"]) for r in result.rows] + [fixed | {name: float(round(x_new, 12))}]
        result = scan(system, points=points, **scan_options)
    xs, ys, es = _curve(result, name, estimate, errors=True)
    i = int(np.argmin(ys))
    # the lowest point and two neighbours each side: near a minimum the energy differences shrink as d² while
    # the error bars shrink only as d (zero-variance principle), so a wider window pins the vertex better; an
    # exact point (zero error) gets the largest finite weight and the parabola passes through it
    window = slice(max(i - 2, 0), min(i + 3, len(xs)))
    floor = 1e-12 * max(1.0, float(np.max(np.abs(ys))))
    c = np.polyfit(xs[window], ys[window], 2, w=1 / np.maximum(es[window], floor))
    x0 = float(-c[1] / (2 * c[0]))
    return result, x0, float(np.polyval(c, x0))


def _curve(result: ScanResult, name: str, estimate: str, errors: bool = False):
    import numpy as np

    rows = sorted(result.rows, key=lambda r: r["point"][name])
    xs = np.array([r["point"][name] for r in rows], dtype=float)
    ys = np.array([r["estimates"][estimate]["mean"] for r in rows])
    if errors:
        return xs, ys, np.array([r["estimates"][estimate]["error"] for r in rows])
    return xs, ys
