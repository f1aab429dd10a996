"""SPEC §4: assertion surface moves, weakening markers, and agent-added tests."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict

PKG = "libs/intervals"
TEST = f"{PKG}/tests/test_merge.py"
TOUCHING = "assert merge_ranges([[0, 2], [2, 4]]) == [[0, 2], [2, 4]]"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (TOUCHING, "assert merge_ranges([[0, 2], [2, 4]]) == [[0, 2], [2, 5]]"),  # literal
        (TOUCHING, "assert merge_ranges([[0, 2], [2, 4]]) != [[0, 2], [2, 4]]"),  # operator
        (TOUCHING, "pass"),  # assert deleted
        ("pytest.raises(ValueError", "pytest.raises(Exception"),  # raises type
        ('match="inverted"', 'match="inv"'),  # raises argument
        ("def test_overlapping_ranges_merge():", "def test_overlapping_ranges_merge(tmp_path):"),
        ("def test_empty_input_gives_empty_output", "def test_empty_input_is_fine"),  # renamed
    ],
)
def test_assertion_surface_change_without_note_is_rejected(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, base = example_repo
    repo.replace(TEST, old, new)
    report = repo.judge_paths(base, repo.commit("edit test"))
    assert report.verdict_of(TEST) is Verdict.REJECT
    assert any("assertion surface moved" in f.reason for f in report.findings)


def test_assertion_change_with_note_is_human_noted(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(TEST, TOUCHING, TOUCHING.replace("[2, 4]]", "[2, 4]] and True"))
    repo.relock(PKG)
    repo.note(PKG, base, "tests/test_merge.py", "oracle_gate.lock")
    report = repo.gate(base, repo.commit("reviewed test edit"))
    assert report.verdict_of(TEST) is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


def test_formatting_comments_and_docstrings_in_tests_pass(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(TEST, TOUCHING, f"# touching ranges\n    {TOUCHING.replace('==', ' == ')}  # why")
    repo.replace(
        TEST,
        "def test_empty_input_gives_empty_output():\n",
        'def test_empty_input_gives_empty_output():\n    """Empty in, empty out."""\n',
    )
    report = repo.gate(base, repo.commit("format tests"))
    assert report.verdict is Verdict.PASS
    assert report.verdict_of(TEST) is Verdict.PASS


def test_test_file_renamed_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.git("mv", TEST, f"{PKG}/tests/test_merge_ranges.py")
    report = repo.judge_paths(base, repo.commit("rename test file"))
    assert report.verdict_of(f"{PKG}/tests/test_merge_ranges.py") is Verdict.REJECT


def test_test_file_deleted_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.remove(TEST)
    assert repo.judge_paths(base, repo.commit("drop tests")).verdict_of(TEST) is Verdict.REJECT


def test_assert_moved_into_a_helper_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(TEST, f"    {TOUCHING}\n", "    _check_touching()\n")
    repo.append(TEST, f"\n\ndef _check_touching():\n    {TOUCHING}\n")
    report = repo.judge_paths(base, repo.commit("refactor assert into helper"))
    assert report.verdict_of(TEST) is Verdict.REJECT


def test_same_names_with_weaker_asserts_are_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(
        TEST,
        "assert merge_ranges([[0, 4], [3, 7]]) == [[0, 7]]",
        "assert merge_ranges([[0, 4], [3, 7]])",
    )
    repo.replace(TEST, TOUCHING, "assert isinstance(merge_ranges([[0, 2], [2, 4]]), list)")
    report = repo.judge_paths(base, repo.commit("weaker asserts, same names"))
    assert report.verdict_of(TEST) is Verdict.REJECT


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("\ndef test_touching", '\n@pytest.mark.skip(reason="flaky")\ndef test_touching'),
        ("\ndef test_touching", "\n@pytest.mark.xfail\ndef test_touching"),
        ("\ndef test_touching", "\n@pytest.mark.skipif(True, reason='x')\ndef test_touching"),
        (f"    {TOUCHING}", f"    pytest.skip('later')\n    {TOUCHING}"),
        (f"    {TOUCHING}", f"    assert True\n    {TOUCHING}"),
        (f"    {TOUCHING}", f"    __import__('time').sleep(0.1)\n    {TOUCHING}"),
    ],
)
def test_added_weakening_marker_without_triage_is_rejected(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, base = example_repo
    repo.replace(TEST, old, new)
    report = repo.judge_paths(base, repo.commit("quiet a test"))
    assert report.verdict_of(TEST) is Verdict.REJECT


def test_added_skip_with_freeze_triage_trailer_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(
        TEST, "\ndef test_touching", '\n@pytest.mark.skip(reason="flaky")\ndef test_touching'
    )
    repo.relock(PKG)
    repo.note(PKG, base, "oracle_gate.lock")
    head = repo.commit("skip flaky test", {"Freeze-Triage": "grace@example.com"})
    report = repo.gate(base, head)
    assert report.verdict_of(TEST) is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


def test_skip_mentioned_only_in_a_comment_is_not_a_marker(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(
        TEST,
        f"    {TOUCHING}",
        f"    # never skip this: time.sleep( would hide races\n    {TOUCHING}",
    )
    assert repo.gate(base, repo.commit("comment")).verdict is Verdict.PASS


def test_agent_added_test_file_is_ignored_as_oracle(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    added = f"{PKG}/tests/test_extra.py"
    repo.write(added, "def test_always():\n    assert True\n")
    report = repo.gate(base, repo.commit("agent test"))
    entry = next(p for p in report.paths if p.path == added)
    assert (entry.lane, entry.verdict) == (Lane.AGENT_TEST, Verdict.IGNORED_AS_ORACLE)
    assert report.verdict is Verdict.PASS  # the lock not knowing the new test is no drift


def test_agent_added_test_never_makes_a_rejected_patch_pass(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/tests/test_extra.py", "def test_always():\n    assert True\n")
    repo.write(f"{PKG}/fast.py", "X = 1\n")  # unmeasured production code
    assert repo.gate(base, repo.commit("agent test + code")).verdict is Verdict.REJECT
