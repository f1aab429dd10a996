"""A ledger's size is checked before it is read: a huge one is refused without the memory."""

from __future__ import annotations

import os

import pytest

from gitrepo import GitRepo, run_measured

PKG = "libs/intervals"
# Three hundred MiB of one seed line repeated: reading it whole took 1.9 GB.
HUGE = 300 * 1024 * 1024
LINE = b'{"row": "merge_ranges_contract", "prop": "p", "input": 1, "expect": "hold"}\n'
TOO_LARGE = f"is larger than 16 MiB ({HUGE} bytes); a ledger this size is not read"


def _huge_seeds(repo: GitRepo) -> None:
    """Written a MiB at a time: a child's peak memory counts what the test process held
    when it forked."""
    chunk = LINE * (1024 * 1024 // len(LINE))
    with open(repo.path / PKG / "seeds.jsonl", "wb") as seeds:
        while seeds.tell() + len(chunk) <= HUGE:
            seeds.write(chunk)
        seeds.write(b" " * (HUGE - seeds.tell()))


@pytest.mark.parametrize("impl", ["native", "python"])
def test_check_refuses_a_huge_seeds_file_without_reading_it(
    example_repo: tuple[GitRepo, str], impl: str
) -> None:
    repo, base = example_repo
    _huge_seeds(repo)
    head = repo.commit("three hundred MiB of seeds")
    done, peak = run_measured(
        "check",
        "--repo",
        str(repo.path),
        "--base",
        base,
        "--head",
        head,
        "--no-replay",
        env={**os.environ, "ORACLE_GATE_IMPL": impl},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"oracle-gate: error: {PKG}/seeds.jsonl: {TOO_LARGE}\n"
    assert peak < 256 * 1024, peak  # KiB: well under the file's own size


def test_lock_ledgers_and_seeds_list_refuse_a_huge_seeds_file(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    _huge_seeds(repo)
    for command in (("lock", "--ledgers"), ("seeds", "list")):
        done, peak = run_measured(*command, "--repo", str(repo.path))
        assert done.returncode == 2, (command, done.stderr)
        assert f"{PKG}/seeds.jsonl: {TOO_LARGE}" in done.stderr, (command, done.stderr)
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert peak < 256 * 1024, (command, peak)


def test_a_seeds_file_at_the_limit_is_read(example_repo: tuple[GitRepo, str]) -> None:
    """The honest neighbour: 16 MiB of seeds is read and checked like any other."""
    repo, _ = example_repo
    seed = b'{"row": "merge_ranges_contract", "prop": "prop_idempotent", "input": [[1, 2]], '
    seed += b'"expect": "hold"}\n'
    with open(repo.path / PKG / "seeds.jsonl", "wb") as seeds:
        seeds.write(seed * (16 * 1024 * 1024 // len(seed)))
    done, _ = run_measured("lock", "--ledgers", "--repo", str(repo.path))
    assert f"ok {PKG}/seeds.jsonl" in done.stdout, done.stderr
