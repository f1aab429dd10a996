"""The packages registered toolchains and execution platforms name: a rule anywhere may
be handed what they declare, an edge ``bazel query`` does not show."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Set

from oracle_gate.bazel.bzl import scan_bzl
from oracle_gate.bazel.workspace.repositories import Repositories, loaded_path
from oracle_gate.repo.directories import at_or_under, enclosing, joined, listed

__all__ = ["registered_by_loaded_code", "toolchain_packages"]

_REGISTERS = re.compile(rb"\bregister_(?:toolchains|execution_platforms)\b")


def toolchain_packages(
    registered: list[tuple[str, str]],
    repositories: Repositories,
    sorted_dirs: list[str],
) -> dict[str, str]:
    """The packages of the tree a target pattern of ``registered`` ((pattern, who names
    it): the root's ``register_toolchains`` and ``register_execution_platforms``, the
    ``.bazelrc``'s flags) names (``//tc:all``, ``//tc/...``): toolchain resolution, a
    platform, an aspect or a Starlark flag may hand any rule of the build what they
    declare, an edge ``bazel query`` does not show, each with who names it."""
    packages: dict[str, str] = {}
    for pattern, who in registered:
        repo, slashes, rest = pattern.partition("//")
        if not slashes:
            continue  # Bazel refuses a pattern that is no absolute label
        root = repositories.root_of(repo.lstrip("@") if repo else None, "")
        if root is None:
            continue  # another repository, not in the tree
        package = rest.partition(":")[0]
        if package == "..." or package.endswith("/..."):
            under = joined(root, package[:-3].rstrip("/"))
            found = at_or_under(under, sorted_dirs) if under else sorted_dirs
        else:
            found = [joined(root, package)] if listed(sorted_dirs, joined(root, package)) else []
        for directory in found:
            packages.setdefault(directory, f"{who} {pattern}")
    return packages


def registered_by_loaded_code(
    read: Callable[[list[str]], Mapping[str, bytes]],
    files: tuple[str, ...],
    repositories: Repositories,
    build_dirs: Set[str],
) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
    """(pattern, who) for the tree's own ``.bzl`` code the root WORKSPACE loads, through
    the files it loads in turn: a file that calls ``register_toolchains`` or
    ``register_execution_platforms`` may register any label it names (which of them
    the calls are given is not read here), so each one counts, and the graph says so:
    (file, why) for each such file is the second part of the answer."""
    level = [(label, "", root) for label, root in repositories.loads]
    seen: dict[str, str] = {}  # each .bzl file reached -> its repository's root
    found: list[tuple[str, str]] = []
    approximate: set[tuple[str, str]] = set()
    while level:
        reached: dict[str, str] = {}
        for label, package, root in level:
            path = loaded_path(label, package, root, repositories)
            if path is not None and path not in seen and listed(files, path):
                reached[path] = seen[path] = root
        texts = read(list(reached)) if reached else {}
        level = []
        for path, root in reached.items():
            bzl = scan_bzl(texts[path])
            home = enclosing(posixpath.dirname(path), build_dirs) or root
            package = home[len(root) + 1 :] if root else home
            level += ((loaded, package, root) for loaded in bzl.loads)
            if _REGISTERS.search(texts[path]) and bzl.labels:
                loaded_by = f"{path}, which the root WORKSPACE loads,"
                found += ((written, f"{loaded_by} may register") for written, _ in bzl.labels)
                why = "registers toolchains or platforms: every package it names is taken as one"
                approximate.add((path, f"{loaded_by} {why}"))
    return found, approximate
