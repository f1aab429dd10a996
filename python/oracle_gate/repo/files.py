"""Opening a file of a working tree to read it: regular files only, never blocking.

Shared by the pure-Python backend (hashing) and ``trees.WorkTree.read`` (test
sources, locks, BUILD files), so both refuse the same files the native core
refuses (``hash_files`` in ``_native.pyi``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

__all__ = ["NOT_REGULAR", "NotRegularFileError", "open_regular", "replace_file"]

# The native core's wording (``CoreError::NotRegular`` in rust/src/error.rs).
NOT_REGULAR = "not a regular file (a FIFO, socket or device)"

# O_NONBLOCK: opening a FIFO without it waits for a writer that may never come;
# the type is checked once the file is open, so nothing can be swapped in between.
# For a regular file the flag changes nothing.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class NotRegularFileError(OSError):
    """The path is a FIFO, socket or device (``NotRegularFile`` in Rust)."""


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file at ``path`` (the caller closes it) and its
    stat data from before any read.

    Raises IsADirectoryError for a directory, NotRegularFileError for a FIFO,
    socket (whose open fails with ENXIO) or device, and OSError otherwise.
    """
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise NotRegularFileError(errno.ENXIO, "not a regular file", path) from error
        raise
    try:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(None, "not a regular file", path)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, info


def replace_file(target: Path, content: bytes) -> None:
    """Write ``content`` to ``target`` atomically: a temporary file renamed into place,
    so a reader (or a crash) never sees half a lock or ledger."""
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(content)
        os.replace(temporary, target)
    except BaseException as error:
        # A full disk or a signal leaves no half-written file in the tree.
        with contextlib.suppress(OSError):
            temporary.unlink()
        if isinstance(error, OSError):
            # The file that was to be written, not the temporary one (or none: ENOSPC).
            raise OSError(error.errno, error.strerror, str(target)) from None
        raise
