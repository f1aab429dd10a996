"""What tests read of a gate's report, in one place: the reasons of its findings, and the
lane and verdict of one path."""

from __future__ import annotations

from oracle_gate.model import Lane, Verdict
from oracle_gate.report import Report

__all__ = ["lane_and_verdict", "reasons_of", "replay_reasons"]


def reasons_of(report: Report, verdict: Verdict = Verdict.REJECT) -> str:
    """The reasons of the findings with ``verdict``, one per line."""
    return "\n".join(f.reason for f in report.findings if f.verdict is verdict)


def replay_reasons(report: Report) -> str:
    """The replay's reasons, whatever their verdict, one per line."""
    return "\n".join(f.reason for f in report.findings if f.reason.startswith("replay"))


def lane_and_verdict(report: Report, path: str) -> tuple[Lane, Verdict]:
    """The lane the report put ``path`` in, and its verdict there."""
    entry = next(p for p in report.paths if p.path == path)
    return entry.lane, entry.verdict
