"""Helpers the browser tests' conftest and test modules share."""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

CHROMIUM = os.environ.get("QMCKIT_CHROMIUM", "/usr/bin/chromium")
REPORTS_KEY = pytest.StashKey[dict]()  # item.stash: the reports of a test's setup, call and teardown


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def required() -> bool:
    """True under CI (``CI`` set, or ``QMCKIT_REQUIRE_BROWSER`` as ``.ci/run`` sets it): then what the browser
    tests need must be there, and a missing piece is an error rather than a skip."""
    return _flag("CI") or _flag("QMCKIT_REQUIRE_BROWSER")


def missing_requirements() -> list[str]:
    """What the browser tests need and this machine lacks (empty: all there)."""
    missing = []
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(f"Debian's chromium at {CHROMIUM} (apt-get install chromium; .ci/run does this)")
    if importlib.util.find_spec("playwright") is None:
        missing.append("Playwright for Python (pip install -e '.[test]')")
    if importlib.util.find_spec("jupyterlab") is None:
        missing.append("JupyterLab 4 (pip install -e '.[test]')")
    else:
        from importlib.metadata import version

        if int(version("jupyterlab").split(".")[0]) < 4:
            missing.append(f"JupyterLab 4 (found {version('jupyterlab')})")
    return missing


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:120]
