"""SPEC §4 matrix lane for Bazel packages: the oracle_gate(...) call in BUILD is the matrix."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict

PKG = "libs/ranges"
BUILD = f"{PKG}/BUILD.bazel"
DECLARATION = """\
load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")

py_library(name = "lib", srcs = glob(["ranges/*.py"]))

oracle_gate(
    name = "oracle_gate",
    rows = [
        invariant(id = "merge", globs = ["ranges/*.py"]),
        invariant(id = "split", globs = ["ranges/split.py"]),
    ],
    owners = ["@ranges-team"],
)
"""


def _package(repo: GitRepo, declaration: str = DECLARATION) -> str:
    repo.write(BUILD, declaration)
    repo.write(f"{PKG}/ranges/__init__.py", "def merge(x):\n    return x\n")
    repo.write(f"{PKG}/ranges/split.py", "def split(x):\n    return x\n")
    return repo.commit("a Bazel package with a gate")


def test_gate_row_removed_from_build_without_note_is_rejected(repo: GitRepo) -> None:
    base = _package(repo)
    repo.replace(BUILD, '        invariant(id = "split", globs = ["ranges/split.py"]),\n', "")
    report = repo.judge_paths(base, repo.commit("drop a row"))
    (laned,) = report.paths
    assert laned.lane is Lane.MATRIX
    assert report.verdict_of(BUILD) is Verdict.REJECT


def test_gate_row_removed_from_build_with_note_is_human_noted(repo: GitRepo) -> None:
    base = _package(repo)
    repo.replace(BUILD, '        invariant(id = "split", globs = ["ranges/split.py"]),\n', "")
    repo.note(PKG, base, "BUILD.bazel")
    report = repo.gate(base, repo.commit("drop a row, noted"))
    assert report.verdict_of(BUILD) is Verdict.HUMAN_NOTED
    assert "@ranges-team" in report.reviewers()


def test_gate_call_removed_from_build_without_note_is_rejected(repo: GitRepo) -> None:
    base = _package(repo)
    repo.write(BUILD, DECLARATION.split("\noracle_gate(")[0])
    report = repo.judge_paths(base, repo.commit("drop the gate"))
    assert report.paths[0].lane is Lane.MATRIX
    assert report.verdict_of(BUILD) is Verdict.REJECT


def test_gate_widened_in_build_passes(repo: GitRepo) -> None:
    base = _package(repo)
    repo.replace(
        BUILD,
        'globs = ["ranges/split.py"]',
        'globs = ["ranges/split.py", "ranges/x.py"], properties = ["props.py:p"]',
    )
    repo.write(f"{PKG}/props.py", "def p(x):\n    pass\n")
    report = repo.judge_paths(base, repo.commit("widen a row, with a property"))
    assert report.paths[0].lane is Lane.MATRIX
    assert report.verdict_of(BUILD) is Verdict.PASS


def test_gate_row_without_oracle_widened_in_build_is_rejected(repo: GitRepo) -> None:
    base = _package(repo)
    repo.replace(BUILD, 'globs = ["ranges/split.py"]', 'globs = ["ranges/split.py", "ranges/x.py"]')
    report = repo.judge_paths(base, repo.commit("widen a row that checks nothing"))
    assert report.verdict_of(BUILD) is Verdict.REJECT
    assert any("decorative row 'split'" in f.reason for f in report.findings)


def test_build_file_without_a_gate_stays_harness(repo: GitRepo) -> None:
    base = _package(repo)
    repo.write("tools/BUILD.bazel", 'py_binary(name = "t", srcs = ["t.py"])\n')
    base = repo.commit("a tool")
    repo.write("tools/BUILD.bazel", 'py_binary(name = "t", srcs = ["t.py"], args = ["-v"])\n')
    report = repo.gate(base, repo.commit("edit the tool's BUILD"))
    assert report.paths[0].lane is Lane.HARNESS


_OWNERS = '    owners = ["@ranges-team"],\n'


@pytest.mark.parametrize(
    ("attribute", "moved"),
    [
        ('tags = ["manual"]', True),  # out of `bazel test //...`
        ('target_compatible_with = ["@platforms//:incompatible"]', True),  # skipped
        ("flaky = True", True),  # a failure retried until it passes
        ('env = {"HYPOTHESIS_PROFILE": "ci"}', True),
        ('tags = ["man" + "ual"]', True),
        ("**EXTRA", True),  # a loaded dict the reader does not know: any attribute
        # the honest neighbours: how long it may take, who may depend on it
        ('size = "large"', False),
        ('timeout = "long"', False),
        ('visibility = ["//visibility:private"]', False),
    ],
)
def test_a_gate_test_attribute_that_decides_whether_bazel_runs_it_is_the_matrix(
    repo: GitRepo, attribute: str, moved: bool
) -> None:
    repo.write("tools/BUILD", "")
    repo.write("tools/defs.bzl", 'EXTRA = {"tags": ["manual"]}\n')
    loads = 'load("//tools:defs.bzl", "EXTRA")\npy_library'
    base = _package(repo, DECLARATION.replace("\npy_library", loads))
    repo.replace(BUILD, _OWNERS, f"{_OWNERS}    {attribute},\n")
    report = repo.judge_paths(base, repo.commit(attribute))
    assert report.paths[0].lane is Lane.MATRIX
    assert (report.verdict_of(BUILD) is Verdict.REJECT) is moved, report.findings
    if moved:
        repo.note(PKG, base, "BUILD.bazel")
        noted = repo.judge_paths(base, repo.commit("noted"))
        assert noted.verdict_of(BUILD) is Verdict.HUMAN_NOTED
