from __future__ import annotations

import pytest

from oracle_gate.bazel.read import parse_build
from oracle_gate.config.matrix import gate_matrix, parse_matrix
from oracle_gate.errors import ConfigError

GOOD = b"""version: 1
owners: ["@team"]
tests: ["tests/**/test_*.py"]
rows:
  - id: r1
    globs: ["src/**/*.py"]
    budget: {examples: 5, seconds: 2.5}
"""


def test_valid_matrix_parses_every_field() -> None:
    matrix = parse_matrix(GOOD, "pkg/invariants.yaml")
    assert matrix.owners == ("@team",)
    assert matrix.rows[0].id == "r1"
    assert matrix.rows[0].budget.examples == 5
    assert matrix.rows[0].budget.seconds == 2.5


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (b"version: 1\nrows:\n  - globs: ['a']\n", 3, "has no id"),
        (b"version: 1\nrows:\n  - id: a\n", 3, "has no globs"),
        (
            b"version: 1\nrows:\n  - id: a\n    globs: ['x']\n  - id: a\n    globs: ['y']\n",
            5,
            "declared twice",
        ),
        (b"version: 2\n", 1, "not supported"),
        (b"version: 1\nrowz: []\n", 2, "unknown key 'rowz'"),
        (b"version: 1\nrows: [\n", 3, "invalid YAML"),
        (b"version: 1\nrows:\n  - id: a\n    globs: ['../x']\n", 4, "'..'"),
        (
            b"version: 1\nrows:\n  - id: a\n    globs: ['x']\n    properties: ['props']\n",
            5,
            "file.py:NAME",
        ),
        (
            b"version: 1\nrows:\n  - id: a\n    globs: ['x']\n    budget: {examples: 0}\n",
            5,
            "at least 1",
        ),
        (
            b"version: 1\nrows:\n  - id: a\n    globs: ['x']\n    budget: {examples: 1.5}\n",
            5,
            "row 'a': budget examples must be an integer of at least 1, found 1.5",
        ),
        (
            b"version: 1\nrows:\n  - id: a\n    globs: ['x']\n    budget: {examples: '5'}\n",
            5,
            "row 'a': budget examples must be an integer of at least 1, found '5'",
        ),
        (
            b"version: 1\nrows:\n  - id: a\n    globs: ['x']\n    budget:\n"
            b"      examples: 3\n      seconds: 0\n",
            7,
            "row 'a': budget seconds must be a positive number, found 0",
        ),
    ],
)
def test_invalid_matrix_names_file_and_line(text: bytes, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_matrix(text, "pkg/invariants.yaml")
    assert str(caught.value).startswith(f"pkg/invariants.yaml:{line}: ")
    assert words in str(caught.value)


def test_empty_matrix_is_an_error() -> None:
    with pytest.raises(ConfigError, match="is empty"):
        parse_matrix(b"", "pkg/invariants.yaml")


BUILD = """\
oracle_gate(
    name = "oracle_gate",
    rows = [
        invariant(id = "a", globs = ["x"], budget = {BUDGET}),
        invariant(id = "a", globs = ["y"]),
    ],
)
"""


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ("{examples: 0}", "row 'a': budget examples must be an integer of at least 1, found 0"),
        ("{seconds: -1}", "row 'a': budget seconds must be a positive number, found -1"),
        ("{}", "row id 'a' is declared twice; row ids must be unique in a package"),
    ],
)
def test_yaml_and_build_readers_report_a_row_mistake_alike(budget: str, message: str) -> None:
    yaml_text = (
        f"version: 1\nrows:\n  - {{id: a, globs: [x], budget: {budget}}}\n"
        "  - {id: a, globs: [y]}\n"
    )
    with pytest.raises(ConfigError) as from_yaml:
        parse_matrix(yaml_text.encode(), "pkg/invariants.yaml")
    starlark = budget.replace("examples", '"examples"').replace("seconds", '"seconds"')
    build = parse_build(BUILD.replace("{BUDGET}", starlark).encode(), "pkg/BUILD")
    with pytest.raises(ConfigError) as from_build:
        gate_matrix(build, "pkg/BUILD", "pkg", "", lambda: [])
    assert from_yaml.value.message == from_build.value.message == message


def test_both_readers_take_a_fractional_seconds_budget() -> None:
    yaml_text = b"version: 1\nrows:\n  - {id: a, globs: [x], budget: {seconds: 2.5}}\n"
    from_yaml = parse_matrix(yaml_text, "pkg/invariants.yaml")
    build = parse_build(
        BUILD.replace("{BUDGET}", '{"seconds": 2.5}')
        .replace('id = "a", globs = ["y"]', 'id = "b", globs = ["y"]')
        .encode(),
        "pkg/BUILD",
    )
    from_build, _ = gate_matrix(build, "pkg/BUILD", "pkg", "", lambda: [])
    assert from_yaml.rows[0].budget.seconds == from_build.rows[0].budget.seconds == 2.5


def test_a_control_character_is_invalid_yaml_naming_the_character() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_matrix(b"version: 1\x07\n", "pkg/invariants.yaml")
    assert caught.value.message.startswith("invalid YAML: unacceptable character #x0007")


_ROWS = b"""version: 1
fixtures: ["testdata/"]
rows:
  - id: a
    globs: ["a.py", "sub/*.py"]
    properties: ["props.py:prop_a"]
  - id: b
    globs: ["b.py", "sub/b*.py"]
    fixtures: ["cases/*.json"]
"""


def test_a_matrix_answers_for_all_its_rows_as_each_row_does() -> None:
    """What a matrix keeps for all its rows at once (matching rows, fixtures, oracle
    modules, its hash) says what asking the rows one by one says."""
    matrix = parse_matrix(_ROWS, "invariants.yaml")
    assert [row.id for row in matrix.rows_matching("sub/b1.py")] == ["a", "b"]
    assert [row.id for row in matrix.rows_matching("a.py")] == ["a"]
    assert matrix.rows_matching("c.py") == ()
    assert matrix.is_fixture("testdata/x/y.txt")
    assert matrix.is_fixture("cases/1.json")
    assert not matrix.is_fixture("cases/deep/1.json")
    assert matrix.oracle_modules == {"props.py"}
    again = parse_matrix(_ROWS, "invariants.yaml")
    assert hash(again) == hash(matrix)
    assert {matrix: 1}[again] == 1
