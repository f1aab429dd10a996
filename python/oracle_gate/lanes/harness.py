"""Harness lane: anything that changes how tests are collected, run or judged."""

from __future__ import annotations

import posixpath
import re

from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move
from oracle_gate.model import ChangeKind, Finding

__all__ = ["judge"]

# pytest hooks that can rewrite outcomes, drop tests or skip them wholesale.
_OUTCOME_HOOKS = re.compile(
    r"\bdef\s+(pytest_runtest_makereport|pytest_runtest_call|pytest_runtest_protocol|"
    r"pytest_collection_modifyitems|pytest_ignore_collect|pytest_report_teststatus|"
    r"pytest_pyfunc_call|pytest_runtest_setup|pytest_deselected)\b"
)


def _hooks_added(laned: LanedPath, facts: Facts) -> list[str]:
    if posixpath.basename(laned.path) != "conftest.py" or laned.change.kind is ChangeKind.DELETED:
        return []
    head = facts.head.read(laned.path).decode("utf-8", "replace")
    old = laned.change.old_path or laned.path
    parent = (facts.parent.read_optional(old) or b"").decode("utf-8", "replace")
    before = set(_OUTCOME_HOOKS.findall(parent))
    return sorted(set(_OUTCOME_HOOKS.findall(head)) - before)


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    what = f"test harness {laned.change.kind.value}"
    hooks = _hooks_added(laned, facts)
    if hooks:
        what += f" and defines {', '.join(hooks)}, which can rewrite or drop test outcomes"
    return [oracle_move(laned, facts, f"{what}: how tests are collected or judged moved")]
