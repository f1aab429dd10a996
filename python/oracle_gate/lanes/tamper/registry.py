"""Which family reads which node, in what order, and the walk over one side of a file.

A node's marks come in the order its type's checks are listed below; ``added_marks``
keeps that order within a line. After them, an expression's value (what it folds to) is
read by ``strings`` and ``recorded_values``: a name's value counts where it is bound, not
at each use.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from oracle_gate.lanes.recorded import Recorded
from oracle_gate.lanes.tamper import (
    clocks,
    descriptors,
    introspection,
    machinery,
    process,
    recorded_values,
    reflection,
    sandbox,
    strings,
)
from oracle_gate.lanes.tamper.reader import Mark, Reader, parsed

__all__ = ["FAMILIES", "added_marks", "marks"]

Check = Callable[[Reader, Any], Iterator[Mark]]

# The mark families, one module each (their fixtures: tests/fixtures/tamper/marks/).
FAMILIES = (
    "clocks",
    "descriptors",
    "introspection",
    "machinery",
    "process",
    "recorded_values",
    "reflection",
    "sandbox",
    "strings",
)
# What a family finds in the file's bindings before its nodes are read.
_PREPARES: tuple[Callable[[Reader], None], ...] = (descriptors.prepare, clocks.prepare)
_CHECKS: dict[type[ast.AST], tuple[Check, ...]] = {
    ast.Import: (machinery.import_marks,),
    ast.ImportFrom: (machinery.import_from_marks,),
    ast.Attribute: (
        introspection.attribute_marks,
        process.attribute_marks,
        sandbox.attribute_marks,
        introspection.frame_marks,
        reflection.attribute_marks,
    ),
    ast.Name: (introspection.name_marks,),
    ast.Call: (
        reflection.call_marks,
        descriptors.call_marks,
        sandbox.environment_marks,
        introspection.compile_marks,
    ),
    ast.Compare: (clocks.compare_marks,),
}


def marks(reader: Reader, tree: ast.AST) -> Iterator[tuple[Mark, int]]:
    """Each mark of one side of a file, with its line, in the walk's order."""
    reader.read(tree)
    for prepare in _PREPARES:
        prepare(reader)
    silenced = sandbox.silenced(reader, tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        for mark in _node_marks(reader, node):
            if not silenced(node, mark):
                yield mark, line


def _node_marks(reader: Reader, node: ast.AST) -> Iterator[Mark]:
    for check in _CHECKS.get(type(node), ()):
        yield from check(reader, node)
    if isinstance(node, ast.expr) and not isinstance(node, ast.Name | ast.Slice):
        value = reader.folder.value(node)
        if isinstance(value, (str, bytes)):
            yield from strings.string_marks(reader, value)
        yield from recorded_values.value_marks(reader, value)


def added_marks(
    parent: bytes | None, head: bytes, fixtures: frozenset[str], known: Recorded
) -> list[tuple[Mark, int]]:
    """References in ``head`` beyond those ``parent`` already had, with a head line each.
    ``known``: the package's recorded values (seed inputs, test values, fixture values)."""
    reader = Reader(fixtures, known)
    head_tree = parsed(head)
    if head_tree is None:
        return []  # not Python (or not valid): the rows' runs judge it
    parent_tree = parsed(parent)
    before = Counter(mark for mark, _ in marks(reader, parent_tree)) if parent_tree else Counter()
    after = sorted(marks(reader, head_tree), key=lambda pair: pair[1])
    added: list[tuple[Mark, int]] = []
    for mark, line in after:
        if before[mark] > 0:
            before[mark] -= 1
        else:
            added.append((mark, line))
    return added
