"""runtime/consumers.py: which calls take every item of a value at once, and the split run
that asks production for all of them in one question when one of them is iterating."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oracle_gate.runtime import sandbox
from oracle_gate.runtime.consumers import exhausts

needs_positions = pytest.mark.skipif(sys.version_info < (3, 11), reason="co_positions: 3.11+")


class _Probe:
    """Records, each time it is iterated, whether the iterating call exhausts it."""

    def __init__(self) -> None:
        self.seen: list[bool] = []

    def __iter__(self) -> Iterator[int]:
        self.seen.append(exhausts(sys._getframe(1)))
        return iter([1, 2])


@needs_positions
def test_list_tuple_and_sorted_of_one_value_exhaust_it() -> None:
    probe = _Probe()
    list(probe)
    tuple(probe)
    sorted(probe, key=lambda v: -v)
    assert probe.seen == [True, True, True]


@needs_positions
def test_loops_partial_consumers_and_other_calls_do_not() -> None:
    probe = _Probe()
    for _ in probe:
        break
    set(probe)
    next(iter(probe))
    zip(probe, probe, strict=False)
    [v for v in probe]  # a comprehension iterates in its own frame
    list(  # a call spread over lines, with a second argument: not list(x)
        *[probe]
    )
    assert probe.seen == [False] * 7


@needs_positions
def test_a_name_that_is_not_the_builtin_does_not() -> None:
    probe = _Probe()
    list = tuple  # shadowed on purpose: tuple exhausts too, but it is not list
    list(probe)

    def listed(value: Any) -> Any:
        return [*value]

    sorted = listed
    sorted(probe)
    assert probe.seen == [False, False]


SOURCE = """\
STATE = {"bumped": 0}


def count(n):
    for i in range(n):
        yield i + STATE["bumped"]


def bump():
    STATE["bumped"] = 100


def fails_after(n):
    yield from range(n)
    raise ValueError("done")


class Strict:
    def __iter__(self):
        return iter([1])

    def __len__(self):
        raise LookupError("no length")
"""
TESTS = """\
import pytest

import mod


def test_list_of_a_generator():
    assert list(mod.count(10000)) == list(range(10000))


def test_tuple_and_sorted():
    assert tuple(mod.count(3)) == (0, 1, 2)
    assert sorted(mod.count(3), key=lambda v: -v) == [2, 1, 0]


def test_a_loop_sees_what_happens_between_items():
    items = mod.count(3)
    assert next(items) == 0
    mod.bump()
    assert next(items) == 101


def test_an_exception_after_some_items():
    with pytest.raises(ValueError, match="done"):
        list(mod.fails_after(3))


def test_the_length_hint_raising_stops_tuple_before_any_item():
    with pytest.raises(LookupError, match="no length"):
        tuple(mod.Strict())
"""


def _run_split(root: Path) -> dict[str, Any]:
    (root / "tests").mkdir(parents=True)
    (root / "mod.py").write_text(SOURCE)
    (root / "tests" / "test_mod.py").write_text(TESTS)
    runner = sandbox.Runner(library=sandbox.library_paths(exclude=(root,)), bwrap=None)
    files = ["tests/test_mod.py"]
    request = {"role": "pytest_split", "files": files, "test_side": files, "handles": True}
    return runner.run_served(request, root, import_paths=[root], checkout=root, timeout=120)


@needs_positions
def test_a_split_run_drains_what_list_tuple_and_sorted_iterate_and_nothing_else(
    tmp_path: Path,
) -> None:
    """Every test passes split as in one process; 10,000 items cost a few questions."""
    answer = _run_split(tmp_path / "project")
    outcomes = answer["outcomes"]
    assert all(str(o).startswith("passed") for o in outcomes.values()), outcomes
    assert len(outcomes) == 5
    # an import, describes, calls and a few drains: far fewer than one per item
    assert answer["questions"] < 100, answer["questions"]
