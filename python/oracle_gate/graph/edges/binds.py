"""The root WORKSPACE's ``bind()``: ``//external:x`` is another name for what ``x`` is bound
to, so the package ``external`` depends on every package a ``bind`` names."""

from __future__ import annotations

from oracle_gate.bazel.labels import parse_label
from oracle_gate.bazel.workspace.repositories import Repositories
from oracle_gate.graph.reading import Scan
from oracle_gate.repo.directories import joined

__all__ = ["add_binds"]

# The package Bazel gives the root WORKSPACE's ``bind()`` targets.
_EXTERNAL = "external"


def add_binds(scan: Scan, repositories: Repositories) -> None:
    """``//external:x`` names what ``bind(name = "x", actual = ...)`` in the root WORKSPACE
    binds: the package ``external`` stands for every bound package of the tree."""
    for name, actual in repositories.binds:
        try:
            label = parse_label(actual, "")
        except ValueError:
            continue  # Bazel refuses the WORKSPACE
        root = repositories.root_of(label.repo if actual.startswith("@") else None, "")
        if root is not None:
            scan.nodes.add(_EXTERNAL)
            target = joined(root, label.package)
            scan.add_edge(_EXTERNAL, target, f"WORKSPACE binds //{_EXTERNAL}:{name} to {actual}")
