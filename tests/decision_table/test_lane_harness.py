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
        ("tox.ini", "[tox]\n"),
        ("setup.cfg", "[tool:pytest]\naddopts = --deselect x\n"),
        (".bazelrc", "test --test_filter=nothing\n"),
        (".github/workflows/ci.yml", "on: push\n"),
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
