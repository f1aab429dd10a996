"""What a module binds and changes at import (classify/python.py), read straight from
the cases of tests/fixtures/classify/import_effects.py and hook_names.py."""

from __future__ import annotations

import pytest

from fixture_cases import FIXTURES, Case, read_cases
from oracle_gate.classify.python import hook_names, import_time_effects

CASES = read_cases(FIXTURES / "classify" / "import_effects.py")
HOOK_CASES = read_cases(FIXTURES / "classify" / "hook_names.py")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_what_a_module_changes_at_import_is_judged(case: Case) -> None:
    effects = import_time_effects(case.source.encode())
    if case.kind == "cheat":
        assert any(case.expect in effect for effect in effects), effects
    else:
        assert effects == []


@pytest.mark.parametrize("case", HOOK_CASES, ids=str)
def test_the_pytest_hooks_a_module_binds_are_found(case: Case) -> None:
    hooks = hook_names(case.source.encode())
    if case.kind == "cheat":
        assert hooks == {case.expect}
    else:
        assert hooks == frozenset()
