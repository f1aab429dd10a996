"""Production lane: every production path must be guarded by a row (fail closed)."""

from __future__ import annotations

from oracle_gate.globs import matches_any
from oracle_gate.lanes.facts import Facts, LanedPath
from oracle_gate.model import ChangeKind, Finding, Verdict

__all__ = ["judge", "rows_guarding"]


def rows_guarding(laned: LanedPath, facts: Facts) -> tuple[str, ...]:
    """Ids of the rows whose globs match the path (the parent's rows for a deleted path)."""
    package = laned.package
    if package is None:
        return ()
    graph = facts.parent_graph if laned.change.kind is ChangeKind.DELETED else facts.head_graph
    matrix = graph.packages.get(package.path, package).matrix
    relative = package.relative(laned.path)
    return tuple(row.id for row in matrix.rows if matches_any(relative, row.globs))


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    if laned.package is None:
        return [
            laned.finding(
                Verdict.REJECT,
                "unmeasured module: no package declares a matrix for this path "
                "(add an invariants.yaml row that guards it)",
            )
        ]
    rows = rows_guarding(laned, facts)
    if not rows:
        matrix_file = laned.package.join(laned.package.matrix_file)
        return [
            laned.finding(
                Verdict.REJECT, f"unmeasured module: no row of {matrix_file} has a glob matching it"
            )
        ]
    return [laned.finding(Verdict.PASS, f"guarded by row(s) {', '.join(rows)}")]
