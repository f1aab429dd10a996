"""Running git: one subprocess helper with a timeout, failures as GitError.

Every git command the gate runs runs no hook of the repository's
(``core.hooksPath=/dev/null``): a hook is a program anyone who could write the
git directory chose, and the gate runs git with its own privileges, outside
the sandbox. Nor does git substitute objects through ``refs/replace``: the gate
reads each object as its id names it (``repo/trees.py`` checks that it does).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from oracle_gate.errors import GitError

__all__ = ["git", "git_bytes", "git_bytes_together", "git_records", "repository_dirs"]

TIMEOUT_SECONDS = 120.0
# Before every git subcommand: no hook runs, whatever the repository's hooks or config say.
_NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


def _environment(extra: Mapping[str, str]) -> dict[str, str]:
    # A user's pager, editor or locale must not change what we parse.
    env = dict(os.environ)
    env.update({"GIT_PAGER": "cat", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
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
            ["git", *_NO_HOOKS, *args],
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
        raise _timed_out(args) from error
    if done.returncode not in ok_codes:
        raise _failed(repo, args, done.returncode, done.stderr)
    return done.stdout


def _timed_out(args: Sequence[str]) -> GitError:
    return GitError(f"'git {' '.join(args)}' timed out after {TIMEOUT_SECONDS:.0f}s")


def _failed(repo: Path, args: Sequence[str], code: int, stderr: bytes) -> GitError:
    detail = stderr.decode("utf-8", "replace").strip().splitlines()
    reason = detail[-1] if detail else f"exit code {code}"
    return GitError(f"'git {' '.join(args)}' failed: {reason}", str(repo))


def git_bytes_together(repo: Path, args: Sequence[str], inputs: Sequence[bytes]) -> list[bytes]:
    """``git -C repo ARGS`` once per input, all at once; their outputs, in input order.

    Each process reads its input from and writes its output to a temporary file,
    so they run in parallel without this process pumping pipes between them: a
    cold graph reads 20,000 BUILD files, and git inflating them is most of the wait.

    Raises:
        GitError: git is missing, a process timed out or exited with an error.
    """
    command = ["git", *_NO_HOOKS, *args]
    with contextlib.ExitStack() as stack:
        running = []
        for data in inputs:
            request = stack.enter_context(tempfile.TemporaryFile())
            output = stack.enter_context(tempfile.TemporaryFile())
            errors = stack.enter_context(tempfile.TemporaryFile())
            request.write(data)
            request.seek(0)
            try:
                process = subprocess.Popen(
                    command,
                    cwd=repo,
                    stdin=request,
                    stdout=output,
                    stderr=errors,
                    env=_environment({}),
                )
            except FileNotFoundError as error:
                raise GitError("git is not installed or not on PATH") from error
            stack.callback(_reap, process)
            running.append((process, output, errors))
        return [_output_of(repo, args, *started) for started in running]


# How much of git's output ``git_records`` reads at a time: larger than a pipe's buffer.
_READ_SIZE = 1 << 20


def git_records(repo: Path, *args: str, end: bytes = b"\0") -> Iterator[bytes]:
    """The output of ``git -C repo ARGS`` as it comes, in pieces of whole records.

    Each piece ends with ``end`` (the last may not, if git's output does not), so
    the caller parses one piece while git writes the next: a monorepo commit's
    listing is megabytes, and parsing it then costs no time of its own.

    Raises:
        GitError: git is missing, timed out, or exited with an error (after the
            pieces it wrote, which the caller must then discard).
    """
    with contextlib.ExitStack() as stack:
        errors = stack.enter_context(tempfile.TemporaryFile())
        try:
            process = subprocess.Popen(
                ["git", *_NO_HOOKS, *args],
                cwd=repo,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=_environment({}),
                bufsize=0,  # each read is one read(2): whatever git has written so far
                # Its own process group: what git starts (a hook, an alias) holds the
                # pipe open too, and is killed with it at the timeout.
                start_new_session=True,
            )
        except FileNotFoundError as error:
            raise GitError("git is not installed or not on PATH") from error
        stack.callback(_reap, process)
        killed = _Watchdog(lambda: _kill_group(process))
        stack.callback(killed.cancel)
        assert process.stdout is not None
        stack.enter_context(process.stdout)
        pending = b""
        while chunk := process.stdout.read(_READ_SIZE):
            cut = chunk.rfind(end) + 1
            if cut:
                yield pending + chunk[:cut]
                pending = chunk[cut:]
            else:
                pending += chunk
        if pending:
            yield pending
        process.wait()
        if killed.fired:
            raise _timed_out(args)
        if process.returncode != 0:
            errors.seek(0)
            raise _failed(repo, args, process.returncode, errors.read())


class _Watchdog:
    """Calls ``kill`` once the timeout has passed, and remembers having done so."""

    def __init__(self, kill: Callable[[], None]) -> None:
        self.fired = False
        self._kill_process = kill
        self._timer = threading.Timer(TIMEOUT_SECONDS, self._kill)
        self._timer.start()

    def _kill(self) -> None:
        self.fired = True
        self._kill_process()

    def cancel(self) -> None:
        self._timer.cancel()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _output_of(
    repo: Path,
    args: Sequence[str],
    process: subprocess.Popen[bytes],
    output: IO[bytes],
    errors: IO[bytes],
) -> bytes:
    if not _waited(process):
        raise _timed_out(args)
    if process.returncode != 0:
        errors.seek(0)
        raise _failed(repo, args, process.returncode, errors.read())
    output.seek(0)
    return output.read()


def _waited(process: subprocess.Popen[bytes]) -> bool:
    """Waits for ``process`` to end; False if it ran past the timeout and was killed.

    ``Popen.wait(timeout)`` polls with sleeps of up to 50 ms; a watchdog thread
    lets the wait block instead, so it returns the moment git is done.
    """
    watchdog = _Watchdog(process.kill)
    try:
        process.wait()
    finally:
        watchdog.cancel()
    return not watchdog.fired


def _reap(process: subprocess.Popen[bytes]) -> None:
    """A process still running when its reader gave up is killed, never left behind."""
    if process.poll() is None:
        process.kill()
        process.wait()


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
