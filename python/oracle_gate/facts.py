"""The facts every stage after the graph reads, gathered once per check from both trees."""

from __future__ import annotations

import datetime
import posixpath
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from oracle_gate.bazel.labels import BUILD_NAMES, WORKSPACE_MARKERS
from oracle_gate.bazel.workspace.ignore import BAZELIGNORE
from oracle_gate.config.notes import Notes, endorse, read_notes
from oracle_gate.config.owners import CodeOwners, read_codeowners
from oracle_gate.config.settings import Settings, read_settings
from oracle_gate.globs import matches_any
from oracle_gate.graph import PackageGraph, derive_graph, load_graph
from oracle_gate.model import Change, ChangeKind, Diff, Finding, Lane, Package, Verdict
from oracle_gate.repo.diff import read_diff
from oracle_gate.repo.directories import starting_with
from oracle_gate.repo.trees import GitTree

__all__ = [
    "Facts",
    "LanedPath",
    "bazel_boundary_moves",
    "boundary_moves",
    "gather_facts",
    "rows_guarding",
]


@dataclass(frozen=True)
class Facts:
    """Both trees and what was read from them; lanes never touch git themselves."""

    diff: Diff
    parent: GitTree
    head: GitTree
    parent_graph: PackageGraph
    head_graph: PackageGraph
    notes: Notes
    codeowners: CodeOwners
    settings: Settings
    today: datetime.date

    def read_pair(self, change: Change) -> tuple[bytes | None, bytes | None]:
        """The changed file's bytes in the parent (at its old path) and in the head.

        None on the side where it does not exist (added, deleted).
        """
        before = (
            None
            if change.kind is ChangeKind.ADDED
            else self.parent.read_optional(change.old_path or change.path)
        )
        after = None if change.kind is ChangeKind.DELETED else self.head.read_optional(change.path)
        return before, after

    def owners(self, path: str, package: Package | None) -> tuple[str, ...]:
        """Who owns ``path``: the parent matrix's owners, then the parent's CODEOWNERS.

        Both come from the parent, so a patch cannot name its own reviewers; a
        package the patch adds has only its CODEOWNERS owners.
        """
        trusted = self.parent_graph.packages.get(package.path) if package else None
        found = list(trusted.matrix.owners) if trusted else []
        found += [owner for owner in self.codeowners.owners_of(path) if owner not in found]
        return tuple(found)


@dataclass(frozen=True)
class LanedPath:
    """A changed path, its lane, and the package that owns it (head side, else parent)."""

    change: Change
    lane: Lane
    package: Package | None

    @property
    def path(self) -> str:
        return self.change.path

    def finding(self, verdict: Verdict, reason: str, owners: tuple[str, ...] = ()) -> Finding:
        return Finding(
            verdict=verdict,
            lane=self.lane,
            path=self.path,
            reason=reason,
            package=self.package.path if self.package else None,
            owners=owners,
        )


def rows_guarding(laned: LanedPath, facts: Facts) -> tuple[str, ...]:
    """Ids of the rows whose globs match the path (the parent's rows for a deleted path)."""
    package = laned.package
    if package is None:
        return ()
    graph = facts.parent_graph if laned.change.kind is ChangeKind.DELETED else facts.head_graph
    matrix = graph.packages.get(package.path, package).matrix
    relative = package.relative(laned.path)
    return tuple(row.id for row in matrix.rows if matches_any(relative, row.globs))


def _changed_paths(diff: Diff, parent: PackageGraph, head: PackageGraph) -> dict[str, str]:
    """Each changed path and old path -> the directory of its package ("" for none).

    When the packages themselves changed, every parent matrix file too: a
    boundary move is judged at the matrix of the package that lost files
    (``boundary_moves``), which the diff may not touch.
    """
    changed: dict[str, str] = {}
    for change in diff.changes:
        for path in filter(None, (change.path, change.old_path)):
            package = head.package_of(path) or parent.package_of(path)
            changed[path] = package.path if package else ""
    if parent.packages.keys() != head.packages.keys():
        for package in parent.packages.values():
            changed.setdefault(package.join(package.matrix_file), package.path)
    return changed


def boundary_moves(facts: Facts) -> dict[str, tuple[str, ...]]:
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
    facts: Facts, paths: Iterable[str], owner: Callable[[PackageGraph, str], str | None]
) -> Iterator[tuple[str, str | None, str | None]]:
    """Each of ``paths`` still in the head whose ``owner`` differs between the trees,
    with its owner before and after (a deleted file is judged as a deletion)."""
    for path in paths:
        if facts.head.blob_id(path) is not None:
            before, after = owner(facts.parent_graph, path), owner(facts.head_graph, path)
            if before != after:
                yield path, before, after


def bazel_boundary_moves(facts: Facts) -> dict[str, str]:
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


def _repository_moves(facts: Facts) -> dict[str, str]:
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


def gather_facts(
    repo: Path,
    base: str,
    head: str,
    today: datetime.date,
    graph: str = "static",
    approvals: tuple[str, ...] | None = None,
) -> Facts:
    """Read the diff and both trees (the head's graph from ``graph``: static or bazel).

    ``approvals`` are the reviewers who approved the change (``check --approvals``).

    Raises:
        GitError: a ref does not resolve, or history is too shallow.
        ConfigError: a matrix or BUILD file is invalid.
        GateError: the bazel graph cannot be built.
        ConfigError: the notes policy needs what is missing (allowed signers, approvals).
    """
    diff = read_diff(repo, base, head)
    parent_tree = GitTree(repo, diff.base)
    # the head's listing is the parent's, changed by the patch
    head_tree = GitTree(repo, diff.head, near=parent_tree)
    parent_graph = load_graph(parent_tree)
    head_graph = derive_graph(parent_graph, head_tree, diff.changes, mode=graph)
    settings = read_settings(parent_tree)
    changed = _changed_paths(diff, parent_graph, head_graph)
    notes = read_notes(repo, diff, parent_tree, head_tree, changed)
    return Facts(
        diff=diff,
        parent=parent_tree,
        head=head_tree,
        parent_graph=parent_graph,
        head_graph=head_graph,
        notes=endorse(notes, settings.notes, repo, parent_tree, head_tree, approvals),
        codeowners=read_codeowners(parent_tree),
        settings=settings,
        today=today,
    )
