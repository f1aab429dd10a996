"""Bazel labels: parse and resolve ``//pkg:name``, ``:name`` and ``@repo//pkg`` strings."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = [
    "BUILD_NAMES",
    "FORMAT_MARKER",
    "PACKAGE_NAME",
    "PSEUDO_LABELS",
    "REPO_NAME",
    "WORKSPACE_MARKERS",
    "Label",
    "LabelRef",
    "label_ref",
    "main_repo_package",
    "parse_label",
    "visible_to_a_target",
]

# Bazel reads BUILD.bazel when a directory holds both.
BUILD_NAMES = ("BUILD.bazel", "BUILD")
# A directory holding one of these is the root of a Bazel repository (workspace).
WORKSPACE_MARKERS = frozenset({"WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel", "REPO.bazel"})
# select() keys that look like labels but name no package.
PSEUDO_LABELS = frozenset({"//conditions:default", "@bazel_tools//conditions:default"})
PACKAGE_NAME = re.compile(r"(?:[^:\s\\]| )*")  # Bazel 4.2.3 takes "//my lib"
REPO_NAME = re.compile(r"[A-Za-z0-9_.~+-]*")
# Where a computed label's unknown part starts: a format marker ("%s", "{}").
FORMAT_MARKER = re.compile(r"[%{]")


@dataclass(frozen=True, order=True)
class Label:
    """A resolved Bazel label. ``repo`` is ``""`` for the main repository."""

    repo: str
    package: str
    name: str

    @property
    def external(self) -> bool:
        return self.repo != ""

    def __str__(self) -> str:
        prefix = f"@{self.repo}" if self.repo else ""
        return f"{prefix}//{self.package}:{self.name}"


def _check_package(package: str) -> None:
    if PACKAGE_NAME.fullmatch(package) is None:
        raise ValueError("package names may not hold ':', '\\' or whitespace")
    if package and (
        package.startswith("/")
        or package.endswith("/")
        or any(part in ("", ".", "..") for part in package.split("/"))
    ):
        raise ValueError("package names may not have empty, '.' or '..' segments")


def _check_name(name: str) -> None:
    if not name:
        raise ValueError("the target name is empty")
    if ":" in name or name.startswith("/") or "//" in name or name.endswith("/"):
        raise ValueError(f"target name {name!r} is not valid")
    if any(part in (".", "..") for part in name.split("/")):
        raise ValueError(f"target name {name!r} has a '.' or '..' segment")


def parse_label(text: str, package: str) -> Label:
    """Resolve ``text`` as written in the BUILD file of ``package``.

    ``:name`` and ``name`` are in ``package``; ``//pkg:name`` and ``//pkg``
    (short for ``//pkg:pkg``'s last segment) are absolute in the same
    repository; ``@repo//...`` and ``@repo`` are external; ``@//`` and ``@@//``
    name the main repository.

    Raises:
        ValueError: ``text`` is not a label; the message says why.
    """
    repo = ""
    rest = text
    if rest.startswith("@"):
        repo, sep, tail = rest.lstrip("@").partition("//")
        if REPO_NAME.fullmatch(repo) is None:
            raise ValueError(f"repository name {repo!r} is not valid")
        if not sep:
            if not repo:
                raise ValueError("'@' names no repository")
            return Label(repo, "", repo)
        rest = "//" + tail
    if rest.startswith("//"):
        pkg, sep, name = rest[2:].partition(":")
        if not sep:
            if not pkg:
                raise ValueError("'//' names no target")
            name = pkg.rsplit("/", 1)[-1]
        _check_package(pkg)
        _check_name(name)
        return Label(repo, pkg, name)
    if repo:
        raise ValueError("an external label needs '//'")
    name = rest[1:] if rest.startswith(":") else rest
    _check_name(name)
    return Label("", package, name)


@functools.lru_cache(maxsize=262144)
def main_repo_package(text: str) -> str | None:
    """The package an absolute label names in the main repository, else None.

    None for external labels and strings that only look like labels. A
    pseudo-label (``//conditions:default``) parses like any other label: callers
    that must skip those check ``PSEUDO_LABELS`` first. Memoized: a monorepo
    names the same libraries from thousands of files.
    """
    try:
        label = parse_label(text, "")
    except ValueError:
        return None
    return None if label.external else label.package


@dataclass(frozen=True)
class LabelRef:
    """The package(s) a string written as an absolute label can name.

    ``prefix`` is True for a piece of a computed label (``"//libs/%s" % n``,
    ``"//libs/" + n``): it may name any package whose path starts with
    ``package``, and the graph depends on all of them rather than miss one.
    """

    repo: str  # "" for the main repository (``//``, ``@//``, ``@@//``)
    package: str
    prefix: bool = False


@functools.lru_cache(maxsize=262144)
def label_ref(text: str) -> LabelRef | None:
    """What an absolute label, complete or a computed label's literal part, can name.

    None for strings that are no absolute label (``:name``, ``name``, prose).
    A bare repository (``@zlib``) is its root package. ``//lib:`` (the name comes
    later) names package ``lib``; ``//libs/``,
    ``//libs/%s`` and ``//libs/lib_{}`` name every package under that prefix.
    """
    if not text.startswith(("//", "@")) or text in PSEUDO_LABELS:
        return None
    repo, sep, rest = text.lstrip("@").partition("//")
    if not sep and repo and REPO_NAME.fullmatch(repo) is not None:
        return LabelRef(repo, "")  # "@zlib" is "@zlib//:zlib"
    if not sep or REPO_NAME.fullmatch(repo) is None:
        return None
    package, colon, name = rest.partition(":")
    marker = FORMAT_MARKER.search(package)
    if marker is not None:
        return _ref(repo, package[: marker.start()], prefix=True)
    if not colon and (not package or package.endswith("/")):
        return _ref(repo, package, prefix=True)  # "//" + x, "//libs/" + x
    if colon and (not name or FORMAT_MARKER.search(name)):
        return _ref(repo, package, prefix=False)  # "//lib:" + x, "//lib:%s" % x
    parsed = main_repo_package("//" + rest)
    return None if parsed is None else LabelRef(repo, parsed)


def _ref(repo: str, package: str, prefix: bool) -> LabelRef | None:
    if PACKAGE_NAME.fullmatch(package) is None:
        return None
    return LabelRef(repo, package, prefix)


def visible_to_a_target(text: str) -> bool:
    """Whether a string of a visibility names a target, as a package group does: not
    ``//visibility:public`` or ``private``, nor a package spec (``//a:__pkg__``,
    ``//a:__subpackages__``). Bazel's query follows the ones that do."""
    special = text.endswith(("//visibility:public", "//visibility:private"))
    return not special and text.rpartition(":")[2] not in ("__pkg__", "__subpackages__")
