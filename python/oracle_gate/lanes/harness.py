"""Harness lane: anything that changes how tests are collected, run or judged."""

from __future__ import annotations

from oracle_gate.classify.python import hook_names, import_time_effects, same_code
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.model import ChangeKind, Finding, Verdict

__all__ = ["judge"]


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
    is_python = laned.path.endswith(".py")
    if is_python and laned.change.kind is ChangeKind.MODIFIED and same_code(before, after):
        return [laned.finding(Verdict.PASS, "harness module unchanged but for comments or layout")]
    what = f"test harness {laned.change.kind.value}"
    if is_python:
        what += _python_detail(before, after)
    return [oracle_move(laned, facts, f"{what}: how tests are collected or judged moved")]
