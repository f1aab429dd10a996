"""``.bzl`` files the static reader's BUILD files load, directly or through others: a macro
may use any label the file names, so each loader depends on all of them and on every
``.bzl`` file it reaches."""

from __future__ import annotations

import posixpath

from oracle_gate.bazel import limits
from oracle_gate.bazel.bzl import BzlFile, scan_bzl
from oracle_gate.bazel.read import Dep
from oracle_gate.bazel.workspace.repositories import Repositories, loaded_path, written_repo
from oracle_gate.errors import ConfigError
from oracle_gate.graph.edges.targets import label_targets
from oracle_gate.graph.model import reachable
from oracle_gate.graph.reading import Scan, read_files
from oracle_gate.repo.directories import enclosing
from oracle_gate.repo.trees import Tree

__all__ = ["add_bzl_labels"]


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
