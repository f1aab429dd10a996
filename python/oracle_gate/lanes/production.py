"""Production lane: every production path must be guarded by a row (fail closed)."""

from __future__ import annotations

from oracle_gate.facts import Facts, LanedPath, rows_guarding
from oracle_gate.lanes import doctests, tamper
from oracle_gate.model import Finding, Verdict

__all__ = ["judge"]


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
    findings = tamper.judge(laned, facts) + doctests.judge(laned, facts)
    return findings or [laned.finding(Verdict.PASS, f"guarded by row(s) {', '.join(rows)}")]
