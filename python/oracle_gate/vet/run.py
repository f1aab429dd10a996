"""``vet()``: every row of the chosen packages of one commit, scored against its mutants.

The commit is read from git objects and checked out in temporary worktrees,
as ``check`` does; nothing is written to the working tree. One checkout stays
unmutated (the tree each row is compared with); each worker has one more,
writes a mutant over the guarded file, lets the row judge it and writes the
original back (``vet/workers.py``). Results go to the user's cache (``vet/store.py``).
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oracle_gate import progress
from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.lockfile import LOCK_FILE
from oracle_gate.config.settings import read_settings
from oracle_gate.errors import ConfigError, SurfaceError
from oracle_gate.gate import hash_base_of, hidden_paths, sandbox_runner
from oracle_gate.globs import matches_any
from oracle_gate.graph import PackageGraph, load_packages
from oracle_gate.model import Package, Row
from oracle_gate.repo.diff import resolve_commit
from oracle_gate.repo.trees import GitTree
from oracle_gate.runtime.judge import RowEnv
from oracle_gate.runtime.sandbox import Runner
from oracle_gate.runtime.sandbox.checkouts import Checkouts, checkouts, hide
from oracle_gate.vet.judge import Judged, Recorded, baseline, recorded_inputs
from oracle_gate.vet.mutants import Mutant, file_mutants
from oracle_gate.vet.results import MutantResult, Outcome, RowStatus, RowVet, VetReport
from oracle_gate.vet.store import row_key, save_row
from oracle_gate.vet.workers import Task, judge_all

__all__ = ["VetOptions", "guarded_files", "production_file", "vet"]

_NOT_PRODUCTION = (SEEDS_FILE, FREEZE_FILE, ASSUMPTIONS_FILE, LOCK_FILE)


@dataclass(frozen=True)
class VetOptions:
    """What ``vet`` judges and how.

    Attributes:
        rev: the commit to vet (any ref).
        packages: repo-relative package directories; empty for every package.
        per_function: at most this many mutants of each function.
        seed: which mutants a function with more sites than ``per_function`` keeps.
        workers: mutants judged at once, each in a checkout of its own.
        today: the date freeze expiries are judged against.
        functions: only mutants of these functions (qualified names, ``take`` or
            ``Codec.decode``); a vet of some functions is no row's whole score, so it
            is not filed in the cache for ``check --require-vetted``.
    """

    rev: str = "HEAD"
    packages: tuple[str, ...] = ()
    per_function: int = 10
    seed: int = 0
    workers: int = 2
    today: datetime.date = datetime.date(2000, 1, 1)
    functions: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Plan:
    """One row to vet: its package, its key, the mutants of what it guards."""

    package: Package
    row: Row
    key: str
    mutants: tuple[Mutant, ...]
    originals: dict[str, bytes]
    notes: tuple[str, ...]


def production_file(package: Package, relative: str) -> bool:
    """Whether the package-relative Python file is production code: not a test, test
    support, a fixture, an oracle module or a ledger."""
    matrix = package.matrix
    oracle = matrix.oracle_modules
    return (
        relative.endswith(".py")
        and not matches_any(relative, matrix.tests)
        and not matrix.is_fixture(relative)
        and not matrix.is_test_support(relative)
        and relative not in oracle
        and relative not in _NOT_PRODUCTION
    )


def guarded_files(tree: GitTree, package: Package, row: Row) -> list[str]:
    """The repo-relative production Python files ``row``'s globs guard in ``tree``
    (symbolic links left out: writing a mutant there would write through them)."""
    prefix = f"{package.path}/" if package.path else ""
    return [
        path
        for path in tree.files()
        if path.startswith(prefix)
        and not tree.is_link(path)
        and matches_any(package.relative(path), row.globs)
        and production_file(package, package.relative(path))
    ]


def _plan(
    tree: GitTree, graph: PackageGraph, package: Package, row: Row, options: VetOptions
) -> _Plan:
    mutants: list[Mutant] = []
    originals: dict[str, bytes] = {}
    notes: list[str] = []
    for path in guarded_files(tree, package, row):
        source = tree.read(path)
        try:
            found = file_mutants(
                path, source, options.per_function, options.seed, options.functions
            )
        except SurfaceError as error:
            # a row whose file Python cannot import fails as it is: mutants add nothing
            notes.append(f"{path}:{error.line or 1}: does not parse, so it has no mutants")
            continue
        originals[path] = source
        mutants += found
    key = row_key(tree, graph, package, row)
    return _Plan(package, row, key, tuple(mutants), originals, tuple(notes))


def _packages(graph: PackageGraph, names: tuple[str, ...]) -> list[Package]:
    if not names:
        return [graph.packages[path] for path in sorted(graph.packages)]
    chosen = []
    for name in names:
        if name not in graph.packages:
            raise ConfigError("is not a package of the vetted commit (no invariants.yaml)", name)
        chosen.append(graph.packages[name])
    return sorted(chosen, key=lambda p: p.path)


@contextlib.contextmanager
def _workspaces(repo: Path, commit: str, count: int) -> Iterator[list[Checkouts]]:
    """``count`` pairs of checkouts of ``commit``: the first pair's parent stays unmutated,
    each pair's head is one worker's."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(checkouts(repo, commit, commit)) for _ in range(count)]


def _env(
    tree: GitTree,
    graph: PackageGraph,
    runner: Runner,
    head_dir: Path,
    original: Path,
    today: datetime.date,
    kept: dict[str, dict[str, Any]] | None = None,
) -> RowEnv:
    return RowEnv(
        head=tree,
        head_dir=head_dir,
        parent_dir=original,
        parent_packages=frozenset(graph.packages),
        today=today,
        seed_sink=None,
        head_name="a mutant",
        freezes_from=tree,
        runner=runner,
        freezes_expire=True,
        deps={path: graph.dependencies(path) for path in graph.packages},
        first_reject=True,
        kept=kept,
    )


def _results(
    plan: _Plan, judged: dict[str, Judged], outcome: Judged | None = None
) -> tuple[MutantResult, ...]:
    """The plan's mutants with their verdicts (``outcome`` for every one, when given)."""
    results = []
    for mutant in plan.mutants:
        verdict = outcome or judged[plan.key + mutant.id]
        results.append(
            MutantResult(
                id=mutant.id,
                path=mutant.path,
                function=mutant.function,
                operator=mutant.operator,
                line=mutant.line,
                description=mutant.description,
                row=verdict.outcome,
                reason=verdict.reason,
                diff=mutant.diff(plan.originals[mutant.path]),
            )
        )
    return tuple(results)


def vet(repo: Path, options: VetOptions) -> VetReport:
    """Score each row of ``options.packages`` at ``options.rev`` against its mutants.

    Raises:
        GitError: the revision does not resolve.
        ConfigError: a named package is not one of the commit's, or an oracle
            file or reference is wrong (as ``check`` reports it).
        ConfigError, LedgerError, TreeError: the commit's gate files are invalid.
    """
    if options.per_function < 1 or options.workers < 1:
        raise ConfigError("--per-function and --workers must be at least 1")
    commit = resolve_commit(repo, options.rev)
    tree = GitTree(repo, commit)
    graph = PackageGraph(load_packages(tree))
    plans = [
        _plan(tree, graph, package, row, options)
        for package in _packages(graph, options.packages)
        for row in package.matrix.rows
    ]
    rows = _vet_plans(repo, tree, graph, plans, options)
    report = VetReport(commit, options.per_function, options.seed, rows)
    extra = {"commit": commit, "per_function": options.per_function, "seed": options.seed}
    for row in rows if not options.functions else ():
        save_row(repo, row, extra)
    return report


def _vet_plans(
    repo: Path, tree: GitTree, graph: PackageGraph, plans: list[_Plan], options: VetOptions
) -> tuple[RowVet, ...]:
    """Baseline each row on the unmutated tree, then judge every mutant of the rows that hold."""
    done: dict[str, RowVet] = {}
    runnable = [p for p in plans if p.mutants and _has_oracles(p.row)]
    for plan in plans:
        if not plan.mutants:
            done[plan.key] = _row(plan, RowStatus.NO_MUTANTS, ())
        elif not _has_oracles(plan.row):
            verdict = Judged(Outcome.SURVIVED, "the row has no property, partition or relation")
            done[plan.key] = _row(plan, RowStatus.SCORED, _results(plan, {}, verdict))
    if not runnable:
        return _ordered(plans, done)
    settings = read_settings(tree)
    workers = max(1, min(options.workers, sum(len(p.mutants) for p in runnable)))
    with _workspaces(repo, tree.commit, workers) as pairs:
        hidden = hidden_paths(tree, graph)
        for pair in pairs:
            hide(pair.parent, hidden)
            hide(pair.head, hidden)
        scratch = tuple(pair.head.parent for pair in pairs)
        runner = sandbox_runner(
            repo,
            tree,
            graph,
            scratch,
            settings,
            hash_base_of(tree.commit),
        )
        original = pairs[0].parent
        unmutated = _env(tree, graph, runner, original, original, options.today)
        tasks: list[Task] = []
        with progress.stage("running each row on the unmutated tree", len(runnable)):
            for plan in runnable:
                failing = baseline(plan.package, plan.row, unmutated)
                if failing is not None:
                    note = f"the row rejects the unmutated tree ({failing}); fix it, then vet"
                    done[plan.key] = replace(
                        _row(plan, RowStatus.FAILING, ()), notes=(*plan.notes, note)
                    )
                    continue
                recorded = recorded_inputs(plan.package, plan.row, unmutated)
                tasks += [_task(plan, mutant, recorded) for mutant in plan.mutants]
        # each worker keeps the unmutated tree's and the oracle tables' answers across its
        # mutants: they are the same for every one
        envs = [_env(tree, graph, runner, p.head, original, options.today, {}) for p in pairs]
        with progress.stage(f"judging {len(tasks)} mutants"):
            judged = judge_all(tasks, envs)
    for plan in runnable:
        if plan.key not in done:
            done[plan.key] = _row(plan, RowStatus.SCORED, _results(plan, judged))
    return _ordered(plans, done)


def _task(plan: _Plan, mutant: Mutant, recorded: Recorded) -> Task:
    return Task(
        key=plan.key + mutant.id,
        package=plan.package,
        row=plan.row,
        path=mutant.path,
        source=mutant.source,
        original=plan.originals[mutant.path],
        recorded=recorded,
    )


def _has_oracles(row: Row) -> bool:
    return bool(row.properties or row.partitions or row.relations)


def _row(plan: _Plan, status: RowStatus, mutants: tuple[MutantResult, ...]) -> RowVet:
    return RowVet(plan.package.path, plan.row.id, plan.key, status, mutants, plan.notes)


def _ordered(plans: list[_Plan], done: dict[str, RowVet]) -> tuple[RowVet, ...]:
    return tuple(sorted((done[plan.key] for plan in plans), key=lambda r: (r.package, r.row)))
