"""Signature annotations that run code are part of their unit (docs/surface.md 4.3), in test
files and oracle modules; type hints are not. The unit-level cases are
tests/fixtures/surface/annotations.py (read in tests/test_surface.py); these run the
gate on the example monorepo."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Verdict

PKG = "libs/intervals"
TEST = f"{PKG}/tests/test_merge.py"
PROPS = f"{PKG}/props.py"
CHEATS = {
    "a test's return annotation skips the module": (
        TEST,
        "def test_empty_input_gives_empty_output():",
        'def test_empty_input_gives_empty_output() -> pytest.skip("", allow_module_level=True):',
    ),
    "a test's parameter annotation makes every recorded case empty": (
        TEST,
        "def test_recorded_cases(case):",
        'def test_recorded_cases(case: setattr(json, "loads", lambda s: {"input": [], '
        '"expected": []})):',
    ),
    "a property's annotation replaces the subject for every property": (
        PROPS,
        "def prop_idempotent(ranges):",
        "def prop_idempotent(ranges) -> globals().update(merge_ranges=sorted):",
    ),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_an_annotation_that_runs_code_is_an_oracle_move(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    repo, base = example_repo
    path, old, new = CHEATS[name]
    repo.replace(path, old, new)
    report = repo.judge_paths(base, repo.commit(name))
    assert report.verdict_of(path) is Verdict.REJECT


def test_type_hints_on_tests_and_properties_merge(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(
        TEST,
        "def test_recorded_cases(case):",
        "def test_recorded_cases(case: str) -> None:",
    )
    repo.replace(
        TEST,
        "def test_inverted_range_raises():",
        "def test_inverted_range_raises() -> typing.Optional[typing.Sequence[str]]:",
    )
    repo.replace(TEST, "import json\n", "import json\nimport typing\n")
    repo.replace(
        PROPS,
        "def prop_idempotent(ranges):",
        'def prop_idempotent(ranges: "list[list[int]]") -> None:',
    )
    report = repo.gate(base, repo.commit("type hints"))
    assert report.verdict_of(TEST) is Verdict.PASS
    assert report.verdict_of(PROPS) is Verdict.PASS
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
