"""What a module's top-level names hold, where one reading of the module can tell.

The import-time rules (``classify/python.py``) ask two things of a name a statement
uses: is it a module the file imported itself (``re`` in ``re.compile(...)``), and
is it a container the module made itself (``CASES`` in ``CASES.append(...)``)? A
name answers only when every binding of it in the module agrees: ``import re`` and
nothing else, or assignments of new containers (a display, a comprehension,
``list()``) and nothing else. Any other binding (a loop target, a ``with``, an
``except``, a ``global`` in a function, a star import that could bind anything)
leaves the name unknown, and the rules judge it as they judge any other object.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from oracle_gate.classify.import_time import evaluated
from oracle_gate.pysource.imports import import_origins

__all__ = ["ModuleNames", "bound_names", "declared_global", "module_names"]

# Builtins whose call makes a new container, while the module does not rebind them.
_CONSTRUCTORS = frozenset({"list", "dict", "set", "bytearray"})
_DISPLAYS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
_UNKNOWN = "?"
_FRESH = "fresh"  # a display; "fresh NAME": a call of the builtin NAME


@dataclass(frozen=True)
class ModuleNames:
    imported: dict[str, str]  # name -> the module ``import MODULE [as name]`` bound to it
    fresh: frozenset[str]  # names only ever bound to a container the module made

    def module_of(self, node: ast.expr) -> str | None:
        """The module ``node`` names, when it is a name bound only by one import."""
        return self.imported.get(node.id) if isinstance(node, ast.Name) else None

    def is_fresh(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.fresh


_NOTHING_KNOWN = ModuleNames({}, frozenset())


def module_names(tree: ast.Module, run: Iterable[ast.stmt]) -> ModuleNames:
    """The names of ``tree`` one reading can tell, from the statements it ``run``s at
    import (``import_time.statements``, class bodies included: a class attribute of
    the same name makes the module's name unknown, which only errs safe)."""
    kinds: defaultdict[str, set[str]] = defaultdict(set)
    for statement in run:
        if isinstance(statement, ast.ImportFrom) and any(a.name == "*" for a in statement.names):
            return _NOTHING_KNOWN
        for name, kind in _bindings(statement):
            kinds[name].add(kind)
    for name in declared_global(tree):
        kinds[name].add(_UNKNOWN)
    imported = {}
    for name, found in kinds.items():
        (kind, *more) = sorted(found)
        if not more and kind.startswith("import "):
            imported[name] = kind.removeprefix("import ")
    # a module's dunders mean something to the import system (``__path__``): never its own
    fresh = frozenset(
        n for n, k in kinds.items() if not n.startswith("__") and _all_fresh(k, kinds)
    )
    return ModuleNames(imported, fresh)


def _all_fresh(found: set[str], kinds: dict[str, set[str]]) -> bool:
    """Every binding is a display, or a call of a constructor the module never rebinds."""
    return all(
        kind == _FRESH or (kind.startswith(f"{_FRESH} ") and kind[len(_FRESH) + 1 :] not in kinds)
        for kind in found
    )


def bound_names(statement: ast.stmt) -> Iterator[str]:
    """The names a top-level statement binds in its module, as it runs at import."""
    return (name for name, _ in _bindings(statement))


def declared_global(tree: ast.Module) -> Iterator[str]:
    """Names a function may bind in the module (``global``, ``nonlocal``), whenever it runs."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Global | ast.Nonlocal):
            yield from node.names


def _bindings(statement: ast.stmt) -> Iterator[tuple[str, str]]:
    """``(name, kind)`` for each name the statement binds itself."""
    if isinstance(statement, ast.Import):
        yield from ((name, f"import {origin}") for name, origin in import_origins([statement]))
        return
    if isinstance(statement, ast.ImportFrom):
        yield from ((alias.asname or alias.name, _UNKNOWN) for alias in statement.names)
        return
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield statement.name, _UNKNOWN
    for handler in getattr(statement, "handlers", []):
        if handler.name:
            yield handler.name, _UNKNOWN
    direct = _direct(statement)
    for node in evaluated(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id, direct.get(id(node), _UNKNOWN)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name, _UNKNOWN
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest, _UNKNOWN


def _direct(statement: ast.stmt) -> dict[int, str]:
    """The kind of each ``Name`` target the statement binds straight to a new container."""
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return {}
    kind = _new_container(value)
    if kind is None:
        return {}
    return {id(t): kind for t in targets if isinstance(t, ast.Name)}


def _new_container(value: ast.expr) -> str | None:
    if isinstance(value, _DISPLAYS):
        return _FRESH
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in _CONSTRUCTORS
    ):
        return f"{_FRESH} {value.func.id}"
    return None
