"""SPEC §4: seeds are append-only, freeze entries are human actions, assumptions need assent."""

from __future__ import annotations

import json

import pytest

from gitrepo import GitRepo
from oracle_gate.errors import LedgerError
from oracle_gate.model import Verdict

PKG = "libs/intervals"
SEEDS = f"{PKG}/seeds.jsonl"
FREEZE = f"{PKG}/flake_freeze.yaml"
ASSUMPTIONS = f"{PKG}/assumptions.yaml"
NODE = "tests/test_merge.py::test_overlapping_ranges_merge"


def _freeze(repo: GitRepo, *entries: str, budget: int = 2) -> None:
    frozen = "frozen:\n" + "".join(entries) if entries else "frozen: []\n"
    repo.write(FREEZE, f"{frozen}budget: {budget}\n")


def _entry(nodeid: str = NODE, expires: str | None = "2027-01-15") -> str:
    expiry = f"    expires: '{expires}'\n" if expires else ""
    return f"  - nodeid: {nodeid}\n    reason: wall clock\n{expiry}    owner: platform\n"


def test_seed_line_deleted_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    lines = repo.read(SEEDS).splitlines(keepends=True)
    repo.write(SEEDS, "".join(lines[1:]))
    report = repo.judge_paths(base, repo.commit("wipe"))
    assert report.verdict_of(SEEDS) is Verdict.REJECT
    assert any("memory wipe" in f.reason for f in report.findings)


def test_seed_line_rewritten_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(SEEDS, '"expect": "hold"', '"expect": "fail"')
    assert repo.judge_paths(base, repo.commit("rewrite")).verdict_of(SEEDS) is Verdict.REJECT


def test_seed_retired_with_retired_by_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(SEEDS, '"status": "active"}', '"status": "retired", "retired_by": "P002"}')
    report = repo.gate(base, repo.commit("retire"))
    assert report.verdict_of(SEEDS) is Verdict.PASS


def test_seed_reformatted_and_appended_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    lines = [json.loads(line) for line in repo.read(SEEDS).splitlines()]
    lines.append(
        {
            "row": "merge_ranges_contract",
            "prop": "prop_idempotent",
            "input": [[1, 2]],
            "expect": "hold",
            "status": "active",
        }
    )
    repo.write(SEEDS, "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))
    assert repo.gate(base, repo.commit("append")).verdict is Verdict.PASS


def test_malformed_seed_line_is_a_gate_error_with_line(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    line = len(repo.read(SEEDS).splitlines()) + 1
    repo.append(SEEDS, "{not json\n")
    head = repo.commit("bad seed")
    with pytest.raises(LedgerError) as caught:
        repo.gate(base, head)
    assert str(caught.value).startswith(f"{SEEDS}:{line}: is not valid JSON")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        (_entry(), "", "removed"),
        (_entry(), _entry(expires="2027-03-01"), "expiry"),
        (_entry(), _entry(nodeid=NODE + "_v2"), "removed or renamed"),
    ],
)
def test_freeze_entry_thawed_or_edited_is_rejected(
    example_repo: tuple[GitRepo, str], old: str, new: str, words: str
) -> None:
    repo, _ = example_repo
    _freeze(repo, old)
    base = repo.commit("freeze (human)")
    _freeze(repo, *([new] if new else []))
    report = repo.judge_paths(base, repo.commit("thaw"))
    assert report.verdict_of(FREEZE) is Verdict.REJECT
    assert any(words in f.reason for f in report.findings)


TRIAGE = {"Freeze-Triage": "grace@example.com"}


def test_freeze_entry_added_with_expiry_and_triage_passes(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _freeze(repo, _entry())
    report = repo.gate(base, repo.commit("freeze", TRIAGE))
    assert report.verdict_of(FREEZE) is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


def test_freeze_entry_added_without_triage_or_note_is_rejected(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _freeze(repo, _entry())
    report = repo.judge_paths(base, repo.commit("freeze quietly"))
    assert report.verdict_of(FREEZE) is Verdict.REJECT
    assert any("no Freeze-Triage" in f.reason for f in report.findings)


def test_freeze_entry_added_with_a_human_note_is_human_noted(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _freeze(repo, _entry())
    repo.note(PKG, base, "flake_freeze.yaml")
    report = repo.judge_paths(base, repo.commit("noted freeze"))
    assert report.verdict_of(FREEZE) is Verdict.HUMAN_NOTED


PARTITION_FREEZE = (
    "  - row: merge_ranges_contract\n    input_hash: {hash}\n    reason: flaky\n"
    "    expires: '2027-01-15'\n    owner: platform\n    replacement_row: {row}\n"
)


def test_flaky_partition_frozen_with_a_replacement_row_added_in_the_same_patch_is_rejected(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.append(
        f"{PKG}/invariants.yaml",
        '  - id: replacement\n    globs: ["intervals/*.py"]\n'
        '    properties: ["props.py:prop_idempotent"]\n',
    )
    _freeze(repo, PARTITION_FREEZE.format(hash="ab" * 32, row="replacement"))
    report = repo.judge_paths(base, repo.commit("freeze and replace", TRIAGE))
    assert report.verdict_of(FREEZE) is Verdict.REJECT
    assert any("replacement row this patch adds" in f.reason for f in report.findings)


def test_flaky_partition_frozen_with_an_existing_replacement_row_is_triaged(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.append(
        f"{PKG}/invariants.yaml",
        '  - id: replacement\n    globs: ["intervals/*.py"]\n'
        '    properties: ["props.py:prop_idempotent"]\n',
    )
    base = repo.commit("a reviewed replacement row")
    _freeze(repo, PARTITION_FREEZE.format(hash="ab" * 32, row="replacement"))
    report = repo.judge_paths(base, repo.commit("freeze", TRIAGE))
    assert report.verdict_of(FREEZE) is Verdict.HUMAN_NOTED


def test_freeze_entry_without_expiry_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _freeze(repo, _entry(expires=None))
    report = repo.judge_paths(base, repo.commit("freeze forever"))
    assert report.verdict_of(FREEZE) is Verdict.REJECT
    assert any("has no expiry" in f.reason for f in report.findings)


def test_freeze_entry_past_its_expiry_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _freeze(repo, _entry(expires="2026-11-29"))
    report = repo.judge_paths(base, repo.commit("stale freeze"))
    assert any("expired on 2026-11-29" in f.reason for f in report.findings)
    assert report.verdict is Verdict.REJECT


def test_frozen_node_id_that_no_longer_exists_is_rejected(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _freeze(repo, _entry(nodeid="tests/test_merge.py::test_gone"))
    report = repo.judge_paths(base, repo.commit("freeze a ghost"))
    assert any("no longer exists" in f.reason for f in report.findings)
    assert report.verdict is Verdict.REJECT


def test_frozen_parametrized_node_id_that_exists_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _freeze(repo, _entry(nodeid="tests/test_merge.py::test_recorded_cases[nested.json]"))
    assert repo.gate(base, repo.commit("freeze", TRIAGE)).verdict is Verdict.PASS


def test_frozen_entries_over_budget_are_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _freeze(
        repo, _entry(), _entry(nodeid="tests/test_merge.py::test_inverted_range_raises"), budget=1
    )
    report = repo.judge_paths(base, repo.commit("too many"))
    assert any("exceed the budget of 1" in f.reason for f in report.findings)


def test_proposed_assumption_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.append(
        ASSUMPTIONS,
        "  - id: A002\n    symbol: intervals.merge_ranges\n"
        "    precondition: no negative starts\n    status: proposed\n",
    )
    report = repo.judge_paths(base, repo.commit("assume"))
    assert any("A002 is still proposed" in f.reason for f in report.findings)
    assert report.verdict is Verdict.REJECT


def test_accepted_assumption_kept_by_a_register_edit_passes(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    # The patch edits the register but leaves A001 accepted and unchanged. The
    # row runs (assumptions.yaml is one of its oracle files), and A001 passes
    # only because partitions P001 and P009 test it.
    repo.replace(ASSUMPTIONS, "items:\n", "items:\n  # A001: tested by partitions P001 and P009\n")
    report = repo.gate(base, repo.commit("annotate"))
    assert report.verdict_of(ASSUMPTIONS) is Verdict.PASS
    assert any("all 4 partition rows hold" in f.reason for f in report.findings)
    assert not [f.reason for f in report.findings if "A001" in f.reason]
    assert report.verdict is Verdict.PASS


def test_assumption_accepted_by_the_patch_itself_is_rejected(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.replace(ASSUMPTIONS, "status: accepted", "status: proposed")
    base = repo.commit("proposed (human)")
    repo.replace(ASSUMPTIONS, "status: proposed", "status: accepted")
    report = repo.judge_paths(base, repo.commit("agent accepts"))
    assert report.verdict_of(ASSUMPTIONS) is Verdict.REJECT
