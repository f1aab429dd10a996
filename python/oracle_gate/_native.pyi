"""Type stub and documentation of the native core, ``oracle_gate._native``.

``oracle_gate._fallback`` implements the same functions in pure Python; the two
must return identical values and raise the same exceptions.
"""

from collections.abc import Sequence

__all__ = ["__version__", "hash_files"]

__version__: str

def hash_files(paths: Sequence[str]) -> list[str]:
    """BLAKE3 digests of files, computed in parallel with the GIL released.

    Arguments:
        paths: file paths (absolute, or relative to the current directory).

    Returns:
        One lowercase hex digest (64 characters) per path, in input order.

    Raises:
        oracle_gate.errors.TreeError: a path is missing, a broken symlink, a
            directory, or unreadable. When several paths fail, the error names
            the smallest failing path, so the error is deterministic.
    """
