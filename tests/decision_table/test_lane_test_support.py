"""Test support (helpers, ``__init__.py``, data beside the tests, conftest): locked like tests."""

from __future__ import annotations

import json

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict
from reports import lane_and_verdict

PKG = "libs/intervals"
HELPERS = f"{PKG}/tests/helpers.py"
HELPER_TEXT = "def expected_overlap():\n    return [[0, 7]]\n"


@pytest.fixture
def with_helpers(example_repo: tuple[GitRepo, str]) -> tuple[GitRepo, str]:
    """The example with a trusted tests/helpers.py and tests/data.json, relocked."""
    repo, _ = example_repo
    repo.write(HELPERS, HELPER_TEXT)
    repo.write(f"{PKG}/tests/data.json", "[[0, 7]]\n")
    repo.relock(PKG)
    return repo, repo.commit("helpers")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (f"{PKG}/tests/__init__.py", ""),
        (HELPERS, HELPER_TEXT),
        (f"{PKG}/tests/unit/__init__.py", '"""Unit tests."""\n'),
        (f"{PKG}/tests/cases.json", "[]\n"),
    ],
)
def test_new_test_support_is_an_agent_file(
    example_repo: tuple[GitRepo, str], path: str, text: str
) -> None:
    repo, base = example_repo
    repo.write(path, text)
    report = repo.gate(base, repo.commit("support"))
    assert lane_and_verdict(report, path) == (Lane.AGENT_TEST, Verdict.IGNORED_AS_ORACLE)
    assert report.verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        (HELPERS, "[[0, 7]]", "[[0, 8]]"),  # the expected value a test compares with
        (HELPERS, "return [[0, 7]]", "return merge_ranges([[0, 4], [3, 7]])"),
        (HELPERS, "def expected_overlap", "def _unused():\n    pass\n\n\ndef expected_overlap"),
        (f"{PKG}/tests/data.json", "[[0, 7]]", "[[0, 8]]"),
    ],
)
def test_changed_test_support_without_note_is_rejected(
    with_helpers: tuple[GitRepo, str], path: str, old: str, new: str
) -> None:
    repo, base = with_helpers
    repo.replace(path, old, new)
    report = repo.judge_paths(base, repo.commit("edit support"))
    assert lane_and_verdict(report, path) == (Lane.TEST, Verdict.REJECT)
    assert "test support modified" in " ".join(f.reason for f in report.findings)


def test_deleted_test_support_is_rejected(with_helpers: tuple[GitRepo, str]) -> None:
    repo, base = with_helpers
    repo.remove(HELPERS)
    report = repo.judge_paths(base, repo.commit("drop helpers"))
    assert lane_and_verdict(report, HELPERS) == (Lane.TEST, Verdict.REJECT)


def test_test_support_comment_only_edit_passes(with_helpers: tuple[GitRepo, str]) -> None:
    repo, base = with_helpers
    repo.replace(HELPERS, "return [[0, 7]]", "return [[0, 7]]  # one merged range")
    report = repo.judge_paths(base, repo.commit("comment"))
    assert lane_and_verdict(report, HELPERS) == (Lane.TEST, Verdict.PASS)


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        # a typing clean-up: what the lock records of the helper does not move
        (
            "def expected_overlap():\n",
            "from __future__ import annotations, division\n\n\n"
            "def expected_overlap() -> list[list[int]]:\n"
            '    """The merge of [0, 4] and [3, 7]."""\n',
            Verdict.PASS,
        ),
        # ``!=`` spelled ``<>``: what the helper means moves
        (
            "def expected_overlap():\n",
            "from __future__ import barry_as_FLUFL\n\n\ndef expected_overlap():\n",
            Verdict.REJECT,
        ),
    ],
)
def test_test_support_surface_decides_beyond_layout(
    with_helpers: tuple[GitRepo, str], old: str, new: str, verdict: Verdict
) -> None:
    repo, base = with_helpers
    repo.replace(HELPERS, old, new)
    report = repo.gate(base, repo.commit("typing"), replay=verdict is Verdict.PASS)
    assert lane_and_verdict(report, HELPERS) == (Lane.TEST, verdict), [
        f.reason for f in report.findings
    ]


def test_test_support_change_with_note_is_human_noted(with_helpers: tuple[GitRepo, str]) -> None:
    repo, base = with_helpers
    repo.replace(HELPERS, "[[0, 7]]", "[[0, 7]]  # reviewed\n")
    repo.replace(HELPERS, "def expected_overlap", "def expected_overlap_v2")
    repo.relock(PKG)
    repo.note(PKG, base, "tests/helpers.py", "oracle_gate.lock")
    report = repo.judge_paths(base, repo.commit("reviewed helper change"))
    assert lane_and_verdict(report, HELPERS) == (Lane.TEST, Verdict.HUMAN_NOTED)


def test_test_support_modules_are_in_the_lock(with_helpers: tuple[GitRepo, str]) -> None:
    repo, _ = with_helpers
    repo.append(HELPERS, "\n\n@pytest.fixture\ndef overlap():\n    return [[0, 4], [3, 7]]\n")
    repo.relock(PKG)
    lock = json.loads(repo.read(f"{PKG}/oracle_gate.lock"))
    assert any(key.startswith("tests/helpers.py::") for key in lock["surface"])


def test_conftest_is_locked_but_judged_as_harness(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    conftest = f"{PKG}/tests/conftest.py"
    repo.write(conftest, "import pytest\n\n\n@pytest.fixture\ndef ranges():\n    return []\n")
    repo.relock(PKG)
    lock = json.loads(repo.read(f"{PKG}/oracle_gate.lock"))
    assert any(key.startswith("tests/conftest.py::") for key in lock["surface"])
    report = repo.judge_paths(base, repo.commit("new conftest"))
    assert lane_and_verdict(report, conftest) == (Lane.HARNESS, Verdict.REJECT)
