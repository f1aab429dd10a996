"""Judging mutants several at a time: one worker process per checkout.

Processes, not threads: the runtime keeps one set of running children per
process and kills them all when a run fails or times out
(``runtime/sandbox.kill_children``), which in a shared process would kill the
other workers' children and make their mutants look killed. Each worker takes
one checkout for its life, writes each mutant over the guarded file, lets the
row judge it and writes the original back.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from oracle_gate.model import Package, Row
from oracle_gate.runtime.judge import RowEnv
from oracle_gate.vet.judge import Judged, Recorded, judge_mutant

__all__ = ["Task", "judge_all"]


@dataclass(frozen=True)
class Task:
    """One mutant to judge by one row."""

    key: str  # where the result is filed: row key + mutant id
    package: Package
    row: Row
    path: str  # repo-relative file the mutant is written over
    source: bytes
    original: bytes
    recorded: Recorded


# The worker's own RowEnv (its checkout as the head), set once when it starts.
_env: list[RowEnv] = []


def _start(envs: Any) -> None:
    _env.append(envs.get())


def _judge(task: Task) -> tuple[str, Judged]:
    env = _env[0]
    target = env.head_dir / task.path
    try:
        target.write_bytes(task.source)
        return task.key, judge_mutant(task.package, task.row, env, task.recorded)
    finally:
        target.write_bytes(task.original)


def judge_all(tasks: Sequence[Task], envs: Sequence[RowEnv]) -> dict[str, Judged]:
    """Every task's verdict by its key, ``len(envs)`` at a time (one worker per env).

    A single env is judged in this process: nothing else runs beside it.
    """
    if len(envs) == 1:
        _env[:] = [envs[0]]
        try:
            return dict(_judge(task) for task in tasks)
        finally:
            _env.clear()
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    queue = context.Queue()
    for env in envs:
        queue.put(dataclasses.replace(env))
    pool = ProcessPoolExecutor(
        max_workers=len(envs), mp_context=context, initializer=_start, initargs=(queue,)
    )
    try:
        return dict(pool.map(_judge, tasks))
    finally:
        # on an interrupt the mutants not yet started are dropped, not judged to the end
        pool.shutdown(wait=True, cancel_futures=True)
