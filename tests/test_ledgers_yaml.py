"""The ledgers' parsers: what a moved line or a bad byte does to an entry."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.cli import main
from oracle_gate.config.ledgers import parse_assumptions, parse_freeze, parse_seeds
from oracle_gate.errors import LedgerError

FREEZE = b"""\
frozen:
  - nodeid: tests/test_a.py::test_a
    expires: 2030-01-15
    reason: {id: 7, links: [{url: x}]}
budget: 1
"""
ASSUMPTIONS = b"""\
items:
  - id: A1
    status: accepted
    evidence:
      source: {file: a.py}
"""


def test_freeze_entry_with_nested_data_moved_down_a_line_compares_equal() -> None:
    before = parse_freeze(FREEZE, "p/flake_freeze.yaml").entries[0]
    after = parse_freeze(b"# a comment\n" + FREEZE, "p/flake_freeze.yaml").entries[0]
    assert after.line == before.line + 1
    assert after.data == before.data
    assert before.data["reason"] == {"id": 7, "links": [{"url": "x"}]}


def test_assumption_with_nested_data_moved_down_a_line_compares_equal() -> None:
    (before,) = parse_assumptions(ASSUMPTIONS, "p/assumptions.yaml")
    (after,) = parse_assumptions(b"\n" + ASSUMPTIONS, "p/assumptions.yaml")
    assert after.data == before.data
    assert before.data["evidence"] == {"source": {"file": "a.py"}}


SEED = b'{"row": "r", "prop": "p", "input": "%s", "expect": "hold"}\n'


def test_seeds_that_are_not_utf8_are_a_ledger_error_naming_file_and_line() -> None:
    text = SEED % b"a" + SEED % b"\xff"
    with pytest.raises(LedgerError) as caught:
        parse_seeds(text, "p/seeds.jsonl")
    assert str(caught.value) == "p/seeds.jsonl:2: is not valid UTF-8"


def test_seeds_that_are_not_utf8_exit_2_from_the_cli(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit_example("libs/codec")
    repo.write("libs/codec/seeds.jsonl", SEED % b"\xc3(")
    capsys.readouterr()
    assert main(["lock", "--repo", str(repo.path), "--ledgers"]) == 2
    assert "libs/codec/seeds.jsonl:1: is not valid UTF-8" in capsys.readouterr().err
