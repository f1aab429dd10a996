"""Tooling: files the root settings say neither ship nor run in tests, and the check that keeps
a Python one honest (no other Python file of its package names its module).

A build helper (``scripts/use_setuptools.py``, ``versioneer.py``), a
documentation build's ``docs/conf.py`` or a benchmark is Python that runs only
when a human or CI runs it. Once production or a test imports it, it is
production after all; the check reads both trees, so a patch that starts
importing a tooling module (the import is a production change, guarded by rows)
leaves the module production for every patch after it. Names in comments do not
count, names in code and strings do (``importlib.import_module("conf")``), and
so do those of every file but ``setup.py`` and the tooling itself.
"""

from __future__ import annotations

import functools
import io
import posixpath
import re
import tokenize
from collections.abc import Iterator

from oracle_gate.globs import matches_any
from oracle_gate.repo.trees import GitTree

__all__ = ["module_words", "names_module"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PACKAGING = "setup.py"  # imports build helpers, and nothing imports it


def _words(text: bytes) -> Iterator[str]:
    """The words of a module's names and strings; of all its text when it does not tokenize."""
    try:
        for token in tokenize.tokenize(io.BytesIO(text).readline):
            if token.type in (tokenize.NAME, tokenize.STRING):
                yield from _WORD.findall(token.string)
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        yield from _WORD.findall(text.decode("utf-8", "replace"))


@functools.lru_cache(maxsize=8)
def module_words(tree: GitTree, prefix: str, tooling: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Each word of the Python files under ``prefix`` (but ``setup.py`` files and those the
    ``tooling`` globs match) -> the files it appears in."""
    paths = sorted(
        path
        for path in tree.paths()
        if path.startswith(prefix)
        and path.endswith(".py")
        and posixpath.basename(path) != _PACKAGING
        and not matches_any(path, tooling)
    )
    index: dict[str, set[str]] = {}
    for path, text in tree.read_many(paths).items():
        for word in set(_words(text)):
            index.setdefault(word, set()).add(path)
    return {word: frozenset(files) for word, files in index.items()}


def _module_name(path: str) -> str:
    """The last part of the dotted name ``path`` is imported by (a package's directory)."""
    stem = posixpath.basename(path).rsplit(".", 1)[0]
    return posixpath.basename(posixpath.dirname(path)) if stem == "__init__" else stem


def names_module(tree: GitTree, prefix: str, path: str, tooling: tuple[str, ...]) -> bool:
    """Whether a Python file under ``prefix`` in ``tree`` that is neither ``setup.py`` nor
    tooling names ``path``'s module as a word of its code or strings (erring toward
    production: any such word counts, imported or not)."""
    return _module_name(path) in module_words(tree, prefix, tooling)
