"""The ``oracle-gate`` command line: argparse, dispatch, and the only place that prints or exits."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from oracle_gate import __version__, backend
from oracle_gate.config.ledgers import (
    ASSUMPTIONS_FILE,
    FREEZE_FILE,
    SEEDS_FILE,
    parse_assumptions,
    parse_freeze,
    parse_seeds,
)
from oracle_gate.config.matrix import parse_matrix
from oracle_gate.demo import run_demo
from oracle_gate.errors import ConfigError, GateError, GitError, RefusedError
from oracle_gate.formats import FORMATS
from oracle_gate.formats.junit import Case, render_suite
from oracle_gate.gate import check
from oracle_gate.graph import GRAPH_MODES, PackageGraph, load_packages
from oracle_gate.locks import LockStatus, lock_statuses, write_locks
from oracle_gate.model import ExitCode, Package, Verdict
from oracle_gate.repo.git import git
from oracle_gate.repo.merge_queue import base_from_environment
from oracle_gate.repo.trees import WorkTree
from oracle_gate.runtime.judge import RowEnv, judge_rows
from oracle_gate.select import Selected, Selection, describe_chain, select_diff

__all__ = ["main"]


def _repo_root(given: str | None) -> Path:
    """The repository's top directory: ``--repo`` as given, else git's, else the current one."""
    if given:
        if not Path(given).is_dir():
            raise ConfigError("repository directory does not exist", given)
        return Path(given).resolve()
    try:
        return Path(git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    except GitError:
        return Path.cwd()


def _today(value: str | None) -> datetime.date:
    if value is None:
        return datetime.date.today()
    try:
        return datetime.date.fromisoformat(value)
    except ValueError as error:
        raise ConfigError(f"--today must be a YYYY-MM-DD date, found {value!r}") from error


def cmd_check(args: argparse.Namespace) -> int:
    repo = _repo_root(args.repo)
    base = args.base or base_from_environment(os.environ)
    report = check(repo, base=base, head=args.head, today=_today(args.today))
    sys.stdout.write(FORMATS[args.format](report))
    return report.exit_code


def _package_dir(repo: Path, name: str) -> str:
    """The repo-relative directory of ``name`` (relative to the current directory).

    Raises:
        ConfigError: it is not a directory inside ``repo``.
    """
    absolute = (Path.cwd() / name).resolve()
    if not absolute.is_dir():
        raise ConfigError("package directory does not exist", name)
    try:
        relative = absolute.relative_to(repo.resolve()).as_posix()
    except ValueError:
        raise ConfigError(f"is outside the repository {repo}", name) from None
    return "" if relative == "." else relative


def _lock_targets(repo: Path, graph: PackageGraph, names: list[str]) -> list[Package]:
    if not names:
        return [graph.packages[path] for path in sorted(graph.packages)]
    return [graph.resolve(_package_dir(repo, name)) for name in names]


def _manifest_package(
    repo: Path, manifest: str, names: list[str]
) -> tuple[PackageGraph, list[Package]]:
    """The one package ``lock --matrix`` checks, with the matrix a Bazel gate target built.

    Raises:
        ConfigError: more than one PKG, an unreadable manifest, or one that
            breaks the invariants.yaml schema.
    """
    if len(names) > 1:
        raise ConfigError("--matrix describes one package; name at most one PKG")
    directory = _package_dir(repo, names[0] if names else ".")
    try:
        text = Path(manifest).read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read the matrix manifest ({error.strerror})", manifest) from None
    # A Bazel gate's deps are other gate targets, which Bazel has already
    # resolved; their matrices are not here and the lock never depends on them.
    matrix = dataclasses.replace(parse_matrix(text, manifest), deps=())
    package = Package(path=directory, matrix=matrix)
    return PackageGraph({directory: package}), [package]


def _refuse_write() -> None:
    if os.environ.get("CI"):
        raise RefusedError("lock --write is refused where CI is set: locks are written by humans")
    if os.environ.get("ORACLE_GATE_ROLE") == "agent":
        raise RefusedError(
            "lock --write is refused for ORACLE_GATE_ROLE=agent: "
            "the oracle is not the agent's to move"
        )


def _lock_cases(
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
        for drift in status.drifts:
            path = status.package.join(drift.key)
            what = "fixture" if drift.section == "fixtures" else "assertion surface of test unit"
            since = f"{drift.kind.value} since {status.lock_path} was written"
            if label:
                lines.append(("out", f"FAIL: {label}: {path}: {what} {since}"))
            else:
                lines.append(("out", f"FAIL {path}: {drift.section} entry {since}"))
            cases.append(Case(classname, path, failure=f"{what} {since}"))
        if not status.missing and not status.drifts:
            lines.append(("out", f"ok {status.lock_path}"))
            cases.append(Case(classname, status.lock_path))
    return lines, cases


def _ledger_cases(
    tree: WorkTree, packages: list[Package], label: str | None
) -> tuple[list[tuple[str, str]], list[Case]]:
    """Printed lines and JUnit cases for each ledger the packages hold: does it parse?"""
    parsers: tuple[tuple[str, Callable[[bytes, str], object]], ...] = (
        (SEEDS_FILE, parse_seeds),
        (FREEZE_FILE, parse_freeze),
        (ASSUMPTIONS_FILE, parse_assumptions),
    )
    lines: list[tuple[str, str]] = []
    cases: list[Case] = []
    for package in packages:
        classname = label or package.path or "."
        for name, parse in parsers:
            path = package.join(name)
            if not (tree.root / path).is_file():
                continue
            try:
                parse(tree.read(path), path)
            except GateError as error:
                prefix = f"ERROR: {label}: " if label else "oracle-gate: error: "
                lines.append(("err", f"{prefix}{error}"))
                cases.append(Case(classname, path, error=str(error)))
            else:
                lines.append(("out", f"ok {path}"))
                cases.append(Case(classname, path))
    return lines, cases


def _row_cases(
    repo: Path, tree: WorkTree, packages: list[Package], label: str | None
) -> tuple[list[tuple[str, str]], list[Case]]:
    """Printed lines and JUnit cases for the rows' checks that need only this tree.

    Relations compare parent and head, so only ``check`` runs them; new
    counterexamples are reported, never appended, since this tree is not a
    working copy (it may be Bazel's read-only runfiles).
    """
    env = RowEnv(
        head=tree,
        head_dir=repo,
        parent_dir=None,
        parent_packages=frozenset(),
        today=_today(None),
        seed_sink=None,
        head_name="this tree",
    )
    findings, _ = judge_rows([(p, row) for p in packages for row in p.matrix.rows], env)
    lines: list[tuple[str, str]] = []
    cases: list[Case] = []
    for finding in findings:
        name = f"{finding.path} [{finding.row}]" if finding.row else str(finding.path)
        if finding.verdict is Verdict.REJECT:
            prefix = f"FAIL: {label}: " if label else "FAIL "
            lines.append(("err", f"{prefix}{name}: {finding.reason}"))
            cases.append(Case(label or finding.package or ".", name, failure=finding.reason))
        else:
            lines.append(("out", f"ok {name}: {finding.reason}"))
            cases.append(Case(label or finding.package or ".", name))
    return lines, cases


def _write_junit(path: str | None, label: str | None, cases: list[Case]) -> None:
    if path is None:
        return
    try:
        Path(path).write_text(render_suite(label or "oracle-gate lock", cases), encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot write JUnit ({error.strerror})", path) from None


def _print_selection(selection: Selection, explain: bool) -> None:
    rows_by_package: dict[str, list[Selected]] = {}
    for selected in selection.rows:
        rows_by_package.setdefault(selected.package, []).append(selected)
    print(
        f"selected {len(selection.packages)} package(s), {len(selection.rows)} row(s); "
        f"{len(selection.affected)} Bazel/matrix package(s) affected"
    )
    for why in selection.why_packages:
        name = why.package or "."
        rows = rows_by_package.get(why.package, [])
        if not rows:
            print(f"{name}  (no rows: lock and ledgers are checked)")
            if explain:
                print(f"    why: {describe_chain(why)}")
        for selected in rows:
            print(f"{name}  {selected.row_id}")
            if explain:
                print(f"    why: {describe_chain(selected)}")
    for path in selection.unmeasured:
        print(f"unmeasured {path}: no row guards it (check rejects it)")


def cmd_select(args: argparse.Namespace) -> int:
    repo = _repo_root(args.repo)
    base = args.base or base_from_environment(os.environ)
    selection = select_diff(repo, base=base, head=args.head, today=_today(None), graph=args.graph)
    _print_selection(selection, explain=args.explain)
    if args.bazel_targets:
        targets = selection.targets
        try:
            Path(args.bazel_targets).write_text("".join(f"{t}\n" for t in targets))
        except OSError as error:
            raise ConfigError(f"cannot write ({error.strerror})", args.bazel_targets) from error
        print(f"wrote {len(targets)} gate target(s) to {args.bazel_targets}")
    return ExitCode.MERGE


def cmd_lock(args: argparse.Namespace) -> int:
    if args.write:
        _refuse_write()
        if args.junit:
            raise ConfigError("--junit reports a verification; it cannot be used with --write")
    try:
        repo = _repo_root(args.repo)
        tree = WorkTree(repo)
        if args.matrix:
            graph, packages = _manifest_package(repo, args.matrix, args.packages)
        else:
            graph = PackageGraph(load_packages(tree))
            packages = _lock_targets(repo, graph, args.packages)
        if args.write:
            for path in write_locks(tree, graph, packages):
                print(f"wrote {path}")
            return ExitCode.MERGE
        lines, cases = _lock_cases(lock_statuses(tree, graph, packages), args.label)
        if args.ledgers:
            ledger_lines, ledger_cases = _ledger_cases(tree, packages, args.label)
            lines += ledger_lines
            cases += ledger_cases
        if args.rows:
            row_lines, row_cases = _row_cases(repo, tree, packages, args.label)
            lines += row_lines
            cases += row_cases
    except GateError as error:
        # Bazel shows the JUnit; it should say why the checks could not run.
        where = args.label or "oracle-gate lock"
        _write_junit(args.junit, args.label, [Case(where, error.path or where, error=str(error))])
        raise
    for stream, text in lines:
        print(text, file=sys.stderr if stream == "err" else sys.stdout)
    _write_junit(args.junit, args.label, cases)
    if any(case.error is not None for case in cases):
        return ExitCode.GATE_ERROR
    if any(case.failure is not None for case in cases):
        return ExitCode.REJECT
    return ExitCode.MERGE


def cmd_demo(args: argparse.Namespace) -> int:
    outcomes = run_demo(today=_today(args.today))
    all_expected = True
    for outcome in outcomes:
        print(f"=== patch: {outcome.name} — {outcome.description}")
        print(f"    expected {outcome.expected.value}, gate says {outcome.report.verdict.value}")
        sys.stdout.write(FORMATS[args.format](outcome.report))
        print()
        all_expected &= outcome.report.verdict is outcome.expected
    rejected = sum(o.report.exit_code == ExitCode.REJECT for o in outcomes)
    print(
        f"demo: {len(outcomes)} agent patches, {rejected} rejected, "
        f"{len(outcomes) - rejected} merged; every verdict as expected: {all_expected}"
    )
    return ExitCode.MERGE if all_expected else ExitCode.REJECT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oracle-gate",
        description="Merge gate for AI-agent patches: did the oracle move, do the invariants hold?",
    )
    parser.add_argument("--version", action="version", version=f"oracle-gate {__version__}")
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

    check_parser = add("check", "run the gate on the patch from --base to --head")
    add_range(check_parser)
    add_output(check_parser)

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
    select_parser.add_argument(
        "--graph",
        choices=GRAPH_MODES,
        default="static",
        help="static: read BUILD files without Bazel (default); bazel: edges from bazel query",
    )

    demo_parser = commands.add_parser(
        "demo", help="run the gate on the embedded example monorepo with sample agent patches"
    )
    add_output(demo_parser)
    return parser


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "check": cmd_check,
    "lock": cmd_lock,
    "demo": cmd_demo,
    "select": cmd_select,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns 0 merge, 1 reject, 2 gate error, 130 interrupted."""
    args = build_parser().parse_args(argv)
    try:
        backend.name()  # an unusable ORACLE_GATE_IMPL is a gate error before any work
        return COMMANDS[args.command](args)
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
