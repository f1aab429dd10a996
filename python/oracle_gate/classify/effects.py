"""Configuration, CI and packaging files judged by their effect on the gate, not by their names.

A file is harness only where it can change how the gate collects, runs or judges
tests. ``effect_of`` says, for the files whose name alone cannot tell, whether
the change can; ``None`` for the files it does not judge (the classifier's
other rules then apply). What pytest reads itself (``pytest.ini``, conftests,
hook modules) stays harness by name (``harness.harness_by_name``).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable

from oracle_gate.bazel.labels import WORKSPACE_MARKERS
from oracle_gate.classify.ci import ci_effect, gate_input_of, is_ci_file
from oracle_gate.classify.harness import PYTEST_CONFIGS, same_meaning
from oracle_gate.classify.sections import (
    Effect,
    coverage_effect,
    ini_effect,
    pyproject_effect,
    pytest_section_text,
)
from oracle_gate.classify.setup_py import setup_py_effect
from oracle_gate.facts import Facts
from oracle_gate.globs import matches_any
from oracle_gate.model import CONFTEST, Change
from oracle_gate.repo.trees import GitTree

__all__ = ["coverage_runs", "effect_of", "gate_reader", "is_dependency_list"]

# Python dependency lists and interpreter pins: what CI installs, never the gate.
_DEPENDENCY_LIST = re.compile(
    r"(^|/)[^/]*(requirements|constraints)[^/]*\.(txt|in)$|(^|/)requirements/[^/]*\.(txt|in)$"
    r"|(^|/)pylock(\.[^/]*)?\.toml$"
    r"|(^|/)(Pipfile|Pipfile\.lock|poetry\.lock|uv\.lock|pdm\.lock|environment\.ya?ml"
    r"|\.python-version|tox\.toml)$"
)
# What in a pytest section or a conftest turns coverage on inside the tests' pytest.
_COVERAGE_WORDS = ("--cov", "pytest_cov", "pytest-cov")
_CONFTEST_COVERAGE = (b"coverage", b"pytest_cov", b"--cov")


def is_dependency_list(path: str) -> bool:
    """Whether ``path`` is a Python dependency list or interpreter pin (requirements*.txt,
    a lock file, ``.python-version``, ``tox.toml``)."""
    return _DEPENDENCY_LIST.search(path) is not None


@functools.lru_cache(maxsize=8)
def _coverage_in(tree: GitTree) -> bool:
    """Whether any pytest configuration or conftest.py of ``tree`` turns coverage on."""
    names = {*PYTEST_CONFIGS, CONFTEST}
    paths = sorted(path for path in tree.paths() if posixpath.basename(path) in names)
    for path, text in tree.read_many(paths).items():
        name = posixpath.basename(path)
        if name == CONFTEST:
            if any(word in text for word in _CONFTEST_COVERAGE):
                return True
            continue
        section = pytest_section_text(text, name)
        if section is not None and any(word in section for word in _COVERAGE_WORDS):
            return True
    return False


def coverage_runs(parent: GitTree, head: GitTree) -> bool:
    """Whether coverage may run inside the tests' pytest, in the parent or the head:
    a pytest section asks for it (``--cov``, ``pytest-cov``) or a conftest mentions it.

    The gate itself never reads coverage settings; only the repository's own use
    of coverage inside pytest can make them count.
    """
    return _coverage_in(parent) or _coverage_in(head)


def _is_bazel_workspace(parent: GitTree, head: GitTree) -> bool:
    return any(
        tree.blob_id(marker) is not None for tree in (parent, head) for marker in WORKSPACE_MARKERS
    )


def _dependency_effect(parent: GitTree, head: GitTree) -> Effect:
    if _is_bazel_workspace(parent, head):
        return Effect(True, "a dependency list in a Bazel workspace, where rules may install it")
    return Effect(False, "a dependency list no job that runs oracle-gate installs")


def _build_helpers(setup_py: str, tooling: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a module ``setup_py`` imports is a build helper: tooling by the root settings."""
    where = posixpath.dirname(setup_py)

    def is_helper(module: str) -> bool:
        stem = posixpath.join(where, *module.split("."))
        return matches_any(f"{stem}.py", tooling) or matches_any(f"{stem}/__init__.py", tooling)

    return is_helper


def _by_name(
    path: str, parent: GitTree, head: GitTree, tooling: tuple[str, ...]
) -> Callable[[bytes | None, bytes | None], Effect] | None:
    """The rule that judges ``path``, chosen by its name."""
    name = posixpath.basename(path)
    runs = functools.partial(coverage_runs, parent, head)
    if is_ci_file(path):
        return functools.partial(ci_effect, path, parent=parent, head=head)
    if name == "pyproject.toml":
        return functools.partial(pyproject_effect, coverage_runs=runs)
    if name in ("setup.cfg", "tox.ini"):
        return functools.partial(ini_effect, name, coverage_runs=runs)
    if name == ".coveragerc":
        return functools.partial(coverage_effect, coverage_runs=runs)
    if name == "setup.py":
        return functools.partial(setup_py_effect, is_helper=_build_helpers(path, tooling))
    if is_dependency_list(path):
        return lambda before, after: _dependency_effect(parent, head)
    return None


def gate_reader(change: Change, facts: Facts) -> str | None:
    """The CI file whose job running oracle-gate reads the changed file, if one does."""
    return gate_input_of(change.path, facts.parent, facts.head)


def effect_of(change: Change, facts: Facts) -> Effect | None:
    """What the change can do to the gate; None when this module does not judge such a
    file (nothing is read then).

    Such a file that the job running oracle-gate reads (a requirements file it
    installs, a script or composite action it runs) is harness whatever its kind,
    unless only its comments or layout changed.
    """
    path = change.path
    rule = _by_name(path, facts.parent, facts.head, facts.settings.tooling)
    if rule is None:
        return None
    before, after = facts.read_pair(change)
    reader = gate_reader(change, facts)
    if reader is not None:
        if same_meaning(path, before, after):
            return Effect(False, f"read by the job that runs oracle-gate ({reader}), unchanged")
        return Effect(True, f"read by the CI job that runs oracle-gate ({reader})")
    return rule(before, after)
