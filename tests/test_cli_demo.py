"""``oracle-gate demo``: machine-readable formats print one document that parses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from oracle_gate.cli import demo, main

# Two quick patches with different verdicts keep the test short.
_PATCHES = tuple(p for p in demo.PATCHES if p.name in {"docs-only", "unmeasured-module"})


def _demo(
    format: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    monkeypatch.setattr(demo, "PATCHES", _PATCHES)
    code = main(["demo", "--today", "2026-11-30", "--format", format])
    return code, capsys.readouterr().out


def test_demo_json_is_one_document_with_every_patch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _demo("json", monkeypatch, capsys)
    document = json.loads(out)
    assert code == 0
    assert document["all_expected"] is True
    assert [(p["name"], p["verdict"]) for p in document["patches"]] == [
        ("unmeasured-module", "reject"),
        ("docs-only", "pass"),
    ]
    assert document["patches"][0]["report"]["schema"] == "oracle-gate/report"


def test_demo_junit_is_one_xml_document_with_a_suite_per_patch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _demo("junit", monkeypatch, capsys)
    root = ET.fromstring(out.split("\n", 1)[1])
    assert code == 0
    assert root.tag == "testsuites"
    names = [suite.get("name", "") for suite in root]
    assert [name.split(":")[0] for name in names] == [
        "demo patch unmeasured-module",
        "demo patch docs-only",
    ]
    assert root[0].get("failures") != "0" and root[1].get("failures") == "0"


def test_demo_sarif_is_one_log_with_a_run_per_patch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _code, out = _demo("sarif", monkeypatch, capsys)
    document = json.loads(out)
    assert document["version"] == "2.1.0"
    assert len(document["runs"]) == 2
    assert document["runs"][0]["results"] and not document["runs"][1]["results"]


def test_demo_text_names_each_patch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _code, out = _demo("text", monkeypatch, capsys)
    assert "=== patch: docs-only" in out
    assert out.rstrip().endswith("every verdict as expected: True")
