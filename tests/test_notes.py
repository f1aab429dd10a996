"""Human notes under the default policy (review): what counts, what survives a rebase, the lock.

Signed and approved notes are in test_notes_policy.py.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from blake3 import blake3

from gitrepo import TODAY, GitRepo, run
from oracle_gate.cli import main
from oracle_gate.formats import FORMATS
from oracle_gate.model import Lane, Verdict

PKG = "libs/intervals"
FIXTURE = f"{PKG}/testdata/ranges/unsorted.json"
NEW_CASE = f"{PKG}/testdata/ranges/adjacent.json"
CASE_TEXT = '{"input": [[0, 1], [1, 2], [5, 6]], "expected": [[0, 1], [1, 2], [5, 6]]}\n'
LOCK = f"{PKG}/oracle_gate.lock"
CHANGELOG = f"{PKG}/ORACLE_CHANGELOG.md"

# A root harness file: a workflow whose job runs the gate (a workflow that does not is other).
GATE_WORKFLOW = "on: push\njobs:\n  gate:\n    steps:\n      - run: oracle-gate check\n"


def _add_case(repo: GitRepo) -> None:
    """The README's human workflow: edit a fixture, note it, regenerate the lock."""
    repo.write(NEW_CASE, CASE_TEXT)
    repo.note_content("record the touching-ranges case", NEW_CASE)
    repo.relock(PKG)


def _merge_group(repo: GitRepo, main: str, pr: str, tmp_path: Path) -> dict[str, str]:
    """A GitHub merge group: ``pr`` merged onto ``main``; returns the job's environment."""
    repo.git("checkout", "-q", "-b", "merge-group", main)
    repo.git("merge", "-q", "--no-ff", "--no-edit", pr)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"merge_group": {"base_sha": main}}))
    return {"GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": str(event)}


def test_note_command_writes_one_digest_line_per_path_in_the_owning_changelog(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.write(NEW_CASE, CASE_TEXT)
    repo.remove(FIXTURE)
    repo.write(".github/workflows/ci.yml", GATE_WORKFLOW)
    repo.note_content("two cases, one gone", NEW_CASE, FIXTURE, ".github/workflows/ci.yml")
    text = repo.read(CHANGELOG)
    digest = blake3(CASE_TEXT.encode()).hexdigest()
    assert f": two cases, one gone\n\n- `testdata/ranges/adjacent.json` blake3:{digest}\n" in text
    assert "- `testdata/ranges/unsorted.json` deleted\n" in text
    root = repo.read("ORACLE_CHANGELOG.md")
    assert "- `.github/workflows/ci.yml` blake3:" in root


def test_note_command_is_refused_for_agents(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.write(NEW_CASE, CASE_TEXT)
    done = run("note", NEW_CASE, "--reason", "x", cwd=repo.path, ORACLE_GATE_ROLE="agent")
    assert done.returncode == 2
    assert "note is refused for ORACLE_GATE_ROLE=agent" in done.stderr
    assert "adjacent" not in repo.read(CHANGELOG)


@pytest.mark.parametrize("given", ["/etc/passwd", "."])
def test_note_command_refuses_paths_that_are_not_repository_files(
    example_repo: tuple[GitRepo, str], given: str
) -> None:
    repo, _ = example_repo
    done = run("note", given, "--reason", "x", cwd=repo.path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("oracle-gate: error: ")


def test_readme_workflow_fixture_note_relock_passes_end_to_end(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _add_case(repo)
    head = repo.commit("reviewed fixture")
    done = run("check", "--base", base, "--head", head, "--today", TODAY.isoformat(), cwd=repo.path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{LOCK}" in done.stdout
    assert "review required by: @intervals-team" in done.stdout


def test_lock_entry_of_an_unnoted_path_is_rejected_even_when_another_is_noted(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _add_case(repo)
    repo.replace(FIXTURE, "[3, 5]]", "[3, 4]]")  # a second fixture, not noted
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("one noted, one not"))
    assert report.verdict_of(NEW_CASE) is Verdict.HUMAN_NOTED
    assert report.verdict_of(FIXTURE) is Verdict.REJECT
    assert report.verdict_of(LOCK) is Verdict.REJECT
    (lock,) = [f for f in report.findings if f.path == LOCK]
    assert "testdata/ranges/unsorted.json" in lock.reason
    assert "adjacent" not in lock.reason


def test_note_naming_the_lock_still_covers_every_entry(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(FIXTURE, "[3, 5]]", "[3, 4]]")
    repo.relock(PKG)
    repo.note_content("fixture and lock", FIXTURE, LOCK)
    report = repo.judge_paths(base, repo.commit("noted with the lock"))
    assert report.verdict_of(LOCK) is Verdict.HUMAN_NOTED


def test_digest_note_of_other_content_does_not_count(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(FIXTURE, "[3, 5]]", "[3, 4]]")
    repo.note_content("noted one edit", FIXTURE)
    repo.replace(FIXTURE, "[3, 4]]", "[3, 3]]")  # then edited again after the note
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("content differs from the note"))
    assert report.verdict_of(FIXTURE) is Verdict.REJECT


def test_digest_note_naming_a_look_alike_path_does_not_count(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(FIXTURE, "[3, 5]]", "[3, 4]]")
    digest = blake3(repo.read(FIXTURE).encode()).hexdigest()
    look_alike = "testdata/ranges/uns\u043erted.json"  # Cyrillic o
    repo.append(CHANGELOG, f"\n## look-alike\n\n- `{look_alike}` blake3:{digest}\n")
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("look-alike note"))
    assert report.verdict_of(FIXTURE) is Verdict.REJECT


def test_note_already_in_the_parent_does_not_cover_a_later_patch(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    original = repo.read(FIXTURE)
    repo.note_content("the original content, noted long ago", FIXTURE)
    repo.replace(FIXTURE, "[3, 5]]", "[3, 4]]")
    repo.relock(PKG)
    repo.note_content("a reviewed change", FIXTURE)
    base = repo.commit("reviewed change lands")
    repo.write(FIXTURE, original)  # revert to the content the old entry names
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("revert a reviewed fix"))
    assert report.verdict_of(FIXTURE) is Verdict.REJECT


def test_empty_reviewed_by_never_counts(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(NEW_CASE, CASE_TEXT)
    head = repo.commit("x", {"Oracle-Change": f"{NEW_CASE} — new case", "Reviewed-by": ""})
    assert repo.judge_paths(base, head).verdict_of(NEW_CASE) is Verdict.REJECT


@pytest.mark.parametrize(
    "name",
    ["\u200b", "\u2060\ufeff", "\u200e\u202e", " \u00ad ", "\x7f"],
    ids=["zero_width_space", "word_joiner_and_bom", "bidi_marks", "soft_hyphen", "control"],
)
def test_a_reviewer_of_only_invisible_characters_never_counts(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    """NFKC, zero-width, format and control characters dropped: nobody is left."""
    repo, base = example_repo
    repo.write(NEW_CASE, CASE_TEXT)
    head = repo.commit("x", {"Oracle-Change": f"{NEW_CASE} — new case", "Reviewed-by": name})
    assert repo.judge_paths(base, head).verdict_of(NEW_CASE) is Verdict.REJECT


@pytest.mark.parametrize(
    "name",
    ["Grace Hopper <grace@example.com>", "Zoë Ångström", "\uff47\uff52\uff41\uff43\uff45"],
    ids=["plain", "outside_ascii", "full_width"],
)
def test_a_reviewer_with_a_real_name_counts(example_repo: tuple[GitRepo, str], name: str) -> None:
    """The honest neighbours: a name outside ASCII, or in full-width forms, is somebody."""
    repo, base = example_repo
    repo.write(NEW_CASE, CASE_TEXT)
    head = repo.commit("x", {"Oracle-Change": f"{NEW_CASE} — new case", "Reviewed-by": name})
    assert repo.judge_paths(base, head).verdict_of(NEW_CASE) is Verdict.HUMAN_NOTED


def test_changelog_is_a_ledger_appending_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.append(CHANGELOG, "\n## a later entry\n\nwords\n")
    report = repo.judge_paths(base, repo.commit("append"))
    assert (report.paths[0].lane, report.verdict) == (Lane.LEDGER, Verdict.PASS)


@pytest.mark.parametrize(
    "edit",
    [
        lambda repo: repo.replace(CHANGELOG, "Each entry names", "Entries name"),
        lambda repo: repo.write(CHANGELOG, "# Oracle changelog\n"),
        lambda repo: repo.remove(CHANGELOG),
    ],
    ids=["edited", "truncated", "deleted"],
)
def test_changelog_entry_edited_or_deleted_is_an_oracle_move(
    example_repo: tuple[GitRepo, str], edit: object
) -> None:
    repo, _ = example_repo
    repo.append(CHANGELOG, "\n## 0123456789ab\n\n- testdata/ranges/unsorted.json: old fix\n")
    base = repo.commit("an entry lands")
    edit(repo)  # type: ignore[operator]
    report = repo.judge_paths(base, repo.commit("rewrite history"))
    assert report.paths[0].lane is Lane.LEDGER
    assert report.verdict_of(CHANGELOG) is Verdict.REJECT


def test_root_changelog_notes_a_root_harness_file_and_names_the_root_owner(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.write("CODEOWNERS", "* @platform\n" + repo.read("CODEOWNERS"))
    base = repo.commit("root owner")
    repo.write(".github/workflows/ci.yml", GATE_WORKFLOW)
    repo.note_content("CI runs on push", ".github/workflows/ci.yml")
    report = repo.judge_paths(base, repo.commit("ci"))
    assert report.verdict_of(".github/workflows/ci.yml") is Verdict.HUMAN_NOTED
    assert report.reviewers() == ("@platform",)


def test_package_changelog_does_not_note_a_root_file(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(".github/workflows/ci.yml", GATE_WORKFLOW)
    digest = blake3(GATE_WORKFLOW.encode()).hexdigest()
    repo.append(CHANGELOG, f"\n## CI\n\n- `.github/workflows/ci.yml` blake3:{digest}\n")
    report = repo.judge_paths(base, repo.commit("root file noted in a package changelog"))
    assert report.verdict_of(".github/workflows/ci.yml") is Verdict.REJECT


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (".oracle-gate/allowed_signers", "agent@example.com ssh-ed25519 AAAA\n"),
        ("oracle-gate.toml", 'notes = "review"\n'),
        ("pyproject.toml", '[tool.oracle-gate]\nnotes = "review"\n'),
    ],
)
def test_the_note_policy_files_are_harness(
    example_repo: tuple[GitRepo, str], path: str, text: str
) -> None:
    repo, base = example_repo
    repo.write(path, text)
    report = repo.judge_paths(base, repo.commit("change who may note"))
    assert report.paths[0].lane is Lane.HARNESS
    assert report.verdict_of(path) is Verdict.REJECT


def test_digest_note_survives_the_base_moving_in_a_merge_group(
    example_repo: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, _ = example_repo
    repo.git("checkout", "-q", "-b", "pr")
    _add_case(repo)
    pr = repo.commit("reviewed fixture")
    repo.git("checkout", "-q", "main")
    repo.append("README.md", "\nanother change landed first\n")
    main_tip = repo.commit("main moves")
    env = _merge_group(repo, main_tip, pr, tmp_path)
    done = run("check", "--today", TODAY.isoformat(), cwd=repo.path, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert main_tip[:12] in done.stdout.splitlines()[0]


def test_parent_naming_note_holds_only_against_that_parent(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.git("checkout", "-q", "-b", "pr")
    repo.write(NEW_CASE, CASE_TEXT)
    repo.relock(PKG)
    repo.note(PKG, base, "testdata/ranges/adjacent.json")
    pr = repo.commit("old-style note")
    assert repo.judge_paths(base, pr).verdict_of(NEW_CASE) is Verdict.HUMAN_NOTED
    repo.git("checkout", "-q", "main")
    repo.append("README.md", "\nanother change landed first\n")
    main_tip = repo.commit("main moves")
    repo.git("checkout", "-q", "-b", "merge-group", main_tip)
    repo.git("merge", "-q", "--no-ff", "--no-edit", pr)
    report = repo.judge_paths(main_tip, "HEAD")
    assert report.verdict_of(NEW_CASE) is Verdict.REJECT


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_names_the_owners_to_review(
    example_repo: tuple[GitRepo, str], fmt: str
) -> None:
    repo, base = example_repo
    _add_case(repo)
    report = repo.judge_paths(base, repo.commit("reviewed fixture"))
    text = FORMATS[fmt](report)
    assert "@intervals-team" in text
    if fmt == "junit":
        suite = ET.fromstring(text).find("testsuite")
        assert suite is not None
        assert {p.get("name"): p.get("value") for p in suite.iter("property")} == {
            "review required by": "@intervals-team"
        }
    if fmt == "sarif":
        run_ = json.loads(text)["runs"][0]
        assert run_["properties"]["reviewers"] == ["@intervals-team"]
        assert {tuple(r["properties"]["owners"]) for r in run_["results"]} == {("@intervals-team",)}


def test_check_approvals_file_must_be_a_list_of_strings(
    example_repo: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = example_repo
    approvals = tmp_path / "approvals.json"
    approvals.write_text('{"alice": true}\n')
    code = main(["check", "--repo", str(repo.path), "--base", base, "--approvals", str(approvals)])
    assert code == 2


TESTS = f"{PKG}/tests/test_merge.py"
OVERLAP = "assert merge_ranges([[0, 4], [3, 7]]) == [[0, 7]]"


def _tighten(repo: GitRepo) -> None:
    """A human tightens one test's assertion."""
    repo.replace(
        TESTS, OVERLAP, OVERLAP + "\n    assert merge_ranges([[0, 4], [4, 7]]) != [[0, 7]]"
    )


def test_unit_note_covers_its_test_and_its_lock_entry(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _tighten(repo)
    repo.note_content("tighter overlap test", f"{TESTS}::test_overlapping_ranges_merge")
    repo.relock(PKG)
    assert "- `tests/test_merge.py::test_overlapping_ranges_merge` blake3:" in repo.read(CHANGELOG)
    report = repo.judge_paths(base, repo.commit("tighten"))
    assert report.verdict_of(TESTS) is Verdict.HUMAN_NOTED
    assert report.verdict_of(LOCK) is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


def test_unit_note_does_not_cover_another_unit_of_the_file(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _tighten(repo)
    repo.note_content("tighter overlap test", f"{TESTS}::test_overlapping_ranges_merge")
    repo.replace(TESTS, "== [[0, 2], [2, 4]]", "is not None")  # a second, unnoted unit
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("one unit noted, another weakened"))
    assert report.verdict_of(TESTS) is Verdict.REJECT
    assert report.verdict_of(LOCK) is Verdict.REJECT
    (lock,) = [f for f in report.findings if f.path == LOCK]
    assert "test_touching_ranges_stay_apart" in lock.reason


def test_unit_note_of_other_content_does_not_count(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _tighten(repo)
    repo.note_content("tighter overlap test", f"{TESTS}::test_overlapping_ranges_merge")
    repo.replace(TESTS, "!= [[0, 7]]", "!= [[0, 8]]")  # edited after the note
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("edited after noting"))
    assert report.verdict_of(TESTS) is Verdict.REJECT
