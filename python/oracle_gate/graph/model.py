"""The package graph: directories as nodes, and who depends on whom."""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import posixpath
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping

from oracle_gate.config.matrix import MATRIX_FILE
from oracle_gate.errors import ConfigError
from oracle_gate.graph.gates import GateSource, Packages
from oracle_gate.model import Matrix, Package
from oracle_gate.repo.directories import at_or_under, enclosing

__all__ = ["PackageGraph", "reachable"]


def _resolve_dep(directory: str, dep: str) -> str:
    """A deps entry (``../codec``, ``//libs/codec``, ``//libs/codec:gate``) of the package
    in ``directory``, as a directory."""
    if dep.startswith("//"):
        return dep[2:].split(":", 1)[0].strip("/")
    joined = posixpath.normpath(posixpath.join(directory or ".", dep))
    return "" if joined == "." else joined


def reachable(node: str, adjacency: Mapping[str, Iterable[str]]) -> set[str]:
    """Every node one or more steps from ``node`` in ``adjacency``, ``node`` left out:
    the one walk the graph's dependents, its dependencies and the loads of ``.bzl``
    files take."""
    seen: set[str] = set()
    stack = [node]
    while stack:
        for dependent in adjacency.get(stack.pop(), ()):
            if dependent not in seen:
                seen.add(dependent)
                stack.append(dependent)
    seen.discard(node)
    return seen


class PackageGraph:
    """Directories as nodes; an edge A -> B means A depends on B.

    ``packages`` holds the directories that declare a matrix; other nodes are
    Bazel packages without a gate, and directories named by a label but absent
    from the tree (a package the patch deleted that something still names).
    """

    def __init__(
        self,
        packages: Mapping[str, Package],
        *,
        nodes: Iterable[str] = (),
        dependents: Mapping[str, Mapping[str, str]] | None = None,
        loads: Mapping[str, Iterable[str]] | None = None,
        derivable: bool = False,
        gate_sources: Mapping[str, GateSource] | None = None,
        bazel_packages: Iterable[str] = (),
        approximate: tuple[str, ...] = (),
        former: frozenset[str] = frozenset(),
        ignored: tuple[str, ...] = (),
        repositories: Mapping[str, str] | None = None,
        toolchains: Mapping[str, str] | None = None,
    ) -> None:
        self.packages = packages.copy() if isinstance(packages, Packages) else Packages(packages)
        # Why some edges over-approximate (a computed label, a loaded .bzl file's labels).
        self.approximate = approximate
        # Built statically from a commit with no symlinked BUILD or matrix file:
        # ``derive_graph`` may hand this very graph to a head the diff leaves alone.
        self.derivable = derivable
        self._owners = frozenset(nodes) | frozenset(self.packages)
        # Reverse adjacency with the declaration of each edge: node -> {each node that
        # depends on it directly: why}. Dicts, not a graph library: importing one costs a
        # fresh process ~0.3 s. The caller's dicts are never changed: a ``deps`` edge
        # goes into a copy.
        self._dependents_of: dict[str, Mapping[str, str]] = dict(dependents or {})
        for directory, matrix_file, deps in self.packages.declared_deps():
            declared_in = posixpath.join(directory, matrix_file)
            for dep in deps:
                target = _resolve_dep(directory, dep)
                known = target in self.packages or target in former
                if not known or target.startswith(".."):
                    raise ConfigError(
                        f"deps entry {dep!r} names no package (resolved to {target!r})",
                        declared_in,
                    )
                found = self._dependents_of.get(target, {})
                if target != directory and directory not in found:
                    why = f"{declared_in} deps {dep}"
                    self._dependents_of[target] = {**found, directory: why}
        self._nodes = {
            *self._owners,
            *self._dependents_of,
            *itertools.chain.from_iterable(self._dependents_of.values()),
        }
        self._loads = {path: frozenset(users) for path, users in (loads or {}).items()}
        self._gate_sources = dict(gate_sources or {})
        self._bazel_dirs = frozenset(bazel_packages)
        # The directories .bazelignore hides, each ending in '/'.
        self.ignored = ignored
        # The root of each repository of the tree, by every name the main one gives it.
        self.repositories = dict(repositories or {})
        # The packages that may configure every rule (``toolchain_packages``: registered
        # toolchains and platforms, labels the .bazelrc's flags name) -> why.
        self.toolchains = dict(toolchains or {})

    def _with_paths_moved(self, added: set[str], removed: set[str]) -> PackageGraph:
        """This graph for a tree where ``added`` paths appeared and ``removed`` ones went.

        Nodes and edges do not depend on those paths (none is a BUILD, matrix or
        workspace file); a Bazel gate's matrix may, through ``glob()``.
        """
        moved: dict[str, set[str]] = {}
        for path in added | removed:
            directory = enclosing(posixpath.dirname(path), self._bazel_dirs) or ""
            if directory in self._gate_sources:
                moved.setdefault(directory, set()).add(path)
        derived = copy.copy(self)
        derived.packages = self.packages.copy()
        derived._gate_sources = dict(self._gate_sources)
        for directory, paths in moved.items():
            source = self._gate_sources[directory]
            prefix = f"{directory}/" if directory else ""
            owned = set(source.owned)
            owned -= {path[len(prefix) :] for path in paths & removed}
            owned |= {path[len(prefix) :] for path in paths & added}
            # The native core's matrix was for the old files: gate_matrix builds it anew.
            source = dataclasses.replace(source, owned=tuple(sorted(owned)), native_matrix=None)
            derived._gate_sources[directory] = source
            derived.packages.add(directory, source.package_object(directory))
        return derived

    def package_of(self, path: str) -> Package | None:
        """The nearest package enclosing the repo-relative ``path``, if any."""
        directory = enclosing(posixpath.dirname(path), self.packages)
        return None if directory is None else self.packages[directory]

    def matrix_declared_by(self, path: str) -> Matrix | None:
        """The matrix ``path`` declares (invariants.yaml, or oracle_gate() in BUILD), if any."""
        package = self.packages.get(posixpath.dirname(path))
        if package is None or package.join(package.matrix_file) != path:
            return None
        return package.matrix

    def node_of(self, path: str) -> str | None:
        """The nearest node (Bazel package or matrix package) enclosing ``path``, if any."""
        return enclosing(posixpath.dirname(path), self._owners)

    def bazel_package_of(self, path: str) -> str | None:
        """The Bazel package (a directory with a BUILD file) holding ``path``, if any."""
        return enclosing(posixpath.dirname(path), self._bazel_dirs)

    def bazel_owner(self, path: str) -> str | None:
        """The Bazel package whose globs can see ``path``: ``bazel_package_of``, or None
        under a directory .bazelignore hides."""
        if self.ignored and path.startswith(self.ignored):
            return None
        return self.bazel_package_of(path)

    def enclosing_package(self, node: str) -> Package | None:
        """The nearest package declaring a matrix at or above directory ``node``."""
        directory = enclosing(node, self.packages)
        return None if directory is None else self.packages[directory]

    def has_node(self, node: str) -> bool:
        """Whether ``node`` is in the graph (present, or named by a label)."""
        return node in self._nodes

    def dependents(self, packages: Iterable[str]) -> set[str]:
        """Every node that transitively depends on one of ``packages``."""
        found: set[str] = set()
        for package in packages:
            found |= self._ancestors(package)
        return found

    def dependencies(self, package: str) -> tuple[str, ...]:
        """Every node ``package`` depends on, transitively, in sorted order."""
        return tuple(sorted(reachable(package, self._dependencies_of)))

    @functools.cached_property
    def _dependencies_of(self) -> dict[str, set[str]]:
        """Adjacency: node -> the nodes it depends on directly (few commands ask)."""
        dependencies: defaultdict[str, set[str]] = defaultdict(set)
        for dependency, found in self._dependents_of.items():
            for dependent in found:
                dependencies[dependent].add(dependency)
        return dict(dependencies)

    def _ancestors(self, node: str) -> set[str]:
        """Every node with a path of one or more edges to ``node``, ``node`` left out."""
        return reachable(node, self._dependents_of)

    def dependency_chains(self, sources: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """For each node that depends on one of ``sources`` through at least one edge: a
        shortest chain to it.

        The chain starts at the dependent and ends at the source it depends on
        (``(c, b, a)``: c depends on b, which depends on a). A source is in the
        result only when it depends on a source itself: another one, or itself
        around a cycle (``dependents`` leaves that one
        out). Ties are broken by sorted order, so the same graph always explains
        itself the same way.
        """
        chains: dict[str, tuple[str, ...]] = {}
        queue: deque[tuple[str, tuple[str, ...]]] = deque(
            (node, (node,)) for node in sorted(set(sources)) if node in self._nodes
        )
        while queue:
            node, chain = queue.popleft()
            for dependent in sorted(self._dependents_of.get(node, ())):
                if dependent not in chains:
                    chains[dependent] = (dependent, *chain)
                    queue.append((dependent, chains[dependent]))
        return chains

    def why(self, dependent: str, dependency: str) -> str:
        """The declaration that makes ``dependent`` depend on ``dependency`` directly."""
        return self._dependents_of.get(dependency, {}).get(dependent, "")

    def loaders(self, path: str) -> frozenset[str]:
        """The nodes whose BUILD file ``load()``s the .bzl file at ``path``."""
        return self._loads.get(path, frozenset())

    def nodes(self) -> frozenset[str]:
        """Every node: Bazel packages, matrix packages and directories labels name."""
        return frozenset(self._nodes)

    def nodes_at_or_under(self, directory: str) -> list[str]:
        """The nodes at or below ``directory`` (every node for the root, ""), sorted."""
        ordered = sorted(self._nodes)
        return ordered if not directory else at_or_under(directory, ordered)

    def resolve(self, name: str) -> Package:
        """The package at repo-relative directory ``name`` (``.`` is the root).

        Raises:
            ConfigError: no package is declared there.
        """
        key = posixpath.normpath(name.strip("/"))
        key = "" if key == "." else key
        if key not in self.packages:
            raise ConfigError(
                f"not a package: no {MATRIX_FILE} or oracle_gate() in this directory", name
            )
        return self.packages[key]
