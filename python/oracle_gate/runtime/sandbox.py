"""Running oracle and production code: temporary checkouts and runner subprocesses.

Patched code never runs in the gate process. Each call starts
``python -m oracle_gate.runtime.child`` in a checkout of one tree with a timeout, and
reads back only the line carrying the request's nonce.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from oracle_gate.errors import GateError
from oracle_gate.repo.git import git

__all__ = ["Checkouts", "RunnerFailure", "checkouts", "run_role"]

DEFAULT_TIMEOUT = 60.0
# Not resolved: under Bazel the driver is a runfiles symlink tree, and the
# runner must import the same files, from inside the sandbox.
_DRIVER_PATH = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


class RunnerFailure(Exception):
    """The runner crashed, timed out or answered nonsense; the caller makes it a reject."""


@dataclass(frozen=True)
class Checkouts:
    """Where the parent and head trees are checked out for running code."""

    parent: Path
    head: Path


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def checkouts(repo: Path, parent: str, head: str) -> Iterator[Checkouts]:
    """Temporary ``git worktree`` checkouts of both commits, removed on every exit path.

    SIGTERM is turned into KeyboardInterrupt while they exist, so a killed CI
    job still runs the cleanup; SIGINT already is one. Only the main thread may
    set a signal handler, so ``check()`` called from another thread keeps the
    process's handler (cleanup still runs on every exception).

    Raises:
        GitError: a worktree cannot be created.
    """
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt) if main else None
    root = Path(tempfile.mkdtemp(prefix="oracle-gate-trees-"))
    made: list[Path] = []
    try:
        for name, commit in (("parent", parent), ("head", head)):
            target = root / name
            git(repo, "worktree", "add", "--quiet", "--detach", str(target), commit)
            made.append(target)
        yield Checkouts(parent=made[0], head=made[1])
    finally:
        for target in made:
            with contextlib.suppress(GateError):
                git(repo, "worktree", "remove", "--force", str(target))
        with contextlib.suppress(GateError):
            git(repo, "worktree", "prune")
        shutil.rmtree(root, ignore_errors=True)
        if main:
            signal.signal(signal.SIGTERM, previous)


def run_role(
    request: dict[str, Any], package_dir: Path, timeout: float = DEFAULT_TIMEOUT, hash_seed: int = 0
) -> dict[str, Any]:
    """Run one runner role with ``package_dir`` first on ``sys.path``.

    Raises:
        RunnerFailure: timeout, crash, or no result line.
    """
    nonce = secrets.token_hex(16)
    payload = json.dumps({**request, "package_dir": str(package_dir), "nonce": nonce})
    env = {
        **os.environ,
        "PYTHONPATH": _DRIVER_PATH,
        "PYTHONHASHSEED": str(hash_seed),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Hypothesis keeps a directory even without a database; never in the package.
        "HYPOTHESIS_STORAGE_DIRECTORY": os.path.join(
            tempfile.gettempdir(), "oracle-gate-hypothesis"
        ),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "oracle_gate.runtime.child"],
            input=payload,
            capture_output=True,
            text=True,
            cwd=package_dir,
            env=env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise RunnerFailure(f"timed out after {timeout:.0f}s") from error
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(nonce + " "):
            result: dict[str, Any] = json.loads(line[len(nonce) + 1 :])
            if "error" in result:
                raise RunnerFailure(result["error"])
            return result
    tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
    raise RunnerFailure(f"runner gave no result ({tail[0][:200]})")
