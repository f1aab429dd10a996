"""``--format json``: the stable, versioned report schema (docs/report-json.md)."""

from __future__ import annotations

import json

from oracle_gate.errors import GateError
from oracle_gate.report import Report

__all__ = ["SCHEMA", "SCHEMA_VERSION", "render", "render_error"]

SCHEMA = "oracle-gate/report"
SCHEMA_VERSION = 1


def render(report: Report) -> str:
    document = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "parent": report.base,
        "head": report.head,
        "backend": report.backend,
        "verdict": report.verdict_word,
        "exit_code": int(report.exit_code),
        "docs_only": report.docs_only,
        "graph_approximate": list(report.approximate),
        "reviewers": list(report.reviewers()),
        "paths": [
            {"path": p.path, "lane": p.lane.value, "verdict": p.verdict.value} for p in report.paths
        ],
        "findings": [
            {
                "verdict": f.verdict.value,
                "lane": f.lane.value,
                "path": f.path,
                "row": f.row,
                "package": f.package,
                "line": f.line,
                "reason": f.reason,
                "owners": list(f.owners),
            }
            for f in report.findings
        ],
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def render_error(error: GateError) -> str:
    """The document of a check that could not decide: verdict "error", exit code 2."""
    document = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "verdict": "error",
        "exit_code": 2,
        "error": {
            "message": error.message,
            "path": error.path,
            "line": error.line,
            "text": str(error),
        },
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
