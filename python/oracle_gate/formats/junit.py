"""JUnit XML: ``check --format junit`` for merge queues, and ``lock --junit`` for Bazel.

Bazel reads a test's JUnit from ``$XML_OUTPUT_FILE``; CI systems render each
``<testcase>`` and its ``<failure>`` or ``<error>``. A case is named by the
path (and test unit) it judges, so a failure names what moved.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

from oracle_gate.errors import GateError
from oracle_gate.model import Verdict
from oracle_gate.report import Report

__all__ = ["Case", "escape", "render", "render_error", "render_suite"]

# Characters XML 1.0 cannot hold at all, not even as character references.
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\x80-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def escape(text: str) -> str:
    """``text`` with every character XML cannot hold written as ``#xNN``.

    The same spelling as pytest's ``bin_xml_escape``: reasons quote exception
    text chosen by the patched code (``\\x1b``, ``\\x00``), and one such
    character would make the whole document invalid.
    """
    return _NOT_XML.sub(
        lambda found: (
            f"#x{ord(found.group()):02X}"
            if ord(found.group()) <= 0xFF
            else f"#x{ord(found.group()):04X}"
        ),
        text,
    )


@dataclass(frozen=True)
class Case:
    """One ``<testcase>``: passed, failed (the oracle moved) or errored (could not judge)."""

    classname: str
    name: str
    failure: str | None = None
    error: str | None = None


def render_suite(
    name: str, cases: Sequence[Case], properties: Sequence[tuple[str, str]] = ()
) -> str:
    """A ``<testsuites>`` document holding one suite, cases in the given order.

    ``properties`` become the suite's ``<properties>`` (name, value) in order.
    """
    failures = sum(case.failure is not None for case in cases)
    errors = sum(case.error is not None for case in cases)
    root = ET.Element("testsuites")
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": escape(name),
            "tests": str(len(cases)),
            "failures": str(failures),
            "errors": str(errors),
        },
    )
    if properties:
        listed = ET.SubElement(suite, "properties")
        for key, value in properties:
            ET.SubElement(listed, "property", {"name": escape(key), "value": escape(value)})
    for case in cases:
        attributes = {"classname": escape(case.classname), "name": escape(case.name)}
        element = ET.SubElement(suite, "testcase", attributes)
        for tag, text in (("failure", case.failure), ("error", case.error)):
            if text is not None:
                ET.SubElement(element, tag, {"message": escape(text)}).text = escape(text)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def render(report: Report) -> str:
    """The gate's report: one case per touched path, then one per row or package finding."""
    cases: list[Case] = []
    for entry in report.paths:
        reasons = [
            f.reason for f in report.findings if f.path == entry.path and f.verdict is entry.verdict
        ]
        message = "; ".join(reasons) or entry.verdict.value
        cases.append(
            Case(
                classname=f"oracle-gate.{entry.lane.value}",
                name=entry.path,
                failure=message if entry.verdict is Verdict.REJECT else None,
            )
        )
    for finding in report.findings:
        if finding.path is not None:
            continue
        cases.append(
            Case(
                classname=f"oracle-gate.{finding.lane.value}",
                name=finding.row or finding.package or ".",
                failure=finding.reason if finding.verdict is Verdict.REJECT else None,
            )
        )
    name = f"oracle-gate check {report.base[:12]}..{report.head[:12]}: {report.verdict_word}"
    reviewers = report.reviewers()
    properties = [("review required by", ", ".join(reviewers))] if reviewers else []
    if report.approximate:
        properties.append(("package graph approximate", report.approximate_summary()))
    return render_suite(name, cases, properties)


def render_error(error: GateError) -> str:
    """A suite with one errored case: the check could not decide, and why."""
    case = Case("oracle-gate", error.path or "oracle-gate check", error=str(error))
    return render_suite("oracle-gate check: error", [case])
