"""``qmckit reproduce STUDY``: every seed study's report, the same functions the notebooks call.

A study module offers

* ``reproduce(precision="fast", seed=…, progress=None) -> dict``: runs at a precision preset
  (``"fast"``: at most about two minutes on two cores; ``"full"``: the notebook's full-size settings)
  and returns a JSON-ready dictionary with qmckit's numbers, the published ones and the pulls
  (qmckit − published) / combined σ;
* ``markdown(result) -> str`` and ``figure(result) -> matplotlib.figure.Figure``.

:func:`write_report` writes ``STEM.md``, ``STEM.json`` and ``STEM.png``; :data:`STUDIES` lists the studies
(the CLI's choices and the README's table).
"""
from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

PRECISIONS = ("fast", "full")


@dataclass(frozen=True)
class Study:
    """One reproducible study: its module (relative to ``qmckit.studies``), report file stem, default seed and
    one line on what it reproduces."""
    module: str
    stem: str
    seed: int
    summary: str

    def load(self):
        return import_module(self.module, __package__)


STUDIES = {
    "bec": Study(".bec", "table72", 2011,
                 "002, Table 7.2: trapped bosons B1–B3, exact VMC and DMC extrapolated to Δτ = 0"),
    "atoms": Study(".atoms", "table71", 71,
                   "002, Table 7.1: He, Be, Ne VMC, and the verdict on the two published Ne values"),
    "molecules": Study(".molecules", "molecules", 3,
                       "001: the bare determinant gives E_RHF, float32/Kahan precision of E_L, Fig. 7's CPU phases"),
    "helium": Study(".helium4", "sample_run", 2013, "004: the sample run (N = 1000) against e.dat, E(b) and g(r)"),
    "lattice": Study(".lattice_rvb", "table61", 4,
                     "000: exact checks at L = 3, Table 6.1 energies (L = 5, 9), the GPU timing where a GPU "
                     "is present"),
    "tio2": Study(".tio2_orbitals", "tio2", 3,
                  "003: Table II timings on this machine, h⁴ convergence of the B-splines, the QSU bias"),
}


def check_precision(precision: str, presets) -> None:
    """One-line error unless ``precision`` names one of ``presets``."""
    if precision not in presets:
        raise ValueError(f"precision must be one of {', '.join(presets)}, got {precision!r}")


def pull(value: float, error: float, ref_value: float, ref_error: float = 0.0) -> float:
    """(value − reference) in units of the combined standard error √(σ² + σ_ref²); nan when both are 0."""
    combined = math.hypot(error, ref_error)
    return (value - ref_value) / combined if combined > 0 else float("nan")


def machine() -> dict:
    """Where a report was produced: host, CPU model, cores, date (UTC), Python."""
    from ..perf.run_profile import cpu_model

    return {"cpu": cpu_model(), "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "python": platform.python_version()}


def reproduce(name: str, precision: str = "fast", seed: int | None = None, progress=None, **options) -> dict:
    """Run study ``name``'s reproduction (``options``: the study's own, e.g. bec's ``sets``); ``progress(message)``
    is called as it goes."""
    study = STUDIES[name]
    start = time.perf_counter()
    result = study.load().reproduce(precision, seed=study.seed if seed is None else seed, progress=progress, **options)
    return {"study": name, "precision": precision, "machine": machine()} | result | {
        "wall_s": time.perf_counter() - start}


def write_report(name: str, result: dict, out_dir) -> dict:
    """Write ``STEM.md``, ``STEM.json`` and ``STEM.png`` of study ``name`` into ``out_dir``; return their paths."""
    study = STUDIES[name]
    module = study.load()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / f"{study.stem}.md", "json": out / f"{study.stem}.json",
             "figure": out / f"{study.stem}.png"}
    command = f"qmckit reproduce {name} --precision {result.get('precision', 'fast')}"
    paths["markdown"].write_text(module.markdown(result) + f"\n\nProduced by `{command}`.\n")
    paths["json"].write_text(json.dumps(result | {"command": command}, indent=1, default=_jsonable) + "\n")
    module.figure(result).savefig(paths["figure"], dpi=120)
    return {k: str(v) for k, v in paths.items()}


def _jsonable(value):
    """numpy scalars and arrays in a result."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
