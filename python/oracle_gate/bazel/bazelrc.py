"""What a workspace's ``.bazelrc`` says that moves its package boundaries.

``--deleted_packages=lib/sub`` makes Bazel read ``lib/sub`` as a plain directory of
``lib``: ``glob(["**"])`` there sees its files. The flag can stand under any command
(``build``, ``test``, ``query``, ``common``) and any config (``build:ci``); which ones a
user's CI passes is unknown here, so every line counts, and ``import``/``try-import``
are followed inside the tree.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable

__all__ = ["RC_IMPORT", "deleted_packages", "import_target"]

RC_IMPORT = re.compile(r"^[ \t]*(?:try-)?import[ \t]+(\S+)", re.MULTILINE)
_WORKSPACE_TOKEN = "%workspace%"
_FLAG = "--deleted_packages"


def import_target(line: str, workspace: str) -> str | None:
    """The repo-relative file a ``.bazelrc`` import names, None when outside the repository."""
    target = line.strip('"')
    if target.startswith(_WORKSPACE_TOKEN):
        target = target[len(_WORKSPACE_TOKEN) :].lstrip("/")
    elif target.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(workspace, target))
    return None if joined.startswith("..") else joined


def deleted_packages(
    read: Callable[[str], bytes | None], workspace: str = ""
) -> tuple[frozenset[str], frozenset[str]]:
    """The packages the ``.bazelrc`` of ``workspace`` deletes (repo-relative), and the rc
    files read for them (it and what it imports, transitively)."""
    todo = [posixpath.join(workspace, ".bazelrc")]
    seen: set[str] = set()
    deleted: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = read(path)
        if text is None:
            continue
        decoded = text.decode("utf-8", "surrogateescape")
        for target in RC_IMPORT.findall(decoded):
            found = import_target(target, workspace)
            if found is not None:
                todo.append(found)
        for line in decoded.splitlines():
            deleted.update(posixpath.join(workspace, p) for p in _deleted_on(line))
    return frozenset(deleted), frozenset(seen)


def _deleted_on(line: str) -> list[str]:
    """The package names a ``--deleted_packages`` flag of ``line`` lists."""
    if _FLAG not in line:
        return []
    try:
        words = shlex.split(line, comments=True)
    except ValueError:  # an unclosed quote: take the raw words, never fewer packages
        words = line.split()
    found: list[str] = []
    for index, word in enumerate(words):
        if word == _FLAG and index + 1 < len(words):
            value = words[index + 1]
        elif word.startswith(f"{_FLAG}="):
            value = word[len(_FLAG) + 1 :]
        else:
            continue
        found += [name.strip("/") for name in value.split(",") if name.strip("/")]
    return found
