"""Judging changed paths: each path, already in its lane (``classify``), is judged by that lane.

Each lane is a function from (laned path, facts of parent and head) to findings.
"""

from __future__ import annotations

from collections.abc import Callable

from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes import (
    doctests,
    fixture,
    harness,
    ledger,
    lock,
    matrix,
    production,
    property,
    tests,
)
from oracle_gate.model import Finding, Lane, Package, Verdict

__all__ = ["judge_packages", "judge_paths"]


def _pass(reason: str) -> Callable[[LanedPath, Facts], list[Finding]]:
    def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
        del facts
        return [laned.finding(Verdict.PASS, reason)]

    return judge


_JUDGES: dict[Lane, Callable[[LanedPath, Facts], list[Finding]]] = {
    Lane.PRODUCTION: production.judge,
    Lane.TEST: tests.judge_test,
    Lane.AGENT_TEST: tests.judge_agent_test,
    Lane.FIXTURE: fixture.judge,
    Lane.LOCK: lock.judge,
    Lane.LEDGER: ledger.judge,
    Lane.MATRIX: matrix.judge,
    Lane.PROPERTY: property.judge,
    Lane.HARNESS: harness.judge,
    Lane.DOCS: _pass("documentation: no oracle and no production code"),
    Lane.OTHER: harness.judge_other,
}
# Lanes whose text files pytest may still run as doctests (``doctests.judge_text``).
_TEXT_LANES = frozenset({Lane.DOCS, Lane.OTHER})


def judge_paths(laned_paths: tuple[LanedPath, ...], facts: Facts) -> list[Finding]:
    """Every path judged by its own lane."""
    findings: list[Finding] = []
    for laned in laned_paths:
        doctest = doctests.judge_text(laned, facts) if laned.lane in _TEXT_LANES else []
        findings.extend(doctest or _JUDGES[laned.lane](laned, facts))
    return findings


def judge_packages(packages: list[Package], facts: Facts) -> list[Finding]:
    """Package-level checks: locks tell the truth, ledgers are valid, boundaries stay put."""
    return (
        lock.check_packages(packages, facts)
        + ledger.check_packages(packages, facts)
        + matrix.check_boundaries(facts)
    )
