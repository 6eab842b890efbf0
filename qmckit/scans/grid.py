"""The points of a parameter scan: axes, Cartesian grids, explicit points, and each point's seed.

A point is a dict of a system's parameters (by name, as its metadata declares them) and run settings
(:class:`~qmckit.runs.RunConfig` fields: ``method``, ``dt``, ``walkers``, ``steps``, ``sampler``, ``backend`` …).
Its seed comes from the scan's seed and the point itself (:func:`point_seed`), so a row can be re-run alone —
``qmckit run SYSTEM … --seed S`` — and gives the same numbers, whatever order or worker ran it.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import fields

import numpy as np

SEED_BOUND = 2**31 - 1  # a point's seed lies in [0, SEED_BOUND): any RunConfig and the CLI accept it


def run_settings() -> tuple[str, ...]:
    """The RunConfig fields a scan may vary or fix (everything but the system and its parameters)."""
    from ..runs import RunConfig

    return tuple(f.name for f in fields(RunConfig) if f.name not in ("system", "params"))


def parse_axis(text: str) -> tuple[str, list]:
    """``"alpha=0.40:0.60:11"`` (start:stop:count, both ends included) or ``"n=10,20,50"`` → (name, values).

    Values are numbers where they parse as such (a range written with integer ends whose values are all whole
    gives ints, so does a list value written without a point), else strings (``element=He,Be``)."""
    name, sep, spec = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not name or not spec.strip():
        raise ValueError(f"--param must be NAME=START:STOP:COUNT or NAME=V1,V2,…, got {text!r}")
    if ":" in spec:
        parts = spec.split(":")
        try:
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            raise ValueError(f"--param {name}: START:STOP:COUNT needs numbers START and STOP and an integer COUNT ≥ 2, "
                             f"got {spec!r}") from None
        if len(parts) != 3 or count < 2 or not (math.isfinite(start) and math.isfinite(stop)):
            raise ValueError(f"--param {name}: START:STOP:COUNT needs numbers START and STOP and an integer COUNT ≥ 2, "
                             f"got {spec!r}")
        values = np.round(np.linspace(start, stop, count), 12)
        if all("." not in p and "e" not in p.lower() for p in parts[:2]) and np.all(values == np.round(values)):
            return name, [int(v) for v in values]  # walkers=100:400:4, n=10:50:5: integers
        return name, [float(v) for v in values]
    values = [v.strip() for v in spec.split(",") if v.strip()]
    return name, [_number(v) for v in values]


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return {"true": True, "false": False}.get(text.lower(), text)
    return value


def cartesian(axes: dict) -> list[dict]:
    """Every combination of the axes' values (the first axis varies slowest)."""
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def canonical(point: dict) -> str:
    """The point as sorted JSON: its identity in the results store and the input of its seed. A whole float is
    written as the integer (λ = 1 and λ = 1.0 are one point: a value typed in a box and a parameter's default)."""
    def plain(v):
        v = v.item() if isinstance(v, np.generic) else v  # NumPy scalars from np.linspace and friends
        return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 else v
    return json.dumps({k: plain(point[k]) for k in sorted(point)}, sort_keys=True, separators=(",", ":"))


def point_seed(scan_seed: int, system: str, point: dict) -> int:
    """The seed of ``point`` in the scan with seed ``scan_seed``: a hash of both, in [0, 2³¹ − 1)."""
    digest = hashlib.sha256(f"{int(scan_seed)}|{system}|{canonical(point)}".encode()).digest()
    words = np.frombuffer(digest[:16], dtype=np.uint32)
    return int(np.random.SeedSequence([int(scan_seed), *map(int, words)]).generate_state(1, np.uint64)[0]
               % SEED_BOUND)


def split_point(system: str, point: dict) -> tuple[dict, dict]:
    """(system parameters, run settings) of a point; a name that is neither is refused in one line. ``seed`` is
    allowed (a point may carry its own) but is not among the returned settings: the scan passes each point's seed."""
    from ..systems import system_class

    names = {info.name for info in system_class(system).parameters()}
    settings = set(run_settings())
    unknown = [k for k in point if k not in names and k not in settings]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is neither a parameter of {system} ({', '.join(sorted(names))}) nor a run "
                         f"setting ({', '.join(sorted(settings))})")
    return ({k: v for k, v in point.items() if k in names},
            {k: v for k, v in point.items() if k in settings and k != "seed"})
