"""Shadows: a new module named like one the gate's children import for themselves.

What it catches: a module the patch adds at the package's import root (``json.py``,
``pytest/__init__.py``) named like a module of the standard library or of the test
machinery (pytest, pluggy, Hypothesis, attrs...) or ``oracle_gate``, which the parent did
not have.

Why: the gate's children import their own ``json`` and ``pytest``, not the package's; a
real run, with the package's root first on its path, imports the package's. The same
import then means one module under the gate and another in production.

Example: a patch adds ``libs/codec/json.py``, whose ``loads`` answers the fixtures'
inputs; ``codec`` goes on calling ``json.loads``.
"""

from __future__ import annotations

import sys

from oracle_gate.lanes.tamper.reader import Mark
from oracle_gate.model import Package
from oracle_gate.repo.trees import GitTree

__all__ = ["new_shadow"]

# Modules the gate's children import for themselves: the standard library, the test
# machinery and what it imports. A production module of that name at the package's import
# root is not what the children import, but would be what production imports.
_SHADOWED = sys.stdlib_module_names | {
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "hypothesis",
    "attr",
    "attrs",
    "sortedcontainers",
    "exceptiongroup",
    "tomli",
    "oracle_gate",
}


def new_shadow(path: str, package: Package, parent: GitTree) -> list[tuple[Mark, int]]:
    """A module at the package's import root (``json.py``, ``json/...``) named like one the
    gate's children import themselves, which the parent did not have."""
    top, slash, _ = package.relative(path).partition("/")
    name = top if slash else top.removesuffix(".py")
    if name not in _SHADOWED:
        return []
    held = package.join(name)
    if parent.blob_id(f"{held}.py") is not None or parent.has_directory(held):
        return []
    return [(("module named like the standard library's or the gate's", name), 1)]
