"""What the import statements of a Python module bind: one reading for every lane.

A lane that asks what ``o.write`` or ``loads`` really is starts from the names the
file's imports bind. Lanes read different statements (the module level only, or every
statement of the file, scopes ignored), but each name is bound the same way, so a
spelling one lane follows is followed by the others.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

__all__ = ["bound_name", "import_origins"]


def import_origins(nodes: Iterable[ast.AST]) -> Iterator[tuple[str, str]]:
    """``(name, dotted origin)`` for each name the imports among ``nodes`` bind, in order.

    ``import os.path`` binds ``os`` to ``os``; ``import os.path as p`` binds ``p`` to
    ``os.path``; ``from os import write as w`` binds ``w`` to ``os.write``. A relative
    import (``from . import x``) names no module outside the package and binds nothing
    here; nor does a star import, whose names no reading can list.
    """
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield bound_name(alias), alias.name if alias.asname else bound_name(alias)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    yield alias.asname or alias.name, f"{node.module}.{alias.name}"


def bound_name(alias: ast.alias) -> str:
    """The name ``import`` binds for ``alias``: ``p`` of ``os.path as p``, ``os`` of ``os.path``."""
    return alias.asname or alias.name.split(".")[0]
