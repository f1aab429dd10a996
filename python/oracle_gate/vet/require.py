"""``check --require-vetted``: a selected row must not be decorative in the parent.

The parent's vet result is looked up in the cache by the row's content key
(``vet/store.py``), computed from the parent's git objects. A row the parent
does not have is the matrix lane's to judge (a new row must name an oracle),
so it is left alone here. A missing result is a reject that says the command
which produces it: never a silent pass, and never a reject without a way out.
"""

from __future__ import annotations

from pathlib import Path

from oracle_gate.facts import Facts
from oracle_gate.model import Finding, Lane, Package, Row, Verdict
from oracle_gate.vet.results import RowStatus
from oracle_gate.vet.store import load_row, row_key

__all__ = ["vetted_findings"]


def _finding(package: Package, row: Row, verdict: Verdict, reason: str) -> Finding:
    return Finding(
        verdict=verdict,
        lane=Lane.PROPERTY,
        path=package.join(package.matrix_file),
        reason=reason,
        row=row.id,
        package=package.path,
    )


def vetted_findings(repo: Path, facts: Facts, rows: list[tuple[Package, Row]]) -> list[Finding]:
    """One finding per selected row the parent has: its vet in the parent, or what to run."""
    findings = []
    for package, row in rows:
        parent = facts.parent_graph.packages.get(package.path)
        old = next((r for r in parent.matrix.rows if r.id == row.id), None) if parent else None
        if parent is None or old is None:
            continue
        key = row_key(facts.parent, facts.parent_graph, parent, old)
        found = load_row(repo, key)
        name = package.path or "."
        if found is None or found.key != key:
            command = f"oracle-gate vet --rev {facts.diff.base[:12]} {name}"
            findings.append(
                _finding(
                    package,
                    row,
                    Verdict.REJECT,
                    f"row {row.id} has no vet result for the parent's content "
                    f"(--require-vetted); run '{command}' first, then check again",
                )
            )
        elif found.decorative:
            findings.append(
                _finding(
                    package,
                    row,
                    Verdict.REJECT,
                    f"row {row.id} is decorative in the parent: it kills none of its "
                    f"{len(found.mutants)} mutants (oracle-gate vet {name}); strengthen its "
                    "properties, partitions or relations in a reviewed change first",
                )
            )
        else:
            state = found.score if found.status is RowStatus.SCORED else found.status.value
            findings.append(
                _finding(package, row, Verdict.PASS, f"row {row.id} vetted in the parent: {state}")
            )
    return findings
