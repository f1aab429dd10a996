"""Doctest examples: where the parent's pytest configuration collects them
(``--doctest-modules``), the ``>>>`` examples in production docstrings are tests, and a
patch that removes or changes one moves the oracle as editing a test would. The same
holds for the text files pytest runs as doctests: those its ``--doctest-glob`` patterns
name, ``test*.txt`` without one."""

from __future__ import annotations

import ast
import doctest
import fnmatch
import functools
import posixpath
import re
from collections import Counter

from oracle_gate.classify.harness import PYTEST_CONFIGS
from oracle_gate.errors import SurfaceError
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.model import ChangeKind, Finding, Package
from oracle_gate.pysource.parse import parse_python
from oracle_gate.repo.trees import GitTree

__all__ = ["collects_doctests", "judge", "judge_text"]

_OPTION = b"--doctest-modules"
_GLOB_OPTION = re.compile(rb"""--doctest-glob(?:=|\s+)(["']?)([^\s"',\]]+)\1""")
_DEFAULT_GLOBS = ("test*.txt",)  # pytest's, when no --doctest-glob is given
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
# (source, expected output) of one example; a docstring doctest cannot read is one whole.
_Example = tuple[str, str]


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    """An oracle move when the production file loses examples the package's other changed
    files do not gain (moving a function between modules moves its examples too)."""
    package = laned.package
    if package is None or not collects_doctests(facts.parent, posixpath.dirname(laned.path)):
        return []
    before, after = facts.read_pair(laned.change)
    findings: list[Finding] = []
    lost = _examples(before) - _head_examples(facts.head, _changed_modules(facts, package))
    if lost:
        shown = summarize([source.strip().splitlines()[0] for source, _ in sorted(lost)])
        run = "pytest runs them: --doctest-modules"
        reason = f"doctest examples removed or changed ({run}): {shown}"
        findings.append(oracle_move(laned, facts, reason))
    if _docstring_stores(after) > _docstring_stores(before):
        # ``f.__doc__ = None``: the source keeps its examples, pytest finds none to run
        reason = "a docstring replaced at run time, where pytest reads the examples it runs"
        findings.append(oracle_move(laned, facts, reason))
    hidden = _wrapped(after) - _wrapped(before)
    if hidden:
        # pytest reads the examples from the object the name holds, not from the source
        shown = summarize(sorted(hidden))
        reason = f"documented examples wrapped or rebound where pytest looks for them: {shown}"
        findings.append(oracle_move(laned, facts, reason))
    return findings


def judge_text(laned: LanedPath, facts: Facts) -> list[Finding]:
    """An oracle move when a text file pytest runs as a doctest loses examples (edited,
    dropped, or the file deleted or renamed out of the patterns)."""
    old_path = laned.change.old_path or laned.path
    globs = doctest_globs(facts.parent, posixpath.dirname(old_path))
    if not _matches(old_path, globs):
        return []
    before, after = facts.read_pair(laned.change)
    kept = _text_examples(after) if _matches(laned.path, globs) else Counter()
    lost = _text_examples(before) - kept
    if not lost:
        return []
    shown = summarize([source.strip().splitlines()[0] for source, _ in sorted(lost)])
    reason = f"doctest examples removed or changed (pytest runs {old_path} as a doctest): {shown}"
    return [oracle_move(laned, facts, reason)]


@functools.lru_cache(maxsize=64)
def doctest_globs(tree: GitTree, directory: str) -> tuple[str, ...]:
    """The ``--doctest-glob`` patterns a pytest configuration at ``directory`` or above
    gives (all of them, erring toward the oracle), else pytest's default."""
    found: list[str] = []
    while True:
        for name in PYTEST_CONFIGS:
            text = tree.read_optional(posixpath.join(directory, name) if directory else name)
            if text is not None:
                found += [
                    m.group(2).decode("utf-8", "replace") for m in _GLOB_OPTION.finditer(text)
                ]
        if not directory:
            return tuple(found) or _DEFAULT_GLOBS
        directory = posixpath.dirname(directory)


def _matches(path: str, globs: tuple[str, ...]) -> bool:
    """pytest's match: a pattern without ``/`` against the name, else the path's end."""
    name = posixpath.basename(path)
    return any(
        fnmatch.fnmatch(path, f"*{glob}") if "/" in glob else fnmatch.fnmatch(name, glob)
        for glob in globs
    )


def _text_examples(text: bytes | None) -> Counter[_Example]:
    return Counter() if text is None else _examples_in(text.decode("utf-8", "replace"))


def _examples_in(text: str) -> Counter[_Example]:
    """(source, expected output) of each example in ``text``; a text doctest cannot read
    is one whole."""
    try:
        examples = doctest.DocTestParser().get_examples(text)
    except ValueError:
        return Counter({(text, ""): 1})
    return Counter((e.source, e.want) for e in examples)


@functools.lru_cache(maxsize=64)
def collects_doctests(tree: GitTree, directory: str) -> bool:
    """Whether a pytest configuration at ``directory`` or above turns on doctests of
    modules. Read as text: a mention anywhere counts, erring toward the oracle."""
    while True:
        for name in PYTEST_CONFIGS:
            text = tree.read_optional(posixpath.join(directory, name) if directory else name)
            if text is not None and _OPTION in text:
                return True
        if not directory:
            return False
        directory = posixpath.dirname(directory)


def _changed_modules(facts: Facts, package: Package) -> tuple[str, ...]:
    prefix = f"{package.path}/" if package.path else ""
    return tuple(
        sorted(
            change.path
            for change in facts.diff.changes
            if change.kind is not ChangeKind.DELETED
            and change.path.startswith(prefix)
            and change.path.endswith(".py")
        )
    )


@functools.lru_cache(maxsize=8)
def _head_examples(tree: GitTree, paths: tuple[str, ...]) -> Counter[_Example]:
    found: Counter[_Example] = Counter()
    for path in paths:
        found += _examples(tree.read_optional(path))
    return found


def _docstring_stores(source: bytes | None) -> int:
    """How often the module assigns or deletes a ``__doc__`` (its own or an object's),
    directly or through ``setattr``/``delattr``."""
    return sum(1 for node in ast.walk(_parsed(source)) if _stores_docstring(node))


def _stores_docstring(node: ast.AST) -> bool:
    if isinstance(node, (ast.Attribute, ast.Name)) and not isinstance(node.ctx, ast.Load):
        return (node.attr if isinstance(node, ast.Attribute) else node.id) == "__doc__"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and any(isinstance(a, ast.Constant) and a.value == "__doc__" for a in node.args[1:2])
    )


# Decorators that keep the docstring where doctest finds it (the object itself, or a
# wrapper ``inspect.unwrap`` sees through), by the name their module gives them.
_KEEPS_DOCSTRING = frozenset(
    {
        "abc.abstractmethod",
        "contextlib.contextmanager",
        "dataclasses.dataclass",
        "functools.cache",
        "functools.cached_property",
        "functools.lru_cache",
        "functools.singledispatch",
        "functools.total_ordering",
        "typing.final",
        "typing.overload",
        "typing.override",
    }
)
_BUILTIN_KEEPERS = frozenset({"classmethod", "property", "staticmethod"})


def _wrapped(source: bytes | None) -> Counter[str]:
    """The documented functions and classes (those with examples) whose name no longer
    holds the object its docstring is on: each decorator not known to keep the
    docstring (``name@decorator``), and each other binding of the name beside them
    (``name=``: ``merge = _quiet(merge)``)."""
    module = _parsed(source)
    imported = _imported_names(module)
    shadowed = {name for statement in module.body for name in _binds(statement)}
    found: Counter[str] = Counter()
    documented = _has_examples(module)
    for body in _bodies(module):
        bound = Counter(name for statement in body for name in _binds(statement))
        for node in body:
            if not isinstance(node, _DOCUMENTED[1:]) or not _has_examples(node):
                continue
            documented = True
            for decorator in node.decorator_list:
                if not _keeps_docstring(decorator, imported, shadowed | set(bound)):
                    found[f"{node.name}@{ast.unparse(decorator)}"] += 1
            found.update([f"{node.name}="] * (bound[node.name] - 1))
    if documented:
        # ``globals()["merge"] = _quiet(merge)``: any name, not only a documented one
        found.update(ast.unparse(node)[:60] for node in ast.walk(module) if _stores_by_name(node))
    return found


# Calls that rebind names of a namespace given as a dict: ``globals().update(...)``.
_DICT_STORES = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__"})


def _stores_by_name(node: ast.AST) -> bool:
    """A store into the module's namespace by a computed name: through ``globals()``,
    ``vars()``, ``locals()`` or a ``__dict__``, or by ``setattr``/``delattr``."""
    if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
        return _is_namespace(node.value)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in ("setattr", "delattr")
    return (
        isinstance(func, ast.Attribute) and func.attr in _DICT_STORES and _is_namespace(func.value)
    )


def _is_namespace(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("globals", "vars", "locals")
    )


def _has_examples(node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return ">>>" in (ast.get_docstring(node) or "")


def _bodies(module: ast.Module) -> list[list[ast.stmt]]:
    """The module's body and every class body in it: where a docstring's owner is bound."""
    classes = [node.body for node in ast.walk(module) if isinstance(node, ast.ClassDef)]
    return [module.body, *classes]


def _binds(statement: ast.stmt) -> list[str]:
    """The names a statement of a body binds or deletes. Wider than
    ``surface.scope_bindings``: every store or ``del`` anywhere in the statement counts
    (``del merge`` or a walrus hides a documented object too)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in statement.names]
    return [
        node.id
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
    ]


def _imported_names(module: ast.Module) -> dict[str, str]:
    """Module-level names bound by an import alone: ``functools`` for ``import
    functools``, ``functools.cache`` for ``from functools import cache``."""
    names: dict[str, str] = {}
    for statement in module.body:
        if isinstance(statement, ast.Import):
            names.update((a.name, a.name) for a in statement.names if a.asname is None)
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            names.update(
                (a.name, f"{statement.module}.{a.name}") for a in statement.names if not a.asname
            )
    bound = Counter(name for statement in module.body for name in _binds(statement))
    return {name: full for name, full in names.items() if bound[name] == 1}


def _keeps_docstring(decorator: ast.expr, imported: dict[str, str], bound: set[str]) -> bool:
    """Whether a decorator is one of those known to keep the docstring, by a name the
    module does not rebind (``property``, ``functools.cache``, ``cache`` imported)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name) and target.id in _BUILTIN_KEEPERS:
        return target.id not in bound
    parts = ast.unparse(target).split(".")
    root = imported.get(parts[0])
    return root is not None and ".".join([root, *parts[1:]]) in _KEEPS_DOCSTRING


def _parsed(source: bytes | None) -> ast.Module:
    try:
        return parse_python(source or b"", "<source>")
    except SurfaceError:
        # no doctest runs from a module Python refuses; the production lane's other
        # judges see it
        return ast.Module(body=[], type_ignores=[])


def _examples(source: bytes | None) -> Counter[_Example]:
    """Every example of every docstring of the module (its own, its classes' and
    functions', nested ones too)."""
    found: Counter[_Example] = Counter()
    tree = _parsed(source)
    for node in ast.walk(tree):
        docstring = ast.get_docstring(node) if isinstance(node, _DOCUMENTED) else None
        if not docstring or ">>>" not in docstring:
            continue
        found += _examples_in(docstring)
    return found
