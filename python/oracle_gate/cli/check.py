"""``oracle-gate check``: the whole gate on one patch; prints the report, returns its exit code."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType

from oracle_gate.cli.common import repo_root, today
from oracle_gate.cli.terminal import progress_on_tty, styled
from oracle_gate.config.notes import reviewer_name
from oracle_gate.errors import ConfigError, DeadlineError, GateError, GitError, fault
from oracle_gate.formats import ERROR_FORMATS, FORMATS
from oracle_gate.gate import check
from oracle_gate.repo.diff import resolve_commit
from oracle_gate.repo.merge_queue import base_from_environment
from oracle_gate.repo.worktree import snapshot_worktree, uncommitted_paths

__all__ = ["DEFAULT_TIMEOUT", "add_output_files", "cmd_check", "deadline", "write_outputs"]

DEFAULT_TIMEOUT = 3600.0


def add_output_files(parser: argparse.ArgumentParser, formats: Iterable[str] = FORMATS) -> None:
    """``--output FORMAT:FILE``, repeatable, with FORMAT one of ``formats``."""
    names = sorted(formats)

    def output(text: str) -> tuple[str, str]:
        format, _, file = text.partition(":")
        if format not in names or not file:
            raise argparse.ArgumentTypeError(
                f"expected FORMAT:FILE with FORMAT one of {', '.join(names)}, found {text!r}"
            )
        return format, file

    parser.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="FORMAT:FILE",
        type=output,
        help=f"also write the report as FORMAT ({', '.join(names)}) to FILE; "
        "repeatable, so one run feeds JUnit, SARIF and a job summary",
    )


def write_outputs(outputs: list[tuple[str, str]], render: Callable[[str], str]) -> None:
    """Write ``render(format)`` to each ``--output`` file."""
    for format, file in outputs:
        try:
            # A name the report quotes may not be UTF-8 (git's bytes): escaped, not lost.
            Path(file).write_text(render(format), encoding="utf-8", errors="backslashreplace")
        except OSError as error:
            raise ConfigError(
                f"cannot write the {format} report ({error.strerror})", file
            ) from None


def read_approvals(path: str | None) -> tuple[str, ...] | None:
    """``--approvals FILE``: a JSON list of reviewer handles or emails.

    Raises:
        ConfigError: the file is unreadable, not JSON, or not a list of strings.
    """
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read approvals ({error.strerror})", path) from None
    except UnicodeDecodeError:
        raise ConfigError("is not valid UTF-8", path) from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"is not valid JSON: {error.msg}", path, error.lineno) from None
    if not isinstance(document, list) or not all(
        isinstance(item, str) and reviewer_name(item) for item in document
    ):
        # A name of only zero-width or control characters is nobody (notes.reviewer_name).
        raise ConfigError("must be a JSON list of reviewer handles or emails", path)
    return tuple(document)


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise DeadlineError in the main thread once ``seconds`` have passed.

    The error unwinds like Ctrl-C does: temporary checkouts are removed and a
    running child process is killed on the way out. Off the main thread no
    timer can be set, and the body runs without one.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise DeadlineError(f"{what} did not finish within --timeout {seconds:g}s; no verdict")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _warn_uncommitted(repo: Path, head: str) -> None:
    """One stderr line when the checked-out head has edits that this check does not judge."""
    try:
        if resolve_commit(repo, head) != resolve_commit(repo, "HEAD"):
            return
        paths = uncommitted_paths(repo)
    except GitError:
        return
    if paths:
        shown = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
        print(
            f"oracle-gate: warning: {len(paths)} uncommitted change(s) are not judged "
            f"({shown}); commit them, or run check --worktree",
            file=sys.stderr,
        )


def _judge(args: argparse.Namespace) -> int:
    repo = repo_root(args.repo)
    approvals = read_approvals(args.approvals)
    base = args.base or base_from_environment(os.environ)
    if args.worktree:
        head = snapshot_worktree(repo)
    else:
        head = args.head
        _warn_uncommitted(repo, head)
    with progress_on_tty():
        report = check(
            repo,
            base=base,
            head=head,
            today=today(args.today),
            write_seeds=args.write_seeds,
            graph=args.graph,
            approvals=approvals,
            replay=not args.no_replay,
            allow_empty=args.allow_empty,
            cache_url=args.cache_url,
            require_vetted=args.require_vetted,
        )
    write_outputs(args.output, lambda format: FORMATS[format](report))
    sys.stdout.write(styled(FORMATS[args.format](report), args.format, args.color))
    return report.exit_code


def cmd_check(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, found {args.timeout:g}")
    if args.worktree and args.head != "HEAD":
        raise ConfigError("--worktree judges the working tree; it cannot be used with --head")
    try:
        with deadline(args.timeout, "check"):
            return _judge(args)
    except (GateError, OSError) as error:
        # The files a CI step reads must say why there is no verdict, not be empty.
        failure = error if isinstance(error, GateError) else fault(error, "go on")
        with contextlib.suppress(GateError):
            write_outputs(args.output, lambda format: ERROR_FORMATS[format](failure))
        sys.stdout.write(ERROR_FORMATS[args.format](failure))
        raise failure from None
