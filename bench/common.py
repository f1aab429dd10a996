"""Helpers every benchmark uses: timing a stage and naming the commit measured."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def median_seconds(
    runs: int, stage: Callable[[], T], before: Callable[[], None] = lambda: None
) -> tuple[float, T]:
    """One warm-up, then the median of ``runs`` timed calls (``before`` runs untimed),
    and the last call's result."""
    before()
    result = stage()
    times = []
    for _ in range(runs):
        before()
        start = time.perf_counter()
        result = stage()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def commit_id() -> str:
    """The short id of the commit the benchmarks run from, or "unknown"."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
