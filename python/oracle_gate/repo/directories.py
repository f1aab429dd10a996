"""Directories of a tree as git lists its paths: the one enclosing a path, those
under one, and the joins and tests on the way.

Paths are repository-relative: no leading, trailing or doubled '/', "" for the root.
"""

from __future__ import annotations

import bisect
import posixpath
import sys
from collections.abc import Container, Iterable, Sequence

__all__ = [
    "at_or_under",
    "enclosing",
    "joined",
    "listed",
    "outermost",
    "outside_tree",
    "starting_with",
]


def joined(workspace: str, path: str) -> str:
    return posixpath.join(workspace, path) if workspace and path else workspace or path


def enclosing(directory: str, directories: Container[str]) -> str | None:
    """The nearest of ``directories`` at or above ``directory`` ("" is the root), else None.

    ``directory`` is repository-relative, as git lists paths: no leading, trailing or
    doubled '/', so its parent is what comes before its last '/'.
    """
    while directory not in directories:
        if not directory:
            return None
        directory = directory.rpartition("/")[0]
    return directory


def outermost(directories: Iterable[str]) -> set[str]:
    """The ``directories`` no other of them lies above."""
    listed = set(directories)
    return {d for d in listed if enclosing(posixpath.dirname(d), listed) is None}


def listed(ordered: Sequence[str], path: str) -> bool:
    """Whether the sorted ``ordered`` holds ``path``."""
    index = bisect.bisect_left(ordered, path)
    return index < len(ordered) and ordered[index] == path


def outside_tree(path: str) -> bool:
    """Whether a normalized ``path`` leaves the repository (absolute, or up from its root)."""
    return posixpath.isabs(path) or path == ".." or path.startswith("../")


def at_or_under(directory: str, ordered: list[str]) -> list[str]:
    """The paths of ``ordered`` (sorted) that are ``directory`` or lie below it."""
    below = list(starting_with(ordered, f"{directory}/"))
    return [directory, *below] if listed(ordered, directory) else below


def starting_with(ordered: Sequence[str], prefix: str) -> Sequence[str]:
    """The strings of ``ordered`` (sorted) that start with ``prefix``."""
    if not prefix:
        return ordered
    start = bisect.bisect_left(ordered, prefix)
    last = ord(prefix[-1])
    if last == sys.maxunicode:  # no successor character to bound the slice with
        return [text for text in ordered[start:] if text.startswith(prefix)]
    # Every string starting with "pkg/" sorts before "pkg0", the next prefix.
    return ordered[start : bisect.bisect_left(ordered, prefix[:-1] + chr(last + 1), lo=start)]
