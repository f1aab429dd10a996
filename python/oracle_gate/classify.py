"""Which lane each changed path belongs to (SPEC §4): exactly one per path."""

from __future__ import annotations

import posixpath
import sys

from oracle_gate.bazel.labels import BUILD_NAMES
from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.lockfile import LOCK_FILE
from oracle_gate.config.matrix import MATRIX_FILE
from oracle_gate.config.notes import CHANGELOG_FILE
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.globs import matches_any
from oracle_gate.model import Change, ChangeKind, Lane, Package

__all__ = ["classify"]

_LEDGER_FILES = frozenset({SEEDS_FILE, FREEZE_FILE, ASSUMPTIONS_FILE})

# Files that change how tests are collected, run or judged.
_HARNESS_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "noxfile.py",
        ".bazelrc",
        ".bazelversion",
        "BUILD",
        "BUILD.bazel",
        "WORKSPACE",
        "WORKSPACE.bazel",
        "MODULE.bazel",
        "CODEOWNERS",
        "sitecustomize.py",
        "usercustomize.py",
        ".gitlab-ci.yml",
        "Jenkinsfile",
        ".coveragerc",
        "Makefile",
    }
)
_HARNESS_SUFFIXES = (".bzl", ".bazelrc", ".pth")
_HARNESS_DIRS = (".ci/", ".github/workflows/", ".github/actions/", ".buildkite/", ".circleci/")
_DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
_DOC_NAMES = frozenset({"LICENSE", "NOTICE", "AUTHORS", "COPYING"})
_OTHER_NAMES = frozenset({".gitignore", ".editorconfig", ".mailmap", ".gitattributes"})
_SOURCE_SUFFIXES = (
    ".py",
    ".pyi",
    ".pyx",
    ".rs",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".go",
    ".java",
    ".js",
    ".ts",
    ".sh",
    ".sql",
    ".toml",
    ".yaml",
    ".yml",
    ".json",
    ".cfg",
)
_PYPROJECT_TEST_TABLES = ("pytest", "coverage", "tox", "hatch", "nox")


if sys.version_info >= (3, 11):
    import tomllib

    def _pyproject_test_config(text: bytes) -> object:
        """The test-related tables of a pyproject.toml; the whole text when it is not TOML."""
        try:
            tool = tomllib.loads(text.decode("utf-8")).get("tool", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return text
        return {name: tool.get(name) for name in _PYPROJECT_TEST_TABLES}

else:

    def _pyproject_test_config(text: bytes) -> object:
        """Without tomllib any edit may touch test config, so the whole text counts."""
        return text


def _pyproject_is_harness(change: Change, facts: Facts) -> bool:
    old = change.old_path or change.path
    parent_text = facts.parent.read_optional(old)
    head_text = facts.head.read_optional(change.path)
    parent_config = None if parent_text is None else _pyproject_test_config(parent_text)
    head_config = None if head_text is None else _pyproject_test_config(head_text)
    return parent_config != head_config


def _oracle_modules(packages: list[Package]) -> set[str]:
    return {module for p in packages for row in p.matrix.rows for module in row.oracle_modules}


def _is_harness(path: str) -> bool:
    name = posixpath.basename(path)
    return (
        name in _HARNESS_NAMES or name.endswith(_HARNESS_SUFFIXES) or path.startswith(_HARNESS_DIRS)
    )


def _is_doc(path: str) -> bool:
    name = posixpath.basename(path)
    return name.endswith(_DOC_SUFFIXES) or name in _DOC_NAMES or path.startswith("docs/")


def _looks_like_test(path: str) -> bool:
    name = posixpath.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _package_lane(change: Change, packages: list[Package], in_parent: bool) -> Lane | None:
    """The lane given the package's matrices (parent and head, so narrowing cannot hide)."""
    relative = packages[0].relative(change.path)
    if relative in _oracle_modules(packages):
        return Lane.PROPERTY
    if any(
        matches_any(relative, [*p.matrix.fixtures, *(g for r in p.matrix.rows for g in r.fixtures)])
        for p in packages
    ):
        return Lane.FIXTURE
    if any(matches_any(relative, p.matrix.tests) for p in packages):
        return Lane.TEST if in_parent else Lane.AGENT_TEST
    return None


def _declares_gate(change: Change, facts: Facts) -> bool:
    """Whether this BUILD file declares a package's matrix (``oracle_gate(...)``) on either side.

    The parent side counts too: removing the gate call is the matrix shrinking.
    """
    old_path = change.old_path or change.path
    return (
        facts.head_graph.matrix_declared_by(change.path) is not None
        or facts.parent_graph.matrix_declared_by(old_path) is not None
    )


def _lane_of(change: Change, facts: Facts, packages: list[Package]) -> Lane:
    path = change.path
    name = posixpath.basename(path)
    in_parent = change.kind is not ChangeKind.ADDED
    if name == LOCK_FILE:
        return Lane.LOCK
    if name in _LEDGER_FILES:
        return Lane.LEDGER
    if name == MATRIX_FILE:
        return Lane.MATRIX
    if name in BUILD_NAMES and _declares_gate(change, facts):
        return Lane.MATRIX
    if name == CHANGELOG_FILE:
        return Lane.DOCS
    if name == "pyproject.toml":
        return Lane.HARNESS if _pyproject_is_harness(change, facts) else Lane.OTHER
    if _is_harness(path):
        return Lane.HARNESS
    if packages:
        lane = _package_lane(change, packages, in_parent)
        if lane is not None:
            return lane
    if _is_doc(path):
        return Lane.DOCS
    if name in _OTHER_NAMES:
        return Lane.OTHER
    if not packages and _looks_like_test(path):
        return Lane.TEST if in_parent else Lane.AGENT_TEST
    if packages or name.endswith(_SOURCE_SUFFIXES):
        return Lane.PRODUCTION
    return Lane.OTHER


def _packages_of(change: Change, facts: Facts) -> list[Package]:
    """The owning package in head, then in parent (same directory), without duplicates."""
    found: list[Package] = []
    head_package = facts.head_graph.package_of(change.path)
    if head_package is not None:
        found.append(head_package)
    parent_package = facts.parent_graph.package_of(change.old_path or change.path)
    if parent_package is not None and (
        head_package is None or parent_package.path == head_package.path
    ):
        found.append(parent_package)
    return found


def classify(facts: Facts) -> tuple[LanedPath, ...]:
    """Every changed path in exactly one lane, sorted by path."""
    laned = []
    for change in facts.diff.changes:
        packages = _packages_of(change, facts)
        lane = _lane_of(change, facts, packages)
        laned.append(LanedPath(change=change, lane=lane, package=packages[0] if packages else None))
    return tuple(laned)
