"""Matrix rules: a row needs an oracle, and a glob that swallows production narrows the matrix."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict

PKG = "libs/intervals"
MATRIX = f"{PKG}/invariants.yaml"
PROP = '    properties: ["props.py:prop_idempotent"]\n'


@pytest.mark.parametrize(
    "row",
    [
        '  - id: fast\n    globs: ["fast.py"]\n',  # guards a new module, checks nothing
        '  - id: fast\n    globs: ["fast.py"]\n    fixtures: ["testdata/"]\n',
        '  - id: fast\n    globs: ["fast.py"]\n    budget: {examples: 500, seconds: 60}\n',
    ],
)
def test_new_row_without_an_oracle_is_decorative_and_rejected(
    example_repo: tuple[GitRepo, str], row: str
) -> None:
    repo, base = example_repo
    repo.append(MATRIX, row)
    repo.write(f"{PKG}/fast.py", "def merge(ranges):\n    return ranges\n")
    report = repo.judge_paths(base, repo.commit("a row that checks nothing"))
    assert report.verdict_of(MATRIX) is Verdict.REJECT
    assert any("decorative row 'fast'" in f.reason for f in report.findings)


def test_new_package_with_only_decorative_rows_is_rejected(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write("tools/invariants.yaml", 'version: 1\nrows:\n  - id: all\n    globs: ["**"]\n')
    repo.write("tools/migrate.py", "print('x')\n")
    report = repo.judge_paths(base, repo.commit("a package that guards everything with nothing"))
    assert report.verdict_of("tools/invariants.yaml") is Verdict.REJECT


def test_decorative_row_widened_over_new_globs_is_rejected(repo: GitRepo) -> None:
    base = repo.commit_example(
        "libs/intervals", "services/scheduler"
    )  # busy_windows has no oracle (parent)
    repo.replace(
        "services/scheduler/invariants.yaml",
        'globs: ["scheduler/**/*.py"]',
        'globs: ["scheduler/**/*.py", "extra/*.py"]',
    )
    report = repo.judge_paths(base, repo.commit("widen an oracle-less row"))
    assert report.verdict_of("services/scheduler/invariants.yaml") is Verdict.REJECT


def test_existing_decorative_row_left_as_it_was_passes(repo: GitRepo) -> None:
    base = repo.commit_example("libs/intervals", "services/scheduler")
    repo.replace("services/scheduler/invariants.yaml", "examples: 40", "examples: 60")
    report = repo.judge_paths(base, repo.commit("raise a budget"))
    assert report.verdict_of("services/scheduler/invariants.yaml") is Verdict.PASS


def test_new_row_with_a_property_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.append(MATRIX, '  - id: fast\n    globs: ["fast.py"]\n' + PROP)
    repo.write(f"{PKG}/fast.py", "def merge(ranges):\n    return ranges\n")
    report = repo.judge_paths(base, repo.commit("a guarded module"))
    assert report.verdict_of(MATRIX) is Verdict.PASS
    assert report.verdict_of(f"{PKG}/fast.py") is Verdict.PASS


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('tests: ["tests/**/test_*.py"]', 'tests: ["tests/**/test_*.py", "intervals/*.py"]'),
        ('tests: ["tests/**/test_*.py"]', 'tests: ["tests/**/test_*.py", "intervals/**/t*.py"]'),
        ('fixtures: ["testdata/**"]', 'fixtures: ["testdata/**", "intervals/"]'),
        (  # production code made an oracle module
            'partitions: ["partitions.py:PARTITIONS"]',
            'partitions: ["partitions.py:PARTITIONS", "intervals/__init__.py:merge_ranges"]',
        ),
    ],
)
def test_tests_or_fixtures_glob_widened_over_production_is_a_narrowing(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, base = example_repo
    repo.replace(MATRIX, old, new)
    repo.replace(f"{PKG}/intervals/__init__.py", "merged = []", "merged = [] ")
    report = repo.judge_paths(base, repo.commit("production becomes a test"))
    assert report.verdict_of(MATRIX) is Verdict.REJECT
    assert any("now claim production" in f.reason for f in report.findings)
    entry = next(p for p in report.paths if p.path == f"{PKG}/intervals/__init__.py")
    assert entry.lane is Lane.PRODUCTION  # judged as the parent saw it


def test_tests_glob_widened_over_a_new_folder_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(
        MATRIX, 'tests: ["tests/**/test_*.py"]', 'tests: ["tests/**/test_*.py", "checks/test_*.py"]'
    )
    repo.write(f"{PKG}/checks/test_more.py", "def test_more():\n    assert 1 + 1 == 2\n")
    report = repo.judge_paths(base, repo.commit("a second test folder"))
    assert report.verdict_of(MATRIX) is Verdict.PASS
    entry = next(p for p in report.paths if p.path == f"{PKG}/checks/test_more.py")
    assert (entry.lane, entry.verdict) == (Lane.AGENT_TEST, Verdict.IGNORED_AS_ORACLE)
