"""SPEC §4: fixture digest moved with no human note -> reject; noted -> human_noted."""

from __future__ import annotations

from gitrepo import GitRepo
from oracle_gate.model import Verdict

PKG = "libs/intervals"
FIXTURE = f"{PKG}/testdata/ranges/unsorted.json"


def test_fixture_edit_without_note_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(FIXTURE, "[[0, 1], [2, 3], [3, 6]]", "[[0, 1], [2, 6]]")
    report = repo.judge_paths(base, repo.commit("edit fixture"))
    assert report.verdict_of(FIXTURE) is Verdict.REJECT
    assert report.exit_code == 1


def test_fixture_edit_with_changelog_note_is_human_noted(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(FIXTURE, "[[0, 1], [2, 3], [3, 6]]", "[[0, 1], [2, 3], [3, 6]] ")
    repo.relock(PKG)
    repo.note(PKG, base, "testdata/ranges/unsorted.json", "oracle_gate.lock")
    report = repo.gate(base, repo.commit("reviewed fixture edit"))
    assert report.verdict_of(FIXTURE) is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS
    assert "@intervals-team" in report.reviewers()


def test_note_naming_another_parent_does_not_count(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(FIXTURE, "[3, 6]]", "[3, 7]]")
    repo.relock(PKG)
    repo.note(PKG, "0123456789ab" + base[12:], "testdata/ranges/unsorted.json", "oracle_gate.lock")
    report = repo.judge_paths(base, repo.commit("note with a wrong sha"))
    assert report.verdict_of(FIXTURE) is Verdict.REJECT


def test_fixture_edit_with_oracle_change_trailer_is_human_noted(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/testdata/ranges/new.json", '{"input": [], "expected": []}\n')
    repo.relock(PKG)
    head = repo.commit(
        "add fixture",
        {
            "Oracle-Change": f"{PKG}/testdata/ranges/new.json — new empty case",
            "Reviewed-by": "Ada <ada@example.com>",
        },
    )
    report = repo.judge_paths(base, head)
    assert report.verdict_of(f"{PKG}/testdata/ranges/new.json") is Verdict.HUMAN_NOTED
    # the lock moved too: its only moved entry is the noted fixture, so the note covers it
    assert report.verdict_of(f"{PKG}/oracle_gate.lock") is Verdict.HUMAN_NOTED


def test_oracle_change_trailer_without_reviewer_is_not_a_note(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/testdata/ranges/new.json", "{}\n")
    head = repo.commit("add fixture", {"Oracle-Change": f"{PKG}/testdata/ranges/new.json — x"})
    report = repo.judge_paths(base, head)
    assert report.verdict_of(f"{PKG}/testdata/ranges/new.json") is Verdict.REJECT


def test_fixture_and_lock_edited_together_are_both_rejected(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(FIXTURE, "[[0, 1], [2, 3], [3, 6]]", "[[0, 1], [2, 6]]")
    repo.relock(PKG)  # the agent regenerates the lock to hide the edit
    report = repo.judge_paths(base, repo.commit("edit fixture and lock"))
    assert report.verdict_of(FIXTURE) is Verdict.REJECT
    assert report.verdict_of(f"{PKG}/oracle_gate.lock") is Verdict.REJECT


def test_verdict_reads_git_objects_not_the_working_tree(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    original = repo.read(FIXTURE)
    repo.replace(FIXTURE, "[3, 6]]", "[3, 7]]")
    head = repo.commit("edit fixture")
    repo.write(FIXTURE, original)  # patched code "restores" the file on disk
    assert repo.judge_paths(base, head).verdict_of(FIXTURE) is Verdict.REJECT
