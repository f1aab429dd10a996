"""runtime/impact.py: which code a change reaches, compared by code object, and which tests
it reaches through their footprints."""

from __future__ import annotations

import dataclasses

import pytest

from oracle_gate.runtime.impact import (
    Change,
    ChangeKind,
    Footprint,
    Impact,
    entries,
    file_change,
    kept_lines,
    listing_changes,
)

SOURCE = '''"""A module."""
import math

LIMIT = 10


def area(r):
    return math.pi * r * r


class Shape:
    sides = 0

    def name(self):
        return "shape"


def outer():
    return sorted([3, 1], key=lambda v: -v)
'''


def _change(new: str, old: str = SOURCE) -> Change:
    return file_change("m.py", old.encode(), new.encode())


@pytest.mark.parametrize(
    "new",
    [
        SOURCE.replace("import math\n", "import math  # for pi\n"),
        SOURCE.replace("LIMIT = 10\n", "\n\nLIMIT = 10\n"),
        SOURCE.replace("    return math.pi * r * r", "    return (math.pi\n            * r * r)"),
    ],
    ids=["comment", "blank-lines", "reflowed"],
)
def test_comments_layout_and_line_numbers_reach_no_code(new: str) -> None:
    assert _change(new).units == frozenset()


@pytest.mark.parametrize(
    ("new", "unit"),
    [
        (SOURCE.replace("math.pi * r * r", "r * r * math.pi"), "/area#0"),
        (SOURCE.replace('return "shape"', 'return "Shape"'), "/Shape#0/name#0"),
        (SOURCE.replace("-v", "v"), "/outer#0/<lambda>#0"),
    ],
    ids=["function", "method", "lambda"],
)
def test_a_change_inside_a_function_reaches_that_function_only(new: str, unit: str) -> None:
    change = _change(new)
    assert change.units is not None and unit in change.units
    assert "" not in change.units


@pytest.mark.parametrize(
    "new",
    [
        SOURCE.replace("LIMIT = 10", "LIMIT = 11"),
        SOURCE.replace("import math\n", "import math\nimport os\n"),
        SOURCE + "\n\ndef added():\n    return 0\n",
        SOURCE.replace("def area(r):", "@staticmethod\ndef area(r):"),
        SOURCE.replace('"""A module."""', '"""A module, documented."""'),
        SOURCE.replace("def area(r):", "def area(r=LIMIT):"),
        SOURCE + "\ndef broken(:\n",
    ],
    ids=["constant", "import", "new-function", "decorator", "docstring", "default", "syntax"],
)
def test_a_change_to_module_code_reaches_the_whole_file(new: str) -> None:
    assert _change(new).units is None


def test_a_class_body_change_is_that_class_bodys_unit() -> None:
    change = _change(SOURCE.replace("sides = 0", "sides = 1"))
    assert change.units == frozenset({"/Shape#0"})


def test_a_file_that_is_not_python_changes_throughout() -> None:
    assert file_change("data.json", b"{}", b"[]").units is None


def _footprint(
    lines: dict[str, set[int]],
    opened: frozenset[str] = frozenset(),
    listed: frozenset[str] = frozenset(),
    unrecorded: str = "",
    rendered: dict[str, set[int]] | None = None,
) -> Footprint:
    return Footprint(
        {f: frozenset(v) for f, v in lines.items()},
        opened,
        listed,
        unrecorded,
        {f: frozenset(v) for f, v in (rendered or {}).items()},
    )


def test_a_test_that_ran_the_changed_function_is_reached_and_one_that_did_not_is_not() -> None:
    impact = Impact((_change(SOURCE.replace("math.pi * r * r", "r * r * math.pi")),))
    ran_area = _footprint({"m.py": {2, 4, 7, 8}})
    ran_name = _footprint({"m.py": {2, 4, 15}})
    only_defined = _footprint({"m.py": {1, 2, 4, 7, 11, 12, 14, 18}})  # importing runs def lines
    assert impact.reason(ran_area) == "it ran area in m.py, which the patch changes"
    assert impact.reason(ran_name) == ""
    assert impact.reason(only_defined) == ""


def test_opened_files_listed_directories_and_unrecorded_footprints_are_reached() -> None:
    data = file_change("pkg/data/a.json", b"1", b"2")
    files = {"pkg/x.py", "pkg/data/a.json"}
    added = Change(
        "pkg/plugins/new.py",
        ChangeKind.ADDED,
        listings=listing_changes("pkg/plugins/new.py", entries(files)),
    )
    impact = Impact((data, added))
    assert impact.reason(_footprint({}, opened=frozenset({"pkg/data/a.json"}))) == (
        "it read pkg/data/a.json, which the patch changes"
    )
    assert impact.reason(_footprint({}, listed=frozenset({"pkg"}))) == (
        "it listed pkg, where the patch adds pkg/plugins/new.py"
    )
    assert impact.reason(_footprint({}, listed=frozenset({"pkg/data"}))) == ""
    assert impact.reason(_footprint({}, unrecorded="it started a process")) == (
        "its footprint could not be recorded (it started a process)"
    )


def test_pytest_reading_its_configuration_reaches_only_where_its_sections_moved() -> None:
    bumped = file_change("pyproject.toml", b'version = "1"', b'version = "2"')
    kept = dataclasses.replace(bumped, pytest_sections_kept=True)
    configured = Footprint(configured=frozenset({"pyproject.toml"}))
    assert Impact((kept,)).reason(configured) == ""
    assert Impact((bumped,)).reason(configured) == (
        "pytest read its configuration from pyproject.toml, which the patch changes"
    )
    # a read of the same file by anything but pytest's loader counts whatever its sections
    assert Impact((kept,)).reason(Footprint(opened=frozenset({"pyproject.toml"}))) == (
        "it read pyproject.toml, which the patch changes"
    )


def test_a_file_added_in_an_existing_directory_changes_that_listing_only() -> None:
    tree = entries({"a/b/c.py", "a/d.py"})
    assert listing_changes("a/b/new.py", tree) == {"a/b"}
    assert listing_changes("a/e/f/new.py", tree) == {"a/e/f", "a/e", "a"}
    assert listing_changes("top.py", tree) == {""}


def test_a_changed_symbolic_link_reaches_every_test() -> None:
    impact = Impact((Change("pkg/current", ChangeKind.LINK),))
    assert impact.reason(_footprint({})) == "the patch changes the symbolic link pkg/current"


def test_the_session_footprint_is_every_tests() -> None:
    session = _footprint({"m.py": {2}}, opened=frozenset({"conf.json"}))
    merged = _footprint({"m.py": {8}}).with_session(session)
    assert merged.lines["m.py"] == {2, 8}
    assert merged.opened == {"conf.json"}


def test_a_line_a_test_was_shown_reaches_it_only_when_its_text_changes() -> None:
    before = b"a = 1\nb = 2\nc = 3\n"
    moved = Impact((file_change("m.py", before, b"# new\n" + before),))
    edited = Impact((file_change("m.py", before, before.replace(b"b = 2", b"b = 2  # why")),))
    shown_b = _footprint({}, rendered={"m.py": {2}})
    assert moved.reason(shown_b) == ""
    assert edited.reason(shown_b) == ("it showed line 2 of m.py, whose text the patch changes")
    assert edited.reason(_footprint({}, rendered={"m.py": {3}})) == ""


def test_no_line_keeps_its_text_when_the_two_sides_decode_otherwise() -> None:
    text = b"x = 1\ny = '\xe9'\n"
    assert kept_lines("m.txt", text, text + b"z = 2\n") == {1, 2}
    latin, cp1252 = b"# coding: latin-1\n" + text, b"# coding: cp1252\n" + text
    assert kept_lines("m.py", latin, cp1252) == set()
    assert kept_lines("m.txt", b"\xef\xbb\xbf" + text, text) == set()


def test_a_line_of_code_is_followed_to_where_its_instructions_are_on_the_head() -> None:
    before = b'def fail():\n    raise ValueError("no")\n\n\ndef other():\n    return 2\n'
    moved = b"# new\n" + before.replace(b"2\n", b"3\n")
    assert kept_lines("m.py", before, moved) == {1, 2, 4}
    # the same text stays in the file, but the instruction the test is shown now sits
    # on an edited line (the code after a raise is never compiled): not kept
    twin = before.replace(b'("no")\n', b'("no")  # why\n    raise ValueError("no")\n', 1)
    assert 2 not in kept_lines("m.py", before, twin)
    # no code on a line: kept only where it was
    assert kept_lines("m.txt", b"a\nb\n", b"new\na\nb\n") == set()
