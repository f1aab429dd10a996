"""Imports of the test and gate machinery, and every import statement's names.

What it catches: a production module that imports pytest, Hypothesis, unittest, doctest,
nose, oracle_gate, atexit, faulthandler or ctypes, or a module that reaches the process
(``process.MODULES``: ``mmap``, ``fcntl``...); ``from os import *`` of a module whose
names another family watches; and ``from os import write``, ``from os import getpid``,
read as the dotted names ``os.write`` and ``os.getpid`` (``introspection``, ``process``,
``sandbox``).

Why: code that imports the machinery can ask it whether it runs under test (``if
pytest...``), register an exit hook that rewrites the outcome, or (ctypes) reach
anything in the process; a star import brings the watched names in unseen.

Example::

    import pytest

    def parse(text):
        if hasattr(pytest, "main"):  # strict only where the gate looks
            ...
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from oracle_gate.lanes.tamper import introspection, process, reflection, sandbox
from oracle_gate.lanes.tamper.reader import SAME_MODULE, Mark, Reader

__all__ = ["import_from_marks", "import_marks"]

# Modules production has no business importing: the test and gate machinery,
# and ctypes (which reaches anything in the process).
_MODULES = frozenset({"pytest", "_pytest", "hypothesis", "unittest", "oracle_gate", "atexit"})
_MODULES_TOO = frozenset({"ctypes", "doctest", "nose", "faulthandler"})
# ``from os import *`` brings every watched name in unseen.
_STARRED = reflection.REFLECTED | {
    name.split(".")[0] for name in introspection.DOTTED | process.DOTTED | sandbox.TELLS
}


def _module(name: str) -> Iterator[Mark]:
    top = name.split(".")[0]
    if top in _MODULES or top in _MODULES_TOO:
        yield "import", top
        return
    parts = name.split(".")
    for end in range(1, len(parts) + 1):
        if ".".join(parts[:end]) in process.MODULES:
            yield "import", ".".join(parts[:end])
            return


def import_marks(reader: Reader, node: ast.Import) -> Iterator[Mark]:
    for alias in node.names:
        yield from _module(alias.name)


def import_from_marks(reader: Reader, node: ast.ImportFrom) -> Iterator[Mark]:
    if not node.module or node.level:
        return
    marks = list(_module(node.module))
    yield from marks
    canonical = SAME_MODULE.get(node.module, node.module)
    for name in (alias.name for alias in node.names):
        dotted = f"{canonical}.{name}"
        if name == "*" and canonical in _STARRED:
            yield "import *", node.module
        elif dotted in introspection.DOTTED or dotted in process.DOTTED:
            yield "reference", dotted
        elif dotted in sandbox.TELLS:
            yield "sandbox tell", dotted
        elif not marks:
            yield from _module(f"{node.module}.{name}")
