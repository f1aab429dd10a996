"""The gate health record: one JSON line per check in ``health.jsonl`` of the repository's
cache directory (``repo/cache.py``: outside the working tree).

It lets a platform team see whether the gate is doing work (pairs executed,
freeze hits) rather than passing patches by default.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from oracle_gate.config.lockfile import LOCK_FILE
from oracle_gate.model import Package, Row
from oracle_gate.repo.cache import cache_dir

if TYPE_CHECKING:
    from oracle_gate.facts import Facts
    from oracle_gate.runtime.judge import RuntimeStats

__all__ = ["HEALTH_FILE", "append_health"]

HEALTH_FILE = "health.jsonl"
_log = logging.getLogger(__name__)


def _why(error: OSError) -> str:
    return f"{error.filename}: {error.strerror}" if error.filename else str(error.strerror)


def _lock_digests(facts: Facts, packages: set[str]) -> dict[str, str | None]:
    locks = [facts.head_graph.packages[path].join(LOCK_FILE) for path in sorted(packages)]
    present = [lock for lock in locks if facts.head.blob_id(lock) is not None]
    found = dict(zip(present, facts.head.digests(present), strict=True))
    return {lock: found.get(lock) for lock in locks}


def append_health(
    repo: Path, facts: Facts, rows: list[tuple[Package, Row]], stats: RuntimeStats
) -> None:
    """Append this run's record in one write, so concurrent runs interleave whole lines."""
    record = {
        "parent": facts.diff.base,
        "head": facts.diff.head,
        "date": facts.today.isoformat(),
        "rows": [f"{package.path}:{row.id}" for package, row in rows],
        "locks": _lock_digests(facts, {package.path for package, _ in rows}),
        "relations": stats.relations,
        "freeze": {"hits": stats.freeze_hits, "misses": stats.freeze_misses},
        "seeds_appended": stats.seeds_appended,
        "replays": {path: dataclasses.asdict(run) for path, run in stats.replays.items()},
        "locks_written": False,
    }
    target = cache_dir(repo) / HEALTH_FILE
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    # A cache that cannot be written (a read-only home, a full disk) loses the record,
    # never the verdict, which does not depend on it.
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as error:
        _log.warning("oracle-gate: warning: the health record is not kept: %s", _why(error))
        return
    try:
        written = os.write(fd, line)
    except OSError as error:
        written = 0
        _log.warning("oracle-gate: warning: the health record is not kept: %s", _why(error))
    finally:
        os.close(fd)
    if 0 < written < len(line):
        # Half a line would run into the next run's: end it, or drop what was written.
        with contextlib.suppress(OSError):
            os.truncate(target, os.stat(target).st_size - written)
