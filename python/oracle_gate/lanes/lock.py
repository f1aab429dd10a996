"""Lock lane: edits to oracle_gate.lock, and whether each touched package's lock tells the truth.

A lock an older oracle-gate wrote (another surface or digest algorithm) is judged
through the parent this gate computes from the parent's git objects: the head must
match it but for what the patch changed, exactly as with a current lock, so an
upgrade of the gate rejects no honest change. A lock the patch writes must be this
gate's.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from oracle_gate.config.lockfile import (
    CURRENT,
    LOCK_FILE,
    Drift,
    DriftKind,
    Lock,
    compare_locks,
    parse_lock,
    stale_drifts,
)
from oracle_gate.errors import LockError
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.cases import grown_units
from oracle_gate.lanes.common import note_problem, noted, oracle_move, part_problem, summarize
from oracle_gate.locks import compute_lock
from oracle_gate.model import Finding, Lane, Package, Verdict
from oracle_gate.repo.trees import GitTree

__all__ = ["check_packages", "describe_drifts", "judge"]


def describe_drifts(drifts: list[Drift]) -> str:
    """A short sentence naming the first few drifted entries."""
    return summarize([f"{d.section} {d.key} {d.kind.value}" for d in drifts], "; ")


def _read_lock(tree: GitTree, path: str) -> Lock | None:
    text = tree.read_optional(path)
    return None if text is None else parse_lock(text, path)


def _relock(package: Package | None) -> str:
    return f"oracle-gate lock --write {package.path or '.' if package else '.'}"


def _parent_by_this_gate(facts: Facts, directory: str) -> Lock | None:
    """The lock this gate computes for the package at ``directory`` in the parent."""
    package = facts.parent_graph.packages.get(directory)
    return None if package is None else compute_lock(facts.parent, facts.parent_graph, package)


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    old_path = laned.change.old_path or laned.path
    before = _read_lock(facts.parent, old_path)
    after = _read_lock(facts.head, laned.path)
    if after is None:
        return [oracle_move(laned, facts, "lock deleted")]
    if not after.current:
        reason = (
            f"lock written by {after.writer()}, not by this oracle-gate ({CURRENT.describe()}): "
            f"it cannot be checked against the head tree; write it with '{_relock(laned.package)}'"
        )
        return [laned.finding(Verdict.REJECT, reason)]
    if before is None:
        return [laned.finding(Verdict.PASS, "lock introduced; checked against the head tree below")]
    if not before.current:
        # the parent's digests are another algorithm's: compare with this gate's own
        recomputed = _parent_by_this_gate(facts, posixpath.dirname(old_path))
        before = before if recomputed is None else recomputed
    moved = compare_locks(before, after)
    drifts = _not_grown(moved, posixpath.dirname(laned.path), facts)
    if not drifts:
        why = "only units that gained parametrize cases" if moved else "no entry"
        return [laned.finding(Verdict.PASS, f"lock reformatted; {why} moved")]
    reason = f"lock entries moved: {describe_drifts(drifts)}"
    if note_problem([laned.path, old_path], laned.package, facts) is None:
        return [oracle_move(laned, facts, reason)]  # a note names the lock itself
    return [_entries_noted(laned, facts, drifts)]


def _not_grown(drifts: list[Drift], directory: str, facts: Facts) -> list[Drift]:
    """The drifts but those of surface entries whose unit only gained parametrize cases
    (``cases.py``), judged on the test file's parent and head text."""
    # test file -> {unit: the entry's key}
    units: dict[str, dict[str, str]] = {}
    for drift in drifts:
        if drift.section == "surface" and drift.kind is DriftKind.CHANGED:
            test, _, unit = drift.key.partition("::")
            units.setdefault(posixpath.join(directory, test), {})[unit] = drift.key
    grown = {keys[unit] for path, keys in units.items() for unit in grown_units(facts, path, keys)}
    return [d for d in drifts if d.section != "surface" or d.key not in grown]


def _entries_noted(laned: LanedPath, facts: Facts, drifts: list[Drift]) -> Finding:
    """``human_noted`` when a note covers the path of every moved entry, else a reject.

    A fixture entry is keyed by its path and a surface entry by ``file::unit``
    (noted by the unit's note or its file's); both are relative to the lock's
    directory. This is what lets a human edit a
    fixture, note it, regenerate the lock and merge without noting the lock too.
    """
    directory = posixpath.dirname(laned.path)
    uncovered: list[Drift] = []
    problem = ""
    for drift in drifts:
        found = part_problem(posixpath.join(directory, drift.key), laned.package, facts)
        if found is not None:
            uncovered.append(drift)
            problem = problem or found
    if not uncovered:
        reason = f"lock entries moved: {describe_drifts(drifts)}; notes of their paths explain them"
        return noted(laned, facts, reason)
    return laned.finding(
        Verdict.REJECT, f"lock entries moved: {describe_drifts(uncovered)}{problem}"
    )


def _repo_uses_locks(tree: GitTree) -> bool:
    return any(path == LOCK_FILE or path.endswith("/" + LOCK_FILE) for path in tree.files())


def _check_one(package: Package, facts: Facts) -> list[Finding]:
    lock_path = package.join(LOCK_FILE)
    stored = _read_lock(facts.head, lock_path)
    if stored is None:
        if (
            facts.parent.blob_id(lock_path) is None
            and package.path in facts.parent_graph.packages
            and _repo_uses_locks(facts.parent)
        ):
            raise LockError(
                f"package '{package.path or '.'}' has no lock at parent {facts.diff.base[:12]} "
                "although the repository locks its packages; commit one with "
                f"'oracle-gate lock --write {package.path or '.'}' in a reviewed change first",
                lock_path,
            )
        return []
    if not stored.current:
        return _check_older(package, stored, facts)
    drifts = stale_drifts(stored, compute_lock(facts.head, facts.head_graph, package))
    if not drifts:
        return []
    reason = (
        f"lock does not match the head tree ({describe_drifts(drifts)}); "
        "it was not regenerated, or was edited by hand"
    )
    return [_lock_finding(package, Verdict.REJECT, reason)]


def _lock_finding(package: Package, verdict: Verdict, reason: str) -> Finding:
    path = package.join(LOCK_FILE)
    return Finding(verdict=verdict, lane=Lane.LOCK, path=path, reason=reason, package=package.path)


def _check_older(package: Package, stored: Lock, facts: Facts) -> list[Finding]:
    """A lock an older oracle-gate wrote, which the patch left as it was: the head must match
    the parent as this gate computes it, but for new test units; a note says to relock.

    A lock the patch changed is judged by ``judge`` (it must be this gate's).
    """
    lock_path = package.join(LOCK_FILE)
    if facts.parent.blob_id(lock_path) != facts.head.blob_id(lock_path):
        return []
    reference = _parent_by_this_gate(facts, package.path)
    if reference is None:
        return []
    drifts = stale_drifts(reference, compute_lock(facts.head, facts.head_graph, package))
    if drifts:
        reason = (
            f"locked entries moved since the parent ({describe_drifts(drifts)}, as this "
            f"oracle-gate computes both), and the lock (written by {stored.writer()}) was not "
            f"regenerated; a human notes the change and runs '{_relock(package)}'"
        )
        return [_lock_finding(package, Verdict.REJECT, reason)]
    reason = (
        f"lock written by {stored.writer()}; this oracle-gate ({CURRENT.describe()}) compared "
        f"the head with the parent it computes itself; relock with '{_relock(package)}' at "
        "your convenience"
    )
    return [_lock_finding(package, Verdict.PASS, reason)]


def check_packages(packages: Iterable[Package], facts: Facts) -> list[Finding]:
    """For each touched package: its head lock must describe the head tree.

    Raises:
        LockError: a lock is malformed, or a package lost its lock in a locked repo.
    """
    findings: list[Finding] = []
    for package in packages:
        findings.extend(_check_one(package, facts))
    return findings
