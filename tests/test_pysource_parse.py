"""The one parse of Python source (oracle_gate.pysource.parse) and the lanes that use it.

Every way ``ast.parse`` can refuse a file is one SurfaceError, and each caller keeps
what an unparseable file meant to it before; the files nested too deep for the parser,
and those with a null byte, used to escape some callers as internal errors.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable

import pytest

from gitrepo import TODAY, GitRepo
from oracle_gate.classify.setup_py import setup_py_effect
from oracle_gate.cli import main
from oracle_gate.config.package_layout import read_layout
from oracle_gate.config.public_api import module_functions, public_functions
from oracle_gate.errors import ConfigError, SurfaceError
from oracle_gate.facts import Facts, LanedPath, gather_facts
from oracle_gate.lanes import doctests, tamper
from oracle_gate.lanes.recorded import Recorded
from oracle_gate.lanes.tamper import added_marks
from oracle_gate.model import Finding, Lane, Matrix, Package, Verdict
from oracle_gate.propose.changes import changed_functions
from oracle_gate.pysource.parse import parse_python
from oracle_gate.report import Report
from oracle_gate.vet.mutants import file_mutants
from oracle_gate.vet.run import VetOptions, vet

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


# --- the callers: a file nested too deep (or with a null byte) is one that does not parse ---
#
# Each caller's outcome on such a file is compared with its outcome on a plain syntax
# error, which it always handled; before one parse, the deep files escaped as a
# RecursionError or MemoryError from every caller but imports and classify.

REFUSED = ["null", "chained", "unary", "parentheses"]
INTERVALS = "libs/intervals"
PROPOSE_PACKAGE = Package(
    path="", matrix=Matrix(owners=(), tests=(), fixtures=(), deps=(), rows=())
)
CORE = f"{INTERVALS}/intervals/_core.py"


def _broken_core(repo: GitRepo, source: bytes) -> str:
    """The example monorepo with doctests on, then ``source`` as the production module
    ``_core.py``: the head commit."""
    repo.write(f"{INTERVALS}/pytest.ini", "[pytest]\naddopts = --doctest-modules\n")
    base = repo.commit("doctests")
    (repo.path / CORE).write_bytes(source)
    repo.commit("core rewritten")
    return base


def _findings(report: Report) -> list[tuple[str | None, Verdict, str]]:
    return [(f.path, f.verdict, f.reason) for f in report.findings]


@pytest.mark.parametrize("name", REFUSED)
def test_the_gate_judges_a_file_that_nests_too_deep_as_one_that_does_not_parse(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    repo, _ = example_repo
    base = _broken_core(repo, BROKEN)
    expected = repo.judge_paths(base)
    (repo.path / CORE).write_bytes(UNPARSEABLE[name])
    repo.commit("core nested too deep")
    report = repo.judge_paths(base)
    assert (report.verdict, _findings(report)) == (expected.verdict, _findings(expected))


@pytest.mark.parametrize("lane", [doctests.judge, tamper.judge], ids=["doctests", "tamper"])
@pytest.mark.parametrize("name", REFUSED)
def test_each_python_lane_judges_it_as_a_syntax_error(
    example_repo: tuple[GitRepo, str],
    name: str,
    lane: Callable[[LanedPath, Facts], list[Finding]],
) -> None:
    repo, _ = example_repo
    outcomes = []
    for source in (BROKEN, UNPARSEABLE[name]):
        base = _broken_core(repo, source)
        facts = gather_facts(repo.path, base, "HEAD", TODAY)
        (change,) = [c for c in facts.diff.changes if c.path == CORE]
        laned = LanedPath(change, Lane.PRODUCTION, facts.head_graph.package_of(CORE))
        outcomes.append([(f.verdict, f.reason) for f in lane(laned, facts)])
        repo.write(f"{INTERVALS}/pytest.ini", "")  # the next base changes it again
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("name", REFUSED)
def test_tamper_reads_no_marks_from_either_side_that_does_not_parse(name: str) -> None:
    head = b"import pytest\n"
    assert added_marks(None, UNPARSEABLE[name], frozenset(), Recorded([])) == []
    assert added_marks(UNPARSEABLE[name], head, frozenset(), Recorded([])) == added_marks(
        None, head, frozenset(), Recorded([])
    )


@pytest.mark.parametrize("name", REFUSED)
def test_a_public_module_that_does_not_parse_is_a_config_error_naming_it(name: str) -> None:
    with pytest.raises(ConfigError) as raised:
        public_functions(UNPARSEABLE[name], "pkg/mod.py")
    assert str(raised.value).startswith("pkg/mod.py")
    assert "does not parse as Python: " in str(raised.value)
    with pytest.raises(ConfigError, match=r"^pkg/mod\.py(:\d+)?: does not parse as Python: "):
        read_layout(["mod.py"], {"mod.py": UNPARSEABLE[name]}, prefix="pkg/")


@pytest.mark.parametrize("name", REFUSED)
def test_a_stub_or_test_file_that_does_not_parse_is_passed_over(name: str) -> None:
    files = ["geo/__init__.py", "geo/area.py", "geo/area.pyi", "tests/test_area.py"]
    read = {
        "geo/__init__.py": b"",
        "geo/area.py": b"def cells(n):\n    return n\n",
        "geo/area.pyi": BROKEN,
        "tests/test_area.py": b"import geo\n" + BROKEN,
    }
    expected = read_layout(files, read)
    read["geo/area.pyi"] = read["tests/test_area.py"] = UNPARSEABLE[name]
    assert read_layout(files, read) == expected
    assert [f.name for f in module_functions(read, "geo/area.py", "")] == ["cells"]


@pytest.mark.parametrize("name", REFUSED)
def test_propose_finds_no_changed_function_in_a_head_that_does_not_parse(name: str) -> None:
    head = UNPARSEABLE[name].decode("utf-8")
    assert changed_functions(PROPOSE_PACKAGE, "m.py", "def f():\n    pass\n", head) == []


@pytest.mark.parametrize("name", REFUSED)
def test_propose_passes_over_an_unchanged_module_that_does_not_parse(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    """_symbols reads every production module of a touched package, changed or not."""
    repo, _ = example_repo
    registers = []
    for source in (BROKEN, UNPARSEABLE[name]):
        (repo.path / f"{INTERVALS}/intervals/deep.py").write_bytes(source)
        base = repo.commit("a module that does not parse")
        repo.replace(f"{INTERVALS}/intervals/__init__.py", "sorted(ranges)", "ranges")
        repo.commit("agent: faster merge")
        assert main(["propose", "--repo", str(repo.path), "--base", base]) == 0
        registers.append(repo.read(f"{INTERVALS}/assumptions.yaml"))
        repo.git("checkout", "-q", "--", ".")
        repo.replace(f"{INTERVALS}/intervals/__init__.py", "in ranges", "in sorted(ranges)")
    assert registers[1] == registers[0] and "A002" in registers[0]


@pytest.mark.parametrize("name", REFUSED)
def test_vet_makes_no_mutants_of_a_file_that_does_not_parse(name: str) -> None:
    with pytest.raises(SurfaceError, match=r"^m\.py(:\d+)?: does not parse as Python: "):
        file_mutants("m.py", UNPARSEABLE[name], 5, 0)


def test_vet_notes_a_guarded_file_that_does_not_parse(repo: GitRepo) -> None:
    files = {
        "libs/label/label/__init__.py": 'def label(n):\n    return "big" if n > 10 else "small"\n',
        "libs/label/label/deep.py": CHAINED.decode(),
        "libs/label/strong.py": (
            'SUBJECT = "label:label"\n'
            'PARTITIONS = [{"id": "P1", "kind": "representative", "input": 3, '
            '"contract": lambda o: o == "small"}]\n'
        ),
        "libs/label/invariants.yaml": (
            'version: 1\nowners: ["@t"]\ntests: []\nrows:\n  - id: strong\n'
            '    globs: ["label/*.py"]\n    partitions: ["strong.py:PARTITIONS"]\n'
            "    budget: {examples: 5, seconds: 5}\n"
        ),
    }
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("package")
    (row,) = vet(repo.path, VetOptions(today=TODAY)).rows
    assert "libs/label/label/deep.py:1: does not parse, so it has no mutants" in row.notes


# --- the cached tree is every caller's: none may change it ------------------------------


def test_a_caller_that_rewrites_its_tree_leaves_the_cached_one_alone() -> None:
    """setup.py's meaning blanks setup()'s packaging keywords in a tree."""
    source = (
        b"from setuptools import setup\n\n"
        b"setup(name='x', version='1.0', entry_points={'pytest11': ['p = p'], 'other': []})\n"
    )
    parse_python(source, "setup.py")
    effect = setup_py_effect(source, source.replace(b"1.0", b"1.1"), is_helper=lambda _: False)
    assert not effect.harness
    assert ast.dump(parse_python(source, "setup.py")) == ast.dump(ast.parse(source))
