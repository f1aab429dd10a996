"""SPEC §4: harness changes (conftest, pytest/tox/setup.cfg/pyproject config, .bazelrc, CI)."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict

PKG = "libs/intervals"
MAKEREPORT = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)


def test_conftest_forcing_passed_is_rejected_and_names_the_hook(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/conftest.py", MAKEREPORT)
    report = repo.judge_paths(base, repo.commit("add conftest"))
    assert report.verdict_of(f"{PKG}/conftest.py") is Verdict.REJECT
    assert "pytest_runtest_makereport" in report.findings[0].reason


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pytest.ini", "[pytest]\naddopts = -p no:randomly\n"),
        ("tox.ini", "[pytest]\naddopts = -k nothing\n"),
        ("setup.cfg", "[tool:pytest]\naddopts = --deselect x\n"),
        (".bazelrc", "test --test_filter=nothing\n"),
        (
            ".github/workflows/ci.yml",
            "on: push\njobs:\n  g:\n    steps:\n      - run: oracle-gate check\n",
        ),
        ("CODEOWNERS", "* @agent\n"),
    ],
)
def test_harness_file_without_note_is_rejected(
    example_repo: tuple[GitRepo, str], path: str, text: str
) -> None:
    repo, base = example_repo
    repo.write(path, text)
    report = repo.judge_paths(base, repo.commit("harness"))
    assert report.paths[0].lane is Lane.HARNESS
    assert report.verdict_of(path) is Verdict.REJECT


def test_conftest_with_reviewed_trailer_is_human_noted(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/conftest.py", "import sys\n")
    head = repo.commit(
        "conftest",
        {"Oracle-Change": f"{PKG}/conftest.py — path setup", "Reviewed-by": "Ada <a@example.com>"},
    )
    report = repo.gate(base, head)
    assert report.verdict_of(f"{PKG}/conftest.py") is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


def test_pyproject_test_config_change_is_harness(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write("pyproject.toml", '[project]\nname = "x"\n')
    base = repo.commit("pyproject")
    repo.append("pyproject.toml", '\n[tool.pytest.ini_options]\naddopts = "-k not slow"\n')
    report = repo.judge_paths(base, repo.commit("deselect"))
    assert (report.paths[0].lane, report.verdict) == (Lane.HARNESS, Verdict.REJECT)


def test_pyproject_change_outside_test_config_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write("pyproject.toml", '[project]\nname = "x"\n')
    base = repo.commit("pyproject")
    repo.replace("pyproject.toml", 'name = "x"', 'name = "x"\nversion = "2"')
    report = repo.gate(base, repo.commit("bump"))
    assert (report.paths[0].lane, report.verdict) == (Lane.OTHER, Verdict.PASS)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (f"{PKG}/tests/.pytest.ini", "[pytest]\naddopts = -k nothing\n"),
        (f"{PKG}/tests/pytest.ini", "[pytest]\naddopts = -p no:cacheprovider\n"),
        (f"{PKG}/tox.ini", "[pytest]\naddopts = -x\n"),
        (f"{PKG}/setup.cfg", "[tool:pytest]\naddopts = --deselect x\n"),
        (f"{PKG}/pytest.toml", '[pytest]\naddopts = ["-k", "nothing"]\n'),
        (".bazelrc.ci", "test --test_filter=nothing\n"),
        ("tools/ci.bazelrc", "test --test_filter=nothing\n"),
        ("tools/bazel", '#!/bin/sh\nexec true "$@"\n'),
        (".bazelignore", "libs/intervals\n"),
        ("REPO.bazel", 'ignore_directories(["libs/intervals"])\n'),
        ("third_party/deps.MODULE.bazel", 'bazel_dep(name = "rules_python", version = "0.1")\n'),
        (".bazeliskrc", "USE_BAZEL_VERSION=4.0.0\n"),
        ("Cargo.lock", "version = 3\n"),
        (".gitattributes", "*.json text eol=crlf\n"),
        ("oracle-gate.toml", 'docs = ["**"]\n'),
        (f"{PKG}/setup.py", "from setuptools import setup\nsetup()\n"),
    ],
)
def test_harness_file_at_any_depth_without_note_is_rejected(
    example_repo: tuple[GitRepo, str], path: str, text: str
) -> None:
    repo, base = example_repo
    repo.write(path, text)
    report = repo.judge_paths(base, repo.commit("harness"))
    entry = next(p for p in report.paths if p.path == path)
    assert (entry.lane, entry.verdict) == (Lane.HARNESS, Verdict.REJECT)


def test_file_a_bazelrc_imports_is_harness_whatever_its_name(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.write(".bazelrc", "try-import %workspace%/build/ci.flags\n")
    repo.write("build/ci.flags", "import %workspace%/build/more.cfg\n")
    repo.write("build/more.cfg", "test --jobs=4\n")
    base = repo.commit("bazelrc")
    repo.write("build/more.cfg", "test --test_filter=nothing\n")
    report = repo.judge_paths(base, repo.commit("filter every test away"))
    entry = next(p for p in report.paths if p.path == "build/more.cfg")
    assert (entry.lane, entry.verdict) == (Lane.HARNESS, Verdict.REJECT)


def test_pytest11_entry_point_in_pyproject_is_harness(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(
        "pyproject.toml",
        '[project]\nname = "x"\n\n[project.entry-points.pytest11]\nquiet = "tools.quiet"\n',
    )
    report = repo.judge_paths(base, repo.commit("plugin"))
    assert (report.paths[0].lane, report.verdict) == (Lane.HARNESS, Verdict.REJECT)


@pytest.mark.parametrize(
    "text",
    [
        'pytest_plugins = ["tools.quiet"]\n\n\ndef test_ok():\n    assert True\n',
        "from tools.quiet import pytest_runtest_call\n\n\ndef test_ok():\n    pass\n",
        "def pytest_collection_modifyitems(items):\n    items.clear()\n",
        "import intervals\n\nintervals.merge_ranges = lambda ranges: ranges\n",
        "import sys\n\nsys.path.insert(0, '/tmp/evil')\n",
        "import sys\n\nPATHS = sys.path\nPATHS.append('/tmp/evil')\n",
        "import intervals\n\n_ = setattr(intervals, 'merge_ranges', sorted)\n",
        "import builtins\n\nbuiltins.all = lambda values: True\n",
        "import random\n\nrandom.seed(0)\n",
        "from hypothesis import settings\n\nsettings.load_profile('ci')\n",
        "import os\n\nos.environ['HYPOTHESIS_PROFILE'] = 'none'\n",
        "import intervals\n\nX = vars(intervals).update(merge_ranges=sorted)\n",
        "import intervals\n\n\nclass T:\n    intervals.merge_ranges = sorted\n",
        "import intervals\n\nif True:\n    intervals.merge_ranges.__code__ = sorted.__code__\n",
        "import intervals\n\n\ndef test_x(f=setattr(intervals, 'merge_ranges', sorted)):\n"
        "    pass\n",
    ],
)
def test_new_test_module_that_patches_or_hooks_at_import_is_harness(
    example_repo: tuple[GitRepo, str], text: str
) -> None:
    repo, base = example_repo
    path = f"{PKG}/tests/test_new.py"
    repo.write(path, text)
    report = repo.judge_paths(base, repo.commit("agent test"))
    entry = next(p for p in report.paths if p.path == path)
    assert (entry.lane, entry.verdict) == (Lane.HARNESS, Verdict.REJECT)


@pytest.mark.parametrize(
    "path",
    [
        f"{PKG}/tests/__init__.py",
        f"{PKG}/tests/helpers.py",
        f"{PKG}/intervals/test_sneaky.py",  # production by the globs, but pytest collects it
        "tools/test_outside.py",
    ],
)
def test_new_module_anywhere_that_patches_at_import_is_harness(
    example_repo: tuple[GitRepo, str], path: str
) -> None:
    repo, base = example_repo
    repo.write(path, "import intervals\n\nintervals.merge_ranges = sorted\n")
    report = repo.judge_paths(base, repo.commit("patch on import"))
    entry = next(p for p in report.paths if p.path == path)
    assert (entry.lane, entry.verdict) == (Lane.HARNESS, Verdict.REJECT)
    assert any("changes shared state on import" in f.reason for f in report.findings)


def test_production_module_defining_a_pytest_hook_is_harness(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    path = f"{PKG}/intervals/plugin.py"
    repo.write(path, "def pytest_collection_modifyitems(items):\n    items[:] = []\n")
    report = repo.judge_paths(base, repo.commit("a plugin beside the code"))
    entry = next(p for p in report.paths if p.path == path)
    assert (entry.lane, entry.verdict) == (Lane.HARNESS, Verdict.REJECT)
    assert "pytest_collection_modifyitems" in " ".join(f.reason for f in report.findings)


HONEST_TEST = """import pytest
from hypothesis import given, settings, strategies as st
from intervals import merge_ranges

CASES = [([], []), ([[0, 1]], [[0, 1]])]
pytestmark = pytest.mark.slow
IDS = []
for given, _ in CASES:
    IDS.append(repr(given))


@pytest.fixture
def ranges():
    return [[0, 1]]


@pytest.mark.parametrize(("given_ranges", "expected"), CASES)
def test_cases(given_ranges, expected):
    assert merge_ranges(given_ranges) == expected


@settings(max_examples=5)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(5, 9)).map(list)))
def test_sorted(values):
    assert merge_ranges(values) == sorted(merge_ranges(values))


class TestMore:
    expected = [[0, 1]]

    def test_fixture(self, ranges):
        assert merge_ranges(ranges) == self.expected
"""


def test_new_test_module_with_fresh_names_stays_an_agent_test(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    path = f"{PKG}/tests/test_new.py"
    repo.write(path, HONEST_TEST)
    report = repo.judge_paths(base, repo.commit("agent test"))
    entry = next(p for p in report.paths if p.path == path)
    assert (entry.lane, entry.verdict) == (Lane.AGENT_TEST, Verdict.IGNORED_AS_ORACLE)
    assert report.verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('version = "1"', 'version = "2"'),
        ("line-length = 100", "line-length = 88"),
        ('description = "x"', 'description = "intervals and more"'),
    ],
)
def test_pyproject_metadata_or_linter_change_is_other(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, _ = example_repo
    repo.write(
        "pyproject.toml",
        '[project]\nname = "x"\nversion = "1"\ndescription = "x"\n'
        'dependencies = ["hypothesis"]\n\n[tool.ruff]\nline-length = 100\n',
    )
    base = repo.commit("pyproject")
    repo.replace("pyproject.toml", old, new)
    report = repo.judge_paths(base, repo.commit("metadata"))
    assert (report.paths[0].lane, report.verdict) == (Lane.OTHER, Verdict.PASS)


def test_conftest_comment_only_edit_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.write(f"{PKG}/conftest.py", MAKEREPORT)
    base = repo.commit("trusted conftest")
    repo.replace(f"{PKG}/conftest.py", "outcome = yield", "outcome = yield  # the report")
    report = repo.judge_paths(base, repo.commit("comment"))
    assert (report.paths[0].lane, report.verdict) == (Lane.HARNESS, Verdict.PASS)


def test_existing_test_keeping_its_generate_tests_hook_stays_a_test(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    test = f"{PKG}/tests/test_merge.py"
    repo.append(test, "\n\ndef pytest_generate_tests(metafunc):\n    pass\n")
    base = repo.commit("a test module with a hook")
    repo.append(test, "\n# a comment\n")
    report = repo.judge_paths(base, repo.commit("comment"))
    assert (report.paths[0].lane, report.verdict) == (Lane.TEST, Verdict.PASS)


def test_existing_test_gaining_a_hook_is_harness(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    test = f"{PKG}/tests/test_merge.py"
    repo.append(test, "\n\ndef pytest_collection_modifyitems(items):\n    items.clear()\n")
    report = repo.judge_paths(base, repo.commit("hook in a test module"))
    assert (report.paths[0].lane, report.verdict) == (Lane.HARNESS, Verdict.REJECT)
