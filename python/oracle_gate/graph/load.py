"""A tree's package graph, read statically or with its target edges from ``bazel query``."""

from __future__ import annotations

import posixpath

from oracle_gate.bazel.query import BAZEL_TIMEOUT_SECONDS, bazel_query_edges, bazel_workspace
from oracle_gate.errors import ConfigError
from oracle_gate.graph.model import PackageGraph
from oracle_gate.graph.scan import scan_tree
from oracle_gate.repo.directories import enclosing
from oracle_gate.repo.trees import GitTree, Tree

__all__ = ["GRAPH_MODES", "load_graph"]

GRAPH_MODES = ("static", "bazel")


def load_graph(
    tree: Tree,
    mode: str = "static",
    timeout: float = BAZEL_TIMEOUT_SECONDS,
    former: frozenset[str] = frozenset(),
) -> PackageGraph:
    """The package graph of ``tree``.

    Args:
        tree: the commit (or working tree) to read.
        mode: ``static`` reads BUILD files without Bazel; ``bazel`` takes the
            target edges of the root workspace from ``bazel query`` instead,
            which needs ``bazel`` on PATH and the working tree checked out, clean,
            at ``tree``'s commit.
        timeout: seconds ``bazel query`` may take.
        former: the parent's package directories, when ``tree`` is a head: a
            ``deps`` entry naming one the patch removed is still an edge (the
            matrix lane rejects the removal), not an error.

    Raises:
        ConfigError: a matrix or BUILD file is invalid, or a ``deps`` entry
            names no package (nor a former one).
        GateError: ``bazel`` mode cannot run (no bazel, no workspace, a dirty
            checkout, a failed query).
    """
    if mode not in GRAPH_MODES:
        raise ConfigError(f"unknown graph {mode!r}; expected one of {', '.join(GRAPH_MODES)}")
    scan = scan_tree(tree)
    approximate = scan.approximate
    if mode == "bazel":
        workspace = bazel_workspace(tree)
        # Bazel answers inside the root workspace; an edge into or out of another
        # repository of the tree (``@vendored//lib``) keeps its static reading.
        static = scan.dependents
        scan.dependents = {}
        for target, found in static.items():
            for source, why in found.items():
                if scan.workspace_of.get(source) or scan.workspace_of.get(target):
                    scan.add_edge(source, target, why)
        for source, target, why in bazel_query_edges(workspace, timeout):
            scan.add_edge(source, target, why)
        nested = {root for root in scan.workspace_of.values() if root}
        approximate = {
            (path, why) for path, why in approximate if enclosing(posixpath.dirname(path), nested)
        }
    return PackageGraph(
        scan.packages,
        nodes=scan.nodes,
        dependents=scan.dependents,
        loads=scan.loads,
        derivable=mode == "static" and isinstance(tree, GitTree) and not scan.linked,
        gate_sources=scan.gates,
        bazel_packages=scan.workspace_of,
        approximate=tuple(why for _, why in sorted(approximate)),
        former=former,
        ignored=scan.ignored,
        repositories=scan.repositories,
        toolchains=scan.toolchains,
    )
