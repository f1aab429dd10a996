"""Harness lane: anything that changes how tests are collected, run or judged; and why a
configuration file that cannot was left out of it."""

from __future__ import annotations

from oracle_gate.classify.effects import effect_of, gate_reader
from oracle_gate.classify.harness import same_meaning
from oracle_gate.classify.python import hook_names, import_time_effects
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.model import ChangeKind, Finding, Verdict

__all__ = ["judge", "judge_other"]

_OTHER = "neither an oracle nor a production path"


def _python_detail(before: bytes | None, after: bytes | None) -> str:
    """What a harness module now does that it did not: hooks it binds, state it patches."""
    if after is None:
        return ""
    detail = ""
    hooks = sorted(hook_names(after) - (hook_names(before) if before is not None else set()))
    if hooks:
        detail += f" and binds {', '.join(hooks)}, which pytest calls to collect, run or report"
    if before is None:
        effects = import_time_effects(after)
        if effects:
            detail += f" and changes shared state on import ({summarize(effects, '; ')})"
    return detail


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    before, after = facts.read_pair(laned.change)
    if laned.change.kind is ChangeKind.MODIFIED and same_meaning(laned.path, before, after):
        return [laned.finding(Verdict.PASS, "harness file unchanged but for comments or layout")]
    what = f"test harness {laned.change.kind.value}"
    if laned.path.endswith(".py"):
        what += _python_detail(before, after)
    effect = effect_of(laned.change, facts)
    reader = gate_reader(laned.change, facts)
    if effect is not None:
        what += f" ({effect.reason})"
    elif reader is not None:
        what += f" (read by the CI job that runs oracle-gate ({reader}))"
    return [oracle_move(laned, facts, f"{what}: how tests are collected or judged moved")]


def judge_other(laned: LanedPath, facts: Facts) -> list[Finding]:
    """A pass; for a configuration, CI or packaging file, with what changed and why it
    cannot move a verdict."""
    effect = effect_of(laned.change, facts)
    reason = _OTHER if effect is None else f"{_OTHER}: {effect.reason}"
    return [laned.finding(Verdict.PASS, reason)]
