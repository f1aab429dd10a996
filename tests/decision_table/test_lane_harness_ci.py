"""CI files, Makefiles and dependency lists: harness only where they can stop or change the run
of oracle-gate itself (its job, what that job needs and reads). Each rule: the edit that must
be rejected, and the honest CI edit beside it that must merge."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict
from oracle_gate.report import Report
from reports import lane_and_verdict

WORKFLOW = ".github/workflows/ci.yml"
CI = """name: ci
on:
  pull_request:
  merge_group:
jobs:
  tests:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python: ["3.10", "3.11"]
    steps:
      - uses: actions/checkout@v3
      - uses: actions/setup-python@v4
        with:
          python-version: ${{ matrix.python }}
      - run: pip install -r requirements/test.txt && pytest
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v3
  gate:
    needs: [build]
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - uses: actions/setup-python@v5
        with:
          python-version-file: .python-version
      - run: pip install -r requirements/gate.txt
      - run: oracle-gate check --base "$BASE"
"""
FILES = {
    WORKFLOW: CI,
    "requirements/test.txt": "pytest==8.0\n",
    "requirements/gate.txt": "oracle-gate==0.1.0\n",
    ".python-version": "3.12\n",
}


def _ci_repo(example_repo: tuple[GitRepo, str], files: dict[str, str] = FILES) -> GitRepo:
    repo, _ = example_repo
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("ci")
    return repo


def _edit(repo: GitRepo, path: str, old: str, new: str) -> tuple[str, Report]:
    base = repo.git("rev-parse", "HEAD").strip()
    if old:
        repo.replace(path, old, new)
    else:
        repo.write(path, new)
    return base, repo.judge_paths(base, repo.commit(f"edit {path}"))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('python: ["3.10", "3.11"]', 'python: ["3.11", "3.12", "3.13"]'),
        ("      - uses: actions/checkout@v3\n      - uses: actions/setup-python@v4",
         "      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5"),
        ("requirements/test.txt && pytest", "requirements/test.txt && pytest -x"),
        ("name: ci", "name: continuous integration"),
    ],
)  # fmt: skip
def test_workflow_edit_outside_the_gate_job_is_other_and_merges(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo = _ci_repo(example_repo)
    base, report = _edit(repo, WORKFLOW, old, new)
    assert lane_and_verdict(report, WORKFLOW) == (Lane.OTHER, Verdict.PASS)
    assert "only jobs that do not run oracle-gate changed" in report.findings[0].reason
    assert repo.gate(base).verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('      - run: oracle-gate check --base "$BASE"\n', ""),  # the gate step dropped
        ('check --base "$BASE"', 'check --base "$BASE" || true'),  # weakened
        ("fetch-depth: 0", "fetch-depth: 1"),  # the gate job's own checkout
        ("python-version-file: .python-version", "python-version: '3.8'"),
        ("  build:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v3\n",
         "  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pip install evil\n"),
        ("  pull_request:\n", ""),  # the workflow no longer runs on pull requests
    ],
)  # fmt: skip
def test_workflow_edit_to_the_gate_job_what_it_needs_or_its_triggers_is_harness(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo = _ci_repo(example_repo)
    _, report = _edit(repo, WORKFLOW, old, new)
    assert lane_and_verdict(report, WORKFLOW) == (Lane.HARNESS, Verdict.REJECT)
    assert "the part that runs oracle-gate changed" in report.findings[0].reason


def test_workflow_that_never_runs_the_gate_is_other_even_when_new(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(
        ".github/workflows/docs.yml", "on: push\njobs:\n  d:\n    steps:\n      - run: make docs\n"
    )
    report = repo.judge_paths(base, repo.commit("docs workflow"))
    assert lane_and_verdict(report, ".github/workflows/docs.yml") == (Lane.OTHER, Verdict.PASS)


def test_workflow_that_does_not_parse_is_harness(example_repo: tuple[GitRepo, str]) -> None:
    repo = _ci_repo(example_repo)
    _, report = _edit(repo, WORKFLOW, "jobs:\n", "jobs: [\n")
    assert lane_and_verdict(report, WORKFLOW) == (Lane.HARNESS, Verdict.REJECT)


@pytest.mark.parametrize(
    ("path", "harness"),
    [
        ("requirements/gate.txt", True),  # the gate job installs it
        (".python-version", True),  # the gate job's interpreter
        ("requirements/test.txt", False),  # only the tests job installs it
    ],
)
def test_files_the_gate_job_reads_are_harness_and_the_others_are_not(
    example_repo: tuple[GitRepo, str], path: str, harness: bool
) -> None:
    repo = _ci_repo(example_repo)
    base, report = _edit(repo, path, "", "pytest-randomly==3.0\n")
    if harness:
        assert lane_and_verdict(report, path) == (Lane.HARNESS, Verdict.REJECT)
        assert f"read by the CI job that runs oracle-gate ({WORKFLOW})" in report.findings[0].reason
    else:
        assert lane_and_verdict(report, path) == (Lane.OTHER, Verdict.PASS)
        assert repo.gate(base).verdict is Verdict.PASS


@pytest.mark.parametrize(
    "path", ["requirements.txt", "libs/intervals/requirements-dev.txt", "constraints.txt",
             "uv.lock", "poetry.lock", "pylock.toml", "docs/requirements.txt", "tox.toml"],
)  # fmt: skip
def test_dependency_lists_no_gate_job_reads_are_other(
    example_repo: tuple[GitRepo, str], path: str
) -> None:
    repo, base = example_repo
    repo.write(path, "pytest==4.0\n")
    report = repo.judge_paths(base, repo.commit("pin"))
    assert lane_and_verdict(report, path) == (Lane.OTHER, Verdict.PASS)


def test_dependency_list_in_a_bazel_workspace_is_harness(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.write("MODULE.bazel", 'module(name = "m")\n')
    base = repo.commit("a Bazel workspace")
    repo.write("requirements_lock.txt", "pytest==4.0\n")
    report = repo.judge_paths(base, repo.commit("pin"))
    assert lane_and_verdict(report, "requirements_lock.txt") == (Lane.HARNESS, Verdict.REJECT)


MAKEFILE = "test:\n\tpytest\n\ngate:\n\toracle-gate check --base origin/main\n"


def test_makefile_that_runs_the_gate_is_harness_and_one_that_does_not_is_other(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo = _ci_repo(example_repo, {"Makefile": "test:\n\tpytest\n"})
    base, report = _edit(repo, "Makefile", "pytest", "pytest -x")
    assert lane_and_verdict(report, "Makefile") == (Lane.OTHER, Verdict.PASS)
    assert repo.gate(base).verdict is Verdict.PASS
    repo.write("Makefile", MAKEFILE)
    repo.commit("a gate target")
    _, report = _edit(repo, "Makefile", "oracle-gate check --base origin/main", "true")
    assert lane_and_verdict(report, "Makefile") == (Lane.HARNESS, Verdict.REJECT)


def test_workflow_job_that_runs_the_gate_through_make_is_the_gate_job(
    example_repo: tuple[GitRepo, str],
) -> None:
    workflow = "on: [pull_request]\njobs:\n  g:\n    steps:\n      - run: make gate\n"
    repo = _ci_repo(example_repo, {WORKFLOW: workflow, "Makefile": MAKEFILE})
    _, report = _edit(repo, WORKFLOW, "- run: make gate\n", "- run: make test\n")
    assert lane_and_verdict(report, WORKFLOW) == (Lane.HARNESS, Verdict.REJECT)


@pytest.mark.parametrize(
    ("text", "lane"),
    [
        ("language: python\npython: ['3.8']\nscript: pytest\n", Lane.OTHER),
        ("language: python\npython: ['3.8']\nscript: oracle-gate check\n", Lane.HARNESS),
    ],
)
def test_other_ci_systems_are_harness_only_where_they_run_the_gate(
    example_repo: tuple[GitRepo, str], text: str, lane: Lane
) -> None:
    repo = _ci_repo(example_repo, {".travis.yml": text})
    _, report = _edit(repo, ".travis.yml", "['3.8']", "['3.8', '3.9']")
    assert lane_and_verdict(report, ".travis.yml")[0] is lane


def test_composite_action_the_gate_job_uses_is_harness(example_repo: tuple[GitRepo, str]) -> None:
    workflow = CI.replace("      - run: pip install -r requirements/gate.txt\n",
                          "      - uses: ./.github/actions/setup\n")  # fmt: skip
    action = (
        "runs:\n  using: composite\n  steps:\n    - run: pip install pytest\n      shell: bash\n"
    )
    path = ".github/actions/setup/action.yml"
    repo = _ci_repo(example_repo, {WORKFLOW: workflow, path: action})
    _, report = _edit(repo, path, "pip install pytest", "pip install pytest pytest-randomly")
    assert lane_and_verdict(report, path) == (Lane.HARNESS, Verdict.REJECT)
    # The same action, used by no job that runs the gate (in parent or head), is other.
    repo.write(WORKFLOW, CI)
    repo.commit("the gate job installs from requirements/gate.txt again")
    _, report = _edit(repo, path, "pytest-randomly", "pytest-xdist")
    assert lane_and_verdict(report, path) == (Lane.OTHER, Verdict.PASS)


def test_job_that_runs_make_in_a_directory_whose_makefile_runs_the_gate_is_the_gate_job(
    example_repo: tuple[GitRepo, str],
) -> None:
    workflow = "on: [pull_request]\njobs:\n  g:\n    steps:\n      - run: make -C tools gate\n"
    repo = _ci_repo(example_repo, {WORKFLOW: workflow, "tools/Makefile": MAKEFILE})
    _, report = _edit(repo, WORKFLOW, "make -C tools gate", "make -C tools test")
    assert lane_and_verdict(report, WORKFLOW) == (Lane.HARNESS, Verdict.REJECT)
    assert "(job g)" in report.findings[0].reason


@pytest.mark.parametrize("settings", ["", 'tooling = ["scripts/**"]\n'])
def test_a_script_the_gate_job_runs_is_harness_wherever_it_lives(
    example_repo: tuple[GitRepo, str], settings: str
) -> None:
    run = "      - run: python .github/scripts/env.py && sh scripts/env.sh\n"
    workflow = CI.replace("      - run: pip install -r requirements/gate.txt\n", run)
    scripts = {".github/scripts/env.py": "print(1)\n", "scripts/env.sh": "pip install x\n"}
    files = {**FILES, WORKFLOW: workflow, **scripts, "oracle-gate.toml": settings}
    repo = _ci_repo(example_repo, files)
    for path in (".github/scripts/env.py", "scripts/env.sh"):
        _, report = _edit(repo, path, "", "pip install pytest-randomly\n")
        assert lane_and_verdict(report, path) == (Lane.HARNESS, Verdict.REJECT)
        assert f"read by the CI job that runs oracle-gate ({WORKFLOW})" in report.findings[0].reason
    # The same script, which no job running the gate reads, is the platform's or tooling.
    repo.write(WORKFLOW, CI)
    repo.commit("the gate job no longer runs them")
    _, report = _edit(repo, ".github/scripts/env.py", "", "print(2)\n")
    assert lane_and_verdict(report, ".github/scripts/env.py") == (Lane.OTHER, Verdict.PASS)


GITLAB = """stages: [test]
.setup:
  before_script: [pip install -r requirements/gate.txt]
tests:
  image: python:3.11
  script:
    - !reference [.setup, before_script]
    - pytest
gate:
  extends: .setup
  script:
    - oracle-gate check
"""


@pytest.mark.parametrize(
    ("old", "new", "lane"),
    [
        ("python:3.11", "python:3.12", Lane.OTHER),  # another job, GitLab tags and all
        ("    - oracle-gate check\n", "    - 'true'\n", Lane.HARNESS),  # the gate job
        ("pip install -r requirements/gate.txt", "pip install evil", Lane.HARNESS),  # it extends
        ("stages: [test]", "stages: [test, deploy]", Lane.HARNESS),  # what every job runs with
    ],
)
def test_gitlab_ci_is_judged_job_by_job(
    example_repo: tuple[GitRepo, str], old: str, new: str, lane: Lane
) -> None:
    repo = _ci_repo(example_repo, {**FILES, ".gitlab-ci.yml": GITLAB})
    _, report = _edit(repo, ".gitlab-ci.yml", old, new)
    assert lane_and_verdict(report, ".gitlab-ci.yml")[0] is lane


def test_gitlab_include_of_the_file_that_runs_the_gate_is_harness(
    example_repo: tuple[GitRepo, str],
) -> None:
    files = {".gitlab-ci.yml": "include: .gitlab/gate.yml\ntests:\n  script: [pytest]\n",
             ".gitlab/gate.yml": "gate:\n  script: [oracle-gate check]\n"}  # fmt: skip
    repo = _ci_repo(example_repo, files)
    _, report = _edit(repo, ".gitlab-ci.yml", "include: .gitlab/gate.yml\n", "")
    assert lane_and_verdict(report, ".gitlab-ci.yml") == (Lane.HARNESS, Verdict.REJECT)
