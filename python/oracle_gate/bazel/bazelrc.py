"""What a workspace's ``.bazelrc`` says of its packages: what moves their boundaries,
and what may configure every rule.

``--deleted_packages=lib/sub`` makes Bazel read ``lib/sub`` as a plain directory of
``lib``: ``glob(["**"])`` there sees its files. ``--package_path=%workspace%/overlay:
%workspace%`` makes it read ``//lib`` from ``overlay/lib`` when that holds a BUILD
file. A label a flag names (``--extra_toolchains=//tc:x``, ``--platforms``,
``--crosstool_top``, ``--aspects=//tools:lint.bzl%lint``, a Starlark flag
``--//flags:mode=opt``) may configure any rule of the build. A flag can stand
under any command (``build``, ``test``, ``query``, ``common``) and any config
(``build:ci``); which ones a user's CI passes is unknown here, so every line counts,
and ``import``/``try-import`` are followed inside the tree.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["RcFlags", "rc_flags", "read_chain"]

_RC_IMPORT = re.compile(r"^[ \t]*(?:try-)?import[ \t]+(\S+)", re.MULTILINE)
_WORKSPACE_TOKEN = "%workspace%"
_DELETED = "--deleted_packages"
_PACKAGE_PATH = "--package_path"
# A label in an rc line: a word, a flag's value or a list item (``=//tc:x,//tc:y``), or
# a Starlark flag's own name (``--//flags:mode``); quoted or not (``="//tc:x"``).
_RC_LABEL = re.compile(r"(?:^|[\s=,'\"-])((?:@[\w.~+-]*)?//[^\s=,'\"]*)")
# The package flags' values, which are package names and directories, not labels.
_PACKAGE_FLAG_VALUE = re.compile(rf"(?:{_DELETED}|{_PACKAGE_PATH})(?:=|\s+)\S*")


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


@dataclass(frozen=True)
class RcFlags:
    """What the ``.bazelrc`` chain of a workspace says of its packages."""

    # The packages it deletes, repository-relative.
    deleted_packages: frozenset[str]
    # The roots ``--package_path`` adds inside the tree, repository-relative (the
    # workspace itself left out): Bazel may read a package ``p`` from ``root/p``.
    package_roots: frozenset[str]
    # The rc files read for them: the workspace's ``.bazelrc`` and what it imports.
    files: frozenset[str]
    # The labels and target patterns its flags name (``_RC_LABEL``).
    registered: frozenset[str] = frozenset()


def rc_flags(read: Callable[[str], bytes | None], workspace: str = "") -> RcFlags:
    """The package flags of the ``.bazelrc`` of ``workspace`` and what it imports."""
    chain = read_chain(read, [(posixpath.join(workspace, ".bazelrc"), workspace)])
    lines = [line for text in chain.values() for line in (text or "").splitlines()]
    deleted = {
        posixpath.join(workspace, package.strip("/"))
        for line in lines
        for value in _values_on(line, _DELETED)
        for package in value.split(",")
        if package.strip("/")
    }
    roots = {
        root
        for line in lines
        for value in _values_on(line, _PACKAGE_PATH)
        for entry in value.split(":")
        if (root := _package_root(entry, workspace)) not in (None, workspace)
    }
    registered = {
        label
        for line in lines
        if not line.lstrip().startswith(("#", "import", "try-import"))
        for label in _RC_LABEL.findall(_PACKAGE_FLAG_VALUE.sub("", line.partition(" #")[0]))
    }
    return RcFlags(frozenset(deleted), frozenset(roots), frozenset(chain), frozenset(registered))


def _package_root(entry: str, workspace: str) -> str | None:
    """The repo-relative directory a ``--package_path`` entry names, None outside the tree."""
    if entry.startswith(_WORKSPACE_TOKEN):
        entry = entry[len(_WORKSPACE_TOKEN) :].lstrip("/")
    elif entry.startswith("/") or not entry:
        return None
    joined = posixpath.normpath(posixpath.join(workspace, entry))
    if joined == ".":
        return ""
    return None if joined == ".." or joined.startswith("../") else joined


def _values_on(line: str, flag: str) -> list[str]:
    """The values ``flag`` is given on ``line`` (``--flag=value`` or ``--flag value``)."""
    if flag not in line:
        return []
    try:
        words = shlex.split(line, comments=True)
    except ValueError:  # an unclosed quote: take the raw words, never fewer values
        words = line.split()
    found: list[str] = []
    for index, word in enumerate(words):
        if word == flag and index + 1 < len(words):
            found.append(words[index + 1])
        elif word.startswith(f"{flag}="):
            found.append(word[len(flag) + 1 :])
    return found
