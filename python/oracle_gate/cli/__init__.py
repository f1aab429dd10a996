"""The ``oracle-gate`` command line: argparse and dispatch; one module per command in this package.

Commands print and return exit codes; ``main`` is the only place that turns
errors into exit codes.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from oracle_gate import __version__, backend
from oracle_gate.cli.check import DEFAULT_TIMEOUT, add_output_files, cmd_check
from oracle_gate.cli.demo import cmd_demo
from oracle_gate.cli.explain import add_explain_arguments, cmd_explain
from oracle_gate.cli.init import add_init_arguments, cmd_init
from oracle_gate.cli.ledgers import add_freeze_arguments, add_seeds_arguments, cmd_freeze, cmd_seeds
from oracle_gate.cli.lock import cmd_lock
from oracle_gate.cli.note import cmd_note
from oracle_gate.cli.select import cmd_select
from oracle_gate.cli.terminal import COLOR_CHOICES
from oracle_gate.errors import GateError
from oracle_gate.formats import FORMATS
from oracle_gate.graph import GRAPH_MODES
from oracle_gate.model import ExitCode

__all__ = ["entry", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oracle-gate",
        description="Merge gate for AI-agent patches: did the oracle move, do the invariants hold?",
    )
    parser.add_argument("-V", "--version", action="version", version=f"oracle-gate {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.add_argument("--repo", help="repository directory (default: the enclosing git repo)")
        return sub

    def add_range(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--base", help="last trusted commit (default: from the merge queue's environment)"
        )
        sub.add_argument("--head", default="HEAD", help="the patched commit (default: HEAD)")

    def add_output(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--format", choices=sorted(FORMATS), default="text")
        sub.add_argument("--today", help="judge freeze expiry as of this YYYY-MM-DD date")
        sub.add_argument(
            "--color",
            choices=COLOR_CHOICES,
            default="auto",
            help="colour the verdicts of the text report (auto: on a terminal, unless NO_COLOR)",
        )

    def add_graph(sub: argparse.ArgumentParser) -> None:
        # check and select take the same graph, so what select prints is what check runs.
        sub.add_argument(
            "--graph",
            choices=GRAPH_MODES,
            default="static",
            help="static: read BUILD files without Bazel (default); bazel: edges from bazel query",
        )

    check_parser = add("check", "run the gate on the patch from --base to --head")
    add_range(check_parser)
    add_output(check_parser)
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
    add_graph(check_parser)
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
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up with exit 2 after this long (default {DEFAULT_TIMEOUT:g})",
    )

    lock_parser = add("lock", "verify oracle_gate.lock files against the tree, or rewrite them")
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

    note_parser = add("note", "a human notes oracle changes: one ORACLE_CHANGELOG.md line per path")
    note_parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="changed oracle files (fixtures, tests, ...)"
    )
    note_parser.add_argument("--reason", required=True, help="why the oracle changed")

    select_parser = add("select", "print the packages and rows the patch from --base can break")
    add_range(select_parser)
    select_parser.add_argument(
        "--explain", action="store_true", help="print the dependency path that selected each row"
    )
    select_parser.add_argument(
        "--bazel-targets",
        metavar="FILE",
        help="write the selected gate targets, for bazel test --target_pattern_file=FILE",
    )
    add_graph(select_parser)

    add_init_arguments(
        add(
            "init", "scaffold a package (invariants.yaml, property stubs, empty ledgers), or --root"
        )
    )
    add_explain_arguments(
        add("explain", "one path's lane, package and rows, the rule that decided it, what to do")
    )
    add_freeze_arguments(
        commands.add_parser(
            "freeze", help="freeze, extend or thaw a flaky test in flake_freeze.yaml (humans only)"
        )
    )
    add_seeds_arguments(
        commands.add_parser("seeds", help="list the seeds.jsonl counterexamples, or retire one")
    )

    demo_parser = commands.add_parser(
        "demo", help="run the gate on the embedded example monorepo with sample agent patches"
    )
    add_output(demo_parser)
    return parser


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": cmd_check,
    "lock": cmd_lock,
    "note": cmd_note,
    "demo": cmd_demo,
    "select": cmd_select,
    "init": cmd_init,
    "explain": cmd_explain,
    "freeze": cmd_freeze,
    "seeds": cmd_seeds,
}


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
    """
    gc.disable()
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns 0 merge, 1 reject, 2 gate error, 130 interrupted."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        # A reason may quote text the patched code chose, lone surrogates included.
        sys.stdout.reconfigure(errors="backslashreplace")
    words = list(sys.argv[1:] if argv is None else argv)
    debug = _take_debug(words)
    args = build_parser().parse_args(words)
    args.debug = debug or args.debug
    try:
        backend.name()  # an unusable ORACLE_GATE_IMPL is a gate error before any work
        code = COMMANDS[args.command](args)
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
    except KeyboardInterrupt:
        print("oracle-gate: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as error:  # the gate fails closed on its own bugs too
        print(f"oracle-gate: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        if args.debug:
            traceback.print_exc()
        return ExitCode.GATE_ERROR
