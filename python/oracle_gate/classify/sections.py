"""Shared configuration files judged by the sections that changed (pytest, setuptools, tox).

A file read by several tools (``pyproject.toml``, ``setup.cfg``, ``tox.ini``) is
harness only where a changed section can change how the gate collects, runs or
judges tests: pytest's own configuration, a ``pytest11`` entry point, the gate's
own ``[tool.oracle-gate]``, a table no tool is known to leave alone, and
coverage's settings where coverage runs inside the gate's pytest. Package
metadata, build backends, dependency lists and the settings of linters and
release tools are packaging: the gate installs nothing and runs none of them.
A side that does not parse is judged harness as a whole (fail closed).
"""

from __future__ import annotations

import configparser
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from oracle_gate.config.settings import load_toml

__all__ = [
    "ENTRY_GROUP",
    "Effect",
    "coverage_effect",
    "ini_effect",
    "ini_sections",
    "pyproject_effect",
    "pytest_section_text",
]

# A predicate: whether coverage can run inside the gate's pytest (``ci.coverage_runs``).
CoverageRuns = Callable[[], bool]


@dataclass(frozen=True)
class Effect:
    """What a change of one configuration file can do to the gate.

    Attributes:
        harness: whether it can change how tests are collected, run or judged.
        reason: which parts changed, one short phrase ("[tool.pytest.ini_options]").
    """

    harness: bool
    reason: str


_UNCHANGED = Effect(False, "no section that configures the gate's test runs changed")

# pyproject.toml [project] keys the gate never reads: metadata and what to install.
_PROJECT_PACKAGING = frozenset(
    {
        "name",
        "version",
        "description",
        "readme",
        "authors",
        "maintainers",
        "keywords",
        "classifiers",
        "urls",
        "license",
        "license-files",
        "requires-python",
        "dependencies",
        "optional-dependencies",
        "dynamic",
        "scripts",
        "gui-scripts",
        "import-names",
        "import-namespaces",
    }
)
_TOP_PACKAGING = frozenset({"build-system", "dependency-groups"})
# [tool.X] tables of tools that neither run the tests nor are read by pytest or its
# plugins: linters, formatters, type checkers, build backends, release and CI runners
# (tox, nox and hatch run tests in CI, never in the gate). A tool not listed is
# harness: a pytest plugin may read its own table.
PACKAGING_TOOLS = frozenset(
    {
        "autopep8",
        "bandit",
        "black",
        "bumpversion",
        "bumpver",
        "cibuildwheel",
        "check-manifest",
        "codespell",
        "commitizen",
        "deptry",
        "docformatter",
        "flake8",
        "flit",
        "hatch",
        "interrogate",
        "isort",
        "maturin",
        "mdformat",
        "mypy",
        "nox",
        "pdm",
        "pixi",
        "poetry",
        "pydoclint",
        "pydocstyle",
        "pylint",
        "pyright",
        "pyroma",
        "refurb",
        "repo-review",
        "ruff",
        "scikit-build",
        "semantic_release",
        "setuptools",
        "setuptools_scm",
        "setuptools-scm",
        "slotscheck",
        "sphinx",
        "tbump",
        "towncrier",
        "tox",
        "typos",
        "uv",
        "versioneer",
        "vulture",
        "yapf",
    }
)
ENTRY_GROUP = "pytest11"  # where pytest finds plugins to load at start-up

# setup.cfg and tox.ini sections pytest reads, and those of coverage.
_PYTEST_SECTIONS = frozenset({"pytest", "tool:pytest"})
_COVERAGE_PREFIX = "coverage:"
_ENTRY_POINTS_SECTION = "options.entry_points"
# Sections of setuptools, tox and linters: read by builds, CI runners and linters only.
_INI_PACKAGING = frozenset(
    {
        "aliases",
        "bdist_rpm",
        "bdist_wheel",
        "build",
        "build_ext",
        "build_py",
        "build_sphinx",
        "check-manifest",
        "devpi:upload",
        "easy_install",
        "egg_info",
        "flake8",
        "gh",
        "gh-actions",
        "install",
        "isort",
        "metadata",
        "mypy",
        "options",
        "pep8",
        "pycodestyle",
        "pydocstyle",
        "pylint",
        "sdist",
        "testenv",
        "tool:isort",
        "tox",
        "upload",
        "upload_docs",
        "versioneer",
        "wheel",
        "zest.releaser",
    }
)
_INI_PACKAGING_PREFIXES = ("options.", "mypy-", "testenv:", "tox:", "bumpversion", "flake8:")


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Keys whose values differ between the two mappings (present on one side only too)."""
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def _table(document: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = document.get(key, {})
    return value if isinstance(value, dict) else {key: value}


def _pytest11_moved(before: Any, after: Any) -> bool:
    """Whether a mapping of entry-point groups changed its ``pytest11`` group."""
    old = before.get(ENTRY_GROUP) if isinstance(before, dict) else before
    new = after.get(ENTRY_GROUP) if isinstance(after, dict) else after
    return bool(old != new)


def _project_parts(before: Mapping[str, Any], after: Mapping[str, Any]) -> Iterator[str]:
    """The [project] keys that can reach the gate: a ``pytest11`` entry point, an unknown key."""
    for key in _changed(before, after):
        if key == "entry-points":
            if _pytest11_moved(before.get(key), after.get(key)):
                yield f"[project.entry-points.{ENTRY_GROUP}]"
        elif key not in _PROJECT_PACKAGING:
            yield f"[project] {key}"


def _tool_parts(
    before: Mapping[str, Any], after: Mapping[str, Any], coverage_runs: CoverageRuns
) -> Iterator[str]:
    """The [tool.X] tables that can reach the gate."""
    for tool in _changed(before, after):
        if tool == "coverage":
            if coverage_runs():
                yield "[tool.coverage] (coverage runs in the tests' pytest)"
        elif tool == "poetry":
            plugins = (_table(_table(side, "poetry"), "plugins") for side in (before, after))
            if _pytest11_moved(*plugins):
                yield f"[tool.poetry.plugins.{ENTRY_GROUP}]"
        elif tool not in PACKAGING_TOOLS:
            yield f"[tool.{tool}]"


def pyproject_effect(
    before: bytes | None, after: bytes | None, coverage_runs: CoverageRuns
) -> Effect:
    """What a pyproject.toml change can do to the gate, table by table.

    Harness: ``[tool.pytest.ini_options]`` and ``[tool.pytest]``, ``[tool.oracle-gate]``,
    a ``pytest11`` entry point (``[project.entry-points]``, ``[tool.poetry.plugins]``),
    ``[tool.coverage]`` where coverage runs, any tool table or top-level table not
    known to be packaging, a key ``[project]`` does not define. A file missing on one
    side counts as empty there; one that is not TOML is harness.
    """
    documents = [{} if text is None else load_toml(text) for text in (before, after)]
    old, new = documents
    if old is None or new is None:
        return Effect(True, "pyproject.toml does not parse as TOML: judged as a whole")
    parts: list[str] = []
    for key in _changed(old, new):
        if key == "project":
            parts += _project_parts(_table(old, key), _table(new, key))
        elif key == "tool":
            parts += _tool_parts(_table(old, key), _table(new, key), coverage_runs)
        elif key not in _TOP_PACKAGING:
            parts.append(f"[{key}]")
    return Effect(True, ", ".join(parts) + " changed") if parts else _packaging(old, new)


def _packaging(old: Mapping[str, Any], new: Mapping[str, Any]) -> Effect:
    moved = _changed(old, new)
    if not moved:
        return _UNCHANGED
    return Effect(False, "only packaging and tool settings changed: " + ", ".join(moved))


# --- INI files: setup.cfg, tox.ini, .coveragerc ------------------------------------------


def ini_sections(text: bytes) -> dict[str, dict[str, str]] | None:
    """Each section's options, names as written; None when the text does not parse.

    Options repeated in a section, sections given twice and text before the
    first section are parse errors, as they are for pytest's own reader.
    """
    parser = configparser.ConfigParser(interpolation=None, strict=True, default_section="\0")
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text.decode("utf-8"))
    except (UnicodeDecodeError, configparser.Error):
        return None
    return {name: dict(parser.items(name, raw=True)) for name in parser.sections()}


def _ini_part(section: str, old: Any, new: Any, coverage_runs: CoverageRuns) -> str | None:
    """Why a changed INI section reaches the gate, or None when it cannot."""
    if section in _PYTEST_SECTIONS:
        return f"[{section}]"
    if section.startswith(_COVERAGE_PREFIX):
        return f"[{section}] (coverage runs in the tests' pytest)" if coverage_runs() else None
    if section == _ENTRY_POINTS_SECTION:
        return f"[{section}] {ENTRY_GROUP}" if _pytest11_moved(old or {}, new or {}) else None
    if section in _INI_PACKAGING or section.startswith(_INI_PACKAGING_PREFIXES):
        return None
    return f"[{section}]"


def ini_effect(
    name: str, before: bytes | None, after: bytes | None, coverage_runs: CoverageRuns
) -> Effect:
    """What a ``setup.cfg`` or ``tox.ini`` change can do to the gate, section by section.

    Harness: ``[pytest]``/``[tool:pytest]``, a ``pytest11`` line of
    ``[options.entry_points]``, ``[coverage:*]`` where coverage runs, and any
    section not known to be setuptools', tox's or a linter's.
    """
    sections = [{} if text is None else ini_sections(text) for text in (before, after)]
    old, new = sections
    if old is None or new is None:
        return Effect(True, f"{name} does not parse as INI: judged as a whole")
    found = [_ini_part(s, old.get(s), new.get(s), coverage_runs) for s in _changed(old, new)]
    parts = [part for part in found if part is not None]
    return Effect(True, ", ".join(parts) + " changed") if parts else _packaging(old, new)


def coverage_effect(
    before: bytes | None, after: bytes | None, coverage_runs: CoverageRuns
) -> Effect:
    """A ``.coveragerc`` change: harness only where coverage runs inside the tests' pytest
    (its ``[run] plugins`` import code there); a file that is not INI is harness."""
    sections = [{} if text is None else ini_sections(text) for text in (before, after)]
    if None in sections:
        return Effect(True, ".coveragerc does not parse as INI: judged as a whole")
    if sections[0] == sections[1]:
        return _UNCHANGED
    if coverage_runs():
        return Effect(True, ".coveragerc changed, and coverage runs in the tests' pytest")
    return Effect(False, "coverage settings: nothing in the tests' pytest runs coverage")


def pytest_section_text(text: bytes, name: str) -> str | None:
    """The options of a file's pytest section, as one text (None: no such section).

    For ``pytest.ini`` and ``tox.ini``: ``[pytest]``; ``setup.cfg``: ``[tool:pytest]``;
    ``pyproject.toml`` and ``pytest.toml``: the pytest tables. A file that does not
    parse gives its whole text, erring toward what it might say.
    """
    if name.endswith(".toml"):
        document = load_toml(text)
        if document is None:
            return text.decode("utf-8", "replace")
        tool = _table(document, "tool")
        tables = [_table(tool, "pytest"), _table(document, "pytest")]
        found = [repr(table) for table in tables if table]
        return " ".join(found) if found else None
    sections = ini_sections(text)
    if sections is None:
        return text.decode("utf-8", "replace")
    wanted = [values for section, values in sections.items() if section in _PYTEST_SECTIONS]
    return " ".join(repr(values) for values in wanted) if wanted else None
