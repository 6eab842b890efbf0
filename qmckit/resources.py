"""Where qmckit's reference data are: published numbers, recorded runs, molecule geometries.

The repository keeps them in its top-level ``data/``; a wheel ships the same files inside the package as
``qmckit/data`` (``setup.py`` maps the one onto the other), so that ``pip install .`` works from any folder.
:func:`data_path` finds them through :mod:`importlib.resources` in an installed package, and in the checkout for an
editable install or a run from the source tree.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_dir() -> Path:
    """The folder of qmckit's reference data (``qmckit/data`` when installed from a wheel, else ``<checkout>/data``)."""
    packaged = Path(str(resources.files("qmckit") / "data"))
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[1] / "data"


def data_path(*parts: str) -> Path:
    """A file or folder of the reference data, e.g. ``data_path("atoms.json")`` or ``data_path("molecules")``."""
    return data_dir().joinpath(*parts)
