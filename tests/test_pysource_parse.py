"""The one parse of Python source (oracle_gate.pysource.parse) and the lanes that use it.

Every way ``ast.parse`` can refuse a file is one SurfaceError, and each caller keeps
what an unparseable file meant to it before; the files nested too deep for the parser,
and those with a null byte, used to escape some callers as internal errors.
"""

from __future__ import annotations

import ast
import warnings

import pytest

from oracle_gate.errors import SurfaceError
from oracle_gate.pysource.parse import parse_python

# Refusals by each route CPython has: a syntax error, a null byte, a parser that runs
# out of stack on a long chain of operators (RecursionError) or of unary operators
# (MemoryError), and parentheses nested past the tokenizer's limit.
BROKEN = b"def f(:\n    pass\n"
NULL = b"x = 1\ny = '\0'\n"
CHAINED = b"x = " + b"1 + " * 100_000 + b"1\n"
UNARY = b"x = " + b"-" * 100_000 + b"1\n"
PARENTHESES = b"x = " + b"(" * 100_000 + b")" * 100_000 + b"\n"
UNPARSEABLE = {
    "syntax": BROKEN,
    "null": NULL,
    "chained": CHAINED,
    "unary": UNARY,
    "parentheses": PARENTHESES,
}


def test_a_good_module_parses() -> None:
    tree = parse_python(b"def f(x):\n    return x + 1\n", "pkg/good.py")
    assert ast.dump(tree) == ast.dump(ast.parse("def f(x):\n    return x + 1\n"))


def test_a_syntax_error_names_the_path_and_the_line() -> None:
    with pytest.raises(SurfaceError) as raised:
        parse_python(b"x = 1\n" + BROKEN, "pkg/broken.py")
    assert (raised.value.path, raised.value.line) == ("pkg/broken.py", 2)
    assert str(raised.value).startswith("pkg/broken.py:2: does not parse as Python: ")
    assert "\n" not in str(raised.value)


def test_a_null_byte_is_a_surface_error_on_its_line() -> None:
    with pytest.raises(SurfaceError) as raised:
        parse_python(NULL, "pkg/null.py")
    message = "does not parse as Python: source contains a null byte"
    assert str(raised.value) == f"pkg/null.py:2: {message}"


@pytest.mark.parametrize("name", ["chained", "unary", "parentheses"])
def test_nesting_too_deep_is_a_surface_error(name: str) -> None:
    """Not the RecursionError or MemoryError CPython's parser raises."""
    with pytest.raises(SurfaceError) as raised:
        parse_python(UNPARSEABLE[name], "pkg/deep.py")
    assert str(raised.value).startswith("pkg/deep.py")
    assert "does not parse as Python: " in str(raised.value)


def test_a_refusal_is_cached_by_content_and_names_each_callers_path() -> None:
    for path in ("a.py", "b.py"):
        with pytest.raises(SurfaceError) as raised:
            parse_python(CHAINED, path)
        assert str(raised.value) == f"{path}: does not parse as Python: nests too deeply"


def test_equal_bytes_give_the_same_tree() -> None:
    source = b"import os\nVALUE = os.sep\n"
    first = parse_python(source, "one.py")
    assert parse_python(bytes(bytearray(source)), "two.py") is first
    assert parse_python(source + b"\n", "one.py") is not first


def test_invalid_escapes_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree = parse_python(b"PATTERN = '\\d+'\n", "pkg/escape.py")
    assert isinstance(tree.body[0], ast.Assign)


def test_a_coding_cookie_is_obeyed() -> None:
    tree = parse_python("# -*- coding: latin-1 -*-\nNAME = 'é'\n".encode("latin-1"), "l.py")
    assert ast.literal_eval(tree.body[0].value) == "é"  # type: ignore[attr-defined]
