"""The facts every stage after the graph reads, gathered once per check from both trees."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from oracle_gate.config.notes import Notes, endorse, read_notes
from oracle_gate.config.owners import CodeOwners, read_codeowners
from oracle_gate.config.settings import Settings, read_settings
from oracle_gate.graph import PackageGraph, derive_graph, load_graph
from oracle_gate.model import Change, ChangeKind, Diff, Finding, Lane, Package, Verdict
from oracle_gate.repo.diff import read_diff
from oracle_gate.repo.trees import GitTree

__all__ = [
    "Facts",
    "LanedPath",
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
    return tuple(row.id for row in matrix.rows_matching(relative))


def _changed_paths(diff: Diff, parent: PackageGraph, head: PackageGraph) -> dict[str, str]:
    """Each changed path and old path -> the directory of its package ("" for none).

    When the packages themselves changed, every parent matrix file too: a
    boundary move is judged at the matrix of the package that lost files
    (``graph.moves.boundary_moves``), which the diff may not touch.
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
