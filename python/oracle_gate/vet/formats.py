"""The vet report in every format ``check`` has: text, json, markdown, junit, sarif.

Each renderer returns a string; only the CLI prints. Rows come sorted by
package and row id, mutants by file and place, so the same tree gives the
same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from oracle_gate import __version__
from oracle_gate.formats.junit import Case, render_suite
from oracle_gate.vet.results import MutantResult, Outcome, RowStatus, RowVet, VetReport

__all__ = ["VET_FORMATS"]

_NOT_JUDGED = "not judged"
_COUNTED = (Outcome.KILLED, Outcome.SURVIVED, Outcome.TIMED_OUT, Outcome.EQUIVALENT)


def _header(report: VetReport) -> str:
    mutants = sum(len(row.mutants) for row in report.rows)
    return (
        f"oracle-gate vet {report.commit[:12]}: {len(report.rows)} rows, {mutants} mutants "
        f"(at most {report.per_function} per function, seed {report.seed})"
    )


def _verdict_line(row: RowVet) -> str | None:
    if row.decorative:
        return f"DECORATIVE {row.name}: it kills none of its {len(row.mutants)} mutants"
    if row.status is RowStatus.FAILING:
        return f"FAILING {row.name}: {'; '.join(row.notes)}"
    return None


def _survivor_title(mutant: MutantResult) -> str:
    return (
        f"{mutant.path}:{mutant.line} {mutant.function} [{mutant.operator}] "
        f"{mutant.description} ({mutant.row.value})"
    )


def render_text(report: VetReport) -> str:
    width = max([len(row.name) for row in report.rows] + [3])
    lines = [_header(report), ""]
    columns = "  ".join(o.value for o in _COUNTED)
    lines.append(f"{'ROW':<{width}}  {'SCORE':<14}  {columns}  TESTS")
    for row in report.rows:
        counts = "  ".join(f"{row.count(o):>{len(o.value)}}" for o in _COUNTED)
        lines.append(f"{row.name:<{width}}  {row.score:<14}  {counts}  {_NOT_JUDGED}")
    verdicts = [line for row in report.rows if (line := _verdict_line(row))]
    if verdicts:
        lines += ["", *verdicts]
    for row in report.rows:
        notes = [n for n in row.notes if row.status is not RowStatus.FAILING]
        if row.survivors or notes:
            lines += ["", f"{row.name}: {len(row.survivors)} surviving mutants"]
            lines += [f"  note: {note}" for note in notes]
        for mutant in row.survivors:
            lines.append(f"  {_survivor_title(mutant)}")
            lines += [f"    {line}" for line in mutant.diff.splitlines()]
    return "\n".join(lines) + "\n"


def render_json(report: VetReport) -> str:
    return json.dumps({"schema": 1, **report.to_json()}, indent=2, sort_keys=True) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: VetReport) -> str:
    lines = [f"## {_header(report)}", ""]
    lines.append("| row | score | " + " | ".join(o.value for o in _COUNTED) + " | tests |")
    lines.append("|---|---|" + "---|" * len(_COUNTED) + "---|")
    for row in report.rows:
        counts = " | ".join(str(row.count(o)) for o in _COUNTED)
        lines.append(f"| `{_cell(row.name)}` | {row.score} | {counts} | {_NOT_JUDGED} |")
    verdicts = [line for row in report.rows if (line := _verdict_line(row))]
    if verdicts:
        lines += ["", *[f"- **{_cell(line)}**" for line in verdicts]]
    for row in report.rows:
        if not row.survivors:
            continue
        lines += ["", f"### `{row.name}`: {len(row.survivors)} surviving mutants", ""]
        for mutant in row.survivors:
            lines += [f"- {_cell(_survivor_title(mutant))}", "", "```diff", mutant.diff.rstrip()]
            lines += ["```", ""]
    return "\n".join(lines).rstrip() + "\n"


def render_junit(report: VetReport) -> str:
    """One case per row: a failure when it is decorative, an error when it fails unmutated."""
    cases = []
    for row in report.rows:
        line = _verdict_line(row)
        failing = row.status is RowStatus.FAILING
        cases.append(
            Case(
                classname=f"oracle-gate.vet.{row.package or '.'}",
                name=f"{row.row}: {row.score}",
                failure=line if row.decorative else None,
                error=line if failing else None,
            )
        )
    return render_suite(_header(report), cases)


def _location(path: str, line: int) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": path}, "region": {"startLine": line}}}


def render_sarif(report: VetReport) -> str:
    """Survivors as warnings where they mutate, decorative rows as errors."""
    results: list[dict[str, Any]] = []
    for row in report.rows:
        if row.decorative:
            results.append(
                {
                    "ruleId": "oracle-gate/vet/decorative",
                    "level": "error",
                    "message": {"text": _verdict_line(row)},
                    "properties": {"row": row.name},
                }
            )
        for mutant in row.survivors:
            results.append(
                {
                    "ruleId": "oracle-gate/vet/survivor",
                    "level": "warning",
                    "message": {"text": f"{row.name} does not kill: {mutant.description}"},
                    "locations": [_location(mutant.path, mutant.line)],
                    "properties": {"row": row.name, "outcome": mutant.row.value},
                }
            )
    rules = [
        {"id": f"oracle-gate/vet/{name}", "shortDescription": {"text": text}}
        for name, text in (
            ("decorative", "a row that kills none of its mutants"),
            ("survivor", "a mutant no oracle of its row rejects"),
        )
    ]
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "oracle-gate", "version": __version__, "rules": rules}},
                "results": results,
                "properties": {"commit": report.commit},
            }
        ],
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


VET_FORMATS: dict[str, Callable[[VetReport], str]] = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
    "junit": render_junit,
    "sarif": render_sarif,
}
