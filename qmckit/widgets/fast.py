"""The one place that reads ``QMCKIT_FAST`` (CI and notebook fast mode)."""
from __future__ import annotations

import os

FAST_ENV = "QMCKIT_FAST"


def fast_mode() -> bool:
    """True when the environment variable ``QMCKIT_FAST`` is set to something other than
    empty, ``0``, ``false``, ``no`` or ``off``: notebooks and panels then pick small sizes."""
    return os.environ.get(FAST_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")
