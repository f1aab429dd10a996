from __future__ import annotations

import pytest

from oracle_gate.errors import ConfigError
from oracle_gate.matrix import parse_matrix

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
