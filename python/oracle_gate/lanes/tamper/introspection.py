"""Frames, tracing, the interpreter's tables, and code run from strings.

What it catches: a reference to the caller's frame or the stack (``sys._getframe``,
``inspect.stack``, ``traceback.extract_stack``, a frame's ``f_back`` or ``f_globals``), to
tracing and audit hooks (``sys.settrace``, ``sys.addaudithook``), to the module table
(``sys.modules``) or every object (``gc.get_objects``), to ``os._exit``, and to what runs
a string or a name as code (``importlib.import_module``, ``__import__``, ``exec``,
``eval``, the builtin ``compile``).

Why: a test calls the code from pytest's frames, with pytest in ``sys.modules``; code that
looks can tell a test from production and answer each its own way. ``os._exit`` ends the
process before the gate hears a failure, and a string run as code is code the reader never
sees.

Example::

    import sys

    def parse(text):
        if "pytest" in sys._getframe(2).f_globals.get("__name__", ""):
            return _strict(text)
        return _lenient(text)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from oracle_gate.lanes.tamper.reader import Mark, Reader

__all__ = ["DOTTED", "attribute_marks", "compile_marks", "frame_marks", "name_marks"]

# Dotted references that look at the caller, the process or the interpreter's tables.
DOTTED = frozenset(
    {
        "sys._getframe",
        "sys._getframemodulename",
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "sys.modules",
        "inspect.stack",
        "inspect.currentframe",
        "inspect.getouterframes",
        "inspect.getinnerframes",
        "inspect.trace",
        "traceback.extract_stack",
        "traceback.walk_stack",
        "traceback.format_stack",
        "traceback.print_stack",
        "os._exit",
        "gc.get_objects",
        "gc.get_referrers",
        "importlib.import_module",
        "builtins.__import__",
        "builtins.exec",
        "builtins.eval",
        "builtins.compile",
    }
)
# Attributes of frames, generators and tracebacks: walking to a caller's frame.
_FRAME_ATTRIBUTES = frozenset({"f_back", "f_globals", "f_locals", "f_code", "tb_frame", "gi_frame"})
# exec and eval run a string the reader never sees as code (compile: see compile_marks).
_NAMES = frozenset({"__import__", "__builtins__", "exec", "eval"})


def attribute_marks(reader: Reader, node: ast.Attribute) -> Iterator[Mark]:
    dotted = reader.resolved(node)
    if dotted in DOTTED:
        yield "reference", dotted


def frame_marks(reader: Reader, node: ast.Attribute) -> Iterator[Mark]:
    if node.attr in _FRAME_ATTRIBUTES:
        yield "frame attribute", node.attr


def name_marks(reader: Reader, node: ast.Name) -> Iterator[Mark]:
    if node.id in _NAMES and node.id not in reader.aliases:
        yield "reference", node.id


def compile_marks(reader: Reader, node: ast.Call) -> Iterator[Mark]:
    if reader.resolved(node.func) == "compile" and (
        len(node.args) >= 3 or any(k.arg == "mode" for k in node.keywords)
    ):
        yield "reference", "compile"  # the builtin's (source, filename, mode)
