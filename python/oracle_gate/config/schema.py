"""The matrix schema, in one place for every reader of a package's matrix.

Three readers check a matrix: the invariants.yaml reader and the BUILD-gate
reader (``config/matrix.py``, which turn their input into plain values and
call ``read_matrix``) and the ``oracle_gate`` Bazel macro
(``rules/private/matrix.bzl``, a Starlark port of this module). The messages
below are the only wording any of them uses: ``tools/bzlgen.py`` copies them
into ``rules/private/schema.bzl``, a unit test fails when that copy drifts, and
an e2e test feeds the same rows through Bazel and through both Python readers
and compares the messages word for word.

Messages are ``%``-templates filled with strings only (``shown`` renders
values), because Starlark has the same ``%s`` and no ``str.format``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from oracle_gate.errors import GateError
from oracle_gate.globs import GLOB_PROBLEMS, validate_glob
from oracle_gate.model import Budget, Row

__all__ = [
    "BUDGET_KEYS",
    "GATE_FILES",
    "GLOB_PROBLEMS",
    "MESSAGES",
    "ORACLE_KINDS",
    "ROW_KEYS",
    "Fail",
    "Match",
    "Shown",
    "Where",
    "message",
    "path_problem",
    "read_matrix_fields",
    "read_strings",
    "shown",
]

ROW_KEYS = ("id", "globs", "properties", "partitions", "relations", "fixtures", "budget")
ORACLE_KINDS = ("properties", "partitions", "relations")
BUDGET_KEYS = ("examples", "seconds")
# Lock and ledgers: the gate and the diff lanes read each by this name at the
# package root, so a BUILD gate may only name exactly these files.
GATE_FILES = {
    "lock": "oracle_gate.lock",
    "seeds": "seeds.jsonl",
    "freeze": "flake_freeze.yaml",
    "assumptions": "assumptions.yaml",
}

# Character sets rather than regular expressions: Starlark has no `re`.
ID_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
ID_CHARS = ID_FIRST + "_.-"
NAME_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
NAME_CHARS = NAME_FIRST + "0123456789"
MODULE_CHARS = ID_FIRST + "_./-"

MESSAGES = {
    # Lists and their entries; the first %s says where ("tests", "row 'r': globs").
    "list": "%s must be a list, found %s",
    "string": "%s entry %s is not a string",
    "path": "%s entry '%s' %s",
    "label": "is a label; name the package's files by package-relative path",
    "no_match": "%s entry '%s' matches no file in package '%s'%s",
    "no_match_hint": "; to name everything below a directory, end it with '/'",
    "ref": "%s entry '%s' is not of the form 'file.py:NAME'",
    "ref_missing": "%s entry '%s' names %s, which is not a file in package '%s'",
    # Rows.
    "rows": "rows must be a list, found %s",
    "row_mapping": "rows[%s] must be a mapping, found %s",
    "row_call": "rows[%s] is not an invariant(...)",
    "row_key": "rows[%s] has unknown key %s; expected one of %s",
    "no_id": "rows[%s] has no id; every row needs an id unique in the package",
    "bad_id": (
        "row id %s may only hold letters, digits, _ . - and must start with a letter or digit"
    ),
    "twice": "row id '%s' is declared twice; row ids must be unique in a package",
    "no_globs": "row '%s' has no globs; every row guards at least one production path",
    "budget": "row '%s': budget must be a mapping with keys examples, seconds, found %s",
    "budget_key": "row '%s': budget has unknown key %s; expected examples, seconds",
    "examples": "row '%s': budget examples must be an integer of at least 1, found %s",
    "seconds": "row '%s': budget seconds must be a positive number, found %s",
    # A BUILD gate's lock and ledgers, and its deps.
    "file_name": "%s must be the file '%s' at the root of package '%s', found %s",
    "file_outside": "%s %s is outside the package '%s'; each package owns its own %s at its root",
    "file_missing": "%s '%s' does not exist in package '%s'",
    "file_generated": "%s %s is generated; it must be the source file %s that humans review",
    "dep_repository": "deps entry %s is in another repository; gate deps must be in this one",
}


def message(key: str, *args: str) -> str:
    """``MESSAGES[key]`` filled with ``args`` (already rendered strings)."""
    return MESSAGES[key] % args


@dataclass(frozen=True)
class Shown:
    """A value its reader could not evaluate, shown as the file spells it (``-1``, ``N``)."""

    text: str


def shown(value: object) -> str:
    """How every reader renders a found value: ``'text'``, ``5``, ``2.5``, ``a list``...

    Starlark's ``repr`` quotes strings with ``"`` and Python's with ``'``, so
    neither is used for strings; schema.bzl's ``shown`` is the same function.
    """
    if isinstance(value, Shown):
        return value.text
    if isinstance(value, str):
        return f"'{value}'"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def path_problem(entry: str) -> str | None:
    """Why ``entry`` is not a package-relative path or glob pattern, or None."""
    if entry.startswith((":", "@")):
        return MESSAGES["label"]
    return validate_glob(entry)


def _only(text: str, first: str, rest: str) -> bool:
    return bool(text) and text[0] in first and all(char in rest for char in text[1:])


def ref_module(ref: str) -> str | None:
    """The module of a well-formed ``file.py:NAME`` reference, or None."""
    module, colon, name = ref.partition(":")
    well_formed = (
        colon == ":"
        and ":" not in name
        and module.endswith(".py")
        and _only(module, MODULE_CHARS, MODULE_CHARS)
        and path_problem(module) is None
        and _only(name, NAME_FIRST, NAME_CHARS)
    )
    return module if well_formed else None


# A reader's error at a place in its input: ("rows", 0, "budget", "examples").
Where = tuple[str | int, ...]
Fail = Callable[[Where, str], GateError]
# The package files an entry matches (Bazel glob() semantics), for readers of
# BUILD, where Bazel rejects an entry that matches nothing; None elsewhere.
Match = Callable[[str], Sequence[str]] | None


@dataclass(frozen=True)
class _Reader:
    fail: Fail
    match: Match
    package: str
    row_shape: str  # "row_mapping" (YAML) or "row_call" (BUILD)

    def entries(self, value: object, what: str, where: Where) -> list[object]:
        if value is None:
            return []
        if not isinstance(value, (list, tuple)):
            raise self.fail(where, message("list", what, shown(value)))
        return list(value)

    def strings(self, value: object, what: str, where: Where) -> tuple[str, ...]:
        items = self.entries(value, what, where)
        for index, item in enumerate(items):
            if not isinstance(item, str):
                raise self.fail((*where, index), message("string", what, shown(item)))
        return tuple(str(item) for item in items)

    def paths(self, value: object, what: str, where: Where) -> tuple[str, ...]:
        items = self.strings(value, what, where)
        for index, item in enumerate(items):
            problem = path_problem(item)
            if problem is not None:
                raise self.fail((*where, index), message("path", what, item, problem))
            if self.match is not None and not self.match(item):
                hint = "" if _is_pattern(item) else MESSAGES["no_match_hint"]
                text = message("no_match", what, item, self.package, hint)
                raise self.fail((*where, index), text)
        return items

    def refs(self, value: object, what: str, where: Where) -> tuple[str, ...]:
        items = self.strings(value, what, where)
        for index, item in enumerate(items):
            module = ref_module(item)
            if module is None:
                raise self.fail((*where, index), message("ref", what, item))
            if self.match is not None and not self.match(module):
                text = message("ref_missing", what, item, module, self.package)
                raise self.fail((*where, index), text)
        return items

    def budget(self, value: object, row_id: str, where: Where) -> Budget:
        if value is None:
            return Budget()
        if not isinstance(value, Mapping):
            raise self.fail(where, message("budget", row_id, shown(value)))
        for key in value:
            if key not in BUDGET_KEYS:
                raise self.fail((*where, key), message("budget_key", row_id, shown(key)))
        examples = value.get("examples", Budget().examples)
        if not isinstance(examples, int) or isinstance(examples, bool) or examples < 1:
            text = message("examples", row_id, shown(examples))
            raise self.fail((*where, "examples"), text)
        seconds = value.get("seconds", Budget().seconds)
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds <= 0:
            raise self.fail((*where, "seconds"), message("seconds", row_id, shown(seconds)))
        return Budget(examples=examples, seconds=float(seconds))

    def row(self, index: int, value: object, seen: set[str]) -> Row:
        where: Where = ("rows", index)
        if not isinstance(value, Mapping):
            found = (shown(value),) if self.row_shape == "row_mapping" else ()
            raise self.fail(where, message(self.row_shape, str(index), *found))
        for key in value:
            if key not in ROW_KEYS:
                expected = ", ".join(ROW_KEYS)
                raise self.fail((*where, key), message("row_key", str(index), shown(key), expected))
        row_id = value.get("id")
        if row_id is None:
            raise self.fail(where, message("no_id", str(index)))
        if not isinstance(row_id, str) or not _only(row_id, ID_FIRST, ID_CHARS):
            raise self.fail((*where, "id"), message("bad_id", shown(row_id)))
        if row_id in seen:
            raise self.fail((*where, "id"), message("twice", row_id))
        seen.add(row_id)
        prefix = f"row '{row_id}': "
        globs = self.paths(value.get("globs"), prefix + "globs", (*where, "globs"))
        if not globs:
            raise self.fail(where, message("no_globs", row_id))
        refs = {
            kind: self.refs(value.get(kind), prefix + kind, (*where, kind)) for kind in ORACLE_KINDS
        }
        return Row(
            id=row_id,
            globs=globs,
            properties=refs["properties"],
            partitions=refs["partitions"],
            relations=refs["relations"],
            fixtures=self.paths(value.get("fixtures"), prefix + "fixtures", (*where, "fixtures")),
            budget=self.budget(value.get("budget"), row_id, (*where, "budget")),
        )


def _is_pattern(entry: str) -> bool:
    return "*" in entry or "?" in entry or entry.endswith("/")


@dataclass(frozen=True)
class MatrixFields:
    owners: tuple[str, ...]
    tests: tuple[str, ...]
    fixtures: tuple[str, ...]
    rows: tuple[Row, ...]


def read_matrix_fields(
    fields: Mapping[str, object],
    fail: Fail,
    *,
    match: Match = None,
    package: str = "",
    row_shape: str = "row_mapping",
) -> MatrixFields:
    """Owners, tests, fixtures and rows from a matrix's plain values, checked in that order.

    ``fields`` holds what the reader read (str, int, float, bool, None, lists,
    dicts; ``Shown`` for a value it could not evaluate); a missing or None
    field is empty. Each mistake is ``fail(where, message)``.
    """
    reader = _Reader(fail, match, package, row_shape)
    owners = reader.strings(fields.get("owners"), "owners", ("owners",))
    tests = reader.paths(fields.get("tests"), "tests", ("tests",))
    fixtures = reader.paths(fields.get("fixtures"), "fixtures", ("fixtures",))
    rows_value = fields.get("rows")
    if rows_value is not None and not isinstance(rows_value, (list, tuple)):
        raise fail(("rows",), message("rows", shown(rows_value)))
    seen: set[str] = set()
    rows = tuple(reader.row(index, row, seen) for index, row in enumerate(rows_value or ()))
    return MatrixFields(owners=owners, tests=tests, fixtures=fixtures, rows=rows)


def read_strings(value: object, what: str, where: Where, fail: Fail) -> tuple[str, ...]:
    """A list of strings (a matrix's deps), each mistake ``fail(where, message)``."""
    return _Reader(fail, None, "", "row_mapping").strings(value, what, where)
