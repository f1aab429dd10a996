"""``oracle-gate check``: the whole gate on one patch; prints the report, returns its exit code."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from oracle_gate.cli.common import repo_root, today
from oracle_gate.errors import ConfigError
from oracle_gate.formats import FORMATS
from oracle_gate.gate import check
from oracle_gate.repo.merge_queue import base_from_environment
from oracle_gate.report import Report

__all__ = ["add_output_files", "cmd_check"]


def add_output_files(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="FORMAT:FILE",
        type=_output,
        help=f"also write the report as FORMAT ({', '.join(sorted(FORMATS))}) to FILE; "
        "repeatable, so one run feeds JUnit, SARIF and a job summary",
    )


def _output(text: str) -> tuple[str, str]:
    format, _, file = text.partition(":")
    if format not in FORMATS or not file:
        raise argparse.ArgumentTypeError(
            f"expected FORMAT:FILE with FORMAT one of {', '.join(sorted(FORMATS))}, found {text!r}"
        )
    return format, file


def _write_outputs(outputs: list[tuple[str, str]], report: Report) -> None:
    for format, file in outputs:
        try:
            Path(file).write_text(FORMATS[format](report), encoding="utf-8")
        except OSError as error:
            raise ConfigError(
                f"cannot write the {format} report ({error.strerror})", file
            ) from None


def cmd_check(args: argparse.Namespace) -> int:
    repo = repo_root(args.repo)
    base = args.base or base_from_environment(os.environ)
    report = check(
        repo,
        base=base,
        head=args.head,
        today=today(args.today),
        write_seeds=args.write_seeds,
        graph=args.graph,
    )
    _write_outputs(args.output, report)
    sys.stdout.write(FORMATS[args.format](report))
    return report.exit_code
