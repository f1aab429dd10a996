"""Which statements and expressions of a module run when it is imported.

Function bodies run later, when called; everything else runs at import: the
statements of compound statements, class bodies, decorators, defaults and
annotations. The import-time rules (``classify/python.py``) and the census of a
module's names (``classify/module_names.py``) read a module through these two.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

__all__ = ["evaluated", "statements"]


def statements(body: list[ast.stmt], into_classes: bool) -> Iterator[ast.stmt]:
    """Statements that run when the module is imported: not function bodies.

    Compound statements are entered (their bodies run at import too); class
    bodies only when ``into_classes`` (they run, but bind class attributes).
    """
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.ClassDef) and not into_classes:
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from statements(getattr(node, field, []), into_classes)
        for handler in getattr(node, "handlers", []):
            yield from statements(handler.body, into_classes)
        for case in getattr(node, "cases", []):
            yield from statements(case.body, into_classes)


def _own_expressions(node: ast.stmt) -> Iterator[ast.AST]:
    """The expressions a statement evaluates itself (a def: decorators, defaults, annotations)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield from node.decorator_list
        yield node.args
        if node.returns is not None:
            yield node.returns
        return
    if isinstance(node, ast.ClassDef):
        yield from (*node.decorator_list, *node.bases, *node.keywords)
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ExceptHandler):
            if child.type is not None:
                yield child.type
        elif isinstance(child, ast.match_case):
            yield child.pattern
            if child.guard is not None:
                yield child.guard
        elif not isinstance(child, ast.stmt):
            yield child


def evaluated(node: ast.stmt) -> Iterator[ast.AST]:
    """Every node the statement evaluates when it runs; lambda bodies run later."""
    stack = list(_own_expressions(node))
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, ast.Lambda):
            stack.append(current.args)
            continue
        stack.extend(ast.iter_child_nodes(current))
