"""The edges of a tree's declarations: labels the static reader read, ``load()``s, the
labels ``.bzl`` files name, symbolic links, ``bind()``, the ``.bazelrc``'s flags, and
repositories with a BUILD file given apart."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Set

from oracle_gate.bazel import limits
from oracle_gate.bazel.bazelrc import RcFlags
from oracle_gate.bazel.bzl import BzlFile, scan_bzl
from oracle_gate.bazel.labels import parse_label
from oracle_gate.bazel.read import BuildFile, Dep, parse_build
from oracle_gate.bazel.workspace.links import link_end_in
from oracle_gate.bazel.workspace.repositories import Repositories, loaded_path, written_repo
from oracle_gate.errors import ConfigError
from oracle_gate.graph.model import reachable
from oracle_gate.graph.reading import Scan, read_files
from oracle_gate.repo.directories import at_or_under, enclosing, joined, listed, starting_with
from oracle_gate.repo.trees import Tree

__all__ = [
    "add_binds",
    "add_built",
    "add_bzl_labels",
    "add_links",
    "add_rc_flags",
    "add_read",
    "add_rejected",
    "label_targets",
]

# The package Bazel gives the root WORKSPACE's ``bind()`` targets.
_EXTERNAL = "external"


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
                inside.append(_outside_node(scan, outside, holder))
            for package in inside:
                scan.add_edge(holder, package, why)
        _read_through(scan, link, target)
        if is_dir:
            for node in at_or_under(link, named):
                original = enclosing(target + node[len(link) :], build_dirs)
                if original is not None:
                    scan.add_edge(node, original, why)


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
            moved.append((_outside_node(scan, package, directory), directory, why))
    for holder, directory, why in moved:
        scan.add_edge(holder, directory, why)
        for path in flags.files:
            scan.loads.setdefault(path, set()).add(holder)


def _outside_node(scan: Scan, directory: str, holder: str) -> str:
    """A node for the files a link in ``holder`` leads to outside every Bazel package
    (``lib/f.txt -> ../data/f.txt``): Bazel sees them in ``holder``, so an edit of them
    (which need not touch the link) ripples from this node, as from a package's files."""
    scan.nodes.add(directory)
    scan.workspace_of.setdefault(directory, scan.workspace_of.get(holder, ""))
    return directory


def _read_through(scan: Scan, link: str, target: str) -> None:
    """Who loads a ``.bzl`` file (or reads a ``build_file``) through ``link`` reads its
    target too: an edit of the target changes what they load."""
    for alias in [path for path in scan.loads if path == link or path.startswith(f"{link}/")]:
        real = target + alias[len(link) :]
        scan.loads.setdefault(real, set()).update(scan.loads[alias])


def add_bzl_labels(
    scan: Scan,
    tree: Tree,
    bzl_files: list[str],
    repositories: Repositories,
    sorted_dirs: list[str],
) -> None:
    """Every package that loads a ``.bzl`` file, directly or through others, depends on
    every label that file names (``bazel/bzl.py`` says why), and is one of its loaders."""
    present = set(bzl_files)
    scanned: dict[str, BzlFile] = {}
    loads: dict[str, set[str]] = {}  # .bzl -> the .bzl files it loads
    pending = sorted(path for path in scan.read_loads if path in present)
    while pending:
        contents = read_files(tree, pending)
        found: set[str] = set()
        for path in pending:
            # Not parsed here, but run by the native evaluator, which would not parse it.
            deep = limits.nesting_problem(contents[path].decode("utf-8", "replace"))
            if deep is not None:
                raise ConfigError(deep.message(".bzl file"), path, deep.line)
            scanned[path] = bzl = scan_bzl(contents[path])
            workspace = enclosing(posixpath.dirname(path), repositories.roots) or ""
            package = _bzl_package(path, workspace, sorted_dirs)
            for text in bzl.loads:
                relative_to = "" if text.startswith(("//", "@")) else package
                loaded = loaded_path(text, relative_to, workspace, repositories)
                if loaded is not None:
                    loads.setdefault(path, set()).add(loaded)
            found |= loads.get(path, set())
        pending = sorted((found & present) - set(scanned))
    for start in sorted(set(scan.read_loads) & present):
        loaders = scan.read_loads[start]
        for path in reachable(start, loads):
            scan.loads.setdefault(path, set()).update(loaders)
            scan.read_loads.setdefault(path, set()).update(loaders)
    for path in sorted(scanned):
        _bzl_edges(scan, path, scanned[path], repositories, sorted_dirs)


def _bzl_package(path: str, workspace: str, sorted_dirs: list[str]) -> str:
    """The workspace-relative package holding the ``.bzl`` file at ``path``."""
    directory = enclosing(posixpath.dirname(path), frozenset(sorted_dirs)) or workspace
    return directory[len(workspace) + 1 :] if workspace else directory


def _bzl_edges(
    scan: Scan, path: str, bzl: BzlFile, repositories: Repositories, sorted_dirs: list[str]
) -> None:
    workspace = enclosing(posixpath.dirname(path), repositories.roots) or ""
    loaders = sorted(scan.read_loads.get(path, ()))
    # A Label() is a label of the .bzl file's repository, a plain string one of the
    # repository of the BUILD file that runs the macro: both are taken. So is every
    # repository the file names, as `Label("@v//:x").relative("//z:y")` is `@v//z:y`.
    spaces = {workspace, *(scan.workspace_of.get(loader, "") for loader in loaders)}
    spaces |= {
        root
        for text, ref in bzl.labels
        if text.startswith("@") and (root := repositories.root_of(ref.repo, workspace)) is not None
    }
    if bzl.repository_pieces:  # "@" + repo + "//lib:l": of any repository
        spaces |= repositories.roots
    deps = [
        (root, Dep(ref.package, text, 0, ref.repo, ref.prefix))
        for text, ref in bzl.labels
        for root in {repositories.root_of(written_repo(text, ref.repo), space) for space in spaces}
        if root is not None
    ]
    if bzl.local:  # Label(":x"), attr.label(default = ":x"): the .bzl file's own package
        package = _bzl_package(path, workspace, sorted_dirs)
        deps.append((workspace, Dep(package, f"//{package}:...", 0)))
    if not deps:
        return
    scan.approximate.add(
        (
            path,
            f"{path} is loaded by {len(loaders)} BUILD file(s), which are taken to depend on "
            "every label it names",
        )
    )
    for root, dep in deps:
        why = f"over-approximation: {path} names {dep.label}"
        for target in label_targets(dep.package, dep.prefix, root, sorted_dirs):
            for loader in loaders:
                scan.add_edge(loader, target, why)


def add_read(
    scan: Scan,
    build: BuildFile,
    directory: str,
    path: str,
    package: str,
    workspace: str,
    repositories: Repositories,
    sorted_dirs: list[str],
) -> None:
    """Edges of a BUILD file the static reader read: its labels, and its loads."""
    for dep in (*build.deps, *build.named_repo_deps):
        root = repositories.root_of(written_repo(dep.label, dep.repo), workspace)
        why = f"{path}:{dep.line} names {dep.label}"
        if root is None:
            _add_unknown_repository(scan, repositories, directory, path, why, sorted_dirs)
            continue
        if dep.prefix:
            why += f", a computed label: every package under //{dep.package}"
            scan.approximate.add((path, why))
        for target in label_targets(dep.package, dep.prefix, root, sorted_dirs):
            scan.add_edge(directory, target, why)
    _add_loads(scan, build, directory, package, workspace, repositories)


def _add_unknown_repository(
    scan: Scan,
    repositories: Repositories,
    directory: str,
    path: str,
    why: str,
    sorted_dirs: list[str],
) -> None:
    """A label of a repository this reader does not know: outside the tree, unless the
    root WORKSPACE may hide one in it; then it may name any package."""
    if repositories.unknown:
        why = f"{why}, a repository {repositories.unknown} may declare: every package"
        scan.approximate.add((path, why))
        for target in sorted_dirs:
            scan.add_edge(directory, target, why)


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


def _add_loads(
    scan: Scan,
    build: BuildFile,
    directory: str,
    package: str,
    workspace: str,
    repositories: Repositories,
) -> None:
    for text, _symbols in build.loads:
        # An absolute label means the same file from every package: one cache entry.
        relative_to = "" if text.startswith(("//", "@")) else package
        loaded = loaded_path(text, relative_to, workspace, repositories)
        if loaded is not None:
            scan.loads.setdefault(loaded, set()).add(directory)
            scan.read_loads.setdefault(loaded, set()).add(directory)
