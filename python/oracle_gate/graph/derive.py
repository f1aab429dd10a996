"""The head's graph derived from the parent's when the diff leaves the graph's inputs alone."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from oracle_gate.bazel.labels import BUILD_NAMES, WORKSPACE_MARKERS
from oracle_gate.bazel.workspace.ignore import BAZELIGNORE
from oracle_gate.config.matrix import MATRIX_FILE
from oracle_gate.graph.load import load_graph
from oracle_gate.graph.model import PackageGraph
from oracle_gate.model import Change, ChangeKind
from oracle_gate.repo.trees import GitTree, Tree

__all__ = ["derive_graph"]

# Files whose bytes (not only their presence) the graph is built from.
_GRAPH_INPUTS = frozenset({*BUILD_NAMES, *WORKSPACE_MARKERS, MATRIX_FILE, BAZELIGNORE})


def _graph_input(path: str) -> bool:
    """Whether the graph reads ``path``'s bytes: a ``.bzl`` file's labels and macros count,
    and a ``.bazelrc``'s ``--deleted_packages`` and ``--package_path``."""
    name = posixpath.basename(path)
    return name in _GRAPH_INPUTS or name.endswith(".bzl") or ".bazelrc" in name


def derive_graph(
    parent: PackageGraph, head: Tree, changes: Iterable[Change], mode: str = "static"
) -> PackageGraph:
    """The graph of ``head``, derived from ``parent``'s when the diff allows it.

    A graph depends only on which paths exist and on the bytes of BUILD files,
    ``.bzl`` files, matrix files and workspace markers. When no change touches one of those:
    if every change modifies a file in place (the common patch), ``parent`` is
    returned as it is; if paths appeared or disappeared, nodes and edges stay
    and only the gates whose ``glob()`` sees those paths are recomputed. Any
    other diff (an edited BUILD file, a symlinked one, a symbolic link) reads ``head``
    anew; so does any diff of a tree that holds a symbolic link.

    Raises:
        ConfigError, GateError: as ``load_graph``.
    """
    changes = list(changes)
    paths = [path for change in changes for path in (change.path, change.old_path) if path]
    # A symbolic link the diff adds or edits may be one Bazel follows (``add_links``).
    linked = isinstance(head, GitTree) and any(head.is_link(path) for path in paths)
    # A file some BUILD reads as a whole (a new_local_repository's build_file) is an input.
    read = any(parent.loaders(path) for path in paths)
    if mode != "static" or not parent.derivable or linked or read or any(map(_graph_input, paths)):
        return load_graph(head, mode, former=frozenset(parent.packages))
    if all(change.kind is ChangeKind.MODIFIED for change in changes):
        return parent
    return parent._with_paths_moved(
        added={c.path for c in changes if c.kind in (ChangeKind.ADDED, ChangeKind.RENAMED)},
        removed={
            c.old_path or c.path
            for c in changes
            if c.kind in (ChangeKind.DELETED, ChangeKind.RENAMED)
        },
    )
