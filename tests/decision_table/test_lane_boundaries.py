"""Package boundaries cannot be moved by a patch: files a package loses are a matrix narrowing."""

from __future__ import annotations

import pytest

from gitrepo import TODAY, GitRepo
from oracle_gate.model import Lane, Verdict
from oracle_gate.pipeline import Request, stage

PKG = "libs/intervals"
MATRIX = f"{PKG}/invariants.yaml"
NESTED = 'version: 1\ntests: ["test_*.py"]\nrows: []\n'


@pytest.mark.parametrize("folder", ["tests", "testdata", "intervals"])
def test_new_nested_matrix_narrows_the_outer_package(
    example_repo: tuple[GitRepo, str], folder: str
) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/{folder}/invariants.yaml", NESTED)
    head = repo.commit("a nested package")
    report = repo.judge_paths(base, head)
    assert report.verdict_of(MATRIX) is Verdict.REJECT
    reasons = " ".join(f.reason for f in report.findings if f.path == MATRIX)
    assert f"now belong to {PKG}/{folder}" in reasons
    rows = {
        (s.package, s.row_id) for s in stage(Request(repo.path, base, head, TODAY)).selection.rows
    }
    assert (PKG, "merge_ranges_contract") in rows  # the outer rows still run


def test_nested_matrix_with_a_note_is_human_noted(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/tests/invariants.yaml", NESTED)
    repo.note(PKG, base, "invariants.yaml")
    report = repo.judge_paths(base, repo.commit("reviewed split"))
    assert report.verdict_of(MATRIX) is Verdict.HUMAN_NOTED


def test_deleted_matrix_is_a_reject_not_a_config_error(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.remove(MATRIX)  # services/scheduler still names it in deps
    report = repo.judge_paths(base, repo.commit("no more matrix"))
    entry = next(p for p in report.paths if p.path == MATRIX)
    assert (entry.lane, entry.verdict) == (Lane.MATRIX, Verdict.REJECT)
    assert report.exit_code == 1


def test_matrix_moved_into_a_subfolder_is_a_reject(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.git("mv", MATRIX, f"{PKG}/intervals/invariants.yaml")
    report = repo.judge_paths(base, repo.commit("move the matrix"))
    assert report.verdict_of(MATRIX) is Verdict.REJECT
    assert report.exit_code == 1


GATE = """\
load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")

oracle_gate(
    name = "oracle_gate",
    rows = [invariant(id = "merge", globs = ["ranges/*.py"], properties = ["props.py:p"])],
)
"""


def test_bazelignore_hiding_a_gate_narrows_it(repo: GitRepo) -> None:
    repo.write("libs/ranges/BUILD.bazel", GATE)
    repo.write("libs/ranges/ranges/__init__.py", "def merge(x):\n    return x\n")
    repo.write("libs/ranges/props.py", "def p(x):\n    pass\n")
    base = repo.commit("a gate")
    repo.write(".bazelignore", "libs/ranges\n")
    report = repo.judge_paths(base, repo.commit("hide the gate from Bazel"))
    assert report.verdict_of("libs/ranges/BUILD.bazel") is Verdict.REJECT
    assert report.verdict_of(".bazelignore") is Verdict.REJECT


def test_new_package_in_a_new_directory_moves_no_boundary(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(
        "libs/newpkg/invariants.yaml",
        'version: 1\ntests: ["tests/test_*.py"]\nrows:\n'
        '  - id: r\n    globs: ["newpkg/*.py"]\n    properties: ["props.py:p"]\n',
    )
    report = repo.judge_paths(base, repo.commit("a new package"))
    assert report.verdict_of("libs/newpkg/invariants.yaml") is Verdict.PASS
    assert not any("now belong to" in f.reason for f in report.findings)
