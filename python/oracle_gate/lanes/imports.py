"""What a test module's new imports and import-time calls run of the repository's code.

A test module that imports a repository module runs that module, and the modules it
imports, before any test: one that patches shared state when imported (``json.loads
= ...``, ``os.environ[...] = ...``, a patcher started) changes how every test of the
session runs, under a fresh name. So does a call made at import (``_ = install()``)
of a repository function that patches when called. ``classify/python.py`` says what
one module or function does (syntactically); this module follows the imports and
calls through the head tree: import roots as pytest and the gate's children have
them (the directories above the test module, nearest first, then every package
directory), repository modules by path, functions and classes by the names a
module binds. What the parent's tests and conftests of the package already import
(and what those modules import) runs already and counts for nothing.

Names the reader cannot follow (third-party code, a callable built at run time)
are trusted: their own lanes judge repository code a patch changes, and a
dependency change is harness.
"""

from __future__ import annotations

import ast
import functools
import posixpath
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from oracle_gate.classify.python import (
    BUILDERS,
    Function,
    call_effects,
    called_in,
    import_time_calls,
    imports_in,
    module_effects,
)
from oracle_gate.errors import SurfaceError
from oracle_gate.globs import matches_any
from oracle_gate.pysource.parse import parse_python

__all__ = [
    "Reach",
    "SourceTree",
    "added_effects",
    "already_imported",
    "reach_of",
    "suite_modules",
]

_NAMED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Modules, functions and classes followed for one question: enough for any real chain
# of helpers, and a bound on what a patch can make the reader do.
_MAX_VISITS = 400
# What a class call runs (``BUILDERS`` build ``self``), what a subclass runs in its
# base, what a metaclass runs.
_RUNS = {
    "call": ("__new__", "__init__", "__post_init__"),
    "subclass": ("__init_subclass__",),
    "metaclass": ("__prepare__", "__new__", "__init__"),
}
CONFTEST = "conftest.py"


class SourceTree(Protocol):
    """The tree the imports resolve in (``repo.trees.GitTree`` is one)."""

    def files(self) -> tuple[str, ...]: ...

    def read_optional(self, path: str) -> bytes | None: ...


@dataclass(frozen=True)
class _Module:
    path: str


@dataclass(frozen=True)
class _Def:
    path: str
    node: Function | ast.ClassDef
    instance: bool = False  # an object of the class ``node``, not the class


_Object = _Module | _Def


class Reach:
    """The repository's Python modules in one tree, parsed on demand, and what their
    imports and calls reach."""

    def __init__(self, tree: SourceTree, package_roots: Sequence[str]) -> None:
        self._tree = tree
        self._python = frozenset(p for p in tree.files() if p.endswith(".py"))
        self._directories = frozenset(
            parent for path in self._python for parent in _ancestors(posixpath.dirname(path))
        )
        self._package_roots = tuple(package_roots)
        self._parsed: dict[str, ast.Module | None] = {}
        self._scopes: dict[str, dict[str, list[ast.stmt]]] = {}

    # -- modules --------------------------------------------------------------

    def parse(self, path: str) -> ast.Module | None:
        if path not in self._parsed:
            data = self._tree.read_optional(path)
            try:
                self._parsed[path] = None if data is None else parse_python(data, path)
            except SurfaceError:
                self._parsed[path] = None  # Python cannot import it either, so it runs nothing
        return self._parsed[path]

    def imported(self, importer: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        """The repository modules an import statement of ``importer`` runs, in order."""
        if isinstance(node, ast.Import):
            return [p for alias in node.names for p in self._find(alias.name.split("."), importer)]
        source = self._source_of(importer, node)
        if source is None:
            return []
        directory, parts = source
        found = self._walk(directory, parts) if parts else self._init_of(directory)
        for alias in node.names:  # ``from pkg import mod`` runs pkg/mod.py too
            found += [p for p in self._walk(directory, [*parts, alias.name]) if p not in found]
        return found

    def _source_of(self, importer: str, node: ast.ImportFrom) -> tuple[str, list[str]] | None:
        """Where ``from X import ...`` finds X: (directory, dotted parts below it)."""
        parts = node.module.split(".") if node.module else []
        if node.level:
            directory = posixpath.dirname(importer)
            for _ in range(node.level - 1):
                directory = posixpath.dirname(directory)
            return directory, parts
        root = self._root_of(parts[0], importer) if parts else None
        return None if root is None else (root, parts)

    def _init_of(self, directory: str) -> list[str]:
        init = _join(directory, "__init__.py")
        return [init] if init in self._python else []

    def _find(self, parts: list[str], importer: str) -> list[str]:
        root = self._root_of(parts[0], importer)
        return [] if root is None else self._walk(root, parts)

    def _root_of(self, top: str, importer: str) -> str | None:
        """The first import root holding the top-level module ``top``, as ``sys.path``
        finds it."""
        ancestors = list(_ancestors(posixpath.dirname(importer)))
        for root in [*ancestors, *(r for r in self._package_roots if r not in ancestors)]:
            joined = _join(root, top)
            if f"{joined}.py" in self._python or joined in self._directories:
                return root
        return None

    def _walk(self, root: str, parts: list[str]) -> list[str]:
        """The files ``import a.b.c`` runs from ``root``: each package's ``__init__.py``,
        then the module."""
        found: list[str] = []
        directory = root
        for part in parts:
            package = _join(directory, part)
            if f"{package}/__init__.py" in self._python:
                found.append(f"{package}/__init__.py")
            elif f"{package}.py" in self._python:
                found.append(f"{package}.py")
                break
            elif package not in self._directories:
                break
            directory = package  # a regular package, or a namespace package
        return found

    def scope(self, path: str) -> dict[str, list[ast.stmt]]:
        """Module-level name -> the top-level statements that bind it."""
        if path not in self._scopes:
            scope: dict[str, list[ast.stmt]] = {}
            tree = self.parse(path)
            for node in _top_level(tree.body if tree is not None else []):
                for name in _binds(node):
                    scope.setdefault(name, []).append(node)
            self._scopes[path] = scope
        return self._scopes[path]

    # -- names ----------------------------------------------------------------

    def resolve(self, path: str, node: ast.expr) -> list[_Object]:
        """What ``node`` (a callee, base or decorator in module ``path``) may be among the
        repository's modules, functions, classes and instances; empty when not followed."""
        return self._resolve(path, node, self.scope(path), depth=0)

    def _resolve(
        self, path: str, node: ast.expr, scope: dict[str, list[ast.stmt]], depth: int
    ) -> list[_Object]:
        if depth > 8:
            return []
        if isinstance(node, ast.Lambda):
            return [_Def(path, node)]
        if isinstance(node, ast.Name):
            return self._named(path, node.id, scope, depth)
        if isinstance(node, ast.Attribute):
            owners = self._resolve(path, node.value, scope, depth + 1)
            return [found for owner in owners for found in self._member(owner, node.attr, depth)]
        if isinstance(node, ast.Call):  # C(...).method: an instance of a repository class
            classes = self._resolve(path, node.func, scope, depth + 1)
            return [
                _Def(c.path, c.node, instance=True)
                for c in classes
                if isinstance(c, _Def) and isinstance(c.node, ast.ClassDef) and not c.instance
            ]
        return []

    def _named(
        self, path: str, name: str, scope: dict[str, list[ast.stmt]], depth: int
    ) -> list[_Object]:
        found: list[_Object] = []
        for binder in scope.get(name, []):
            if isinstance(binder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.append(_Def(path, binder))
            elif isinstance(binder, ast.Import | ast.ImportFrom):
                found += self._import_binding(path, binder, name, depth)
            elif isinstance(binder, ast.Assign | ast.AnnAssign) and binder.value is not None:
                # ``n = other`` or ``n = Class(...)``
                found += self._resolve(path, binder.value, self.scope(path), depth + 1)
        return found

    def _import_binding(
        self, path: str, node: ast.Import | ast.ImportFrom, name: str, depth: int
    ) -> list[_Object]:
        for alias in node.names:
            if isinstance(node, ast.Import):
                dotted = alias.name if alias.asname else alias.name.split(".")[0]
                if (alias.asname or dotted) != name:
                    continue
                modules = self._find(dotted.split("."), path)
                return [_Module(modules[-1])] if modules else []
            if (alias.asname or alias.name) != name:
                continue
            source = self._source_of(path, node)
            if source is None:
                return []
            directory, parts = source
            modules = self._walk(directory, parts) if parts else self._init_of(directory)
            return self._member(_Module(modules[-1]), alias.name, depth + 1) if modules else []
        return []

    def _member(self, owner: _Object, name: str, depth: int) -> list[_Object]:
        """``owner.name``: a module's binding or submodule, a class's or instance's
        method, searched in repository bases too."""
        if isinstance(owner, _Module):
            scope = self.scope(owner.path)
            if name in scope:
                return self._named(owner.path, name, scope, depth + 1)
            if owner.path.endswith("/__init__.py") or owner.path == "__init__.py":
                submodule = self._walk(posixpath.dirname(owner.path), [name])
                return [_Module(submodule[-1])] if submodule else []
            return []
        if not isinstance(owner.node, ast.ClassDef):
            return []
        return list(self.methods(owner.path, owner.node, (name,), depth))

    def methods(
        self, path: str, node: ast.ClassDef, names: Iterable[str], depth: int = 0
    ) -> Iterator[_Def]:
        """The definitions of ``names`` in a repository class and its repository bases."""
        wanted = tuple(names)
        for member in node.body:
            if isinstance(member, _NAMED) and member.name in wanted:
                yield _Def(path, member)
        if depth > 8:
            return
        for base in node.bases:
            for found in self._resolve(path, base, self.scope(path), depth + 1):
                if isinstance(found, _Def) and isinstance(found.node, ast.ClassDef):
                    yield from self.methods(found.path, found.node, wanted, depth + 1)


@dataclass
class _Query:
    """One walk over what a test module's additions reach, skipping what already ran."""

    reach: Reach
    known: frozenset[str]
    seen: set[tuple[str, int, int]]
    visits: int = 0

    def through_import(self, importer: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        found: list[str] = []
        for path in self.reach.imported(importer, node):
            found += self.module(path)
        return found

    def module(self, path: str) -> list[str]:
        """What importing ``path`` changes, itself and through what it imports and calls."""
        if path in self.known or not self._visit(path, None):
            return []
        tree = self.reach.parse(path)
        if tree is None:
            return []
        found = [f"{path}:{line}: {what}" for line, what in module_effects(tree)]
        for node in imports_in([tree], at_import=True):
            found += self.through_import(path, node)
        for _, callee, how in import_time_calls(tree):
            found += self.callee(path, callee, how)
        return found

    def callee(self, path: str, callee: ast.expr, how: str) -> list[str]:
        found: list[str] = []
        for target in self.reach.resolve(path, callee):
            if not isinstance(target, _Def) or not self._visit(target.path, target.node):
                continue
            if isinstance(target.node, ast.ClassDef):
                runs = _RUNS[how] if not target.instance else ("__call__",)
                for method in self.reach.methods(target.path, target.node, runs):
                    found += self.function(
                        method, method=getattr(method.node, "name", "") in BUILDERS
                    )
            elif how == "call":
                found += self.function(target, method=False)
        return found

    def function(self, target: _Def, method: bool) -> list[str]:
        node = target.node
        if isinstance(node, ast.ClassDef):
            return []
        found = [f"{target.path}:{line}: {what}" for line, what in call_effects(node, method)]
        for statement in imports_in([node], at_import=False):
            found += self.through_import(target.path, statement)
        for _, callee in called_in(node):
            found += self.callee(target.path, callee, "call")
        return found

    def _visit(self, path: str, node: ast.AST | None) -> bool:
        """Whether to look at this module (``node`` None) or definition: not seen yet,
        within the budget."""
        where = (path, getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if where in self.seen or self.visits >= _MAX_VISITS:
            return False
        self.seen.add(where)
        self.visits += 1
        return True


def added_effects(
    reach: Reach,
    path: str,
    tree: ast.Module,
    nodes: Sequence[ast.AST],
    known: frozenset[str],
    calls: bool,
) -> list[str]:
    """How the additions ``nodes`` of the test module ``path`` (its added statements, or
    the whole module) change shared state through the repository's code, one reason each.

    Every import in them counts (one in a test body runs before the tests after it);
    with ``calls``, so do the calls the module makes at import time (an existing
    file's added statements that call anything are already oracle moves).
    ``known``: the modules that already run (``already_imported``).
    """
    query = _Query(reach, known, set())
    reasons: list[str] = []
    for statement in imports_in(nodes, at_import=False):
        effects = query.through_import(path, statement)
        if effects:
            reasons.append(f"{_spelled(statement)} runs code that {_first(effects)}")
    if calls:
        for line, callee, how in import_time_calls(tree):
            effects = query.callee(path, callee, how)
            if effects:
                reasons.append(
                    f"line {line} calls {ast.unparse(callee)[:40]}, which {_first(effects)}"
                )
    return sorted(set(reasons))


def already_imported(reach: Reach, sources: Mapping[str, bytes]) -> frozenset[str]:
    """The repository modules that already run when the parent's test modules and
    conftests (``sources``, path -> the parent's bytes) are imported, and what those
    modules import in the tree ``reach`` reads."""
    seen: set[str] = set()
    stack: list[tuple[str, ast.Module | None]] = [(p, _parsed(p, s)) for p, s in sources.items()]
    while stack and len(seen) < 10 * _MAX_VISITS:
        path, tree = stack.pop()
        for node in imports_in([tree], at_import=True) if tree is not None else []:
            for module in reach.imported(path, node):
                if module not in seen:
                    seen.add(module)
                    stack.append((module, reach.parse(module)))
    return frozenset(seen)


def suite_modules(files: Iterable[str], directory: str, tests: tuple[str, ...]) -> list[str]:
    """The test files and conftests pytest imports for a package (``directory``, globs
    package-relative), and the conftests above it."""
    prefix = f"{directory}/" if directory else ""
    above = (
        {_join(d, CONFTEST) for d in _ancestors(posixpath.dirname(directory))}
        if directory
        else set()
    )
    return sorted(
        path
        for path in files
        if path in above
        or (
            path.startswith(prefix)
            and path.endswith(".py")
            and (posixpath.basename(path) == CONFTEST or matches_any(path[len(prefix) :], tests))
        )
    )


@functools.lru_cache(maxsize=2)
def reach_of(tree: SourceTree, package_roots: tuple[str, ...]) -> Reach:
    """One ``Reach`` per tree and set of packages (every lane of a check shares it)."""
    return Reach(tree, package_roots)


def _parsed(path: str, source: bytes) -> ast.Module | None:
    try:
        return parse_python(source, path)
    except SurfaceError:
        return None  # Python cannot import it either, so it runs nothing


def _first(effects: list[str]) -> str:
    shown = effects[0]
    more = f" (and {len(effects) - 1} more)" if len(effects) > 1 else ""
    return f"changes shared state ({shown}){more}"


def _spelled(node: ast.Import | ast.ImportFrom) -> str:
    return f"line {node.lineno}: {ast.unparse(node)[:60]}"


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's statements and those of its compound statements (``if``, ``try``,
    ``with``...), where a ``def`` or an import binds a module name too."""
    for node in body:
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, field, []))
            for part in [*getattr(node, "handlers", []), *getattr(node, "cases", [])]:
                yield from _top_level(part.body)


def _binds(node: ast.stmt) -> Iterator[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.Import):
        yield from (a.asname or a.name.split(".")[0] for a in node.names)
    elif isinstance(node, ast.ImportFrom):
        yield from (a.asname or a.name for a in node.names)
    elif isinstance(node, ast.Assign):
        yield from (t.id for t in node.targets if isinstance(t, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id


def _ancestors(directory: str) -> Iterator[str]:
    """``directory`` and every directory above it, nearest first, ending at the root ``""``."""
    while directory:
        yield directory
        directory = posixpath.dirname(directory)
    yield ""


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name
