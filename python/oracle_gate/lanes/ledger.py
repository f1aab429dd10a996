"""Ledger lane: seeds are append-only, thawing is a human act, silence is not assent."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import Any

from oracle_gate import backend
from oracle_gate.config.ledgers import (
    ASSUMPTIONS_FILE,
    FREEZE_FILE,
    SEEDS_FILE,
    FreezeEntry,
    FreezeLedger,
    budget_problem,
    check_seed_refs,
    expiry_problem,
    parse_assumptions,
    parse_freeze,
    parse_seeds,
    read_ledger,
)
from oracle_gate.config.notes import CHANGELOG_FILE, changelog_entries
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.model import ChangeKind, Finding, Lane, Package, Verdict
from oracle_gate.repo.trees import GitTree

__all__ = ["check_packages", "judge"]

_PARAMETRIZE_SUFFIX = re.compile(r"\[.*\]$")


def _is_retirement(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Only ``status`` moved to ``retired`` and ``retired_by`` was added."""
    if after.get("status") != "retired" or not after.get("retired_by"):
        return False
    strip = {"status", "retired_by"}
    return {k: v for k, v in before.items() if k not in strip} == {
        k: v for k, v in after.items() if k not in strip
    }


def _seed_changes(before: bytes, after: bytes, path: str) -> list[str]:
    old = parse_seeds(before, path)
    new = parse_seeds(after, path)
    problems = []
    remaining = [s.data for s in new]
    for index, seed in enumerate(old):
        if index < len(new) and (
            new[index].data == seed.data or _is_retirement(seed.data, new[index].data)
        ):
            continue
        if seed.data in remaining:
            problems.append(f"line {seed.line} moved (lines are only ever appended)")
        elif any(_same_case(seed.data, other) for other in remaining):
            problems.append(f"line {seed.line} rewritten")
        else:
            problems.append(f"line {seed.line} deleted")
    return problems


def _same_case(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether two seeds are about the same (row, property, input)."""
    return all(before.get(key) == after.get(key) for key in ("row", "prop", "input"))


def _freeze_changes(before: bytes, after: bytes, path: str) -> list[str]:
    old = parse_freeze(before, path)
    head = parse_freeze(after, path)
    new = {entry.key: entry for entry in head.entries}
    problems = []
    for entry in old.entries:
        if entry.key not in new:
            problems.append(f"entry {entry.key} removed or renamed (thaw is a human action)")
        elif new[entry.key].expires != entry.expires:
            problems.append(f"expiry of {entry.key} edited")
        elif new[entry.key].data != entry.data:
            problems.append(f"entry {entry.key} edited")
    if head.budget != old.budget:
        problems.append(f"budget changed from {old.budget} to {head.budget}")
    return problems


def _assumption_changes(before: bytes, after: bytes, path: str) -> list[str]:
    new = {item.id: item for item in parse_assumptions(after, path)}
    problems = []
    for item in parse_assumptions(before, path):
        if item.id not in new:
            problems.append(f"assumption {item.id} removed")
        elif new[item.id].data != item.data:
            problems.append(f"assumption {item.id} edited")
    return problems


def _changelog_changes(before: bytes, after: bytes, path: str) -> list[str]:
    """Appending is the only edit: the parent's text must still open the head's."""
    del path
    if after.startswith(before.rstrip()):
        return []
    kept = set(changelog_entries(after))
    edited = [
        f"entry '{entry.splitlines()[0][:60]}' edited or deleted"
        for entry in changelog_entries(before)
        if entry not in kept
    ]
    return edited or ["text inserted before the last entry"]


_COMPARERS = {
    CHANGELOG_FILE: (_changelog_changes, "notes are only ever appended"),
    SEEDS_FILE: (_seed_changes, "memory wipe"),
    FREEZE_FILE: (_freeze_changes, "the freeze ledger is human-owned"),
    ASSUMPTIONS_FILE: (_assumption_changes, "the assumption register is human-owned"),
}


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    name = posixpath.basename(laned.path)
    compare, why = _COMPARERS[name]
    if laned.change.kind is ChangeKind.DELETED:
        return [oracle_move(laned, facts, f"{name} deleted: {why}")]
    before = read_ledger(facts.parent, laned.change.old_path or laned.path) or b""
    after = read_ledger(facts.head, laned.path) or b""
    problems = compare(before, after, laned.path)
    if problems:
        return [oracle_move(laned, facts, f"{'; '.join(problems)}: {why}")]
    if name == FREEZE_FILE:
        added = _freeze_additions(before, after, laned.path)
        if added:
            return [_judge_freeze_additions(laned, facts, added)]
    return [laned.finding(Verdict.PASS, f"{name}: only appended entries or retirements")]


def _freeze_additions(before: bytes, after: bytes, path: str) -> list[FreezeEntry]:
    old = {entry.key for entry in parse_freeze(before, path).entries}
    return [entry for entry in parse_freeze(after, path).entries if entry.key not in old]


def _judge_freeze_additions(laned: LanedPath, facts: Facts, added: list[FreezeEntry]) -> Finding:
    """A freeze silences a test or a partition row: a human triages it.

    A ``Freeze-Triage:`` trailer or a human note lets it pass as ``human_noted``.
    A freeze whose ``replacement_row`` this same patch adds is rejected whatever
    the notes say: the row meant to take over is not yet trusted, so the flaky
    row's replacement must land, reviewed, before the freeze that leans on it.
    """
    package = laned.package
    parent = facts.parent_graph.packages.get(package.path) if package else None
    trusted = {row.id for row in parent.matrix.rows} if parent else set()
    keys = summarize([entry.key for entry in added])
    laundered = [
        f"{entry.key} (replacement_row {entry.data['replacement_row']})"
        for entry in added
        if entry.data.get("replacement_row") and entry.data["replacement_row"] not in trusted
    ]
    if laundered:
        return laned.finding(
            Verdict.REJECT,
            f"freeze added with a replacement row this patch adds: {summarize(laundered)}; "
            "land the replacement row first, in its own reviewed change",
        )
    if facts.notes.freeze_triage:
        reviewers = ", ".join(facts.notes.freeze_triage)
        return laned.finding(
            Verdict.HUMAN_NOTED,
            f"freeze entries added ({keys}); triaged by {reviewers} (Freeze-Triage trailer)",
            facts.notes.freeze_triage,
        )
    return oracle_move(
        laned, facts, f"freeze entries added ({keys}) with no Freeze-Triage: trailer"
    )


def _node_exists(head: GitTree, package: Package, nodeid: str) -> bool:
    file, _, unit = _PARAMETRIZE_SUFFIX.sub("", nodeid).partition("::")
    path = package.join(file)
    if head.blob_id(path) is None:
        return False
    return not unit or unit in dict(backend.extract_units(head.read(path), path))


def _freeze_findings(ledger: FreezeLedger, package: Package, facts: Facts) -> list[Finding]:
    path = package.join(FREEZE_FILE)
    problems: list[tuple[int, str]] = []
    for entry in ledger.entries:
        where = f"{path}:{entry.line}: {entry.key}"
        expiry = expiry_problem(entry, facts.today)
        if expiry:
            problems.append((entry.line, f"{where} {expiry}"))
        if entry.nodeid and not _node_exists(facts.head, package, entry.nodeid):
            problems.append((entry.line, f"{where} names a test that no longer exists"))
    over = budget_problem(ledger)
    if over:
        problems.append((ledger.budget_line, over))
    return [_ledger_reject(path, package, problem, line) for line, problem in problems]


def _ledger_reject(path: str, package: Package, reason: str, line: int) -> Finding:
    return Finding(
        verdict=Verdict.REJECT,
        lane=Lane.LEDGER,
        path=path,
        reason=reason,
        package=package.path,
        line=line,
    )


def check_packages(packages: Iterable[Package], facts: Facts) -> list[Finding]:
    """The head ledgers of each selected package: freezes valid, no assumption left proposed.

    Raises:
        LedgerError: a ledger file is malformed.
    """
    findings: list[Finding] = []
    for package in packages:
        freeze_text = read_ledger(facts.head, package.join(FREEZE_FILE))
        if freeze_text is not None:
            ledger = parse_freeze(freeze_text, package.join(FREEZE_FILE))
            findings.extend(_freeze_findings(ledger, package, facts))
        seeds_path = package.join(SEEDS_FILE)
        seeds_text = read_ledger(facts.head, seeds_path)
        if seeds_text is not None:  # malformed seeds are a gate error
            parent = facts.parent_graph.packages.get(package.path)
            matrices = [package.matrix, *([parent.matrix] if parent else [])]
            check_seed_refs(parse_seeds(seeds_text, seeds_path), matrices, seeds_path)
        assumptions_path = package.join(ASSUMPTIONS_FILE)
        assumptions_text = read_ledger(facts.head, assumptions_path)
        if assumptions_text is None:
            continue
        for item in parse_assumptions(assumptions_text, assumptions_path):
            if item.status == "proposed":
                findings.append(
                    _ledger_reject(
                        assumptions_path,
                        package,
                        f"{assumptions_path}:{item.line}: assumption {item.id} is still "
                        "proposed; silence is not assent",
                        item.line,
                    )
                )
    return findings
