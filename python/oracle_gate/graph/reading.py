"""What one tree declares while it is read (``Scan``), what was listed before any
BUILD file was evaluated (``Listing``), and the reads of its files."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from oracle_gate.bazel.workspace.repositories import Repositories
from oracle_gate.graph.gates import GateSource, Packages
from oracle_gate.repo.trees import GitTree, Tree

__all__ = ["Listing", "Reads", "Scan", "is_utf8", "read_files"]


@dataclass
class Scan:
    """What one tree declares, before it becomes a graph."""

    packages: Packages = field(default_factory=lambda: Packages())
    nodes: set[str] = field(default_factory=set)
    # Reverse adjacency: target -> {source: why}, the first declaration of an edge kept.
    dependents: dict[str, dict[str, str]] = field(default_factory=dict)
    loads: dict[str, set[str]] = field(default_factory=dict)
    workspace_of: dict[str, str] = field(default_factory=dict)
    gates: dict[str, GateSource] = field(default_factory=dict)
    # A BUILD file or matrix that is a symlink: its content can change with no
    # diff entry of its own, so a head graph may not be derived from this one.
    linked: bool = False
    # The loads of BUILD files the static reader read (not evaluated): .bzl -> loaders.
    read_loads: dict[str, set[str]] = field(default_factory=dict)
    # Where edges over-approximate what the reader could not evaluate:
    # (the BUILD or .bzl file, why), for the report.
    approximate: set[tuple[str, str]] = field(default_factory=set)
    # The directories .bazelignore hides (``bazel_ignored``).
    ignored: tuple[str, ...] = ()
    # The root of each repository the main one names (``Repositories.named``).
    repositories: dict[str, str] = field(default_factory=dict)
    # The packages that may configure every rule (``toolchain_packages``) -> why.
    toolchains: dict[str, str] = field(default_factory=dict)

    def add_edge(self, source: str, target: str, why: str) -> None:
        """``source`` depends on ``target`` because of ``why``, unless it already did."""
        if source != target:
            self.dependents.setdefault(target, {}).setdefault(source, why)


def read_files(tree: Tree, paths: list[str]) -> dict[str, bytes]:
    if isinstance(tree, GitTree):
        return tree.read_many(paths)
    return {path: tree.read(path) for path in paths}


class Reads:
    """Reads files of one tree, each once: the evaluator and the static reader share them."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.read: dict[str, bytes] = {}

    def __call__(self, paths: list[str]) -> Mapping[str, bytes]:
        """Every file read so far: ``paths`` among them."""
        if not self.read:  # a monorepo's first batch is tens of thousands of BUILD files
            self.read = read_files(self.tree, paths)
            return self.read
        missing = [path for path in paths if path not in self.read]
        self.read.update(read_files(self.tree, missing) if missing else {})
        return self.read


def is_utf8(path: str) -> bool:
    try:
        path.encode()
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class Listing:
    """What a scan found of a tree before any BUILD file is evaluated: its files, which
    are BUILD files (by directory) and ``.bzl`` files, which names are not UTF-8, and the
    repository each package is in."""

    tree: Tree
    read: Callable[[list[str]], Mapping[str, bytes]]
    files: tuple[str, ...]
    bzl_files: list[str]
    not_utf8: frozenset[str]
    builds: Mapping[str, str]
    workspace_of: Mapping[str, str]
    repositories: Repositories
