"""The reader the mark families share: one side of a production file, its names resolved.

A family (one module of this package) reads one kind of node through a ``Reader``: the
dotted name an expression spells through the file's aliases (``import os as o``, ``from
os import write as w``, ``o = os``, ``posix`` for ``os``), what it folds to
(``lanes/spellings.py``), and what the file binds. ``registry.py`` says which family reads
which node, and in what order.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from oracle_gate.errors import SurfaceError
from oracle_gate.lanes.recorded import Recorded
from oracle_gate.lanes.spellings import Folder, names_bound_once
from oracle_gate.pysource.imports import import_origins
from oracle_gate.pysource.parse import parse_python

__all__ = ["Bindings", "Mark", "Reader", "parsed"]

Mark = tuple[str, str]  # (what kind of reference, its text)

# Other spellings of a module: ``posix.write`` is ``os.write``.
SAME_MODULE = {"posix": "os", "nt": "os", "_io": "io", "_socket": "socket", "_signal": "signal"}


def dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound to modules or their members: ``import os as o`` (o -> os), ``from os
    import write as w`` (w -> os.write), ``o = os``. Scopes are ignored: a name bound
    anywhere in the file is read that way everywhere, which errs towards a mark."""
    found = dict(import_origins(ast.walk(tree)))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name)
            and node.value.id in found
        ):
            found[node.targets[0].id] = found[node.value.id]
    return found


@dataclass(frozen=True)
class Bindings:
    """What the file binds, scopes ignored as for aliases: the variables of ``for ... in
    range(...)`` loops and comprehensions, and each name a plain assignment (``=``, an
    annotated one, ``:=``) gives a value."""

    ranged: frozenset[str]
    assigned: tuple[tuple[str, ast.expr], ...]

    def holding(self, is_wanted: Callable[[ast.expr], bool]) -> frozenset[str]:
        """Names assigned anywhere a value ``is_wanted`` says yes to."""
        return frozenset(name for name, value in self.assigned if is_wanted(value))


def _bindings(tree: ast.AST) -> Bindings:
    ranged: set[str] = set()
    assigned: list[tuple[str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            iterated = node.iter
            if isinstance(iterated, ast.Call) and getattr(iterated.func, "id", "") == "range":
                ranged.add(node.target.id)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned += [(t.id, node.value) for t in targets if isinstance(t, ast.Name)]
    return Bindings(frozenset(ranged), tuple(assigned))


class Reader:
    """What the families need to know of one side of a production file, read in turn
    (the parent's side, then the head's) by one reader."""

    def __init__(self, fixtures: frozenset[str], known: Recorded) -> None:
        """``fixtures``: the package's fixture paths and names; ``known``: its recorded
        values (seed inputs, test values, fixture values)."""
        self.fixtures = fixtures
        self.known = known
        self.folder = Folder({}, self.resolved)
        self.aliases: dict[str, str] = {}
        self.bindings = Bindings(frozenset(), ())
        # Sets of names a family found in the bindings (``registry.PREPARES``), by the
        # family's key. They outlive a side: a family reads the last side's while it
        # finds the next's.
        self.names: dict[str, frozenset[str]] = {}

    def read(self, tree: ast.AST) -> None:
        self.aliases = _aliases(tree)
        self.bindings = _bindings(tree)
        self.folder = Folder(names_bound_once(tree), self.resolved)

    def named(self, key: str) -> frozenset[str]:
        return self.names.get(key, frozenset())

    def resolved(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` spells, through aliases and a module's other names."""
        spelled = dotted(node)
        if spelled is None:
            return None
        head, _, rest = spelled.partition(".")
        head = self.aliases.get(head, head)
        top, _, inner = head.partition(".")
        head = ".".join(filter(None, [SAME_MODULE.get(top, top), inner]))
        return f"{head}.{rest}" if rest else head


def parsed(data: bytes | None) -> ast.AST | None:
    if data is None:
        return None
    try:
        return parse_python(data, "<source>")
    except SurfaceError:
        return None  # Python cannot import it either: no marks or values are read from it
