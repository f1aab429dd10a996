"""What a split hint (runtime/split_hints.py) stands for: as many tests or more, within no
larger a budget, for a week; anything unreadable is no hint."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from oracle_gate.runtime.split_hints import SplitHints, hint_key

KEY = hint_key("pkg", {"files": "abc"})


@pytest.fixture
def hints(tmp_path: Path) -> SplitHints:
    return SplitHints(tmp_path / "hints")


@pytest.mark.parametrize(
    ("tests", "budget", "expected"),
    [
        (100, 60.0, True),  # the same run
        (500, 60.0, True),  # more tests: slower still
        (None, 60.0, True),  # every test
        (99, 60.0, False),  # fewer tests may fit
        (100, 61.0, False),  # a larger budget may hold them
    ],
)
def test_a_hint_stands_for_as_many_tests_within_no_larger_a_budget(
    hints: SplitHints, tests: int | None, budget: float, expected: bool
) -> None:
    hints.remember(KEY, 100, 60.0)
    assert hints.too_slow(KEY, tests, budget) is expected


def test_a_hint_of_every_test_says_nothing_of_a_selection(hints: SplitHints) -> None:
    hints.remember(KEY, None, 60.0)
    assert hints.too_slow(KEY, None, 60.0)
    assert not hints.too_slow(KEY, 10_000, 60.0)


def test_another_key_an_old_hint_or_a_corrupt_one_is_no_hint(hints: SplitHints) -> None:
    assert not hints.too_slow(KEY, 100, 60.0)
    hints.remember(KEY, 100, 60.0)
    assert not hints.too_slow(hint_key("other", {"files": "abc"}), 100, 60.0)
    path = next(hints.directory.glob("*.json"))  # type: ignore[union-attr]
    path.write_text(json.dumps({"tests": 100, "budget": 60.0, "at": time.time() - 8 * 86400}))
    assert not hints.too_slow(KEY, 100, 60.0)
    for text in ("{", '{"tests": "x", "budget": 60, "at": 1e12}', "[]"):
        path.write_text(text)
        assert not hints.too_slow(KEY, 100, 60.0)


def test_without_a_directory_nothing_is_kept() -> None:
    hints = SplitHints(None)
    hints.remember(KEY, 1, 1.0)
    assert not hints.too_slow(KEY, 1, 1.0)
