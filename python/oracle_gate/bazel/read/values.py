"""What the static reader makes of a BUILD file: its values (``Value``: literals,
``Call``, ``Glob``, ``Unknown``), the labels they may hold, and the parsed file
(``BuildFile``, ``Dep``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeAlias

from oracle_gate.bazel.labels import (
    FORMAT_MARKER,
    visible_to_a_target,
)
from oracle_gate.bazel.read.tables import ARGUMENTS_OF_NON_RULES, NOT_DEPS, NOT_RULES, VISIBILITY

__all__ = [
    "RELATIVE",
    "BuildFile",
    "Call",
    "Dep",
    "Glob",
    "Texts",
    "Unknown",
    "Value",
    "as_start",
    "dependency_arguments",
    "extend",
    "known_part",
    "starts_of",
    "strings_of",
]


@dataclass(frozen=True)
class Glob:
    """A ``glob()`` call, evaluated later against the tree (``evaluate_glob``)."""

    include: tuple[str, ...]
    exclude: tuple[str, ...]
    exclude_directories: bool
    line: int


@dataclass(frozen=True)
class Unknown:
    """A value the static reader cannot compute, summarised by the strings it may hold.

    ``strings`` are strings the value may be or hold, whole. Every other string it may
    be or hold (one the reader could not finish) starts with one of ``starts``: ``""``
    when nothing is known of it, ``"//libs/"`` for ``"//libs/" + n``, ``"."`` (a start
    neither ``/`` nor ``@``) when it can be no absolute label. ``maybe_str`` is False for
    a value that is surely no string (a list, a dict, a number): adding it makes no new
    string. ``opaque`` marks a value whose labels are counted elsewhere (a loaded
    ``.bzl`` file's, which the graph takes) or that names no package by itself
    (``package_name()``): any string made from it may be any label. ``length`` is the
    number of items of a list the reader knows the length of but does not list (a long
    ``range()``), so the limits on what a file builds (``limits.py``) still hold.
    """

    line: int
    text: str
    strings: tuple[str, ...]
    starts: tuple[str, ...] = ()
    maybe_str: bool = True
    opaque: bool = False
    length: int | None = None


@dataclass(frozen=True)
class Call:
    """A function call: a rule, a macro, ``invariant()``, ``struct()``..."""

    function: str
    line: int
    args: tuple[Value, ...]
    kwargs: tuple[tuple[str, Value], ...]
    kwarg_lines: tuple[tuple[str, int], ...] = ()

    def get(self, key: str) -> Value | None:
        for name, value in self.kwargs:
            if name == key:
                return value
        return None

    def line_of(self, key: str) -> int:
        for name, line in self.kwarg_lines:
            if name == key:
                return line
        return self.line


# A value is a str, int, float, bool, None, a tuple (a Starlark list; a Glob inside a
# tuple splices its matches in), a dict, a Call or an Unknown.
Value: TypeAlias = (
    str
    | int
    | float
    | bool
    | tuple["Value", ...]
    | dict[str, "Value"]
    | Glob
    | Call
    | Unknown
    | None
)


# The start of a string that can be no absolute label (it starts neither with "/" nor
# "@"), whatever follows: a file glob() finds, "lib_" + x, type(x).
RELATIVE = "."


def strings_of(value: Value) -> Iterator[str]:
    """Every string in ``value``, recursively (dict keys included: select() conditions),
    but in a call's arguments that name no dependency (``dependency_arguments``)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from strings_of(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_of(item)
    elif isinstance(value, Call):
        for argument, item in dependency_arguments(value):
            strings = strings_of(item)
            # of a visibility (``VISIBILITY``) only a target's package group counts
            visibility = argument in VISIBILITY
            yield from filter(visible_to_a_target, strings) if visibility else strings
    elif isinstance(value, Unknown):
        yield from value.strings


def _counts(function: str, key: str | None) -> bool:
    """Whether argument ``key`` (None: a positional one) of a call of ``function`` may
    name dependencies: not a ``name``, ``tags``... (``NOT_DEPS``), nor most arguments
    of ``package()``, ``load()``... (``NOT_RULES``). ``rust/src/starlark/values.rs``'s
    ``argument_role`` says the same."""
    kind = function.rsplit(".", 1)[-1]
    if kind in NOT_RULES:
        return (kind, key) in ARGUMENTS_OF_NON_RULES
    return key not in NOT_DEPS


def dependency_arguments(call: Call, macro: bool = False) -> Iterator[tuple[str | None, Value]]:
    """The arguments of ``call`` that may name dependencies (``_counts``; every argument
    of a ``macro``), each with its keyword (None: a positional one)."""
    for item in call.args:
        if macro or _counts(call.function, None):
            yield None, item
    for key, item in call.kwargs:
        if macro or _counts(call.function, key):
            yield key, item


def starts_of(value: Value) -> Iterator[str]:
    """The starts (``Unknown.starts``) of the strings in ``value`` the reader could not finish."""
    if isinstance(value, Unknown):
        yield from value.starts
    elif isinstance(value, Glob):
        yield RELATIVE  # the files it finds: package-relative paths
    elif isinstance(value, tuple):
        for item in value:
            yield from starts_of(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from starts_of(item)
    elif isinstance(value, Call):
        for _, item in dependency_arguments(value):
            yield from starts_of(item)


def known_part(start: str) -> str:
    """What a start surely begins with: up to its first format marker (``"//libs/%s"``
    starts a string ``"%s" % x`` made, whose ``x`` is unknown)."""
    marker = FORMAT_MARKER.search(start)
    return start[: marker.start()] if marker else start


def as_start(text: str) -> str:
    """``text`` as the start of an unfinished string: the same, or ``RELATIVE`` when no
    string starting so can be an absolute label."""
    known = known_part(text)
    if known in ("", "/") or known.startswith(("//", "@")):
        return text
    return RELATIVE


def extend(known: str, start: str) -> str:
    """The start of ``known`` followed by a string that starts with ``start``."""
    if start == RELATIVE and known_part(known).startswith(("//", "@")):
        return known
    return as_start(known + start)


Texts: TypeAlias = tuple[frozenset[str], frozenset[str]]


@dataclass(frozen=True)
class Dep:
    """An absolute label in a BUILD file: a dependency on another package."""

    package: str  # workspace-relative package of the label (a prefix when ``prefix``)
    label: str  # as written
    line: int
    # The repository as written: "" is the main one; the graph resolves the main
    # repository's own name (``@<workspace name>//pkg``), which a BUILD file cannot know.
    repo: str = ""
    # A computed label's literal part (``"//libs/%s" % n``): any package under ``package``.
    prefix: bool = False


@dataclass(frozen=True)
class BuildFile:
    """What one BUILD file declares, independent of where it sits in the tree."""

    calls: tuple[Call, ...]
    # load("label", local = "exported") -> (label as written, {local: exported})
    loads: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    # Labels with '//' naming other packages of the same repository.
    deps: tuple[Dep, ...]
    # The oracle_gate(...) calls (one is allowed; matrix.py says so if there are more).
    gates: tuple[Call, ...] = ()
    invariant_names: frozenset[str] = field(default_factory=lambda: frozenset({"invariant"}))
    # Labels of a named repository (``@name//pkg``): the main one when it is its own name.
    named_repo_deps: tuple[Dep, ...] = ()
