"""SPEC §4: the matrix, the lock and the oracle's own code (properties, partitions, relations)."""

from __future__ import annotations

import json

import pytest

from gitrepo import GitRepo
from oracle_gate.errors import LockError
from oracle_gate.model import Lane, Verdict

PKG = "libs/intervals"
MATRIX = f"{PKG}/invariants.yaml"
LOCK = f"{PKG}/oracle_gate.lock"


@pytest.mark.parametrize("module", ["props.py", "partitions.py", "relations.py"])
def test_oracle_code_changed_without_note_is_rejected(
    example_repo: tuple[GitRepo, str], module: str
) -> None:
    repo, base = example_repo
    repo.append(f"{PKG}/{module}", "\nRELAXED = True\n")
    report = repo.judge_paths(base, repo.commit("touch oracle code"))
    assert report.paths[0].lane is Lane.PROPERTY
    assert report.verdict_of(f"{PKG}/{module}") is Verdict.REJECT


def test_oracle_code_changed_with_note_is_human_noted(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.append(f"{PKG}/props.py", "\nREVIEWED_TWEAK = True\n")
    repo.note(PKG, base, "props.py")
    report = repo.gate(base, repo.commit("noted"))
    assert report.verdict_of(f"{PKG}/props.py") is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('globs: ["intervals/**/*.py"]', 'globs: ["intervals/core.py"]'),
        ('      - "props.py:prop_permutation_invariant"\n', ""),
        ("examples: 80", "examples: 5"),
        ('tests: ["tests/**/test_*.py"]', 'tests: ["tests/test_none.py"]'),
    ],
)
def test_matrix_narrowed_without_note_is_rejected(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, base = example_repo
    repo.replace(MATRIX, old, new)
    report = repo.judge_paths(base, repo.commit("narrow"))
    assert report.verdict_of(MATRIX) is Verdict.REJECT
    assert "matrix narrowed" in " ".join(f.reason for f in report.findings)


def test_matrix_row_removed_without_note_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(
        MATRIX,
        'version: 1\nowners: ["@intervals-team"]\ntests: ["tests/**/test_*.py"]\n'
        'fixtures: ["testdata/**"]\nrows: []\n',
    )
    report = repo.judge_paths(base, repo.commit("drop rows"))
    assert "row 'merge_ranges_contract' removed" in report.findings[0].reason


def test_matrix_widened_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(MATRIX, "examples: 80", "examples: 200")
    repo.append(
        MATRIX,
        '  - id: extra_row\n    globs: ["tools/*.py"]\n'
        '    properties: ["props.py:prop_idempotent"]\n',
    )
    report = repo.judge_paths(base, repo.commit("widen"))
    assert report.verdict_of(MATRIX) is Verdict.PASS


def test_lock_entry_edited_without_note_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    lock = json.loads(repo.read(LOCK))
    lock["fixtures"]["testdata/ranges/unsorted.json"] = "0" * 64
    repo.write(LOCK, json.dumps(lock, indent=2, sort_keys=True) + "\n")
    report = repo.judge_paths(base, repo.commit("edit lock"))
    assert report.verdict_of(LOCK) is Verdict.REJECT


def test_lock_reformatted_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(LOCK, json.dumps(json.loads(repo.read(LOCK))) + "\n")  # one line, same entries
    report = repo.gate(base, repo.commit("reformat lock"))
    assert report.verdict is Verdict.PASS


def test_stale_lock_in_head_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/testdata/ranges/extra.json", "{}\n")
    repo.note(PKG, base, "testdata/ranges/extra.json")  # noted, but the lock was not rewritten
    report = repo.judge_paths(base, repo.commit("forgot relock"))
    assert report.verdict_of(f"{PKG}/testdata/ranges/extra.json") is Verdict.HUMAN_NOTED
    assert any("lock does not match the head tree" in f.reason for f in report.findings)
    assert report.verdict is Verdict.REJECT


def test_lock_removed_from_a_locked_repo_is_a_gate_error(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.remove(LOCK)
    base = repo.commit("no lock (parent)")
    repo.replace(f"{PKG}/intervals/__init__.py", "merged = []", "merged = []  # x")
    head = repo.commit("patch")
    with pytest.raises(LockError, match="has no lock at parent"):
        repo.gate(base, head)


def test_lock_introduced_by_the_patch_passes(repo: GitRepo) -> None:
    repo.commit_example(PKG)
    repo.remove(LOCK)
    base = repo.commit("unlocked repo")
    repo.relock(PKG)
    report = repo.gate(base, repo.commit("introduce lock"))
    assert report.verdict is Verdict.PASS


def test_docs_only_patch_passes_without_running_rows(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.append("README.md", "\nmore words\n")
    repo.append(f"{PKG}/ORACLE_CHANGELOG.md", "\nnothing to see\n")
    report = repo.gate(base, repo.commit("docs"))
    assert report.docs_only
    assert report.verdict is Verdict.PASS


def test_docs_plus_code_is_not_docs_only(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.append("README.md", "\nmore words\n")
    repo.replace(f"{PKG}/intervals/__init__.py", "merged = []", "merged = []  # x")
    assert not repo.judge_paths(base, repo.commit("docs and code")).docs_only


@pytest.mark.parametrize("module", ["props.py", "partitions.py", "relations.py"])
def test_oracle_code_comment_only_edit_passes(
    example_repo: tuple[GitRepo, str], module: str
) -> None:
    repo, base = example_repo
    repo.append(f"{PKG}/{module}", "\n# why these cases: see the design notes\n")
    report = repo.judge_paths(base, repo.commit("comment in oracle code"))
    assert (report.paths[0].lane, report.verdict) == (Lane.PROPERTY, Verdict.PASS)


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("props.py", "st.integers(0, 50)", "st.integers(0, 1)"),  # a strategy, not a def
        ("partitions.py", '"P001"', '"P001x"'),
        ("relations.py", '"compare": "equal"', '"compare": lambda out, x: True'),
    ],
)
def test_oracle_code_module_level_edit_is_rejected(
    example_repo: tuple[GitRepo, str], module: str, old: str, new: str
) -> None:
    repo, base = example_repo
    repo.replace(f"{PKG}/{module}", old, new)
    report = repo.judge_paths(base, repo.commit("weaken the oracle outside any def"))
    assert report.verdict_of(f"{PKG}/{module}") is Verdict.REJECT
