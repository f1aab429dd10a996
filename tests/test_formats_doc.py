# ruff: noqa: E501  (the table keeps each mistake and its message on one line)
"""docs/formats.md quotes the real error of every mistake it lists, word for word.

Each case feeds one mistake to the reader the gate uses (or runs the gate on a
patch that makes it) and checks both the message and that the page quotes it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitrepo import GitRepo
from oracle_gate.config.ledgers import parse_assumptions, parse_freeze, parse_seeds
from oracle_gate.config.lockfile import parse_lock
from oracle_gate.config.matrix import parse_matrix
from oracle_gate.config.scaffold import render_settings
from oracle_gate.config.settings import Settings, limit_defaults, read_settings
from oracle_gate.errors import GateError
from oracle_gate.repo.trees import GitTree

DOC = (Path(__file__).resolve().parent.parent / "docs" / "formats.md").read_text(encoding="utf-8")

ROW = "version: 1\nrows:\n  - id: a\n    globs: ['x']\n"
CASES: list[tuple[Callable[[bytes, str], Any], str, str, str]] = [
    (parse_matrix, "invariants.yaml", "", "1: is empty; expected a mapping with 'version' and 'rows'"),
    (parse_matrix, "invariants.yaml", "rows: []\n", "1: has no 'version'; expected version: 1"),
    (parse_matrix, "invariants.yaml", "version: 2\nrows: []\n", "1: version 2 is not supported; expected 1"),
    (parse_matrix, "invariants.yaml", "version: 1\ntest: ['x']\nrows: []\n",
     "2: unknown key 'test' in the matrix; expected one of deps, fixtures, owners, replay, rows, tests, version"),
    (parse_matrix, "invariants.yaml", "version: 1\nowners: '@a'\nrows: []\n",
     "2: owners must be a list, found '@a'"),
    (parse_matrix, "invariants.yaml", "version: 1\nrows: {}\n", "2: rows must be a list, found a mapping"),
    (parse_matrix, "invariants.yaml", "version: 1\nrows:\n  - globs: ['a/**']\n",
     "3: rows[0] has no id; every row needs an id unique in the package"),
    (parse_matrix, "invariants.yaml", "version: 1\nrows:\n  - id: a b\n    globs: ['x']\n",
     "3: row id 'a b' may only hold letters, digits, _ . - and must start with a letter or digit"),
    (parse_matrix, "invariants.yaml", ROW + "  - id: a\n    globs: ['y']\n",
     "5: row id 'a' is declared twice; row ids must be unique in a package"),
    (parse_matrix, "invariants.yaml", "version: 1\nrows:\n  - id: a\n",
     "3: row 'a' has no globs; every row guards at least one production path"),
    (parse_matrix, "invariants.yaml", "version: 1\nrows:\n  - id: a\n    globs: ['../x']\n",
     "4: row 'a': globs entry '../x' has an empty, '.' or '..' segment"),
    (parse_matrix, "invariants.yaml", ROW + "    properties: ['props.py']\n",
     "5: row 'a': properties entry 'props.py' is not of the form 'file.py:NAME'"),
    (parse_matrix, "invariants.yaml", ROW + "    colour: red\n",
     "5: rows[0] has unknown key 'colour'; expected one of id, globs, properties, partitions, relations, fixtures, budget"),
    (parse_matrix, "invariants.yaml", ROW + "    budget: {examples: -1}\n",
     "5: row 'a': budget examples must be an integer of at least 1, found -1"),
    (parse_matrix, "invariants.yaml", "version: 1\nreplay: {seconds: 0}\nrows: []\n",
     "2: replay seconds must be in (0, 86400], found 0"),
    (parse_matrix, "invariants.yaml", "version: 1\nrows: [\n",
     "3: invalid YAML: expected the node content, but found '<stream end>'"),
    (parse_lock, "oracle_gate.lock", "[]",
     "1: must be a JSON object with 'version', 'fixtures' and 'surface'"),
    (parse_lock, "oracle_gate.lock", '{"version": 0, "fixtures": {}, "surface": {}}',
     "1: lock version 0 is not supported; expected 1 or 2"),
    (parse_lock, "oracle_gate.lock", '{"version": 2, "fixtures": {}, "surface": {}}',
     "1: 'algorithms' must map digest and surface to versions, found None"),
    (parse_lock, "oracle_gate.lock",
     '{"version": 2, "written_by": "9.0.0", "algorithms": {"digest": 1, "surface": 99}, "fixtures": {}, "surface": {}}',
     "1: written by a newer oracle-gate (9.0.0, surface v99, digest v1) than this one (surface v2, digest v1); upgrade oracle-gate to read it"),
    (parse_lock, "oracle_gate.lock", '{"version": 3, "fixtures": {}, "surface": {}}',
     "1: written by a newer oracle-gate (lock format 3) than this one (surface v2, digest v1); upgrade oracle-gate to read it"),
    (parse_lock, "oracle_gate.lock", "{", "1: is not valid JSON: Expecting property name enclosed in double quotes"),
    (parse_lock, "oracle_gate.lock", '{"version": 1, "fixtures": {"a": 1}, "surface": {}}',
     "1: 'fixtures' entry 'a' has digest 1; expected 64 lowercase hex digits (BLAKE3)"),
    (parse_seeds, "seeds.jsonl", "{\n", "1: is not valid JSON: Expecting property name enclosed in double quotes"),
    (parse_seeds, "seeds.jsonl", "[1]\n", "1: each line must be a JSON object"),
    (parse_seeds, "seeds.jsonl", '{"row": "r", "prop": "p", "input": 1}\n',
     "1: seed has no 'expect'; seeds need row, prop, input, expect"),
    (parse_seeds, "seeds.jsonl", '{"row": "r", "prop": "p", "input": 1, "expect": "maybe"}\n',
     "1: expect must be 'hold' or 'fail', found 'maybe'"),
    (parse_seeds, "seeds.jsonl",
     '{"row": "r", "prop": "p", "input": 1, "expect": "hold", "status": "gone"}\n',
     "1: status must be 'active' or 'retired', found 'gone'"),
    (parse_freeze, "flake_freeze.yaml", "- a\n", "1: the freeze ledger must be a mapping, found a list"),
    (parse_freeze, "flake_freeze.yaml", "frozen: {}\n", "1: 'frozen' must be a list, found a mapping"),
    (parse_freeze, "flake_freeze.yaml", "frozen:\n  - reason: x\n",
     "2: frozen entry names neither nodeid nor row + input_hash"),
    (parse_freeze, "flake_freeze.yaml", "frozen:\n  - nodeid: t.py::x\n    expires: soon\n",
     "3: expires must be a YYYY-MM-DD date, found 'soon'"),
    (parse_freeze, "flake_freeze.yaml", "frozen: []\nbudget: -1\n",
     "2: budget must be a whole number >= 0, found -1"),
    (parse_assumptions, "assumptions.yaml", "items:\n  - status: accepted\n", "2: assumption has no id"),
    (parse_assumptions, "assumptions.yaml", "items:\n  - id: A1\n    status: maybe\n",
     "3: status must be proposed, accepted or rejected, found 'maybe'"),
]  # fmt: skip


@pytest.mark.parametrize(("parse", "name", "text", "message"), CASES)
def test_each_documented_mistake_gives_the_documented_error(
    parse: Callable[[bytes, str], Any], name: str, text: str, message: str
) -> None:
    with pytest.raises(GateError) as caught:
        parse(text.encode(), name)
    assert str(caught.value) == f"{name}:{message}"
    assert f"`{name}:{message}`" in DOC


def test_non_utf8_seeds_error_is_documented() -> None:
    with pytest.raises(GateError) as caught:
        parse_seeds(b"\xff\n", "seeds.jsonl")
    assert f"`{caught.value}`" in DOC


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('notes = "maybe"\n', "1: 'notes' must be one of review, signed, approvals, found 'maybe'"),
        ('docs = "docs/**"\n', "1: 'docs' must be a list of glob strings, found 'docs/**'"),
        (
            'outside = ["/abs"]\n',
            "1: 'outside' pattern '/abs' is absolute; globs are relative to the package directory",
        ),
        (
            "colour = 1\n",
            "1: unknown key 'colour'; expected cpu-limit, docs, file-size-limit, memory-limit, "
            "notes, open-files-limit, outside, process-limit, replay-seconds, timeout-floor, "
            "tmpfs-size, tooling",
        ),
        (
            "timeout-floor = 0\n",
            "1: 'timeout-floor' must be a number of seconds in (0, 3600], found 0",
        ),
        (
            "replay-seconds = 0\n",
            "1: 'replay-seconds' must be a number of seconds in (0, 86400], found 0",
        ),
        (
            'memory-limit = "4 GB"\n',
            '1: \'memory-limit\' must be a size such as "4 GiB" or "512 MiB" (or a number of '
            "bytes), at least 64 MiB, found '4 GB'",
        ),
        (
            "cpu-limit = 0\n",
            "1: 'cpu-limit' must be a number of CPU seconds in [1, 86400], found 0",
        ),
        ("notes = \n", "1: is not valid TOML: Invalid value"),
    ],
)
def test_each_documented_settings_mistake_gives_the_documented_error(
    repo: GitRepo, text: str, message: str
) -> None:
    repo.write("oracle-gate.toml", text)
    commit = repo.commit("settings")
    with pytest.raises(GateError) as caught:
        read_settings(GitTree(repo.path, commit))
    assert str(caught.value) == f"oracle-gate.toml:{message}"
    assert f"`oracle-gate.toml:{message}`" in DOC


def test_settings_in_both_places_is_the_documented_error(repo: GitRepo) -> None:
    repo.write("oracle-gate.toml", 'notes = "review"\n')
    repo.write("pyproject.toml", '[tool.oracle-gate]\nnotes = "review"\n')
    with pytest.raises(GateError) as caught:
        read_settings(GitTree(repo.path, repo.commit("both")))
    assert str(caught.value).startswith("oracle-gate.toml: ")
    assert f"`{str(caught.value).split(': ', 1)[1]}`" in DOC


PROPS = "libs/intervals/props.py"


@pytest.mark.parametrize(
    ("edit", "outcome"),
    [
        (
            (PROPS, "prop_idempotent.strategy = _RANGES\n", ""),
            "error: libs/intervals/props.py:9: property prop_idempotent has no .strategy attribute",
        ),
        (
            ("libs/intervals/partitions.py", 'SUBJECT = "intervals:merge_ranges"\n', ""),
            "error: libs/intervals/partitions.py:4: partitions.py sets no SUBJECT = "
            "'module:function' for PARTITIONS",
        ),
        (
            ("libs/intervals/invariants.yaml", '"props.py:prop_idempotent"', '"props.py:prop_x"'),
            "error: libs/intervals/invariants.yaml:9: props.py:prop_x: props.py defines no prop_x",
        ),
    ],
)
def test_each_documented_oracle_module_mistake_gives_the_documented_outcome(
    example_repo: tuple[GitRepo, str], edit: tuple[str, str, str], outcome: str
) -> None:
    """A mistake the gate can place is a gate error at file:line; others reject the patch."""
    repo, base = example_repo
    repo.replace(*edit)
    repo.append("libs/intervals/intervals/__init__.py", "# touched\n")
    head = repo.commit("a mistake in an oracle module")
    kind, _, text = outcome.partition(": ")
    if kind == "error":
        with pytest.raises(GateError) as caught:
            repo.gate(base, head, replay=False)
        assert str(caught.value) == text
    else:
        assert text in [f.reason for f in repo.gate(base, head, replay=False).findings]
    assert f"`{text}`" in DOC


def test_every_settings_key_is_documented_with_its_default_and_written_by_init_root() -> None:
    written = render_settings()
    defaults: dict[str, object] = dict(limit_defaults())
    for field in dataclasses.fields(Settings):
        if field.name not in ("path", "limits"):  # the limits' keys are limit_defaults()
            defaults[field.name.replace("_", "-")] = field.default
    for key, default in defaults.items():
        row = next((line for line in DOC.splitlines() if line.startswith(f"| `{key}` |")), None)
        assert row is not None, key
        shown = json.dumps(list(default)) if isinstance(default, tuple) else json.dumps(default)
        if default is None:  # no value: the page says what the gate does without one
            assert "| no | unset:" in row, key
        else:
            assert f"`{shown}`".replace('","', '", "') in row, (key, shown)
        assert f"# {key} = " in written, key


def test_docs_and_readme_stand_alone() -> None:
    """Users never see the project's internal contract: no page may send them to it."""
    root = Path(__file__).resolve().parent.parent
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        assert "SPEC" not in text, page.name
        assert "STYLE.md" not in text and "/work/" not in text, page.name
