"""``oracle-gate lock``: verify each package's oracle_gate.lock against the tree, or rewrite it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oracle_gate.cli.bazel_gate import (
    ledger_cases,
    manifest_package,
    package_dir,
    row_cases,
    write_junit,
)
from oracle_gate.cli.common import refuse_unless_human, repo_root
from oracle_gate.config.lockfile import CURRENT
from oracle_gate.errors import ConfigError, GateError, fault
from oracle_gate.formats.junit import Case
from oracle_gate.graph import PackageGraph, load_packages
from oracle_gate.locks import LockStatus, lock_statuses, write_locks
from oracle_gate.model import ExitCode, Package
from oracle_gate.repo.trees import WorkTree

__all__ = ["cmd_lock"]


def _lock_targets(
    repo: Path, graph: PackageGraph, names: list[str], against: Path
) -> list[Package]:
    if not names:
        return [graph.packages[path] for path in sorted(graph.packages)]
    return [graph.resolve(package_dir(repo, name, against)) for name in names]


def _older_lines(status: LockStatus) -> list[str]:
    """What verifying a lock an older oracle-gate wrote says beyond drift: who wrote it, the
    entries the algorithm moved, those no history explains."""
    stored = status.stored
    if stored is None or stored.current:
        return []
    directory = status.package.path or "."
    relock = f"'oracle-gate lock --write {directory}'"
    lines = [
        f"note {status.lock_path}: written by {stored.writer()}, not this oracle-gate "
        f"({CURRENT.describe()}); relock with {relock} at your convenience"
    ]
    for drift in status.stale:
        path = status.package.join(drift.key)
        lines.append(f"stale {path}: {drift.section} entry {drift.kind.value} by the algorithm, "
                     "not by the tree (not drift)")  # fmt: skip
    for drift in status.unknown:
        path = status.package.join(drift.key)
        lines.append(
            f"FAIL {path}: {drift.section} entry {drift.kind.value}, and no git history tells "
            f"whether the algorithm or the tree moved it; run {relock}"
        )
    return lines


def lock_cases(
    statuses: list[LockStatus], label: str | None
) -> tuple[list[tuple[str, str]], list[Case]]:
    """Printed lines (stream, text) and JUnit cases for verified locks."""
    lines: list[tuple[str, str]] = []
    cases: list[Case] = []
    for status in statuses:
        classname = label or status.package.path or "."
        directory = status.package.path or "."
        if status.missing:
            if label:
                fix = (
                    f"bazel build {label} && oracle-gate lock --write --matrix "
                    f"bazel-bin/{directory}/{label.rpartition(':')[2]}.matrix.json {directory}"
                )
                text = f"FAIL: {label}: {status.lock_path} is missing; a human writes it: {fix}"
            else:
                text = f"MISSING {status.lock_path}: run 'oracle-gate lock --write {directory}'"
            lines.append(("out", text))
            missing = f"{status.lock_path} is missing"
            cases.append(Case(classname, status.lock_path, failure=missing))
        lines += [("out", line) for line in _older_lines(status)]
        for drift in status.unknown:
            why = "written by an older oracle-gate; relock it"
            cases.append(Case(classname, status.package.join(drift.key), failure=why))
        for drift in status.drifts:
            path = status.package.join(drift.key)
            what = "fixture" if drift.section == "fixtures" else "assertion surface of test unit"
            since = f"{drift.kind.value} since {status.lock_path} was written"
            if label:
                lines.append(("out", f"FAIL: {label}: {path}: {what} {since}"))
            else:
                lines.append(("out", f"FAIL {path}: {drift.section} entry {since}"))
            cases.append(Case(classname, path, failure=f"{what} {since}"))
        if not status.missing and not status.drifts and not status.unknown:
            lines.append(("out", f"ok {status.lock_path}"))
            cases.append(Case(classname, status.lock_path))
    return lines, cases


def cmd_lock(args: argparse.Namespace) -> int:
    if args.write:
        refuse_unless_human("lock --write")
        if args.junit:
            raise ConfigError("--junit reports a verification; it cannot be used with --write")
    try:
        repo = repo_root(args.repo)
        # --matrix comes from a Bazel gate, which runs on its runfiles tree.
        tree = WorkTree(repo, runfiles=bool(args.matrix))
        # PKG names a directory of --repo DIR when it is given, else of the current one.
        against = repo if args.repo else Path.cwd()
        if args.matrix:
            graph, packages = manifest_package(repo, args.matrix, args.packages, against)
        else:
            graph = PackageGraph(load_packages(tree))
            packages = _lock_targets(repo, graph, args.packages, against)
        if args.write:
            try:
                for path in write_locks(tree, graph, packages):
                    print(f"wrote {path}")
            except OSError as error:
                raise fault(error, "write the lock", str(repo)) from None
            return ExitCode.MERGE
        lines, cases = lock_cases(lock_statuses(tree, graph, packages), args.label)
        if args.ledgers:
            more_lines, more_cases = ledger_cases(tree, packages, args.label)
            lines += more_lines
            cases += more_cases
        if args.rows:
            more_lines, more_cases = row_cases(repo, tree, packages, args.label)
            lines += more_lines
            cases += more_cases
    except GateError as error:
        # Bazel shows the JUnit; it should say why the checks could not run.
        where = args.label or "oracle-gate lock"
        write_junit(args.junit, args.label, [Case(where, error.path or where, error=str(error))])
        raise
    for stream, text in lines:
        print(text, file=sys.stderr if stream == "err" else sys.stdout)
    write_junit(args.junit, args.label, cases)
    if any(case.error is not None for case in cases):
        return ExitCode.GATE_ERROR
    if any(case.failure is not None for case in cases):
        return ExitCode.REJECT
    return ExitCode.MERGE
