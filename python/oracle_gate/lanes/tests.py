"""Test lanes: the assertion surface of existing tests, weakening markers, agent-added tests."""

from __future__ import annotations

import functools
import io
import re
import tokenize
from collections import Counter

from oracle_gate import backend
from oracle_gate.classify.python import same_code
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.model import ChangeKind, Finding, Verdict

__all__ = ["judge_agent_test", "judge_test", "weakening_added"]

# What agents add to quiet a suite. Matched on code with comments and strings removed.
_WEAKENERS = {
    "skip/xfail": re.compile(
        r"\b(skip|skipif|skipIf|skipUnless|skipTest|xfail|importorskip|expectedFailure)\b"
    ),
    "assert True": re.compile(r"\bassert\s+True\b|\bassertTrue\s*\(\s*True\s*\)"),
    "time.sleep(": re.compile(r"\bsleep\s*\("),
}


def _code_only(source: bytes) -> str:
    """The source's tokens with comments and string literals dropped, space-joined."""
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return source.decode("utf-8", "replace")
    dropped = {tokenize.COMMENT, tokenize.STRING, tokenize.ENCODING}
    dropped |= {getattr(tokenize, name) for name in ("FSTRING_MIDDLE",) if hasattr(tokenize, name)}
    return " ".join(token.string for token in tokens if token.type not in dropped)


def weakening_added(before: bytes, after: bytes) -> list[str]:
    """The weakening markers that ``after`` has more of than ``before``."""
    old, new = _code_only(before), _code_only(after)
    return [
        name
        for name, pattern in _WEAKENERS.items()
        if len(pattern.findall(new)) > len(pattern.findall(old))
    ]


@functools.cache
def _weakening_lines() -> frozenset[str]:
    """Canonical surface lines that only add a skip or an ``assert True``.

    Derived from the extractor itself so this lane never depends on the
    canonical text's spelling.
    """
    probe = (
        b"import pytest\n@pytest.mark.skip\n@pytest.mark.xfail\ndef test_p():\n    assert True\n"
    )
    bare = b"import pytest\ndef test_p():\n    pass\n"
    with_markers = dict(backend.extract_units(probe, "<probe>"))["test_p"].splitlines()
    plain = set(dict(backend.extract_units(bare, "<probe>"))["test_p"].splitlines())
    return frozenset(line for line in with_markers if line not in plain)


def _units(source: bytes | None, path: str) -> dict[str, str]:
    """Units keyed by node id (``path::Class::test``), so renaming a test file moves them all."""
    if source is None:
        return {}
    return {f"{path}::{key}": text for key, text in backend.extract_units(source, path)}


def _only_weakened(before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` plus skip/``assert True`` lines, and nothing else."""
    removed = Counter(before.splitlines()) - Counter(after.splitlines())
    added = Counter(after.splitlines()) - Counter(before.splitlines())
    markers = _weakening_lines()
    return not removed and all(
        line in markers or _WEAKENERS["skip/xfail"].search(line) for line in added
    )


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
    verb = laned.change.kind.value
    return [oracle_move(laned, facts, f"test support {verb}: what existing tests rely on moved")]


def judge_test(laned: LanedPath, facts: Facts) -> list[Finding]:
    if _is_support(laned):
        return _judge_support(laned, facts)
    old_path = laned.change.old_path or laned.path
    # Each side read once, for both the surface and the weakening markers.
    before_source = facts.parent.read_optional(old_path)
    after_source = (
        None if laned.change.kind is ChangeKind.DELETED else facts.head.read_optional(laned.path)
    )
    before = _units(before_source, old_path)
    after = _units(after_source, laned.path)
    removed = sorted(set(before) - set(after))
    changed = sorted(key for key in set(before) & set(after) if before[key] != after[key])
    triage = facts.notes.freeze_triage
    if triage:
        changed = [key for key in changed if not _only_weakened(before[key], after[key])]
    findings: list[Finding] = []
    moved = []
    if removed:
        moved.append(f"removed or renamed {summarize(removed)}")
    if changed:
        moved.append(f"assertions or signature changed in {summarize(changed)}")
    if moved:
        findings.append(oracle_move(laned, facts, "assertion surface moved: " + "; ".join(moved)))
    findings.extend(_judge_weakening(laned, facts, before_source, after_source))
    if not findings:
        added = sorted(set(after) - set(before))
        reason = (
            f"assertion surface unchanged; new units {summarize(added)} are ignored as oracle"
            if added
            else "assertion surface unchanged (format-only or non-assertion edit)"
        )
        findings.append(laned.finding(Verdict.PASS, reason))
    return findings


def _judge_weakening(
    laned: LanedPath, facts: Facts, before: bytes | None, after: bytes | None
) -> list[Finding]:
    if after is None:
        return []
    added = weakening_added(before or b"", after)
    if not added:
        return []
    what = f"added {', '.join(added)} to an existing test"
    if facts.notes.freeze_triage:
        reviewers = ", ".join(facts.notes.freeze_triage)
        return [
            laned.finding(
                Verdict.HUMAN_NOTED,
                f"{what}; triaged by {reviewers} (Freeze-Triage trailer)",
                facts.notes.freeze_triage,
            )
        ]
    return [
        laned.finding(Verdict.REJECT, f"{what} with no Freeze-Triage: trailer naming a reviewer")
    ]


def judge_agent_test(laned: LanedPath, facts: Facts) -> list[Finding]:
    del facts  # agent tests are run and reported, never judged as oracle
    return [
        laned.finding(
            Verdict.IGNORED_AS_ORACLE,
            "test added by the patch: run and reported, never the reason a patch passes",
        )
    ]
