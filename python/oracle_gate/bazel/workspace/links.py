"""Symbolic links of a git tree as Bazel follows them: into a repository's ``path``,
through links to links, and BUILD files that are links."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from oracle_gate.bazel.labels import BUILD_NAMES
from oracle_gate.errors import TreeError
from oracle_gate.repo.directories import joined
from oracle_gate.repo.trees import MAX_LINK_HOPS, GitTree, Tree, link_end

__all__ = ["LinkFollower", "drop_linked_away", "link_end_in"]


class LinkFollower:
    """A repository's ``path`` as a directory of the tree ("" for the root, ``.``), the
    tree's symbolic links on the way followed, as Bazel follows them (``path = "vlink"``
    with ``vlink -> third_party/v`` is ``third_party/v``)."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree if isinstance(tree, GitTree) else None
        self.links = self.tree.links() if self.tree else frozenset()

    def __call__(self, path: str) -> str:
        current = _tree_path(path)
        for _hop in range(MAX_LINK_HOPS):
            parts = current.split("/")
            linked = next(
                (n for n in range(1, len(parts) + 1) if "/".join(parts[:n]) in self.links), None
            )
            if linked is None:
                return current
            assert self.tree is not None  # only a git tree lists links
            end = link_end_in("/".join(parts[:linked]), self.tree.link_targets())
            if end is None:  # out of the tree, or a loop: as written
                return current
            current = _tree_path(posixpath.join(end, *parts[linked:]))
        return current


def _tree_path(path: str) -> str:
    """A repository's ``path`` as a directory of the tree ("" for the root, ``.``)."""
    normal = posixpath.normpath(path)
    return "" if normal == "." else normal


def drop_linked_away(tree: GitTree, builds: dict[str, str]) -> None:
    """As Bazel does, a BUILD file that is a link to a directory or to nothing is none:
    ``BUILD`` is read in place of such a ``BUILD.bazel``, and without one the directory
    is no package. (A link out of the tree, or round in a loop, stays an error.)"""
    for link in sorted(tree.links()):
        directory, _, name = link.rpartition("/")
        if builds.get(directory) != link or tree.leads_to(link) == "file":
            continue
        del builds[directory]
        other = joined(directory, BUILD_NAMES[1])
        if name != BUILD_NAMES[0] or tree.blob_id(other) is None:
            continue
        if not tree.is_link(other) or tree.leads_to(other) == "file":
            builds[directory] = other


def link_end_in(link: str, links: Mapping[str, str]) -> str | None:
    """Where the symbolic link ``link`` leads, through links to links (as Bazel follows
    them), or None: out of the repository, or round a loop."""
    try:
        end, _ = link_end(link, lambda path: "link" if path in links else "", links.__getitem__)
    except TreeError:
        return None
    return end
