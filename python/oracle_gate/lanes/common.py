"""What every oracle lane shares: the human-note rule, and one-line summaries of many items."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from oracle_gate.config.notes import normalize_principal
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.model import Finding, Package, Verdict

__all__ = ["note_problem", "noted", "oracle_move", "part_problem", "summarize"]

_SHOWN = 3
_UNSATISFIED = {
    "signed": "note not signed by an owner of",
    "approvals": "note not approved by an owner of",
}


def _where(path: str, package: Package | None) -> str:
    return package.path if package and package.path else path


def note_problem(paths: Iterable[str], package: Package | None, facts: Facts) -> str | None:
    """None when a note that counts under the parent's policy names one of ``paths``.

    Otherwise the end of a reject's sentence: " with no human note ..." or
    ": note not signed by an owner of ...".

    ``review``: any note counts (the platform enforces owner review).
    ``signed``/``approvals``: a note counts when one of its endorsers (signers,
    approvers) is an owner of the path, per the parent's matrix and CODEOWNERS.
    """
    paths = list(paths)
    notes = [note for path in paths for note in facts.notes.naming(path)]
    if not notes:
        return " with no human note (ORACLE_CHANGELOG.md entry or Oracle-Change trailer)"
    if facts.notes.policy == "review":
        return None
    owners = facts.owners(paths[0], package)
    wanted = {normalize_principal(owner) for owner in owners}
    if any(note.endorsers & wanted for note in notes):
        return None
    listed = ", ".join(owners) if owners else "none listed in the parent's CODEOWNERS"
    return f": {_UNSATISFIED[facts.notes.policy]} {_where(paths[0], package)} ({listed})"


def part_problem(part: str, package: Package | None, facts: Facts) -> str | None:
    """``note_problem`` for one moved part: a path, or a test unit ``file::unit``.

    A unit is noted by its own note or by a note of its file.
    """
    problem = note_problem([part], package, facts)
    file, _, unit = part.partition("::")
    if problem is not None and unit and note_problem([file], package, facts) is None:
        return None
    return problem


def oracle_move(laned: LanedPath, facts: Facts, reason: str, parts: Sequence[str] = ()) -> Finding:
    """The oracle moved: ``human_noted`` when a human explained it, else a reject.

    ``reason`` says what moved; the verdict decides how the sentence ends. A
    note naming the path explains any move; failing that, ``parts`` (the test
    units that moved) are explained when each has a note of its own.
    """
    paths = [laned.path] + ([laned.change.old_path] if laned.change.old_path else [])
    problem = note_problem(paths, laned.package, facts)
    if problem is None:
        return noted(laned, facts, f"{reason}; a human note explains it")
    if parts and all(part_problem(part, laned.package, facts) is None for part in parts):
        return noted(laned, facts, f"{reason}; notes of each moved unit explain it")
    return laned.finding(Verdict.REJECT, reason + problem)


def noted(laned: LanedPath, facts: Facts, reason: str) -> Finding:
    """``human_noted``, naming the owners whose review the platform must enforce."""
    owners = facts.owners(laned.path, laned.package)
    who = ", ".join(owners) if owners else "the package owners"
    return laned.finding(Verdict.HUMAN_NOTED, f"{reason}, review by {who}", owners)


def summarize(items: list[str], separator: str = ", ") -> str:
    """The first few items and how many more there are: one reason stays one line."""
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return separator.join(items[:_SHOWN]) + more
