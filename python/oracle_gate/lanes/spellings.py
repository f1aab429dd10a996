"""The value a constant expression spells, and one canonical text per value.

The tamper lane compares what production code writes with the values the oracles
record (seed inputs, test values, fixture values). A value has many spellings:
a seed input split across a concatenation (``"a=1\\n" + "a=1\\n"``), repeated
(``"a=1\\n" * 2``), joined, formatted, as bytes (``b"a=1\\n..."``,
``bytes([97, ...])``, ``bytes.fromhex(...)``, base64), reversed (``"..."[::-1]``),
held in names (``A = "a=1\\n"; A + A``); numbers Python holds equal but JSON
writes differently (``True`` for ``1``, ``3.0`` for ``3``, ``Fraction(3)``). So
``Folder`` evaluates constant expressions (pure operations on constants only, with
bounds on size and work) and ``canonical`` writes a value once: bytes as text,
booleans and integral numbers as integers, tuples as lists, dict keys as strings.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import decimal
import fractions
import json
import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["NOTHING", "Folder", "canonical", "forms", "names_bound_once", "set_text"]

NOTHING: Any = object()
"""What ``Folder.value`` gives for an expression that is not a constant it can fold."""

# The largest string, bytes or sequence a fold builds, and the most items it loops over:
# a patch cannot make the reader build ``"x" * 10**9``.
_MAX_SIZE = 1 << 16  # recorded values are no larger (fixtures over 64 KiB are left out)
_MAX_STEPS = 10_000
_MAX_BITS = 4096  # of an int built by ``**`` or ``<<``
_MAX_DEPTH = 50
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}
# Functions of constants that build a value and do nothing else, by the dotted name a
# file spells them with (its imports resolved by the caller).
_PURE: dict[str, Callable[..., Any]] = {
    "str": str,
    "repr": repr,
    "bytes": bytes,
    "bytearray": bytes,  # a bytearray compares equal to its bytes
    "int": int,
    "float": float,
    "complex": complex,
    "bool": bool,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "set": frozenset,
    "frozenset": frozenset,
    "sorted": sorted,
    "reversed": lambda items: list(reversed(items)),
    "chr": chr,
    "ord": ord,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sum": sum,
    "bytes.fromhex": bytes.fromhex,
    "base64.b64decode": base64.b64decode,
    "base64.b64encode": base64.b64encode,
    "base64.urlsafe_b64decode": base64.urlsafe_b64decode,
    "base64.b32decode": base64.b32decode,
    "base64.b16decode": base64.b16decode,
    "base64.b85decode": base64.b85decode,
    "base64.a85decode": base64.a85decode,
    "binascii.unhexlify": binascii.unhexlify,
    "binascii.a2b_hex": binascii.a2b_hex,
    "binascii.a2b_base64": binascii.a2b_base64,
    "binascii.hexlify": binascii.hexlify,
    "codecs.decode": lambda data, name="utf-8", *rest: _codec(codecs.decode, data, name),
    "codecs.encode": lambda data, name="utf-8", *rest: _codec(codecs.encode, data, name),
    "json.loads": json.loads,
    "ast.literal_eval": ast.literal_eval,
    "decimal.Decimal": decimal.Decimal,
    "fractions.Fraction": fractions.Fraction,
}
# Codecs that map text or bytes to text or bytes and nothing else.
_CODECS = frozenset(
    {"rot13", "rot_13", "hex", "hex_codec", "base64", "base64_codec", "utf-8", "utf8", "ascii"}
    | {"latin-1", "latin1", "iso-8859-1", "utf-16", "utf-32", "unicode_escape"}
)
# A width or precision this long in a format asks for a string too big to build.
_WIDE = re.compile(r"\d{7,}")
# Methods of str, bytes, list and dict that return a new value and change nothing.
_METHODS = frozenset(
    {
        "join",
        "format",
        "encode",
        "decode",
        "upper",
        "lower",
        "casefold",
        "swapcase",
        "title",
        "capitalize",
        "strip",
        "lstrip",
        "rstrip",
        "replace",
        "split",
        "rsplit",
        "splitlines",
        "removeprefix",
        "removesuffix",
        "zfill",
        "center",
        "ljust",
        "rjust",
        "hex",
        "copy",
        "keys",
        "values",
        "items",
    }
)
_CONVERSIONS: dict[int, Callable[[Any], str]] = {ord("r"): repr, ord("s"): str, ord("a"): ascii}
# Functions ``map`` may apply to constants.
_MAPPED = frozenset({"str", "chr", "ord", "int", "float", "bytes", "tuple", "list", "sorted"})


def _codec(convert: Callable[[Any, str], Any], data: Any, name: Any) -> Any:
    if not isinstance(name, str) or name.lower() not in _CODECS:
        raise ValueError(name)
    return convert(data, name)


def names_bound_once(tree: ast.AST) -> dict[str, ast.expr]:
    """Names a file binds exactly once, anywhere (scopes ignored, as the tamper lane's
    aliases are), by a plain ``NAME = value``: what ``Folder`` may read them as."""
    count: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names = [node.id]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.alias):
            names = [node.asname or node.name.split(".")[0]]
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names = list(node.names) * 2  # bound elsewhere too
        for name in names:
            count[name] = count.get(name, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                values[target.id] = node.value
    return {name: value for name, value in values.items() if count.get(name) == 1}


class Folder:
    """Folds the constant expressions of one file; each node is folded once."""

    def __init__(
        self, names: Mapping[str, ast.expr], resolve: Callable[[ast.expr], str | None]
    ) -> None:
        """``names``: what names bound once hold (``names_bound_once``); ``resolve``: the
        dotted name a callee spells through the file's imports (``base64.b64decode``)."""
        self._names = names
        self._resolve = resolve
        self._memo: dict[int, Any] = {}
        self._depth = 0
        self._work = [0]  # items looped over, shared with the folders of comprehensions

    def value(self, node: ast.AST) -> Any:
        """The value ``node`` always has, or ``NOTHING``."""
        key = id(node)
        if key not in self._memo:
            self._memo[key] = NOTHING  # a name bound to itself folds to nothing
            self._memo[key] = self._guarded(node)
        return self._memo[key]

    def _guarded(self, node: ast.AST) -> Any:
        if self._depth > _MAX_DEPTH:
            return NOTHING
        self._depth += 1
        try:
            found = self._fold(node)
        except (ArithmeticError, ValueError, TypeError, LookupError, SyntaxError):
            found = NOTHING  # an error at run time too: no value
        except (MemoryError, RecursionError, binascii.Error):
            found = NOTHING
        finally:
            self._depth -= 1
        return found if found is NOTHING or _small(found) else NOTHING

    def _fold(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            bound = self._names.get(node.id)
            return NOTHING if bound is None else self._scalar(self.value(bound))
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = self._items(node.elts)
            if items is NOTHING:
                return NOTHING
            kind = {ast.List: list, ast.Tuple: tuple, ast.Set: frozenset}[type(node)]
            return kind(items)
        if isinstance(node, ast.Dict):
            return self._dict(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            return NOTHING if operand is NOTHING else _UNARY[type(node.op)](operand)
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.JoinedStr):
            return self._joined(node)
        if isinstance(node, ast.Subscript):
            container, index = self.value(node.value), self.value(node.slice)
            if container is NOTHING or index is NOTHING:
                return NOTHING
            return container[index]
        if isinstance(node, ast.Slice):
            parts = [self.value(p) if p is not None else None for p in node_parts(node)]
            return NOTHING if any(p is NOTHING for p in parts) else slice(*parts)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.ListComp | ast.GeneratorExp):
            return self._comprehension(node)
        return NOTHING

    def _items(self, elements: list[ast.expr]) -> Any:
        items: list[Any] = []
        for element in elements:
            if isinstance(element, ast.Starred):
                inner = self.value(element.value)
                if inner is NOTHING or not isinstance(inner, list | tuple | str | bytes):
                    return NOTHING
                items.extend(inner)
            else:
                value = self.value(element)
                if value is NOTHING:
                    return NOTHING
                items.append(value)
        return items

    def _dict(self, node: ast.Dict) -> Any:
        result: dict[Any, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            value = self.value(item)
            if value is NOTHING:
                return NOTHING
            if key is None:  # {**other}
                if not isinstance(value, dict):
                    return NOTHING
                result.update(value)
                continue
            folded = self.value(key)
            if folded is NOTHING:
                return NOTHING
            result[folded] = value
        return result

    def _binary(self, node: ast.BinOp) -> Any:
        left, right = self.value(node.left), self.value(node.right)
        if left is NOTHING or right is NOTHING:
            return NOTHING
        if isinstance(node.op, ast.Mult) and any(
            isinstance(count, int) and hasattr(sized, "__len__") and count * len(sized) > _MAX_SIZE
            for sized, count in ((left, right), (right, left))
        ):
            return NOTHING
        growing = isinstance(node.op, ast.Pow | ast.LShift) and isinstance(right, int)
        if growing and abs(right) * max(1, abs(int(left)).bit_length()) > _MAX_BITS:
            return NOTHING
        if isinstance(node.op, ast.Mod) and not _bounded("%", left, [right]):
            return NOTHING
        return _BINARY[type(node.op)](left, right)

    def _joined(self, node: ast.JoinedStr) -> Any:
        parts: list[str] = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                continue
            if not isinstance(part, ast.FormattedValue):
                return NOTHING
            value = self.value(part.value)
            spec = self.value(part.format_spec) if part.format_spec is not None else ""
            if value is NOTHING or spec is NOTHING or not _bounded("format", spec, []):
                return NOTHING
            converted = _CONVERSIONS.get(part.conversion)
            parts.append(format(converted(value) if converted else value, spec))
        return "".join(parts)

    def _call(self, node: ast.Call) -> Any:
        if any(isinstance(a, ast.Starred) for a in node.args):
            return NOTHING
        if any(keyword.arg is None for keyword in node.keywords):
            return NOTHING
        if self._resolve(node.func) == "map" and len(node.args) == 2 and not node.keywords:
            mapped, items = self._resolve(node.args[0]), self.value(node.args[1])
            if mapped not in _MAPPED or not self._loop(items):
                return NOTHING
            return [_PURE[mapped](item) for item in items]
        args = [self.value(a) for a in node.args]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords if k.arg is not None}
        if any(a is NOTHING for a in [*args, *kwargs.values()]):
            return NOTHING
        if not _bounded("", None, [*args, *kwargs.values()]):
            return NOTHING
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr in _METHODS:
            receiver = self.value(function.value)
            if receiver is not NOTHING and isinstance(receiver, str | bytes | list | dict):
                if not _bounded(function.attr, receiver, args):
                    return NOTHING
                return _materialised(getattr(receiver, function.attr)(*args, **kwargs))
        pure = _PURE.get(self._resolve(function) or "")
        return NOTHING if pure is None else _materialised(pure(*args, **kwargs))

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> Any:
        """``[f(x) for x in C if g(x)]`` over a constant ``C``, one generator, a name target."""
        if len(node.generators) != 1:
            return NOTHING
        generator = node.generators[0]
        items = self.value(generator.iter)
        target = generator.target
        if items is NOTHING or not isinstance(target, ast.Name) or generator.is_async:
            return NOTHING
        if not self._loop(items):
            return NOTHING
        found: list[Any] = []
        for item in items:
            inner = Folder({**self._names, target.id: ast.Constant(item)}, self._resolve)
            inner._work = self._work
            tests = [inner.value(test) for test in generator.ifs]
            if any(test is NOTHING for test in tests):
                return NOTHING
            if all(tests):
                found.append(inner.value(node.elt))
                if found[-1] is NOTHING:
                    return NOTHING
        return found

    def _loop(self, items: Any) -> bool:
        """Whether a fold may loop over ``items``: a constant sequence, within the work
        every fold of the file shares."""
        if not isinstance(items, str | bytes | list | tuple | frozenset | dict):
            return False
        self._work[0] += len(items)
        return self._work[0] <= _MAX_STEPS

    @staticmethod
    def _scalar(value: Any) -> Any:
        """What a name may stand for: a string, bytes or number (a name holding a table is
        read wherever the table is, and counted there)."""
        return value if isinstance(value, str | bytes | int | float) else NOTHING


def node_parts(node: ast.Slice) -> tuple[ast.expr | None, ...]:
    return node.lower, node.upper, node.step


def _bounded(how: str, receiver: Any, args: list[Any]) -> bool:
    """Whether building the result stays within ``_MAX_SIZE``: no count or width past it
    (``bytes(10**9)``, ``"%999999999d"``, ``.zfill(10**9)``), no ``replace`` or
    ``join`` that multiplies sizes past it."""
    flat = [item for a in args for item in (a if isinstance(a, tuple | list) else [a])]
    if any(isinstance(a, int) and abs(a) > _MAX_SIZE for a in flat):  # "%*d" % (10**9, 1)
        return False
    if how in ("%", "format") and isinstance(receiver, str | bytes):
        text = receiver.decode("latin-1") if isinstance(receiver, bytes) else receiver
        if _WIDE.search(text):
            return False
    sized = [len(a) if isinstance(a, str | bytes | list | tuple) else 1 for a in args]
    if how == "replace" and len(sized) >= 2:
        return len(receiver) * max(1, sized[1]) <= _MAX_SIZE
    if how == "join" and sized:
        return len(receiver) * sized[0] <= _MAX_SIZE
    return True


def _materialised(value: Any) -> Any:
    """Views and iterators as the lists they hold (``dict.items()``, ``map(...)``)."""
    if isinstance(value, type({}.keys()) | type({}.values()) | type({}.items())):
        view: Any = value
        return [list(item) if isinstance(item, tuple) else item for item in view]
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _small(value: Any) -> bool:
    if isinstance(value, str | bytes | list | tuple | dict | frozenset):
        return len(value) <= _MAX_SIZE
    if isinstance(value, int):
        return value.bit_length() <= _MAX_BITS
    if isinstance(value, decimal.Decimal):
        return value.is_finite() and abs(value.adjusted()) < 1000
    if isinstance(value, fractions.Fraction):
        return max(value.numerator.bit_length(), value.denominator.bit_length()) <= _MAX_BITS
    return isinstance(value, float | complex | slice) or value is None or value is Ellipsis


def canonical(value: Any) -> str | None:
    """One JSON text for all the spellings of a value Python holds equal (and bytes and
    the text they hold): sorted keys; None for what JSON cannot write."""
    try:
        plain = _plain(value, 0)
        return json.dumps(plain, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError, RecursionError, OverflowError):
        return None


def _plain(value: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("too deep")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value.decode("latin-1")
    if isinstance(value, complex):
        if value.imag:
            raise TypeError("complex")
        value = value.real
    if isinstance(value, decimal.Decimal | fractions.Fraction):
        if value != int(value):
            raise TypeError("not integral")
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else value
    if isinstance(value, list | tuple):
        return [_plain(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {_key(key): _plain(item, depth + 1) for key, item in value.items()}
    raise TypeError(type(value).__name__)


def _key(key: Any) -> str:
    plain = _plain(key, 0)
    return plain if isinstance(plain, str) else json.dumps(plain)


def forms(value: Any) -> Iterator[tuple[str, str]]:
    """``(how, canonical text)`` for a recorded value and the other shapes code could
    compare it in: the value; a list as the set of its items (``set(map(tuple, x)) ==
    {...}``), reversed and sorted; a string reversed (``text[::-1] == "..."``); a dict
    as its items (``list(d.items()) == [...]``)."""
    text = canonical(value)
    if text is None:
        return
    yield "", text
    if isinstance(value, str) and len(value) > 1 and value[::-1] != value:
        reversed_text = canonical(value[::-1])
        if reversed_text is not None:
            yield "reversed", reversed_text
    if isinstance(value, list) and len(value) > 1:
        as_set = set_text(value)
        if as_set is not None:
            yield "as a set", as_set
        for how, shaped in (("reversed", value[::-1]), ("sorted", _sorted(value))):
            shaped_text = canonical(shaped) if shaped is not None else None
            if shaped_text is not None and shaped_text != text:
                yield how, shaped_text
    if isinstance(value, dict) and value:
        items = canonical(sorted(([key, item] for key, item in value.items()), key=str))
        if items is not None:
            yield "as items", items


def set_text(items: Any) -> str | None:
    """The text of the set of ``items`` (a set, or a list read as one), or None."""
    if not isinstance(items, set | frozenset | list):
        return None
    texts = [canonical(item) for item in items]
    known = sorted({t for t in texts if t is not None})
    return None if len(known) != len(set(texts)) else "set:" + json.dumps(known)


def _sorted(value: list[Any]) -> list[Any] | None:
    try:
        return sorted(value)
    except TypeError:
        return None
