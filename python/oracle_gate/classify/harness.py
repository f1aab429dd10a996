"""Harness files by name: what pytest, Bazel and the interpreter read before any test runs.

Names count at any depth (a ``pytest.ini`` in a subdirectory is still read by
pytest run from there), and any file a ``.bazelrc`` imports is as much Bazel
configuration as the ``.bazelrc`` itself. Files several tools share
(pyproject.toml, setup.cfg, tox.ini), CI files and dependency lists are judged
by what changed in them instead (``effects``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from oracle_gate.bazel.bazelrc import read_chain
from oracle_gate.classify.ci import is_ci_file, load_yaml
from oracle_gate.classify.python import same_code
from oracle_gate.classify.sections import ini_sections
from oracle_gate.config.settings import SETTINGS_FILE, load_toml
from oracle_gate.repo.trees import GitTree

__all__ = [
    "PYTEST_CONFIGS",
    "bazelrc_imports",
    "harness_by_name",
    "harness_scope",
    "same_meaning",
]

# Where pytest reads its options (``addopts``) from.
PYTEST_CONFIGS = (
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
)
# pytest's own files: every change to them is a change to how tests run. The shared
# files (tox.ini, setup.cfg, pyproject.toml) are judged by section (``effects``).
_PYTEST_OWN = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml")
_NAMES = frozenset(
    {
        # pytest and nox: the files they read their configuration or code from
        "conftest.py",
        *_PYTEST_OWN,
        "noxfile.py",
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
        # what the interpreter loads before any test
        "sitecustomize.py",
        "usercustomize.py",
        # other languages' manifests, which Bazel rules (rules_rust, rules_js, ...) read
        "package.json",
        "go.mod",
        "go.sum",
        "Cargo.toml",
        "Gemfile",
        # who reviews, how git checks files out, the gate's own policy
        "CODEOWNERS",
        ".gitattributes",
        SETTINGS_FILE,
    }
)
# Judged by their effect (``effects.effect_of``); when harness, they configure the
# packages below their directory, as the files above do.
_SCOPED_BY_DIRECTORY = frozenset(
    {"tox.ini", "tox.toml", "setup.cfg", "setup.py", ".coveragerc", "Makefile", "requirements.txt"}
)
# A ``*.MODULE.bazel`` file is a segment MODULE.bazel reads with ``include()`` (Bazel 7.2+).
_MODULE_SEGMENT = ".MODULE.bazel"
_SUFFIXES = (".bzl", ".bazelrc", ".pth", ".lock", _MODULE_SEGMENT)
# Lock files of Python tools are dependency lists (``effects``), not Bazel inputs.
_PYTHON_LOCKS = frozenset({"poetry.lock", "uv.lock", "pdm.lock", "Pipfile.lock"})
_STARLARK_NAMES = frozenset(
    {"WORKSPACE", "WORKSPACE.bazel", "WORKSPACE.bzlmod", "MODULE.bazel", "REPO.bazel"}
)
_LOADED_FROM_ANYWHERE = frozenset({"sitecustomize.py", "usercustomize.py"})
_GRAPH_SCOPED = frozenset({"BUILD", "BUILD.bazel", ".bazelignore", "CODEOWNERS"})
_DIRS = (".oracle-gate/",)  # the allowed signers of human notes
# Bazel's wrapper: ``tools/bazel`` at a workspace root runs instead of bazel itself.
_BAZEL_WRAPPER = re.compile(r"(^|/)tools/bazel(\.exe)?$")
# Where importlib.metadata finds distributions, entry points (``pytest11``) included,
# in any directory on sys.path.
_METADATA_DIR = re.compile(r"(^|/)[^/]+\.(dist-info|egg-info)/")


def harness_by_name(path: str) -> bool:
    """Whether ``path``'s name or directory alone makes it harness."""
    name = posixpath.basename(path)
    return (
        name in _NAMES
        or name.startswith(".bazelrc")
        or (name.endswith(_SUFFIXES) and name not in _PYTHON_LOCKS)
        or path.startswith(_DIRS)
        or _BAZEL_WRAPPER.search(path) is not None
        or _METADATA_DIR.search(path) is not None
    )


def harness_scope(path: str) -> str | None:
    """The directory whose every package a harness change can make run otherwise: the
    tree below a ``conftest.py``, a ``.bazelrc``, a ``WORKSPACE``, a manifest or CI file;
    the whole repository for what may be loaded from anywhere (a ``.bazelrc`` variant or
    import, a module binding pytest hooks, ``sitecustomize.py`` or a ``.pth`` file, which
    Python runs wherever their directory is on ``sys.path``, a ``*.MODULE.bazel`` segment
    the root MODULE.bazel includes, distribution metadata). None for the files the
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
    by_directory = (
        name in _SCOPED_BY_DIRECTORY or name.endswith((".txt", ".in", ".toml")) or is_ci_file(path)
    )
    if by_directory or (harness_by_name(path) and ".bazelrc" not in name):
        return posixpath.dirname(path)
    return ""


def same_meaning(path: str, before: bytes | None, after: bytes | None) -> bool:
    """Whether a harness file changed only in comments and layout, where that can be
    told: Python and Starlark files by their syntax trees (``same_code``), ``.bazelrc``
    files by their lines, TOML, INI and YAML files by what they parse to."""
    if before is None or after is None:
        return before == after
    name = posixpath.basename(path)
    if name.endswith((".py", _MODULE_SEGMENT)) or name in _STARLARK_NAMES:
        return same_code(before, after)
    if ".bazelrc" in name:
        return _rc_lines(before) == _rc_lines(after)
    parse = _parser_of(name)
    if parse is not None:
        old, new = parse(before), parse(after)
        return old is not None and old == new
    return before == after


def _parser_of(name: str) -> Callable[[bytes], object] | None:
    if name.endswith(".toml"):
        return load_toml
    if name.endswith((".ini", ".cfg")) or name == ".coveragerc":
        return ini_sections
    if name.endswith((".yml", ".yaml")):
        return _load_yaml
    return None


def _load_yaml(text: bytes) -> object:
    parsed, document = load_yaml(text)
    return document if parsed else None


def _rc_lines(text: bytes) -> list[bytes]:
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(b"#")]


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
