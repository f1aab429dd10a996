"""Fixture lane: an expected output that moves with the patch needs a human note."""

from __future__ import annotations

from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move
from oracle_gate.model import ChangeKind, Finding, Verdict

__all__ = ["judge"]

_VERBS = {
    ChangeKind.ADDED: "fixture added",
    ChangeKind.MODIFIED: "fixture edited",
    ChangeKind.DELETED: "fixture deleted",
    ChangeKind.RENAMED: "fixture renamed",
}


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    change = laned.change
    if change.kind is ChangeKind.MODIFIED:
        (before,) = facts.parent.digests([change.path])
        (after,) = facts.head.digests([change.path])
        if before == after:  # a mode change: the bytes a test reads did not move
            return [laned.finding(Verdict.PASS, "fixture content unchanged (file mode only)")]
    return [
        oracle_move(laned, facts, f"{_VERBS[change.kind]}: expected output moved with the patch")
    ]
