"""Temporary checkouts of the parent and head commits, for running their code.

Both are ``git worktree add --detach`` into one temporary directory, removed on
every exit path a process can see. A run killed outright (SIGKILL, the
kernel's out-of-memory killer) sees none: git keeps both worktrees registered,
and their directory stays. So a run holds an exclusive lock on a file in that
directory while its checkouts exist (the kernel lets go of it when the process
dies, however it dies), and the next check, whether it runs code or not, first removes
the worktrees of every such directory whose lock nobody holds
(``prune_abandoned``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from oracle_gate.errors import GateError
from oracle_gate.repo.git import git

__all__ = ["Checkouts", "checkouts", "hide", "prune_abandoned"]

_PREFIX = "oracle-gate-trees-"
_NAMES = ("parent", "head")
# Held by the run that made the directory, for as long as its checkouts exist.
_LOCK = "lock"


@dataclass(frozen=True)
class Checkouts:
    """Where the parent and head trees are checked out for running code."""

    parent: Path
    head: Path


def hide(checkout: Path, paths: Iterable[str]) -> None:
    """Delete repo-relative ``paths`` from a temporary checkout (never from a working tree)."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            (checkout / path).unlink()


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def checkouts(repo: Path, parent: str, head: str, *, files: bool = True) -> Iterator[Checkouts]:
    """Temporary ``git worktree`` checkouts of both commits, removed on every exit path.

    ``files`` False leaves both directories empty, for a run that starts no child: a
    worktree of ten thousand files is seconds of git. A child started in an empty one
    anyway finds neither its package's directory nor its code, so that mistake fails
    the check instead of passing what it judged.

    SIGTERM is turned into KeyboardInterrupt while they exist, so a killed CI
    job still runs the cleanup; SIGINT already is one. Only the main thread may
    set a signal handler, so ``check()`` called from another thread keeps the
    process's handler (cleanup still runs on every exception).

    Raises:
        GitError: a worktree cannot be created.
    """
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt) if main else None
    root = Path(tempfile.mkdtemp(prefix=_PREFIX))
    made: list[Path] = []
    lock = _hold(root)
    try:
        for name, commit in zip(_NAMES, (parent, head), strict=True):
            if not files:
                (root / name).mkdir()
                continue
            # Listed before it exists: an interrupt can stop ``worktree add`` halfway,
            # after git has registered the worktree.
            made.append(root / name)
            git(repo, "worktree", "add", "--quiet", "--detach", str(made[-1]), commit)
        yield Checkouts(parent=root / _NAMES[0], head=root / _NAMES[1])
    finally:
        _remove(repo, root, made)
        os.close(lock)
        if main:
            signal.signal(signal.SIGTERM, previous)


def _hold(root: Path) -> int:
    """The lock of ``root``, taken: a descriptor the children never inherit."""
    fd = os.open(root / _LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _remove(repo: Path, root: Path, worktrees: Iterable[Path]) -> None:
    for target in worktrees:
        with contextlib.suppress(GateError):
            git(repo, "worktree", "remove", "--force", str(target))
    # Pruned once the directories are gone: git forgets a half-made worktree
    # only when its directory no longer exists.
    shutil.rmtree(root, ignore_errors=True)
    with contextlib.suppress(GateError):
        git(repo, "worktree", "prune")


def prune_abandoned(repo: Path) -> None:
    """Remove the checkouts of runs that died before they could: registered worktrees of
    this repository in a directory of ours whose lock nobody holds (or that has none)."""
    with contextlib.suppress(GateError):
        listing = git(repo, "worktree", "list", "--porcelain")
        lines = listing.splitlines()
        paths = [Path(line[len("worktree ") :]) for line in lines if line.startswith("worktree ")]
        roots = {
            path.parent
            for path in paths
            if path.name in _NAMES and path.parent.name.startswith(_PREFIX)
        }
        for root in sorted(roots):
            if _abandoned(root):
                _remove(repo, root, [path for path in paths if path.parent == root])


def _abandoned(root: Path) -> bool:
    """Whether no living run holds ``root``'s lock; False when it cannot be told (the
    directory is another user's)."""
    try:
        fd = os.open(root / _LOCK, os.O_RDONLY)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True
