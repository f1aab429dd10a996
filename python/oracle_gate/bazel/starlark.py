"""BUILD files evaluated as Starlark by the native core (``rust/src/starlark/``).

The native core runs each BUILD file with the repository's own ``.bzl`` files
loaded for real (macros, constants, ``native.*`` rules, ``rule()`` with its
attribute defaults) and records every label-like string each rule call is
given. Symbols loaded from repositories that are not in the tree are opaque:
a call to one records every label-like string it is given, marked with the
symbol, so the graph over-approximates there and says so. A file the core
cannot evaluate comes back with an error, and the caller reads it with the
static reader (``buildfile.py``) instead. The pure-Python backend has no
evaluator: ``graph.py`` uses the static reader throughout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from oracle_gate import backend
from oracle_gate.bazel.buildfile import BuildFile, gates_from_native

__all__ = ["Evaluated", "Record", "available", "evaluate_build_files"]


@dataclass(frozen=True)
class Record:
    """One label-like string a rule call was given."""

    label: str
    location: str  # ``file:line`` of the call (a macro's own line for a macro's rule)
    opaque: str  # "" for a rule; else the opaque symbol (``@rules_go//go:def.bzl%go_library``)


@dataclass(frozen=True)
class Evaluated:
    """What one BUILD file's evaluation found."""

    records: tuple[Record, ...]
    loads: tuple[str, ...]  # repository-relative .bzl files it loads, transitively
    error: str  # why it could not be evaluated; "" when it was
    # Lines (1-based, inclusive) holding only calls of functions other than the
    # gate: the static reader finds the same gate without them.
    rule_lines: tuple[tuple[int, int], ...] = ()
    # Its oracle_gate(...) calls as the static reader reads them, when the native
    # core could read each one (plain literals); None sends the file to the reader.
    gates: BuildFile | None = None


def available() -> bool:
    """Whether BUILD files can be evaluated (the native core is the backend in use)."""
    return backend.name() == "native"


def evaluate_build_files(
    builds: Sequence[tuple[str, str, str, bytes]],
    bzl: Mapping[str, bytes],
    own_names: Mapping[str, Sequence[str]],
) -> list[Evaluated]:
    """Evaluate BUILD files in parallel, in input order.

    Args:
        builds: (BUILD path, package, workspace root, bytes); paths repository-relative,
            the package relative to its workspace root ("" for the main one).
        bzl: every ``.bzl`` file of the tree by repository-relative path.
        own_names: each workspace root's own repository names (``workspace(name = ...)``).
    """
    found = backend.evaluate_build_files(
        list(builds),
        sorted(bzl.items()),
        [(root, list(names)) for root, names in own_names.items()],
    )
    return [
        Evaluated(
            records=tuple(Record(label, at, opaque) for label, at, opaque in records),
            loads=tuple(loads),
            error=error,
            rule_lines=tuple(rule_lines),
            gates=None if gates is None else gates_from_native(gates),
        )
        for records, loads, error, rule_lines, gates in found
    ]
