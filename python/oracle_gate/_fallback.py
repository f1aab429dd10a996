"""Pure-Python implementation of the native core's API (see ``_native.pyi``).

Every function returns exactly what the native one returns and raises the same
errors with the same messages; ``tests/test_backend_parity.py`` holds us to it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence

from blake3 import blake3

from oracle_gate import surface
from oracle_gate.errors import SurfaceError, TreeError

__all__ = ["extract_units", "extract_units_many", "hash_files"]

_CHUNK = 1 << 20
# errno values whose message must match the Rust core's fixed wording.
_ELOOP = errno.ELOOP


def _read_error(path: str, error: OSError) -> TreeError:
    """Classify an OSError exactly as ``classify`` in ``rust/src/hash.rs`` does."""
    if isinstance(error, FileNotFoundError):
        try:
            is_link = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            is_link = False
        if is_link:
            return TreeError("broken symlink: its target does not exist", path)
        return TreeError("file does not exist", path)
    if isinstance(error, IsADirectoryError) or os.path.isdir(path):
        return TreeError("is a directory, expected a file", path)
    if isinstance(error, PermissionError):
        return TreeError("permission denied", path)
    if error.errno == _ELOOP:
        return TreeError("symlink loop", path)
    if error.errno is None:
        return TreeError("cannot read file", path)
    return TreeError(f"cannot read file (errno {error.errno})", path)


def _hash_one(path: str) -> str:
    hasher = blake3()
    with open(path, "rb") as handle:
        if stat.S_ISDIR(os.fstat(handle.fileno()).st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def hash_files(paths: Sequence[str]) -> list[str]:
    """See ``oracle_gate._native.hash_files``."""
    digests: list[str] = []
    failures: list[tuple[str, OSError]] = []
    for path in paths:
        try:
            digests.append(_hash_one(path))
        except OSError as error:
            failures.append((path, error))
    if failures:
        first_path, first_error = min(failures, key=lambda failure: failure[0])
        raise _read_error(first_path, first_error)
    return digests


def extract_units(source: bytes, path: str) -> list[tuple[str, str]]:
    """See ``oracle_gate._native.extract_units``."""
    return surface.extract_units(source, path)


def extract_units_many(items: Sequence[tuple[bytes, str]]) -> list[list[tuple[str, str]]]:
    """See ``oracle_gate._native.extract_units_many``."""
    results: list[list[tuple[str, str]]] = []
    failures: list[SurfaceError] = []
    for source, path in items:
        try:
            results.append(surface.extract_units(source, path))
        except SurfaceError as error:
            failures.append(error)
    if failures:
        raise min(failures, key=lambda error: error.path or "")
    return results
