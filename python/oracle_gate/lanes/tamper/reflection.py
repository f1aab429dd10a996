"""Reflection: a watched name reached without being written as one.

What it catches: ``getattr(sys, name)`` and ``setattr``, ``delattr``, ``vars`` on a watched
module (``sys``, ``os``, ``inspect``, ``gc``, ``builtins``...); the same made later
(``operator.attrgetter("modules")(sys)``, ``functools.partial(getattr, os)``); a module's
whole namespace (``os.__dict__["write"]``); and a builtin replaced (``builtins.len =
...``).

Why: each hides a dotted reference (``sys.modules``, ``os.write``) the other families
would see, and a replaced builtin changes every module's ``len`` or ``min``, an oracle's
too, where the replay runs them in one process.

Example::

    import sys

    def parse(text):
        if "pytest" in getattr(sys, "mod" + "ules"):
            ...
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from oracle_gate.lanes.tamper.reader import Mark, Reader

__all__ = ["REFLECTED", "attribute_marks", "call_marks"]

# getattr(sys, name) and friends hide a dotted reference from a reader.
_REFLECTION = frozenset({"getattr", "setattr", "delattr", "vars"})
REFLECTED = frozenset(
    {
        "sys",
        "os",
        "inspect",
        "gc",
        "builtins",
        "importlib",
        "traceback",
        "io",
        "signal",
        "socket",
        "platform",
    }
)
# Callables that make a getter of a name given before the object: attrgetter(name)(sys).
_GETTERS = frozenset({"operator.attrgetter", "operator.methodcaller"})
# Attributes that reach a module's whole namespace: os.__dict__["write"].
_NAMESPACES = frozenset({"__dict__", "__getattribute__"})


def attribute_marks(reader: Reader, node: ast.Attribute) -> Iterator[Mark]:
    if node.attr in _NAMESPACES and reader.resolved(node.value) in REFLECTED:
        yield "reflection", f"{reader.resolved(node.value)}.{node.attr}"
    if not isinstance(node.ctx, ast.Load) and reader.resolved(node.value) == "builtins":
        # every module's names: an oracle's all() or min() too, where they share a process
        yield "reflection", f"builtins.{node.attr} replaced"


def call_marks(reader: Reader, node: ast.Call) -> Iterator[Mark]:
    function = node.func
    if isinstance(function, ast.Name) and function.id in _REFLECTION and node.args:
        target = reader.resolved(node.args[0])
        if target in REFLECTED:
            yield "reflection", f"{function.id}({target}, ...)"
    getter = reader.resolved(function.func) if isinstance(function, ast.Call) else None
    if getter in _GETTERS:
        # operator.attrgetter('modules')(sys): getattr with the name given first
        for argument in node.args:
            target = reader.resolved(argument)
            if target in REFLECTED:
                yield "reflection", f"{getter}(...)({target})"
    if reader.resolved(function) == "functools.partial" and len(node.args) > 1:
        # functools.partial(getattr, os): getattr(os, ...) made later
        reflector, target = node.args[0], reader.resolved(node.args[1])
        reflects = isinstance(reflector, ast.Name) and reflector.id in _REFLECTION
        if reflects and target in REFLECTED:
            yield "reflection", f"functools.partial({ast.unparse(reflector)}, {target})"
