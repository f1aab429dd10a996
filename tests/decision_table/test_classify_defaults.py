"""Classification fails closed: production unless proven otherwise, inside and outside packages."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict
from reports import lane_and_verdict

PKG = "libs/intervals"


@pytest.mark.parametrize(
    "path",
    [
        f"{PKG}/intervals/limits.txt",  # data production code reads
        f"{PKG}/intervals/notes.adoc",
        f"{PKG}/README.py",  # a README* name, but Python can import it
        f"{PKG}/docs/helpers.py",  # docs/** holds it, but it is importable
        f"{PKG}/LICENSE_check.pyx",
        f"{PKG}/NOTICE",
    ],
)
def test_unproven_path_inside_a_package_is_unmeasured_production(
    example_repo: tuple[GitRepo, str], path: str
) -> None:
    repo, base = example_repo
    repo.write(path, "LIMIT = 10\n")
    report = repo.judge_paths(base, repo.commit("add a file"))
    assert lane_and_verdict(report, path) == (Lane.PRODUCTION, Verdict.REJECT)
    assert "unmeasured module" in " ".join(f.reason for f in report.findings)


@pytest.mark.parametrize(
    "path",
    [
        "tools/release",  # no suffix: once "other"
        "notes.txt",
        "data/limits.bin",
        "NOTICE",
        "tools/migrate.py",
    ],
)
def test_path_outside_every_package_is_unmeasured_unless_listed(
    example_repo: tuple[GitRepo, str], path: str
) -> None:
    repo, base = example_repo
    repo.write(path, "x\n")
    report = repo.judge_paths(base, repo.commit("add a file outside packages"))
    assert lane_and_verdict(report, path) == (Lane.PRODUCTION, Verdict.REJECT)


@pytest.mark.parametrize(
    "path",
    [
        f"{PKG}/docs/diagram.png",
        f"{PKG}/docs/guide/usage.rst",
        f"{PKG}/intervals/py.typed",
        f"{PKG}/CHANGELOG",
        f"{PKG}/README.rst",
        f"{PKG}/tests/README.md",
        "docs/architecture.svg",
        "LICENSE",
    ],
)
def test_documentation_passes_without_rows(example_repo: tuple[GitRepo, str], path: str) -> None:
    repo, base = example_repo
    repo.write(path, b"\x89PNG\r\n\x1a\n" if path.endswith(".png") else "words\n")
    report = repo.gate(base, repo.commit("docs"))
    assert lane_and_verdict(report, path) == (Lane.DOCS, Verdict.PASS)
    assert report.docs_only


@pytest.mark.parametrize(
    "path",
    [
        f"{PKG}/.gitignore",
        f"{PKG}/intervals/__init__.pyi",  # a type stub: never imported when code runs
        f"{PKG}/intervals/py.typed",
        "mypy.ini",
        f"{PKG}/ruff.toml",
        ".pre-commit-config.yaml",
        ".flake8",
    ],
)
def test_inert_files_pass_inside_and_outside_packages(
    example_repo: tuple[GitRepo, str], path: str
) -> None:
    repo, base = example_repo
    repo.write(path, "[settings]\n")
    report = repo.judge_paths(base, repo.commit("an inert file"))
    assert lane_and_verdict(report, path)[1] is Verdict.PASS
    assert report.verdict is Verdict.PASS


def test_outside_globs_from_the_parent_settings_let_a_path_pass(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.write("oracle-gate.toml", 'outside = ["tools/**"]\n')
    base = repo.commit("settings")
    repo.write("tools/migrate.py", "print('x')\n")
    repo.write("scripts/run.sh", "echo x\n")
    report = repo.judge_paths(base, repo.commit("scripts"))
    assert lane_and_verdict(report, "tools/migrate.py") == (Lane.OTHER, Verdict.PASS)
    assert lane_and_verdict(report, "scripts/run.sh") == (Lane.PRODUCTION, Verdict.REJECT)


def test_outside_globs_added_by_the_patch_itself_do_not_count(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write("oracle-gate.toml", 'outside = ["**"]\n')
    repo.write("tools/migrate.py", "print('x')\n")
    report = repo.judge_paths(base, repo.commit("allow everything"))
    assert lane_and_verdict(report, "tools/migrate.py") == (Lane.PRODUCTION, Verdict.REJECT)
    assert lane_and_verdict(report, "oracle-gate.toml") == (Lane.HARNESS, Verdict.REJECT)


def test_outside_globs_never_exempt_harness_files(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.write("oracle-gate.toml", 'outside = ["tools/**"]\n')
    base = repo.commit("settings")
    repo.write("tools/bazel", "#!/bin/sh\nexit 0\n")
    report = repo.judge_paths(base, repo.commit("wrapper"))
    assert lane_and_verdict(report, "tools/bazel") == (Lane.HARNESS, Verdict.REJECT)


def test_docs_globs_come_from_the_parent_settings(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.write("oracle-gate.toml", 'docs = ["**/*.md", "**/*.txt"]\n')
    base = repo.commit("settings: .txt is documentation here")
    repo.write(f"{PKG}/notes.txt", "words\n")
    repo.write(f"{PKG}/docs/diagram.png", "png\n")  # docs/** is no longer listed
    report = repo.judge_paths(base, repo.commit("notes"))
    assert lane_and_verdict(report, f"{PKG}/notes.txt") == (Lane.DOCS, Verdict.PASS)
    assert lane_and_verdict(report, f"{PKG}/docs/diagram.png") == (Lane.PRODUCTION, Verdict.REJECT)


@pytest.mark.parametrize(
    ("install", "lane"),
    [
        ("pip install oracle-gate", Lane.OTHER),  # the gate's environment is not the project's
        ("pip install . oracle-gate", Lane.HARNESS),  # the gate runs among the project's pins
    ],
)
def test_root_pyproject_dependency_change_is_harness_only_where_the_gate_job_installs_it(
    example_repo: tuple[GitRepo, str], install: str, lane: Lane
) -> None:
    repo, _ = example_repo
    repo.write("pyproject.toml", '[project]\nname = "x"\ndependencies = ["hypothesis==6.100"]\n')
    repo.write(
        ".github/workflows/gate.yml",
        f"on: [pull_request]\njobs:\n  gate:\n    steps:\n      - run: {install}\n"
        "      - run: oracle-gate check\n",
    )
    base = repo.commit("pyproject")
    repo.replace("pyproject.toml", "6.100", "6.1")
    report = repo.judge_paths(base, repo.commit("pin an old hypothesis"))
    assert lane_and_verdict(report, "pyproject.toml")[0] is lane
