"""A BUILD file the static reader read (not evaluated): each label it names and each
``load()`` makes an edge, since a change of the named package or of the loaded file can
change what the package builds. A label of a repository the reader does not know may
name any package when the root WORKSPACE may hide one in the tree."""

from __future__ import annotations

from oracle_gate.bazel.read import BuildFile
from oracle_gate.bazel.workspace.repositories import Repositories, loaded_path, written_repo
from oracle_gate.graph.edges.targets import label_targets
from oracle_gate.graph.reading import Scan

__all__ = ["add_read"]


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
