"""What a test module's new imports and import-time calls reach (lanes/imports.py), read
straight from the cases of tests/fixtures/additions/shared_state.py on the example
monorepo's files; tests/decision_table/test_lane_tests.py runs some of them through
the gate."""

from __future__ import annotations

import ast

import pytest

from fixture_cases import FIXTURES, Case, read_cases
from oracle_gate.cli.demo import EXAMPLE
from oracle_gate.lanes.additions import FileView
from oracle_gate.lanes.imports import Reach, added_effects, already_imported, suite_modules

PACKAGE = "libs/intervals"
TESTS = ("tests/**/test_*.py",)
PACKAGES = ("libs/codec", "libs/intervals", "services/scheduler")
CASES = read_cases(FIXTURES / "additions" / "shared_state.py")


class _Tree:
    """Files by repository path, as ``repo.trees.GitTree`` gives them."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self._files = files

    def files(self) -> tuple[str, ...]:
        return tuple(sorted(self._files))

    def read_optional(self, path: str) -> bytes | None:
        return self._files.get(path)


def _example() -> dict[str, bytes]:
    return {
        path.relative_to(EXAMPLE).as_posix(): path.read_bytes()
        for path in EXAMPLE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def _reasons(case: Case) -> list[str]:
    """What ``added_effects`` says of the case's last part, the test module judged."""
    parent = _example()
    head = dict(parent)
    for mode, path, text in case.parts():
        head[path] = (head[path] + b"\n" + text.encode()) if mode == "append" else text.encode()
    mode, path, _ = case.parts()[-1]
    reach = Reach(_Tree(head), PACKAGES)
    sides = {p: parent[p] for p in suite_modules(parent, PACKAGE, TESTS)}
    module = ast.parse(head[path])
    if mode == "file":
        return added_effects(reach, path, module, [module], already_imported(reach, sides), True)
    before, after = FileView(ast.parse(parent[path])), FileView(module)
    added = [node for key, node in after.statements.items() if key not in before.statements]
    return added_effects(reach, path, module, added, already_imported(reach, sides), False)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_what_new_imports_and_calls_reach_is_judged(case: Case) -> None:
    reasons = _reasons(case)
    if case.kind == "cheat":
        assert any(case.expect in reason for reason in reasons), reasons
    else:
        assert reasons == []


def test_what_the_parents_tests_import_already_runs() -> None:
    """A module the parent's tests import counts for nothing, even when it patches."""
    parent = _example()
    parent["libs/intervals/intervals/__init__.py"] += b"\nimport json\njson.loads = len\n"
    reach = Reach(_Tree(parent), PACKAGES)
    sides = {p: parent[p] for p in suite_modules(parent, PACKAGE, TESTS)}
    known = already_imported(reach, sides)
    assert "libs/intervals/intervals/__init__.py" in known
    module = ast.parse("from intervals import merge_ranges\n")
    path = "libs/intervals/tests/test_more.py"
    assert added_effects(reach, path, module, [module], known, True) == []
    assert added_effects(reach, path, module, [module], frozenset(), True)
