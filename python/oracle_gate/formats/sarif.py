"""``--format sarif``: SARIF 2.1.0 for code-scanning annotations."""

from __future__ import annotations

import json
from typing import Any

from oracle_gate import __version__
from oracle_gate.model import Finding, Lane, Verdict
from oracle_gate.report import Report

__all__ = ["render"]

_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# Only findings a reviewer must act on become results; passes are not annotations.
_LEVELS = {Verdict.REJECT: "error", Verdict.HUMAN_NOTED: "note", Verdict.PREEXISTING: "warning"}


def _rule_id(lane: Lane) -> str:
    return f"oracle-gate/{lane.value}"


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
        result["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": finding.path}}}]
    return result


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
    document = {
        "$schema": _SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "oracle-gate",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "versionControlProvenance": [{"revisionId": report.head}],
                # Owners whose review the platform must enforce for noted oracle moves.
                "properties": {"reviewers": list(report.reviewers())},
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
