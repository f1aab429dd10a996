"""What every oracle lane shares: the human-note rule, and one-line summaries of many items."""

from __future__ import annotations

from oracle_gate.facts import Facts, LanedPath
from oracle_gate.model import Finding, Verdict

__all__ = ["oracle_move", "summarize"]

_SHOWN = 3


def oracle_move(laned: LanedPath, facts: Facts, reason: str) -> Finding:
    """The oracle moved: ``human_noted`` when a human explained it, else a reject.

    ``reason`` says what moved; the verdict decides how the sentence ends.
    """
    paths = [laned.path] + ([laned.change.old_path] if laned.change.old_path else [])
    if any(facts.notes.covers(path, laned.package) for path in paths):
        owners = facts.owners(laned.path, laned.package)
        who = ", ".join(owners) if owners else "the package owners"
        return laned.finding(
            Verdict.HUMAN_NOTED, f"{reason}; a human note explains it, review by {who}", owners
        )
    return laned.finding(
        Verdict.REJECT,
        f"{reason} with no human note (ORACLE_CHANGELOG.md entry or Oracle-Change trailer)",
    )


def summarize(items: list[str], separator: str = ", ") -> str:
    """The first few items and how many more there are: one reason stays one line."""
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return separator.join(items[:_SHOWN]) + more
