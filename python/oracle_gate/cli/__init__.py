"""The ``oracle-gate`` command line: argparse and dispatch; one module per command in this package.

Commands print and return exit codes; ``main`` is the only place that turns
errors into exit codes.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import io
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import cast

import oracle_gate
from oracle_gate import backend
from oracle_gate.errors import GateError, fault
from oracle_gate.graph import GRAPH_MODES
from oracle_gate.model import ExitCode

__all__ = ["entry", "main"]

Command = Callable[[argparse.Namespace], int]


def _module(name: str) -> object:
    """``oracle_gate.cli.<name>``, imported when its command is used: a command's module
    imports what only it needs (``check`` the runtime, lanes and report formats), and a
    fresh ``select`` on a large monorepo would pay about 0.2 s for all of them."""
    return importlib.import_module(f"oracle_gate.cli.{name}")


def _add_range(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--base", help="last trusted commit (default: from the merge queue's environment)"
    )
    sub.add_argument("--head", default="HEAD", help="the patched commit (default: HEAD)")


def _add_output(sub: argparse.ArgumentParser) -> None:
    # Imported when the options are built, as a command's module is (``_module``).
    from oracle_gate.cli.terminal import COLOR_CHOICES
    from oracle_gate.formats import FORMATS

    sub.add_argument("--format", choices=sorted(FORMATS), default="text")
    sub.add_argument("--today", help="judge freeze expiry as of this YYYY-MM-DD date")
    sub.add_argument(
        "--color",
        choices=COLOR_CHOICES,
        default="auto",
        help="colour the verdicts of the text report (auto: on a terminal, unless NO_COLOR)",
    )


def _add_graph(sub: argparse.ArgumentParser) -> None:
    # check and select take the same graph, so what select prints is what check runs.
    sub.add_argument(
        "--graph",
        choices=GRAPH_MODES,
        default="static",
        help="static: read BUILD files without Bazel (default); bazel: edges from bazel query",
    )


def _check_arguments(check_parser: argparse.ArgumentParser) -> None:
    from oracle_gate.cli.check import DEFAULT_TIMEOUT, add_output_files  # see _module

    _add_range(check_parser)
    _add_output(check_parser)
    check_parser.add_argument(
        "--write-seeds",
        action="store_true",
        help="also append new counterexamples to the working tree's seeds.jsonl (once each)",
    )
    check_parser.add_argument(
        "--no-replay",
        action="store_true",
        help="do not run the parent's tests against the head's code (for tests that need services)",
    )
    check_parser.add_argument(
        "--cache-url",
        metavar="URL",
        default=os.environ.get("ORACLE_GATE_CACHE_URL") or None,
        help="also keep the replay's parent baselines in this shared HTTP (WebDAV) cache "
        "(default: $ORACLE_GATE_CACHE_URL)",
    )
    _add_graph(check_parser)
    add_output_files(check_parser)
    check_parser.add_argument(
        "--approvals",
        metavar="FILE",
        help="JSON list of the reviewers (handles or emails) who approved the change; "
        "needed when the parent's notes policy is 'approvals'",
    )
    check_parser.add_argument(
        "--worktree",
        action="store_true",
        help="judge the working tree (as git add -A would commit it) against --base: pre-commit",
    )
    check_parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept a repository without packages (otherwise a gate error: nothing is judged)",
    )
    check_parser.add_argument(
        "--require-vetted",
        action="store_true",
        help="reject when a selected row is decorative in the parent (oracle-gate vet), "
        "or has no vet result for the parent's content",
    )
    check_parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up with exit 2 after this long (default {DEFAULT_TIMEOUT:g})",
    )


def _lock_arguments(lock_parser: argparse.ArgumentParser) -> None:
    lock_parser.add_argument(
        "--write", action="store_true", help="rewrite the lockfiles (refused in CI and for agents)"
    )
    lock_parser.add_argument(
        "packages", nargs="*", metavar="PKG", help="package directories (default: all)"
    )
    lock_parser.add_argument(
        "--matrix",
        metavar="FILE",
        help="the one PKG's matrix as JSON in the invariants.yaml schema, instead of its "
        "invariants.yaml (a Bazel gate builds it as bazel-bin/PKG/<name>.matrix.json)",
    )
    lock_parser.add_argument(
        "--label", help="name the package by this Bazel target in messages and JUnit"
    )
    lock_parser.add_argument(
        "--ledgers", action="store_true", help="also check that the packages' ledgers parse"
    )
    lock_parser.add_argument(
        "--rows",
        action="store_true",
        help="also run the rows' one-tree checks: seeds, known-bad seeds, partitions, properties",
    )
    lock_parser.add_argument(
        "--junit", metavar="FILE", help="also write the results as JUnit XML ($XML_OUTPUT_FILE)"
    )


def _note_arguments(note_parser: argparse.ArgumentParser) -> None:
    note_parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="changed oracle files (fixtures, tests, ...)"
    )
    note_parser.add_argument("--reason", required=True, help="why the oracle changed")


def _select_arguments(select_parser: argparse.ArgumentParser) -> None:
    _add_range(select_parser)
    select_parser.add_argument(
        "--explain", action="store_true", help="print the dependency path that selected each row"
    )
    select_parser.add_argument(
        "--bazel-targets",
        metavar="FILE",
        help="write the selected gate targets, for bazel test --target_pattern_file=FILE",
    )
    _add_graph(select_parser)


def _propose_arguments(parser: argparse.ArgumentParser) -> None:
    _add_range(parser)
    _adder("propose", "add_propose_arguments")(parser)


def _adder(module: str, function: str) -> Callable[[argparse.ArgumentParser], None]:
    """The options a command's own module adds (``add_init_arguments``...)."""

    def add(parser: argparse.ArgumentParser) -> None:
        cast("Callable[[argparse.ArgumentParser], None]", getattr(_module(module), function))(
            parser
        )

    return add


# Command -> (help, whether it takes --repo, what adds its options, its module and function).
_COMMANDS: dict[str, tuple[str, bool, Callable[[argparse.ArgumentParser], None], str, str]] = {
    "check": (
        "run the gate on the patch from --base to --head",
        True,
        _check_arguments,
        "check",
        "cmd_check",
    ),
    "lock": (
        "verify oracle_gate.lock files against the tree, or rewrite them",
        True,
        _lock_arguments,
        "lock",
        "cmd_lock",
    ),
    "note": (
        "a human notes oracle changes: one ORACLE_CHANGELOG.md line per path",
        True,
        _note_arguments,
        "note",
        "cmd_note",
    ),
    "select": (
        "print the packages and rows the patch from --base can break",
        True,
        _select_arguments,
        "select",
        "cmd_select",
    ),
    "init": (
        "scaffold a package (invariants.yaml, property stubs, empty ledgers), or --root",
        True,
        _adder("init", "add_init_arguments"),
        "init",
        "cmd_init",
    ),
    "explain": (
        "one path's lane, package and rows, the rule that decided it, what to do",
        True,
        _adder("explain", "add_explain_arguments"),
        "explain",
        "cmd_explain",
    ),
    "freeze": (
        "freeze, extend or thaw a flaky test in flake_freeze.yaml (humans only)",
        False,
        _adder("ledgers", "add_freeze_arguments"),
        "ledgers",
        "cmd_freeze",
    ),
    "seeds": (
        "list the seeds.jsonl counterexamples, or retire one",
        False,
        _adder("ledgers", "add_seeds_arguments"),
        "ledgers",
        "cmd_seeds",
    ),
    "vet": (
        "score each row against mutants of the code it guards; decorative rows kill none",
        True,
        _adder("vet", "add_vet_arguments"),
        "vet",
        "cmd_vet",
    ),
    "propose": (
        "draft assumption rows (status: proposed) from the diff, for a human to review",
        True,
        _propose_arguments,
        "propose",
        "cmd_propose",
    ),
    "demo": (
        "run the gate on the embedded example monorepo with sample agent patches",
        False,
        _add_output,
        "demo",
        "cmd_demo",
    ),
}


class _Version(argparse.Action):
    """``--version``, which looks the version up only when asked (it costs 30 ms)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"oracle-gate {oracle_gate.__version__}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; given the ``command`` that runs, only its options are built
    (each command's options may import its module: see ``_module``)."""
    parser = argparse.ArgumentParser(
        prog="oracle-gate",
        description="Merge gate for AI-agent patches: did the oracle move, do the invariants hold?",
    )
    parser.add_argument("-V", "--version", action=_Version, nargs=0, help="show the version")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (text, repo, add_options, _, _) in _COMMANDS.items():
        if repo:
            sub = commands.add_parser(name, help=text, description=text)
            sub.add_argument(
                "--repo", help="repository directory (default: the enclosing git repo)"
            )
        else:
            sub = commands.add_parser(name, help=text)
        if command is None or command == name:
            add_options(sub)
    return parser


def _command_word(words: Sequence[str]) -> str | None:
    """The command ``words`` name, if the first word that is no option is one."""
    for word in words:
        if not word.startswith("-"):
            return word if word in _COMMANDS else None
    return None


def _run(args: argparse.Namespace) -> int:
    _, _, _, module, function = _COMMANDS[args.command]
    command = cast(Command, getattr(_module(module), function))
    return command(args)


def _take_debug(argv: list[str]) -> bool:
    """Remove every ``--debug`` before ``--`` from ``argv``; was there one?

    ``--debug`` is accepted anywhere on the command line, before or after the
    command, so it is taken out before argparse sees the subcommand's options.
    """
    end = argv.index("--") if "--" in argv else len(argv)
    found = "--debug" in argv[:end]
    argv[:end] = [word for word in argv[:end] if word != "--debug"]
    return found


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def entry() -> int:
    """The ``oracle-gate`` program and ``python -m oracle_gate``: ``main``, in its own process.

    Reading a large monorepo's graph allocates millions of long-lived objects
    and frees few, so the cyclic collector would only rescan them, and once
    more at exit: off, a cold ``select`` on the 20,000-package bench takes
    about 4.2 s of CPU instead of 5.6 s (docs/selection.md). A command is one
    short process; what little cyclic garbage it makes goes when it exits.
    ``main`` itself leaves the collector alone, for callers in a process of theirs.

    For the same reason the process ends with ``os._exit`` once the output is
    flushed: tearing down what a command read (``keep_until_exit``) would only
    free it object by object. Commands clean up in ``finally`` blocks, never at exit.
    """
    gc.disable()
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # as in ``main``: the output was cut short, no verdict
        code = ExitCode.GATE_ERROR
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns 0 merge, 1 reject, 2 gate error, 130 interrupted."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        # A reason may quote text the patched code chose, lone surrogates included.
        sys.stdout.reconfigure(errors="backslashreplace")
    words = list(sys.argv[1:] if argv is None else argv)
    debug = _take_debug(words)
    args = build_parser(_command_word(words)).parse_args(words)
    args.debug = debug or args.debug
    try:
        backend.name()  # an unusable ORACLE_GATE_IMPL is a gate error before any work
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader went away (``| head -1``): the output is cut short, so this
        # is no verdict; exit 2 without a message, since nobody reads it.
        _silence_stdout()
        return ExitCode.GATE_ERROR
    except GateError as error:
        print(f"oracle-gate: error: {error}", file=sys.stderr)
        return ExitCode.GATE_ERROR
    except OSError as error:
        # The machine refused (a read-only or full disk, a name too long): no bug of ours.
        print(f"oracle-gate: error: {fault(error, 'go on')}", file=sys.stderr)
        return ExitCode.GATE_ERROR
    except KeyboardInterrupt:
        print("oracle-gate: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as error:  # the gate fails closed on its own bugs too
        print(f"oracle-gate: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        if args.debug:
            traceback.print_exc()
        return ExitCode.GATE_ERROR
