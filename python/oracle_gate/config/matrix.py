"""invariants.yaml and BUILD gate declarations (``oracle_gate(...)``) -> Matrix, with file:line."""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Callable, Sequence
from typing import cast

import yaml

from oracle_gate.bazel.glob import evaluate_glob
from oracle_gate.bazel.labels import parse_label
from oracle_gate.bazel.read import BuildFile, Call, Glob, Unknown, Value
from oracle_gate.config.documents import NodeReader, compose_yaml
from oracle_gate.config.schema import (
    GATE_FILES,
    Shown,
    Where,
    message,
    path_problem,
    read_matrix_fields,
    read_strings,
    shown,
)
from oracle_gate.errors import ConfigError, GateError
from oracle_gate.model import Budget, Matrix, Row

__all__ = [
    "MATRIX_FILE",
    "gate_matrix",
    "native_gate_deps",
    "native_gate_matrix",
    "parse_matrix",
]

MATRIX_FILE = "invariants.yaml"
SUPPORTED_VERSION = 1

_TOP_KEYS = frozenset({"version", "owners", "tests", "fixtures", "deps", "rows", "replay"})
# The replay's own budget, in seconds: more than nothing, at most a day.
_REPLAY_SECONDS = (0.0, 86400.0)


# --- invariants.yaml ---------------------------------------------------------------------


class _Located:
    """The error at a place in a composed YAML document, on the line of its node."""

    def __init__(self, reader: NodeReader, root: yaml.Node) -> None:
        self.reader = reader
        self.root = root

    def fail(self, where: Where, message: str) -> GateError:
        """The error at the deepest node ``where`` reaches (a missing key: its mapping)."""
        node = self.root
        for step in where:
            if isinstance(node, yaml.SequenceNode) and isinstance(step, int):
                if step >= len(node.value):
                    break
                node = node.value[step]
            elif isinstance(node, yaml.MappingNode):
                found = [value for key, value in node.value if key.value == step]
                if not found:
                    break
                node = found[0]
            else:
                break
        return self.reader.fail(node, message)


def parse_matrix(text: bytes, path: str) -> Matrix:
    """Parse and validate one matrix file.

    The document is read as plain values and checked by the schema
    (``config/schema.py``), the same checks a BUILD gate gets.

    Args:
        text: the file's bytes (YAML; JSON is accepted as a subset).
        path: repo-relative path, used in error messages.

    Raises:
        ConfigError: the file is not valid YAML or breaks the schema; the error
            names the file and the 1-based line.
    """
    reader = NodeReader(path, ConfigError)
    root = compose_yaml(text, path, ConfigError)
    if root is None:
        raise ConfigError("is empty; expected a mapping with 'version' and 'rows'", path, 1)
    nodes = reader.mapping(root, "the matrix", _TOP_KEYS)
    if "version" not in nodes:
        raise reader.fail(root, f"has no 'version'; expected version: {SUPPORTED_VERSION}")
    version = reader.number(nodes["version"], "version", int)
    if version != SUPPORTED_VERSION:
        raise reader.fail(
            nodes["version"], f"version {version} is not supported; expected {SUPPORTED_VERSION}"
        )
    fields = {key: reader.plain(node) for key, node in nodes.items()}
    located = _Located(reader, root)
    read = read_matrix_fields(fields, located.fail)
    return Matrix(
        version=version,
        owners=read.owners,
        tests=read.tests,
        fixtures=read.fixtures,
        deps=read_strings(fields.get("deps"), "deps", ("deps",), located.fail),
        rows=read.rows,
        replay_seconds=_replay_seconds(reader, nodes.get("replay")),
    )


def _replay_seconds(reader: NodeReader, node: yaml.Node | None) -> float | None:
    """``replay: {seconds: N}``: the package's replay budget, or None when not given."""
    if node is None:
        return None
    seconds = reader.mapping(node, "replay", frozenset({"seconds"})).get("seconds")
    if seconds is None:
        raise reader.fail(node, "replay must give seconds, e.g. replay: {seconds: 600}")
    value = reader.number(seconds, "replay seconds", float)
    low, high = _REPLAY_SECONDS
    if not low < value <= high:
        raise reader.fail(
            seconds, f"replay seconds must be in ({low:g}, {high:g}], found {value:g}"
        )
    return value


# --- Bazel: the oracle_gate(...) call in BUILD ------------------------------------------


class _NotARow:
    """A rows entry that is not an ``invariant(...)`` call (not a Mapping, so rejected)."""


class _GateReader:
    """Turns an ``oracle_gate(...)`` call into plain values, with file:line errors."""

    def __init__(
        self,
        path: str,
        call: Call,
        invariant_names: frozenset[str],
        files: Callable[[], Sequence[str]],
    ) -> None:
        self.path = path
        self.call = call
        self.invariant_names = invariant_names
        self.files = files
        self.rows: list[Value] = []

    def fail_at(self, message: str, line: int) -> ConfigError:
        return ConfigError(message, self.path, line)

    def fail(self, where: Where, message: str) -> ConfigError:
        """The error at the line of the argument ``where`` names (a row's own, if given)."""
        line = self.call.line_of(str(where[0]))
        if where[0] == "rows" and len(where) > 1 and isinstance(where[1], int):
            row = self.rows[where[1]]
            if isinstance(row, Call) and len(where) > 2:
                line = row.line_of(str(where[2]))
            elif isinstance(row, Call):
                line = row.line
        return self.fail_at(message, line)

    def literal(self, value: Value | None, what: str, line: int) -> Value | None:
        if isinstance(value, Unknown):
            raise self.fail_at(
                f"{what} is {value.text!r}, which the gate cannot read without running Bazel; "
                "write it literally in this BUILD file",
                value.line or line,
            )
        return value

    def plain(self, value: Value | None, what: str, line: int) -> object:
        """``value`` as plain data; ``glob()`` expanded, invariant() calls as dicts."""
        value = self.literal(value, what, line)
        if isinstance(value, tuple):
            items: list[object] = []
            for item in value:
                if isinstance(item, Glob):
                    items.extend(evaluate_glob(item, self.files(), self.path))
                else:
                    items.append(self.plain(item, what, line))
            return items
        if isinstance(value, dict):
            return {key: self.plain(item, what, line) for key, item in value.items()}
        if isinstance(value, (Call, Glob)):
            return Shown(f"{value.function}(...)" if isinstance(value, Call) else "glob(...)")
        return value

    def row(self, value: Value) -> object:
        value = self.literal(value, "each entry of rows", self.call.line_of("rows"))
        if not isinstance(value, Call) or value.function not in self.invariant_names:
            return _NotARow()
        fields: dict[str, object] = {}
        for key, item in value.kwargs:
            line = value.line_of(key)
            if key == "budget" and isinstance(item, dict):
                # An expression the static reader does not evaluate (-1, a name)
                # is shown as written, as Bazel shows the value it evaluated.
                fields[key] = {
                    k: Shown(v.text) if isinstance(v, Unknown) else self.plain(v, key, line)
                    for k, v in item.items()
                }
            else:
                fields[key] = self.plain(item, key, line)
        return fields

    def gate_file(self, key: str, default: str, package: str) -> None:
        """The lock or a ledger, which must be ``default`` at the package root, as in Bazel."""
        line = self.call.line_of(key)
        given = self.literal(self.call.get(key), key, line)
        if given is None:
            return
        if not isinstance(given, str):
            raise self.fail_at(message("file_name", key, default, package, shown(given)), line)
        if given.startswith(("//", "@", ":")):
            try:
                label = parse_label(given, package)
            except ValueError as error:
                raise self.fail_at(f"{key} {given!r} is not a label: {error}", line) from None
            if label.external or label.package != package:
                text = message("file_outside", key, shown(str(label)), package, default)
                raise self.fail_at(text, line)
            if label.name != default:
                raise self.fail_at(
                    message("file_name", key, default, package, shown(str(label))), line
                )
            return
        if path_problem(given) is not None:
            raise self.fail_at(message("file_outside", key, shown(given), package, default), line)
        if given != default:
            raise self.fail_at(message("file_name", key, default, package, shown(given)), line)
        if key != "lock" and given not in self.files():
            raise self.fail_at(message("file_missing", key, given, package), line)


def gate_matrix(
    build: BuildFile,
    path: str,
    package: str,
    workspace: str,
    files: Callable[[], Sequence[str]],
) -> tuple[Matrix, str]:
    """The Matrix and the gate target name declared by ``build``'s ``oracle_gate(...)``.

    The checks and their messages are the schema's (``config/schema.py``), as
    the ``oracle_gate`` macro makes them under Bazel, except two that need
    Bazel's loading phase: a path entry that matches no file and an oracle
    module that is not a file are Bazel analysis errors only (docs/bazel.md).

    Args:
        build: the parsed BUILD file; it must declare exactly one gate.
        path: the BUILD file's repo-relative path (for messages).
        package: the Bazel package name, relative to its workspace.
        workspace: the workspace root, repo-relative ("" for the repo root).
        files: the package's files, package-relative, for ``glob()`` (called once).

    Returns:
        The matrix (``deps`` as repo-relative ``//dir:name`` labels) and the
        gate's ``name``.

    Raises:
        ConfigError: the call is not a gate the driver can read or Bazel would
            reject: a second gate in one package, a missing name, rows that are
            not literal ``invariant()`` calls, a path that matches no file, a
            lock or ledger other than the package's own, a dep outside the
            repository.
    """
    if len(build.gates) > 1:
        raise ConfigError(
            f"declares a second oracle_gate (the first is on line {build.gates[0].line}); "
            "a package has one matrix",
            path,
            build.gates[1].line,
        )
    call = build.gates[0]
    reader = _GateReader(path, call, build.invariant_names, files)
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise reader.fail_at("oracle_gate() needs a string name", call.line)
    fields: dict[str, object] = {
        key: reader.plain(call.get(key), key, call.line_of(key))
        for key in ("owners", "tests", "fixtures")
    }
    rows_value = reader.literal(call.get("rows"), "rows", call.line_of("rows"))
    if isinstance(rows_value, tuple):
        reader.rows = list(rows_value)
        fields["rows"] = [reader.row(item) for item in rows_value]
    else:
        fields["rows"] = reader.plain(rows_value, "rows", call.line_of("rows"))
    read = read_matrix_fields(fields, reader.fail, package=package, row_shape="row_call")
    for key, default in GATE_FILES.items():
        reader.gate_file(key, default, package)
    deps: list[str] = []
    line = call.line_of("deps")
    for text in read_strings(
        reader.plain(call.get("deps"), "deps", line), "deps", ("deps",), reader.fail
    ):
        try:
            label = parse_label(text, package)
        except ValueError as error:
            raise reader.fail_at(f"deps entry {text!r} is not a label: {error}", line) from None
        if label.external:
            raise reader.fail_at(message("dep_repository", shown(str(label))), line)
        directory = posixpath.join(workspace, label.package) if workspace else label.package
        deps.append(f"//{directory}:{label.name}")
    matrix = Matrix(
        owners=read.owners,
        tests=read.tests,
        fixtures=read.fixtures,
        deps=tuple(deps),
        rows=read.rows,
    )
    return matrix, name


# (id, globs, properties, partitions, relations, fixtures, examples, seconds)
_NativeRow = tuple[
    str,
    tuple[str, ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[str, ...],
    int,
    float,
]


def native_gate_matrix(found: object) -> tuple[Matrix, str]:
    """What ``gate_matrix`` returns, for a gate the native core found plainly right.

    ``found`` is ``starlark.Evaluated.native_matrix``: ``(name, owners, tests,
    fixtures, deps, rows)``, each a tuple, a row ``(id, globs, properties,
    partitions, relations, fixtures, examples, seconds)``. The native core
    (``rust/src/starlark/matrix.rs``) builds it only for a gate ``gate_matrix``
    accepts, and leaves every other gate, every mistake included, to it.
    """
    name, owners, tests, fixtures, deps, rows = cast(
        "tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], "
        "tuple[_NativeRow, ...]]",
        found,
    )
    matrix = Matrix(
        owners=owners,
        tests=tests,
        fixtures=fixtures,
        deps=deps,
        rows=tuple(
            Row(id, globs, properties, partitions, relations, row_fixtures, _budget(n, seconds))
            for id, globs, properties, partitions, relations, row_fixtures, n, seconds in rows
        ),
    )
    return matrix, name


def native_gate_deps(found: object) -> tuple[str, ...]:
    """The ``deps`` of ``native_gate_matrix(found)``'s matrix, building none of it."""
    return cast("tuple[str, ...]", cast("tuple[object, ...]", found)[4])


@functools.lru_cache(maxsize=1024)
def _budget(examples: int, seconds: float) -> Budget:
    return Budget(examples=examples, seconds=seconds)
