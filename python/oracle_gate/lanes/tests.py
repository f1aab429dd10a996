"""Test lanes: a test file is oracle as a whole module; agent-added tests are only reported."""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from dataclasses import dataclass

from oracle_gate import backend
from oracle_gate.classify.python import imports_in, same_code
from oracle_gate.errors import GateError
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.additions import (
    HARMLESS_FUTURES,
    FileView,
    rebound_names,
    why_not_fresh,
)
from oracle_gate.lanes.cases import grown_units
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.lanes.imports import (
    Reach,
    added_effects,
    already_imported,
    reach_of,
    suite_modules,
)
from oracle_gate.model import ChangeKind, Finding, Package, Verdict
from oracle_gate.repo.trees import GitTree
from oracle_gate.surface import parse_module

__all__ = ["judge_agent_test", "judge_test"]

# Canonical lines that only skip or expect failure (docs/surface.md): what a
# Freeze-Triage trailer may add to an existing test without an oracle note.
_SKIP_LINE = re.compile(
    r"^@ (\(call )?(pytest\.mark\.(skip|skipif|xfail)|unittest\.(skip|skipIf|skipUnless"
    r"|expectedFailure))( |\)|$)"
    r"|^\(expr \(call (pytest\.(skip|xfail)|self\.skipTest) "
    r"|^\(assert True\)$"
)


# The canonical unit of an added future import that changes nothing a test checks.
_FUTURE_NAME = "|".join(sorted(HARMLESS_FUTURES))
_FUTURE_UNIT = re.compile(rf"\(from __future__ (?:{_FUTURE_NAME})(?: (?:{_FUTURE_NAME}))*\)")


def _units(source: bytes | None, path: str) -> dict[str, str]:
    if source is None:
        return {}
    return dict(backend.extract_units(source, path))


def _only_skipped(before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` plus skip/xfail lines, and nothing else."""
    removed = Counter(before.splitlines()) - Counter(after.splitlines())
    added = Counter(after.splitlines()) - Counter(before.splitlines())
    return not removed and all(_SKIP_LINE.search(line) for line in added)


def _is_support(laned: LanedPath) -> bool:
    """Whether the path is test support (helpers, ``__init__.py``, data beside the tests)."""
    package = laned.package
    return package is not None and package.matrix.is_test_support(package.relative(laned.path))


def _judge_support(laned: LanedPath, facts: Facts) -> list[Finding]:
    """Test support that existed in the parent: any change but comments and layout moves it.

    Tests import it, so a changed helper changes what existing tests check.
    """
    before, after = facts.read_pair(laned.change)
    if laned.change.kind is ChangeKind.MODIFIED and (
        before == after or (laned.path.endswith(".py") and same_code(before, after))
    ):
        return [laned.finding(Verdict.PASS, "test support unchanged but for comments or layout")]
    if laned.change.kind is ChangeKind.MODIFIED and _same_surface(before, after, laned.path):
        reason = "test support's assertion surface unchanged (docstrings, annotations, names)"
        return [laned.finding(Verdict.PASS, reason)]
    verb = laned.change.kind.value
    return [oracle_move(laned, facts, f"test support {verb}: what existing tests rely on moved")]


def _same_surface(before: bytes | None, after: bytes | None, path: str) -> bool:
    """Whether a support module's units (what its lock records) are the parent's, with at
    most harmless ``__future__`` imports added (``from __future__ import annotations``)."""
    if not path.endswith(".py"):
        return False
    try:
        old, new = _units(before, path), _units(after, path)
    except GateError:
        return False  # a side Python refuses moved
    added = set(new) - set(old)
    return (
        bool(old)
        and all(new.get(key) == text for key, text in old.items())
        and all(_FUTURE_UNIT.fullmatch(new[key]) for key in added)
    )


def judge_test(laned: LanedPath, facts: Facts) -> list[Finding]:
    if _is_support(laned):
        return _judge_support(laned, facts)
    old_path = laned.change.old_path or laned.path
    before_source = facts.parent.read_optional(old_path)
    after_source = (
        None if laned.change.kind is ChangeKind.DELETED else facts.head.read_optional(laned.path)
    )
    before = _units(before_source, old_path)
    after = _units(after_source, laned.path)
    renamed = old_path != laned.path
    removed = sorted(before) if renamed else sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k] and not renamed)
    grown = grown_units(facts, laned.path, changed) if changed else set()
    extended = [k for k in changed if k in grown]
    changed = [k for k in changed if k not in grown]
    triaged = []
    if facts.notes.freeze_triage:
        triaged = [k for k in changed if _only_skipped(before[k], after[k])]
        changed = [k for k in changed if k not in triaged]
    added = sorted(set(after) - set(before))
    moved = []
    if removed:
        moved.append(f"removed or renamed {summarize(_qualified(old_path, removed))}")
    if changed:
        moved.append(f"changed {summarize(_qualified(laned.path, changed))}")
    # Notes of each moved unit explain the move, unless additions moved the file too.
    units = _qualified(old_path, removed) + _qualified(laned.path, changed)
    if before_source is not None and after_source is not None and not renamed:
        sources = _Sides(before_source, after_source, old_path, laned.path)
        risky = _risky_additions(facts, sources, added)
        moved += risky
        units = [] if risky else units
    findings: list[Finding] = []
    if moved:
        reason = "assertion surface moved: " + "; ".join(moved)
        findings.append(oracle_move(laned, facts, reason, units))
    if triaged:
        reviewers = ", ".join(facts.notes.freeze_triage)
        what = f"only skip/xfail added to {summarize(_qualified(laned.path, triaged))}"
        findings.append(
            laned.finding(
                Verdict.HUMAN_NOTED,
                f"{what}; triaged by {reviewers} (Freeze-Triage trailer)",
                facts.notes.freeze_triage,
            )
        )
    if not findings:
        findings.append(laned.finding(Verdict.PASS, _unchanged(laned.path, added, extended)))
    return findings


def _unchanged(path: str, added: list[str], extended: list[str]) -> str:
    """Why a test file whose existing assertions all stand passes."""
    parts = []
    if extended:
        parts.append(f"cases appended to {summarize(_qualified(path, extended))}")
    if added:
        parts.append(f"new units {summarize(_qualified(path, added))} are ignored as oracle")
    if not parts:
        return "assertion surface unchanged (format-only edit or moved statements)"
    kept = "every existing case kept" if extended else "assertion surface unchanged"
    return f"{kept}; " + "; ".join(parts)


def _qualified(path: str, keys: list[str]) -> list[str]:
    return [f"{path}::{key}" for key in keys]


@dataclass(frozen=True)
class _Sides:
    """Both sides of a changed test file: bytes and paths."""

    before: bytes
    after: bytes
    old_path: str
    path: str


def _risky_additions(facts: Facts, sides: _Sides, added: list[str]) -> list[str]:
    """What the added statements and the new statement order do to the existing tests."""
    parent = FileView(parse_module(sides.before, sides.old_path))
    module = parse_module(sides.after, sides.path)
    head = FileView(module)
    reasons = [why for key in added if (why := why_not_fresh(key, parent, head))]
    rebound = rebound_names(parent, head)
    if rebound:
        reasons.append(f"statements reordered so {summarize(rebound)} ends up bound differently")
    nodes = [head.statements[key] for key in added]
    reasons += _shared_state(facts, sides.path, module, nodes, calls=False)
    return sorted(set(reasons))


def _shared_state(
    facts: Facts,
    path: str,
    module: ast.Module,
    nodes: list[ast.stmt] | list[ast.Module],
    calls: bool,
) -> list[str]:
    """How ``nodes`` of the test module at ``path`` reach the repository's code that changes
    shared state (``lanes/imports.py``): new imports, and with ``calls`` import-time calls."""
    if not calls and next(imports_in(nodes, at_import=False), None) is None:
        return []  # nothing to follow: the trees need not be read
    reach = reach_of(facts.head, tuple(sorted(facts.head_graph.packages)))
    package = facts.head_graph.package_of(path) or facts.parent_graph.package_of(path)
    known = _known_modules(reach, facts.parent, package)
    found = added_effects(reach, path, module, nodes, known, calls)
    return [f"{why}: it runs before every test of the session" for why in found]


@functools.lru_cache(maxsize=8)
def _known_modules(reach: Reach, parent: GitTree, package: Package | None) -> frozenset[str]:
    """What the parent's tests and conftests of ``package`` already import."""
    directory, tests = (package.path, package.matrix.tests) if package else ("", ())
    sources = parent.read_many(suite_modules(parent.files(), directory, tests))
    return already_imported(reach, sources)


def judge_agent_test(laned: LanedPath, facts: Facts) -> list[Finding]:
    """Agent tests are run and reported, never judged as oracle; but a new test module
    that changes shared state through the repository's code before the tests run
    (importing a module that patches, calling a helper that does) moves every test."""
    if laned.path.endswith(".py") and laned.change.kind is not ChangeKind.DELETED:
        source = facts.head.read_optional(laned.path)
        try:
            module = parse_module(source, laned.path) if source is not None else None
        except GateError:
            module = None  # pytest cannot import it either: the agent test fails, alone
        effects = _shared_state(facts, laned.path, module, [module], calls=True) if module else []
        if effects:
            reason = f"test added by the patch changes shared state: {summarize(effects, '; ')}"
            return [oracle_move(laned, facts, reason)]
    return [
        laned.finding(
            Verdict.IGNORED_AS_ORACLE,
            "test added by the patch: run and reported, never the reason a patch passes",
        )
    ]
