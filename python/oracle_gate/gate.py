"""The whole gate: diff -> packages -> lanes -> report, for one (base, head) pair."""

from __future__ import annotations

import datetime
from pathlib import Path

from oracle_gate import backend
from oracle_gate.diff import read_diff
from oracle_gate.globs import matches_any
from oracle_gate.graph import derive_graph, load_graph
from oracle_gate.health import append_health
from oracle_gate.lanes import Facts, LanedPath, classify, judge_packages, judge_paths
from oracle_gate.lanes.runtime import RowEnv, RuntimeStats, judge_rows
from oracle_gate.model import Finding, Lane, Package, Row
from oracle_gate.notes import read_notes
from oracle_gate.oracles import checkouts
from oracle_gate.owners import read_codeowners
from oracle_gate.report import Report
from oracle_gate.select import select
from oracle_gate.trees import GitTree

__all__ = ["check"]

# Lanes whose changes alone never need a row to run (SPEC §4, last row).
_QUIET_LANES = frozenset({Lane.DOCS, Lane.OTHER})


def _gather(repo: Path, base: str, head: str, today: datetime.date) -> Facts:
    diff = read_diff(repo, base, head)
    parent_tree = GitTree(repo, diff.base)
    head_tree = GitTree(repo, diff.head)
    parent_graph = load_graph(parent_tree)
    head_graph = derive_graph(parent_graph, head_tree, diff.changes)
    return Facts(
        diff=diff,
        parent=parent_tree,
        head=head_tree,
        parent_graph=parent_graph,
        head_graph=head_graph,
        notes=read_notes(diff, head_tree, head_graph.packages),
        # The parent's CODEOWNERS: a patch must not choose its own reviewers.
        codeowners=read_codeowners(parent_tree),
        today=today,
    )


def _runtime_rows(facts: Facts, laned: tuple[LanedPath, ...]) -> list[tuple[Package, Row]]:
    """Rows whose globs match a touched production path, and every row of dependents."""
    chosen: dict[tuple[str, str], tuple[Package, Row]] = {}
    touched: set[str] = set()
    for lp in laned:
        package = facts.head_graph.packages.get(lp.package.path) if lp.package else None
        if package is None or lp.lane in _QUIET_LANES:
            continue
        touched.add(package.path)
        relative = package.relative(lp.path)
        for row in package.matrix.rows:
            refs = {
                ref.split(":", 1)[0] for ref in (*row.properties, *row.partitions, *row.relations)
            }
            if matches_any(relative, row.globs) or relative in refs or lp.lane is Lane.LEDGER:
                chosen[(package.path, row.id)] = (package, row)
    for path in sorted(facts.head_graph.dependents(touched) - touched):
        package = facts.head_graph.packages[path]
        for row in package.matrix.rows:
            chosen[(package.path, row.id)] = (package, row)
    return [chosen[key] for key in sorted(chosen)]


def _run_rows(
    repo: Path, facts: Facts, rows: list[tuple[Package, Row]]
) -> tuple[list[Finding], RuntimeStats]:
    if not rows:
        return [], RuntimeStats()
    with checkouts(repo, facts.diff.base, facts.diff.head) as trees:
        env = RowEnv(
            head=facts.head,
            head_dir=trees.head,
            parent_dir=trees.parent,
            parent_packages=frozenset(facts.parent_graph.packages),
            today=facts.today,
            seed_sink=repo,
            head_name=facts.diff.head[:12],
        )
        return judge_rows(rows, env)


def check(repo: Path, base: str, head: str, today: datetime.date) -> Report:
    """Run the gate on the patch from ``base`` to ``head``.

    Args:
        repo: the repository's top-level directory.
        base: the last trusted commit (any ref); the parent is its merge-base with head.
        head: the patched commit.
        today: the date freeze expiries are judged against.

    Raises:
        GitError: a ref does not resolve, or history is too shallow.
        ConfigError, LockError, LedgerError, SurfaceError, TreeError: an oracle
            file in either tree is invalid, so no verdict can be reached.
    """
    facts = _gather(repo, base, head, today)
    laned = classify(facts)
    findings = judge_paths(laned, facts)
    docs_only = all(lp.lane in _QUIET_LANES for lp in laned)
    stats = RuntimeStats()
    rows: list[tuple[Package, Row]] = []
    if not docs_only:
        selected = list(select(laned, facts).packages)
        findings += judge_packages(selected, facts)
        rows = _runtime_rows(facts, laned)
        row_findings, stats = _run_rows(repo, facts, rows)
        findings += row_findings
    append_health(repo, facts, rows, stats)
    return Report.build(
        base=facts.diff.base,
        head=facts.diff.head,
        backend=backend.name(),
        lanes={lp.path: lp.lane for lp in laned},
        findings=findings,
        docs_only=docs_only,
    )
