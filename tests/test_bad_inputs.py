"""Malformed ledgers, locks and YAML: exit 2 with one file:line line, in bounded time and memory."""

from __future__ import annotations

import json
import time

import pytest

from gitrepo import GitRepo, run_measured
from oracle_gate.cli import main
from oracle_gate.config.documents import MAX_DEPTH
from oracle_gate.config.ledgers import parse_assumptions, parse_freeze, parse_seeds
from oracle_gate.config.lockfile import parse_lock
from oracle_gate.config.matrix import parse_matrix
from oracle_gate.errors import ConfigError, LedgerError, LockError

CODEC = "libs/codec"
SEEDS = f"{CODEC}/seeds.jsonl"
FREEZE = f"{CODEC}/flake_freeze.yaml"
ASSUMPTIONS = f"{CODEC}/assumptions.yaml"
LOCK = f"{CODEC}/oracle_gate.lock"
GOOD_SEED = (
    '{"row": "codec_roundtrip", "prop": "prop_roundtrip", "input": {"a": "b"}, "expect": "hold"}'
)
DIGEST = "0a" * 32

# The 678-byte "billion laughs" of the issue: nine aliases per level, nine levels.
ALIAS_BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{chr(ord('b') + level)}: &{chr(ord('b') + level)} "
        f"[{','.join(['*' + chr(ord('a') + level)] * 9)}]\n"
        for level in range(8)
    )
    + "frozen: *i\n"
)


def _seed(**fields: object) -> str:
    data = json.loads(GOOD_SEED)
    data.update(fields)
    return json.dumps(data)


# (file, its content, the message after "oracle-gate: error: ")
BAD_LEDGERS = [
    pytest.param(FREEZE, ALIAS_BOMB, f"{FREEZE}:", id="freeze-alias-bomb"),
    pytest.param(ASSUMPTIONS, ALIAS_BOMB, f"{ASSUMPTIONS}:", id="assumptions-alias-bomb"),
    pytest.param(
        FREEZE,
        "frozen:\n  - nodeid: tests/test_codec.py::test_a\n    expires: 2027-02-30\n",
        f"{FREEZE}:3: expires must be a YYYY-MM-DD date, found '2027-02-30'",
        id="impossible-date",
    ),
    pytest.param(
        FREEZE,
        'frozen:\n  - nodeid: t.py::a\n    expires: "2027-13-01"\n',
        f"{FREEZE}:3: expires must be a YYYY-MM-DD date, found '2027-13-01'",
        id="impossible-quoted-date",
    ),
    pytest.param(
        FREEZE,
        "frozen: []\nbudget: 2\nbudget: 9\n",
        f"{FREEZE}:3: key 'budget' appears twice in the freeze ledger",
        id="freeze-two-budgets",
    ),
    pytest.param(
        FREEZE,
        "frozen: []\nbudgt: 2\n",
        f"{FREEZE}:2: unknown key 'budgt' in the freeze ledger",
        id="freeze-unknown-key",
    ),
    pytest.param(
        FREEZE,
        "frozen:\n  - nodeid: t.py::a\n    expires: 2030-01-01\n    expiers: 2031-01-01\n",
        f"{FREEZE}:4: unknown key 'expiers' in a frozen entry",
        id="freeze-entry-unknown-key",
    ),
    pytest.param(
        FREEZE,
        "frozen:\n  - nodeid: t.py::a\n    expires: 2030-01-01\n"
        "  - nodeid: t.py::a\n    expires: 2031-01-01\n",
        f"{FREEZE}:4: t.py::a is frozen twice (first on line 2)",
        id="freeze-entry-twice",
    ),
    pytest.param(
        FREEZE,
        "frozen: []\nbudget: two\n",
        f"{FREEZE}:2: budget must be a whole number >= 0, found 'two'",
        id="freeze-budget-text",
    ),
    pytest.param(
        FREEZE,
        "version: 9\nfrozen: []\n",
        f"{FREEZE}:1: version 9 is not supported; expected 1",
        id="freeze-version",
    ),
    pytest.param(
        FREEZE,
        "frozen:\n  - nodeid: [1, 2]\n    expires: 2030-01-01\n",
        f"{FREEZE}:2: nodeid must be a string, found a list",
        id="freeze-nodeid-list",
    ),
    pytest.param(
        ASSUMPTIONS,
        "version: 9\nitems: []\n",
        f"{ASSUMPTIONS}:1: version 9 is not supported; expected 1",
        id="assumptions-version-9",
    ),
    pytest.param(
        ASSUMPTIONS,
        "version: 1\nitems: []\nitems: []\n",
        f"{ASSUMPTIONS}:3: key 'items' appears twice in the assumption register",
        id="assumptions-duplicate-key",
    ),
    pytest.param(
        ASSUMPTIONS,
        "items:\n  - id: A1\n    status: accepted\n    status: proposed\n",
        f"{ASSUMPTIONS}:4: key 'status' appears twice in an assumption",
        id="assumptions-duplicate-item-key",
    ),
    pytest.param(
        ASSUMPTIONS,
        "items:\n  - id: A1\n    status: rejected\n  - id: A1\n    status: accepted\n",
        f"{ASSUMPTIONS}:4: assumption id 'A1' is used twice (first on line 2)",
        id="assumptions-duplicate-id",
    ),
    pytest.param(
        ASSUMPTIONS,
        "items:\n  - id: A1\n    statu: accepted\n",
        f"{ASSUMPTIONS}:3: unknown key 'statu' in an assumption",
        id="assumptions-unknown-key",
    ),
    pytest.param(
        ASSUMPTIONS,
        "items:\n  - id: 7\n",
        f"{ASSUMPTIONS}:2: assumption id must be a string, found '7'",
        id="assumptions-id-number",
    ),
    pytest.param(
        SEEDS,
        _seed(row=5) + "\n",
        f"{SEEDS}:1: seed 'row' must be a string, found 5",
        id="seed-row-number",
    ),
    pytest.param(
        SEEDS,
        GOOD_SEED + "\n" + _seed(row="no_such_row") + "\n",
        f"{SEEDS}:2: seed names row 'no_such_row', which the matrix does not declare",
        id="seed-unknown-row",
    ),
    pytest.param(
        SEEDS,
        _seed(prop="prop_nothing") + "\n",
        f"{SEEDS}:1: seed names property 'prop_nothing', which row 'codec_roundtrip' does not list",
        id="seed-unknown-prop",
    ),
    pytest.param(
        SEEDS,
        GOOD_SEED[:-1] + ', "expect": "fail"}\n',
        f"{SEEDS}:1: key 'expect' appears twice in one object",
        id="seed-duplicate-json-key",
    ),
    pytest.param(
        SEEDS,
        _seed(extra=1) + "\n",
        f"{SEEDS}:1: unknown seed key 'extra'",
        id="seed-unknown-key",
    ),
    pytest.param(
        SEEDS,
        _seed(added="2026-02-30") + "\n",
        f"{SEEDS}:1: added must be a YYYY-MM-DD date, found '2026-02-30'",
        id="seed-impossible-date",
    ),
    pytest.param(
        SEEDS,
        GOOD_SEED + "\n" + "[" * 100_000 + "]" * 100_000 + "\n",
        f"{SEEDS}:2: nested deeper than {MAX_DEPTH} levels",
        id="seed-nested-100000-deep",
    ),
]


@pytest.mark.parametrize(("path", "text", "message"), BAD_LEDGERS)
def test_a_malformed_ledger_is_a_gate_error_naming_file_and_line(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], path: str, text: str, message: str
) -> None:
    repo.commit_example(CODEC)
    repo.write(path, text)
    capsys.readouterr()
    started = time.monotonic()
    assert main(["lock", "--repo", str(repo.path), "--ledgers"]) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert f"oracle-gate: error: {message}" in err
    assert len(err.strip().splitlines()) == 1, err


def test_the_alias_bomb_in_a_ledger_stops_check_quickly_and_small(repo: GitRepo) -> None:
    base = repo.commit_example(CODEC)
    repo.write(FREEZE, ALIAS_BOMB)
    repo.commit("freeze everything")
    started = time.monotonic()
    done, peak_kib = run_measured("check", "--repo", str(repo.path), "--base", base)
    assert time.monotonic() - started < 20
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"oracle-gate: error: {FREEZE}:"), done.stderr
    assert "aliases" in done.stderr
    assert peak_kib < 1024 * 1024


def test_an_honest_freeze_and_register_still_parse() -> None:
    freeze = parse_freeze(
        b"version: 1\nfrozen:\n  - nodeid: t.py::a\n    expires: 2030-02-28\n"
        b"    reason: wall clock\n    owner: platform\n    replacement_row: null\n"
        b'  - row: P004\n    input_hash: abc\n    expires: "2030-01-01"\nbudget: 2\n',
        "p/flake_freeze.yaml",
    )
    assert [entry.key for entry in freeze.entries] == ["t.py::a", "P004:abc"]
    assert [str(entry.expires) for entry in freeze.entries] == ["2030-02-28", "2030-01-01"]
    assert freeze.budget == 2 and freeze.budget_line == 11
    (item,) = parse_assumptions(
        b"version: 1\nitems:\n  - id: A1\n    symbol: m.f\n    precondition: sorted\n"
        b"    evidence: {file: a.py}\n    status: accepted\n",
        "p/assumptions.yaml",
    )
    assert (item.id, item.status, item.data["evidence"]) == ("A1", "accepted", {"file": "a.py"})


def test_a_few_honest_aliases_are_still_yaml() -> None:
    matrix = parse_matrix(
        b"version: 1\nrows:\n  - id: a\n    globs: &g ['src/*.py']\n  - id: b\n    globs: *g\n",
        "p/invariants.yaml",
    )
    assert [row.globs for row in matrix.rows] == [("src/*.py",), ("src/*.py",)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (ALIAS_BOMB, "aliases expand it by more than"),
        ("a: &a [1, *a]\n", "recursive alias"),
        ("a: " + "[" * 70 + "]" * 70 + "\n", f"nested deeper than {MAX_DEPTH} levels"),
        ("a: " + "[" * 100_000 + "]" * 100_000 + "\n", f"nested deeper than {MAX_DEPTH} levels"),
        ("a: &x 1\n" + "".join(f"k{i}: *x\n" for i in range(101)), "more than 100 aliases"),
    ],
    ids=["bomb", "recursive", "deep", "very-deep", "many-aliases"],
)
def test_yaml_over_a_limit_is_an_error_in_the_matrix_too(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_matrix(text.encode(), "p/invariants.yaml")
    assert caught.value.path == "p/invariants.yaml" and caught.value.line is not None
    assert message in str(caught.value)


def test_a_seeds_file_over_the_size_limit_is_refused_without_reading_it() -> None:
    with pytest.raises(LedgerError, match="larger than 16 MiB"):
        parse_seeds(b"{}" * (8 * 1024 * 1024 + 1), "p/seeds.jsonl")


LOCK_TEXT = json.dumps(
    {"version": 1, "fixtures": {"testdata/a.json": DIGEST}, "surface": {}}, indent=2
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            LOCK_TEXT.replace('"surface"', '"fixtures": {},\n  "surface"'),
            f"{LOCK}:6: key 'fixtures' appears twice in one object",
            id="duplicate-fixtures",
        ),
        pytest.param(
            LOCK_TEXT.replace(DIGEST, "xyz"),
            f"{LOCK}:4: 'fixtures' entry 'testdata/a.json' has digest 'xyz'; expected 64 "
            "lowercase hex digits",
            id="digest-xyz",
        ),
        pytest.param(
            LOCK_TEXT.replace(DIGEST, DIGEST.upper()),
            f"{LOCK}:4: 'fixtures' entry 'testdata/a.json' has digest",
            id="digest-upper",
        ),
        pytest.param(
            LOCK_TEXT.replace('"version": 1', '"version": true'),
            f"{LOCK}:2: lock version True is not supported; expected 1",
            id="version-true",
        ),
        pytest.param(
            LOCK_TEXT.replace('"surface": {}', '"surface": []'),
            f"{LOCK}:6: 'surface' must map keys to digests, found list",
            id="surface-list",
        ),
        pytest.param(
            "[" * 100_000 + "]" * 100_000,
            f"{LOCK}:1: nested deeper than {MAX_DEPTH} levels",
            id="deep",
        ),
    ],
)
def test_a_malformed_lock_is_a_lock_error_not_drift(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    repo.commit_example(CODEC)
    repo.write(LOCK, text)
    capsys.readouterr()
    assert main(["lock", "--repo", str(repo.path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"oracle-gate: error: {message}"), err
    assert len(err.strip().splitlines()) == 1


def test_an_honest_lock_parses() -> None:
    lock = parse_lock(LOCK_TEXT.encode(), "p/oracle_gate.lock")
    assert lock.fixtures == {"testdata/a.json": DIGEST}
    with pytest.raises(LockError):
        parse_lock(LOCK_TEXT.replace(DIGEST, DIGEST[:-1]).encode(), "p/oracle_gate.lock")
