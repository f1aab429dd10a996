"""JUnit XML: well-formed, escaped, and each rejected path is a failed case naming it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gitrepo import GitRepo
from oracle_gate.formats import FORMATS
from oracle_gate.formats.junit import Case, render, render_suite
from oracle_gate.model import Finding, Lane, Verdict
from oracle_gate.report import PathVerdict, Report


def test_suite_counts_failures_and_errors_and_escapes_text() -> None:
    xml = render_suite(
        "//libs/a:oracle_gate",
        [
            Case("//libs/a:oracle_gate", "libs/a/oracle_gate.lock"),
            Case("//libs/a:oracle_gate", 'libs/a/t.py::test_<"x">', failure="a & b moved"),
            Case("//libs/a:oracle_gate", "libs/a/seeds.jsonl", error="line 1: not JSON"),
        ],
    )
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    suite = ET.fromstring(xml.split("\n", 1)[1]).find("testsuite")
    assert suite is not None
    assert suite.attrib == {
        "name": "//libs/a:oracle_gate",
        "tests": "3",
        "failures": "1",
        "errors": "1",
    }
    cases = suite.findall("testcase")
    assert [case.attrib["name"] for case in cases] == [
        "libs/a/oracle_gate.lock",
        'libs/a/t.py::test_<"x">',
        "libs/a/seeds.jsonl",
    ]
    failure = cases[1].find("failure")
    assert failure is not None and failure.attrib["message"] == "a & b moved"
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    error = cases[2].find("error")
    assert error is not None and error.text == "line 1: not JSON"


def test_report_rejected_path_is_a_failed_case_and_a_passing_one_is_not() -> None:
    report = Report(
        base="a" * 40,
        head="b" * 40,
        backend="python",
        paths=(
            PathVerdict("libs/a/README.md", Lane.DOCS, Verdict.PASS),
            PathVerdict("libs/a/testdata/x.json", Lane.FIXTURE, Verdict.REJECT),
        ),
        findings=(
            Finding(
                Verdict.REJECT,
                Lane.FIXTURE,
                "libs/a/testdata/x.json",
                "fixture digest moved with no human note",
                package="libs/a",
            ),
            Finding(Verdict.REJECT, Lane.PROPERTY, None, "relation regressed", row="r1"),
        ),
    )
    suite = ET.fromstring(render(report).split("\n", 1)[1]).find("testsuite")
    assert suite is not None
    assert suite.attrib["failures"] == "2"
    assert suite.attrib["name"] == f"oracle-gate check {'a' * 12}..{'b' * 12}: reject"
    by_name = {case.attrib["name"]: case for case in suite.findall("testcase")}
    assert by_name["libs/a/README.md"].find("failure") is None
    moved = by_name["libs/a/testdata/x.json"].find("failure")
    assert (
        moved is not None and moved.attrib["message"] == "fixture digest moved with no human note"
    )
    assert by_name["libs/a/testdata/x.json"].attrib["classname"] == "oracle-gate.fixture"
    row = by_name["r1"].find("failure")
    assert row is not None and row.attrib["message"] == "relation regressed"


def test_check_format_junit_is_registered_and_names_the_edited_fixture(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write("libs/codec/testdata/golden.txt", "level=4\nname=gate\n")
    head = repo.commit("edit golden fixture")
    report = repo.gate(base, head, replay=False)
    xml = FORMATS["junit"](report)
    suite = ET.fromstring(xml.split("\n", 1)[1]).find("testsuite")
    assert suite is not None
    failed = [
        case.attrib["name"]
        for case in suite.findall("testcase")
        if case.find("failure") is not None
    ]
    assert "libs/codec/testdata/golden.txt" in failed
