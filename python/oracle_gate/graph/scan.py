"""One pass over a tree's files: its packages, nodes and edges, before they become a graph."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from oracle_gate.bazel.bazelrc import rc_flags
from oracle_gate.bazel.glob import package_files
from oracle_gate.bazel.labels import BUILD_NAMES, WORKSPACE_MARKERS
from oracle_gate.bazel.read import parse_build_cached
from oracle_gate.bazel.starlark import Evaluated
from oracle_gate.bazel.workspace.ignore import bazel_ignored
from oracle_gate.bazel.workspace.links import drop_linked_away
from oracle_gate.bazel.workspace.repositories import drop_ignored, read_repositories
from oracle_gate.bazel.workspace.toolchains import registered_by_loaded_code, toolchain_packages
from oracle_gate.config.matrix import MATRIX_FILE, parse_matrix
from oracle_gate.errors import ConfigError
from oracle_gate.graph.edges import (
    add_binds,
    add_built,
    add_bzl_labels,
    add_links,
    add_rc_flags,
    add_read,
    add_rejected,
)
from oracle_gate.graph.evaluate import add_computed, evaluate
from oracle_gate.graph.gates import GateSource, has_gate
from oracle_gate.graph.reading import Listing, Reads, Scan, is_utf8, read_files
from oracle_gate.model import Package
from oracle_gate.repo.directories import enclosing, listed
from oracle_gate.repo.trees import GitTree, Tree

__all__ = ["load_packages", "scan_tree"]

# The names ``scan_tree`` looks for among a tree's files.
_SCANNED_NAMES = (*BUILD_NAMES, *WORKSPACE_MARKERS, MATRIX_FILE, ".bzl")


def scan_tree(tree: Tree) -> Scan:
    files = tree.files()
    builds: dict[str, str] = {}
    markers: dict[str, list[str]] = {}
    matrix_files: list[str] = []
    ignored = bazel_ignored(tree, files)
    bzl_files: list[str] = []
    # A C-level suffix test first: the names below end a few thousandths of the paths.
    for path in [path for path in files if path.endswith(_SCANNED_NAMES)]:
        directory, _, name = path.rpartition("/")
        if name.endswith(".bzl"):
            bzl_files.append(path)
        elif name in BUILD_NAMES:
            # BUILD sorts before BUILD.bazel; Bazel reads BUILD.bazel when both exist.
            if name == BUILD_NAMES[0] or directory not in builds:
                builds[directory] = path
        elif name in WORKSPACE_MARKERS:
            markers.setdefault(directory, []).append(path)
        elif name == MATRIX_FILE:
            matrix_files.append(path)
    if isinstance(tree, GitTree):
        drop_linked_away(tree, builds)
    blob_ids = tree.blob_ids(builds.values()) if isinstance(tree, GitTree) else {}
    repositories = read_repositories(tree, markers)
    if ignored:
        drop_ignored(builds, ignored, repositories)
    workspace_of = (
        dict.fromkeys(builds, "")  # one repository, as most trees are
        if repositories.roots == {""}
        else {d: enclosing(d, repositories.roots) or "" for d in builds}
    )
    linked: set[str] = set()
    read_builds = Reads(tree)
    # A name that is not UTF-8 (git's bytes, decoded with surrogates) cannot reach the
    # native core: it sees the others, the static reader reads such a BUILD file, and a
    # gate with such a file below it is built by gate_matrix, which sees them all.
    not_utf8 = frozenset(p for p in [p for p in files if not p.isascii()] if not is_utf8(p))
    scan = Scan(nodes=set(builds), ignored=ignored, repositories=dict(repositories.named))
    build_dirs = frozenset(builds)
    sorted_dirs = sorted(build_dirs)
    listing = Listing(
        tree, read_builds, files, bzl_files, not_utf8, builds, workspace_of, repositories
    )
    evaluated, gate_files, computed = evaluate(scan, listing, linked)
    add_computed(scan, computed, sorted_dirs)
    flags = rc_flags(lambda path: tree.read(path) if listed(files, path) else None)
    add_rc_flags(scan, flags, build_dirs, sorted_dirs)
    add_binds(scan, repositories)
    loaded_registers, approximate = registered_by_loaded_code(
        read_builds, files, repositories, build_dirs
    )
    scan.approximate |= approximate
    registered = [
        *repositories.registered,
        *((pattern, ".bazelrc names") for pattern in sorted(flags.registered)),
        *loaded_registers,
    ]
    scan.toolchains = toolchain_packages(registered, repositories, sorted_dirs)
    # The static reader reads what was not evaluated, and every gate's matrix
    # (an evaluated file without its other rule calls: the evaluation has their edges).
    read_whole = {p for p in builds.values() if p not in evaluated or evaluated[p].error}
    # The native core reads a plainly written gate call itself (``Evaluated.native_gates``).
    read_gates = {
        p: evaluated[p] for p in gate_files - read_whole if evaluated[p].native_gates is not None
    }
    wanted = read_whole | (gate_files - read_gates.keys())
    parsed = parse_build_cached(
        [(path, blob_ids.get(path)) for path in builds.values() if path in wanted],
        read_builds,
        linked,
        {path: evaluated[path].rule_lines for path in wanted - read_whole},
    )
    scan.linked = bool(linked)
    scan.workspace_of = workspace_of
    for directory, path in builds.items():
        workspace = workspace_of[directory]
        package = directory[len(workspace) + 1 :] if workspace else directory
        outcome = evaluated.get(path)
        if outcome is not None and not outcome.error:
            for loaded in outcome.loads:
                scan.loads.setdefault(loaded, set()).add(directory)
        else:
            add_read(
                scan, parsed[path], directory, path, package, workspace, repositories, sorted_dirs
            )
            if outcome is not None:
                add_rejected(scan, directory, path, bzl_files, sorted_dirs, outcome.error)
        read = read_gates.get(path) or parsed.get(path)
        native = read if isinstance(read, Evaluated) else None
        below = f"{directory}/" if directory else ""
        if not_utf8 and any(path.startswith(below) for path in not_utf8):
            native = None  # the core did not see every file of the package
        native_matrix = native and native.native_matrix
        if read is not None and (native_matrix is not None or has_gate(read)):
            owned = native and native.owned
            if owned is None:
                owned = tuple(package_files(files, directory, build_dirs, sorted_dirs))
            blob = blob_ids.get(path) or ""
            source = GateSource(read, path, package, workspace, blob, owned, native_matrix)
            scan.gates[directory] = source
            lazy = native_matrix is not None
            scan.packages.add(directory, source if lazy else source.package_object(directory))
    # A build_file may load the tree's .bzl files too: its loads are read before theirs.
    add_built(scan, tree, files, repositories, sorted_dirs)
    add_bzl_labels(scan, tree, bzl_files, repositories, sorted_dirs)
    if isinstance(tree, GitTree):
        add_links(scan, tree.link_targets(), files, sorted_dirs)
    contents = read_files(tree, matrix_files)
    scan.linked |= isinstance(tree, GitTree) and any(tree.is_link(p) for p in matrix_files)
    for path in matrix_files:
        directory = posixpath.dirname(path)
        if directory in scan.packages:
            other = scan.packages[directory].matrix_file
            raise ConfigError(
                f"the package declares its matrix twice, here and in {other}; keep one", path
            )
        matrix = parse_matrix(contents[path], path)
        scan.packages.add(directory, Package(path=directory, matrix=matrix))
        scan.nodes.add(directory)
    return scan


def load_packages(tree: Tree) -> Mapping[str, Package]:
    """Every package of ``tree`` (invariants.yaml or a BUILD gate), keyed by its directory.

    Raises:
        ConfigError: a matrix file or a BUILD file is invalid.
        TreeError: a matrix or BUILD file cannot be read.
    """
    return scan_tree(tree).packages
