"""The stages every command that judges a patch shares, in order: read both trees, put
each changed path in its lane, and select what the diff can break.

``check`` goes on from here to judge paths and packages and to run rows; ``select``
prints the selection. One home for both, so what ``select`` prints is what ``check``
runs (a quiet file the parent's tests read at run time included).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from oracle_gate import progress
from oracle_gate.classify import classify
from oracle_gate.facts import Facts, LanedPath, gather_facts
from oracle_gate.repo.cache import cache_dir
from oracle_gate.runtime.reads import READS_FILE, load_reads, readers
from oracle_gate.select import Selection, is_quiet, select

__all__ = ["Request", "Staged", "stage"]


@dataclass(frozen=True)
class Request:
    """A patch to judge: ``base`` to ``head`` in ``repo``, as of ``today``.

    ``graph`` is how the head's package graph is built (``static`` or ``bazel``);
    ``approvals`` are who approved the change, read only under the ``approvals`` policy.
    """

    repo: Path
    base: str
    head: str
    today: datetime.date
    graph: str = "static"
    approvals: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Staged:
    """What the shared stages found: the facts, every changed path in its lane, the
    selection, and the hint file of run-time reads it was made with."""

    facts: Facts
    laned: tuple[LanedPath, ...]
    selection: Selection
    reads_file: Path


def stage(request: Request) -> Staged:
    """Read both trees, classify the changed paths and select what they can break.

    Raises:
        GitError, ConfigError, GateError: as ``gather_facts``.
    """
    with progress.stage("reading both trees and package graphs"):
        facts = gather_facts(
            request.repo,
            request.base,
            request.head,
            request.today,
            request.graph,
            approvals=request.approvals,
        )
    laned = classify(facts)
    reads_file = cache_dir(request.repo) / READS_FILE
    selection = select(laned, facts, _read_at_run_time(laned, reads_file))
    return Staged(facts, laned, selection, reads_file)


def _read_at_run_time(laned: Iterable[LanedPath], reads_file: Path) -> dict[str, tuple[str, ...]]:
    """Each changed quiet path the parent's tests read at run time, with the packages
    whose tests read it (as their last baseline saw it)."""
    quiet = [lp for lp in laned if is_quiet(lp)]
    reads = load_reads(reads_file) if quiet else {}
    found = {lp.path: readers(reads, lp.change) for lp in quiet}
    return {path: packages for path, packages in found.items() if packages}
