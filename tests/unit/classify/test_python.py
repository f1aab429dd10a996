"""What a module changes of shared state at import (classify/python.py), read straight
from the cases of tests/fixtures/classify/import_effects.py."""

from __future__ import annotations

import pytest

from fixture_cases import FIXTURES, Case, read_cases
from oracle_gate.classify.python import import_time_effects

CASES = read_cases(FIXTURES / "classify" / "import_effects.py")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_what_a_module_changes_at_import_is_judged(case: Case) -> None:
    effects = import_time_effects(case.source.encode())
    if case.kind == "cheat":
        assert any(case.expect in effect for effect in effects), effects
    else:
        assert effects == []
