"""``oracle-gate freeze`` and ``seeds``: human edits the ledger lane accepts, refused to agents."""

from __future__ import annotations

import json

import pytest

from gitrepo import TODAY, GitRepo, run
from oracle_gate.config.ledgers import parse_freeze, parse_seeds
from oracle_gate.model import Verdict

PKG = "libs/intervals"
FREEZE = f"{PKG}/flake_freeze.yaml"
SEEDS = f"{PKG}/seeds.jsonl"
NODE = f"{PKG}/tests/test_merge.py::test_touching_ranges_stay_apart"
TODAY_ARG = ("--today", TODAY.isoformat())


def _freeze(repo: GitRepo, *args: str, **env: str) -> tuple[int, str, str]:
    done = run("freeze", *args, "--repo", str(repo.path), **env)
    return done.returncode, done.stdout, done.stderr


def _add(repo: GitRepo, node: str = NODE, expires: str = "2026-12-31", **env: str) -> int:
    code, _out, err = _freeze(
        repo,
        "add",
        node,
        "--reason",
        "times out on the shared runner",
        "--owner",
        "@intervals-team",
        "--expires",
        expires,
        "--replacement-row",
        "merge_ranges_contract",
        *TODAY_ARG,
        **env,
    )
    assert code in (0, 2), err
    return code


def test_freeze_add_writes_an_entry_the_ledger_lane_accepts_with_a_triage_trailer(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    assert _add(repo) == 0
    entries = parse_freeze(repo.read(FREEZE).encode(), FREEZE).entries
    assert [(e.nodeid, e.expires and e.expires.isoformat()) for e in entries] == [
        ("tests/test_merge.py::test_touching_ranges_stay_apart", "2026-12-31")
    ]
    assert entries[0].data["owner"] == "@intervals-team"
    assert entries[0].data["replacement_row"] == "merge_ranges_contract"
    assert "budget: 2" in repo.read(FREEZE)
    repo.commit("freeze a flaky test", {"Freeze-Triage": "grace@example.com"})
    assert repo.judge_paths(base).verdict_of(FREEZE) is Verdict.HUMAN_NOTED


@pytest.mark.parametrize(("variable", "value"), [("ORACLE_GATE_ROLE", "agent"), ("CI", "true")])
def test_freeze_and_retire_are_refused_to_agents_and_ci(
    example_repo: tuple[GitRepo, str], variable: str, value: str
) -> None:
    repo, _base = example_repo
    before = (repo.read(FREEZE), repo.read(SEEDS))
    assert _add(repo, **{variable: value}) == 2
    code, _out, err = _freeze(repo, "remove", NODE, **{variable: value})
    assert code == 2 and "freeze remove is refused" in err
    done = run("seeds", "retire", f"{SEEDS}:1", "--by", "bot", "--repo", str(repo.path),
               **{variable: value})  # fmt: skip
    assert done.returncode == 2 and "seeds retire is refused" in done.stderr
    assert (repo.read(FREEZE), repo.read(SEEDS)) == before
    # Listing writes nothing and is allowed to anyone.
    assert run("seeds", "list", "--repo", str(repo.path), **{variable: value}).returncode == 0


def test_freeze_add_of_a_test_that_does_not_exist_is_an_error(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _base = example_repo
    before = repo.read(FREEZE)
    code, _out, err = _freeze(
        repo, "add", f"{PKG}/tests/test_merge.py::test_nothing", "--reason", "r",
        "--owner", "o", "--expires", "2026-12-31", *TODAY_ARG,
    )  # fmt: skip
    assert code == 2
    assert "no test 'tests/test_merge.py::test_nothing' in package libs/intervals" in err
    assert repo.read(FREEZE) == before


def test_freeze_add_twice_past_expiry_or_over_budget_is_refused(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _base = example_repo
    assert _add(repo, expires=TODAY.isoformat()) == 2  # expires today: not after today
    assert _add(repo) == 0
    written = repo.read(FREEZE)
    assert _add(repo) == 2  # already frozen
    repo.replace(FREEZE, "budget: 2", "budget: 1")
    assert _add(repo, node=f"{PKG}/tests/test_merge.py::test_recorded_cases") == 2
    _code, _out, err = _freeze(
        repo, "add", f"{PKG}/tests/test_merge.py::test_recorded_cases", "--reason", "r",
        "--owner", "o", "--expires", "2026-12-31", *TODAY_ARG,
    )  # fmt: skip
    assert f"{FREEZE}:7: 1 entries already fill the budget of 1" in err  # the budget line
    assert repo.read(FREEZE) == written.replace("budget: 2", "budget: 1")


def test_freeze_extend_moves_the_expiry_and_needs_a_human_note(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _base = example_repo
    assert _add(repo) == 0
    parent = repo.commit("freeze")
    code, _out, err = _freeze(repo, "extend", NODE, "--expires", "2026-12-01")
    assert code == 2 and "already expires on 2026-12-31; extend to a later date" in err
    code, out, err = _freeze(repo, "extend", NODE, "--expires", "2027-01-31")
    assert code == 0, err
    assert "human note must come with it" in out
    (entry,) = parse_freeze(repo.read(FREEZE).encode(), FREEZE).entries
    assert entry.expires is not None and entry.expires.isoformat() == "2027-01-31"
    repo.commit("extend the freeze")
    # The command writes the file; it does not make the change reviewed.
    assert repo.judge_paths(parent).verdict_of(FREEZE) is Verdict.REJECT
    repo.note(PKG, parent, "flake_freeze.yaml")
    repo.commit("note the extension")
    assert repo.judge_paths(parent).verdict_of(FREEZE) is Verdict.HUMAN_NOTED


def test_freeze_remove_thaws_and_keeps_the_header_comment(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _base = example_repo
    repo.write(FREEZE, "# Frozen flaky tests of libs/intervals.\nfrozen: []\nbudget: 2\n")
    assert _add(repo) == 0
    assert repo.read(FREEZE).startswith("# Frozen flaky tests of libs/intervals.\n")
    code, _out, err = _freeze(repo, "remove", NODE)
    assert code == 0, err
    assert parse_freeze(repo.read(FREEZE).encode(), FREEZE).entries == ()
    assert repo.read(FREEZE).startswith("# Frozen flaky tests of libs/intervals.\n")
    code, _out, err = _freeze(repo, "remove", NODE)
    assert code == 2 and "nothing frozen under" in err


def test_freeze_of_a_partition_input_needs_its_package_and_a_real_row(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _base = example_repo
    key = "merge_ranges_contract:" + "ab" * 32
    code, _out, err = _freeze(repo, "add", key, "--reason", "r", "--owner", "o",
                              "--expires", "2026-12-31", *TODAY_ARG)  # fmt: skip
    assert code == 2 and "neither PATH::TEST nor ROW:INPUT_HASH with --package" in err
    code, _out, err = _freeze(repo, "add", "no_row:" + "ab" * 32, "--package", PKG,
                              "--reason", "r", "--owner", "o", "--expires", "2026-12-31",
                              *TODAY_ARG)  # fmt: skip
    assert code == 2 and "has no row 'no_row'" in err
    code, _out, err = _freeze(repo, "add", key, "--package", PKG, "--reason", "r",
                              "--owner", "o", "--expires", "2026-12-31", *TODAY_ARG)  # fmt: skip
    assert code == 0, err
    (entry,) = parse_freeze(repo.read(FREEZE).encode(), FREEZE).entries
    assert entry.key == key and entry.nodeid is None


def test_a_broken_ledger_is_reported_and_never_overwritten(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _base = example_repo
    repo.write(FREEZE, "frozen:\n  - reason: no key\n")
    code, _out, err = _freeze(repo, "remove", NODE)
    assert code == 2
    assert f"{FREEZE}:2: frozen entry names neither nodeid nor row + input_hash" in err
    assert repo.read(FREEZE) == "frozen:\n  - reason: no key\n"


def test_seeds_list_prints_file_line_status_and_case(example_repo: tuple[GitRepo, str]) -> None:
    repo, _base = example_repo
    done = run("seeds", "list", PKG, "--repo", str(repo.path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0] == (
        f"{SEEDS}:1  active  merge_ranges_contract prop_idempotent expect hold  "
        "input [[0, 4], [3, 7]]  (overlap lost)"
    )


def test_seeds_retire_rewrites_only_status_and_retired_by_of_one_line(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    before = repo.read(SEEDS).splitlines(keepends=True)
    done = run("seeds", "retire", f"{SEEDS}:2", "--by", "@alice", "--repo", str(repo.path))
    assert done.returncode == 0, done.stderr
    after = repo.read(SEEDS).splitlines(keepends=True)
    assert after[0] == before[0] and after[2] == before[2]
    old, new = json.loads(before[1]), json.loads(after[1])
    assert new == {**old, "status": "retired", "retired_by": "@alice"}
    assert after[1].endswith("\n")
    repo.commit("retire a seed")
    assert repo.judge_paths(base).verdict_of(SEEDS) is Verdict.PASS
    assert [s.data.get("status") for s in parse_seeds(repo.read(SEEDS).encode(), SEEDS)] == [
        "active",
        "retired",
        "active",
    ]
    listed = run("seeds", "list", "--repo", str(repo.path)).stdout
    assert f"{SEEDS}:2  retired by @alice  " in listed


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (f"{SEEDS}:9", f"{SEEDS}:9: holds no seed"),
        (f"{PKG}/invariants.yaml:1", "is not a seeds.jsonl of this repository"),
        (SEEDS, "expected FILE:LINE"),
    ],
)
def test_seeds_retire_of_what_is_not_a_seed_line_is_an_error(
    example_repo: tuple[GitRepo, str], where: str, message: str
) -> None:
    repo, _base = example_repo
    before = repo.read(SEEDS)
    done = run("seeds", "retire", where, "--by", "@alice", "--repo", str(repo.path))
    assert done.returncode == 2
    assert message in done.stderr
    assert repo.read(SEEDS) == before


def test_seeds_retire_twice_is_an_error(example_repo: tuple[GitRepo, str]) -> None:
    repo, _base = example_repo
    assert (
        run("seeds", "retire", f"{SEEDS}:1", "--by", "@a", "--repo", str(repo.path)).returncode == 0
    )
    done = run("seeds", "retire", f"{SEEDS}:1", "--by", "@b", "--repo", str(repo.path))
    assert done.returncode == 2
    assert f"{SEEDS}:1: seed is already retired by '@a'" in done.stderr
