"""``--format sarif``: SARIF 2.1.0 for code-scanning annotations.

The document validates against the OASIS SARIF 2.1.0 schema (the tests check
it). A result names its file, and the line when the finding knows one.
"""

from __future__ import annotations

import json
from typing import Any

from oracle_gate import __version__
from oracle_gate.errors import GateError
from oracle_gate.model import Finding, Lane, Verdict
from oracle_gate.report import Report

__all__ = ["render", "render_error"]

_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# Only findings a reviewer must act on become results; passes are not annotations.
_LEVELS = {Verdict.REJECT: "error", Verdict.HUMAN_NOTED: "note", Verdict.PREEXISTING: "warning"}


def _rule_id(lane: Lane) -> str:
    return f"oracle-gate/{lane.value}"


def _location(path: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": path}}
    if line is not None and line >= 1:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def _result(finding: Finding) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": _rule_id(finding.lane),
        "level": _LEVELS[finding.verdict],
        "message": {"text": finding.reason},
        "properties": {
            "verdict": finding.verdict.value,
            "row": finding.row,
            "owners": list(finding.owners),
        },
    }
    if finding.path:
        result["locations"] = [_location(finding.path, finding.line)]
    return result


def _document(run: dict[str, Any]) -> str:
    driver = {"name": "oracle-gate", "version": __version__, "rules": run.pop("rules", [])}
    document = {
        "$schema": _SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, **run}],
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def render(report: Report) -> str:
    results = [_result(f) for f in report.findings if f.verdict in _LEVELS]
    rules = [
        {
            "id": _rule_id(lane),
            "name": f"{lane.value} lane",
            "shortDescription": {"text": f"oracle-gate {lane.value} lane"},
        }
        for lane in sorted(
            {f.lane for f in report.findings if f.verdict in _LEVELS}, key=lambda lane: lane.value
        )
    ]
    # versionControlProvenance needs a repositoryUri, which a local check does not
    # know; the commits go into the run's property bag instead.
    return _document(
        {
            "rules": rules,
            "results": results,
            "properties": {
                "parent": report.base,
                "head": report.head,
                # Owners whose review the platform must enforce for noted oracle moves.
                "reviewers": list(report.reviewers()),
                # Where selection over-approximated the package graph (more, never fewer).
                "graphApproximate": list(report.approximate),
            },
        }
    )


def render_error(error: GateError) -> str:
    """A run that did not complete: no results, one error notification naming the file."""
    notification: dict[str, Any] = {"level": "error", "message": {"text": str(error)}}
    if error.path:
        notification["locations"] = [_location(error.path, error.line)]
    return _document(
        {
            "results": [],
            "invocations": [
                {"executionSuccessful": False, "toolExecutionNotifications": [notification]}
            ],
        }
    )
