"""``--format json``: the stable, versioned report schema (docs/report-json.md)."""

from __future__ import annotations

import json

from oracle_gate.report import Report

__all__ = ["SCHEMA", "SCHEMA_VERSION", "render"]

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
                "reason": f.reason,
                "owners": list(f.owners),
            }
            for f in report.findings
        ],
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
