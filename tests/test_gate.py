"""The whole check: git edge cases, report formats, determinism."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitrepo import TODAY, GitRepo
from oracle_gate.cli import main
from oracle_gate.config.owners import CodeOwners, read_codeowners
from oracle_gate.model import Verdict
from oracle_gate.repo.trees import GitTree


def test_shallow_history_is_a_gate_error_with_the_fix(
    example_repo: tuple[GitRepo, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = example_repo
    repo.append("README.md", "\nx\n")
    repo.commit("second")
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo.path}", str(clone)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert main(["check", "--repo", str(clone), "--base", base]) == 2
    err = capsys.readouterr().err
    assert "shallow clone" in err
    assert "git fetch --deepen" in err


def test_json_report_has_a_versioned_schema_and_is_deterministic(
    example_repo: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = example_repo
    repo.write("libs/codec/codec_fast.py", "X = 1\n")
    repo.append("README.md", "\nx\n")
    head = repo.commit("patch")
    outputs = []
    for _ in range(2):
        code = main(
            [
                "check",
                "--repo",
                str(repo.path),
                "--base",
                base,
                "--head",
                head,
                "--format",
                "json",
                "--today",
                TODAY.isoformat(),
            ]
        )
        assert code == 1
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    document = json.loads(outputs[0])
    assert (document["schema"], document["version"]) == ("oracle-gate/report", 1)
    assert document["verdict"] == "reject"
    # the package is selected, so its parent tests are replayed (and reported) too
    assert [p["path"] for p in document["paths"]] == [
        "README.md",
        "libs/codec/codec_fast.py",
        "libs/codec/tests/test_codec.py",
    ]
    assert {f["verdict"] for f in document["findings"]} == {"pass", "reject"}


def test_text_report_has_the_three_columns(
    example_repo: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = example_repo
    repo.write("libs/intervals/testdata/ranges/unsorted.json", "{}\n")
    head = repo.commit("fixture")
    assert main(["check", "--repo", str(repo.path), "--base", base, "--head", head]) == 1
    out = capsys.readouterr().out
    assert "PATH" in out and "LANE" in out and "VERDICT" in out
    assert "libs/intervals/testdata/ranges/unsorted.json  fixture" in out
    assert out.rstrip().splitlines()[-1].startswith("verdict: REJECT")


def test_merge_group_environment_supplies_the_base(
    example_repo: tuple[GitRepo, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base = example_repo
    repo.append("README.md", "\nx\n")
    repo.commit("docs")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"merge_group": {"base_sha": base}}))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "merge_group")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert main(["check", "--repo", str(repo.path)]) == 0


def test_codeowners_last_matching_rule_wins(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    owners = read_codeowners(GitTree(repo.path, base))
    assert owners.owners_of("libs/intervals/testdata/a.json") == ("@intervals-team",)
    assert owners.owners_of("services/scheduler/x.py") == ("@scheduling-team",)
    assert owners.owners_of("README.md") == ()
    assert CodeOwners(()).owners_of("x") == ()


def test_markdown_and_sarif_name_the_rejected_path(
    example_repo: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = example_repo
    repo.write("libs/codec/codec_fast.py", "X = 1\n")
    head = repo.commit("unguarded module")
    args = ["check", "--repo", str(repo.path), "--base", base, "--head", head, "--format"]
    assert main([*args, "markdown"]) == 1
    markdown = capsys.readouterr().out
    assert markdown.startswith("## oracle-gate: ❌ reject")
    assert "| `libs/codec/codec_fast.py` | production | ❌ reject |" in markdown
    assert main([*args, "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    (result,) = sarif["runs"][0]["results"]
    assert result["level"] == "error"
    assert result["ruleId"] == "oracle-gate/production"
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert location == "libs/codec/codec_fast.py"


def test_judging_paths_only_skips_the_rows_that_catch_a_broken_module(
    example_repo: tuple[GitRepo, str],
) -> None:
    """``run_rows=False`` judges paths and packages only; the rows are what catch this."""
    repo, base = example_repo
    repo.replace("libs/intervals/intervals/__init__.py", "in sorted(ranges):", "in ranges:")
    head = repo.commit("drop the sort")
    paths_only = repo.judge_paths(base, head)
    assert paths_only.verdict is Verdict.PASS
    assert not [f for f in paths_only.findings if f.row]
    full = repo.gate(base, head, replay=False)
    assert full.verdict is Verdict.REJECT
    assert {f.row for f in full.findings if f.verdict is Verdict.REJECT} >= {
        "merge_ranges_contract"
    }
