"""Shared configuration files judged by the section that changed: pyproject.toml, setup.cfg,
tox.ini, setup.py, coverage settings. Each rule: the edit that must be rejected, and the
honest packaging edit beside it that must merge."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict
from oracle_gate.report import Report
from reports import lane_and_verdict

PKG = "libs/intervals"

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "intervals"
version = "1.0"
description = "ranges"
dependencies = ["hypothesis>=6"]

[project.entry-points.console_scripts]
intervals = "intervals:main"

[tool.ruff]
line-length = 100

[tool.pytest.ini_options]
addopts = "-q"
"""

SETUP_CFG = """[metadata]
name = intervals
version = 1.0

[options]
install_requires = hypothesis

[options.entry_points]
console_scripts =
    intervals = intervals:main

[flake8]
max-line-length = 100

[tool:pytest]
addopts = -q
"""

TOX_INI = """[tox]
envlist = py311

[testenv]
deps = pytest
commands = pytest

[pytest]
addopts = -q
"""

SETUP_PY = """from setuptools import setup

setup(
    name="intervals",
    version="1.0",
    classifiers=["Programming Language :: Python :: 3.10"],
    install_requires=["hypothesis"],
    entry_points={"console_scripts": ["intervals = intervals:main"]},
)
"""


def _changed(repo: GitRepo, path: str, text: str, old: str, new: str) -> tuple[str, Report]:
    """Commit ``path`` with ``text``, then with ``old`` replaced by ``new``; the report."""
    repo.write(path, text)
    base = repo.commit(f"add {path}")
    repo.replace(path, old, new)
    return base, repo.judge_paths(base, repo.commit(f"edit {path}"))


def _merges(repo: GitRepo, base: str) -> None:
    assert repo.gate(base).verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('version = "1.0"', 'version = "1.1"'),
        ('dependencies = ["hypothesis>=6"]', 'dependencies = ["hypothesis>=6", "attrs"]'),
        ('requires = ["setuptools>=61"]', 'requires = ["flit_core>=3.2"]'),
        ('build-backend = "setuptools.build_meta"', 'build-backend = "flit_core.buildapi"'),
        ('intervals = "intervals:main"', 'intervals = "intervals.cli:main"'),
        ("line-length = 100", "line-length = 88"),
        ("[tool.ruff]", "[tool.setuptools_scm]\n\n[tool.ruff]"),
    ],
)
def test_pyproject_packaging_and_linter_edits_are_other_and_merge(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, _ = example_repo
    base, report = _changed(repo, "pyproject.toml", PYPROJECT, old, new)
    assert lane_and_verdict(report, "pyproject.toml") == (Lane.OTHER, Verdict.PASS)
    assert "only packaging and tool settings changed" in report.findings[0].reason
    _merges(repo, base)


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('addopts = "-q"', 'addopts = "-k not slow"', "[tool.pytest]"),
        (
            "[project.entry-points.console_scripts]",
            '[project.entry-points.pytest11]\nquiet = "tools.quiet"\n\n'
            "[project.entry-points.console_scripts]",
            "[project.entry-points.pytest11]",
        ),
        (
            "[tool.ruff]",
            '[tool.pytest_env]\nHYPOTHESIS_PROFILE = "none"\n\n[tool.ruff]',
            "pytest_env",
        ),
        ("[tool.ruff]", '[tool.oracle-gate]\ndocs = ["**"]\n\n[tool.ruff]', "oracle-gate"),
        ("[tool.ruff]", '[tool.poetry.plugins.pytest11]\nq = "q"\n\n[tool.ruff]', "pytest11"),
        ('name = "intervals"', 'name = "intervals"\nunknown-key = 1', "unknown-key"),
        ("[tool.ruff]", "[tool.ruff", "does not parse"),
    ],
)
def test_pyproject_edits_that_reach_pytest_or_the_gate_are_harness(
    example_repo: tuple[GitRepo, str], old: str, new: str, named: str
) -> None:
    repo, _ = example_repo
    _, report = _changed(repo, "pyproject.toml", PYPROJECT, old, new)
    assert lane_and_verdict(report, "pyproject.toml") == (Lane.HARNESS, Verdict.REJECT)
    assert named in report.findings[0].reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("version = 1.0", "version = 1.1"),
        ("install_requires = hypothesis", "install_requires = hypothesis\n    attrs"),
        ("intervals = intervals:main", "intervals = intervals.cli:main"),
        ("max-line-length = 100", "max-line-length = 88"),
    ],
)
def test_setup_cfg_packaging_edits_are_other_and_merge(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, _ = example_repo
    base, report = _changed(repo, f"{PKG}/setup.cfg", SETUP_CFG, old, new)
    assert lane_and_verdict(report, f"{PKG}/setup.cfg") == (Lane.OTHER, Verdict.PASS)
    _merges(repo, base)


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ("addopts = -q", "addopts = -k 'not slow'", "[tool:pytest]"),
        ("console_scripts =", "pytest11 =\n    quiet = tools.quiet\nconsole_scripts =", "pytest11"),
        ("[flake8]", "[pytest_plugin_settings]\nx = 1\n\n[flake8]", "[pytest_plugin_settings]"),
        ("[flake8]", "[metadata]\nname = twice\n\n[flake8]", "does not parse"),
    ],
)
def test_setup_cfg_edits_that_reach_pytest_are_harness(
    example_repo: tuple[GitRepo, str], old: str, new: str, named: str
) -> None:
    repo, _ = example_repo
    _, report = _changed(repo, f"{PKG}/setup.cfg", SETUP_CFG, old, new)
    assert lane_and_verdict(report, f"{PKG}/setup.cfg") == (Lane.HARNESS, Verdict.REJECT)
    assert named in report.findings[0].reason


def test_tox_env_edit_is_other_and_merges(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    base, report = _changed(repo, "tox.ini", TOX_INI, "envlist = py311", "envlist = py311,py312")
    assert lane_and_verdict(report, "tox.ini") == (Lane.OTHER, Verdict.PASS)
    _merges(repo, base)


def test_tox_pytest_section_edit_is_harness(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    _, report = _changed(repo, "tox.ini", TOX_INI, "addopts = -q", "addopts = -p no:randomly -x")
    assert lane_and_verdict(report, "tox.ini") == (Lane.HARNESS, Verdict.REJECT)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('version="1.0"', 'version="1.1"'),
        ('"Programming Language :: Python :: 3.10"', '"Programming Language :: Python :: 3.13"'),
        ('install_requires=["hypothesis"]', 'install_requires=["hypothesis>=6", "attrs"]'),
        ('"intervals = intervals:main"', '"intervals = intervals.cli:main"'),
        # a keyword of scripts only, added or dropped
        ('    entry_points={"console_scripts": ["intervals = intervals:main"]},\n', ""),
    ],
)
def test_setup_py_literal_packaging_edits_are_other_and_merge(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, _ = example_repo
    base, report = _changed(repo, "setup.py", SETUP_PY, old, new)
    assert lane_and_verdict(report, "setup.py") == (Lane.OTHER, Verdict.PASS)
    _merges(repo, base)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('{"console_scripts"', '{"pytest11": ["quiet = tools.quiet"], "console_scripts"'),
        ('version="1.0"', "version=open('VERSION').read()"),
        (
            "from setuptools import setup\n",
            "import os\nfrom setuptools import setup\n\nos.environ.clear()\n",
        ),
        ("setup(\n", "def setup_it():\n    pass\n\n\nsetup(\n"),
    ],
)
def test_setup_py_code_or_entry_point_edit_is_harness(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, _ = example_repo
    _, report = _changed(repo, "setup.py", SETUP_PY, old, new)
    assert lane_and_verdict(report, "setup.py") == (Lane.HARNESS, Verdict.REJECT)


# A build helper (versioneer) the root settings call tooling, as toolz 0.11.0 took it up.
HELPER = 'tooling = ["versioneer.py"]\n'
VERSIONEER = (
    'import versioneer\nfrom setuptools import setup\n\nsetup(\n    name="intervals",\n'
    "    version=versioneer.get_version(),\n    cmdclass=versioneer.get_cmdclass(),\n"
)
PACKAGE_VERSION = (
    'import intervals\nfrom setuptools import setup\n\nsetup(\n    name="intervals",\n'
    "    version=intervals.__version__,\n"
)
PLAIN = 'from setuptools import setup\n\nsetup(\n    name="intervals",\n    version="1.0",\n'


@pytest.mark.parametrize(
    ("settings", "old", "new"),
    [
        (HELPER, PLAIN, VERSIONEER),
        (HELPER, PACKAGE_VERSION, VERSIONEER),
        ("", PLAIN, PACKAGE_VERSION),
        ("", PACKAGE_VERSION, PLAIN),
    ],
)
def test_setup_py_version_from_the_package_or_a_build_helper_is_other_and_merges(
    example_repo: tuple[GitRepo, str], settings: str, old: str, new: str
) -> None:
    repo, _ = example_repo
    repo.write("oracle-gate.toml", settings)
    base, report = _changed(repo, "setup.py", SETUP_PY.replace(PLAIN, old), old, new)
    assert lane_and_verdict(report, "setup.py") == (Lane.OTHER, Verdict.PASS)
    _merges(repo, base)


@pytest.mark.parametrize(
    ("settings", "new"),
    [
        ("", VERSIONEER),  # versioneer.py is not tooling: its calls are code like any other
        (HELPER, VERSIONEER.replace("get_cmdclass()", "get_cmdclass(open('x').read())")),
        (HELPER, VERSIONEER + '    entry_points=versioneer.entry_points("pytest11"),\n'),
        (HELPER, VERSIONEER.replace("from setuptools", "versioneer.install()\nfrom setuptools")),
        (HELPER, VERSIONEER.replace("get_cmdclass()", '{"test": versioneer.Quiet}')),
        # the package is not a build helper: calling it at build time is code
        (HELPER, PACKAGE_VERSION.replace("intervals.__version__", "intervals.version()")),
        (HELPER, "import sitecustomize_hook\n" + PLAIN),  # an import no keyword needs
    ],
)
def test_setup_py_helper_calls_beyond_packaging_are_harness(
    example_repo: tuple[GitRepo, str], settings: str, new: str
) -> None:
    repo, _ = example_repo
    repo.write("oracle-gate.toml", settings)
    _, report = _changed(repo, "setup.py", SETUP_PY, PLAIN, new)
    assert lane_and_verdict(report, "setup.py") == (Lane.HARNESS, Verdict.REJECT)


COVERAGERC = "[run]\nbranch = true\n\n[report]\nshow_missing = true\n"


def test_coverage_settings_are_other_where_nothing_runs_coverage(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    base, report = _changed(repo, ".coveragerc", COVERAGERC, "branch = true", "branch = false")
    assert lane_and_verdict(report, ".coveragerc") == (Lane.OTHER, Verdict.PASS)
    _merges(repo, base)
    _, report = _changed(
        repo,
        "pyproject.toml",
        PYPROJECT,
        "[tool.ruff]",
        "[tool.coverage.run]\nbranch = true\n\n[tool.ruff]",
    )
    assert lane_and_verdict(report, "pyproject.toml") == (Lane.OTHER, Verdict.PASS)


@pytest.mark.parametrize(
    ("config", "text"),
    [
        (f"{PKG}/pytest.ini", "[pytest]\naddopts = --cov=intervals\n"),
        (f"{PKG}/conftest.py", "import coverage\n"),
    ],
)
def test_coverage_settings_are_harness_where_the_tests_pytest_runs_coverage(
    example_repo: tuple[GitRepo, str], config: str, text: str
) -> None:
    repo, _ = example_repo
    repo.write(config, text)
    repo.commit("the tests run coverage")
    _, report = _changed(
        repo, ".coveragerc", COVERAGERC, "branch = true", "branch = true\nplugins = tools.quiet"
    )
    assert lane_and_verdict(report, ".coveragerc") == (Lane.HARNESS, Verdict.REJECT)
    assert "coverage runs in the tests' pytest" in report.findings[0].reason


def test_pytest_ini_comment_only_edit_passes_and_an_option_rejects(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    path = f"{PKG}/pytest.ini"
    _, report = _changed(repo, path, "[pytest]\naddopts = -q\n", "[pytest]\n", "# why\n[pytest]\n")
    assert lane_and_verdict(report, path) == (Lane.HARNESS, Verdict.PASS)
    _, report = _changed(repo, path, "[pytest]\naddopts = -q\n", "-q", "-q -k 'not slow'")
    assert lane_and_verdict(report, path) == (Lane.HARNESS, Verdict.REJECT)
