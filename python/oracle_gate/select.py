"""Selection (SPEC §6): the packages and rows a diff can break, and why each was chosen.

Touched paths map to their packages. Selected are

- the rows whose globs match a touched production path (the same matching the
  production lane uses, ``facts.rows_guarding``: one source of truth),
- every row of a package whose own oracle moved (matrix, lock, ledgers,
  fixtures, oracle modules, harness),
- every row of a package that lost files to another package (or to none) in
  the head: a new nested matrix does not take them out of its reach,
- every row of every package that transitively depends on a package whose
  production code, fixtures or build changed, or on the Bazel package holding
  any other changed file (a rule there may read it),
- every row of every package below a harness file's directory.

A production path no row covers selects nothing; it is listed as unmeasured,
and the production lane rejects it (fail closed). Never run this module as a
script path: ``select`` is also a standard library module.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from oracle_gate.classify.harness import harness_scope, same_meaning
from oracle_gate.config.notes import CHANGELOG_FILE
from oracle_gate.facts import Facts, LanedPath, rows_guarding
from oracle_gate.frozen import quick_init
from oracle_gate.globs import matches_any
from oracle_gate.graph.moves import bazel_boundary_moves, boundary_moves
from oracle_gate.model import ChangeKind, Lane, Package, Row

__all__ = [
    "Selected",
    "Selection",
    "describe_chain",
    "is_quiet",
    "select",
]

# Lanes whose changes alone never need a row to run (SPEC §4, last row).
QUIET_LANES = frozenset({Lane.DOCS, Lane.OTHER})


def is_quiet(laned: LanedPath) -> bool:
    """No row reads this path: docs, other files, and the notes ledger (ORACLE_CHANGELOG.md).

    The ledger lane still judges a changelog edit; it only selects nothing.
    """
    return laned.lane in QUIET_LANES or posixpath.basename(laned.path) == CHANGELOG_FILE


# Changes that reach the dependents of the package owning them. Tests, locks, ledgers
# and oracle modules reach only those of the Bazel package holding them (``bazel_file``).
_PROPAGATING_LANES = frozenset({Lane.PRODUCTION, Lane.FIXTURE, Lane.HARNESS, Lane.MATRIX})


@quick_init
@dataclass(frozen=True)
class Selected:
    """One selected row, or a selected package (``row`` is None), and the reason.

    ``chain`` is the dependency path that selected it: the selected package
    first, then each package it depends on, ending at the touched package
    (one element when the package itself was touched). ``path`` is the touched
    path at the end of the chain.
    """

    package: str
    row: Row | None
    path: str
    chain: tuple[str, ...]
    reason: str
    # For each arrow of ``chain``: the declaration that makes the dependency.
    via: tuple[str, ...] = ()

    @property
    def row_id(self) -> str:
        return self.row.id if self.row else ""


@dataclass(frozen=True)
class Selection:
    """Everything ``select`` decided, sorted by package then row id."""

    packages: tuple[Package, ...]
    why_packages: tuple[Selected, ...]
    rows: tuple[Selected, ...]
    # Production paths that no row guards: the production lane rejects them.
    unmeasured: tuple[str, ...]
    # Every graph node reached, with or without a gate (Bazel packages included).
    affected: tuple[str, ...]
    # Why the head graph over-approximates, if it does (``PackageGraph.approximate``).
    approximate: tuple[str, ...] = ()

    @property
    def targets(self) -> tuple[str, ...]:
        """The Bazel gate targets of the selected packages, for ``bazel test``."""
        return tuple(sorted(p.target for p in self.packages if p.target))


@dataclass
class _Origin:
    path: str
    reason: str


# Oracle changes after which every row of the package runs again.
_ALL_ROWS_LANES = frozenset({Lane.MATRIX, Lane.LEDGER, Lane.HARNESS})


def _own_row_reason(laned: LanedPath, package: Package, row: Row) -> str | None:
    """Why a non-production change in ``package`` selects ``row``, or None.

    Tests and locks select no row: the package-level checks judge them.
    """
    relative = package.relative(laned.path)
    lane = laned.lane
    if lane in _ALL_ROWS_LANES:
        return f"the package's own {lane.value} changed"
    if lane is Lane.PROPERTY:
        return "the row's oracle module changed" if relative in row.oracle_modules else None
    if lane is Lane.FIXTURE and (
        not any(r.fixtures for r in package.matrix.rows) or matches_any(relative, row.fixtures)
    ):
        return "a fixture the row reads changed"
    return None


def _better(new: Selected, old: Selected | None) -> bool:
    return old is None or (len(new.chain), new.path) < (len(old.chain), old.path)


class _Selector:
    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.head = facts.head_graph
        self.rows: dict[tuple[str, str], Selected] = {}
        self.packages: dict[str, Selected] = {}
        self.unmeasured: set[str] = set()
        # Propagating nodes of the head graph -> the touched path that made them so.
        self.sources: dict[str, _Origin] = {}

    def pick_package(self, selected: Selected) -> None:
        if selected.package in self.head.packages and _better(
            selected, self.packages.get(selected.package)
        ):
            self.packages[selected.package] = selected

    def pick_row(self, selected: Selected) -> None:
        key = (selected.package, selected.row_id)
        if _better(selected, self.rows.get(key)):
            self.rows[key] = selected

    def pick_all(self, selected: Selected) -> None:
        """Picks ``selected``'s package and, for the same reason, every row it has in head."""
        self.pick_package(selected)
        package, path, chain, reason, via = (
            selected.package,
            selected.path,
            selected.chain,
            selected.reason,
            selected.via,
        )
        for row in self.head_rows(package):
            self.pick_row(Selected(package, row, path, chain, reason, via))

    def head_rows(self, package: str) -> tuple[Row, ...]:
        found = self.head.packages.get(package)
        return found.matrix.rows if found else ()

    def source(self, node: str | None, origin: _Origin) -> None:
        if node is None or not self.head.has_node(node):
            return
        current = self.sources.get(node)
        if current is None or origin.path < current.path:
            self.sources[node] = origin

    def touched(self, laned: LanedPath) -> None:
        change = laned.change
        in_head = change.kind is not ChangeKind.DELETED
        old_path = change.old_path or change.path
        package = laned.package
        lane = laned.lane.value
        if package is not None:
            self.pick_package(
                Selected(package.path, None, laned.path, (package.path,), f"{lane} path changed")
            )
        if laned.lane is Lane.PRODUCTION:
            self.production(laned)
        elif package is not None:
            for row in self.head_rows(package.path):
                reason = _own_row_reason(laned, package, row)
                if reason:
                    self.pick_row(Selected(package.path, row, laned.path, (package.path,), reason))
        origin = _Origin(laned.path, f"{lane} path changed")
        self.bazel_file(laned, origin)
        if laned.lane not in _PROPAGATING_LANES:
            return
        if laned.lane is Lane.HARNESS:
            self.harness(laned)
        if in_head:
            self.source(self.head.node_of(change.path), origin)
        if change.kind is not ChangeKind.ADDED:
            self.source(self.facts.parent_graph.node_of(old_path), origin)
        if package is not None:
            self.source(package.path, origin)

    def harness(self, laned: LanedPath) -> None:
        """A harness file configures every package below its scope (``harness_scope``):
        a root ``conftest.py``, ``.bazelrc`` or ``requirements.txt`` reaches them all,
        though none owns it. A change of comments alone reaches none."""
        change = laned.change
        if change.kind is ChangeKind.MODIFIED and same_meaning(
            change.path, *self.facts.read_pair(change)
        ):
            return
        for path in sorted({change.path, change.old_path or change.path}):
            scope = harness_scope(path)
            if scope is not None:
                reason = f"{path} configures every package below {scope or 'the root'}"
                self.configured(scope, laned.path, reason)

    def submodule(self, laned: LanedPath) -> None:
        """A git submodule (a commit, not a file, on either side of the change): its files are
        not in the tree read here, so every package at or below it changed."""
        change = laned.change
        if not change.submodule:
            return
        for path in sorted({change.path, change.old_path or change.path}):
            self.configured(path, laned.path, f"the git submodule {path} changed")

    def configured(self, scope: str, path: str, reason: str) -> None:
        """Every node at or below directory ``scope`` changed, and so all their rows run."""
        for node in self.head.nodes_at_or_under(scope):
            self.source(node, _Origin(path, reason))
            selected = Selected(node, None, path, (node,), reason)
            self.pick_all(selected)
            self.enclosing_gate(node, selected)

    def read_by_builds(self, laned: LanedPath) -> None:
        """A file BUILD files read (a ``.bzl`` they load, a repository's ``build_file``)
        changes each of them, in either tree, whatever its lane."""
        change = laned.change
        for path in sorted({change.path, change.old_path or change.path}):
            for loader in sorted(
                {*self.head.loaders(path), *self.facts.parent_graph.loaders(path)}
            ):
                self.loaded(loader, path, laned.path)

    def bazel_file(self, laned: LanedPath, origin: _Origin) -> None:
        """Any file inside a Bazel package, whatever its lane (a test, a ledger, a ``.s``,
        a file of a matrix package below the BUILD file), can be an input of any rule
        there (``srcs``, ``data``, a ``glob``): dependents of that package see it."""
        change = laned.change
        if change.kind is not ChangeKind.DELETED:
            self.source(self.head.bazel_package_of(change.path), origin)
        if change.kind is not ChangeKind.ADDED:
            old_path = change.old_path or change.path
            self.source(self.facts.parent_graph.bazel_package_of(old_path), origin)
        self.read_by_builds(laned)

    def loaded(self, loader: str, bzl: str, path: str) -> None:
        """``loader``'s BUILD file loads the changed ``bzl``: as if that BUILD file changed."""
        reason = f"its BUILD file loads {bzl}"
        self.source(loader, _Origin(path, reason))
        selected = Selected(loader, None, path, (loader,), reason)
        self.pick_all(selected)
        self.enclosing_gate(loader, selected)

    def production(self, laned: LanedPath) -> None:
        guarding = rows_guarding(laned, self.facts)
        package = laned.package
        if package is None or not guarding:
            self.unmeasured.add(laned.path)
        if package is not None:
            wanted = set(guarding)
            for row in self.head_rows(package.path):
                if row.id in wanted:
                    reason = "the path matches the row's globs"
                    self.pick_row(Selected(package.path, row, laned.path, (package.path,), reason))
        # A file moved out of another package changed that package too.
        old_path = laned.change.old_path
        if laned.change.kind is ChangeKind.RENAMED and old_path:
            before = self.facts.parent_graph.package_of(old_path)
            if before is not None and (package is None or before.path != package.path):
                self.moved_out(before, old_path, laned.path)

    def moved_out(self, before: Package, old_path: str, path: str) -> None:
        relative = before.relative(old_path)
        reason = f"{old_path} moved out of this package"
        self.pick_package(Selected(before.path, None, path, (before.path,), reason))
        matched = {r.id for r in before.matrix.rows_matching(relative)}
        for row in self.head_rows(before.path):
            if row.id in matched:
                self.pick_row(Selected(before.path, row, path, (before.path,), reason))

    def dependents(self) -> set[str]:
        chains = self.head.dependency_chains(self.sources)
        # A chain is its first arrow and the chain of the node it reaches, found before it
        # (unless that node is the source itself): its declarations are built the same way.
        vias: dict[str, tuple[str, ...]] = {}
        for node, chain in chains.items():
            origin = self.sources[chain[-1]]
            reason = f"depends on {chain[-1] or '.'}, where {origin.reason}"
            step = self.head.why(node, chain[1])
            via = vias[node] = (step, *vias[chain[1]]) if len(chain) > 2 else (step,)
            selected = Selected(node, None, origin.path, chain, reason, via)
            self.pick_all(selected)
            self.enclosing_gate(node, selected)
        return set(chains) | set(self.sources)

    def toolchains_affected(self, affected: set[str]) -> bool:
        """Whether an affected package is one that may configure every rule, in either tree
        (``PackageGraph.toolchains``: a registered toolchain or platform, a label the
        ``.bazelrc``'s flags name): then every package changed (``configured``)."""
        registered = {**self.facts.parent_graph.toolchains, **self.head.toolchains}
        hit = min((p for p in affected if p in registered), default=None)
        if hit is None:
            return False
        origin = self.sources.get(hit)
        path = origin.path if origin else hit
        self.configured("", path, f"{registered[hit]}, and {hit or '.'} is affected")
        return True

    def enclosing_gate(self, node: str, selected: Selected) -> None:
        """A gate owns the files of the Bazel subpackages below it that declare no gate of
        their own, so an affected subpackage selects the gate around it."""
        gate = self.head.enclosing_package(node)
        if gate is None or gate.path == node:
            return
        reason = f"it holds the Bazel package {node}, which {selected.reason}"
        via = (f"{gate.path or '.'} holds {node}", *selected.via)
        chain = (gate.path, *selected.chain)
        self.pick_all(
            dataclasses.replace(selected, package=gate.path, chain=chain, reason=reason, via=via)
        )

    def result(self, affected: set[str]) -> Selection:
        packages = tuple(self.head.packages[p] for p in sorted(self.packages))
        return Selection(
            packages=packages,
            why_packages=tuple(self.packages[p] for p in sorted(self.packages)),
            rows=tuple(self.rows[key] for key in sorted(self.rows)),
            unmeasured=tuple(sorted(self.unmeasured)),
            affected=tuple(sorted(affected)),
            approximate=self.head.approximate,
        )


def select(
    laned: tuple[LanedPath, ...],
    facts: Facts,
    read_at_run_time: Mapping[str, tuple[str, ...]] | None = None,
) -> Selection:
    """The packages and rows the diff can break, each with the reason it was selected.

    Args:
        laned: every changed path in its lane (``lanes.classify``).
        facts: both trees and both package graphs.
        read_at_run_time: changed quiet paths -> the packages whose parent tests read
            them at run time (``runtime/reads.py``): those packages are selected.
    """
    selector = _Selector(facts)
    reads = read_at_run_time or {}
    for path in laned:
        selector.submodule(path)
        if not is_quiet(path):
            selector.touched(path)
            continue
        selector.bazel_file(path, _Origin(path.path, f"{path.lane.value} path changed"))
        for package in reads.get(path.path, ()):
            reason = f"the parent's tests read this {path.lane.value} path at run time"
            selector.pick_all(Selected(package, None, path.path, (package,), reason))
    for directory, paths in boundary_moves(facts).items():
        reason = "files left the package's boundary; its rows still run on them"
        selector.pick_all(Selected(directory, None, paths[0], (directory,), reason))
    for package, cause in bazel_boundary_moves(facts).items():
        reason = f"{cause} moved files into or out of it"
        selector.source(package, _Origin(cause, reason))
        selector.pick_all(Selected(package, None, cause, (package,), reason))
    affected = selector.dependents()
    if selector.toolchains_affected(affected):
        affected = selector.dependents()
    return selector.result(affected)


def describe_chain(selected: Selected) -> str:
    """``c -> b [why] -> a [why]: a/x.py (reason)``: the dependency path that selected it."""
    parts = [selected.chain[0] or "."]
    for dependency, why in zip(selected.chain[1:], selected.via, strict=False):
        parts.append(f"-> {dependency or '.'}" + (f" [{why}]" if why else ""))
    return " ".join(parts) + f": {selected.path} ({selected.reason})"
