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
from collections.abc import Callable, Iterable

__all__ = ["deleted_packages", "read_chain"]

_RC_IMPORT = re.compile(r"^[ \t]*(?:try-)?import[ \t]+(\S+)", re.MULTILINE)
_WORKSPACE_TOKEN = "%workspace%"
_FLAG = "--deleted_packages"


def _import_target(line: str, workspace: str) -> str | None:
    """The repo-relative file a ``.bazelrc`` import names, None when outside the repository."""
    target = line.strip('"')
    if target.startswith(_WORKSPACE_TOKEN):
        target = target[len(_WORKSPACE_TOKEN) :].lstrip("/")
    elif target.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(workspace, target))
    return None if joined.startswith("..") else joined


def read_chain(
    read: Callable[[str], bytes | None], starts: Iterable[tuple[str, str]]
) -> dict[str, str | None]:
    """Every rc file reached from ``starts`` (``(path, workspace)``), following ``import``
    and ``try-import`` inside the tree transitively (``%workspace%`` is the workspace the
    chain started from): its text, None where the tree holds no such file."""
    todo = list(starts)
    found: dict[str, str | None] = {}
    while todo:
        path, workspace = todo.pop()
        if path in found:
            continue
        raw = read(path)
        text = found[path] = None if raw is None else raw.decode("utf-8", "surrogateescape")
        for target in _RC_IMPORT.findall(text or ""):
            imported = _import_target(target, workspace)
            if imported is not None:
                todo.append((imported, workspace))
    return found


def deleted_packages(
    read: Callable[[str], bytes | None], workspace: str = ""
) -> tuple[frozenset[str], frozenset[str]]:
    """The packages the ``.bazelrc`` of ``workspace`` deletes (repo-relative), and the rc
    files read for them (it and what it imports, transitively)."""
    chain = read_chain(read, [(posixpath.join(workspace, ".bazelrc"), workspace)])
    deleted = {
        posixpath.join(workspace, package)
        for text in chain.values()
        for line in (text or "").splitlines()
        for package in _deleted_on(line)
    }
    return frozenset(deleted), frozenset(chain)


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
