"""Operations on the reader's values that may not be computable: what a string, a
length, a truth or a membership is when part of it is ``Unknown``."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import cast

from oracle_gate.bazel.read.values import (
    Call,
    Glob,
    Texts,
    Unknown,
    Value,
    as_start,
    extend,
    starts_of,
    strings_of,
)

__all__ = [
    "CONTAINERS",
    "LONGEST",
    "MISSING",
    "MUTATORS",
    "concat",
    "from_json",
    "holds_sequence",
    "holds_text",
    "is_known",
    "is_opaque",
    "is_tuple_display",
    "length_of",
    "may_be_str",
    "membership",
    "possible_texts",
    "replace",
    "truth_of",
    "type_name",
    "unknown_from",
]


# The most strings a computed value lists whole before only their starts are kept.
_MOST_STRINGS = 256
# The longest range() the reader lists; a longer one is an Unknown of its length.
LONGEST = 100_000


# List and dict methods that change their receiver.
MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem"}
)


# Built-in functions whose result holds only strings of their arguments.
CONTAINERS = frozenset({"depset", "struct", "Label", "existing_rule", "existing_rules"})


MISSING = object()


def may_be_str(value: Value) -> bool:
    """Whether ``value`` may be a string (a call's result may be anything)."""
    return isinstance(value, (str, Call)) or (isinstance(value, Unknown) and value.maybe_str)


def is_opaque(value: Value) -> bool:
    """Whether ``value`` holds something the reader does not know (``Unknown.opaque``)."""
    if isinstance(value, Call):
        return True
    if isinstance(value, Unknown):
        return value.opaque
    if isinstance(value, tuple):
        return any(is_opaque(item) for item in value)
    if isinstance(value, dict):
        return any(is_opaque(item) for item in value.values())
    return False


def possible_texts(value: Value) -> Texts | None:
    """The strings ``value`` may be, whole, and the starts of the others; None when it
    cannot be a string."""
    if isinstance(value, str):
        return frozenset({value}), frozenset()
    if isinstance(value, Call):
        return frozenset(), frozenset({""})
    if isinstance(value, Unknown) and value.maybe_str:
        starts = frozenset(value.starts) | (frozenset({""}) if value.opaque else frozenset())
        return frozenset(value.strings), starts
    return None


def concat(left: Texts, right: Texts) -> Texts:
    """The strings ``left + right`` may be: whole when both are, else their starts."""
    (left_whole, left_starts), (right_whole, right_starts) = left, right
    whole: set[str] = set()
    starts = set(left_starts)
    if len(left_whole) * max(len(right_whole), len(right_starts)) > _MOST_STRINGS:
        starts |= {as_start(text) for text in left_whole}
    else:
        whole = {a + b for a in left_whole for b in right_whole}
        starts |= {extend(a, b) for a in left_whole for b in right_starts}
    return frozenset(whole), frozenset(starts)


def unknown_from(
    line: int,
    text: str,
    strings: Sequence[str],
    starts: Sequence[str],
    maybe_str: bool,
    opaque: bool,
) -> Unknown:
    kept = {as_start(start) for start in starts}
    if "" in kept or len(kept) > _MOST_STRINGS:
        kept = {""}
    return Unknown(
        line=line,
        text=text,
        strings=tuple(dict.fromkeys(strings)),
        starts=tuple(sorted(kept)),
        maybe_str=maybe_str,
        opaque=opaque,
    )


def replace(value: Value, old: Value, new: Value) -> Value:
    """``value`` with ``old`` (the very object, a mutated list or dict) put as ``new``."""
    if value is old:
        return new
    if isinstance(value, tuple):
        items = tuple(replace(item, old, new) for item in value)
        changed = any(a is not b for a, b in zip(items, value, strict=True))
        return items if changed else value
    if isinstance(value, dict):
        entries = {key: replace(item, old, new) for key, item in value.items()}
        return entries if any(entries[k] is not value[k] for k in value) else value
    if isinstance(value, Call):
        args = tuple(replace(item, old, new) for item in value.args)
        kwargs = tuple((key, replace(item, old, new)) for key, item in value.kwargs)
        if any(a is not b for a, b in zip(args, value.args, strict=True)) or any(
            a[1] is not b[1] for a, b in zip(kwargs, value.kwargs, strict=True)
        ):
            return Call(value.function, value.line, args, kwargs, value.kwarg_lines)
    return value


def length_of(value: Value) -> tuple[str, int] | None:
    """What ``value`` is and its length, for the limits on what a file builds: a string,
    a list (a tuple here) or a dict, or a list of known length (``Unknown.length``)."""
    if isinstance(value, str):
        return "string", len(value)
    if isinstance(value, tuple):
        return "list", len(value)
    if isinstance(value, dict):
        return "dict", len(value)
    if isinstance(value, Unknown) and value.length is not None:
        return "list", value.length
    return None


def holds_text(value: Value) -> bool:
    """Whether ``value`` is or holds a string."""
    if possible_texts(value) is not None:
        return True
    return any(True for _ in strings_of(value)) or any(True for _ in starts_of(value))


def truth_of(value: Value) -> bool | None:
    """Starlark's truth of ``value``, or None when the reader does not know it."""
    if isinstance(value, (Unknown, Call)):
        return None
    if isinstance(value, tuple) and any(isinstance(item, Glob) for item in value):
        return None  # a glob may find nothing
    return bool(value)


def is_known(value: Value) -> bool:
    """Whether ``value`` is fully known: no Unknown, call or glob anywhere in it."""
    if isinstance(value, (Unknown, Call, Glob)):
        return False
    if isinstance(value, tuple):
        return all(is_known(item) for item in value)
    if isinstance(value, dict):
        return all(is_known(item) for item in value.values())
    return True


def from_json(found: object) -> Value:
    if isinstance(found, list):
        return tuple(from_json(item) for item in found)
    if isinstance(found, dict):
        return {str(key): from_json(item) for key, item in found.items()}
    return cast(Value, found)


def membership(item: Value, container: Value) -> bool | None:
    """``item in container`` as Starlark has it, or None when unknown here: equal means of
    one type (``True in [1]`` is False, where Python says True), and a list and a tuple
    are told apart only by Bazel."""
    if isinstance(container, str):
        return item in container if isinstance(item, str) else None
    if not isinstance(container, (tuple, dict)):
        return None
    members = list(container)
    if holds_sequence(item) or any(map(holds_sequence, members)):
        return None
    return any(type(member) is type(item) and member == item for member in members)


def holds_sequence(value: Value) -> bool:
    """Whether ``value`` is or holds a tuple here: a Starlark list or tuple, unknown which."""
    if isinstance(value, tuple):
        return True
    return isinstance(value, dict) and any(map(holds_sequence, value.values()))


def is_tuple_display(node: ast.AST) -> bool:
    """Whether ``node`` is ``template % (a, b)`` (or ``x %= (a, b)``): a tuple written as one."""
    right = node.right if isinstance(node, ast.BinOp) else getattr(node, "value", None)
    return isinstance(right, ast.Tuple)


def type_name(value: Value) -> str | None:
    """``type(value)`` as Bazel says it, None if unknown: a tuple here stands for a
    Starlark list, tuple or range alike."""
    names = {str: "string", bool: "bool", int: "int", float: "float", dict: "dict"}
    if value is None:
        return "NoneType"
    return names.get(type(value))
