"""The facts every lane reads, gathered once per check, and the human-note rule they share."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from oracle_gate.config.notes import Notes
from oracle_gate.config.owners import CodeOwners
from oracle_gate.graph import PackageGraph
from oracle_gate.model import Change, Diff, Finding, Lane, Package, Verdict
from oracle_gate.repo.trees import GitTree

__all__ = ["Facts", "LanedPath", "oracle_move", "summarize"]

_SHOWN = 3


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
    today: datetime.date

    def owners(self, path: str, package: Package | None) -> tuple[str, ...]:
        """Who must review a noted change to ``path``: the matrix's owners, then CODEOWNERS."""
        found = list(package.matrix.owners) if package else []
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


def oracle_move(laned: LanedPath, facts: Facts, reason: str) -> Finding:
    """The oracle moved: ``human_noted`` when a human explained it, else a reject.

    ``reason`` says what moved; the verdict decides how the sentence ends.
    """
    paths = [laned.path] + ([laned.change.old_path] if laned.change.old_path else [])
    if any(facts.notes.covers(path, laned.package) for path in paths):
        owners = facts.owners(laned.path, laned.package)
        who = ", ".join(owners) if owners else "the package owners"
        return laned.finding(
            Verdict.HUMAN_NOTED, f"{reason}; a human note explains it, review by {who}", owners
        )
    return laned.finding(
        Verdict.REJECT,
        f"{reason} with no human note (ORACLE_CHANGELOG.md entry or Oracle-Change trailer)",
    )


def summarize(items: list[str], separator: str = ", ") -> str:
    """The first few items and how many more there are: one reason stays one line."""
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return separator.join(items[:_SHOWN]) + more
