"""Property lane: the oracle's own code (properties, partitions, relations) moved."""

from __future__ import annotations

from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move
from oracle_gate.model import Finding

__all__ = ["judge"]


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    return [
        oracle_move(
            laned, facts, f"oracle code {laned.change.kind.value}: the oracle's own code moved"
        )
    ]
