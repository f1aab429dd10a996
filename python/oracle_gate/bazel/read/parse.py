"""``parse_build``: a BUILD file's bytes to a ``BuildFile``, through Python's parser
(Starlark's own keywords renamed) and the symbolic evaluator."""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections.abc import Iterator

from oracle_gate.bazel import limits
from oracle_gate.bazel.labels import (
    PACKAGE_NAME,
    REPO_NAME,
    label_ref,
    visible_to_a_target,
)
from oracle_gate.bazel.read.evaluator import Evaluator, check_depth, function_name
from oracle_gate.bazel.read.tables import ANY_PACKAGE, GATE_FUNCTION, INVARIANT_FUNCTION, VISIBILITY
from oracle_gate.bazel.read.values import (
    BuildFile,
    Call,
    Dep,
    Unknown,
    Value,
    dependency_arguments,
    known_part,
    starts_of,
    strings_of,
)
from oracle_gate.errors import ConfigError

__all__ = ["parse_build", "syntax_tree"]


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


def _top_level_values(module: ast.Module, evaluator: Evaluator, path: str) -> Iterator[Value]:
    """Each top-level statement's value, binding variables as it goes.

    Raises:
        ConfigError: a statement builds more than a file may (``limits.py``).
    """
    for statement in module.body:
        try:
            try:
                values = list(evaluator.statement(statement))
            except (ArithmeticError, RecursionError, MemoryError, ValueError, TypeError):
                values = [evaluator.syntax(statement)]  # too deep or big to follow: any label
            for value in values:
                check_depth(value)
        except limits.Stop as stop:
            raise limits.stopped(stop.reason(path), path, stop.line) from None
        yield from values


def _pieces(value: Value, line: int) -> Iterator[tuple[str, int, bool]]:
    for text in strings_of(value):
        yield text, line, False
    for start in starts_of(value):
        yield start, line, True


def _dep_strings(
    value: Value, loaded: frozenset[str] = frozenset()
) -> Iterator[tuple[str, int, bool]]:
    """(string, line, is a start) triples that may be labels of other packages, in
    ``value``: the whole strings, and the starts of those the reader could not finish.
    A call of a ``loaded`` name may be a macro, which can pass any argument on as a
    dependency (``tags = ["//lib:l"]`` into ``srcs``): all of its arguments count."""
    if isinstance(value, Call):
        macro = value.function in loaded
        for key, item in dependency_arguments(value, macro):
            pieces = _pieces(item, value.line if key is None else value.line_of(key))
            if key in VISIBILITY and not macro:
                pieces = (p for p in pieces if p[2] or visible_to_a_target(p[0]))
            yield from pieces
    elif isinstance(value, Unknown):
        yield from _pieces(value, value.line)
    elif isinstance(value, tuple):
        for item in value:
            yield from _dep_strings(item, loaded)


def _start_dep(start: str, line: int) -> Dep | None:
    """The packages a string starting with ``start`` may name: those under the known
    part's package prefix (``"//libs/"``), one package (``"//lib:"``), every package of
    the workspace (``""``, ``"/"``, ``"@"``: the label's package is not known at all),
    or None (it can be no absolute label)."""
    known = known_part(start)
    if known == "/":
        return Dep("", ANY_PACKAGE, line, "", prefix=True)
    if known == "" or (known.startswith("@") and "//" not in known):
        # Perhaps another repository's label: every package of every repository of the
        # tree (``@//`` is the main one, whose packages hold the others' directories).
        return Dep("", f"@{ANY_PACKAGE}", line, "", prefix=True)
    if not known.startswith(("//", "@")):
        return None
    repo, _, rest = known.lstrip("@").partition("//") if known[0] == "@" else ("", "", known[2:])
    package, colon, _ = rest.partition(":")
    if REPO_NAME.fullmatch(repo) is None or PACKAGE_NAME.fullmatch(package) is None:
        return None
    label = start if start != known or known.endswith((":", "/")) else f"{start}..."
    return Dep(package, label, line, repo, prefix=not colon)


# Python's keywords that Bazel 4.2.3's Starlark takes as plain names (``await = ...``).
_PYTHON_ONLY_KEYWORDS = frozenset({"async", "await"})


def _parse(source: str, path: str) -> ast.Module:
    # An escape Python does not know ("\\q") warns, on stderr from Python 3.12 on.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, filename=path)


def _python_keywords_renamed(source: str) -> str:
    """``source`` with each name in ``_PYTHON_ONLY_KEYWORDS`` renamed (``await_``), as a
    name, not inside a string; lines stay where they were."""
    try:
        ends = [
            token.end
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.NAME and token.string in _PYTHON_ONLY_KEYWORDS
        ]
    except (tokenize.TokenError, SyntaxError):
        return source
    lines = source.splitlines(keepends=True)
    for row, column in sorted(ends, reverse=True):
        lines[row - 1] = f"{lines[row - 1][:column]}_{lines[row - 1][column:]}"
    return "".join(lines)


def syntax_tree(text: bytes, path: str) -> ast.Module:
    """The syntax tree of a BUILD file's bytes.

    Bazel reads a BUILD file as bytes, so one that is not UTF-8 (a Latin-1 comment)
    loads: it is parsed as Latin-1 here, and each string that is not ASCII is read
    back as the bytes it was, decoded as git paths are (UTF-8, ``surrogateescape``).

    Raises:
        ConfigError: not valid syntax, or nested deeper than ``limits.nesting_problem``
            allows (or Python's parser follows).
    """
    try:
        source, latin1 = text.decode("utf-8"), False
    except UnicodeDecodeError:
        source, latin1 = text.decode("latin-1"), True
    deep = limits.nesting_problem(source)
    if deep is not None:
        raise ConfigError(deep.message("BUILD file"), path, deep.line)
    try:
        try:
            module = _parse(source, path)
        except SyntaxError as error:
            renamed = _python_keywords_renamed(source)
            if renamed == source:
                raise
            try:
                module = _parse(renamed, path)
            except SyntaxError:
                raise error from None
    except SyntaxError as error:
        raise ConfigError(
            f"BUILD file does not parse as Starlark: {error.msg}", path, error.lineno
        ) from None
    except (RecursionError, MemoryError):
        raise ConfigError(
            "BUILD file is nested too deeply for the pure-Python reader "
            "(the native core reads it: ORACLE_GATE_IMPL=native)",
            path,
        ) from None
    if latin1:
        for node in ast.walk(module):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                raw = node.value.encode("latin-1")
                node.value = raw.decode("utf-8", "surrogateescape")
    return module


def parse_build(text: bytes, path: str) -> BuildFile:
    """Parse one BUILD file's bytes (``path`` is used in messages only).

    Raises:
        ConfigError: the file is not valid Python syntax or nested too deeply
            (``syntax_tree``), or it builds more than a file may (``limits.py``); the
            error names ``path`` and the 1-based line.
    """
    module = syntax_tree(text, path)
    calls: list[Call] = []
    loads: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    deps: dict[str, Dep] = {}
    for statement in module.body:
        if (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and function_name(statement.value.func) == "load"
        ):
            loaded = _loads(statement.value)
            if loaded is not None:
                loads.append(loaded)
    bound = frozenset(local for _, symbols in loads for local, _ in symbols)
    evaluator = Evaluator(bound)
    for value in _top_level_values(module, evaluator, path):
        if isinstance(value, Call):
            calls.append(value)
        for string, line, start in _dep_strings(value, bound):
            if start:
                dep = _start_dep(string, line)
                if dep is not None and dep.label not in deps:
                    deps[dep.label] = dep
                continue
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
