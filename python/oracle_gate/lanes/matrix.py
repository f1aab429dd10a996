"""Matrix lane: a row removed or narrowed is the oracle shrinking; widening is free."""

from __future__ import annotations

from oracle_gate.lanes.facts import Facts, LanedPath, oracle_move
from oracle_gate.matrix import parse_matrix
from oracle_gate.model import ChangeKind, Finding, Matrix, Row, Verdict

__all__ = ["judge", "narrowings"]

_ROW_LISTS = ("globs", "properties", "partitions", "relations", "fixtures")
_TOP_LISTS = ("owners", "tests", "fixtures", "deps")


def _row_narrowings(before: Row, after: Row) -> list[str]:
    found = []
    for name in _ROW_LISTS:
        lost = sorted(set(getattr(before, name)) - set(getattr(after, name)))
        if lost:
            found.append(f"row '{before.id}' lost {name} {', '.join(lost)}")
    if after.budget.examples < before.budget.examples:
        found.append(f"row '{before.id}' budget.examples lowered")
    if after.budget.seconds < before.budget.seconds:
        found.append(f"row '{before.id}' budget.seconds lowered")
    return found


def narrowings(before: Matrix, after: Matrix) -> list[str]:
    """Every way ``after`` guards less than ``before``."""
    found = []
    for name in _TOP_LISTS:
        lost = sorted(set(getattr(before, name)) - set(getattr(after, name)))
        if lost:
            found.append(f"lost {name} {', '.join(lost)}")
    rows_after = {row.id: row for row in after.rows}
    for row in before.rows:
        if row.id not in rows_after:
            found.append(f"row '{row.id}' removed")
        else:
            found.extend(_row_narrowings(row, rows_after[row.id]))
    return found


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    if laned.change.kind is ChangeKind.DELETED:
        return [oracle_move(laned, facts, "matrix deleted: the package's rows are gone")]
    old_path = laned.change.old_path or laned.path
    after = parse_matrix(facts.head.read(laned.path), laned.path)
    if facts.parent.blob_id(old_path) is None:
        return [laned.finding(Verdict.PASS, "matrix added: a new package declares its rows")]
    before = parse_matrix(facts.parent.read(old_path), old_path)
    lost = narrowings(before, after)
    if lost:
        return [oracle_move(laned, facts, "matrix narrowed: " + "; ".join(lost))]
    return [laned.finding(Verdict.PASS, "matrix unchanged or widened")]
