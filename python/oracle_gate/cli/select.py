"""``oracle-gate select``: the packages and rows a patch can break, and why."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

from oracle_gate.bazel.labels import WORKSPACE_MARKERS
from oracle_gate.cli.common import keep_until_exit, repo_root, today
from oracle_gate.errors import ConfigError
from oracle_gate.model import ExitCode
from oracle_gate.pipeline import Request, stage
from oracle_gate.repo.merge_queue import base_from_environment
from oracle_gate.select import Selected, Selection, describe_chain

__all__ = ["cmd_select"]


def _affected_kind(repo: Path, selection: Selection) -> str:
    """What the affected graph nodes are called: Bazel wording only in a Bazel workspace."""
    bazel = any((repo / marker).is_file() for marker in WORKSPACE_MARKERS) or any(
        package.target for package in selection.packages
    )
    return "Bazel/matrix package(s)" if bazel else "package(s) (dependents included)"


def _print_selection(repo: Path, selection: Selection, explain: bool) -> None:
    # One write: a monorepo selection is tens of thousands of lines.
    print("\n".join(_selection_lines(repo, selection, explain)))


def _selection_lines(repo: Path, selection: Selection, explain: bool) -> Iterator[str]:
    rows_by_package: dict[str, list[Selected]] = {}
    for selected in selection.rows:
        rows_by_package.setdefault(selected.package, []).append(selected)
    yield (
        f"selected {len(selection.packages)} package(s), {len(selection.rows)} row(s); "
        f"{len(selection.affected)} {_affected_kind(repo, selection)} affected"
    )
    for why in selection.why_packages:
        name = why.package or "."
        rows = rows_by_package.get(why.package, [])
        if not rows:
            yield f"{name}  (no rows: lock and ledgers are checked)"
            if explain:
                yield f"    why: {describe_chain(why)}"
        for selected in rows:
            yield f"{name}  {selected.row_id}"
            if explain:
                yield f"    why: {describe_chain(selected)}"
    for path in selection.unmeasured:
        yield f"unmeasured {path}: no row guards it (check rejects it)"
    if selection.approximate:
        # Over-approximation selects more, never less; --explain says where and why.
        yield (
            f"the package graph is approximate in {len(selection.approximate)} place(s) "
            "(edges assumed where BUILD files were not evaluated; --explain lists them)"
        )
        if explain:
            for place in selection.approximate:
                yield f"    approximate: {place}"


def cmd_select(args: argparse.Namespace) -> int:
    repo = repo_root(args.repo)
    base = args.base or base_from_environment(os.environ)
    staged = stage(Request(repo, base, args.head, today(None), args.graph))
    keep_until_exit(staged.facts)
    selection = staged.selection
    _print_selection(repo, selection, explain=args.explain)
    if args.bazel_targets:
        targets = selection.targets
        try:
            Path(args.bazel_targets).write_text("".join(f"{t}\n" for t in targets))
        except OSError as error:
            raise ConfigError(f"cannot write ({error.strerror})", args.bazel_targets) from error
        print(f"wrote {len(targets)} gate target(s) to {args.bazel_targets}")
    return ExitCode.MERGE
