"""The human table: ``path  lane  verdict``, each finding's reason, then the verdict."""

from __future__ import annotations

from collections import Counter

from oracle_gate.errors import GateError
from oracle_gate.model import Verdict
from oracle_gate.report import Report

__all__ = ["render", "render_error"]


def render(report: Report) -> str:
    lines = [
        f"oracle-gate check: parent {report.base[:12]}  head {report.head[:12]}  "
        f"backend {report.backend}",
    ]
    width = max([len(p.path) for p in report.paths] + [4]) + 2
    lines.append(f"{'PATH'.ljust(width)}{'LANE'.ljust(19)}VERDICT")
    for entry in report.paths:
        lines.append(f"{entry.path.ljust(width)}{entry.lane.value.ljust(19)}{entry.verdict.value}")
    lines.append("")
    for finding in report.findings:
        if finding.verdict is Verdict.PASS:
            continue
        where = finding.path or finding.package or "."
        lines.append(f"{finding.verdict.value.upper():<18} {where}: {finding.reason}")
    if report.docs_only:
        lines.append("docs-only or format-only patch: no rows run")
    if report.approximate:
        lines.append(report.approximate_summary())
        lines += [f"  approximate: {place}" for place in report.approximate_shown()]
    counts = Counter(f.verdict.value for f in report.findings)
    summary = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
    reviewers = report.reviewers()
    if reviewers:
        lines.append(f"review required by: {', '.join(reviewers)}")
    lines.append(f"verdict: {report.verdict_word.upper()} ({summary or 'nothing changed'})")
    return "\n".join(lines) + "\n"


def render_error(error: GateError) -> str:
    """Nothing on stdout: the one ``oracle-gate: error:`` line on stderr is the text report."""
    return ""
