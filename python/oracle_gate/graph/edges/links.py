"""Symbolic links: Bazel follows them where git lists a file, so the package holding a link
depends on what the link leads into, and who reads through a link reads its target."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from oracle_gate.bazel.workspace.links import link_end_in
from oracle_gate.graph.edges.targets import outside_node
from oracle_gate.graph.reading import Scan
from oracle_gate.repo.directories import at_or_under, enclosing, starting_with

__all__ = ["add_links"]


def add_links(
    scan: Scan, links: Mapping[str, str], files: tuple[str, ...], sorted_dirs: list[str]
) -> None:
    """Bazel follows symbolic links, git lists them as files: with ``libs/alias -> real``,
    ``//libs/alias`` is a copy of ``libs/real``, and a link to a file puts that file in
    the link's package. So the package holding a link depends on every package the link
    leads into, and a package named under a linked directory on its original."""
    if not links:
        return
    build_dirs = frozenset(sorted_dirs)
    named = sorted(scan.nodes | scan.dependents.keys())
    for link in links:
        target = link_end_in(link, links)
        if target is None:
            continue  # outside the repository, or a loop: no change of ours reaches it
        scan.linked = True
        why = f"{link} is a symbolic link to {target}"
        is_dir = bool(starting_with(files, f"{target}/"))
        reached = enclosing(target if is_dir else posixpath.dirname(target), build_dirs)
        inside = [reached] if reached is not None else []
        if is_dir:
            inside += at_or_under(target, sorted_dirs)
        holder = enclosing(posixpath.dirname(link), build_dirs)
        if holder is not None:
            if reached is None:
                outside = target if is_dir else posixpath.dirname(target)
                inside.append(outside_node(scan, outside, holder))
            for package in inside:
                scan.add_edge(holder, package, why)
        _read_through(scan, link, target)
        if is_dir:
            for node in at_or_under(link, named):
                original = enclosing(target + node[len(link) :], build_dirs)
                if original is not None:
                    scan.add_edge(node, original, why)


def _read_through(scan: Scan, link: str, target: str) -> None:
    """Who loads a ``.bzl`` file (or reads a ``build_file``) through ``link`` reads its
    target too: an edit of the target changes what they load."""
    for alias in [path for path in scan.loads if path == link or path.startswith(f"{link}/")]:
        real = target + alias[len(link) :]
        scan.loads.setdefault(real, set()).update(scan.loads[alias])
