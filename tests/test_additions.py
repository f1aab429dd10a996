"""Which statements appended to an existing test file stay agent additions (lanes/additions.py),
read straight from the cases of tests/fixtures/additions/fresh_names.py against the example's
test file; tests/decision_table/test_lane_tests.py runs them through the gate."""

from __future__ import annotations

import ast

import pytest

from fixture_cases import FIXTURES, Case, read_cases
from oracle_gate.cli.demo import EXAMPLE
from oracle_gate.lanes.additions import FileView, why_not_fresh

PARENT = (EXAMPLE / "libs/intervals/tests/test_merge.py").read_text()
CASES = read_cases(FIXTURES / "additions" / "fresh_names.py")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_fixture_is_fresh_by_the_name_pytest_gives_it(case: Case) -> None:
    parent = FileView(ast.parse(PARENT))
    head = FileView(ast.parse(PARENT + "\n\n" + case.source))
    added = [key for key in head.statements if key not in parent.statements]
    reasons = [why for key in added if (why := why_not_fresh(key, parent, head))]
    if case.kind == "cheat":
        assert any(case.expect in reason for reason in reasons), reasons
    else:
        assert reasons == []
