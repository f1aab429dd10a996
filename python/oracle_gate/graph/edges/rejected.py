"""A BUILD file the native evaluator rejected that loads the tree's own ``.bzl`` code: the
static reader cannot see the labels that code builds, so the package depends on every
package of the tree."""

from __future__ import annotations

from oracle_gate.graph.edges.targets import label_targets
from oracle_gate.graph.reading import Scan

__all__ = ["add_rejected"]


def add_rejected(
    scan: Scan,
    directory: str,
    path: str,
    bzl_files: list[str],
    sorted_dirs: list[str],
    error: str,
) -> None:
    """A BUILD file the evaluator rejected (``error`` says why) that loads the tree's own
    ``.bzl`` code: the static reader sees only the labels that code writes out, never
    those it builds (``"/" + "/lib:l"``, ``"@" + "main//lib:l"``), so the package depends
    on every package of the tree, whatever repository it is in."""
    loaded = {bzl for bzl, loaders in scan.read_loads.items() if directory in loaders}
    if loaded.isdisjoint(bzl_files):
        return
    why = f"{path} loads the tree's own .bzl code, and the evaluator could not run it"
    scan.approximate.add((path, f"{why} ({error}): taken to depend on every package"))
    for target in label_targets("", True, "", sorted_dirs):
        scan.add_edge(directory, target, why)
