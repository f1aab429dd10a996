"""A Bazel gate's package: what its matrix is computed from, the packages keyed by
directory (a gate built on first look), and the cache of built gates."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, KeysView, Mapping
from dataclasses import dataclass
from typing import TypeVar, overload

from oracle_gate.bazel.read import BuildFile
from oracle_gate.bazel.starlark import Evaluated
from oracle_gate.config.matrix import gate_matrix, native_gate_deps, native_gate_matrix
from oracle_gate.frozen import quick_init
from oracle_gate.model import Package

__all__ = ["GateSource", "Packages", "gates_of", "has_gate"]

_T = TypeVar("_T")


def gates_of(read: BuildFile | Evaluated) -> BuildFile | None:
    """The gate calls the static reader read, or the native core's (converted on first use)."""
    return read if isinstance(read, BuildFile) else read.gates


@quick_init
@dataclass(frozen=True)
class GateSource:
    """Everything a Bazel gate's matrix is computed from, kept to recompute it cheaply."""

    read: BuildFile | Evaluated  # the static reader's reading, or the native core's
    path: str  # the BUILD file
    package: str  # the Bazel package name, workspace-relative
    workspace: str
    blob: str  # the BUILD file's blob id ("" when unknown: a working tree)
    owned: tuple[str, ...]  # the package's files, package-relative, sorted
    # The matrix the native core built for exactly these files (``Evaluated.native_matrix``),
    # or None: ``gate_matrix`` builds it from ``build``.
    native_matrix: object | None = None

    @property
    def build(self) -> BuildFile:
        found = gates_of(self.read)
        assert found is not None, "a gate source always has its gate calls"
        return found

    def package_object(self, directory: str) -> Package:
        key = (self.blob, directory, self.workspace, self.owned)
        found = _GATES.get(key) if self.blob else None
        if found is None:
            found = _gate_package(self, directory)
            if self.blob:
                if len(_GATES) > _GATES_LIMIT:
                    _GATES.clear()
                _GATES[key] = found
        return found


def has_gate(read: BuildFile | Evaluated) -> bool:
    gates = gates_of(read)
    return gates is not None and bool(gates.gates)


class Packages(Mapping[str, Package]):
    """Packages by directory, where a gate the native core read plainly right is built
    on first look: a cold ``select`` needs the rows of the gates it selects only, and
    building every gate's rows was a fifth of its time. Such a gate cannot fail to
    build (the core found its matrix right), so no error waits for the first look.
    """

    def __init__(self, entries: Mapping[str, Package | GateSource] | None = None) -> None:
        self._entries: dict[str, Package | GateSource] = dict(entries or {})

    def __getitem__(self, directory: str) -> Package:
        found = self._entries[directory]
        if isinstance(found, GateSource):
            found = self._entries[directory] = found.package_object(directory)
        return found

    @overload
    def get(self, directory: str, /) -> Package | None: ...
    @overload
    def get(self, directory: str, /, default: Package | _T) -> Package | _T: ...
    def get(self, directory: str, /, default: object = None) -> object:
        # Mapping's own get pays for a KeyError on each directory that is not a package.
        return self[directory] if directory in self._entries else default

    def __contains__(self, directory: object) -> bool:
        return directory in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> KeysView[str]:
        return self._entries.keys()

    def add(self, directory: str, found: Package | GateSource) -> None:
        self._entries[directory] = found

    def copy(self) -> Packages:
        return Packages(self._entries)

    def declared_deps(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """Each package's directory, matrix file and ``deps``, building no gate."""
        for directory, found in self._entries.items():
            if isinstance(found, GateSource):
                yield (
                    directory,
                    posixpath.basename(found.path),
                    native_gate_deps(found.native_matrix),
                )
            else:
                yield directory, found.matrix_file, found.matrix.deps


# Gate matrices by (BUILD blob id, directory, workspace, the package's files):
# everything a matrix depends on, so a hit is exact. Cleared with the parse cache's size.
_GATES: dict[tuple[str, str, str, tuple[str, ...]], Package] = {}
_GATES_LIMIT = 200_000


def _gate_package(source: GateSource, directory: str) -> Package:
    path, package, workspace = source.path, source.package, source.workspace
    if source.native_matrix is not None:
        matrix, name = native_gate_matrix(source.native_matrix)
    else:
        matrix, name = gate_matrix(source.build, path, package, workspace, lambda: source.owned)
    # A nested workspace's gate cannot be named from the root workspace's `bazel test`.
    target = f"//{package}:{name}" if not workspace else None
    return Package(
        path=directory, matrix=matrix, matrix_file=posixpath.basename(path), target=target
    )
