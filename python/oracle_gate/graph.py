"""The package graph: which directories declare a matrix, and who depends on whom.

networkx stays inside this module; everything else asks ``PackageGraph``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping

import networkx as nx

from oracle_gate.errors import ConfigError
from oracle_gate.matrix import MATRIX_FILE, parse_matrix
from oracle_gate.model import Package
from oracle_gate.trees import GitTree, Tree

__all__ = ["PackageGraph", "load_packages"]


def _matrix_files(tree: Tree) -> list[str]:
    return [path for path in tree.files() if posixpath.basename(path) == MATRIX_FILE]


def load_packages(tree: Tree) -> dict[str, Package]:
    """Every package of ``tree``, keyed by its repo-relative directory.

    Raises:
        ConfigError: a matrix file is invalid.
        TreeError: a matrix file cannot be read.
    """
    files = _matrix_files(tree)
    if isinstance(tree, GitTree):
        contents = tree.read_many(files)
    else:
        contents = {path: tree.read(path) for path in files}
    packages: dict[str, Package] = {}
    for path in files:
        directory = posixpath.dirname(path)
        packages[directory] = Package(path=directory, matrix=parse_matrix(contents[path], path))
    return packages


def _resolve_dep(package: Package, dep: str) -> str:
    """A deps entry (``../codec``, ``//libs/codec``, ``//libs/codec:gate``) as a directory."""
    if dep.startswith("//"):
        return dep[2:].split(":", 1)[0].strip("/")
    joined = posixpath.normpath(posixpath.join(package.path or ".", dep))
    return "" if joined == "." else joined


class PackageGraph:
    """Packages as nodes; an edge A -> B means A depends on B."""

    def __init__(self, packages: Mapping[str, Package]) -> None:
        self.packages = dict(packages)
        self._graph: nx.DiGraph[str] = nx.DiGraph()
        self._graph.add_nodes_from(self.packages)
        for package in self.packages.values():
            for dep in package.matrix.deps:
                target = _resolve_dep(package, dep)
                if target not in self.packages or target.startswith(".."):
                    raise ConfigError(
                        f"deps entry {dep!r} names no package (resolved to {target!r})",
                        package.join(MATRIX_FILE),
                    )
                self._graph.add_edge(package.path, target)

    def package_of(self, path: str) -> Package | None:
        """The nearest package enclosing the repo-relative ``path``, if any."""
        directory = posixpath.dirname(path)
        while True:
            if directory in self.packages:
                return self.packages[directory]
            if not directory:
                return None
            directory = posixpath.dirname(directory)

    def dependents(self, packages: Iterable[str]) -> set[str]:
        """Every package that transitively depends on one of ``packages``."""
        found: set[str] = set()
        for package in packages:
            if package in self._graph:
                found |= nx.ancestors(self._graph, package)
        return found

    def resolve(self, name: str) -> Package:
        """The package at repo-relative directory ``name`` (``.`` is the root).

        Raises:
            ConfigError: no package is declared there.
        """
        key = posixpath.normpath(name.strip("/"))
        key = "" if key == "." else key
        if key not in self.packages:
            raise ConfigError(f"not a package: no {MATRIX_FILE} in this directory", name)
        return self.packages[key]
