"""``oracle-gate vet``: score each row of a commit against mutants of the code it guards."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from oracle_gate.cli.bazel_gate import package_dir
from oracle_gate.cli.check import add_output_files, write_outputs
from oracle_gate.cli.common import repo_root, today
from oracle_gate.cli.terminal import progress_on_tty
from oracle_gate.model import ExitCode
from oracle_gate.vet.formats import VET_FORMATS
from oracle_gate.vet.run import VetOptions, vet

__all__ = ["add_vet_arguments", "cmd_vet"]

DEFAULT_PER_FUNCTION = 10


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, found {text!r}")
    return value


def add_vet_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "packages", nargs="*", metavar="PKG", help="package directories (default: all)"
    )
    parser.add_argument("--rev", default="HEAD", help="the commit to vet (default: HEAD)")
    parser.add_argument(
        "--per-function",
        type=_positive,
        default=DEFAULT_PER_FUNCTION,
        metavar="N",
        help=f"at most N mutants of each function (default {DEFAULT_PER_FUNCTION})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="which mutants a function with more than N sites keeps (default 0)",
    )
    parser.add_argument(
        "--workers",
        type=_positive,
        default=min(4, os.cpu_count() or 1),
        metavar="N",
        help="mutants judged at once, each in a checkout of its own (default: CPUs, at most 4)",
    )
    parser.add_argument(
        "--function",
        action="append",
        default=[],
        metavar="NAME",
        help="only mutants of this function (qualified name: take, Codec.decode); repeatable; "
        "such a partial vet is not cached for check --require-vetted",
    )
    parser.add_argument("--format", choices=sorted(VET_FORMATS), default="text")
    add_output_files(parser, VET_FORMATS)
    parser.add_argument("--today", help="judge freeze expiry as of this YYYY-MM-DD date")


def cmd_vet(args: argparse.Namespace) -> int:
    repo = repo_root(args.repo)
    against = repo if args.repo else Path.cwd()
    options = VetOptions(
        rev=args.rev,
        packages=tuple(package_dir(repo, name, against) for name in args.packages),
        per_function=args.per_function,
        seed=args.seed,
        workers=args.workers,
        today=today(args.today),
        functions=tuple(args.function),
    )
    with progress_on_tty():
        report = vet(repo, options)
    write_outputs(args.output, lambda format: VET_FORMATS[format](report))
    sys.stdout.write(VET_FORMATS[args.format](report))
    return ExitCode.REJECT if report.decorative or report.failing else ExitCode.MERGE
