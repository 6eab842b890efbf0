"""Atomic HDF5 checkpoints.

A checkpoint is written to a temporary file beside its target, flushed to disk and then renamed
over the target, so a run killed at any instant leaves either the previous checkpoint or the
new one, never a torn file.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile

import h5py
import numpy as np


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed: not an HDF5 file, truncated, or missing what a run needs."""


@contextlib.contextmanager
def read_checkpoint(path):
    """Open the checkpoint ``path`` for reading; whatever a truncated, corrupted or foreign file raises while it is
    open or read inside the block (OSError, KeyError, a bad JSON attribute, a missing field) becomes one
    :class:`CheckpointError` naming the file. The file is never written."""
    name = os.fspath(path)
    try:
        f = h5py.File(name, "r")
    except OSError as err:
        raise CheckpointError(f"resume: {name} cannot be read as a checkpoint (truncated or not an HDF5 file: "
                              f"{str(err).splitlines()[0]})") from None
    try:
        with f:
            yield f
    except CheckpointError:
        raise
    except (OSError, KeyError, TypeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"resume: {name} is damaged: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                              ) from None


@contextlib.contextmanager
def atomic_h5(path):
    """Open a new HDF5 file for writing that replaces ``path`` only when the block succeeds."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".h5", dir=directory)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            yield f
            f.flush()
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # make the rename itself durable
        finally:
            os.close(dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def _temporary_prefix(path) -> str:
    return f".{os.path.basename(os.fspath(path))}.tmp-"


def remove_stale_temporaries(path) -> int:
    """Delete the temporary files that :func:`atomic_h5` left beside ``path`` when a process writing it was killed
    (SIGKILL skips the clean-up); returns how many. Call it only where no other process writes ``path``."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    prefix = _temporary_prefix(path)
    removed = 0
    for name in os.listdir(directory):
        if name.startswith(prefix) and name.endswith(".h5"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(directory, name))
                removed += 1
    return removed


def write_attrs(group, mapping: dict) -> None:
    """Store a JSON-serialisable mapping as one JSON string attribute per key."""
    for key, value in mapping.items():
        group.attrs[key] = json.dumps(value)


def read_attrs(group) -> dict:
    return {key: json.loads(value) for key, value in group.attrs.items()}


def write_arrays(group, mapping: dict) -> None:
    for key, value in mapping.items():
        group.create_dataset(key, data=np.asarray(value))


def read_arrays(group) -> dict:
    return {key: np.array(group[key]) for key in group}
