"""``oracle-gate check``: the whole gate on one patch; prints the report, returns its exit code."""

from __future__ import annotations

import argparse
import os
import sys

from oracle_gate.cli.common import repo_root, today
from oracle_gate.formats import FORMATS
from oracle_gate.gate import check
from oracle_gate.repo.merge_queue import base_from_environment

__all__ = ["cmd_check"]


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
    sys.stdout.write(FORMATS[args.format](report))
    return report.exit_code
