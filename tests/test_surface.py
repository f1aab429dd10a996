"""Assertion-surface extraction: invariance, sensitivity, structure, errors, spec examples."""

from __future__ import annotations

import ast
import os
import re
import textwrap
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import _native
from fixture_cases import FIXTURES, Case, read_cases
from oracle_gate import _fallback
from oracle_gate.errors import SurfaceError
from oracle_gate.surface import MAX_DEPTH, _Printer

SPEC = Path(__file__).resolve().parent.parent / "docs" / "surface.md"

Extract = Callable[[bytes, str], list[tuple[str, str]]]
# Every case runs once per backend, through the functions backend.py selects between.
_IMPLS: dict[str, Extract | None] = {
    "python": _fallback.extract_units,
    "native": None if _native is None else _native.extract_units,
}
_current: list[Extract] = [_fallback.extract_units]


def extract_units(source: bytes, path: str) -> list[tuple[str, str]]:
    """The extractor of the backend under test (chosen by the ``impl`` fixture)."""
    return _current[0](source, path)


@pytest.fixture(autouse=True, params=sorted(_IMPLS))
def impl(request: pytest.FixtureRequest) -> Iterator[str]:
    chosen = _IMPLS[request.param]
    if chosen is None:
        if os.environ.get("ORACLE_GATE_IMPL") == "native":
            pytest.fail("ORACLE_GATE_IMPL=native but the native extension is not built")
        pytest.skip("native extension is not built")
    _current[0] = chosen
    yield request.param
    _current[0] = _fallback.extract_units


def units(source: str) -> dict[str, str]:
    data = textwrap.dedent(source).encode("utf-8")
    return dict(extract_units(data, "tests/test_x.py"))


BASE = """
import pytest

EXPECTED = 42


def helper(value):
    return value * 2


@pytest.mark.parametrize("n", [1, 2, 3])
def test_double(n):
    result = helper(n)
    assert result == n * 2, "doubling"
    assert result < 100


def test_parse_rejects_garbage():
    with pytest.raises(ValueError, match="garbage"):
        int("garbage")


def test_ratio():
    assert 0.1 + 0.2 == pytest.approx(0.3, rel=1e-9)


class TestAnswer:
    def test_answer(self):
        assert compute() == EXPECTED


class TestLegacy(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(compute(), 42)
"""


# ---------------------------------------------------------------- invariance

REFORMATTED = """
import pytest

EXPECTED = (42)   # the answer



def helper(value):
    '''Twice the value.'''
    return value * 2

# a comment between definitions
@pytest.mark.parametrize(
    "n",
    [
        1,
        2,
        3,
    ],
)
def test_double(n):
    \"\"\"Doubling works.\"\"\"
    result = helper(n)  # trailing comment
    assert (result == (n * 2)), ("doubl" "ing")
    assert (
        result
        < 0x64
    )


def test_parse_rejects_garbage():
    with (pytest.raises(ValueError, match='garbage')):
        int('garbage')


def test_ratio():
    assert (0.1 + 0.2) == pytest.approx(.3, rel=1E-9)


class TestAnswer:
    '''Answers.'''

    def test_answer(self):

        assert compute() == EXPECTED


class TestLegacy(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(
            compute(),
            4_2,
        )
"""


def test_comments_docstrings_blank_lines_and_reformatting_do_not_change_units() -> None:
    assert units(REFORMATTED) == units(BASE)


def test_shifting_every_line_down_does_not_change_units() -> None:
    assert units("\n\n\n# header\n\n" + textwrap.dedent(BASE)) == units(BASE)


def test_crlf_line_endings_and_a_utf8_bom_do_not_change_units() -> None:
    plain = textwrap.dedent(BASE).encode()
    crlf = b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n")
    assert extract_units(crlf, "t.py") == extract_units(plain, "t.py")


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("assert x == 16", "assert x == 0x10"),
        ("assert x == 16", "assert x == 0o20"),
        ("assert x == 16", "assert x == 0b1_0000"),
        ("assert x == 1000000", "assert x == 1_000_000"),
        ("assert x == 0.5", "assert x == 5e-1"),
        ("assert x == 'ab'", 'assert x == "a" "b"'),
        ("assert x == 'A\\n'", "assert x == '\\x41\\N{LINE FEED}'"),
        ("assert x == b'A'", "assert x == b'\\x41'"),
        ("assert x == f'a{y}b'", "assert x == 'a' f'{y}' 'b'"),
        ("assert f'{x=}'", "assert f'x={x!r}'"),
        ("assert a and b and c", "assert (a and b) and c"),
        ("assert a or b or c", "assert a or (b or c)"),
        ("assert (x)", "assert ((((x))))"),
        ("assert f(x for x in y)", "assert f((x for x in y))"),
        ("assert x[1, 2]", "assert x[(1, 2)]"),
        ("assert u'x'", "assert 'x'"),
    ],
)
def test_equal_values_spelled_differently_give_the_same_unit(before: str, after: str) -> None:
    assert units(f"def test_a():\n    {after}\n") == units(f"def test_a():\n    {before}\n")


@pytest.mark.parametrize(
    "after",
    [
        "def test_a():\n    x = make()[:0]\n    assert x.ok\n",
        "def test_a():\n    x = make()\n    return\n    assert x.ok\n",
        "def test_a():\n    x = make()\n    x = Fake()\n    assert x.ok\n",
        "def test_a():\n    raise unittest.SkipTest('later')\n    x = make()\n    assert x.ok\n",
        "def test_a():\n    x = make()\n    getattr(pytest, 'sk' 'ip')('x')\n    assert x.ok\n",
    ],
)
def test_every_statement_of_a_test_is_part_of_its_unit(after: str) -> None:
    before = "def test_a():\n    x = make()\n    assert x.ok\n"
    assert units(after)["test_a"] != units(before)["test_a"]


@pytest.mark.parametrize(
    "after",
    [
        "def test_a():\n    made = make()\n    assert made.ok\n",
        "def test_a() -> None:\n    x: Thing = make()\n    assert x.ok\n",
        "def test_a():\n    'Docstring.'\n    x = (make())  # why\n    assert (x.ok)\n",
    ],
)
def test_renaming_a_local_or_annotating_does_not_change_the_unit(after: str) -> None:
    before = "def test_a():\n    x = make()\n    assert x.ok\n"
    assert units(after) == units(before)


@pytest.mark.parametrize(
    "after",
    [
        # The renamed local now collides with a global the function reads.
        "def test_a():\n    make = make()\n    assert make.ok\n",
        # A parameter names a fixture: never renumbered.
        "def test_a(y):\n    x = make()\n    assert x.ok\n",
        # A global statement makes the name module-level.
        "def test_a():\n    global x\n    x = make()\n    assert x.ok\n",
        # Two locals swapped in one place only.
        "def test_a():\n    x = make()\n    y = x\n    assert y.ok\n",
    ],
)
def test_renumbering_never_merges_different_bindings(after: str) -> None:
    before = "def test_a():\n    x = make()\n    y = x\n    assert x.ok\n"
    assert units(after) != units(before)


def test_class_attributes_in_a_nested_class_are_not_renumbered() -> None:
    source = "def test_a():\n    class Fake:\n        value = 1\n    assert Fake.value\n"
    renamed = source.replace("value = 1", "other = 1")
    assert units(source) != units(renamed)


# ---------------------------------------------------------------- sensitivity


def _changed(after_source: str) -> set[str]:
    before, after = units(BASE), units(after_source)
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def _edit(old: str, new: str) -> str:
    source = textwrap.dedent(BASE)
    assert source.count(old) == 1, old
    return source.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        ("EXPECTED = 42", "EXPECTED = 41", {"=EXPECTED"}),
        ("return value * 2", "return value * 3", {"helper"}),
        ("assert result == n * 2", "assert result != n * 2", {"test_double"}),
        ("assert result < 100", "assert result <= 100", {"test_double"}),
        ("assert result < 100", "assert result < 101", {"test_double"}),
        ('"doubling"', '"halving"', {"test_double"}),
        ("[1, 2, 3]", "[1, 2]", {"test_double"}),
        ('"n", [1', '"m", [1', {"test_double"}),
        ("pytest.raises(ValueError", "pytest.raises(Exception", {"test_parse_rejects_garbage"}),
        ('match="garbage"', 'match="garb"', {"test_parse_rejects_garbage"}),
        ('int("garbage")', 'int("x")', {"test_parse_rejects_garbage"}),
        ("    assert result < 100\n", "", {"test_double"}),
        ("def test_double(n):", "def test_double(n, m=1):", {"test_double"}),
        ("def test_double(n):", "def test_double(n: int) -> None:", set()),
        ("result = helper(n)", "doubled = helper(n)", {"test_double"}),
        ("def test_double(n):", "async def test_double(n):", {"test_double"}),
        (
            "def test_ratio():\n    assert 0.1 + 0.2 == pytest.approx(0.3, rel=1e-9)",
            "def test_ratio():\n    assert True",
            {"test_ratio"},
        ),
        ("rel=1e-9", "rel=1e-6", {"test_ratio"}),
        ("pytest.approx(0.3, rel=1e-9)", "pytest.approx(0.3)", {"test_ratio"}),
        (
            "self.assertEqual(compute(), 42)",
            "self.assertTrue(compute())",
            {"TestLegacy::test_equal"},
        ),
        ("class TestLegacy(unittest.TestCase):", "class TestLegacy:", {"TestLegacy"}),
    ],
)
def test_each_edit_to_what_is_asserted_changes_exactly_the_affected_unit(
    old: str, new: str, changed: set[str]
) -> None:
    assert _changed(_edit(old, new)) == changed


def test_adding_a_skip_mark_to_a_test_changes_its_unit() -> None:
    edited = _edit("def test_ratio():", "@pytest.mark.skip(reason='flaky')\ndef test_ratio():")
    assert _changed(edited) == {"test_ratio"}
    assert '@ (call pytest.mark.skip (= reason "flaky"))' in units(edited)["test_ratio"]


def test_skipping_a_whole_class_changes_the_class_unit() -> None:
    source = """
    import pytest

    class TestA:
        def test_one(self):
            assert one() == 1

        class TestInner:
            def test_two(self):
                assert two() == 2

    def test_three():
        assert three() == 3
    """
    skipped = source.replace("    class TestA:", "    @pytest.mark.skip\n    class TestA:")
    before, after = units(source), units(skipped)
    assert {k for k in before if before[k] != after[k]} == {"TestA"}
    assert set(before) == set(after)


def test_a_module_level_pytestmark_adds_a_unit() -> None:
    edited = _edit("EXPECTED = 42", "EXPECTED = 42\npytestmark = pytest.mark.skip")
    assert _changed(edited) == {"=pytestmark"}


def test_deleting_a_test_removes_its_unit() -> None:
    edited = _edit("def test_ratio():\n    assert 0.1 + 0.2 == pytest.approx(0.3, rel=1e-9)\n", "")
    assert set(units(BASE)) - set(units(edited)) == {"test_ratio"}


def test_renaming_a_test_removes_the_old_key_and_adds_the_new_one() -> None:
    edited = units(_edit("def test_ratio():", "def test_ratio_is_close():"))
    assert "test_ratio" not in edited
    assert "test_ratio_is_close" in edited


def test_moving_an_assert_into_a_helper_changes_the_test_and_creates_a_helper_unit() -> None:
    edited = _edit(
        "def helper(value):\n    return value * 2\n",
        "def helper(value):\n    assert value < 100\n    return value * 2\n",
    )
    edited = edited.replace("    assert result < 100\n", "")
    assert _changed(edited) == {"test_double", "helper"}
    assert units(edited)["helper"].splitlines()[1] == "(assert (cmp value < 100))"


@pytest.mark.parametrize(
    "wrapped",
    [
        "if False:\n        assert x == 1",
        "for _ in []:\n        assert x == 1",
        "try:\n        assert x == 1\n    except AssertionError:\n        pass",
        "with contextlib.suppress(AssertionError):\n        assert x == 1",
        "def never_called():\n        assert x == 1",
    ],
)
def test_wrapping_an_assert_so_it_cannot_fail_changes_the_unit(wrapped: str) -> None:
    plain = units("def test_a():\n    assert x == 1\n")
    assert units(f"def test_a():\n    {wrapped}\n") != plain


def test_editing_a_module_constant_changes_only_its_own_unit() -> None:
    source = """
    import pytest

    BASE = [1, 2]
    CASES = BASE + [3]
    OTHER = 7

    @pytest.mark.parametrize("n", CASES)
    def test_uses_cases(n):
        assert n > 0

    def test_uses_other():
        assert OTHER == 7
    """
    before = units(source)
    after = units(source.replace("BASE = [1, 2]", "BASE = [1]"))
    assert {k for k in before if before[k] != after[k]} == {"=BASE"}
    assert before["=BASE"] == "(= BASE (list 1 2))"


def test_editing_a_class_attribute_read_through_self_changes_the_unit() -> None:
    source = """
    class TestLimits:
        limit = 3

        def test_under_limit(self):
            assert count() < self.limit
    """
    assert units(source) != units(source.replace("limit = 3", "limit = 30"))


def test_a_bare_raises_imported_from_pytest_is_an_assertion() -> None:
    source = """
    from pytest import raises as must_raise

    def check():
        with must_raise(KeyError):
            lookup("x")
    """
    text = units(source)["check"]
    assert '(with ((call must_raise KeyError)) ((expr (call lookup "x"))))' in text
    assert units(source.replace("KeyError", "LookupError"))["check"] != text


def test_imports_are_units_keyed_by_the_names_they_bind() -> None:
    source = "import pytest as pt\nimport os.path\nfrom m import a, b as c\nfrom n import *\n"
    assert units(source) == {
        "=pt": "(import (as pytest pt))",
        "=os": "(import os.path)",
        "=a,c": "(from m a (as b c))",
        "=*": "(from n *)",
    }


@pytest.mark.parametrize(
    "call",
    [
        "pytest.skip('no')",
        "pytest.xfail('no')",
        "pytest.fail('no')",
        "np = pytest.importorskip('numpy')",
        "pytest.warns(UserWarning, f)",
        "pytest.deprecated_call(f)",
        "self.fail('no')",
        "self.skipTest('no')",
        "mock.assert_called_once_with(1)",
        "np.testing.assert_allclose(a, b)",
    ],
)
def test_every_helper_is_a_unit(call: str) -> None:
    assert "helper" in units(f"import pytest\n\ndef helper(self):\n    {call}\n")


def test_a_helper_that_does_not_assert_is_a_unit() -> None:
    assert units(BASE)["helper"] == "def helper (value)\n(return (* value 2))"


ANNOTATIONS = read_cases(FIXTURES / "surface" / "annotations.py")


def _statements(source: str) -> list[tuple[ast.stmt, str]]:
    lines = source.splitlines()
    found = []
    for node in ast.parse(source).body:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        found.append((node, "\n".join(lines[start - 1 : node.end_lineno])))
    return found


def with_changes(parent: str, changes: str) -> str:
    """``parent`` with each top-level definition of ``changes`` in place of the parent's
    of that name (the module an annotations case stands for); future imports first."""
    changed = _statements(changes)
    names = {getattr(node, "name", None) for node, _ in changed} - {None}
    future = [text for node, text in changed if isinstance(node, ast.ImportFrom)]
    kept = [text for node, text in _statements(parent) if getattr(node, "name", None) not in names]
    rest = [text for node, text in changed if not isinstance(node, ast.ImportFrom)]
    return "\n\n\n".join([*future, *kept, *rest]) + "\n"


@pytest.mark.parametrize("case", [c for c in ANNOTATIONS if c.kind != "parent"], ids=str)
def test_signature_annotations_that_run_code_are_part_of_their_unit(case: Case) -> None:
    """Cheats change exactly the unit they name; type hints change no unit of the parent."""
    before = units(ANNOTATIONS[0].source)
    after = units(with_changes(ANNOTATIONS[0].source, case.source))
    moved = {key for key, text in before.items() if after.get(key) != text}
    assert moved == ({case.expect} if case.kind == "cheat" else set())


# ---------------------------------------------------------------- structure


def test_keys_are_qualified_names_without_the_file_path_and_sorted() -> None:
    source = """
    def test_a():
        pass

    class TestA:
        def test_b(self):
            pass

        class Inner:
            def test_c(self):
                pass
    """
    assert [key for key, _ in extract_units(textwrap.dedent(source).encode(), "x.py")] == [
        "TestA",
        "TestA::Inner",
        "TestA::Inner::test_c",
        "TestA::test_b",
        "test_a",
    ]


def test_a_redefinition_is_a_unit_of_its_own() -> None:
    source = """
    def test_a():
        assert first()

    def test_a():
        assert second()
    """
    assert units(source) == {
        "test_a": "def test_a ()\n(assert (call first))",
        "test_a#2": "def test_a ()\n(assert (call second))",
    }


def test_a_redefined_class_keeps_the_methods_of_both() -> None:
    source = """
    class TestA:
        def test_old(self):
            pass

    class TestA:
        def test_new(self):
            pass
    """
    assert set(units(source)) == {"TestA", "TestA::test_old", "TestA#2", "TestA#2::test_new"}


def test_fixtures_are_units_with_or_without_call_arguments() -> None:
    source = """
    import pytest
    from pytest import fixture

    @pytest.fixture
    def plain():
        return 1

    @pytest.fixture(scope="session", params=[1, 2])
    def called(request):
        return request.param

    @fixture()
    def bare():
        return 2
    """
    found = units(source)
    assert set(found) == {"=pytest", "=fixture", "plain", "called", "bare"}
    assert found["called"] == (
        '@ (call pytest.fixture (= scope "session") (= params (list 1 2)))\ndef called (request)\n'
        "(return request.param)"
    )


def test_nested_functions_belong_to_the_enclosing_unit() -> None:
    source = """
    def test_outer():
        @retry(3)
        def inner(x):
            assert x > 0
        inner(1)
    """
    assert units(source) == {
        "test_outer": "def test_outer ()\n"
        "(def inner (x) (decorator (call retry 3)) ((assert (cmp x > 0))))\n"
        "(expr (call inner 1))"
    }


def test_definitions_under_module_level_conditions_are_one_unit() -> None:
    source = """
    if sys.version_info >= (3, 11):
        def test_new_syntax():
            assert run()
    """
    assert units(source) == {
        "=test_new_syntax": "(if (cmp sys.version_info >= (tuple 3 11)) "
        "((def test_new_syntax () ((assert (call run))))) ())"
    }


def test_signatures_render_every_kind_of_parameter() -> None:
    source = "def test_a(p, /, q: int = 1, *args: str, k, kd=None, **kw) -> None:\n    pass\n"
    assert units(source)["test_a"] == ("def test_a (p / (q = 1) *args k (kd = None) **kw)\n(pass)")


def test_match_statements_render_patterns() -> None:
    source = """
    def test_m():
        match cmd:
            case {"a": [1, *rest], **kw} if rest:
                assert rest
            case Point(x=0) | None:
                pytest.fail("no")
    """
    lines = units(source)["test_m"].splitlines()
    assert lines[1:] == [
        '(match cmd (case (pmap (: "a" (pseq (pvalue 1) (pstar rest))) (rest kw)) rest '
        "((assert rest))) "
        "(case (por (pclass Point () ((= x (pvalue 0)))) (psingleton None)) "
        '((expr (call pytest.fail "no")))))',
    ]


def test_constants_are_rendered_by_value_and_type() -> None:
    source = (
        "def test_c():\n"
        "    assert x == (1j, 1e16, 1e15, 0.0001, 1e-5, 1e999, True, None, ..., "
        "'\\u00e9\\U0001f600\\x7f\\t', b'\\x00\"\\\\', 0x" + "f" * 4000 + ")\n"
    )
    text = units(source)["test_c"].splitlines()[1]
    assert text.startswith(
        "(assert (cmp x == (tuple (complex 1.0) (float 1e+16) "
        "(float 1000000000000000.0) (float 0.0001) (float 1e-05) (float inf) True None ... "
        '"\\u00e9\\ud83d\\ude00\\u007f\\t" b"\\x00\\"\\\\" '
    )
    big = 16**4000 - 1  # 4817 decimal digits: past str()'s default limit on Python 3.11+
    digits = text.rsplit(" ", 1)[1].rstrip(")")
    assert len(digits) == 4817
    assert digits.isdigit()
    assert digits[:20] == str(big // 10 ** (4817 - 20))
    assert digits[-20:] == str(big % 10**20).zfill(20)


def test_unknown_nodes_fall_back_to_a_rendering_of_all_their_fields() -> None:
    class Novel(ast.expr):
        _fields = ("value", "items")

    printer = _Printer()
    one = printer.expr(Novel(value=ast.Constant(1), items=[ast.Name("a", ast.Load())]))
    two = printer.expr(Novel(value=ast.Constant(2), items=[ast.Name("a", ast.Load())]))
    assert one == "(?Novel (value 1) (items (a)))"
    assert one != two


# ---------------------------------------------------------------- errors


def test_a_syntax_error_is_a_surface_error_naming_path_and_line() -> None:
    with pytest.raises(SurfaceError) as info:
        extract_units(b"def test_a():\n    pass\n\ndef test_b(:\n    pass\n", "tests/test_x.py")
    assert info.value.path == "tests/test_x.py"
    assert info.value.line == 4
    assert str(info.value).startswith("tests/test_x.py:4: does not parse as Python: ")


def test_invalid_utf8_is_a_surface_error_at_the_line_of_the_bad_byte() -> None:
    with pytest.raises(SurfaceError) as info:
        extract_units(b"x = 1\r\ny = 2\rz = '\xff'\n", "t.py")
    assert (info.value.message, info.value.line) == ("is not valid UTF-8", 3)


@pytest.mark.parametrize(
    "source",
    [
        b"x = 1\ny = 2\0\n",
        # characters of more than one byte before it: the line is still the second
        "x = '\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9'\ny = 2\0\n".encode(),
        b"# -*- coding: latin-1 -*-\nx = '\xe9'\0\n",
    ],
)
def test_a_null_byte_is_a_surface_error_at_its_line(source: bytes) -> None:
    with pytest.raises(SurfaceError, match="null byte") as info:
        extract_units(source, "t.py")
    assert info.value.line == 2


def test_nesting_past_the_depth_limit_fails_closed_at_the_statement_line() -> None:
    deep = "-" * (MAX_DEPTH + 5)
    with pytest.raises(SurfaceError, match="nests more than 100 levels deep") as info:
        extract_units(f"import pytest\n\ndef test_a():\n    assert {deep}x\n".encode(), "t.py")
    assert info.value.line == 4


def test_nesting_up_to_the_depth_limit_is_rendered() -> None:
    deep = "-" * (MAX_DEPTH - 1)
    text = units(f"def test_a():\n    assert {deep}x\n")["test_a"]
    assert text.endswith("(neg x" + ")" * MAX_DEPTH)


def test_deep_nesting_in_a_helper_fails_too() -> None:
    deep = "-" * (MAX_DEPTH + 5)
    with pytest.raises(SurfaceError, match="nests more than") as info:
        units(f"X = 1\n\ndef helper():\n    y = {deep}x\n")
    assert info.value.line == 4


def test_invalid_escape_warnings_do_not_break_parsing_under_warnings_as_errors() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = units("def test_a():\n    assert re.match('\\d', s)\n")
    assert found == {"test_a": 'def test_a ()\n(assert (call re.match "\\\\d" s))'}


# ---------------------------------------------------------------- the spec's examples


def _spec_examples() -> list[tuple[str, str]]:
    text = SPEC.read_text(encoding="utf-8")
    sources = re.findall(r"```python surface-example\n(.*?)```", text, re.S)
    expected = re.findall(r"```text surface-expected\n(.*?)```", text, re.S)
    assert sources and len(sources) == len(expected)
    return list(zip(sources, expected, strict=True))


@pytest.mark.parametrize(("source", "expected"), _spec_examples())
def test_every_example_in_the_spec_is_what_the_extractor_produces(
    source: str, expected: str
) -> None:
    rendered = "".join(
        f"== {key}\n{text}\n" for key, text in extract_units(source.encode(), "example.py")
    )
    assert rendered == expected


# ---------------------------------------------------------------- properties

_LEAVES = st.one_of(
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(["x", "y", "result", "0.5", "'s'", "None"]),
)


def _exprs() -> st.SearchStrategy[tuple[str, str]]:
    """Pairs (plain, noisy) of one expression: the noisy one has extra parens and hex ints."""

    def leaf(value: int | str) -> tuple[str, str]:
        if isinstance(value, int):
            return str(value), hex(value)
        return value, value

    def combine(children: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
        ops = st.sampled_from(["+", "-", "*", "==", "<", "and", "or"])
        return st.tuples(children, ops, children).map(
            lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", f"((  {t[0][1]}\n {t[1]}  ({t[2][1]})))")
        )

    return st.recursive(_LEAVES.map(leaf), combine, max_leaves=8)


@settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(_exprs())
def test_formatting_noise_never_changes_a_unit(pair: tuple[str, str]) -> None:
    plain, noisy = pair
    assert units(f"def test_p():\n    assert {noisy}  # noise\n") == units(
        f"def test_p():\n    assert {plain}\n"
    )


@settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=10**9))
def test_changing_an_asserted_number_always_changes_the_unit(a: int, b: int) -> None:
    same = units(f"def test_p():\n    assert f() == {a}\n") == units(
        f"def test_p():\n    assert f() == {b}\n"
    )
    assert same == (a == b)


def test_fstring_literal_text_is_merged_and_empty_text_dropped_whatever_the_parser_split() -> None:
    # CPython 3.12.1 adds an empty Constant inside some format specs; ruff splits differently.
    field = ast.FormattedValue(ast.Name("x", ast.Load()), -1, None)
    split = ast.JoinedStr([ast.Constant(""), field, ast.Constant("a"), ast.Constant("b")])
    assert _Printer().expr(split) == '(fstr (fv x) "ab")'


# ---------------------------------------------------------------- source encodings


def test_a_koi8_r_cookie_decodes_as_python_does() -> None:
    source = '# -*- coding: koi8-r -*-\nGREETING = "привет"\n'.encode("koi8-r")
    assert dict(extract_units(source, "t.py")) == {
        "=GREETING": '(= GREETING "\\u043f\\u0440\\u0438\\u0432\\u0435\\u0442")'
    }


def test_a_cookie_on_line_two_after_a_shebang_counts() -> None:
    source = '#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\nS = "é"\n'
    assert dict(extract_units(source.encode("latin-1"), "t.py")) == {"=S": '(= S "\\u00e9")'}


def test_a_cookie_after_a_line_of_code_is_only_a_comment() -> None:
    source = 'import os\n# -*- coding: latin-1 -*-\nS = "é"\n'.encode("latin-1")
    with pytest.raises(SurfaceError, match="is not valid UTF-8") as info:
        extract_units(source, "t.py")
    assert info.value.line == 3


@pytest.mark.parametrize(
    "codec", ["unicode_escape", "raw_unicode_escape", "utf-7", "rot13", "utf-16", "hex", "idna"]
)
def test_a_transforming_codec_is_refused_at_its_cookie(codec: str) -> None:
    # Under unicode_escape the comment on line 3 would run `test_a = None`.
    source = f"#!/usr/bin/env python\n# coding: {codec}\n# \\x0atest_a = None\n"
    with pytest.raises(SurfaceError, match="not a plain text encoding") as info:
        extract_units(source.encode("ascii"), "t.py")
    assert (info.value.path, info.value.line) == ("t.py", 2)


def test_an_unknown_codec_and_a_bom_with_another_cookie_are_refused() -> None:
    with pytest.raises(SurfaceError, match="unknown encoding 'uft-8'"):
        extract_units(b"# coding: uft-8\nx = 1\n", "t.py")
    with pytest.raises(SurfaceError, match="byte order mark"):
        extract_units(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", "t.py")


def test_a_utf8_cookie_keeps_strict_utf8_errors() -> None:
    with pytest.raises(SurfaceError, match="is not valid UTF-8") as info:
        extract_units(b"# coding: utf-8\nx = 1\ny = '\xff'\n", "t.py")
    assert info.value.line == 3


def test_files_with_cookies_are_refused_in_path_order_by_the_batch_call() -> None:
    python = _current[0] is _fallback.extract_units
    batch = _fallback.extract_units_many if python else _native.extract_units_many
    items = [
        (b"x = 1\n", "c.py"),
        (b"# coding: utf-7\nx = 1\n", "b.py"),
        (b"# coding: rot13\nx = 1\n", "a.py"),
    ]
    with pytest.raises(SurfaceError) as info:
        batch(items)
    assert (info.value.path, info.value.line) == ("a.py", 1)
