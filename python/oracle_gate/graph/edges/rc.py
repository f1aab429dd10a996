"""The root ``.bazelrc``'s ``--deleted_packages`` and ``--package_path``: both move files
from one package to another as Bazel reads them, so the package that gains them depends
on the one the tree puts them in."""

from __future__ import annotations

import posixpath
from collections.abc import Set

from oracle_gate.bazel.bazelrc import RcFlags
from oracle_gate.graph.edges.targets import outside_node
from oracle_gate.graph.reading import Scan
from oracle_gate.repo.directories import enclosing, starting_with

__all__ = ["add_rc_flags"]


def add_rc_flags(scan: Scan, flags: RcFlags, build_dirs: Set[str], sorted_dirs: list[str]) -> None:
    """What the root ``.bazelrc`` says of packages (``bazel/bazelrc.py``). A package it
    deletes is a directory of the package around it, whose globs then see its files: that
    package depends on it. A package ``p`` a ``--package_path`` root holds (``root/p``) may
    be what Bazel reads as ``//p``: ``p`` depends on it. Either way the package reads the
    rc files as it reads its BUILD file."""
    moved: list[tuple[str, str, str]] = []
    for directory in sorted(flags.deleted_packages & build_dirs):
        holder = enclosing(posixpath.dirname(directory), build_dirs) if directory else None
        if holder is not None:
            moved.append((holder, directory, f".bazelrc deletes the package {directory}"))
    for root in sorted(flags.package_roots):
        for directory in starting_with(sorted_dirs, f"{root}/"):
            package = directory[len(root) + 1 :]
            why = f".bazelrc's --package_path may read //{package} from {root}"
            moved.append((outside_node(scan, package, directory), directory, why))
    for holder, directory, why in moved:
        scan.add_edge(holder, directory, why)
        for path in flags.files:
            scan.loads.setdefault(path, set()).add(holder)
