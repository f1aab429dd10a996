"""``new_local_repository`` (and a fetched repository whose declaration names files of the
tree): the repository is one node whose edges are its given BUILD file's labels, because
Bazel builds its directory with that file, not with a BUILD file of its own."""

from __future__ import annotations

from oracle_gate.bazel.read import parse_build
from oracle_gate.bazel.workspace.repositories import Repositories, loaded_path
from oracle_gate.graph.edges.read import add_read
from oracle_gate.graph.edges.targets import label_targets
from oracle_gate.graph.reading import Scan
from oracle_gate.repo.directories import listed
from oracle_gate.repo.trees import Tree

__all__ = ["add_built"]


def add_built(
    scan: Scan,
    tree: Tree,
    files: tuple[str, ...],
    repositories: Repositories,
    sorted_dirs: list[str],
) -> None:
    """Each ``new_local_repository`` of the tree as one node: its directory's files are
    its sources, what its BUILD file names are its edges, and a change of that BUILD file
    (or of the WORKSPACE that holds it inline) changes it. So does a change of a file of
    the tree a fetched repository's declaration names (its ``patches``)."""
    for repository in repositories.built:
        root = repository.root
        scan.nodes.add(root)
        scan.workspace_of.setdefault(root, root)
        for label in repository.inputs:
            read = loaded_path(label, "", "", repositories)
            if read is not None and listed(files, read):
                scan.loads.setdefault(read, set()).add(root)
        written = repository.build_file
        path = written and loaded_path(written, "", "", repositories)
        in_tree = path is not None and listed(files, path)
        if repository.fetched and not in_tree and repository.content is None:
            continue  # its BUILD files are the archive's own, or another repository's
        if path is not None and in_tree:
            text, source = tree.read(path), path
        elif written is None and repository.content is not None:
            text, source = repository.content.encode(), repository.declared_in
        else:
            # A BUILD file from outside the tree: its labels are unknown here.
            why = f"{repository.declared_in} gives {root} a BUILD file not in the tree"
            why += ": it may name every package"
            scan.approximate.add((repository.declared_in, why))
            for target in label_targets("", True, "", sorted_dirs):
                scan.add_edge(root, target, why)
            continue
        scan.loads.setdefault(source, set()).add(root)
        build = parse_build(text, source)
        add_read(scan, build, root, source, "", root, repositories, sorted_dirs)
