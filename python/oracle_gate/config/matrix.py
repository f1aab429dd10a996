"""invariants.yaml and BUILD gate declarations (``oracle_gate(...)``) -> Matrix, with file:line."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import yaml

from oracle_gate.bazel.buildfile import BuildFile, Call, Glob, Unknown, Value
from oracle_gate.bazel.glob import evaluate_glob
from oracle_gate.bazel.labels import parse_label
from oracle_gate.config.documents import NodeReader, compose_yaml, kind_of
from oracle_gate.errors import ConfigError, GateError
from oracle_gate.globs import validate_glob
from oracle_gate.model import Budget, Matrix, Row

__all__ = ["MATRIX_FILE", "gate_matrix", "parse_matrix"]

MATRIX_FILE = "invariants.yaml"
SUPPORTED_VERSION = 1

_ROW_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_ORACLE_REF = re.compile(r"[A-Za-z0-9_./-]+\.py:[A-Za-z_][A-Za-z0-9_]*")
_TOP_KEYS = frozenset({"version", "owners", "tests", "fixtures", "deps", "rows"})
# A row's keys: invariants.yaml row keys and invariant() arguments alike.
_ROW_KEYS = frozenset(
    {"id", "globs", "properties", "partitions", "relations", "fixtures", "budget"}
)
_BUDGET_KEYS = frozenset({"examples", "seconds"})

T = TypeVar("T")
V = TypeVar("V")


# --- Row checks shared by both readers ---------------------------------------------------
# Each takes a ``fail`` callable that returns the calling reader's ConfigError
# (its file, and the line it knows for the offending part).


def _check_row_id(row_id: str, fail: Callable[[str], GateError]) -> None:
    if _ROW_ID.fullmatch(row_id) is None:
        raise fail(f"row id {row_id!r} may only hold letters, digits, _ . -")


def _check_globs(globs: tuple[str, ...], row_id: str, fail: Callable[[str], GateError]) -> None:
    if not globs:
        raise fail(f"row '{row_id}' has no globs; every row needs at least one")


@dataclass(frozen=True)
class _Found:
    """A budget value its reader did not read as a number, shown as the file spells it."""

    text: str

    def __repr__(self) -> str:
        return self.text


def _budget(
    values: Mapping[str, object], row_id: str, fail: Callable[[str, str], GateError]
) -> Budget:
    """The Budget from a row's given budget fields (a missing field keeps its default).

    ``values`` maps examples/seconds to what the reader read (a value it did
    not read as a number comes as a ``_Found``). ``fail(key, message)`` is
    the reader's error at that field's line.
    """
    examples = values.get("examples", Budget().examples)
    seconds = values.get("seconds", Budget().seconds)
    if not isinstance(examples, int) or isinstance(examples, bool) or examples < 1:
        raise fail(
            "examples",
            f"budget.examples of row '{row_id}' must be an integer of at least 1, "
            f"found {examples!r}",
        )
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds <= 0:
        raise fail(
            "seconds",
            f"budget.seconds of row '{row_id}' must be a positive number, found {seconds!r}",
        )
    return Budget(examples=examples, seconds=float(seconds))


def _unique_rows(
    items: Iterable[V], read: Callable[[V], Row], fail: Callable[[V, str], GateError]
) -> tuple[Row, ...]:
    """``read`` of each item, in order; a repeated row id is ``fail`` at the repeat."""
    rows: list[Row] = []
    seen: set[str] = set()
    for item in items:
        row = read(item)
        if row.id in seen:
            raise fail(item, f"row id '{row.id}' is declared twice; row ids must be unique")
        seen.add(row.id)
        rows.append(row)
    return tuple(rows)


# --- invariants.yaml ---------------------------------------------------------------------


def _oracle_ref(text: str) -> str | None:
    if _ORACLE_REF.fullmatch(text) is None:
        return "is not of the form 'file.py:NAME'"
    return None


def _yaml_number(node: yaml.Node) -> object:
    """A YAML int or float scalar as a Python number; anything else as a ``_Found``."""
    convert = {"tag:yaml.org,2002:int": int, "tag:yaml.org,2002:float": float}
    if isinstance(node, yaml.ScalarNode) and node.tag in convert:
        try:
            return convert[node.tag](node.value)
        except ValueError:
            pass
    return _Found(kind_of(node))


def _yaml_budget(reader: NodeReader, node: yaml.Node | None, row_id: str) -> Budget:
    if node is None:
        return Budget()
    fields = reader.mapping(node, f"budget of row '{row_id}'", _BUDGET_KEYS)
    values = {key: _yaml_number(value) for key, value in fields.items()}
    return _budget(values, row_id, lambda key, message: reader.fail(fields[key], message))


def _row(reader: NodeReader, node: yaml.Node) -> Row:
    fields = reader.mapping(node, "a row", _ROW_KEYS)
    if "id" not in fields:
        raise reader.fail(node, "row has no id; every row needs a unique id")
    row_id = reader.string(fields["id"], "row id")
    _check_row_id(row_id, lambda message: reader.fail(fields["id"], message))
    globs = reader.strings(fields.get("globs"), f"globs of row '{row_id}'", validate_glob)
    _check_globs(globs, row_id, lambda message: reader.fail(node, message))
    return Row(
        id=row_id,
        globs=globs,
        properties=reader.strings(fields.get("properties"), "properties", _oracle_ref),
        partitions=reader.strings(fields.get("partitions"), "partitions", _oracle_ref),
        relations=reader.strings(fields.get("relations"), "relations", _oracle_ref),
        fixtures=reader.strings(fields.get("fixtures"), "row fixtures", validate_glob),
        budget=_yaml_budget(reader, fields.get("budget"), row_id),
    )


def parse_matrix(text: bytes, path: str) -> Matrix:
    """Parse and validate one matrix file.

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
    fields = reader.mapping(root, "the matrix", _TOP_KEYS)
    if "version" not in fields:
        raise reader.fail(root, f"has no 'version'; expected version: {SUPPORTED_VERSION}")
    version = reader.number(fields["version"], "version", int)
    if version != SUPPORTED_VERSION:
        raise reader.fail(
            fields["version"], f"version {version} is not supported; expected {SUPPORTED_VERSION}"
        )
    rows_node = fields.get("rows")
    rows: tuple[Row, ...] = ()
    if rows_node is not None:
        if not isinstance(rows_node, yaml.SequenceNode):
            raise reader.fail(rows_node, f"rows must be a list, found {kind_of(rows_node)}")
        rows = _unique_rows(rows_node.value, lambda row_node: _row(reader, row_node), reader.fail)
    return Matrix(
        version=version,
        owners=reader.strings(fields.get("owners"), "owners"),
        tests=reader.strings(fields.get("tests"), "tests", validate_glob),
        fixtures=reader.strings(fields.get("fixtures"), "fixtures", validate_glob),
        deps=reader.strings(fields.get("deps"), "deps"),
        rows=rows,
    )


# --- Bazel: the oracle_gate(...) call in BUILD ------------------------------------------

# The gate reads these files by name (lanes, locks); another name would let an
# oracle file escape its lane, so BUILD may only spell out the defaults.
_GATE_FILES = {"lock": "oracle_gate.lock", "seeds": "seeds.jsonl", "freeze": "flake_freeze.yaml"}


class _GateReader:
    """Turns an ``oracle_gate(...)`` call into a Matrix, with file:line errors."""

    def __init__(
        self, path: str, invariant_names: frozenset[str], files: Callable[[], Sequence[str]]
    ) -> None:
        self.path = path
        self.invariant_names = invariant_names
        self.files = files

    def fail(self, message: str, line: int) -> ConfigError:
        return ConfigError(message, self.path, line)

    def literal(self, value: Value, what: str, line: int) -> Value:
        if isinstance(value, Unknown):
            raise self.fail(
                f"{what} is {value.text!r}, which the gate cannot read without running Bazel; "
                "write it literally in this BUILD file",
                value.line or line,
            )
        return value

    def strings(
        self, value: Value, what: str, line: int, check: Callable[[str], str | None] | None = None
    ) -> tuple[str, ...]:
        value = self.literal(value, what, line)
        if value is None:
            return ()
        if not isinstance(value, tuple):
            raise self.fail(f"{what} must be a list of strings, found {value!r}", line)
        items: list[str] = []
        for item in value:
            item = self.literal(item, what, line)
            if isinstance(item, Glob):
                items.extend(evaluate_glob(item, self.files(), self.path))
                continue
            if not isinstance(item, str):
                raise self.fail(f"each entry of {what} must be a string, found {item!r}", line)
            problem = check(item) if check else None
            if problem:
                raise self.fail(f"{what} entry {item!r} {problem}", line)
            items.append(item)
        return tuple(items)

    def budget(self, value: Value, row_id: str, line: int) -> Budget:
        value = self.literal(value, f"budget of row '{row_id}'", line)
        if value is None:
            return Budget()
        if not isinstance(value, dict) or not set(value) <= _BUDGET_KEYS:
            raise self.fail(
                f"budget of row '{row_id}' must be a dict with keys examples, seconds", line
            )
        # An expression the static reader does not evaluate (-1, 2.5, a name) is
        # shown as written.
        values = {
            key: _Found(item.text) if isinstance(item, Unknown) else item
            for key, item in value.items()
        }
        return _budget(values, row_id, lambda _key, message: self.fail(message, line))

    def row(self, value: Value, line: int) -> Row:
        value = self.literal(value, "each entry of rows", line)
        if not isinstance(value, Call) or value.function not in self.invariant_names:
            raise self.fail(
                f"each entry of rows must be an invariant(...) call, found {value!r}", line
            )
        for key, _ in value.kwargs:
            if key not in _ROW_KEYS:
                expected = ", ".join(sorted(_ROW_KEYS))
                raise self.fail(
                    f"unknown invariant() argument {key!r}; expected one of {expected}",
                    value.line_of(key),
                )
        row_id = value.get("id")
        if not isinstance(row_id, str):
            raise self.fail("invariant() has no string id; every row needs a unique id", line)
        _check_row_id(row_id, lambda message: self.fail(message, value.line_of("id")))
        globs = self.strings(
            value.get("globs"), f"globs of row '{row_id}'", value.line_of("globs"), validate_glob
        )
        _check_globs(globs, row_id, lambda message: self.fail(message, line))
        refs = {
            name: self.strings(value.get(name), name, value.line_of(name), _oracle_ref)
            for name in ("properties", "partitions", "relations")
        }
        return Row(
            id=row_id,
            globs=globs,
            properties=refs["properties"],
            partitions=refs["partitions"],
            relations=refs["relations"],
            fixtures=self.strings(
                value.get("fixtures"), "row fixtures", value.line_of("fixtures"), validate_glob
            ),
            budget=self.budget(value.get("budget"), row_id, value.line_of("budget")),
        )


def gate_matrix(
    build: BuildFile,
    path: str,
    package: str,
    workspace: str,
    files: Callable[[], Sequence[str]],
) -> tuple[Matrix, str]:
    """The Matrix and the gate target name declared by ``build``'s ``oracle_gate(...)``.

    Args:
        build: the parsed BUILD file; it must declare exactly one gate.
        path: the BUILD file's repo-relative path (for messages).
        package: the Bazel package name, relative to its workspace.
        workspace: the workspace root, repo-relative ("" for the repo root).
        files: the package's files, package-relative, for ``glob()`` (called lazily).

    Returns:
        The matrix (``deps`` as repo-relative ``//dir:name`` labels) and the
        gate's ``name``.

    Raises:
        ConfigError: the call is not a gate the driver can read: a second gate in
            one package, a missing name, rows that are not literal ``invariant()``
            calls, a non-default oracle file name, a dep outside the repository.
    """
    if len(build.gates) > 1:
        raise ConfigError(
            f"declares a second oracle_gate (the first is on line {build.gates[0].line}); "
            "a package has one matrix",
            path,
            build.gates[1].line,
        )
    call = build.gates[0]
    reader = _GateReader(path, build.invariant_names, files)
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise reader.fail("oracle_gate() needs a string name", call.line)
    for key, default in _GATE_FILES.items():
        given = reader.literal(call.get(key), key, call.line_of(key))
        if given is not None and given not in (default, f":{default}"):
            raise reader.fail(
                f"{key} = {given!r} is not supported; the gate reads {default!r} by name",
                call.line_of(key),
            )
    rows_value = reader.literal(call.get("rows"), "rows", call.line_of("rows"))
    if rows_value is not None and not isinstance(rows_value, tuple):
        raise reader.fail("rows must be a list of invariant(...) calls", call.line_of("rows"))
    rows_line = call.line_of("rows")
    rows = _unique_rows(
        rows_value or (),
        lambda item: reader.row(item, rows_line),
        lambda _item, message: reader.fail(message, rows_line),
    )
    deps: list[str] = []
    for text in reader.strings(call.get("deps"), "deps", call.line_of("deps")):
        try:
            label = parse_label(text, package)
        except ValueError as error:
            raise reader.fail(
                f"deps entry {text!r} is not a label: {error}", call.line_of("deps")
            ) from None
        if label.external:
            raise reader.fail(
                f"deps entry {text!r} is in another repository; gate deps name this one's packages",
                call.line_of("deps"),
            )
        directory = posixpath.join(workspace, label.package) if workspace else label.package
        deps.append(f"//{directory}:{label.name}")
    matrix = Matrix(
        owners=reader.strings(call.get("owners"), "owners", call.line_of("owners")),
        tests=reader.strings(call.get("tests"), "tests", call.line_of("tests"), validate_glob),
        fixtures=reader.strings(
            call.get("fixtures"), "fixtures", call.line_of("fixtures"), validate_glob
        ),
        deps=tuple(deps),
        rows=rows,
    )
    return matrix, name
