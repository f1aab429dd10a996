"""BUILD files evaluated as Starlark by the native core (``rust/src/starlark/``).

The native core runs each BUILD file with the repository's own ``.bzl`` files
loaded for real (macros, constants, ``native.*`` rules, ``rule()`` with its
attribute defaults) and records every label-like string each rule call is
given, and resolves them into the edges of the file's package. Symbols loaded
from repositories that are not in the tree are opaque: a call to one records
every label-like string it is given, marked with the symbol, so the graph
over-approximates there and says so. A file the core
cannot evaluate comes back with an error, and the caller reads it with the
static reader (``bazel/read/``) instead. The pure-Python backend has no
evaluator: ``graph/`` uses the static reader throughout.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from oracle_gate import backend
from oracle_gate.bazel.read import BuildFile, gates_from_native
from oracle_gate.frozen import quick_init

__all__ = [
    "Evaluated",
    "Evaluation",
    "NativeGates",
    "available",
    "evaluate_build_files",
]


class NativeGates(Protocol):
    """A BUILD file's gate calls held by the native core, made Python values on ``read``."""

    def read(self) -> object:
        """``(calls, invariant names)``, as ``gates_from_native`` reads them."""

    def __len__(self) -> int:
        """The number of gate calls."""


@quick_init  # a monorepo's cold graph makes one per BUILD file
@dataclass(frozen=True, eq=False)
class Evaluated:
    """What one BUILD file's evaluation found."""

    loads: tuple[str, ...]  # repository-relative .bzl files it loads, transitively
    error: str  # why it could not be evaluated; "" when it was
    # Lines (1-based, inclusive) holding only calls of functions other than the
    # gate: the static reader finds the same gate without them.
    rule_lines: tuple[tuple[int, int], ...] = ()
    # Its oracle_gate(...) calls as the native core holds them (``gates``), when it
    # could read each one (plain literals); None sends the file to the static reader.
    native_gates: NativeGates | None = None
    # The package's files, package-relative and sorted, when it calls a gate (and the
    # core was given the tree's files): what the gate's ``glob()``s see.
    owned: tuple[str, ...] | None = None
    # The matrix of its one gate, when the native core found it plainly right
    # (``config/matrix.py``'s ``native_gate_matrix`` reads it); None: ask ``gate_matrix``.
    native_matrix: object | None = None

    @property
    def declares_gate(self) -> bool:
        """Whether the native core read at least one gate call (False: none, or unread)."""
        return self.native_gates is not None and len(self.native_gates) > 0

    @functools.cached_property
    def gates(self) -> BuildFile | None:
        """The gate calls as the static reader reads them, or None (read the file)."""
        return None if self.native_gates is None else gates_from_native(self.native_gates.read())


def available() -> bool:
    """Whether BUILD files can be evaluated (the native core is the backend in use)."""
    return backend.name() == "native"


@dataclass(frozen=True)
class Evaluation:
    """What the BUILD files of a tree gave, evaluated together."""

    outcomes: list[Evaluated]  # per BUILD file, in input order
    # {target directory: {package directory: why}}: every label a rule call names, as
    # ``select --explain`` shows it (``file:line`` of the call, a macro's own line for
    # a macro's rule, and the label), the first kept; a monorepo has 100,000s.
    dependents: dict[str, dict[str, str]]
    # (index of the BUILD file, package prefix, why, root of the repository it is in): a computed
    # label's literal part, which names every package under the prefix.
    computed: list[tuple[int, str, str, str]]
    approximate: list[tuple[str, str]]  # (BUILD file, why its edges over-approximate)


def evaluate_build_files(
    builds: Sequence[tuple[str, str, str, bytes]],
    bzl: Mapping[str, bytes],
    own_names: Mapping[str, Sequence[str]],
    files: Sequence[str] | None = None,
    named: Mapping[str, str] | None = None,
    unknown: str = "",
    links: Iterable[str] = (),
    ignored: Sequence[str] = (),
) -> Evaluation:
    """Evaluate BUILD files in parallel.

    Args:
        builds: (BUILD path, package, workspace root, bytes); paths repository-relative,
            the package relative to its workspace root ("" for the main one).
        bzl: every ``.bzl`` file of the tree by repository-relative path.
        own_names: each workspace root's own repository names (``workspace(name = ...)``).
        files: every file of the tree, sorted; given, a gate written plainly right
            comes back with its matrix (``Evaluated.native_matrix``).
        named: the root of each repository the main one names (``local_repository``),
            and of the main one under its own names.
        unknown: why a repository name not in ``named`` may lie in the tree ("" if it
            cannot); then a label of one may name every package.
        links: the files committed as symbolic links; a ``glob()`` that may reach one
            is opaque (Bazel follows a link to a directory).
        ignored: the directories ``.bazelignore`` names, each ending in ``/``:
            ``glob()`` does not enter them.
    """
    dependents, computed, approximate, found = backend.evaluate_build_files(
        list(builds),
        sorted(bzl.items()),
        [(root, list(names)) for root, names in own_names.items()],
        None if files is None else list(files),
        sorted((named or {}).items()),
        unknown,
        sorted(links),
        list(ignored),
    )
    outcomes = [
        Evaluated(loads, error, rule_lines, cast(NativeGates | None, gates), owned, matrix)
        for loads, error, rule_lines, gates, owned, matrix in found
    ]
    return Evaluation(outcomes, dependents, computed, approximate)
