"""Bazel BUILD files read statically: Starlark parsed as Python syntax, never executed.

A BUILD file is parsed with ``ast`` and its top level is *evaluated symbolically*:
literals, lists, dicts, ``+``, top-level variables, ``glob()``/``select()`` calls and
the string operations a label can be made with (``%``, slices, ``format``, ``join``,
``lower``...) become plain values; anything else (a macro's return value, a
comprehension, a name from a ``load()``ed file) becomes ``Unknown`` and still gives
up every string inside it, so label scanning over-approximates rather than misses a
dependency. A string the reader cannot compute, made from a piece it knows that holds
a ``/`` or ``:`` (``"%s/lib:l" % X``), may become any label: it names every package.

What a BUILD file says depends on its bytes only (labels are resolved later,
against the package's location), so ``parse_build`` results are cached in
memory by git blob id. See ``docs/selection.md`` for why the cache is not on disk.
"""

from __future__ import annotations

import ast
import hashlib
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, cast

from oracle_gate.bazel.labels import label_ref
from oracle_gate.errors import ConfigError

__all__ = [
    "GATE_FUNCTION",
    "BuildFile",
    "Call",
    "Dep",
    "Glob",
    "Unknown",
    "Value",
    "blob_id",
    "cache_info",
    "clear_cache",
    "gates_from_native",
    "parse_build",
    "parse_build_cached",
]

GATE_FUNCTION = "oracle_gate"
INVARIANT_FUNCTION = "invariant"

# Attributes whose strings are not dependencies (bazel query does not follow them).
_NOT_DEPS = frozenset({"name", "visibility", "default_visibility", "tags", "licenses"})
# A computed label that may name any package of its workspace: what a string the
# reader cannot compute becomes (``label_ref`` reads it as every package under //).
ANY_PACKAGE = "//"
# The string methods the reader computes: Starlark's and Python's agree on them.
_STRING_METHODS: dict[str, Callable[..., object]] = {
    "format": str.format,
    "join": str.join,
    "lower": str.lower,
    "lstrip": str.lstrip,
    "removeprefix": str.removeprefix,
    "removesuffix": str.removesuffix,
    "replace": str.replace,
    "rstrip": str.rstrip,
    "strip": str.strip,
    "upper": str.upper,
}
# A %-template the reader computes: only %s, %d and %% (Starlark's %r quotes otherwise).
_SIMPLE_PERCENT = re.compile(r"(?:[^%]|%[sd%])*", re.DOTALL)
# Calls whose arguments never name dependencies.
_NOT_RULES = frozenset(
    {"load", "package", "package_group", "licenses", "workspace", "exports_files_visibility"}
)


# --- symbolic values ---------------------------------------------------------------


@dataclass(frozen=True)
class Glob:
    """A ``glob()`` call, evaluated later against the tree (``evaluate_glob``)."""

    include: tuple[str, ...]
    exclude: tuple[str, ...]
    exclude_directories: bool
    line: int


@dataclass(frozen=True)
class Unknown:
    """An expression the static reader cannot evaluate, and every string inside it."""

    line: int
    text: str
    strings: tuple[str, ...]


@dataclass(frozen=True)
class Call:
    """A function call: a rule, a macro, ``invariant()``, ``struct()``..."""

    function: str
    line: int
    args: tuple[Value, ...]
    kwargs: tuple[tuple[str, Value], ...]
    kwarg_lines: tuple[tuple[str, int], ...] = ()

    def get(self, key: str) -> Value | None:
        for name, value in self.kwargs:
            if name == key:
                return value
        return None

    def line_of(self, key: str) -> int:
        for name, line in self.kwarg_lines:
            if name == key:
                return line
        return self.line


# A value is a str, int, float, bool, None, a tuple (a Starlark list; a Glob inside a
# tuple splices its matches in), a dict, a Call or an Unknown.
Value: TypeAlias = (
    str
    | int
    | float
    | bool
    | tuple["Value", ...]
    | dict[str, "Value"]
    | Glob
    | Call
    | Unknown
    | None
)


def _strings_of(value: Value) -> Iterator[str]:
    """Every string in ``value``, recursively (dict keys included: select() conditions)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _strings_of(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings_of(item)
    elif isinstance(value, Call):
        for item in value.args:
            yield from _strings_of(item)
        for _, item in value.kwargs:
            yield from _strings_of(item)
    elif isinstance(value, Unknown):
        yield from value.strings


class _Evaluator:
    """Evaluates the top level of one BUILD file without running anything."""

    def __init__(self) -> None:
        self.env: dict[str, Value] = {}

    def unknown(self, node: ast.AST) -> Unknown:
        strings: list[str] = []
        for child in ast.walk(node):
            if isinstance(child, ast.Constant) and isinstance(child.value, str):
                strings.append(child.value)
            elif isinstance(child, ast.Name) and child.id in self.env:
                strings.extend(_strings_of(self.env[child.id]))
        text = ast.unparse(node)
        if len(text) > 60:
            text = text[:57] + "..."
        return Unknown(line=getattr(node, "lineno", 0), text=text, strings=tuple(strings))

    def value(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Constant) and isinstance(
            node.value, (str, int, float, bool, type(None))
        ):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return tuple(self.value(item) for item in node.elts)
        if isinstance(node, ast.Dict):
            result: dict[str, Value] = {}
            for key_node, value_node in zip(node.keys, node.values, strict=True):
                key = self.value(key_node) if key_node is not None else None
                if not isinstance(key, str):
                    return self.unknown(node)
                result[key] = self.value(value_node)
            return result
        if isinstance(node, ast.Name):
            return self.env.get(node.id, self.unknown(node))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(left, tuple) and isinstance(right, tuple):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            return self.unknown(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self.formatted(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        return self.unknown(node)

    def transformed(self, node: ast.expr, *known: Value) -> Unknown:
        """A string the reader cannot compute, made from the ``known`` values and others.

        The others' strings are scanned as they are. Only a known piece holding a ``/``
        or ``:`` can become part of another package's label (``"%s/lib:l" % X``, or
        ``"//LIB:L".capitalize()``): then the string may be any label, and names every
        package. Without one (``"%s_test" % name``) it is read like any ``Unknown``.
        """
        unknown = self.unknown(node)
        pieces = [text for value in known for text in _strings_of(value)]
        if not any("/" in piece or ":" in piece for piece in pieces):
            return unknown
        return Unknown(unknown.line, unknown.text, (*unknown.strings, ANY_PACKAGE))

    def formatted(self, node: ast.BinOp) -> Value:
        """``template % values``: computed when both are known and the template holds
        only ``%s``, ``%d`` and ``%%``; a template that starts a label keeps its prefix."""
        template, values = self.value(node.left), self.value(node.right)
        if not isinstance(template, str):
            return self.unknown(node)
        arguments = values if isinstance(values, tuple) else (values,)
        if _SIMPLE_PERCENT.fullmatch(template) and all(_is_scalar(a) for a in arguments):
            try:
                return template % arguments
            except (TypeError, ValueError):
                pass
        if label_ref(template) is not None:
            return self.unknown(node)  # the literal part names the packages it can reach
        return self.transformed(node, template, values)

    def subscript(self, node: ast.Subscript) -> Value:
        """An item of a list (its strings are still scanned), or a slice of a string."""
        value = self.value(node.value)
        if not isinstance(value, str):
            return self.unknown(node)
        bounds = node.slice
        if isinstance(bounds, ast.Slice):
            parts = (bounds.lower, bounds.upper, bounds.step)
            known = [None if part is None else self.value(part) for part in parts]
            if all(part is None or type(part) is int for part in known) and known[2] != 0:
                lower, upper, step = cast("list[int | None]", known)
                return value[lower:upper:step]
        return self.transformed(node, value)

    def string_method(self, node: ast.Call, receiver: str) -> Value:
        """``"//LIB:L".lower()``: computed for a method Starlark shares with Python
        when every argument is known; any other method can make any label."""
        assert isinstance(node.func, ast.Attribute)
        name = node.func.attr
        method = _STRING_METHODS.get(name)
        args = [self.value(arg) for arg in node.args]
        kwargs = {str(k.arg): self.value(k.value) for k in node.keywords if k.arg is not None}
        # Only join takes a list: Python and Starlark write a list inside a string apart.
        known = (
            len(args) == 1 and not kwargs and _is_strings(args[0])
            if name == "join"
            else all(_is_scalar(value) for value in (*args, *kwargs.values()))
        )
        pieces = (receiver, *args, *kwargs.values())
        if method is None or len(kwargs) != len(node.keywords) or not known:
            return self.transformed(node, *pieces)
        try:
            result = method(receiver, *args, **kwargs)
        except (TypeError, ValueError, IndexError, KeyError):
            return self.transformed(node, *pieces)
        return result if isinstance(result, str) else self.transformed(node, *pieces)

    def string_receiver(self, func: ast.expr) -> str | None:
        """The string a method is called on (``"//a".lower()``), or None (``native.rule``)."""
        if not isinstance(func, ast.Attribute):
            return None
        # A name is looked up, not evaluated: ``native`` or a loaded struct is no string.
        owner = func.value
        found = self.env.get(owner.id) if isinstance(owner, ast.Name) else self.value(owner)
        return found if isinstance(found, str) else None

    def call(self, node: ast.Call) -> Value:
        receiver = self.string_receiver(node.func)
        if receiver is not None:
            return self.string_method(node, receiver)
        function = _function_name(node.func)
        if function is None or any(isinstance(arg, ast.Starred) for arg in node.args):
            return self.unknown(node)
        if any(keyword.arg is None for keyword in node.keywords):
            return self.unknown(node)
        args = tuple(self.value(arg) for arg in node.args)
        kwargs = tuple((str(k.arg), self.value(k.value)) for k in node.keywords)
        lines = tuple((str(k.arg), k.value.lineno) for k in node.keywords)
        if function in ("glob", "native.glob"):
            return self.glob(node, args, dict(kwargs))
        if function in ("select", "native.select"):
            # Every branch may be taken: a dependency in any of them is a dependency.
            return self.unknown(node)
        return Call(function, node.lineno, args, kwargs, lines)

    def glob(self, node: ast.Call, args: tuple[Value, ...], kwargs: dict[str, Value]) -> Value:
        include = args[0] if args else kwargs.get("include", ())
        exclude = args[1] if len(args) > 1 else kwargs.get("exclude", ())
        directories = kwargs.get("exclude_directories", 1)
        if not (_is_strings(include) and _is_strings(exclude)) or not isinstance(directories, int):
            return self.unknown(node)
        assert isinstance(include, tuple) and isinstance(exclude, tuple)
        glob = Glob(
            include=tuple(str(p) for p in include),
            exclude=tuple(str(p) for p in exclude),
            exclude_directories=bool(directories),
            line=node.lineno,
        )
        return (glob,)


def _is_strings(value: Value) -> bool:
    return isinstance(value, tuple) and all(isinstance(item, str) for item in value)


def _is_scalar(value: Value) -> bool:
    return isinstance(value, (str, int))  # bool is an int


def _function_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _function_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


# --- one parsed BUILD file ------------------------------------------------------------


@dataclass(frozen=True)
class Dep:
    """An absolute label in a BUILD file: a dependency on another package."""

    package: str  # workspace-relative package of the label (a prefix when ``prefix``)
    label: str  # as written
    line: int
    # The repository as written: "" is the main one; the graph resolves the main
    # repository's own name (``@<workspace name>//pkg``), which a BUILD file cannot know.
    repo: str = ""
    # A computed label's literal part (``"//libs/%s" % n``): any package under ``package``.
    prefix: bool = False


@dataclass(frozen=True)
class BuildFile:
    """What one BUILD file declares, independent of where it sits in the tree."""

    calls: tuple[Call, ...]
    # load("label", local = "exported") -> (label as written, {local: exported})
    loads: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    # Labels with '//' naming other packages of the same repository.
    deps: tuple[Dep, ...]
    # The oracle_gate(...) calls (one is allowed; matrix.py says so if there are more).
    gates: tuple[Call, ...] = ()
    invariant_names: frozenset[str] = field(default_factory=lambda: frozenset({"invariant"}))
    # Labels of a named repository (``@name//pkg``): the main one when it is its own name.
    named_repo_deps: tuple[Dep, ...] = ()


def _loads(call: ast.Call) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    if not call.args or not isinstance(call.args[0], ast.Constant):
        return None
    label = call.args[0].value
    if not isinstance(label, str):
        return None
    symbols: list[tuple[str, str]] = []
    for arg in call.args[1:]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            symbols.append((arg.value, arg.value))
    for keyword in call.keywords:
        if (
            keyword.arg
            and isinstance(keyword.value, ast.Constant)
            and isinstance(keyword.value.value, str)
        ):
            symbols.append((keyword.arg, keyword.value.value))
    return label, tuple(symbols)


def _top_level_values(module: ast.Module, evaluator: _Evaluator) -> Iterator[Value]:
    """Each top-level statement's value, binding variables as it goes."""
    for statement in module.body:
        if isinstance(statement, ast.Expr):
            if isinstance(statement.value, ast.Constant):
                continue  # a docstring
            yield evaluator.value(statement.value)
        elif isinstance(statement, ast.Assign):
            value = evaluator.value(statement.value)
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    evaluator.env[target.id] = value
                else:
                    yield evaluator.unknown(statement)
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            current = evaluator.env.get(statement.target.id, ())
            added = evaluator.value(statement.value)
            if isinstance(current, tuple) and isinstance(added, tuple):
                evaluator.env[statement.target.id] = current + added
            else:
                evaluator.env[statement.target.id] = evaluator.unknown(statement)
        else:
            # def/for/if are not allowed in BUILD files; Bazel rejects them, and we
            # still read every string inside so no dependency is lost.
            yield evaluator.unknown(statement)


def _dep_strings(value: Value) -> Iterator[tuple[str, int]]:
    """(string, line) pairs that may be labels of other packages, in ``value``."""
    if isinstance(value, Call):
        if value.function.rsplit(".", 1)[-1] in _NOT_RULES:
            return
        for item in value.args:
            yield from ((text, value.line) for text in _strings_of(item))
        for key, item in value.kwargs:
            if key not in _NOT_DEPS:
                line = value.line_of(key)
                yield from ((text, line) for text in _strings_of(item))
    elif isinstance(value, Unknown):
        yield from ((text, value.line) for text in value.strings)
    elif isinstance(value, tuple):
        for item in value:
            yield from _dep_strings(item)


def parse_build(text: bytes, path: str) -> BuildFile:
    """Parse one BUILD file's bytes (``path`` is used in messages only).

    Raises:
        ConfigError: the file is not UTF-8 or not valid Python syntax; the error
            names ``path`` and the 1-based line.
    """
    try:
        source = text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError("BUILD file is not valid UTF-8", path) from error
    try:
        # An escape Python does not know ("\\q") warns, on stderr from Python 3.12 on.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ast.parse(source, filename=path)
    except SyntaxError as error:
        raise ConfigError(
            f"BUILD file does not parse as Starlark: {error.msg}", path, error.lineno
        ) from None
    evaluator = _Evaluator()
    calls: list[Call] = []
    loads: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    deps: dict[str, Dep] = {}
    for statement in module.body:
        if (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and _function_name(statement.value.func) == "load"
        ):
            loaded = _loads(statement.value)
            if loaded is not None:
                loads.append(loaded)
    for value in _top_level_values(module, evaluator):
        if isinstance(value, Call):
            calls.append(value)
        for string, line in _dep_strings(value):
            if not string.startswith(("//", "@")) or string in deps:
                continue
            ref = label_ref(string)
            if ref is not None:
                deps[string] = Dep(ref.package, string, line, ref.repo, ref.prefix)
    gate_names = {GATE_FUNCTION}
    invariant_names = {INVARIANT_FUNCTION}
    for _, symbols in loads:
        for local, exported in symbols:
            if exported == GATE_FUNCTION:
                gate_names.add(local)
            if exported == INVARIANT_FUNCTION:
                invariant_names.add(local)
    gates = [call for call in calls if call.function in gate_names]
    return BuildFile(
        calls=tuple(calls),
        loads=tuple(loads),
        deps=tuple(deps[key] for key in sorted(deps) if not deps[key].repo),
        named_repo_deps=tuple(deps[key] for key in sorted(deps) if deps[key].repo),
        gates=tuple(gates),
        invariant_names=frozenset(invariant_names),
    )


def gates_from_native(found: object) -> BuildFile:
    """The gates the native core read (``rust/src/starlark/gate.rs``) as ``parse_build`` gives.

    ``found`` is ``(calls, invariant names)``. In it a Starlark list is a Python
    list, a call ``("c", function, line, args, [(name, value, line)])`` and a
    ``glob()`` ``("g", include, exclude, exclude_directories, line)``.
    Only ``gates`` and ``invariant_names`` are set: the file's rules were evaluated.
    """
    calls, invariant_names = cast("tuple[list[tuple[object, ...]], list[str]]", found)
    gates = tuple(_native_call(call) for call in calls)
    return BuildFile(
        calls=gates, loads=(), deps=(), gates=gates, invariant_names=frozenset(invariant_names)
    )


def _native_call(found: tuple[object, ...]) -> Call:
    _, function, line, args, kwargs = found
    named = cast("list[tuple[str, object, int]]", kwargs)
    return Call(
        function=str(function),
        line=cast(int, line),
        args=tuple(_native_value(arg) for arg in cast("list[object]", args)),
        kwargs=tuple((name, _native_value(value)) for name, value, _ in named),
        kwarg_lines=tuple((name, at) for name, _, at in named),
    )


def _native_value(found: object) -> Value:
    if isinstance(found, list):
        return tuple(_native_value(item) for item in found)
    if isinstance(found, dict):
        return {key: _native_value(item) for key, item in found.items()}
    if isinstance(found, tuple):
        if found[0] == "c":
            return _native_call(found)
        _, include, exclude, directories, line = found
        return Glob(tuple(include), tuple(exclude), bool(directories), line)
    return cast(Value, found)


# --- the cache ---------------------------------------------------------------------

_CACHE: dict[str, BuildFile] = {}
_CACHE_LIMIT = 500_000
_STATS = {"hits": 0, "misses": 0}


def blob_id(content: bytes) -> str:
    """The git blob id of ``content``: the same key for a commit and a working tree."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


def _gates_only(text: bytes, path: str, rule_lines: Sequence[tuple[int, int]]) -> BuildFile:
    """``text`` parsed without ``rule_lines``, for its gates; the whole file if that fails.

    The lines are blanked, not removed, so every line number stays. They come from
    the Starlark parser, whose only line break is ``\\n``: a file with another
    one (``\\r``, which Python also breaks at) is parsed whole.
    """
    if not rule_lines or b"\r" in text:
        return parse_build(text, path)
    lines = text.split(b"\n")
    for first, last in rule_lines:
        lines[first - 1 : last] = [b""] * len(lines[first - 1 : last])
    try:
        return parse_build(b"\n".join(lines), path)
    except ConfigError:
        return parse_build(text, path)  # the parsers split statements differently here


def parse_build_cached(
    items: Sequence[tuple[str, str | None]],
    read: Callable[[list[str]], Mapping[str, bytes]],
    linked: set[str] | None = None,
    rule_lines: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> dict[str, BuildFile]:
    """Parse several BUILD files, reusing any already parsed with the same blob id.

    Args:
        items: (path, blob id or None when unknown) pairs.
        read: reads the bytes of the paths it is given (one batch for all misses);
            what it returns holds them, and maybe more.
        linked: collects the paths whose content is not the blob they are listed
            with (symlinks, read through the link).
        rule_lines: for a path read only for its gate (its rules were evaluated
            as Starlark), the line ranges holding only other rule calls
            (``starlark.Evaluated.rule_lines``): they are skipped, so that
            file's ``calls`` and ``deps`` are incomplete and its ``gates`` whole.

    Raises:
        ConfigError: a BUILD file does not parse (see ``parse_build``).
    """
    rule_lines = rule_lines or {}
    parsed: dict[str, BuildFile] = {}
    missing: list[str] = []
    keys = {path: key and _cache_key(key, path in rule_lines) for path, key in items}
    for path, key in keys.items():
        hit = _CACHE.get(key) if key else None
        if hit is not None:
            parsed[path] = hit
        else:
            missing.append(path)
    _STATS["hits"] += len(parsed)
    _STATS["misses"] += len(missing)
    if missing:
        contents = read(missing)
        if len(_CACHE) + len(missing) > _CACHE_LIMIT:
            _CACHE.clear()
        for path in missing:
            skipped = rule_lines.get(path)
            build = (
                parse_build(contents[path], path)
                if skipped is None
                else _gates_only(contents[path], path, skipped)
            )
            parsed[path] = build
            # Stored under the content's own id: a symlinked BUILD file is listed
            # with the link's id, never matches, and so is always read afresh.
            content_id = _cache_key(blob_id(contents[path]), skipped is not None)
            _CACHE[content_id] = build
            if linked is not None and keys.get(path) not in (None, content_id):
                linked.add(path)
    return parsed


def _cache_key(blob: str, gates_only: bool) -> str:
    """A file read for its gates only is cached apart from the same file read whole."""
    return f"{blob}:gates" if gates_only else blob


def clear_cache() -> None:
    """Forget every parsed BUILD file (benchmarks measure a cold start with it)."""
    _CACHE.clear()
    _STATS.update(hits=0, misses=0)


def cache_info() -> dict[str, int]:
    """Hits, misses and entries of the parse cache since the last ``clear_cache``."""
    return {**_STATS, "entries": len(_CACHE)}
