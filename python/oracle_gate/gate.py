"""The whole gate: diff -> packages -> lanes -> report, for one (base, head) pair."""

from __future__ import annotations

import datetime
import hashlib
import posixpath
from collections.abc import Callable, Iterable
from pathlib import Path

from oracle_gate import backend, progress
from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.lockfile import LOCK_FILE
from oracle_gate.config.settings import Settings
from oracle_gate.errors import ConfigError
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.graph import PackageGraph
from oracle_gate.lanes import judge_packages, judge_paths
from oracle_gate.lanes.common import note_problem
from oracle_gate.model import ORACLE_LANES, Finding, Package, Row
from oracle_gate.pipeline import Request, stage
from oracle_gate.repo.git import repository_dirs
from oracle_gate.repo.layout import import_dirs
from oracle_gate.repo.trees import GitTree
from oracle_gate.report import Report
from oracle_gate.runtime.baseline import BaselineCache
from oracle_gate.runtime.health import append_health
from oracle_gate.runtime.judge import RowEnv, RuntimeStats, judge_rows, runs_children
from oracle_gate.runtime.replay import (
    CONFIG_NAMES,
    ReplayOptions,
    ReplayTrees,
    replay_packages,
)
from oracle_gate.runtime.sandbox import Runner, find_bwrap, library_paths, top_level_modules
from oracle_gate.runtime.sandbox.checkouts import checkouts, hide, prune_abandoned
from oracle_gate.select import Selection, is_quiet
from oracle_gate.vet.require import vetted_findings

__all__ = ["check", "hidden_paths", "sandbox_runner"]

LEDGER_FILES = (SEEDS_FILE, FREEZE_FILE, ASSUMPTIONS_FILE)


def _selected_rows(facts: Facts, selection: Selection) -> list[tuple[Package, Row]]:
    """The rows ``select`` chose, once each, in (package, row id) order."""
    chosen = {
        (s.package, s.row.id): (facts.head_graph.packages[s.package], s.row)
        for s in selection.rows
        if s.row is not None
    }
    return [chosen[key] for key in sorted(chosen)]


def hidden_paths(tree: GitTree, graph: PackageGraph) -> list[str]:
    """The packages' ledgers, locks and fixtures: what code under test must not read."""
    hidden = []
    for package in graph.packages.values():
        prefix = f"{package.path}/" if package.path else ""
        hidden += [package.join(name) for name in (*LEDGER_FILES, LOCK_FILE)]
        hidden += [
            path
            for path in tree.files()
            if path.startswith(prefix) and package.matrix.is_fixture(path[len(prefix) :])
        ]
    return hidden


def _hash_base(facts: Facts) -> int:
    """The children's hash seeds, from the two commits: the same for every run of this
    check, and unknown to the patch, whose commit id depends on its own text."""
    return hash_base_of(f"{facts.diff.base}..{facts.diff.head}")


def hash_base_of(text: str) -> int:
    """A ``Runner.hash_base`` drawn from ``text`` (commit ids): the same on every run."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")


def sandbox_runner(
    repo: Path,
    tree: GitTree,
    graph: PackageGraph,
    scratch: tuple[Path, ...],
    settings: Settings,
    hash_base: int,
) -> Runner:
    """How children run for checkouts of ``repo`` made under the ``scratch`` directories:
    ``tree``'s repository modules, the repository hidden, each checkout shown in its place,
    each child within the ``settings``' limits and given at least their timeout floor."""
    # the first is the repository itself: its checkouts appear there to the code they run
    hidden = repository_dirs(repo)
    return Runner(
        library=library_paths(exclude=(repo, *scratch)),
        bwrap=find_bwrap(),
        timeout_floor=settings.timeout_floor,
        limits=settings.limits,
        repo_modules=top_level_modules(tree.files(), import_dirs(tree, graph.nodes())),
        hidden=tuple(map(str, hidden)),
        shown_at=str(hidden[0]),
        hash_base=hash_base,
    )


def _review_of(facts: Facts) -> Callable[[str], str]:
    """For a test file: "review by <owners>" when a note that counts under the parent's
    policy explains the patch's change to it, else ""."""

    changed = {c.path for c in facts.diff.changes} | {
        c.old_path for c in facts.diff.changes if c.old_path
    }

    def review(path: str) -> str:
        package = facts.parent_graph.package_of(path)
        if path not in changed or note_problem([path], package, facts) is not None:
            return ""
        owners = facts.owners(path, package)
        return f"review by {', '.join(owners) if owners else 'the package owners'}"

    return review


def _run_rows(
    repo: Path,
    facts: Facts,
    rows: list[tuple[Package, Row]],
    packages: list[Package],
    write_seeds: bool,
    options: ReplayOptions,
) -> tuple[list[Finding], RuntimeStats]:
    """The rows' code, then (for ``packages``) the trusted replay, in one pair of checkouts
    (empty when neither starts a child: the rows then read only git objects)."""
    if not rows and not packages:
        return [], RuntimeStats()
    files = bool(packages) or runs_children(rows, facts.head)
    with checkouts(repo, facts.diff.base, facts.diff.head, files=files) as trees:
        if files:
            hide(trees.parent, hidden_paths(facts.parent, facts.parent_graph))
            hide(trees.head, hidden_paths(facts.head, facts.head_graph))
        runner = sandbox_runner(
            repo,
            facts.head,
            facts.head_graph,
            (trees.head.parent,),
            facts.settings,
            _hash_base(facts),
        )
        involved = [p for p, _ in rows] + packages
        env = RowEnv(
            head=facts.head,
            head_dir=trees.head,
            parent_dir=trees.parent,
            parent_packages=frozenset(facts.parent_graph.packages),
            today=facts.today,
            seed_sink=repo if write_seeds else None,
            head_name=facts.diff.head[:12],
            freezes_from=facts.parent,
            runner=runner,
            deps={p.path: _import_after(facts, p) for p in involved},
        )
        findings, stats = judge_rows(rows, env)
        replay = ReplayTrees(facts.parent, facts.head, trees.parent, trees.head)
        findings += replay_packages(packages, env, replay, stats, options)
        return findings, stats


def _head_config(laned: Iterable[LanedPath]) -> frozenset[str]:
    """The pytest config files the patch changes only outside pytest's sections (their
    lane is no oracle lane): the replay keeps the head's."""
    return frozenset(
        lp.path
        for lp in laned
        if posixpath.basename(lp.path) in CONFIG_NAMES and lp.lane not in ORACLE_LANES
    )


def _import_after(facts: Facts, package: Package) -> tuple[str, ...]:
    """What goes on the import path after the package's directory: its ``src/`` (the src
    layout), then its dependencies, each followed by its own ``src/``."""
    return import_dirs(facts.head, (package.path, *facts.head_graph.dependencies(package.path)))[1:]


def check(
    repo: Path,
    base: str,
    head: str,
    today: datetime.date,
    *,
    run_rows: bool = True,
    write_seeds: bool = False,
    graph: str = "static",
    approvals: tuple[str, ...] | None = None,
    replay: bool = True,
    allow_empty: bool = False,
    cache_url: str | None = None,
    require_vetted: bool = False,
) -> Report:
    """Run the gate on the patch from ``base`` to ``head``.

    Args:
        repo: the repository's top-level directory.
        base: the last trusted commit (any ref); the parent is its merge-base with head.
        head: the patched commit.
        today: the date freeze expiries are judged against.
        run_rows: run the selected rows' code (seeds, properties, partitions,
            relations). Off, the report judges paths and packages only: it can
            reject, but its MERGE says nothing about the rows.
        write_seeds: also append new counterexamples to the working tree's
            seeds.jsonl (each input once); otherwise they are only reported.
        graph: how the head's package graph is built, ``static`` or ``bazel``
            (as ``oracle-gate select --graph``).
        approvals: who approved the change on the review platform; read only
            when the parent's notes policy is ``approvals``.
        replay: run the parent's tests against the head's code for each
            selected package (``runtime/replay.py``); needs ``run_rows``.
        allow_empty: accept a repository where neither tree declares a package;
            otherwise that is an error, since nothing would be judged.
        cache_url: a shared HTTP cache (WebDAV) for the replay's baselines, besides
            the user cache.
        require_vetted: reject when a selected row is decorative in the parent, or
            has no vet result for the parent's content (``vet/require.py``).

    Raises:
        GitError: a ref does not resolve, history is too shallow, or head is
            an ancestor of base.
        ConfigError: no package in either tree (without ``allow_empty``).
        ConfigError, LockError, LedgerError, SurfaceError, TreeError: an oracle
            file in either tree is invalid, so no verdict can be reached.
    """
    prune_abandoned(repo)  # what a check killed outright left behind
    staged = stage(Request(repo, base, head, today, graph, approvals))
    facts, laned, selection, reads_file = (
        staged.facts,
        staged.laned,
        staged.selection,
        staged.reads_file,
    )
    if not (allow_empty or facts.parent_graph.packages or facts.head_graph.packages):
        raise ConfigError(
            "no package in the parent or the head (no invariants.yaml, no BUILD file calling "
            "oracle_gate), so nothing would be judged; pass --allow-empty if that is intended",
            str(repo),
        )
    findings = judge_paths(laned, facts)
    # A doc inside a Bazel package can still be some rule's input: select says so.
    docs_only = not selection.packages and all(is_quiet(lp) for lp in laned)
    stats = RuntimeStats()
    rows: list[tuple[Package, Row]] = []
    if not docs_only:
        findings += judge_packages(list(selection.packages), facts)
        if require_vetted:
            findings += vetted_findings(repo, facts, _selected_rows(facts, selection))
        if run_rows:
            rows = _selected_rows(facts, selection)
            # a package new in the head has no trusted tests to replay
            packages = [
                p for p in selection.packages if replay and p.path in facts.parent_graph.packages
            ]
            options = ReplayOptions(
                facts.settings.replay_seconds,
                BaselineCache(url=cache_url),
                _review_of(facts),
                _head_config(laned),
                reads_file,
            )
            with progress.stage(
                "running rows (seed replay, properties, partitions, relations)", len(rows)
            ):
                row_findings, stats = _run_rows(repo, facts, rows, packages, write_seeds, options)
            findings += row_findings
    append_health(repo, facts, rows, stats)
    return Report.build(
        base=facts.diff.base,
        head=facts.diff.head,
        backend=backend.name(),
        lanes={lp.path: lp.lane for lp in laned},
        findings=findings,
        docs_only=docs_only,
        approximate=selection.approximate,
    )
