"""Harness files by name and by content: whatever changes how tests are collected, run or judged.

Names count at any depth (a ``pytest.ini`` in a subdirectory is still read by
pytest run from there). Content counts where names cannot tell: a
pyproject.toml is harness unless only its inert parts moved, and any file a
``.bazelrc`` imports is as much Bazel configuration as the ``.bazelrc`` itself.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from oracle_gate.bazel.bazelrc import read_chain
from oracle_gate.classify.python import same_code
from oracle_gate.config.settings import SETTINGS_FILE, load_toml
from oracle_gate.repo.trees import GitTree

__all__ = [
    "PYTEST_CONFIGS",
    "bazelrc_imports",
    "harness_by_name",
    "harness_scope",
    "pyproject_is_harness",
    "same_meaning",
]

# Where pytest reads its options (``addopts``) from; pyproject.toml is judged by meaning.
PYTEST_CONFIGS = (
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
)
_NAMES = frozenset(
    {
        # pytest, tox, nox, coverage: every file they read their configuration from
        "conftest.py",
        *(name for name in PYTEST_CONFIGS if name != "pyproject.toml"),
        "tox.toml",
        "setup.py",
        "noxfile.py",
        ".coveragerc",
        # Bazel: the workspace, its flags, its wrapper, what it ignores
        ".bazelrc",
        ".bazelversion",
        ".bazelignore",
        "BUILD",
        "BUILD.bazel",
        "WORKSPACE",
        "WORKSPACE.bazel",
        "WORKSPACE.bzlmod",
        "MODULE.bazel",
        "REPO.bazel",  # Bazel 7+: every package's defaults; Bazel 8+: directories it ignores
        ".bazeliskrc",  # Bazelisk: which Bazel runs
        # the interpreter and what it loads before any test
        "sitecustomize.py",
        "usercustomize.py",
        ".python-version",
        # dependency manifests and lock files
        "Pipfile",
        "environment.yml",
        "environment.yaml",
        "package.json",
        "go.mod",
        "go.sum",
        "Cargo.toml",
        "Gemfile",
        # who reviews, how git checks files out, how CI runs, the gate's own policy
        "CODEOWNERS",
        ".gitattributes",
        "Makefile",
        "Jenkinsfile",
        ".gitlab-ci.yml",
        ".travis.yml",
        "azure-pipelines.yml",
        "bitbucket-pipelines.yml",
        SETTINGS_FILE,
    }
)
# A ``*.MODULE.bazel`` file is a segment MODULE.bazel reads with ``include()`` (Bazel 7.2+).
_MODULE_SEGMENT = ".MODULE.bazel"
_SUFFIXES = (".bzl", ".bazelrc", ".pth", ".lock", _MODULE_SEGMENT)
_STARLARK_NAMES = frozenset(
    {"WORKSPACE", "WORKSPACE.bazel", "WORKSPACE.bzlmod", "MODULE.bazel", "REPO.bazel"}
)
_LOADED_FROM_ANYWHERE = frozenset({"sitecustomize.py", "usercustomize.py"})
_GRAPH_SCOPED = frozenset({"BUILD", "BUILD.bazel", ".bazelignore", "CODEOWNERS"})
_DIRS = (
    ".ci/",
    ".github/workflows/",
    ".github/actions/",
    ".buildkite/",
    ".circleci/",
    ".gitlab/",
    ".oracle-gate/",  # the allowed signers of human notes
)
# requirements.txt, requirements-dev.in, test-requirements.txt, constraints.txt, ...
_MANIFEST = re.compile(
    r"(requirements|constraints)[^/]*\.(txt|in)$|(^|/)requirements/[^/]*\.(txt|in)$"
    r"|(^|/)pylock(\.[^/]*)?\.toml$"
)
# Bazel's wrapper: ``tools/bazel`` at a workspace root runs instead of bazel itself.
_BAZEL_WRAPPER = re.compile(r"(^|/)tools/bazel(\.exe)?$")

# pyproject.toml parts that change neither what is installed nor how tests
# run: package metadata and the configuration of linters and formatters.
_INERT_PROJECT_KEYS = frozenset(
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
    }
)
_INERT_TOOLS = frozenset(
    {
        "black",
        "isort",
        "ruff",
        "mypy",
        "pyright",
        "pylint",
        "flake8",
        "codespell",
        "pydocstyle",
        "docformatter",
        "bandit",
        "towncrier",
        "commitizen",
        "bumpversion",
    }
)


def harness_by_name(path: str) -> bool:
    """Whether ``path``'s name or directory alone makes it harness."""
    name = posixpath.basename(path)
    return (
        name in _NAMES
        or name.startswith(".bazelrc")
        or name.endswith(_SUFFIXES)
        or path.startswith(_DIRS)
        or _MANIFEST.search(path) is not None
        or _BAZEL_WRAPPER.search(path) is not None
    )


def harness_scope(path: str) -> str | None:
    """The directory whose every package a harness change can make run otherwise: the
    tree below a ``conftest.py``, a ``.bazelrc``, a ``WORKSPACE``, a manifest or CI file;
    the whole repository for what may be loaded from anywhere (a ``.bazelrc`` variant or
    import, a module binding pytest hooks, ``sitecustomize.py`` or a ``.pth`` file, which
    Python runs wherever their directory is on ``sys.path``, a ``*.MODULE.bazel`` segment
    the root MODULE.bazel includes). None for the files the
    package graph already scopes (BUILD files, ``.bzl`` files a BUILD loads,
    ``.bazelignore``) and CODEOWNERS, which changes who reviews, not what runs.
    """
    name = posixpath.basename(path)
    if name in _GRAPH_SCOPED or name.endswith(".bzl"):
        return None
    wrapper = _BAZEL_WRAPPER.search(path)
    if wrapper is not None:
        return path[: wrapper.start()]
    if name in _LOADED_FROM_ANYWHERE or name.endswith(".pth"):
        return ""  # Python runs it wherever its directory is on sys.path
    if name.endswith(_MODULE_SEGMENT):
        return ""  # part of the root MODULE.bazel, wherever it lives
    if name in (".bazelrc", "pyproject.toml") or (harness_by_name(path) and ".bazelrc" not in name):
        return posixpath.dirname(path)
    return ""


def same_meaning(path: str, before: bytes | None, after: bytes | None) -> bool:
    """Whether a harness file changed only in comments and blank lines, where that can be
    told: Python and Starlark files by their syntax trees (``same_code``), ``.bazelrc``
    files by their lines."""
    if before is None or after is None:
        return before == after
    name = posixpath.basename(path)
    if name.endswith((".py", _MODULE_SEGMENT)) or name in _STARLARK_NAMES:
        return same_code(before, after)
    if ".bazelrc" in name:
        return _rc_lines(before) == _rc_lines(after)
    return before == after


def _rc_lines(text: bytes) -> list[bytes]:
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(b"#")]


def _without_inert(document: dict[str, Any]) -> dict[str, Any]:
    meaning = dict(document)
    project = meaning.get("project")
    if isinstance(project, dict):
        meaning["project"] = {k: v for k, v in project.items() if k not in _INERT_PROJECT_KEYS}
    tool = meaning.get("tool")
    if isinstance(tool, dict):
        meaning["tool"] = {k: v for k, v in tool.items() if k not in _INERT_TOOLS}
    return meaning


def _pyproject_meaning(text: bytes | None) -> object:
    """What of a pyproject.toml can change a test run; the whole text when it is not TOML."""
    if text is None:
        return None
    document = load_toml(text)
    return text if document is None else _without_inert(document)


def pyproject_is_harness(before: bytes | None, after: bytes | None) -> bool:
    """Whether a pyproject.toml edit moved anything but metadata and linter settings.

    Dependencies, optional dependencies, entry points (``pytest11``), scripts,
    the build system, ``[tool.pytest]``, ``[tool.coverage]``, this gate's own
    ``[tool.oracle-gate]`` and every tool not known to be inert count.
    """
    return _pyproject_meaning(before) != _pyproject_meaning(after)


def bazelrc_imports(tree: GitTree) -> frozenset[str]:
    """Every ``.bazelrc`` of the tree and every file they import, transitively.

    Both ``import`` and ``try-import`` count; ``%workspace%`` is the directory of
    the ``.bazelrc`` the chain started from.
    """
    # endswith, not basename: this looks at every path of a tree, 80,000 in a big monorepo
    starts = [
        (path, posixpath.dirname(path))
        for path in tree.paths()
        if path.endswith(".bazelrc") and (path == ".bazelrc" or path.endswith("/.bazelrc"))
    ]
    return frozenset(read_chain(tree.read_optional, starts))
