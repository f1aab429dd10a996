"""The integration recipes work as written: docs/merge-queue.md's CI jobs and the pre-commit hook.

Each CI test parses the recipe's YAML and runs its ``oracle-gate`` lines, as the
CI system would (shell options and environment), against a fixture repository,
for a patch that must merge and one that must be rejected.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitrepo import GitRepo, oracle_gate_on_path, run

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "merge-queue.md"
FIXTURE = "libs/intervals/testdata/ranges/unsorted.json"


def _yaml_block(heading: str) -> Any:
    """The first ```yaml block under the ``### heading`` of docs/merge-queue.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"### {heading}\n", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None, heading
    return yaml.safe_load(block.group(1))


@pytest.fixture
def shim(tmp_path: Path) -> dict[str, str]:
    return oracle_gate_on_path(tmp_path / "bin")


def _patch(repo: GitRepo, reject: bool) -> None:
    if reject:
        repo.write(FIXTURE, "[[0, 1]]\n")
    else:
        repo.append("README.md", "\nA line of documentation.\n")
    repo.commit("agent patch")


def _bash(script: str, cwd: Path, env: dict[str, str]) -> int:
    # GitHub's and GitLab's default shells stop at the first failing command.
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "internal error" not in done.stderr, done.stderr
    return done.returncode


def _github() -> dict[str, Any]:
    workflow: dict[str, Any] = _yaml_block("GitHub Actions: pull requests and the merge queue")
    return workflow


def _step(workflow: dict[str, Any], name: str) -> dict[str, Any]:
    steps = workflow["jobs"]["oracle-gate"]["steps"]
    return next(step for step in steps if step.get("name") == name)


def test_github_workflow_runs_on_pull_requests_and_merge_groups_and_uploads_reports() -> None:
    workflow = _github()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert set(triggers) == {"pull_request", "merge_group"}
    assert workflow["permissions"]["security-events"] == "write"
    checkout = workflow["jobs"]["oracle-gate"]["steps"][0]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["fetch-depth"] == 0
    junit = _step(workflow, "Upload the JUnit report")
    assert junit["uses"].startswith("actions/upload-artifact@")
    assert junit["with"]["path"] == "oracle-gate.xml" and "always()" in junit["if"]
    sarif = _step(workflow, "Upload the SARIF report")
    assert sarif["uses"].startswith("github/codeql-action/upload-sarif@")
    assert sarif["with"]["sarif_file"] == "oracle-gate.sarif" and "always()" in sarif["if"]
    assert "GITHUB_STEP_SUMMARY" in _step(workflow, "Run the gate")["run"]


@pytest.mark.parametrize("event", ["merge_group", "pull_request"])
@pytest.mark.parametrize("reject", [False, True], ids=["merge", "reject"])
def test_github_gate_step_judges_the_patch_and_writes_every_report(
    example_repo: tuple[GitRepo, str],
    shim: dict[str, str],
    tmp_path: Path,
    event: str,
    reject: bool,
) -> None:
    repo, base = example_repo
    _patch(repo, reject)
    step = _step(_github(), "Run the gate")
    assert "oracle-gate check" in step["run"]
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps({"merge_group": {"base_sha": base}}))
    summary = tmp_path / "summary.md"
    env = {
        **shim,
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(event_file),
        "GITHUB_STEP_SUMMARY": str(summary),
        # What ${{ github.event.pull_request.base.sha }} expands to on each event.
        "PR_BASE": base if event == "pull_request" else "",
    }
    assert set(step["env"]) == {"PR_BASE"}
    code = _bash(step["run"], repo.path, env)
    assert code == (1 if reject else 0)
    assert summary.read_text().startswith(f"## oracle-gate: {'❌' if reject else '✅'}")
    suite = ET.parse(repo.path / "oracle-gate.xml").getroot()[0]
    assert (suite.get("failures") != "0") is reject
    sarif = json.loads((repo.path / "oracle-gate.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert any(r["level"] == "error" for r in results) is reject


def _gitlab() -> dict[str, Any]:
    job: dict[str, Any] = _yaml_block("GitLab: merge requests and merge trains")["oracle-gate"]
    return job


def test_gitlab_job_runs_in_merge_trains_and_reports_junit() -> None:
    job = _gitlab()
    conditions = [rule["if"] for rule in job["rules"]]
    assert '$CI_MERGE_REQUEST_EVENT_TYPE == "merge_train"' in conditions
    assert '$CI_PIPELINE_SOURCE == "merge_request_event"' in conditions
    assert job["variables"]["GIT_DEPTH"] == "0"
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == "oracle-gate.xml"


@pytest.mark.parametrize("reject", [False, True], ids=["merge", "reject"])
def test_gitlab_job_lines_judge_the_patch_in_a_merge_train(
    example_repo: tuple[GitRepo, str], shim: dict[str, str], reject: bool
) -> None:
    repo, base = example_repo
    _patch(repo, reject)
    lines = [line for line in _gitlab()["script"] if line.startswith("oracle-gate ")]
    assert lines
    env = {
        **shim,
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_EVENT_TYPE": "merge_train",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
    }
    codes = [_bash(line, repo.path, env) for line in lines]
    assert codes == [1 if reject else 0] * len(lines)
    suite = ET.parse(repo.path / "oracle-gate.xml").getroot()[0]
    assert (suite.get("failures") != "0") is reject
    assert (repo.path / "oracle-gate.md").read_text().startswith("## oracle-gate:")


def test_pre_commit_manifest_is_valid_for_pre_commit_itself() -> None:
    clientlib = pytest.importorskip("pre_commit.clientlib")
    (hook,) = clientlib.load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    assert hook["id"] == "oracle-gate"
    assert hook["entry"] == "oracle-gate check --worktree --base @{upstream}"
    assert hook["pass_filenames"] is False and hook["always_run"] is True
    assert hook["language"] == "python"


def _has_worktree_option() -> bool:
    return "--worktree" in run("check", "--help").stdout


@pytest.mark.skipif(
    not _has_worktree_option(), reason="waits for check --worktree (the fail-closed work)"
)
@pytest.mark.skipif(
    os.environ.get("ORACLE_GATE_IMPL") == "python",
    reason="pre-commit installs the hook with pip, which builds the native core; once per CI run",
)
def test_pre_commit_try_repo_runs_the_hook_against_the_upstream_branch(
    example_repo: tuple[GitRepo, str], tmp_path: Path
) -> None:
    pytest.importorskip("pre_commit")
    repo, _base = example_repo
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True, timeout=60)
    repo.git("remote", "add", "origin", str(origin))
    repo.git("push", "-q", "-u", "origin", "main")

    # pip builds the native core of pre-commit's clone: in the target directory the
    # README's install and `cargo test` built in, only this crate compiles again. Built
    # with the dev profile (maturin's PEP 517 arguments): the hook's recipe is under test,
    # not the optimiser, and the release profile's whole-program optimisation of the
    # clone alone costs about 150 s of CPU against about 20 s.
    target = os.environ.get("CARGO_TARGET_DIR") or str(ROOT / "rust" / "target")

    def hook() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pre_commit",
                "try-repo",
                str(ROOT),
                "oracle-gate",
                "--all-files",
            ],
            cwd=repo.path,
            env={**os.environ, "CARGO_TARGET_DIR": target, "MATURIN_PEP517_ARGS": "--profile dev"},
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )

    repo.append("README.md", "\nDocumentation only.\n")
    repo.git("add", "-A")
    honest = hook()
    assert honest.returncode == 0, honest.stdout + honest.stderr
    repo.write(FIXTURE, "[[0, 1]]\n")
    repo.git("add", "-A")
    cheat = hook()
    assert cheat.returncode == 1, cheat.stdout + cheat.stderr
    assert "REJECT" in cheat.stdout and FIXTURE in cheat.stdout
