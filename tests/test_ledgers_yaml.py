"""The ledgers' parsers: what a moved line does to an entry."""

from __future__ import annotations

from oracle_gate.ledgers import parse_assumptions, parse_freeze

FREEZE = b"""\
frozen:
  - nodeid: tests/test_a.py::test_a
    expires: 2030-01-15
    ticket: {id: 7, links: [{url: x}]}
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
    assert before.data["ticket"] == {"id": 7, "links": [{"url": "x"}]}


def test_assumption_with_nested_data_moved_down_a_line_compares_equal() -> None:
    (before,) = parse_assumptions(ASSUMPTIONS, "p/assumptions.yaml")
    (after,) = parse_assumptions(b"\n" + ASSUMPTIONS, "p/assumptions.yaml")
    assert after.data == before.data
    assert before.data["evidence"] == {"source": {"file": "a.py"}}
