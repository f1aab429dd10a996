"""The mutation operators: small, fixed edits of one function's syntax tree.

Each operator finds its sites in a function body (never in a nested function
or class, which are functions of their own, nor in decorators, defaults or
annotations) and says how to rewrite each one as a splice of the source text:
the byte range of one node and the text that replaces it. Splicing keeps the
rest of the file byte for byte, so a surviving mutant reads as a one-line diff.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["OPERATORS", "Edit", "Site", "body_nodes", "sites"]


@dataclass(frozen=True)
class Edit:
    """Replace the source of ``node`` (its whole extent) by ``text``; or, ``before`` it,
    insert ``text`` as a statement of its own at its indentation."""

    node: ast.expr | ast.stmt
    text: str
    before: bool = False


@dataclass(frozen=True)
class Site:
    """One way to mutate a function: which operator, where, and what it does."""

    operator: str
    line: int  # 1-based
    column: int  # 1-based, in UTF-8 bytes of the line (as Python's ast counts)
    description: str
    edit: Edit


_NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}
_DROPPED_CALLS = frozenset({"sorted", "reversed"})
_DROPPED_METHODS = frozenset({"sort", "reverse"})
# Nodes a replacement may stand as without parentheses: they bind tighter than any operator.
_ATOMS = (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript, ast.List, ast.Tuple)


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _atom(node: ast.expr) -> str:
    text = _text(node)
    return text if isinstance(node, _ATOMS) and not isinstance(node, ast.Tuple) else f"({text})"


def _compare(op_map: dict[type[ast.cmpop], type[ast.cmpop]], name: str) -> _Finder:
    def find(node: ast.AST) -> Iterator[tuple[str, Edit]]:
        if not isinstance(node, ast.Compare):
            return
        for index, op in enumerate(node.ops):
            other = op_map.get(type(op))
            if other is None:
                continue
            ops = [*node.ops]
            ops[index] = other()
            changed = ast.Compare(left=node.left, ops=ops, comparators=node.comparators)
            yield f"{name}: {_text(node)} -> {_text(changed)}", Edit(node, _text(changed))

    return find


def _bool_op(node: ast.AST) -> Iterator[tuple[str, Edit]]:
    if isinstance(node, ast.BoolOp):
        other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        changed = ast.BoolOp(op=other, values=node.values)
        yield f"{_text(node)} -> {_text(changed)}", Edit(node, _text(changed))


def _dropped_call(node: ast.AST) -> Iterator[tuple[str, Edit]]:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _DROPPED_CALLS
        and len(node.args) == 1
        and not isinstance(node.args[0], ast.Starred)
    ):
        yield f"{node.func.id}() dropped: {_text(node)}", Edit(node, _atom(node.args[0]))
    elif (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr in _DROPPED_METHODS
    ):
        yield f".{node.value.func.attr}() dropped: {_text(node)}", Edit(node, "pass")


def _removed_raise(node: ast.AST) -> Iterator[tuple[str, Edit]]:
    if (
        isinstance(node, ast.If)
        and not node.orelse
        and len(node.body) == 1
        and isinstance(node.body[0], ast.Raise)
    ):
        yield f"check removed: if {_text(node.test)}: raise ...", Edit(node, "pass")


def _number(node: ast.AST) -> int | float | None:
    """The value of a numeric literal (``-1`` included), else None; booleans are not numbers."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return None if isinstance(node.value, bool) else node.value
    return None


def _constant(node: ast.AST) -> Iterator[tuple[str, Edit]]:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"{node.value} -> {not node.value}", Edit(node, str(not node.value))
        return
    value = _number(node)
    if value is not None and isinstance(node, ast.expr):
        for changed in (value + 1, value - 1):
            yield f"{_text(node)} -> {changed!r}", Edit(node, repr(changed))


def _off_by_one(node: ast.AST) -> Iterator[tuple[str, Edit]]:
    bounds: list[ast.expr] = []
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        if isinstance(node.slice, ast.Slice):
            bounds += [b for b in (node.slice.lower, node.slice.upper) if b is not None]
        else:
            bounds.append(node.slice)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        bounds += [a for a in node.args if not isinstance(a, ast.Starred)]
    for bound in bounds:
        if _number(bound) is None and not isinstance(bound, (ast.Tuple, ast.Constant)):
            for step in ("+ 1", "- 1"):
                changed = f"{_atom(bound)} {step}"
                yield f"off by one: {_text(bound)} -> {changed}", Edit(bound, changed)


def _swapped_arguments(node: ast.AST) -> Iterator[tuple[str, Edit]]:
    """Each pair of neighbouring positional arguments, swapped."""
    if not isinstance(node, ast.Call):
        return
    for index in range(len(node.args) - 1):
        first, second = node.args[index], node.args[index + 1]
        if isinstance(first, ast.Starred) or isinstance(second, ast.Starred):
            continue
        if _text(first) == _text(second):
            continue
        args = [*node.args]
        args[index : index + 2] = [second, first]
        changed = ast.Call(func=node.func, args=args, keywords=node.keywords)
        yield f"arguments swapped: {_text(node)} -> {_text(changed)}", Edit(node, _text(changed))


_Finder = Callable[[ast.AST], Iterator[tuple[str, Edit]]]

# Operator id -> finder. The ids appear in reports and in mutant ids: renaming one
# changes every cached vet result's mutants (bump VET_VERSION in vet/store.py).
OPERATORS: dict[str, _Finder] = {
    "negate_comparison": _compare(_NEGATED, "comparison negated"),
    "boundary": _compare(_BOUNDARY, "boundary moved"),
    "and_or": _bool_op,
    "drop_call": _dropped_call,
    "remove_raise": _removed_raise,
    "constant": _constant,
    "off_by_one": _off_by_one,
    "swap_arguments": _swapped_arguments,
}


def body_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Every node of the function's body, in source order, without nested functions and
    classes, docstrings, annotations or f-string parts (their text is not code to mutate)."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.JoinedStr)):
            continue
        yield node
        children = [
            child
            for name, child in _fields(node)
            if name not in ("annotation", "returns", "type_comment")
        ]
        if _number(node) is not None and isinstance(node, ast.UnaryOp):
            continue  # ``-1`` is one literal: its operand is not a second constant to mutate
        stack.extend(reversed(children))


def _fields(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            yield name, value
        elif isinstance(value, list):
            yield from ((name, item) for item in value if isinstance(item, ast.AST))


def _early_return(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[Site]:
    """``return None`` before each statement of the body (not on the ``def`` line): the
    function stops there, its work left undone."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body or body[0].lineno == function.lineno:
        return
    for statement in body:
        edit = Edit(statement, "return None", before=True)
        where = f"returns early: None before line {statement.lineno}"
        yield Site("early_return", statement.lineno, statement.col_offset + 1, where, edit)


def sites(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Site]:
    """Every site of every operator in ``function``, in source order, then operator order."""
    found: list[Site] = list(_early_return(function))
    for node in body_nodes(function):
        for name, finder in OPERATORS.items():
            for description, edit in finder(node):
                line = getattr(edit.node, "lineno", 0)
                column = getattr(edit.node, "col_offset", 0) + 1
                found.append(Site(name, line, column, description, edit))
    order = {name: index for index, name in enumerate(("early_return", *OPERATORS))}
    return sorted(found, key=lambda s: (s.line, s.column, order[s.operator], s.description))
