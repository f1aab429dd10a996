"""Tooling: files the root settings say neither ship nor run in tests, and the check that keeps
a Python one honest (no other Python file of its package names its module).

A build helper (``scripts/use_setuptools.py``), a documentation build's
``docs/conf.py`` or a benchmark is Python that runs only when a human or CI runs
it. Once production or a test imports it, it is production after all; the
check reads both trees, so a patch that starts importing a tooling module (the
import is a production change, guarded by rows) leaves the module production
for every patch after it.
"""

from __future__ import annotations

import functools
import posixpath
import re

from oracle_gate.repo.trees import GitTree

__all__ = ["module_words", "names_module"]

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=8)
def module_words(tree: GitTree, prefix: str) -> dict[str, frozenset[str]]:
    """Each word of the Python files under ``prefix`` -> the files it appears in."""
    paths = sorted(p for p in tree.paths() if p.startswith(prefix) and p.endswith(".py"))
    index: dict[str, set[str]] = {}
    for path, text in tree.read_many(paths).items():
        for word in set(_WORD.findall(text)):
            index.setdefault(word.decode(), set()).add(path)
    return {word: frozenset(files) for word, files in index.items()}


def _module_name(path: str) -> str:
    """The last part of the dotted name ``path`` is imported by (a package's directory)."""
    stem = posixpath.basename(path).rsplit(".", 1)[0]
    return posixpath.basename(posixpath.dirname(path)) if stem == "__init__" else stem


def names_module(tree: GitTree, prefix: str, path: str) -> bool:
    """Whether a Python file under ``prefix`` in ``tree``, other than ``path`` itself,
    names ``path``'s module as a word (an import, a string, a comment: erring toward
    production)."""
    files = module_words(tree, prefix).get(_module_name(path), frozenset())
    return bool(files - {path})
