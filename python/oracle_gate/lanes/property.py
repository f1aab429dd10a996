"""Property lane: the oracle's own code (properties, partitions, relations) moved."""

from __future__ import annotations

from oracle_gate import backend
from oracle_gate.errors import SurfaceError
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move
from oracle_gate.model import ChangeKind, Finding, Verdict

__all__ = ["judge"]


def _canonical(source: bytes | None, path: str) -> list[tuple[str, str]] | None:
    """The module's canonical units (``docs/surface.md``); None when it cannot be read."""
    if source is None:
        return None
    try:
        return backend.extract_units(source, path)
    except SurfaceError:
        return None  # judged as moved: a module Python cannot read is no oracle


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    if laned.change.kind is ChangeKind.MODIFIED:
        before, after = facts.read_pair(laned.change)
        old = _canonical(before, laned.path)
        if old is not None and old == _canonical(after, laned.path):
            return [
                laned.finding(
                    Verdict.PASS, "oracle code unchanged: same canonical text (comments, layout)"
                )
            ]
    return [
        oracle_move(
            laned, facts, f"oracle code {laned.change.kind.value}: the oracle's own code moved"
        )
    ]
