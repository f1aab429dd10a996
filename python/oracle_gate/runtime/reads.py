"""The files a package's tests read at run time, as its last baseline saw them: what
makes a change in a quiet lane (docs, other) reach that package.

A data file a test or the production code opens (``docs/limits.json`` read under a
computed path) is no rule's glob, so its lane is docs and, alone in a patch, it
would select nothing. Every baseline the replay records or loads notes which
repository files its tests opened and which directories they listed
(``runtime/footprint.py``); ``check`` then selects a package whose tests read a
path the patch changes in a quiet lane: its rows run and its replay reruns the
tests that read it. The hint lives in the gate's own cache for the repository
(``run-time-reads.json``), which patched code never writes (it runs sandboxed).

It is a hint, never a verdict: a missing or unreadable file selects nothing more,
as before the first baseline; a package is only ever added.
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Iterable, Mapping
from pathlib import Path

from oracle_gate.model import Change, ChangeKind
from oracle_gate.repo.files import replace_file
from oracle_gate.runtime.baseline import Baseline

__all__ = ["READS_FILE", "load_reads", "note_reads", "readers"]

READS_FILE = "run-time-reads.json"
_log = logging.getLogger(__name__)
# Each package's opened files and listed directories, at most this many of each.
_MOST = 20_000


def load_reads(target: Path) -> dict[str, dict[str, list[str]]]:
    """package path -> {"opened": files, "listed": directories}, from ``target``."""
    try:
        data = json.loads(target.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        _log.warning("oracle-gate: warning: %s is ignored (%s)", target, error)
        return {}
    if not isinstance(data, dict):
        _log.warning("oracle-gate: warning: %s is ignored (not a JSON object)", target)
        return {}
    return {
        str(package): {
            kind: [str(p) for p in entry.get(kind, [])][:_MOST] for kind in ("opened", "listed")
        }
        for package, entry in data.items()
        if isinstance(entry, dict)
    }


def note_reads(target: Path, package: str, baseline: Baseline) -> None:
    """Keep what ``baseline``'s tests read, as the hint for ``package``; a cache that
    cannot be written loses the hint (a warning), never the check."""
    opened: set[str] = set()
    listed: set[str] = set()
    for footprint in (baseline.session, *baseline.tests.values()):
        opened |= footprint.opened
        listed |= footprint.listed
    entry = {"opened": sorted(opened)[:_MOST], "listed": sorted(listed)[:_MOST]}
    found = load_reads(target)
    if found.get(package) == entry:
        return
    found[package] = entry
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_file(target, (json.dumps(found, sort_keys=True) + "\n").encode())
    except OSError as error:
        _log.warning(
            "oracle-gate: warning: the files the tests read are not kept (%s): %s",
            target.name,
            error.strerror,
        )


def readers(reads: Mapping[str, Mapping[str, Iterable[str]]], change: Change) -> tuple[str, ...]:
    """The packages whose tests opened a path of ``change``, or listed its directory when
    the change adds, removes or moves it (a listing then differs)."""
    paths = {change.path, change.old_path or change.path}
    listing = change.kind is not ChangeKind.MODIFIED
    directories = {posixpath.dirname(path) for path in paths} if listing else set()
    return tuple(
        sorted(
            package
            for package, entry in reads.items()
            if paths & set(entry.get("opened", ())) or directories & set(entry.get("listed", ()))
        )
    )
