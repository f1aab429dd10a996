"""Where an edge ends: the packages a label names (one, or every package under a computed
label's prefix), and a node for files Bazel sees in a package but no package holds.
Shared by every construct whose edges follow a label or reach past the packages."""

from __future__ import annotations

from oracle_gate.graph.reading import Scan
from oracle_gate.repo.directories import joined, starting_with

__all__ = ["label_targets", "outside_node"]


def label_targets(package: str, prefix: bool, workspace: str, sorted_dirs: list[str]) -> list[str]:
    """The directories a label of ``package`` can name: one, or, for a computed label's
    ``prefix``, every package under it."""
    target = joined(workspace, package) if package else workspace
    if workspace.startswith("@"):  # a repository outside the tree is one node
        return [workspace]
    if not prefix:
        return [target]
    # A bare "//" prefix under a nested workspace starts at the workspace's root.
    start = f"{workspace}/" if workspace and not package else target
    return list(starting_with(sorted_dirs, start)) or [target.rstrip("/")]


def outside_node(scan: Scan, directory: str, holder: str) -> str:
    """A node for the files a link in ``holder`` leads to outside every Bazel package
    (``lib/f.txt -> ../data/f.txt``): Bazel sees them in ``holder``, so an edit of them
    (which need not touch the link) ripples from this node, as from a package's files.
    ``--package_path`` (``rc.py``) uses one for a package read from another root."""
    scan.nodes.add(directory)
    scan.workspace_of.setdefault(directory, scan.workspace_of.get(holder, ""))
    return directory
