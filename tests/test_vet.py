"""``oracle-gate vet``: mutants of guarded code, judged by each row's own oracles.

The operator tests read mutants off small sources without running anything.
The vet tests build a package whose rows range from strong to decorative and
run them in real checkouts, as ``check`` runs rows.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gitrepo import TODAY, GitRepo, isolate_git, leave_ci
from oracle_gate.cli import main
from oracle_gate.model import Verdict
from oracle_gate.pysource import parse as parse_module
from oracle_gate.pysource.parse import parse_python
from oracle_gate.repo.cache import cache_dir
from oracle_gate.runtime.sandbox import Runner
from oracle_gate.runtime.variants import SHIFTED
from oracle_gate.vet import mutants as mutants_module
from oracle_gate.vet.formats import VET_FORMATS
from oracle_gate.vet.mutants import file_mutants
from oracle_gate.vet.results import Outcome, RowStatus, VetReport
from oracle_gate.vet.run import VetOptions, vet

# --- operators: one mutant each, read off the source ------------------------------------

OPERATOR_CASES = [
    ("negate_comparison", "def f(a, b):\n    return a < b\n", "    return a >= b\n"),
    ("boundary", "def f(a, b):\n    return a < b\n", "    return a <= b\n"),
    ("and_or", "def f(a, b):\n    return a and b\n", "    return a or b\n"),
    ("drop_call", "def f(xs):\n    return sorted(xs)\n", "    return xs\n"),
    ("drop_call", "def f(xs):\n    return list(reversed(xs))\n", "    return list(xs)\n"),
    ("drop_call", "def f(xs):\n    xs.sort()\n    return xs\n", "    pass\n"),
    (
        "remove_raise",
        "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n",
        "    pass\n",
    ),
    ("constant", "def f(x):\n    return x + 2\n", "    return x + 3\n"),
    ("constant", "def f(xs):\n    return xs[-1]\n", "    return xs[0]\n"),
    ("constant", "def f():\n    return True\n", "    return False\n"),
    ("off_by_one", "def f(xs, i):\n    return xs[i]\n", "    return xs[i + 1]\n"),
    ("early_return", "def f(x):\n    y = x\n    return y\n", "    return None\n"),
    ("swap_arguments", "def f(a, b):\n    return pow(a, b)\n", "    return pow(b, a)\n"),
]


@pytest.mark.parametrize(("operator", "source", "line"), OPERATOR_CASES)
def test_each_operator_makes_its_mutant(operator: str, source: str, line: str) -> None:
    mutants = [m for m in file_mutants("m.py", source.encode(), 50, 0) if m.operator == operator]
    assert any(line in m.source.decode() for m in mutants), [m.source for m in mutants]
    for mutant in mutants:
        compile(mutant.source, "m.py", "exec")  # every mutant is a program


def test_docstrings_fstrings_nested_functions_and_defaults_are_not_mutated() -> None:
    source = (
        'def outer(x=1):\n    """Doc 2."""\n    def inner(y):\n        return y < 3\n'
        '    return f"{x}"\n'
    )
    mutants = file_mutants("m.py", source.encode(), 50, 0)
    assert {(m.function, m.operator) for m in mutants} == {
        ("outer", "early_return"),
        ("outer.inner", "early_return"),
        ("outer.inner", "negate_comparison"),
        ("outer.inner", "boundary"),
        ("outer.inner", "constant"),
    }


def test_two_edits_at_one_place_are_two_mutants_with_their_own_ids() -> None:
    mutants = file_mutants("m.py", b"def f(xs):\n    return enumerate(xs, start=1)\n", 50, 0)
    constants = [m for m in mutants if m.operator == "constant"]
    assert sorted(m.description for m in constants) == ["1 -> 0", "1 -> 2"]
    assert len({m.id for m in mutants}) == len(mutants)


def test_the_budget_keeps_the_same_mutants_for_the_same_seed() -> None:
    source = b"def f(a, b, c):\n    return a < b and b < c or a == 1 or c == 2\n"
    every = file_mutants("m.py", source, 100, 0)
    kept = file_mutants("m.py", source, 3, 0)
    assert len(every) > 3 and len(kept) == 3
    assert kept == file_mutants("m.py", source, 3, 0)
    assert {m.id for m in kept} < {m.id for m in every}
    others = [file_mutants("m.py", source, 3, seed) for seed in range(1, 6)]
    assert any(o != kept for o in others)  # the seed chooses


def test_swapping_equal_arguments_gives_the_same_program_and_no_mutant() -> None:
    mutants = file_mutants("m.py", b"def f(x):\n    return pow(x, x)\n", 50, 0)
    assert [m.operator for m in mutants] == ["early_return"]


def test_mutants_of_named_functions_parse_only_their_own_mutants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = b"def f(a, b):\n    return a < b\n\n\ndef g(a, b):\n    return a + 2\n"
    every = file_mutants("m.py", source, 50, 0)
    parsed: list[bytes] = []

    def counting(text: bytes, path: str, *, keep: bool = True) -> ast.Module:
        parsed.append(text)
        return parse_python(text, path, keep=keep)

    monkeypatch.setattr(mutants_module, "parse_python", counting)
    only_g = file_mutants("m.py", source, 50, 0, ("g",))
    assert only_g == [m for m in every if m.function == "g"]
    assert len(parsed) == 1 + len(only_g)  # the file, then each of g's mutants


def test_a_mutant_tree_is_not_kept_in_the_parse_cache() -> None:
    source = b"def f(a, b):\n    return a < b and b < 3\n"
    before = len(parse_module._cache)
    assert len(file_mutants("m.py", source, 50, 0)) > 3
    assert len(parse_module._cache) <= before + 1  # the file's own tree only


# --- a package with strong, weak and oracle-less rows -----------------------------------

LABEL = "libs/label"
LABEL_FILES = {
    f"{LABEL}/label/__init__.py": (
        'def label(n):\n    """Big above ten."""\n    return "big" if n > 10 else "small"\n'
    ),
    f"{LABEL}/strong.py": (
        'SUBJECT = "label:label"\n'
        "PARTITIONS = [\n"
        '    {"id": "P1", "kind": "representative", "input": 3,\n'
        '     "contract": lambda o: o == "small"},\n'
        '    {"id": "P2", "kind": "boundary", "input": 10, "contract": lambda o: o == "small"},\n'
        '    {"id": "P3", "kind": "boundary", "input": 11, "contract": lambda o: o == "big"},\n'
        "]\n"
    ),
    # the contract accepts everything: a tautology
    f"{LABEL}/weak.py": (
        'SUBJECT = "label:label"\n'
        'PARTITIONS = [{"id": "P1", "kind": "representative", "input": 3, '
        '"contract": lambda o: True}]\n'
    ),
    f"{LABEL}/invariants.yaml": (
        "version: 1\n"
        'owners: ["@t"]\n'
        'tests: ["tests/test_*.py"]\n'
        "rows:\n"
        "  - id: strong\n"
        '    globs: ["label/*.py"]\n'
        '    partitions: ["strong.py:PARTITIONS"]\n'
        "    budget: {examples: 5, seconds: 5}\n"
        "  - id: weak\n"
        '    globs: ["label/*.py"]\n'
        '    partitions: ["weak.py:PARTITIONS"]\n'
        "    budget: {examples: 5, seconds: 5}\n"
        "  - id: bare\n"
        '    globs: ["label/*.py"]\n'
    ),
}


def _commit(repo: GitRepo, files: dict[str, str]) -> str:
    for path, text in files.items():
        repo.write(path, text)
    return repo.commit("package")


@dataclass(frozen=True)
class Vetted:
    """The label package vetted once per module, for the tests that only read the result."""

    repo: GitRepo
    report: VetReport
    cache_home: Path


@pytest.fixture(scope="module")
def vetted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vetted]:
    with pytest.MonkeyPatch.context() as patch:
        isolate_git(patch)
        leave_ci(patch)
        cache_home = tmp_path_factory.mktemp("cache")
        patch.setenv("XDG_CACHE_HOME", str(cache_home))
        repo = GitRepo.init(tmp_path_factory.mktemp("vetted") / "repo")
        _commit(repo, LABEL_FILES)
        yield Vetted(repo, vet(repo.path, VetOptions(today=TODAY)), cache_home)


@pytest.fixture
def label(repo: GitRepo) -> tuple[GitRepo, VetReport]:
    """The label package vetted in the test's own repository, for a test that commits."""
    _commit(repo, LABEL_FILES)
    return repo, vet(repo.path, VetOptions(today=TODAY))


def test_a_row_that_pins_each_boundary_kills_every_mutant(vetted: Vetted) -> None:
    report = vetted.report
    strong = next(row for row in report.rows if row.row == "strong")
    assert strong.status is RowStatus.SCORED
    assert [m.row for m in strong.mutants] == [Outcome.KILLED] * len(strong.mutants)
    assert len(strong.mutants) == 5 and strong.score == "5/5 (100%)"
    assert not strong.decorative


def test_a_tautological_row_is_decorative_and_lists_its_survivors(vetted: Vetted) -> None:
    report = vetted.report
    weak = next(row for row in report.rows if row.row == "weak")
    assert weak.decorative and weak.caught == 0
    # ``n >= 10``, ``n > 11`` and ``n > 9`` give "small" on 3, as the tree does: equivalent
    # suspects; ``None`` and ``n <= 10`` differ on 3, and the tautology accepts them anyway
    outcomes = {m.description: m.row for m in weak.mutants}
    assert outcomes["boundary moved: n > 10 -> n >= 10"] is Outcome.EQUIVALENT
    assert outcomes["10 -> 11"] is Outcome.EQUIVALENT
    assert outcomes["10 -> 9"] is Outcome.EQUIVALENT
    assert outcomes["returns early: None before line 3"] is Outcome.SURVIVED
    assert outcomes["comparison negated: n > 10 -> n <= 10"] is Outcome.SURVIVED
    assert all(m.diff.startswith(f"--- a/{LABEL}/label/__init__.py") for m in weak.survivors)
    assert report.decorative == (next(r for r in report.rows if r.row == "bare"), weak)


def test_vet_leaves_the_working_tree_alone_and_files_each_row_in_the_cache(
    vetted: Vetted, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, report = vetted.repo, vetted.report
    assert repo.git("status", "--porcelain") == ""
    assert repo.git("worktree", "list").count("\n") == 1  # its checkouts are gone
    monkeypatch.setenv("XDG_CACHE_HOME", str(vetted.cache_home))
    for row in report.rows:
        entry = json.loads((cache_dir(repo.path) / "vet" / f"{row.key}.json").read_text())
        assert entry["result"] == row.to_json()
        assert entry["commit"] == report.commit


def test_every_format_renders_the_report(vetted: Vetted) -> None:
    report = vetted.report
    text = VET_FORMATS["text"](report)
    assert "DECORATIVE libs/label:weak" in text and "libs/label:strong  5/5 (100%)" in text
    rows = {row["row"]: row for row in json.loads(VET_FORMATS["json"](report))["rows"]}
    assert rows["weak"]["decorative"] is True and rows["strong"]["decorative"] is False
    assert "```diff" in VET_FORMATS["markdown"](report)
    suite = ET.fromstring(VET_FORMATS["junit"](report)).find("testsuite")
    assert suite is not None and suite.get("failures") == "2"
    sarif = json.loads(VET_FORMATS["sarif"](report))
    levels = sorted({r["level"] for r in sarif["runs"][0]["results"]})
    assert levels == ["error", "warning"]


def _vet_json(repo: GitRepo, impl: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oracle_gate", "vet", "--repo", str(repo.path), "--format", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "ORACLE_GATE_IMPL": impl},
        timeout=300,
        check=False,
    )


def test_the_same_tree_gives_the_same_report_in_both_backends(repo: GitRepo) -> None:
    files = dict(LABEL_FILES)
    files[f"{LABEL}/invariants.yaml"] = files[f"{LABEL}/invariants.yaml"].split("  - id: weak")[0]
    _commit(repo, files)
    python = _vet_json(repo, "python")
    assert python.returncode == 0, python.stderr
    try:
        import oracle_gate._native  # noqa: F401
    except ImportError:
        pytest.skip("native extension is not built")
    native = _vet_json(repo, "native")
    assert native.stdout == python.stdout
    assert json.loads(python.stdout)["rows"][0]["score"] == "5/5 (100%)"


def test_a_mutant_that_never_returns_is_timed_out(repo: GitRepo) -> None:
    _commit(
        repo,
        {
            "pyproject.toml": "[tool.oracle-gate]\ntimeout-floor = 1\n",
            "libs/spin/spin/__init__.py": (
                "def steps(n):\n    i = 0\n    while i != n:\n        i += 1\n    return i\n"
            ),
            "libs/spin/table.py": (
                'SUBJECT = "spin:steps"\n'
                'PARTITIONS = [{"id": "P1", "kind": "boundary", "input": 0, '
                '"contract": lambda o: o == 0}]\n'
            ),
            "libs/spin/invariants.yaml": (
                'version: 1\nowners: ["@t"]\ntests: []\nrows:\n  - id: steps\n'
                '    globs: ["spin/*.py"]\n    partitions: ["table.py:PARTITIONS"]\n'
                "    budget: {examples: 5, seconds: 1}\n"
            ),
        },
    )
    (row,) = vet(repo.path, VetOptions(today=TODAY)).rows
    outcomes = {m.description: m.row for m in row.mutants}
    assert outcomes["0 -> 1"] is Outcome.TIMED_OUT  # i starts past n = 0: it never stops
    assert outcomes["returns early: None before line 2"] is Outcome.KILLED
    assert outcomes["0 -> -1"] is Outcome.EQUIVALENT  # -1 steps up to 0 too: the same output


def test_a_row_that_rejects_the_unmutated_tree_is_failing_not_scored(repo: GitRepo) -> None:
    files = dict(LABEL_FILES)
    files[f"{LABEL}/strong.py"] = files[f"{LABEL}/strong.py"].replace('o == "big"', 'o == "huge"')
    _commit(repo, files)
    report = vet(repo.path, VetOptions(packages=(LABEL,), today=TODAY))
    strong = next(row for row in report.rows if row.row == "strong")
    assert strong.status is RowStatus.FAILING and not strong.mutants
    assert "rejects the unmutated tree" in strong.notes[0] and "P3" in strong.notes[0]
    assert report.failing == (strong,)


def _property_label() -> dict[str, str]:
    files = {k: v for k, v in LABEL_FILES.items() if "strong" not in k and "weak" not in k}
    files[f"{LABEL}/props.py"] = (
        "from hypothesis import strategies as st\nfrom label import label\n\n\n"
        "def prop_label(n):\n"
        '    assert label(n) == ("big" if n > 10 else "small")\n\n\n'
        "prop_label.strategy = st.integers(0, 20)\n"
    )
    files[f"{LABEL}/invariants.yaml"] = (
        'version: 1\nowners: ["@t"]\ntests: []\nrows:\n  - id: prop\n'
        '    globs: ["label/*.py"]\n    properties: ["props.py:prop_label"]\n'
        "    budget: {examples: 30, seconds: 5}\n"
    )
    return files


def test_a_property_row_kills_with_its_seeds_and_search(repo: GitRepo) -> None:
    _commit(repo, _property_label())
    (row,) = vet(repo.path, VetOptions(today=TODAY)).rows
    assert row.caught == len(row.mutants) == 5, [(m.description, m.reason) for m in row.mutants]


def test_vet_searches_unshrunk_and_runs_no_shifted_search_once_a_mutant_is_killed(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _commit(repo, _property_label())
    asked: list[tuple[bool, bool]] = []  # (shifted environment, shrinking) of each run
    served = Runner.run_served

    def recording(runner: Runner, request: dict[str, Any], *args: Any, **kw: Any) -> Any:
        asked.append((runner.variant is SHIFTED, request.get("shrink", True)))
        return served(runner, request, *args, **kw)

    monkeypatch.setattr(Runner, "run_served", recording)
    (row,) = vet(repo.path, VetOptions(today=TODAY, workers=1)).rows
    assert row.caught == len(row.mutants) == 5
    # the unmutated tree in both environments, then each mutant killed in the usual one
    assert asked == [(False, False), (True, False)] + [(False, False)] * 5


def test_vet_leaves_the_assumption_register_to_check(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    register = (
        "version: 1\nitems:\n  - id: A001\n    symbol: label.label\n"
        '    precondition: "n is an integer"\n    evidence: "it compares n"\n'
        "    status: accepted\n"
    )
    _commit(repo, {**LABEL_FILES, f"{LABEL}/assumptions.yaml": register})
    roles: list[str] = []
    run = Runner.run

    def recording(runner: Runner, request: dict[str, Any], *args: Any, **kw: Any) -> Any:
        roles.append(request["role"])
        return run(runner, request, *args, **kw)

    monkeypatch.setattr(Runner, "run", recording)
    report = vet(repo.path, VetOptions(packages=(LABEL,), today=TODAY, workers=1))
    assert [row.caught for row in report.rows if row.row == "strong"] == [5]
    # its findings are the package's, never a row's: no mutant's verdict stands on them
    assert "subject" in roles and "resolve" not in roles


def test_vet_asks_the_unmutated_tree_and_the_oracle_tables_once_per_worker(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    relations = (
        'SUBJECT = "label:label"\n'
        'RELATIONS = [{"id": "R1", "inputs": [3, 10, 11], "transform": lambda n: n}]\n'
    )
    files = {**LABEL_FILES, f"{LABEL}/same.py": relations}
    files[f"{LABEL}/invariants.yaml"] = files[f"{LABEL}/invariants.yaml"].replace(
        '    partitions: ["strong.py:PARTITIONS"]\n',
        '    partitions: ["strong.py:PARTITIONS"]\n    relations: ["same.py:RELATIONS"]\n',
    )
    _commit(repo, files)
    runs: list[tuple[str, str, str]] = []  # (role, checkout, request) of each usual child
    run = Runner.run

    def recording(runner: Runner, request: dict[str, Any], *args: Any, **kw: Any) -> Any:
        if runner.variant is not SHIFTED:
            runs.append((request["role"], Path(kw["checkout"]).name, json.dumps(request)))
        return run(runner, request, *args, **kw)

    monkeypatch.setattr(Runner, "run", recording)
    report = vet(repo.path, VetOptions(packages=(LABEL,), today=TODAY, workers=1))
    strong = next(row for row in report.rows if row.row == "strong")
    assert strong.caught == len(strong.mutants) == 5
    # one per table (same.py, strong.py, weak.py) for the worker's mutants, beside the
    # unmutated tree's own runs in the parent checkout
    assert [where for role, where, _ in runs if role == "describe"].count("head") == 3
    # the relation's six inputs (three and their transforms): on each mutant, and on the
    # unmutated tree as head and as parent in the baseline, then once for all five mutants
    asked = [
        where
        for role, where, text in runs
        if role == "subject" and len(json.loads(text)["inputs"]) == 6
    ]
    assert sorted(asked) == ["head"] * 5 + ["parent"] * 3


def test_a_mutant_whose_result_cannot_cross_is_killed_not_a_gate_error(repo: GitRepo) -> None:
    _commit(
        repo,
        {
            "libs/evens/evens/__init__.py": (
                "def evens(n):\n    return sorted(i for i in range(n) if i % 2 == 0)\n"
            ),
            "libs/evens/props.py": (
                "from evens import evens\nfrom hypothesis import strategies as st\n\n\n"
                "def prop_evens(n):\n    assert evens(n) == list(range(0, n, 2))\n\n\n"
                "prop_evens.strategy = st.integers(0, 9)\n"
            ),
            "libs/evens/invariants.yaml": (
                'version: 1\nowners: ["@t"]\ntests: []\nrows:\n  - id: evens\n'
                '    globs: ["evens/*.py"]\n    properties: ["props.py:prop_evens"]\n'
                "    budget: {examples: 10, seconds: 5}\n"
            ),
        },
    )
    (row,) = vet(repo.path, VetOptions(today=TODAY)).rows
    dropped = next(m for m in row.mutants if m.operator == "drop_call")
    assert dropped.row is Outcome.KILLED  # a generator cannot cross to the property
    assert "could not judge it (exit 2)" in dropped.reason and "cannot cross" in dropped.reason


def test_vet_of_a_directory_that_is_no_package_is_an_error(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _commit(repo, LABEL_FILES)
    repo.write("libs/other/x.py", "")
    assert main(["vet", "--repo", str(repo.path), str(repo.path / "libs/other")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "libs/other: is not a package" in err


# --- check --require-vetted ---------------------------------------------------------------


def _require_vetted(repo: GitRepo, base: str) -> list[tuple[Verdict, str]]:
    from oracle_gate.gate import check

    report = check(
        repo.path, base=base, head="HEAD", today=TODAY, replay=False, require_vetted=True
    )
    return [(f.verdict, f.reason) for f in report.findings if "vet" in f.reason]


def test_require_vetted_without_a_vet_result_says_what_to_run(repo: GitRepo) -> None:
    base = _commit(repo, LABEL_FILES)
    repo.replace(f"{LABEL}/label/__init__.py", "Big above ten.", "Big, above ten.")
    repo.commit("docstring")
    found = _require_vetted(repo, base)
    assert len(found) == 3 and all(verdict is Verdict.REJECT for verdict, _ in found)
    assert f"run 'oracle-gate vet --rev {base[:12]} {LABEL}' first" in found[0][1]


def test_require_vetted_rejects_a_patch_whose_rows_are_decorative_in_the_parent(
    label: tuple[GitRepo, VetReport],
) -> None:
    repo, report = label
    repo.replace(f"{LABEL}/label/__init__.py", "Big above ten.", "Big, above ten.")
    repo.commit("docstring")
    found = dict(
        (reason.split(" ")[1], (verdict, reason))
        for verdict, reason in _require_vetted(repo, report.commit)
    )
    assert found["strong"][0] is Verdict.PASS and "5/5 (100%)" in found["strong"][1]
    assert found["weak"][0] is Verdict.REJECT and "decorative in the parent" in found["weak"][1]
    assert found["bare"][0] is Verdict.REJECT


def test_require_vetted_passes_rows_that_kill_and_finds_the_result_by_content(
    repo: GitRepo,
) -> None:
    files = dict(LABEL_FILES)
    files[f"{LABEL}/invariants.yaml"] = files[f"{LABEL}/invariants.yaml"].split("  - id: weak")[0]
    first = _commit(repo, files)
    vet(repo.path, VetOptions(rev=first, today=TODAY))
    repo.write("README.md", "elsewhere\n")  # the package's content is unchanged
    base = repo.commit("readme")
    repo.replace(f"{LABEL}/label/__init__.py", "Big above ten.", "Big, above ten.")
    repo.commit("docstring")
    assert _require_vetted(repo, base) == [
        (Verdict.PASS, "row strong vetted in the parent: 5/5 (100%)")
    ]


def test_cli_vet_exits_1_when_a_row_is_decorative(repo: GitRepo, tmp_path: Path) -> None:
    _commit(repo, LABEL_FILES)
    out = tmp_path / "vet.xml"
    code = main(["vet", "--repo", str(repo.path), "--output", f"junit:{out}", "--workers", "1"])
    assert code == 1
    assert ET.parse(out).getroot().find("testsuite") is not None
