"""Package boundaries a patch moved: files that pass from one package to another
(or to none) with no diff entry of their own, so the lanes judge the package that lost
them.

Read from both trees and their graphs (``TwoTrees``: the check's facts are one).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from oracle_gate.bazel.labels import BUILD_NAMES, WORKSPACE_MARKERS
from oracle_gate.bazel.workspace.ignore import BAZELIGNORE
from oracle_gate.graph.model import PackageGraph
from oracle_gate.model import ChangeKind, Diff
from oracle_gate.repo.directories import starting_with
from oracle_gate.repo.trees import GitTree

__all__ = ["TwoTrees", "bazel_boundary_moves", "boundary_moves"]


class TwoTrees(Protocol):
    """A parent and a head, each as a tree and its graph, and the diff between them."""

    @property
    def diff(self) -> Diff: ...
    @property
    def parent(self) -> GitTree: ...
    @property
    def head(self) -> GitTree: ...
    @property
    def parent_graph(self) -> PackageGraph: ...
    @property
    def head_graph(self) -> PackageGraph: ...


def boundary_moves(facts: TwoTrees) -> dict[str, tuple[str, ...]]:
    """Files a parent package lost to another package, or to none, in the head.

    Keyed by the parent package's directory; only files in both trees (a deleted
    file is judged as a deletion). A new nested matrix, a deleted or moved one, a
    ``.bazelignore`` entry hiding a gate: a patch cannot move a package boundary.
    """
    parent, head = facts.parent_graph, facts.head_graph
    if parent.packages.keys() == head.packages.keys():
        return {}
    moved: dict[str, list[str]] = {}
    for path, before, _ in _owner_changes(facts, facts.parent.files(), _package_path):
        if before is not None:
            moved.setdefault(before, []).append(path)
    return {directory: tuple(paths) for directory, paths in sorted(moved.items())}


def _package_path(graph: PackageGraph, path: str) -> str | None:
    package = graph.package_of(path)
    return None if package is None else package.path


def _owner_changes(
    facts: TwoTrees, paths: Iterable[str], owner: Callable[[PackageGraph, str], str | None]
) -> Iterator[tuple[str, str | None, str | None]]:
    """Each of ``paths`` still in the head whose ``owner`` differs between the trees,
    with its owner before and after (a deleted file is judged as a deletion)."""
    for path in paths:
        if facts.head.blob_id(path) is not None:
            before, after = owner(facts.parent_graph, path), owner(facts.head_graph, path)
            if before != after:
                yield path, before, after


def bazel_boundary_moves(facts: TwoTrees) -> dict[str, str]:
    """Bazel packages whose files changed with no diff entry of their own, each with the
    change that moved them: a BUILD file the patch added or deleted, or a ``.bazelignore``
    line, hands the files of that directory to another package (``glob(["**"])`` above
    it sees them, or no longer does). Only files in both trees count: a new package of
    new files takes nothing from the one around it.
    """
    parent, head = facts.parent_graph, facts.head_graph
    causes: dict[str, str] = {}  # directory whose files may have moved -> the change
    for change in facts.diff.changes:
        if change.kind is ChangeKind.MODIFIED:
            continue
        for path in filter(None, (change.path, change.old_path)):
            if posixpath.basename(path) in BUILD_NAMES:
                causes.setdefault(posixpath.dirname(path), path)
    for prefix in sorted(set(parent.ignored) ^ set(head.ignored)):
        causes.setdefault(prefix.rstrip("/"), BAZELIGNORE)
    moved = _repository_moves(facts)
    files = facts.parent.files() if causes else ()
    for directory, cause in sorted(causes.items()):
        below = starting_with(files, f"{directory}/" if directory else "")
        for _, before, after in _owner_changes(facts, below, PackageGraph.bazel_owner):
            for package in (before, after):
                if package is not None:
                    moved.setdefault(package, cause)
    return moved


def _repository_moves(facts: TwoTrees) -> dict[str, str]:
    """The packages of each repository whose name now leads elsewhere (a WORKSPACE that
    repoints ``local_repository(name = "v")``): what names ``@v`` names other code."""
    parent, head = facts.parent_graph.repositories, facts.head_graph.repositories
    roots = {
        root
        for name in parent.keys() | head.keys()
        if parent.get(name) != head.get(name)
        for root in (parent.get(name), head.get(name))
        if root is not None
    }
    if not roots:
        return {}
    changed = [
        c.path for c in facts.diff.changes if posixpath.basename(c.path) in WORKSPACE_MARKERS
    ]
    cause = min(changed, key=len, default="WORKSPACE")
    return {
        node: cause for root in sorted(roots) for node in facts.head_graph.nodes_at_or_under(root)
    }
