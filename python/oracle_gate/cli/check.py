"""``oracle-gate check``: the whole gate on one patch; prints the report, returns its exit code."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from oracle_gate.cli.common import repo_root, today
from oracle_gate.cli.terminal import progress_on_tty, styled
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
        isinstance(item, str) and item.strip() for item in document
    ):
        raise ConfigError("must be a JSON list of reviewer handles or emails", path)
    return tuple(document)


def cmd_check(args: argparse.Namespace) -> int:
    repo = repo_root(args.repo)
    approvals = read_approvals(args.approvals)
    base = args.base or base_from_environment(os.environ)
    with progress_on_tty():
        report = check(
            repo,
            base=base,
            head=args.head,
            today=today(args.today),
            write_seeds=args.write_seeds,
            graph=args.graph,
            approvals=approvals,
            replay=not args.no_replay,
        )
    _write_outputs(args.output, report)
    sys.stdout.write(styled(FORMATS[args.format](report), args.format, args.color))
    return report.exit_code
