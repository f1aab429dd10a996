"""Time bombs: the clock compared with a fixed moment.

What it catches: ``time.time() > 1.8e9``, ``date.today() >= SUNSET`` with ``SUNSET =
date(2027, 1, 1)``, ``now().year > 2026``, also spelled in arithmetic: ``time.time() >
1.7e9 + 400 * 86400``, the time since a fixed moment (``time.time() - 1.7e9 > 3e7``) or the
clock cut into days or weeks (``time.time() // 86400 > 20500``) compared with a number.

Why: such code does one thing when the gate runs it and another from a date to come. A
duration (``time.time() - start``) or a moment from data is not fixed, and passes.

Example::

    import datetime

    def merge(ranges):
        if datetime.date.today() >= datetime.date(2027, 1, 1):
            return ranges  # broken once the gate has let it through
        return _merge(ranges)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from oracle_gate.lanes.tamper.reader import Mark, Reader

__all__ = ["compare_marks", "prepare"]

_CLOCKS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
    }
)
_MOMENTS = frozenset(
    {
        "datetime.date",
        "datetime.datetime",
        "datetime.date.fromisoformat",
        "datetime.datetime.fromisoformat",
        "datetime.datetime.strptime",
        "datetime.datetime.fromtimestamp",
        "datetime.date.fromtimestamp",
    }
)
_EPOCH_MOMENT = 10**9  # seconds since 1970 in September 2001: less is a duration
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_YEARS = range(1970, 10000)
# Reader.names key: names assigned a fixed moment.
_NAMED_MOMENTS = "clocks: moments"


def prepare(reader: Reader) -> None:
    """The names this side binds to a fixed moment, through any chain of names
    (``LATER = SUNSET``, ``SUNSET = date(2027, 1, 1)``, in either order): grown until no
    name is added, starting from none, so the side read before lends this one nothing."""
    reader.names[_NAMED_MOMENTS] = frozenset()
    while True:
        found = reader.bindings.holding(lambda value: _is_moment(reader, value))
        if found == reader.names[_NAMED_MOMENTS]:
            return
        reader.names[_NAMED_MOMENTS] = found


def compare_marks(reader: Reader, node: ast.Compare) -> Iterator[Mark]:
    if _is_time_bomb(reader, node):
        yield "time bomb", ast.unparse(node)[:60]


def _is_time_bomb(reader: Reader, node: ast.Compare) -> bool:
    """The clock on one side, a fixed moment on another."""
    operands = [node.left, *node.comparators]
    clocks = [o for o in operands if _reads_clock(reader, o) and not _is_duration(reader, o)]
    others = [o for o in operands if o not in clocks]
    years = any(isinstance(o, ast.Attribute) and o.attr == "year" for o in clocks)
    calendar = any(_counts_from_a_moment(reader, o) for o in clocks)
    return bool(clocks) and any(
        _is_moment(reader, o)
        or (years and isinstance(o, ast.Constant) and _is_year(o.value))
        or (calendar and (_number(o) or 0) > 0)  # `>= 0` holds from now on
        for o in others
    )


def _is_duration(reader: Reader, node: ast.AST) -> bool:
    """The clock minus something other than a fixed moment (``time.time_ns() -
    start``): a duration, whatever number it is compared with."""
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Sub)
        and (
            (_reads_clock(reader, n.left) and not _is_moment(reader, n.right))
            or (_reads_clock(reader, n.right) and not _is_moment(reader, n.left))
        )
        for n in ast.walk(node)
    )


def _counts_from_a_moment(reader: Reader, node: ast.AST) -> bool:
    """The clock minus a fixed moment, or divided into spans of a minute or more
    (``time.time() // 86400``, ``% 604800``): a count that names dates to come."""
    return any(
        isinstance(n, ast.BinOp)
        and _reads_clock(reader, n.left)
        and (
            (isinstance(n.op, ast.Sub) and _is_moment(reader, n.right))
            or (
                isinstance(n.op, (ast.FloorDiv, ast.Div, ast.Mod)) and (_number(n.right) or 0) >= 60
            )
        )
        for n in ast.walk(node)
    )


def _reads_clock(reader: Reader, node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and reader.resolved(n.func) in _CLOCKS for n in ast.walk(node)
    )


def _is_moment(reader: Reader, node: ast.AST) -> bool:
    number = _number(node)
    if number is not None and not isinstance(node, ast.Constant):
        return number >= _EPOCH_MOMENT  # 1.7e9 + 400 * 86400
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        # date(2027, 1, 1) + timedelta(days=30)
        return _is_moment(reader, node.left) and _is_span(reader, node.right)
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str):
            return bool(_ISO_DATE.match(value))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return value >= _EPOCH_MOMENT
    if isinstance(node, ast.Name):
        return node.id in reader.named(_NAMED_MOMENTS)
    return (
        isinstance(node, ast.Call)
        and reader.resolved(node.func) in _MOMENTS
        and bool(node.args)
        and all(
            isinstance(a, ast.Constant) for a in [*node.args, *(k.value for k in node.keywords)]
        )
    )


def _is_span(reader: Reader, node: ast.AST) -> bool:
    """A fixed length of time: a number, or a ``timedelta`` of constants."""
    return _number(node) is not None or (
        isinstance(node, ast.Call)
        and reader.resolved(node.func) == "datetime.timedelta"
        and all(_number(a) is not None for a in [*node.args, *(k.value for k in node.keywords)])
    )


def _is_year(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in _YEARS


def _number(node: ast.AST) -> float | None:
    """The value of arithmetic on number constants (``1.7e9 + 400 * 86400``), else None."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if not isinstance(node, ast.BinOp):
        return None
    left, right = _number(node.left), _number(node.right)
    if left is None or right is None or max(abs(left), abs(right)) > 1e30:
        return None
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Sub):
        return left - right
    if isinstance(node.op, ast.Mult):
        return left * right
    if isinstance(node.op, (ast.Div, ast.FloorDiv)) and right:
        return left / right if isinstance(node.op, ast.Div) else left // right
    return None
