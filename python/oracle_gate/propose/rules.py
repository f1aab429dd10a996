"""The proposal rules: what a changed function now assumes of its input, read off its trees.

Each rule compares the parent's and the head's syntax tree of one changed
function and yields what it found: the precondition in words, and the diff
line that shows it (a removed line of the parent, ``-``, or an added line of
the head, ``+``). Each rule is written to stay quiet on its honest neighbour,
the nearest change that assumes nothing new:

- ``removed_sort``: a ``sorted()``/``.sort()`` gone from the function and from the
  file; quiet when the sort moved elsewhere in the file.
- ``removed_presence_check``: a removed ``x is None`` / ``not x`` / ``if x`` test; quiet
  when the test was replaced by ``isinstance(x, ...)`` or ``len(x)``.
- ``new_index``: a new ``x[0]``, ``x[-1]`` or ``next(it)`` without default; quiet when
  the function tests ``x`` for emptiness.
- ``new_dict``: a new dict built from a sequence (``dict(pairs)``, a comprehension);
  quiet for a dict of keywords or a literal.
- ``naive_datetime``: new datetime arithmetic in a function that handles no time zone;
  quiet when it names ``tzinfo``, ``astimezone``, ``timezone`` or ``utc``.
- ``removed_raise``: a removed ``if <test>: raise``; quiet while the same test raises.
- ``narrowed_except``: an exception class no handler catches any more; quiet when a
  handler only widened.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass
from typing import TypeVar

from oracle_gate.propose.changes import Changed

__all__ = ["RULES", "Proposal"]

T = TypeVar("T")


@dataclass(frozen=True)
class Proposal:
    """A rule's finding: the precondition, and the line of the diff that shows it."""

    rule: str
    precondition: str
    side: str  # "-" (a line of the parent) or "+" (a line of the head)
    line: int


def _only_in(found: dict[str, T], other: Container[str]) -> list[tuple[str, T]]:
    """The entries of ``found`` whose key ``other`` lacks, in key order: what one side of
    the patch has and the other has not."""
    return [(key, value) for key, value in sorted(found.items()) if key not in other]


def _walk(node: ast.AST | None) -> Iterator[ast.AST]:
    return iter(()) if node is None else ast.walk(node)


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _line(node: ast.AST) -> int:
    return int(getattr(node, "lineno", 0))


# --- removed_sort ---------------------------------------------------------------------


def _sorts(node: ast.AST | None) -> list[ast.Call]:
    found = []
    for call in _walk(node):
        if not isinstance(call, ast.Call):
            continue
        if (isinstance(call.func, ast.Name) and call.func.id == "sorted") or (
            isinstance(call.func, ast.Attribute) and call.func.attr == "sort"
        ):
            found.append(call)
    return found


def _sorted_what(call: ast.Call) -> str:
    if isinstance(call.func, ast.Attribute):
        return _text(call.func.value)
    return _text(call.args[0]) if call.args else "its input"


def removed_sort(changed: Changed) -> Iterator[Proposal]:
    before, after = _sorts(changed.parent), _sorts(changed.head)
    moved = len(_sorts(changed.parent_file)) <= len(_sorts(changed.head_file))
    if len(before) <= len(after) or moved:
        return
    kept = Counter(_text(call) for call in after)
    for call in before:
        if kept[_text(call)]:
            kept[_text(call)] -= 1
            continue
        yield Proposal(
            "removed_sort",
            f"{_sorted_what(call)} is already sorted when {changed.symbol} is called "
            f"({_text(call)} was removed)",
            "-",
            _line(call),
        )
        return


# --- removed_presence_check -----------------------------------------------------------

_TESTED = (ast.If, ast.IfExp, ast.While, ast.Assert)


def _tests(function: ast.AST | None) -> Iterator[ast.expr]:
    for node in _walk(function):
        if isinstance(node, _TESTED):
            yield node.test


def _presence_checks(function: ast.AST | None) -> dict[str, ast.AST]:
    """Names the function tests for None or falsiness, with the first test of each."""
    found: dict[str, ast.AST] = {}
    for test in _tests(function):
        for node in ast.walk(test):
            name = None
            if (
                isinstance(node, ast.Compare)
                and isinstance(node.left, ast.Name)
                and len(node.ops) == 1
                and isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
                and isinstance(node.comparators[0], ast.Constant)
                and node.comparators[0].value is None
            ):
                name = node.left.id
            elif (
                isinstance(node, ast.UnaryOp)
                and isinstance(node.op, ast.Not)
                and isinstance(node.operand, ast.Name)
            ):
                name = node.operand.id
            elif node is test and isinstance(node, ast.Name):
                name = node.id
            if name is not None:
                found.setdefault(name, test)
    return found


def _checked_names(function: ast.AST | None) -> set[str]:
    """Names the function tests in any way: presence, ``isinstance``, ``len``."""
    names = set(_presence_checks(function))
    for node in _walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "len")
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            names.add(node.args[0].id)
    return names


def removed_presence_check(changed: Changed) -> Iterator[Proposal]:
    for name, test in _only_in(_presence_checks(changed.parent), _checked_names(changed.head)):
        yield Proposal(
            "removed_presence_check",
            f"{name} is never None or empty when {changed.symbol} is called "
            f"(the test {_text(test)} was removed)",
            "-",
            _line(test),
        )


# --- new_index --------------------------------------------------------------------------


def _first_or_last(function: ast.AST | None) -> dict[str, tuple[str, ast.AST]]:
    """``x[0]``, ``x[-1]`` and one-argument ``next(x)``: text -> (what is indexed, node)."""
    found: dict[str, tuple[str, ast.AST]] = {}
    for node in _walk(function):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _text(node.slice) in ("0", "-1")
        ):
            found.setdefault(_text(node), (_text(node.value), node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "next"
            and len(node.args) == 1
            and not node.keywords
        ):
            found.setdefault(_text(node), (_text(node.args[0]), node))
    return found


def new_index(changed: Changed) -> Iterator[Proposal]:
    before = _first_or_last(changed.parent)
    guarded = _checked_names(changed.head)
    for text, (base, node) in sorted(_first_or_last(changed.head).items()):
        if text in before or base.split("(")[0] in guarded:
            continue
        yield Proposal(
            "new_index",
            f"{base} is never empty when {changed.symbol} is called ({text} has no default)",
            "+",
            _line(node),
        )


# --- new_dict ---------------------------------------------------------------------------


def _dicts_from_sequences(function: ast.AST | None) -> dict[str, ast.AST]:
    found: dict[str, ast.AST] = {}
    for node in _walk(function):
        if isinstance(node, ast.DictComp) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
            and len(node.args) == 1
            and not isinstance(node.args[0], ast.Dict)
        ):
            found.setdefault(_text(node), node)
    return found


def new_dict(changed: Changed) -> Iterator[Proposal]:
    before = _dicts_from_sequences(changed.parent)
    for text, node in _only_in(_dicts_from_sequences(changed.head), before):
        yield Proposal(
            "new_dict",
            f"the keys {changed.symbol} builds a dict from are unique "
            f"({text} keeps only the last value of a repeated key)",
            "+",
            _line(node),
        )


# --- naive_datetime ---------------------------------------------------------------------

_CLOCK = frozenset(
    {"datetime", "timedelta", "now", "utcnow", "today", "fromisoformat", "fromtimestamp"}
)
_ZONES = ("tz", "utc", "zone", "astimezone")


def _names(node: ast.AST | None) -> Iterator[str]:
    for sub in _walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr
        elif isinstance(sub, ast.keyword) and sub.arg:
            yield sub.arg


def _clock_arithmetic(function: ast.AST | None) -> dict[str, ast.AST]:
    return {
        _text(node): node
        for node in _walk(function)
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub))
        and any(name in _CLOCK for name in _names(node))
    }


def naive_datetime(changed: Changed) -> Iterator[Proposal]:
    if any(zone in name.lower() for name in _names(changed.head) for zone in _ZONES):
        return
    before = _clock_arithmetic(changed.parent)
    for text, node in _only_in(_clock_arithmetic(changed.head), before)[:1]:
        yield Proposal(
            "naive_datetime",
            f"the datetimes {changed.symbol} computes with are naive, or all in one "
            f"time zone ({text} handles none)",
            "+",
            _line(node),
        )


# --- removed_raise ----------------------------------------------------------------------


def _refusals(function: ast.AST | None) -> dict[str, ast.If]:
    """``if <test>: raise ...`` by the text of the test."""
    return {
        _text(node.test): node
        for node in _walk(function)
        if isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body)
    }


def removed_raise(changed: Changed) -> Iterator[Proposal]:
    for text, node in _only_in(_refusals(changed.parent), _refusals(changed.head)):
        yield Proposal(
            "removed_raise",
            f"{changed.symbol} is never given input where {text} (it raised on such "
            "input, and now accepts it)",
            "-",
            _line(node),
        )


# --- narrowed_except --------------------------------------------------------------------


def _caught(handler: ast.ExceptHandler) -> set[str]:
    if handler.type is None:
        return {"BaseException"}
    if isinstance(handler.type, ast.Tuple):
        return {_text(item) for item in handler.type.elts}
    return {_text(handler.type)}


def _handlers(function: ast.AST | None) -> list[ast.ExceptHandler]:
    return [node for node in _walk(function) if isinstance(node, ast.ExceptHandler)]


def narrowed_except(changed: Changed) -> Iterator[Proposal]:
    before = {name: h for h in _handlers(changed.parent) for name in _caught(h)}
    after_handlers = _handlers(changed.head)
    after = {name for h in after_handlers for name in _caught(h)}
    if after & {"BaseException"} or not after_handlers:
        return  # everything is still caught, or there is no handler left to be narrow
    # a class we cannot see the bases of is taken for an Exception subclass
    lost = sorted({"BaseException"} & set(before) if "Exception" in after else set(before) - after)
    for name in lost:
        narrower = next((h for h in after_handlers if _caught(h) < _caught(before[name])), None)
        where, side = (narrower, "+") if narrower is not None else (before[name], "-")
        yield Proposal(
            "narrowed_except",
            f"{changed.symbol} does not meet {name} any more (no handler catches it)",
            side,
            _line(where),
        )
        return


RULES: dict[str, Callable[[Changed], Iterator[Proposal]]] = {
    "removed_sort": removed_sort,
    "removed_presence_check": removed_presence_check,
    "new_index": new_index,
    "new_dict": new_dict,
    "naive_datetime": naive_datetime,
    "removed_raise": removed_raise,
    "narrowed_except": narrowed_except,
}
