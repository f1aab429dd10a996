"""``oracle-gate propose``: draft assumption rows from the diff (a human's command)."""

from __future__ import annotations

import argparse
import os

from oracle_gate.cli.common import refuse_unless_human, repo_root
from oracle_gate.model import ExitCode
from oracle_gate.propose.run import propose
from oracle_gate.repo.merge_queue import base_from_environment

__all__ = ["add_propose_arguments", "cmd_propose"]


def add_propose_arguments(parser: argparse.ArgumentParser) -> None:
    """What propose adds to ``--base``/``--head`` (the parser's, as check's)."""
    parser.add_argument(
        "--proposer",
        metavar="CMD",
        help="also pipe the diff to CMD and take the YAML items it prints (symbol, "
        "precondition, evidence), under the same checks",
    )


def cmd_propose(args: argparse.Namespace) -> int:
    refuse_unless_human("propose")
    repo = repo_root(args.repo)
    base = args.base or base_from_environment(os.environ)
    result = propose(repo, base=base, head=args.head, proposer=args.proposer)
    for path, item in result.written:
        print(f"proposed {path}: {item['id']} {item['symbol']}: {item['precondition']}")
        print(f"    evidence: {item['evidence']}")
    for candidate, why in result.discarded:
        shown = candidate.symbol or "(no symbol)"
        print(f"discarded {shown} ({candidate.source}): {why}")
    if not result.written:
        print("no new candidate rows")
    else:
        print(
            "review each row: accept it (status: accepted) with a boundary or invalid "
            "partition row that tests it, or reject it (status: rejected); then "
            "oracle-gate lock --write"
        )
    return ExitCode.MERGE
