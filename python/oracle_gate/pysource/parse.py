"""The one parse of Python source: every lane that reads a ``.py`` blob calls ``parse_python``.

A file that does not parse is one ``SurfaceError``, whatever way ``ast.parse`` refused it
(a syntax error, a null byte, nesting too deep for the parser), so no lane can treat a
refusal another lane lets through. What an unparseable file means is each caller's to
say, at its call site (docs/surface.md, "One parse for Python source").

The tree is cached by the digest of the bytes and handed to every caller as the same
object: a caller must not change it (one that rewrites a tree works on a copy).
"""

from __future__ import annotations

import ast
import hashlib
import threading
import warnings
from collections import OrderedDict

from oracle_gate.errors import SurfaceError

__all__ = ["REFUSALS", "line_at", "parse_python", "refusal"]

# Trees (or refusals) of this many distinct sources are kept; the oldest used goes first.
CACHE_SIZE = 128

# digest -> the tree, or (message, line) of the refusal
_cache: OrderedDict[bytes, ast.Module | tuple[str, int | None]] = OrderedDict()
_lock = threading.Lock()  # lanes run in threads; the parse itself is outside it


def parse_python(source: bytes, path: str, *, keep: bool = True) -> ast.Module:
    """The module ``source`` holds, read as Python reads a file (its BOM and coding cookie
    obeyed). Equal bytes give the very same tree object, which the caller must not change.

    ``keep=False`` is for a source read once (a mutant's): its tree is not cached, since
    a cache full of large trees slows every later parse (the garbage collector walks them).

    Raises:
        oracle_gate.errors.SurfaceError: ``source`` does not parse as Python; the message
            is one line, "does not parse as Python: <why>", with ``path`` and the line when
            known.
    """
    key = hashlib.blake2b(source, digest_size=32).digest()
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
    if found is None:
        found = _parse(source)
        if keep:
            with _lock:
                found = _cache.setdefault(key, found)  # a thread that parsed it first wins
                if len(_cache) > CACHE_SIZE:
                    _cache.popitem(last=False)
    if isinstance(found, tuple):
        message, line = found
        raise SurfaceError(message, path, line)
    return found


def _parse(source: bytes) -> ast.Module | tuple[str, int | None]:
    """The tree, or why ``ast.parse`` refused the source: (message, line or None)."""
    nul = source.find(b"\0")
    if nul >= 0:  # CPython refuses it too (ValueError before 3.11), naming no line
        return f"{REFUSED}source contains a null byte", line_at(source, nul)
    try:
        # Invalid escape sequences warn while parsing (on stderr, from 3.12); under
        # ``-W error`` the warning would turn into a SyntaxError.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return ast.parse(source)
    except REFUSALS as error:
        return refusal(error)


REFUSED = "does not parse as Python: "
# Every way ast.parse refuses a source. CPython's parser reports very deep nesting as
# MemoryError or RecursionError; some releases raise ValueError building the AST of odd
# input (and for a null byte before 3.11).
REFUSALS = (SyntaxError, ValueError, RecursionError, MemoryError)


def refusal(error: BaseException) -> tuple[str, int | None]:
    """The one-line message for an error of ``REFUSALS`` from ``ast.parse``, and its line
    (None when the error names none)."""
    if isinstance(error, SyntaxError):
        return f"{REFUSED}{_first_line(error.msg, 'invalid syntax')}", error.lineno or None
    if isinstance(error, RecursionError | MemoryError):
        return f"{REFUSED}nests too deeply", None
    return f"{REFUSED}{_first_line(str(error), 'invalid source')}", None


def _first_line(text: str | None, default: str) -> str:
    return (text or default).splitlines()[0]


def line_at(data: bytes, offset: int) -> int:
    """1-based line of a byte offset; ``\\r\\n``, ``\\n`` and a lone ``\\r`` each end a line."""
    head = data[:offset]
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1
