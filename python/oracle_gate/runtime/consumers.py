"""Which call is iterating a value: CPython's ``list``, ``tuple`` and ``sorted`` exhaust it.

A split run asks production for one item per question. When the call that
asks a production object for its iterator is ``list(x)``, ``tuple(x)`` or
``sorted(x, ...)`` (the builtins themselves, as the calling frame resolves the
name), that call takes every item at once with no code of the test in
between (their C code calls ``iter``, the length hint, then ``next`` until the
end), so production may be asked for all of them in one question
(``child._serve_drain``) without anything it or the test sees changing.

The call is found from the calling frame's current instruction and its
source position (``co_positions``, Python 3.11+; earlier Pythons iterate
one item per question). This module imports only the standard library: it
runs in the oracle child before its ``sys.path`` holds anything else.
"""

from __future__ import annotations

import ast
import builtins
import linecache
import sys
from types import CodeType, FrameType

__all__ = ["exhausts"]

_EXHAUSTING = {"list": builtins.list, "tuple": builtins.tuple, "sorted": builtins.sorted}
# (code object, instruction offset) -> the name called there, when it may be one of them
_CALLS: dict[tuple[CodeType, int], str | None] = {}


def exhausts(frame: FrameType | None) -> bool:
    """Whether the call ``frame`` is making is ``list``, ``tuple`` or ``sorted`` of one
    value, those names resolving there to the builtins."""
    if frame is None:
        return False
    key = (frame.f_code, frame.f_lasti)
    if key not in _CALLS:
        _CALLS[key] = _called_name(frame.f_code, frame.f_lasti)
    name = _CALLS[key]
    if name is None:
        return False
    for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
        if name in scope:
            return scope[name] is _EXHAUSTING[name]
    return False


def _called_name(code: CodeType, offset: int) -> str | None:
    """The name called by the call expression at ``offset``, if it is ``list``, ``tuple``
    or ``sorted`` of exactly one positional argument (``sorted`` may take keywords)."""
    if sys.version_info < (3, 11):
        return None  # no co_positions: every item is its own question
    positions = list(code.co_positions())
    if not 0 <= offset // 2 < len(positions):
        return None
    line, end_line, column, end_column = positions[offset // 2]
    if None in (line, end_line, column, end_column):
        return None
    assert line is not None and end_line is not None
    assert column is not None and end_column is not None
    source = _span(code.co_filename, line, end_line, column, end_column)
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    name = node.func.id
    if name not in _EXHAUSTING or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
        return None
    if node.keywords and name != "sorted":
        return None
    return name


def _span(file: str, line: int, end_line: int, column: int, end_column: int) -> str:
    """The source text from (line, column) to (end line, end column); columns are UTF-8
    byte offsets, as ``co_positions`` gives them."""
    lines = [linecache.getline(file, number).encode() for number in range(line, end_line + 1)]
    if len(lines) == 1:
        return lines[0][column:end_column].decode(errors="replace")
    lines[0] = lines[0][column:]
    lines[-1] = lines[-1][:end_column]
    return b"".join(lines).decode(errors="replace")
