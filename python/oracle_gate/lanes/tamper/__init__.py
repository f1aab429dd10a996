"""The tamper rule: production code must not know it is tested.

A production change that adds a reference to test or gate machinery (pytest,
Hypothesis, unittest, oracle_gate; frame inspection; ``os._exit`` and
``atexit``; variables such as ``PYTEST_CURRENT_TEST``; the package's ledgers,
locks or fixtures; a value equal to a recorded seed input or to a fixture's
case, however it is spelled: ``lanes/spellings.py``, ``lanes/recorded.py``) could behave
one way under the oracles and another in production. So could one that reads
what tells the gate's sandbox from a real run: its process id, host name,
interpreter flags, command line, import path, or a ``PYTHON...`` variable. Such a change is a
``tamper:`` reject unless a human note covers the file.

The same holds for the ways to reach the process itself: a raw file
descriptor (``os.write``, ``os.dup2``, ``open(3)``, ``/proc/self/fd``), its
memory (``mmap``, ``ctypes``), its signals, a fork. The trusted replay runs
pytest and production code in one process, where such code could write a
forged answer on the result pipe.

Names are read through their aliases (``import os as o``, ``from os import
write as w``, ``o = os``, ``posix`` for ``os``), and ``from os import *`` of a
watched module is itself a mark.

Both sides are read from git objects (parent blob, head blob), and only what
the patch added counts: a reference the parent already had is not new.

Each family of marks is a module of this package, whose docstring says what it catches,
why, and shows one: ``machinery`` (imports), ``introspection`` (frames, the module
table, code from strings), ``process`` (descriptors' calls, signals, forks),
``descriptors`` (files opened or probed by number), ``reflection``, ``sandbox`` (tells),
``clocks`` (time bombs), ``strings``, ``recorded_values`` and ``shadows`` (modules named
like the standard library's). ``reader`` is what they share, ``registry`` which reads
which node, ``collection`` what the package records. Their cheats and honest
neighbours: ``tests/fixtures/tamper/marks/``.
"""

from __future__ import annotations

from oracle_gate.facts import Facts, LanedPath
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.lanes.tamper.collection import fixture_names, recorded
from oracle_gate.lanes.tamper.registry import added_marks
from oracle_gate.lanes.tamper.shadows import new_shadow
from oracle_gate.model import ChangeKind, Finding

__all__ = ["added_marks", "judge"]


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    """A ``tamper:`` reject (or ``human_noted``) when the patch added such references."""
    package = laned.package
    if package is None or laned.change.kind is ChangeKind.DELETED or not laned.path.endswith(".py"):
        return []
    head = facts.head.read_optional(laned.path)
    if head is None:
        return []
    parent = facts.parent.read_optional(laned.change.old_path or laned.path)
    fixtures = fixture_names(facts.parent, package) | fixture_names(facts.head, package)
    added = added_marks(parent, head, fixtures, recorded(facts.parent, facts.head, package))
    added += new_shadow(laned.path, package, facts.parent)
    if not added:
        return []
    shown = summarize([f"{kind} {text!r} (line {line})" for (kind, text), line in added])
    return [
        oracle_move(
            laned,
            facts,
            f"tamper: production code now refers to test or gate machinery: {shown}",
        )
    ]
