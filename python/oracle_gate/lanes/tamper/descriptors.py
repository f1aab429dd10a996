"""Descriptor numbers: a file opened, probed or handed over by its number.

What it catches: ``open(3)`` or ``open(f.fileno())`` (a descriptor, not a path), a probe
handed a number the code did not get from a file it opened (``os.fstat(5)``,
``os.isatty(fd)`` with ``fd = 7`` or ``for fd in range(...)``), and the keywords that hand
a descriptor over (``open(..., opener=)``, ``closefd=``, ``socket(fileno=)``,
``Popen(pass_fds=)``).

Why: the gate's child holds its result pipe open under a number a real run has closed.
Code that probes for it can tell the two apart; code that opens it can write on it.

Example::

    import os

    def merge(ranges):
        try:
            os.fstat(3)  # open only in the gate's child
        except OSError:
            return _merge(ranges)
        return sorted(ranges)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from oracle_gate.lanes.tamper.reader import Mark, Reader

__all__ = ["call_marks", "prepare"]

# Keywords that hand a descriptor over: open(..., opener=), socket(fileno=), Popen(pass_fds=).
_FD_KEYWORDS = frozenset({"opener", "closefd", "fileno", "pass_fds", "close_fds"})
# open() given one of these (or an int) opens a descriptor, not a path.
_OPENERS = frozenset({"open", "io.open", "builtins.open"})
# Calls that say whether a descriptor is open (or stat it) when handed a number: a child
# holds its result pipe open under a number a real run has closed.
_FD_PROBES = frozenset(
    {
        "os.fstat",
        "os.stat",
        "os.fstatvfs",
        "os.statvfs",
        "os.isatty",
        "os.ttyname",
        "os.lseek",
        "os.get_inheritable",
        "os.get_blocking",
        "os.set_blocking",
        "os.device_encoding",
        "os.fsync",
        "os.fdatasync",
        "os.ftruncate",
        "os.fchmod",
        "os.fchown",
        "os.fchdir",
        "os.close",
        "os.closerange",
        "os.listdir",
        "os.scandir",
        "os.path.exists",
        "os.path.isfile",
        "os.path.getsize",
        "os.path.samestat",
    }
)
_FD_CALLS = frozenset({"int", "fileno", "len", "abs", "ord", "hash", "round"})
# Reader.names keys: names holding a number, and those holding a guessed one.
_NUMBERS = "descriptors: numbers"
_GUESSED = "descriptors: guessed"


def _is_fd(node: ast.AST, numbers: frozenset[str] = frozenset()) -> bool:
    """An expression that is a descriptor number rather than a path: ``3``, ``-x``,
    ``n + 1``, ``int(...)``, ``f.fileno()``, or a name in ``numbers``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id in numbers
    if isinstance(node, ast.UnaryOp):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _is_fd(node.left, numbers) or _is_fd(node.right, numbers)
    if isinstance(node, ast.Call):
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        return name in _FD_CALLS
    return False


def _is_guessed_fd(node: ast.AST, numbers: frozenset[str] = frozenset()) -> bool:
    """A descriptor number the code did not get from a file it opened: ``5``, ``n + 1``, a
    name in ``numbers``; not 0, 1 or 2 (every run has them) nor ``f.fileno()``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool) and node.value > 2
    if isinstance(node, ast.Call):
        return False
    return _is_fd(node, numbers)


def prepare(reader: Reader) -> None:
    """``fd = 5``, ``fd = f.fileno()``, ``for fd in range(...)``: names holding a number."""
    bindings = reader.bindings
    reader.names[_NUMBERS] = bindings.ranged | bindings.holding(_is_fd)
    reader.names[_GUESSED] = bindings.ranged | bindings.holding(_is_guessed_fd)


def call_marks(reader: Reader, node: ast.Call) -> Iterator[Mark]:
    """A call handed a descriptor: ``open(3)``, ``open(f.fileno())``, ``opener=``."""
    for keyword in node.keywords:
        if keyword.arg in _FD_KEYWORDS:
            yield "file descriptor", f"{keyword.arg}="
    name = reader.resolved(node.func)
    if name in _FD_PROBES and node.args and _is_guessed_fd(node.args[0], reader.named(_GUESSED)):
        yield "file descriptor", f"{name}({ast.unparse(node.args[0])[:30]})"
    if name in _OPENERS:
        first = node.args[0] if node.args else None
        given = [k.value for k in node.keywords if k.arg == "file"]
        target = first if first is not None else (given[0] if given else None)
        if target is not None and _is_fd(target, reader.named(_NUMBERS)):
            yield "file descriptor", f"{name}({ast.unparse(target)[:30]})"
