"""Matrix lane: a row removed or narrowed is the oracle shrinking; widening is free."""

from __future__ import annotations

from oracle_gate.facts import Facts, LanedPath, boundary_moves
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.model import Change, ChangeKind, Finding, Lane, Matrix, Row, Verdict

__all__ = ["check_boundaries", "judge", "narrowings"]

_ROW_LISTS = ("globs", "properties", "partitions", "relations", "fixtures")
_TOP_LISTS = ("owners", "tests", "fixtures", "deps")


def _lost(
    before: Row | Matrix, after: Row | Matrix, names: tuple[str, ...], prefix: str
) -> list[str]:
    """``{prefix}lost {name} a, b`` for each list attribute that lost entries."""
    found = []
    for name in names:
        lost = sorted(set(getattr(before, name)) - set(getattr(after, name)))
        if lost:
            found.append(f"{prefix}lost {name} {', '.join(lost)}")
    return found


def _row_narrowings(before: Row, after: Row) -> list[str]:
    found = _lost(before, after, _ROW_LISTS, f"row '{before.id}' ")
    if after.budget.examples < before.budget.examples:
        found.append(f"row '{before.id}' budget.examples lowered")
    if after.budget.seconds < before.budget.seconds:
        found.append(f"row '{before.id}' budget.seconds lowered")
    return found


def narrowings(before: Matrix, after: Matrix) -> list[str]:
    """Every way ``after`` guards less than ``before``."""
    found = _lost(before, after, _TOP_LISTS, "")
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
    after = facts.head_graph.matrix_declared_by(laned.path)
    if after is None:
        return [oracle_move(laned, facts, "oracle_gate() removed: the package's rows are gone")]
    before = facts.parent_graph.matrix_declared_by(old_path)
    if before is None:
        return [laned.finding(Verdict.PASS, "matrix added: a new package declares its rows")]
    lost = narrowings(before, after)
    if lost:
        return [oracle_move(laned, facts, "matrix narrowed: " + "; ".join(lost))]
    return [laned.finding(Verdict.PASS, "matrix unchanged or widened")]


def check_boundaries(facts: Facts) -> list[Finding]:
    """A package whose files the head gives to another package (or to none) was narrowed.

    Reported at the parent's matrix file: reject unless a human note covers it.
    """
    findings = []
    for directory, paths in boundary_moves(facts).items():
        package = facts.parent_graph.packages[directory]
        owners = sorted(
            {
                (found.path or ".") if found else "no package"
                for found in map(facts.head_graph.package_of, paths)
            }
        )
        laned = LanedPath(
            Change(package.join(package.matrix_file), ChangeKind.MODIFIED), Lane.MATRIX, package
        )
        reason = (
            f"matrix narrowed: {len(paths)} file(s) of package {directory or '.'} now belong to "
            f"{', '.join(owners)} ({summarize(list(paths))}); a patch cannot move a package "
            "boundary, and this package's rows still run on them"
        )
        findings.append(oracle_move(laned, facts, reason))
    return findings
