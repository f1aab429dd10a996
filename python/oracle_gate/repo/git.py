"""Running git: one subprocess helper with a timeout, failures as GitError."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from oracle_gate.errors import GitError

__all__ = ["git", "git_bytes", "repository_dirs"]

TIMEOUT_SECONDS = 120.0


def _environment(extra: Mapping[str, str]) -> dict[str, str]:
    # A user's pager, editor or locale must not change what we parse.
    env = dict(os.environ)
    env.update({"GIT_PAGER": "cat", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    env.update(extra)
    return env


def git_bytes(
    repo: Path,
    *args: str,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    ok_codes: tuple[int, ...] = (0,),
) -> bytes:
    """Run ``git -C repo ARGS`` (with ``env`` added to the environment) and return its stdout.

    An exit code in ``ok_codes`` is success (``git check-ignore`` exits 1 when
    it matched nothing).

    Raises:
        GitError: git is missing, timed out, or exited with a code not in ``ok_codes``.
    """
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=repo,
            input=input,
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            env=_environment(env or {}),
            check=False,
        )
    except FileNotFoundError as error:
        raise GitError("git is not installed or not on PATH") from error
    except subprocess.TimeoutExpired as error:
        raise GitError(f"'git {' '.join(args)}' timed out after {TIMEOUT_SECONDS:.0f}s") from error
    if done.returncode not in ok_codes:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = detail[-1] if detail else f"exit code {done.returncode}"
        raise GitError(f"'git {' '.join(args)}' failed: {reason}", str(repo))
    return done.stdout


def git(repo: Path, *args: str) -> str:
    """``git_bytes`` decoded as UTF-8 (git paths are bytes; we require UTF-8 names)."""
    return git_bytes(repo, *args).decode("utf-8", "surrogateescape")


def repository_dirs(repo: Path) -> tuple[Path, ...]:
    """The repository's working tree root (``repo`` itself when bare), then ``repo``, its
    git directory and their common directory (a linked worktree's objects live in the
    main repository's)."""
    bare, *dirs = git(
        repo, "rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir"
    ).splitlines()
    top = git(repo, "rev-parse", "--show-toplevel").strip() if bare == "false" else "."
    return tuple(dict.fromkeys((repo / path).resolve() for path in (top, ".", *dirs)))
