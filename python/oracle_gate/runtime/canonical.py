"""Canonical, type-tagged values: how results cross from patched code to the judge.

Patched code can return objects whose ``__eq__`` always says True. Outputs are
therefore encoded by exact type (a ``list`` subclass is not a ``list``), sent as
JSON, and decoded into fresh plain values before any contract or comparison
sees them. Equality of two outputs is equality of their canonical text. A
subclass of a builtin is read through the builtin's own implementation, so what
crosses is the data ``==`` compares, never what its own methods show.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

__all__ = ["CanonicalError", "NotPlainData", "canonical_text", "decode", "encode"]

_MAX_DEPTH = 200
# Each builtin data type, and how to read a subclass's data through the builtin's own
# implementation: never through the subclass's methods, which may show one value while
# ``==`` sees another (a ``str`` whose ``__str__`` says "right" holding "wrong").
_EXACT: tuple[tuple[type, Any], ...] = (
    (int, int.__int__),
    (float, float.__float__),
    (str, str.__str__),
    (bytes, lambda value: bytes.__getitem__(value, slice(None))),
    (list, list.copy),
    (tuple, lambda value: tuple.__getitem__(value, slice(None))),
    (dict, lambda value: dict(dict.items(value))),
    (set, set.copy),
    (frozenset, frozenset.copy),
)


class CanonicalError(ValueError):
    """A value that has no canonical form (a function, a socket, a cycle...)."""


class NotPlainData(CanonicalError):
    """Plain data was asked for, and the value holds an object of another kind."""

    def __init__(self, type_name: str) -> None:
        super().__init__(f"a {type_name} is not plain data")
        self.type_name = type_name


def _float(value: float) -> list[Any]:
    if math.isnan(value):
        return ["float", "nan"]
    return ["float", repr(value)]


def _object(value: object, depth: int, plain: bool) -> list[Any]:
    cls = type(value)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and not plain:
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return ["obj", name, _encode(fields, depth + 1, plain)]
    for base, exact in _EXACT:
        # the real type, not ``__class__``, which an object may claim to be anything
        if issubclass(cls, base):  # a subclass: keep its data (tagged with its class)
            data = _encode(exact(value), depth + 1, plain)
            return data if plain else ["obj", name, data]
    if plain:
        raise NotPlainData(name)
    if hasattr(value, "__dict__") and not callable(value):
        return ["obj", name, _encode(dict(vars(value)), depth + 1, plain)]
    raise CanonicalError(f"a {name} has no canonical form; return plain data")


def _encode(value: object, depth: int, plain: bool = False) -> list[Any]:
    if depth > _MAX_DEPTH:
        raise CanonicalError("value is nested too deeply (or contains a cycle)")
    kind = type(value)
    if value is None:
        return ["none"]
    if kind is bool:
        return ["bool", value]
    if kind is int:
        return ["int", str(value)]
    if kind is float:
        return _float(value)  # type: ignore[arg-type]
    if kind is str:
        return ["str", value]
    if kind is bytes:
        return ["bytes", value.hex()]  # type: ignore[attr-defined]
    if kind in (list, tuple):
        return [kind.__name__, [_encode(item, depth + 1, plain) for item in value]]  # type: ignore[attr-defined]
    if kind in (set, frozenset):
        items = [_encode(item, depth + 1, plain) for item in value]  # type: ignore[attr-defined]
        return ["set", sorted(items, key=_text)]
    if kind is dict:
        pairs = [
            [_encode(k, depth + 1, plain), _encode(v, depth + 1, plain)]
            for k, v in value.items()  # type: ignore[attr-defined]
        ]
        return ["dict", sorted(pairs, key=lambda pair: _text(pair[0]))]
    return _object(value, depth, plain)


def _text(tagged: object) -> str:
    return json.dumps(tagged, separators=(",", ":"), ensure_ascii=True)


def encode(value: object, *, plain: bool = False) -> list[Any]:
    """The tagged form of ``value``.

    With ``plain``, only plain data is taken: a subclass of a builtin data
    type (an ``IntEnum``, a ``list`` subclass) becomes its builtin data, and
    any other object (a dataclass, an instance of a class) is refused. That
    is what may cross between the oracle and production processes of a
    property run.

    Raises:
        NotPlainData: with ``plain``, the value holds an object that is not plain data.
        CanonicalError: the value holds something with no canonical form.
    """
    return _encode(value, 0, plain)


def canonical_text(tagged: object) -> str:
    """One compact JSON line; equal outputs have equal text, and only they."""
    return _text(tagged)


def decode(tagged: Any) -> Any:
    """Fresh plain values from a tagged form; objects become dicts with a ``__class__`` key.

    Raises:
        CanonicalError: the input is not a tagged form.
    """
    if not isinstance(tagged, list) or not tagged or not isinstance(tagged[0], str):
        raise CanonicalError(f"not a tagged value: {tagged!r:.80}")
    tag = tagged[0]
    if tag == "none":
        return None
    if tag in ("bool", "str"):
        return tagged[1]
    if tag == "int":
        return int(tagged[1])
    if tag == "float":
        return float(tagged[1])
    if tag == "bytes":
        return bytes.fromhex(tagged[1])
    if tag == "list":
        return [decode(item) for item in tagged[1]]
    if tag == "tuple":
        return tuple(decode(item) for item in tagged[1])
    if tag == "set":
        return frozenset(_hashable(decode(item)) for item in tagged[1])
    if tag == "dict":
        return {_hashable(decode(k)): decode(v) for k, v in tagged[1]}
    if tag == "obj":
        data = decode(tagged[2])
        return {"__class__": tagged[1], "data": data}
    raise CanonicalError(f"unknown tag {tag!r}")


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value
