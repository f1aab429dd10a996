"""``--format markdown``: a pull-request comment or CI job summary."""

from __future__ import annotations

from oracle_gate.errors import GateError
from oracle_gate.model import Verdict
from oracle_gate.report import Report

__all__ = ["render", "render_error"]

_ICONS = {
    Verdict.PASS: "✅",
    Verdict.REJECT: "❌",
    Verdict.HUMAN_NOTED: "📝",
    Verdict.IGNORED_AS_ORACLE: "🧪",
    Verdict.PREEXISTING: "⚠️",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: Report) -> str:
    lines = [
        f"## oracle-gate: {_ICONS[report.verdict]} {report.verdict_word}",
        "",
        f"Parent `{report.base[:12]}`, head `{report.head[:12]}`, backend `{report.backend}`.",
        "",
        "| path | lane | verdict |",
        "|---|---|---|",
    ]
    lines += [
        f"| `{_cell(p.path)}` | {p.lane.value} | {_ICONS[p.verdict]} {p.verdict.value} |"
        for p in report.paths
    ]
    notable = [f for f in report.findings if f.verdict is not Verdict.PASS]
    if notable:
        lines += ["", "### Findings", ""]
        for finding in notable:
            where = finding.path or finding.package or "."
            row = f" (row `{finding.row}`)" if finding.row else ""
            lines.append(f"- {_ICONS[finding.verdict]} `{where}`{row}: {finding.reason}")
    if report.docs_only:
        lines += ["", "Docs-only or format-only patch: no rows run."]
    if report.approximate:
        lines += ["", f"**Note:** {_cell(report.approximate_summary())}.", ""]
        lines += [f"- {_cell(place)}" for place in report.approximate_shown()]
    reviewers = report.reviewers()
    if reviewers:
        lines += ["", f"**Review required by:** {', '.join(reviewers)}"]
    return "\n".join(lines) + "\n"


def render_error(error: GateError) -> str:
    """The comment for a check that could not decide: exit 2, no verdict."""
    return f"## oracle-gate: ⛔ error\n\nThe gate could not decide: `{_cell(str(error))}`\n"
