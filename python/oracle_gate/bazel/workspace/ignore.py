"""The directories a root ``.bazelignore`` hides from Bazel."""

from __future__ import annotations

import posixpath
import re

from oracle_gate.repo.trees import Tree

__all__ = ["BAZELIGNORE", "bazel_ignored"]

# At the workspace's root: Bazel reads it before any BUILD file.
BAZELIGNORE = ".bazelignore"


def bazel_ignored(tree: Tree, files: tuple[str, ...]) -> tuple[str, ...]:
    """Directories ``.bazelignore`` at the root hides from Bazel, each ending in '/'.

    As Bazel 4.2.3 reads each line: a path, normalised (``lib/gen/``, ``./lib/gen``,
    ``lib//gen`` all hide ``lib/gen``) but never trimmed (`` lib/gen`` hides a directory
    whose name starts with a space), and an absolute one hides nothing.
    """
    if BAZELIGNORE not in files:
        return ()
    lines = _LINE_END.split(tree.read(BAZELIGNORE).decode("utf-8", "surrogateescape"))
    found = (_ignored_directory(line) for line in lines)
    return tuple(f"{directory}/" for directory in found if directory is not None)


def _ignored_directory(line: str) -> str | None:
    if not line or line.startswith(("#", "/")):
        return None
    directory = posixpath.normpath(line)
    # "." would hide the whole tree and "../x" lies outside it: hiding less than Bazel
    # might keeps packages it does not see, so the graph selects more, never less.
    return None if directory == "." or directory.split("/")[0] == ".." else directory


# Java's line reading, which Bazel's uses: \n, \r and \r\n end a line.
_LINE_END = re.compile(r"\r\n|\r|\n")
