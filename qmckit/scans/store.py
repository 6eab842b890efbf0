"""A scan's results store: one row per finished point, persisted as it goes, resumable.

The file is HDF5 (``.h5``): the scan's description as a JSON attribute and the rows as JSON strings, one per
point, keyed by the point (:func:`~qmckit.scans.grid.canonical`). Every added row rewrites the file to a
temporary name and renames it over the old one, so a killed client leaves the last complete table, never a
torn one; rows are keyed, so a resumed scan skips the finished points and never duplicates one.
"""
from __future__ import annotations

import json
from pathlib import Path

FORMAT = "qmckit-scan-1"


class ScanStore:
    """Rows of one scan, in memory and (with ``path``) on disk. ``rows`` keeps the order they finished in."""

    def __init__(self, path=None, description: dict | None = None):
        self.path = Path(path) if path is not None else None
        self.description = description or {}
        self.rows: dict[str, dict] = {}
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        import h5py

        with h5py.File(self.path, "r") as f:
            if f.attrs.get("format") != FORMAT:
                raise ValueError(f"--store: {str(self.path)!r} is not a qmckit scan store")
            saved = json.loads(f.attrs["description"])
            rows = [json.loads(text) for text in f["rows"].asstr()[()]] if "rows" in f else []
        if self.description and saved != self.description:
            changed = sorted(k for k in set(saved) | set(self.description) if saved.get(k) != self.description.get(k))
            raise ValueError(f"--store: {str(self.path)!r} holds another scan (it differs in {', '.join(changed)}); "
                             "use a new file to start this one")
        self.description = saved
        self.rows = {row["key"]: row for row in rows}

    def claim(self) -> None:
        """Make this the store's one writer: delete what a killed writer left half-written beside it (temporary
        files never renamed into place). A reader never calls this."""
        if self.path is not None:
            from ..checkpoint import remove_stale_temporaries

            remove_stale_temporaries(self.path)

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, row: dict) -> None:
        """Keep ``row`` (its ``key`` names the point) and, with a path, write the table atomically."""
        self.rows[row["key"]] = row
        if self.path is not None:
            self._write()

    def _write(self) -> None:
        import h5py
        import numpy as np

        from ..checkpoint import atomic_h5

        with atomic_h5(self.path) as f:  # a temporary file, fsync'd, renamed over the old table
            f.attrs["format"] = FORMAT
            f.attrs["description"] = json.dumps(self.description, sort_keys=True)
            texts = [json.dumps(row, sort_keys=True) for row in self.rows.values()]
            f.create_dataset("rows", data=np.array(texts, dtype=object), dtype=h5py.string_dtype())
