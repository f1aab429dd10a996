"""Type stub and documentation of the native core, ``oracle_gate._native``.

``oracle_gate._fallback`` implements the same functions in pure Python; the two
must return identical values and raise the same exceptions.
"""

from collections.abc import Sequence

__all__ = ["__version__", "extract_units", "extract_units_many", "hash_files"]

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

def extract_units(source: bytes, path: str) -> list[tuple[str, str]]:
    """The assertion surface of one Python test file (``docs/surface.md``).

    Parsed with ruff's parser (accepting only the syntax of the running
    Python version) and extracted with the GIL released; the result is byte for
    byte what ``oracle_gate.surface.extract_units`` returns.

    Arguments:
        source: the file's bytes (UTF-8, optionally with a BOM).
        path: the file's path, used only in error messages.

    Returns:
        ``(key, canonical_text)`` pairs sorted by key; a key is the qualified
        name inside the file (``test_a``, ``TestA::test_b``).

    Raises:
        oracle_gate.errors.SurfaceError: ``(message, path, line)`` with a
            1-based line: "is not valid UTF-8" (line of the first invalid
            byte), "does not parse as Python: ..." (the reason's wording comes
            from the parser and differs from CPython's), or "nests more than
            100 levels deep". A bug inside the extractor is reported as
            "internal error: ..." with no line, never as a panic.
    """

def extract_units_many(items: Sequence[tuple[bytes, str]]) -> list[list[tuple[str, str]]]:
    """``extract_units`` over many files, in parallel with the GIL released.

    Arguments:
        items: ``(source, path)`` pairs.

    Returns:
        One list of ``(key, canonical_text)`` pairs per item, in input order.

    Raises:
        oracle_gate.errors.SurfaceError: as ``extract_units``; when several
            files fail, the error names the smallest failing path, so the
            error is deterministic.
    """
