"""Which lane each changed path belongs to (SPEC §4): exactly one per path, failing closed.

Inside a package a path is production unless it is proven to be something
else; outside every package a path that is not documentation is production (and
so unmeasured) unless the root settings list it in ``outside``. The rules,
in the order they apply, are written out in docs/classification.md.
"""

from __future__ import annotations

import functools
import posixpath

from oracle_gate.bazel.labels import BUILD_NAMES
from oracle_gate.classify.effects import effect_of, gate_reader
from oracle_gate.classify.harness import bazelrc_imports, harness_by_name
from oracle_gate.classify.python import hook_names, import_time_effects
from oracle_gate.classify.tooling import names_module
from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.lockfile import LOCK_FILE
from oracle_gate.config.matrix import MATRIX_FILE
from oracle_gate.config.notes import CHANGELOG_FILE
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.globs import matches_any
from oracle_gate.model import Change, ChangeKind, Lane, Package

__all__ = ["classify", "is_code", "is_docs", "lane_in"]

_LEDGER_FILES = frozenset({SEEDS_FILE, FREEZE_FILE, ASSUMPTIONS_FILE, CHANGELOG_FILE})
# Files that neither run nor judge anything, wherever they are: git's and editors'
# settings, linters' and type checkers' configuration (pyproject.toml's sections
# for them are inert too: ``sections.PACKAGING_TOOLS``), what only packaging and
# hosting services read.
_OTHER_NAMES = frozenset(
    {
        ".gitignore",
        ".editorconfig",
        ".mailmap",
        ".dockerignore",
        ".git-blame-ignore-revs",
        "MANIFEST.in",
        ".readthedocs.yaml",
        ".readthedocs.yml",
        "codecov.yml",
        ".codecov.yml",
        ".bumpversion.cfg",
        "CITATION.cff",
        ".pre-commit-hooks.yaml",
        "mypy.ini",
        ".mypy.ini",
        "ruff.toml",
        ".ruff.toml",
        ".flake8",
        ".pylintrc",
        "pylintrc",
        ".isort.cfg",
        "pyrightconfig.json",
        ".codespellrc",
        ".yamllint",
        ".pre-commit-config.yaml",
    }
)
# The hosting platform's own settings (issue templates, dependabot, funding); its
# workflows and actions are CI (``ci.is_ci_file``) and CODEOWNERS is harness.
_PLATFORM_DIR = ".github/"
# Type stubs: read by type checkers, never imported when code runs.
_STUB_SUFFIX = ".pyi"
# Files Python or pytest can load as code: never documentation, whatever a docs glob says.
_PYTHON_SUFFIXES = (".py", ".pyw", ".pyi", ".pyx", ".pxd")
# Code the gate cannot read as source and Python still runs: bytecode (a sourceless
# ``.pyc`` imports as a module; an unchecked hash-based one in ``__pycache__`` replaces
# its source), extension modules, and archives a sys.path entry can name.
_COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".zip", ".egg", ".whl", ".pyz")
_BYTECODE_DIR = "__pycache__"
# When the parent's and the head's matrices put a path in different lanes, the
# first lane here wins, so changing a glob can never move a path to a laxer lane.
_PRECEDENCE = (
    Lane.PROPERTY,
    Lane.FIXTURE,
    Lane.TEST,
    Lane.HARNESS,
    Lane.AGENT_TEST,
    Lane.PRODUCTION,
    Lane.DOCS,
    Lane.OTHER,
)


def is_compiled(path: str) -> bool:
    """Whether ``path`` is code Python loads that the gate cannot read as source: bytecode,
    an extension module, an importable archive, or anything in a ``__pycache__``."""
    return path.endswith(_COMPILED_SUFFIXES) or _BYTECODE_DIR in path.split("/")[:-1]


def is_code(path: str) -> bool:
    """Whether Python or pytest can load ``path`` as code (source, stub, bytecode,
    extension module, importable archive)."""
    return path.endswith(_PYTHON_SUFFIXES) or is_compiled(path)


def is_docs(path: str, globs: tuple[str, ...]) -> bool:
    """Whether ``path`` (package- or repo-relative) is documentation under ``globs``."""
    return not is_code(path) and matches_any(path, globs)


def _is_inert(path: str) -> bool:
    """Whether ``path`` is a file that neither runs nor judges anything (``_OTHER_NAMES``,
    the platform's settings under ``.github/``, a type stub)."""
    if is_compiled(path):
        return False
    platform = path.startswith(_PLATFORM_DIR) or f"/{_PLATFORM_DIR}" in path
    return posixpath.basename(path) in _OTHER_NAMES or platform or path.endswith(_STUB_SUFFIX)


def lane_in(relative: str, package: Package, is_new: bool, docs: tuple[str, ...]) -> Lane:
    """The lane one package's matrix alone gives a package-relative path.

    First match wins: oracle module, fixture, inert file, test, docs, test support,
    production.
    """
    matrix = package.matrix
    if relative in matrix.oracle_modules:
        return Lane.PROPERTY
    if matrix.is_fixture(relative):
        return Lane.FIXTURE
    if _is_inert(relative):
        return Lane.OTHER
    if matches_any(relative, matrix.tests) or (
        not is_docs(relative, docs) and matrix.is_test_support(relative)
    ):
        return Lane.AGENT_TEST if is_new else Lane.TEST
    if is_docs(relative, docs):
        return Lane.DOCS
    return Lane.PRODUCTION


def _looks_like_test(path: str) -> bool:
    """Whether pytest collects ``path`` by default (``test_*.py``, ``*_test.py``)."""
    name = posixpath.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


class _Classifier:
    """Lanes for one diff; what is read from whole trees is read once, on first need."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    @functools.cached_property
    def bazelrc_files(self) -> frozenset[str]:
        """Every ``.bazelrc`` and every file one imports, in either tree."""
        return bazelrc_imports(self.facts.parent) | bazelrc_imports(self.facts.head)

    def laned(self, change: Change) -> list[LanedPath]:
        """The change in its lane; a rename whose two ends differ is judged at both ends.

        The old end counts as a deletion in its own lane and package, the new end
        as an addition in its own: ``test_merge.py -> test_merge.md`` deletes tests.
        """
        whole = self._one(change)
        if change.kind is not ChangeKind.RENAMED or change.old_path is None:
            return [whole]
        old = self._one(Change(change.old_path, ChangeKind.DELETED))
        if old.lane is whole.lane and (
            _same_package(old.package, whole.package) or old.lane is Lane.PRODUCTION
        ):
            # Production moved between packages stays one rename: selection runs the
            # rows of the package it left (``select``'s "moved out of this package").
            return [whole]
        return [old, self._one(Change(change.path, ChangeKind.ADDED))]

    def _one(self, change: Change) -> LanedPath:
        owner, parent = self._packages_of(change)
        return LanedPath(change=change, lane=self._lane_of(change, owner, parent), package=owner)

    def _packages_of(self, change: Change) -> tuple[Package | None, Package | None]:
        """(owner, the same package in the parent): the head's owner, else the parent's.

        A deleted path belongs to its parent package: the head may have moved the
        package's boundary, and the loss is that package's.
        """
        facts = self.facts
        head = facts.head_graph.package_of(change.path)
        parent = facts.parent_graph.package_of(change.old_path or change.path)
        if head is None or (change.kind is ChangeKind.DELETED and parent is not None):
            return parent, parent
        return head, parent if parent is not None and parent.path == head.path else None

    def _lane_of(self, change: Change, owner: Package | None, parent: Package | None) -> Lane:
        path = change.path
        name = posixpath.basename(path)
        fixed = self._oracle_file_lane(change, name, owner)
        if fixed is not None:
            return fixed
        effect = effect_of(change, self.facts)
        if (effect is not None and effect.harness) or (
            effect is None and (harness_by_name(path) or path in self.bazelrc_files)
        ):
            return Lane.HARNESS
        if owner is not None:
            lane = self._package_lane(change, owner, parent)
        else:
            lane = self._outside_lane(change)
        if effect is not None:
            # packaging only; yet a file the matrix makes an oracle stays one
            return lane if lane in _DECLARED_ORACLES else Lane.OTHER
        if is_compiled(path):
            return _compiled_lane(lane)
        if path.endswith(".py"):
            lane = self._python_lane(change, lane)
        if lane is Lane.PRODUCTION and self._is_tooling(change, owner):
            lane = Lane.OTHER
        unguarded = lane is Lane.OTHER or (lane is Lane.PRODUCTION and owner is None)
        if unguarded and gate_reader(change, self.facts) is not None:
            return Lane.HARNESS  # a script, action or setting the gate's own CI job reads
        return lane

    def _is_tooling(self, change: Change, owner: Package | None) -> bool:
        """Whether the parent's ``tooling`` globs take the path out of production: a Python
        module only while no other Python file of its package names it."""
        path = change.path
        tooling = self.facts.settings.tooling
        if not matches_any(path, tooling):
            return False
        if not path.endswith(_PYTHON_SUFFIXES):
            return True
        facts = self.facts
        prefix = owner.join("") if owner is not None and owner.path else ""
        trees = (facts.parent, facts.head)
        return not any(names_module(tree, prefix, path, tooling) for tree in trees)

    def _oracle_file_lane(self, change: Change, name: str, owner: Package | None) -> Lane | None:
        """The lane of the gate's own files, known by name (a lock or ledger only at its
        package's root, the one place the gate reads it)."""
        at_root = owner is not None and posixpath.dirname(change.path) == owner.path
        if name == LOCK_FILE and at_root:
            return Lane.LOCK
        if name in _LEDGER_FILES and at_root:
            return Lane.LEDGER
        if name == MATRIX_FILE:
            return Lane.MATRIX
        if name in BUILD_NAMES and self._declares_gate(change):
            return Lane.MATRIX
        return None

    def _declares_gate(self, change: Change) -> bool:
        """Whether this BUILD file declares a package's matrix on either side.

        The parent side counts too: removing the gate call is the matrix shrinking.
        """
        facts = self.facts
        return (
            facts.head_graph.matrix_declared_by(change.path) is not None
            or facts.parent_graph.matrix_declared_by(change.old_path or change.path) is not None
        )

    def _lane_in(self, change: Change, package: Package) -> Lane:
        """The lane one matrix gives the path (the parent's or the head's)."""
        is_new = change.kind is ChangeKind.ADDED
        return lane_in(package.relative(change.path), package, is_new, self.facts.settings.docs)

    def _package_lane(self, change: Change, owner: Package, parent: Package | None) -> Lane:
        """The lane inside a package, judged by the parent's and the head's matrices.

        A path that existed as production in the parent stays production whatever
        the head's globs say (the matrix lane reports the widening as a narrowing).
        """
        lanes = {self._lane_in(change, owner)}
        if parent is not None and parent is not owner:
            parent_lane = self._lane_in(change, parent)
            if parent_lane is Lane.PRODUCTION and change.kind is not ChangeKind.ADDED:
                return Lane.PRODUCTION
            lanes.add(parent_lane)
        return min(lanes, key=_PRECEDENCE.index)

    def _outside_lane(self, change: Change) -> Lane:
        """Outside every package: docs, inert files and ``outside`` globs pass; the rest is
        production, and no row guards it."""
        path = change.path
        settings = self.facts.settings
        if is_docs(path, settings.docs):
            return Lane.DOCS
        if _is_inert(path) or matches_any(path, settings.outside):
            return Lane.OTHER
        if _looks_like_test(path):
            return Lane.TEST if change.kind is not ChangeKind.ADDED else Lane.AGENT_TEST
        return Lane.PRODUCTION

    def _python_lane(self, change: Change, lane: Lane) -> Lane:
        """Harness by meaning: a module that binds pytest hooks, or a new test or support
        module (or any new module pytest collects) that changes shared state on import.

        An existing test file may keep hooks pytest honours in test modules
        (``pytest_generate_tests``); only a change to which hooks it binds moves it.
        """
        before, after = self.facts.read_pair(change)
        hooks_before = hook_names(before) if before is not None else frozenset()
        hooks_after = hook_names(after) if after is not None else frozenset()
        if lane is Lane.TEST:
            return Lane.HARNESS if hooks_before != hooks_after else lane
        if hooks_before or hooks_after:
            return Lane.HARNESS
        collected = change.kind is ChangeKind.ADDED and _looks_like_test(change.path)
        if (lane is Lane.AGENT_TEST or collected) and after and import_time_effects(after):
            return Lane.HARNESS
        return lane


# Lanes a matrix declares explicitly, which a packaging-only verdict does not override.
_DECLARED_ORACLES = frozenset({Lane.PROPERTY, Lane.FIXTURE, Lane.TEST, Lane.AGENT_TEST})


def _compiled_lane(lane: Lane) -> Lane:
    """Compiled code is production or harness wherever it lives: harness on the tests' side
    (pytest or a test imports it), production anywhere else, never documentation."""
    if lane in (Lane.TEST, Lane.AGENT_TEST):
        return Lane.HARNESS
    if lane in (Lane.DOCS, Lane.OTHER):
        return Lane.PRODUCTION
    return lane


def _same_package(a: Package | None, b: Package | None) -> bool:
    return (a.path if a else None) == (b.path if b else None)


def classify(facts: Facts) -> tuple[LanedPath, ...]:
    """Every changed path in exactly one lane, sorted by path (a rename may give two)."""
    classifier = _Classifier(facts)
    laned = [lp for change in facts.diff.changes for lp in classifier.laned(change)]
    return tuple(sorted(laned, key=lambda lp: lp.path))
