"""The symbolic evaluator: a BUILD file's statements to values, never executed, with
the limits the native evaluator keeps (``bazel/limits.py``)."""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from oracle_gate.bazel import limits
from oracle_gate.bazel.read.operations import (
    CONTAINERS,
    LONGEST,
    MISSING,
    MUTATORS,
    concat,
    from_json,
    holds_sequence,
    holds_text,
    is_known,
    is_opaque,
    is_tuple_display,
    length_of,
    may_be_str,
    membership,
    possible_texts,
    replace,
    truth_of,
    type_name,
    unknown_from,
)
from oracle_gate.bazel.read.tables import (
    BOUNDED_STRING_METHODS,
    BUILTINS,
    CASES,
    PREDICATES,
    SPLITS,
    STRING_METHODS,
    STRING_NAMES,
)
from oracle_gate.bazel.read.values import (
    RELATIVE,
    Call,
    Glob,
    Texts,
    Unknown,
    Value,
    as_start,
    starts_of,
    strings_of,
)

__all__ = ["Evaluator", "check_depth", "function_name"]


# A %-template the reader computes: only %s, %d and %% (Starlark's %r quotes otherwise).
_SIMPLE_PERCENT = re.compile(r"(?:[^%]|%[sd%])*", re.DOTALL)


class Evaluator:
    """Evaluates the top level of one BUILD file without running anything.

    Every expression becomes a value; what the reader cannot compute becomes an
    ``Unknown`` that keeps the strings it may hold and the starts of those it could not
    finish, so that a label made in a way the reader does not follow still names the
    packages it may (never fewer than Bazel).
    """

    def __init__(self, loaded: frozenset[str] = frozenset()) -> None:
        self.env: dict[str, Value] = {}
        self.loaded = loaded  # the names load() binds
        self.uncertain = 0  # inside a branch that may not run
        self.looping = 0  # inside a comprehension, run any number of times
        self.frames: list[dict[str, object]] = []  # bindings a comprehension shadows

    # --- building Unknowns

    def unknown(
        self,
        node: ast.AST,
        *parts: Value,
        starts: Sequence[str] = (),
        maybe_str: bool = True,
        opaque: bool = False,
        own_starts: bool = True,
    ) -> Unknown:
        """An Unknown holding ``parts`` (their strings, and their starts if ``own_starts``)."""
        strings = [text for part in parts for text in strings_of(part)]
        found = [*starts]
        if own_starts:
            found.extend(start for part in parts for start in starts_of(part))
        opaque = opaque or any(is_opaque(part) for part in parts)
        return unknown_from(self.line(node), self.text(node), strings, found, maybe_str, opaque)

    def anything(self, node: ast.AST, *parts: Value) -> Unknown:
        """A value that may be any string: ``parts`` made it in a way the reader does not follow."""
        return self.unknown(node, *parts, starts=("",))

    def union(self, node: ast.AST, *values: Value) -> Value:
        """One of ``values``: the value itself when there is one."""
        if len(values) == 1:
            return values[0]
        return self.unknown(node, *values, maybe_str=any(may_be_str(v) for v in values))

    def element(self, node: ast.AST, value: Value) -> Value:
        """An item of ``value`` (a list, a dict's keys, a depset...): one the reader knows
        when there is one, else an Unknown of them all."""
        if isinstance(value, tuple):
            items = [item for item in value if not isinstance(item, Glob)]
            globs = [item for item in value if isinstance(item, Glob)]
            if len(items) == 1 and not globs:
                return items[0]
            return self.unknown(
                node,
                *items,
                starts=(RELATIVE,) if globs else (),
                maybe_str=bool(globs) or any(may_be_str(item) for item in items),
            )
        if isinstance(value, dict):
            return self.union(node, *value) if value else self.unknown(node, maybe_str=False)
        if isinstance(value, (Unknown, Call)):
            return self.unknown(node, value, opaque=is_opaque(value))
        return self.unknown(node, maybe_str=False)  # not iterable: Bazel fails

    @staticmethod
    def line(node: ast.AST) -> int:
        return cast(int, getattr(node, "lineno", 0))

    @staticmethod
    def text(node: ast.AST) -> str:
        try:
            text = ast.unparse(node)
        except RecursionError:  # nested deeper than Python's own unparser goes
            return f"the expression on line {getattr(node, 'lineno', 0)}"
        return text[:57] + "..." if len(text) > 60 else text

    def syntax(self, node: ast.AST) -> Unknown:
        """Syntax the reader does not evaluate (and Bazel mostly refuses): any string,
        holding every literal and every variable it names."""
        strings: list[str] = []
        for child in ast.walk(node):
            if isinstance(child, ast.Constant) and isinstance(child.value, str):
                strings.append(child.value)
            elif isinstance(child, ast.Name) and child.id in self.env:
                strings.extend(strings_of(self.env[child.id]))
        return unknown_from(self.line(node), self.text(node), strings, ("",), True, False)

    # --- expressions

    def value(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (str, int, float, bool, type(None))):
                return node.value
            return self.syntax(node)
        if isinstance(node, (ast.List, ast.Tuple)):
            if any(isinstance(item, ast.Starred) for item in node.elts):
                return self.syntax(node)
            return tuple(self.value(item) for item in node.elts)
        if isinstance(node, ast.Dict):
            return self.dict_display(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            return self.binop_chain(node)
        if isinstance(node, ast.BoolOp):
            return self.boolop(node)
        if isinstance(node, ast.UnaryOp):
            return self.unaryop(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            return self.conditional(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, (ast.ListComp, ast.DictComp)):
            return self.comprehension(node)
        return self.syntax(node)  # a lambda, a set, an f-string...

    def name(self, node: ast.Name) -> Value:
        if node.id in self.env:
            return self.env[node.id]
        # A loaded .bzl file's value: the graph takes every label that file names. (Any
        # other name is undefined, and Bazel refuses the file: no label at all.)
        return unknown_from(node.lineno, node.id, (), (), True, True)

    def dict_display(self, node: ast.Dict) -> Value:
        result: dict[str, Value] = {}
        others: list[Value] = []
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:  # {**d}
                spliced = self.value(value_node)
                if isinstance(spliced, dict):
                    result.update(spliced)
                else:
                    others.append(spliced)
                continue
            key, item = self.value(key_node), self.value(value_node)
            if isinstance(key, str):
                result[key] = item
            else:
                others.extend((key, item))
        if others:
            return self.unknown(node, result, *others, maybe_str=False)
        return result

    def binop_chain(self, node: ast.BinOp) -> Value:
        """``a + b + c ...`` folded left to right without recursing once per term: a
        generated BUILD file may add thousands of lists, which Bazel loads."""
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)
        value = self.value(chain[-1].left)
        for link in reversed(chain):
            value = self.binop(link, link.op, value, self.value(link.right))
        return value

    def binop(self, node: ast.AST, op: ast.operator, left: Value, right: Value) -> Value:
        if isinstance(op, ast.Add):
            return self.add(node, left, right)
        if isinstance(op, ast.Mod) and not isinstance(left, int):
            return self.formatted(node, left, right)
        if isinstance(op, ast.Mult):
            return self.repeated(node, left, right)
        if type(left) is int and type(right) is int:
            operations: dict[type[ast.operator], Callable[[int, int], int]] = {
                ast.Sub: lambda a, b: a - b,
                ast.FloorDiv: lambda a, b: a // b,
                ast.Mod: lambda a, b: a % b,
                ast.BitAnd: lambda a, b: a & b,
                ast.BitOr: lambda a, b: a | b,
                ast.BitXor: lambda a, b: a ^ b,
                ast.RShift: lambda a, b: a >> b,
            }
            operation = operations.get(type(op))
            if operation is not None:
                try:
                    return operation(left, right)
                except ArithmeticError:
                    pass
        if isinstance(op, ast.BitOr) and isinstance(left, dict) and isinstance(right, dict):
            union = {**left, **right}
            limits.check_length("dict", len(union), self.line(node))
            return union
        # Numbers, or a union of dicts: no new string.
        return self.unknown(node, left, right, maybe_str=False)

    def add(self, node: ast.AST, left: Value, right: Value) -> Value:
        if isinstance(left, tuple) and isinstance(right, tuple):
            limits.check_length("list", len(left) + len(right), self.line(node))
            return tuple([*left, *right])  # a new list, never an alias of either
        if isinstance(left, str) and isinstance(right, str):
            limits.check_length("string", len(left) + len(right), self.line(node))
            return left + right
        if type(left) is int and type(right) is int:
            limits.check_digits(limits.digits(left + right), self.line(node))
            return left + right
        left_texts, right_texts = possible_texts(left), possible_texts(right)
        if left_texts is None or right_texts is None:
            # A list (or dict, or number) is added: its items, no new string.
            return self.unknown(node, left, right, maybe_str=False)
        whole, starts = concat(left_texts, right_texts)
        if isinstance(left, str) or isinstance(right, str):  # a string: its pieces are not
            return self.unknown(node, *sorted(whole), starts=tuple(starts))
        # Either side may be a list (select() + select()): its strings stay scanned.
        return self.unknown(node, left, right, *sorted(whole), starts=tuple(starts))

    def repeated(self, node: ast.AST, left: Value, right: Value) -> Value:
        """``"/" * 2``, ``[x] * 3``, ``2 * 3``."""
        if isinstance(left, int) and not isinstance(right, int):
            left, right = right, left
        if type(right) is int:
            line = self.line(node)
            if type(left) is int:
                limits.check_digits(limits.digits(left) + limits.digits(right) - 1, line)
                limits.check_digits(limits.digits(left * right), line)
                return left * right
            if isinstance(left, str):
                limits.check_length("string", len(left) * max(right, 0), line)
                return left * right
            if isinstance(left, tuple):
                limits.check_length("list", len(left) * max(right, 0), line)
                return tuple(list(left) * right)
        texts = possible_texts(left) if not isinstance(left, tuple) else None
        if texts is not None:  # a string repeated: it starts as the string does, or is ""
            whole, starts = texts
            return self.unknown(node, "", starts=(*whole, *starts))
        return self.unknown(node, left, right, maybe_str=False)

    def formatted(self, node: ast.AST, template: Value, values: Value) -> Value:
        """``template % values``: computed when both are known and the template holds
        only ``%s``, ``%d`` and ``%%``; else the string starts as the template does."""
        arguments = values if isinstance(values, tuple) else (values,)
        if isinstance(template, str) and is_known(values):
            printed = limits.printed_length([values])
            limits.check_length("string", len(template) + printed, self.line(node))
        simple = isinstance(template, str) and _SIMPLE_PERCENT.fullmatch(template) is not None
        # A list here is a tuple too: only a tuple written as one is surely a tuple.
        written = not isinstance(values, tuple) or is_tuple_display(node)
        if isinstance(template, str) and simple and written and all(map(_is_scalar, arguments)):
            try:
                formatted = template % arguments
            except (TypeError, ValueError):
                pass
            else:
                limits.check_length("string", len(formatted), self.line(node))
                return formatted
        texts = possible_texts(template)
        if texts is None:
            return self.unknown(node, template, values, maybe_str=False)
        whole, starts = texts
        # A template's start is cut at its first marker when it becomes a dependency.
        return self.unknown(node, starts=(*whole, *starts))

    def boolop(self, node: ast.BoolOp) -> Value:
        """``a or b`` is one of its operands: the one the reader knows is picked, or any."""
        results: list[Value] = []
        for index, operand in enumerate(node.values):
            if results and truth_of(results[-1]) is None:
                self.uncertain += 1
                try:
                    rest = [self.value(item) for item in node.values[index:]]
                finally:
                    self.uncertain -= 1
                return self.union(node, *results, *rest)
            value = self.value(operand)
            truth = truth_of(value)
            if truth is not None and truth is isinstance(node.op, ast.Or):
                return value  # decides the result
            results = [value] if truth is not None else [*results, value]
        return self.union(node, *results) if results else None

    def unaryop(self, node: ast.UnaryOp) -> Value:
        operand = self.value(node.operand)
        if isinstance(node.op, ast.Not):
            truth = truth_of(operand)
            return self.unknown(node, maybe_str=False) if truth is None else not truth
        if type(operand) is int:
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            return ~operand
        if isinstance(operand, float) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return -operand if isinstance(node.op, ast.USub) else operand
        return self.unknown(node, maybe_str=False)

    def compare(self, node: ast.Compare) -> Value:
        values = [self.value(node.left), *(self.value(item) for item in node.comparators)]
        if not all(is_known(value) for value in values):
            return self.unknown(node, maybe_str=False)
        result = True
        for op, left, right in zip(node.ops, values, values[1:], strict=False):
            try:
                if isinstance(op, (ast.Eq, ast.NotEq)):
                    same = type(left) is type(right) and left == right
                    if same and holds_sequence(left):
                        return self.unknown(node, maybe_str=False)  # [] == () is False
                    holds = same is isinstance(op, ast.Eq)
                elif isinstance(op, (ast.In, ast.NotIn)):
                    found = membership(left, right)
                    if found is None:
                        return self.unknown(node, maybe_str=False)
                    holds = found is isinstance(op, ast.In)
                elif type(left) is type(right) and type(op) in _ORDERS:
                    holds = bool(_ORDERS[type(op)](left, right))
                else:
                    return self.unknown(node, maybe_str=False)
            except (TypeError, KeyError):
                return self.unknown(node, maybe_str=False)
            result = result and holds
        return result

    def conditional(self, node: ast.IfExp) -> Value:
        truth = truth_of(self.value(node.test))
        if truth is not None:
            return self.value(node.body if truth else node.orelse)
        self.uncertain += 1
        try:
            return self.union(node, self.value(node.body), self.value(node.orelse))
        finally:
            self.uncertain -= 1

    def subscript(self, node: ast.Subscript) -> Value:
        """An item or a slice of a list, a string, a dict."""
        value = self.value(node.value)
        if isinstance(node.slice, ast.Slice):
            parts = (node.slice.lower, node.slice.upper, node.slice.step)
            bounds = [None if part is None else self.value(part) for part in parts]
            known = all(b is None or type(b) is int for b in bounds) and bounds[2] != 0
            return self.sliced(node, value, cast("list[int | None]", bounds) if known else None)
        key = self.value(node.slice)
        if isinstance(value, tuple) and not any(isinstance(item, Glob) for item in value):
            if type(key) is int:
                return value[key] if -len(value) <= key < len(value) else self.unknown(node)
            return self.element(node, value)
        if isinstance(value, dict):
            if isinstance(key, str):
                return value[key] if key in value else self.unknown(node)
            return self.union(node, *value.values()) if value else self.unknown(node)
        if isinstance(value, str):
            # Bazel indexes the UTF-8 bytes of a string outside ASCII: not its characters.
            if type(key) is int and value.isascii():
                return value[key] if -len(value) <= key < len(value) else self.unknown(node)
            return self.unknown(node, *sorted(set(value)))  # one of its characters
        if isinstance(value, (tuple, Unknown, Call)):
            texts = possible_texts(value)
            chars = {char for text in texts[0] for char in text} if texts else set()
            # An item (its strings, their starts), or a character of a string the reader
            # could not finish: any character.
            anything = ("",) if isinstance(value, Unknown) and value.starts else ()
            element = self.element(node, value)
            return self.unknown(node, element, *sorted(chars), starts=anything)
        return self.unknown(node)  # Bazel fails

    def sliced(self, node: ast.AST, value: Value, bounds: list[int | None] | None) -> Value:
        if isinstance(value, str):
            if bounds is not None and value.isascii():
                return value[bounds[0] : bounds[1] : bounds[2]]
            # A piece of a known string: it starts with one of its characters, or is "".
            starts = {char if char in "/@" else RELATIVE for char in value}
            return self.unknown(node, "", starts=tuple(starts))
        if isinstance(value, tuple):
            if bounds is not None:
                return tuple(list(value)[bounds[0] : bounds[1] : bounds[2]])
            return self.unknown(node, value, maybe_str=False)
        texts = possible_texts(value)
        if texts is None or not (texts[0] or texts[1]):
            return self.unknown(node, value, maybe_str=False)  # a list: no new string
        return self.anything(node, value)

    def attribute(self, node: ast.Attribute) -> Value:
        root = node.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id not in self.env:
            if root.id in self.loaded:  # a member of a loaded struct
                return unknown_from(node.lineno, self.text(node), (), (), True, True)
            return self.syntax(node)
        owner = self.value(node.value)
        if isinstance(owner, Call) and owner.function == "struct" and owner.get(node.attr):
            return owner.get(node.attr)
        if isinstance(owner, Call) or (isinstance(owner, Unknown) and owner.opaque):
            return self.unknown(node, owner, opaque=True)
        return self.anything(node, owner)

    def comprehension(self, node: ast.ListComp | ast.DictComp) -> Value:
        """Evaluated once, each loop variable standing for any item of what it loops over."""
        names = {
            child.id
            for generator in node.generators
            for child in ast.walk(generator.target)
            if isinstance(child, ast.Name)
        }
        saved: dict[str, object] = {name: self.env.get(name, MISSING) for name in names}
        self.frames.append(saved)
        self.uncertain += 1
        self.looping += 1
        try:
            lengths: list[int | None] = []
            for generator in node.generators:
                iterated = self.value(generator.iter)
                known = length_of(iterated)
                lengths.append(None if known is None else known[1])
                self.assign(generator.target, self.element(generator.iter, iterated))
                for condition in generator.ifs:
                    self.value(condition)
            _check_iterations(node, lengths)
            if isinstance(node, ast.ListComp):
                items: tuple[Value, ...] = (self.value(node.elt),)
            else:
                items = (self.value(node.key), self.value(node.value))
        finally:
            self.uncertain -= 1
            self.looping -= 1
            self.frames.pop()
            for name, before in saved.items():
                if before is MISSING:
                    self.env.pop(name, None)
                else:
                    self.env[name] = cast(Value, before)
        return self.unknown(node, *items, maybe_str=False)

    # --- calls

    def arguments(
        self, node: ast.Call
    ) -> tuple[list[Value], list[tuple[str, Value]], list[tuple[str, int]], list[Value]]:
        """Positional and keyword arguments, ``*args`` and ``**kwargs`` spliced in when
        known; the unknown ones last."""
        args: list[Value] = []
        kwargs: list[tuple[str, Value]] = []
        lines: list[tuple[str, int]] = []
        unknown: list[Value] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                spliced = self.value(arg.value)
                if isinstance(spliced, tuple):
                    args.extend(spliced)
                else:
                    unknown.append(spliced)
            else:
                args.append(self.value(arg))
        for keyword in node.keywords:
            value = self.value(keyword.value)
            if keyword.arg is not None:
                kwargs.append((keyword.arg, value))
                lines.append((keyword.arg, keyword.value.lineno))
            elif isinstance(value, dict):
                kwargs.extend(value.items())
                lines.extend((key, keyword.value.lineno) for key in value)
            else:
                unknown.append(value)
        return args, kwargs, lines, unknown

    def call(self, node: ast.Call) -> Value:
        func = node.func
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(func, ast.Attribute) and not (
            isinstance(root, ast.Name) and root.id not in self.env
        ):
            owner = self.value(func.value)  # a method of a value: "//a".lower(), L.append
            args, kwargs, _, unknown = self.arguments(node)
            return self.method(node, func.value, owner, func.attr, args, dict(kwargs), unknown)
        function = function_name(func)
        if function is None or function.split(".")[0] in self.env:
            # A function the file computes (a lambda, an alias): its result may be anything.
            callee = self.value(func)
            args, kwargs, _, unknown = self.arguments(node)
            return self.anything(node, callee, *args, *(v for _, v in kwargs), *unknown)
        args, kwargs, lines, unknown = self.arguments(node)
        if function.split(".")[0] not in self.loaded:
            builtin = self.builtin(node, function.removeprefix("native."), args, kwargs, unknown)
            if builtin is not MISSING:
                return cast(Value, builtin)
        every = (*args, *unknown)  # an unknown *args or **kwargs is still scanned
        return Call(function, node.lineno, every, tuple(kwargs), tuple(lines))

    def builtin(
        self,
        node: ast.Call,
        function: str,
        args: list[Value],
        kwargs: list[tuple[str, Value]],
        unknown: list[Value],
    ) -> object:
        """A Starlark built-in function's result, or ``MISSING`` for a rule or a macro."""
        named = dict(kwargs)
        parts = (*args, *named.values(), *unknown)
        first: Value = args[0] if args else None
        if not unknown:
            _check_builtin(node, function, args, named)
        if function == "glob":
            return self.glob(node, tuple(args), named) if not unknown else self.globbed(node, parts)
        if function == "select":
            branches = first if isinstance(first, dict) else None
            maybe = any(map(may_be_str, branches.values())) if branches is not None else True
            return self.unknown(node, *parts, maybe_str=maybe)
        if unknown and function in BUILTINS:
            return self.anything(node, *parts)
        if function in ("package_name", "repository_name"):
            # The package is known only where the file sits; it names no other package.
            return unknown_from(node.lineno, self.text(node), (), (), True, True)
        if function == "str" and len(args) == 1:
            if isinstance(first, (str, int)) or first is None:
                return str(first)
            return self.anything(node, *parts)
        if function == "repr" and len(args) == 1:
            if isinstance(first, str) and first.isascii() and first.isprintable():
                return f'"{first}"' if not {'"', "\\"} & set(first) else self.anything(node, *parts)
            if isinstance(first, int) or first is None:
                return str(first)
            return self.anything(node, *parts)
        if function == "len" and isinstance(first, Unknown) and first.length is not None:
            return first.length
        if function == "len":
            # Bazel's strings are Latin-1 bytes: len("é") is 2 there.
            countable = isinstance(first, dict) or (isinstance(first, str) and first.isascii())
            countable = countable or (isinstance(first, tuple) and is_known(first))
            if len(args) == 1 and countable:
                return len(cast("str | dict[str, Value] | tuple[Value, ...]", first))
            return self.unknown(node, maybe_str=False)
        if function == "type" and len(args) == 1:
            name = type_name(first)
            return name if name is not None else self.unknown(node, starts=(RELATIVE,))
        if function in ("list", "tuple") and len(args) == 1:
            if isinstance(first, tuple) and is_known(first):
                return tuple(list(first))
            if isinstance(first, dict):
                return tuple(first)
            return self.unknown(node, self.element(node, first), maybe_str=False)
        if function == "dict" and len(args) <= 1:
            if first is None or isinstance(first, dict):
                return {**(first or {}), **named}
            return self.unknown(node, *parts, maybe_str=False)
        if (
            function == "reversed"
            and len(args) == 1
            and isinstance(first, tuple)
            and is_known(first)
        ):
            return tuple(reversed(first))
        if function == "range" and all(type(a) is int for a in args) and 1 <= len(args) <= 3:
            try:
                numbers = range(*cast("list[int]", args))
            except ValueError:
                return self.unknown(node, maybe_str=False)
            if len(numbers) <= LONGEST:
                return tuple(numbers)
            return Unknown(node.lineno, self.text(node), (), maybe_str=False, length=len(numbers))
        if function in ("min", "max", "sorted", "reversed", "enumerate", "zip", "list", "tuple"):
            items = first if len(args) == 1 else tuple(args)
            element = self.element(node, items)
            return self.unknown(node, element, maybe_str=function in ("min", "max"))
        if function == "getattr" and len(args) >= 2 and isinstance(args[1], str):
            owner = first
            if isinstance(owner, Call) and owner.function == "struct":
                found = owner.get(args[1])
                if found is not None:
                    return found
            if isinstance(owner, Call) or (isinstance(owner, Unknown) and owner.opaque):
                return self.unknown(node, *parts, opaque=True)
            return self.anything(node, *parts)
        if function in ("print", "fail"):
            return None
        if function in ("int", "bool", "hash", "hasattr", "any", "all", "float"):
            if function == "bool" and len(args) == 1 and truth_of(first) is not None:
                return truth_of(first)
            if function == "int" and len(args) == 1 and type(first) is int:
                return first
            return self.unknown(node, maybe_str=False)
        if function == "dir":
            return self.unknown(node, starts=(RELATIVE,), maybe_str=False)
        if function == "json.decode" and len(args) == 1 and isinstance(first, str):
            try:
                return from_json(json.loads(first))
            except ValueError:
                return self.unknown(node)
        if function in CONTAINERS:
            return MISSING  # a Call, whose arguments are scanned
        if function in BUILTINS:
            return self.anything(node, *parts)  # json.encode(), ...: any string
        return MISSING

    def globbed(self, node: ast.AST, parts: Sequence[Value]) -> Value:
        """A glob() the reader cannot read: package-relative paths, no label."""
        return self.unknown(node, *parts, starts=(RELATIVE,), maybe_str=False, own_starts=False)

    def glob(self, node: ast.Call, args: tuple[Value, ...], kwargs: dict[str, Value]) -> Value:
        include = args[0] if args else kwargs.get("include", ())
        exclude = args[1] if len(args) > 1 else kwargs.get("exclude", ())
        directories = kwargs.get("exclude_directories", 1)
        if not (_is_strings(include) and _is_strings(exclude)) or not isinstance(directories, int):
            return self.globbed(node, (*args, *kwargs.values()))
        assert isinstance(include, tuple) and isinstance(exclude, tuple)
        glob = Glob(
            include=tuple(str(p) for p in include),
            exclude=tuple(str(p) for p in exclude),
            exclude_directories=bool(directories),
            line=node.lineno,
        )
        return (glob,)

    def method(
        self,
        node: ast.Call,
        owner_node: ast.expr,
        owner: Value,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        unknown: list[Value],
    ) -> Value:
        parts = (*args, *kwargs.values(), *unknown)
        if isinstance(owner, str):
            return self.string_method(node, owner, name, args, kwargs, unknown)
        if isinstance(owner, (tuple, dict)) and not unknown:
            return self.container_method(node, owner_node, owner, name, args, kwargs)
        if name in MUTATORS:
            self.mutate(node, owner_node, owner, self.unknown(node, owner, *parts), parts)
            return self.element(node, owner) if name in ("pop", "popitem", "setdefault") else None
        if isinstance(owner, Call) and owner.function.split(".")[0] in self.loaded:
            return self.unknown(node, owner, *parts, opaque=True)  # a loaded struct's function
        if name in PREDICATES:
            return self.unknown(node, maybe_str=False)
        if name in ("get", "keys", "values", "items") and not (
            isinstance(owner, Unknown) and owner.maybe_str
        ):
            return self.unknown(node, owner, *parts, maybe_str=name == "get")
        texts = possible_texts(owner)
        if texts is not None and name in ("lower", "upper") and not parts:
            whole, starts = texts
            change = str.lower if name == "lower" else str.upper
            return self.unknown(
                node, *sorted(change(t) for t in whole), starts=[change(s) for s in starts]
            )
        if isinstance(owner, Unknown) and owner.opaque and name not in STRING_NAMES:
            return self.unknown(node, owner, *parts, opaque=True)  # a loaded struct's function
        return self.anything(node, owner, *parts)

    def string_method(
        self,
        node: ast.Call,
        receiver: str,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        unknown: list[Value],
    ) -> Value:
        """``"//LIB:L".lower()``: computed for a method Starlark shares with Python when
        every argument is known; else the string starts as far as the reader knows."""
        parts = (*args, *kwargs.values(), *unknown)
        if not receiver.isascii() or not all(text.isascii() for text in strings_of(parts)):
            # Bazel's strings are Latin-1 bytes: outside ASCII, its methods differ.
            if name in PREDICATES:
                return self.unknown(node, maybe_str=False)
            return self.anything(node, *parts)
        if name in PREDICATES:
            # A start past the end is the end in Bazel ("abc".find("", 5) is 3), not here.
            bounded = name in BOUNDED_STRING_METHODS and len(args) + len(kwargs) > 1
            if not unknown and not bounded and all(_is_scalar(a) or _is_strings(a) for a in parts):
                method = getattr(receiver, name)
                try:
                    found = method(*(tuple(a) if isinstance(a, tuple) else a for a in args))
                except (TypeError, ValueError):
                    return self.unknown(node, maybe_str=False)
                return cast(Value, found)
            return self.unknown(node, maybe_str=False)
        if name in CASES:
            if not receiver:
                return ""
            return self.unknown(node, starts=(as_start(receiver[0]),))
        if not unknown and name in SPLITS and all(_is_scalar(a) for a in parts):
            try:
                if name == "elems":
                    return tuple(receiver) if not parts else self.unknown(node)
                pieces = getattr(receiver, name)(*args, **kwargs)
            except (TypeError, ValueError):
                return self.unknown(node)
            return tuple(pieces)
        method = STRING_METHODS.get(name)
        # Only join takes a list: Python and Starlark write a list inside a string apart.
        known = not unknown and (
            len(args) == 1 and not kwargs and _is_strings(args[0])
            if name == "join"
            else all(_is_scalar(value) for value in parts)
        )
        if not unknown and all(map(is_known, parts)):
            _check_string_method(node, receiver, name, args, parts)
        if method is not None and known:
            try:
                result = method(receiver, *args, **kwargs)
            except (TypeError, ValueError, IndexError, KeyError):
                return self.unknown(node)  # Bazel fails too
            if isinstance(result, str):
                limits.check_length("string", len(result), self.line(node))
                return result
        if name == "join" and len(args) == 1 and not kwargs and not unknown:
            return self.joined(node, receiver, args[0])
        if name == "format":
            # "{}/lib:l".format(x): the known text up to the first field.
            return self.unknown(node, starts=(receiver,))
        if name in SPLITS:
            return self.unknown(node, *parts, starts=("",), maybe_str=False)
        return self.anything(node, *parts)

    def joined(self, node: ast.AST, separator: str, items: Value) -> Value:
        """``separator.join(items)`` with items the reader does not all know."""
        if isinstance(items, tuple) and not any(isinstance(i, Glob) for i in items):
            texts: Texts = (frozenset({""}), frozenset())
            for index, item in enumerate(items):
                item_texts = possible_texts(item)
                if item_texts is None:
                    return self.unknown(node, items)  # Bazel fails
                if index:
                    texts = concat(texts, (frozenset({separator}), frozenset()))
                texts = concat(texts, item_texts)
            whole, starts = texts
            return self.unknown(node, *sorted(whole), starts=tuple(starts))
        element = self.element(node, items)
        texts_of = possible_texts(element)
        whole, starts = texts_of if texts_of is not None else (frozenset(), frozenset())
        return self.unknown(node, "", starts=(*whole, *starts))

    def container_method(
        self,
        node: ast.Call,
        owner_node: ast.expr,
        owner: tuple[Value, ...] | dict[str, Value],
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        """A method of a list or a dict the reader knows: computed, changes included."""
        parts = (*args, *kwargs.values())
        first: Value = args[0] if args else None
        if isinstance(owner, tuple):
            items = list(owner)
            result: Value = None
            if name == "append" and len(args) == 1:
                items.append(first)
            elif name == "extend" and len(args) == 1 and isinstance(first, tuple):
                limits.check_length("list", len(items) + len(first), self.line(node))
                items.extend(first)
            elif name == "insert" and len(args) == 2 and type(first) is int:
                items.insert(first, args[1])
            elif name == "pop" and len(args) <= 1 and type(first or -1) is int:
                index = -1 if first is None else cast(int, first)
                if not -len(items) <= index < len(items):
                    return self.unknown(node)  # Bazel fails
                result = items.pop(index)
            elif name == "clear" and not args:
                items.clear()
            elif name == "remove" and len(args) == 1 and is_known(owner) and first in items:
                items.remove(first)
            elif name == "index":
                return self.unknown(node, maybe_str=False)
            elif name in MUTATORS:
                new = self.unknown(node, owner, *parts, maybe_str=False)
                self.mutate(node, owner_node, owner, new, parts)
                return self.element(node, owner) if name == "pop" else None
            else:
                return self.anything(node, owner, *parts)
            self.mutate(node, owner_node, owner, tuple(items), parts)
            return result
        entries = dict(owner)
        key = first
        if name == "get" and 1 <= len(args) <= 2 and isinstance(key, str):
            return owner.get(key, args[1] if len(args) == 2 else None)
        if name in ("keys", "values", "items") and not args:
            if name == "keys":
                return tuple(owner)
            if name == "values":
                return tuple(owner.values())
            return tuple((key, item) for key, item in owner.items())
        result = None
        if name == "update" and len(args) <= 1 and isinstance(first or {}, dict):
            entries.update(cast("dict[str, Value]", first or {}), **kwargs)
        elif name == "setdefault" and 1 <= len(args) <= 2 and isinstance(key, str):
            result = entries.setdefault(key, args[1] if len(args) == 2 else None)
        elif name == "pop" and 1 <= len(args) <= 2 and isinstance(key, str):
            if key not in entries and len(args) == 1:
                return self.unknown(node)  # Bazel fails
            result = entries.pop(key, args[1] if len(args) == 2 else None)
        elif name == "clear" and not args:
            entries.clear()
        elif name in MUTATORS:
            new = self.unknown(node, owner, *parts, maybe_str=False)
            self.mutate(node, owner_node, owner, new, parts)
            return self.unknown(node, owner, *parts)
        elif name in ("get", "keys", "values", "items"):
            return self.unknown(node, owner, *parts, maybe_str=name == "get")
        else:
            return self.anything(node, owner, *parts)
        self.mutate(node, owner_node, owner, entries, parts)
        return result

    # --- changes to lists and dicts

    def mutate(
        self,
        node: ast.AST,
        owner_node: ast.expr | None,
        old: Value,
        new: Value,
        added: Sequence[Value],
    ) -> None:
        """``old`` (a list or dict) became ``new``: every variable holding it sees it."""
        if self.looping and any(holds_text(value) for value in added):
            # Run any number of times, each run building on the last: any string.
            new = self.unknown(node, old, new, *added, starts=("",), maybe_str=may_be_str(old))
        elif self.uncertain:
            new = self.union(node, old, new)
        direct = owner_node.id if isinstance(owner_node, ast.Name) else None
        # The empty list is one object to Python: another () is not the same list.
        shared = new if old != () else self.union(node, old, new)
        extra = self.unknown(node, *added)
        scopes = [cast("dict[str, object]", self.env), *self.frames]
        for scope in scopes:
            for key, value in list(scope.items()):
                if value is MISSING:
                    continue
                current = cast(Value, value)
                if key == direct and scope is self.env:
                    scope[key] = new
                    continue
                replaced = replace(current, old, shared)
                if replaced is not current:
                    scope[key] = replaced
                elif isinstance(current, Unknown) and not current.opaque:
                    # A summary may hold the changed list: it holds what was added too.
                    scope[key] = unknown_from(
                        current.line,
                        current.text,
                        (*current.strings, *extra.strings),
                        (*current.starts, *extra.starts),
                        current.maybe_str,
                        current.opaque or extra.opaque,
                    )

    # --- statements

    def assign(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, tuple) and len(value) == len(target.elts):
                starred = any(isinstance(item, ast.Starred) for item in target.elts)
                if not starred and not any(isinstance(item, Glob) for item in value):
                    for item_target, item in zip(target.elts, value, strict=True):
                        self.assign(item_target, item)
                    return
            element = self.element(target, value)
            for item_target in target.elts:
                self.assign(item_target, element)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, self.unknown(target, value, maybe_str=False))
        elif isinstance(target, ast.Subscript):
            container = self.value(target.value)
            key = self.value(target.slice) if not isinstance(target.slice, ast.Slice) else None
            new: Value
            if (
                isinstance(container, tuple)
                and type(key) is int
                and not isinstance(target.slice, ast.Slice)
            ):
                if not -len(container) <= key < len(container):
                    return  # Bazel fails
                items = list(container)
                items[key] = value
                new = tuple(items)
            elif isinstance(container, dict) and isinstance(key, str):
                new = {**container, key: value}
            else:
                new = self.unknown(target, container, key, value, maybe_str=False)
            self.mutate(target, target.value, container, new, (value,))
        # An attribute cannot be set in Starlark (Bazel fails): nothing changes.

    def statement(self, statement: ast.stmt) -> Iterator[Value]:
        """Evaluates one top-level statement; yields the values to scan for labels."""
        if isinstance(statement, ast.Expr):
            if not isinstance(statement.value, ast.Constant):  # a docstring
                yield self.value(statement.value)
        elif isinstance(statement, ast.Assign):
            value = self.value(statement.value)
            for target in statement.targets:
                self.assign(target, value)
        elif isinstance(statement, ast.AugAssign):
            target = statement.target
            if isinstance(target, ast.Attribute):
                return  # Bazel fails
            current = self.value(target)
            if isinstance(target, ast.Name) and target.id not in self.env:
                current = self.syntax(target)
            added = self.value(statement.value)
            new = self.binop(statement, statement.op, current, added)
            if isinstance(target, ast.Name) and isinstance(current, (tuple, dict, Unknown)):
                # ``x += [...]`` extends the very list x holds: its aliases see it.
                self.mutate(statement, target, current, new, (added,))
            else:
                self.assign(target, new)
        elif not isinstance(statement, ast.Pass):
            # def/for/if... are not allowed in BUILD files (Bazel refuses the file); read
            # as any label at all, every name they bind included.
            for child in ast.walk(statement):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    self.env[child.id] = self.syntax(statement)
                elif isinstance(child, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                    self.env[child.name] = self.syntax(statement)
            yield self.syntax(statement)


_ORDERS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def _check_string_method(
    node: ast.AST, receiver: str, name: str, args: list[Value], parts: Sequence[Value]
) -> None:
    """Stops the reading when ``receiver.name(...)`` would build a string longer than a
    value may be, before it is built: as the native evaluator foresees it
    (``method_growth`` in rust/src/starlark/checked.rs).

    Raises:
        limits.Stop: the string would be too long.
    """
    line = cast(int, getattr(node, "lineno", 0))
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str):
        old, new = args[0], args[1]
        if not isinstance(new, str):
            return
        found = len(receiver) + 1 if not old else receiver.count(old)
        limit = args[2] if len(args) > 2 and isinstance(args[2], int) else -1
        count = min(found, limit) if limit >= 0 else found
        limits.check_length("string", len(receiver) + count * (len(new) - len(old)), line)
    elif name == "join" and len(args) == 1 and _is_strings(args[0]):
        pieces = cast("tuple[str, ...]", args[0])
        joined = sum(map(len, pieces)) + len(receiver) * max(len(pieces) - 1, 0)
        limits.check_length("string", joined, line)
    elif name == "format":
        longest = max((limits.printed_length([part]) for part in parts), default=0)
        fields = limits.format_fields(receiver)
        limits.check_length("string", len(receiver) + fields * longest, line)


# The builtins that look at what they are given only on its surface: the native
# evaluator walks what every other one is given (``check_depth``). ``SHALLOW`` in
# rust/src/starlark/values.rs.
_SHALLOW = frozenset(
    {
        *("len", "type", "getattr", "hasattr", "dir", "list", "tuple", "reversed"),
        *("enumerate", "zip", "range", "bool", "int", "float", "any", "all"),
    }
)
# The builtins that build a list of (about) one item per item of their first argument.
_LISTING = frozenset({"list", "tuple", "sorted", "reversed", "enumerate"})
# The builtins that print their arguments.
_PRINTING = frozenset({"str", "repr", "print", "fail", "json.encode", "json.encode_indent"})


def _check_builtin(
    node: ast.AST, function: str, args: list[Value], named: dict[str, Value]
) -> None:
    """Stops the reading when the builtin ``function`` would build a value longer than a
    value may be, as the native evaluator foresees it (``check_builtin`` in
    rust/src/starlark/checked.rs).

    Raises:
        limits.Stop: the value would be too long, or an integer too many digits.
    """
    line = cast(int, getattr(node, "lineno", 0))
    if function not in _SHALLOW:
        check_depth(Call(function, line, tuple(args), tuple(named.items())))
    sizes = [length_of(arg) for arg in args]
    first = sizes[0] if sizes else None
    if function in _LISTING and first is not None:
        limits.check_length("list", first[1], line)
    elif function == "zip" and sizes and all(size is not None for size in sizes):
        limits.check_length("list", min(size[1] for size in sizes if size is not None), line)
    elif function == "dict" and (first is not None or not args):
        limits.check_length("dict", (first[1] if first else 0) + len(named), line)
    elif function in _PRINTING and all(map(is_known, (*args, *named.values()))):
        limits.check_length("string", limits.printed_length([*args, *named.values()]), line)
    elif function == "int" and args and isinstance(args[0], str):
        limits.check_digits(sum(1 for char in args[0] if "0" <= char <= "9"), line)


def check_depth(value: Value) -> None:
    """Stops the reading when the call ``value`` (or a call in its arguments) is given a
    value nested more than ``MAX_DEPTH`` levels deep, counted as the native evaluator
    counts what a builtin or rule is given (``check_walk`` in rust/src/starlark/checked.rs):
    each call's arguments afresh.

    Raises:
        limits.Stop: one is.
    """
    calls = [value] if isinstance(value, Call) else []
    while calls:
        call = calls.pop()
        levels = [iter((*call.args, *(item for _, item in call.kwargs)))]
        while levels:
            item = next(levels[-1], MISSING)
            if item is MISSING:
                levels.pop()
            elif isinstance(item, Call):
                calls.append(item)
            elif isinstance(item, (tuple, dict)) and item:
                if len(levels) >= limits.MAX_DEPTH:
                    raise limits.Stop(call.line, limits.too_deep)
                pairs = item.items() if isinstance(item, dict) else ()
                levels.append(iter(item if isinstance(item, tuple) else (*sum(pairs, ()),)))


def _steps_of(nodes: Iterable[ast.AST]) -> int:
    """The steps one run of ``nodes`` takes besides its iteration: one per call and
    operator, as the native evaluator counts them (each is a call there)."""
    return sum(
        1
        if isinstance(child, (ast.Call, ast.BinOp, ast.Slice))
        else len(child.ops)
        if isinstance(child, ast.Compare)
        else 0
        for node in nodes
        for child in ast.walk(node)
    )


def _check_iterations(node: ast.ListComp | ast.DictComp, lengths: Sequence[int | None]) -> None:
    """Stops the reading when the comprehension ``node``, whose loops run over lists of
    ``lengths`` (None: not known), would take more than ``MAX_STEPS`` steps: two per
    iteration (the native evaluator counts each before the loop runs, and as it runs),
    and one per call and operator it runs each time.

    Raises:
        limits.Stop: it would.
    """
    if any(length is None for length in lengths):
        return
    element = [node.elt] if isinstance(node, ast.ListComp) else [node.key, node.value]
    generators = node.generators
    steps = 0
    runs = 1
    for index, generator in enumerate(generators):
        runs *= cast(int, lengths[index])
        inner = generators[index + 1].iter if index + 1 < len(generators) else None
        each = [*generator.ifs, *([inner] if inner is not None else element)]
        steps += runs * (2 + _steps_of(each))
        if steps > limits.MAX_STEPS:
            raise limits.Stop(node.lineno, limits.out_of_steps)


def _is_strings(value: Value) -> bool:
    return isinstance(value, tuple) and all(isinstance(item, str) for item in value)


def _is_scalar(value: Value) -> bool:
    return isinstance(value, (str, int))  # bool is an int


def function_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = function_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None
