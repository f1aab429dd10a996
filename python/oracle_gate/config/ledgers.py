"""The append-only and human-owned ledgers: seeds.jsonl, flake_freeze.yaml, assumptions.yaml."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from oracle_gate.config.documents import (
    MAX_BYTES,
    NodeReader,
    compose_yaml,
    load_json,
    parse_date,
)
from oracle_gate.errors import LedgerError
from oracle_gate.model import Matrix
from oracle_gate.repo.trees import Tree

__all__ = [
    "ASSUMPTIONS_FILE",
    "FREEZE_FILE",
    "SEEDS_FILE",
    "Assumption",
    "FreezeEntry",
    "FreezeLedger",
    "Seed",
    "budget_problem",
    "check_seed_refs",
    "expiry_problem",
    "parse_assumptions",
    "parse_freeze",
    "parse_seeds",
    "read_ledger",
]

SEEDS_FILE = "seeds.jsonl"
FREEZE_FILE = "flake_freeze.yaml"
ASSUMPTIONS_FILE = "assumptions.yaml"

LEDGER_VERSION = 1
_SEED_REQUIRED = ("row", "prop", "input", "expect")
_SEED_KEYS = frozenset({*_SEED_REQUIRED, "note", "added", "status", "retired_by"})
_EXPECT = ("hold", "fail")
_SEED_STATUS = ("active", "retired")
_FREEZE_KEYS = frozenset({"version", "frozen", "budget"})
_FROZEN_KEYS = frozenset(
    {"nodeid", "row", "input_hash", "expires", "reason", "owner", "replacement_row"}
)
_ASSUMPTIONS_KEYS = frozenset({"version", "items"})
_ITEM_KEYS = frozenset({"id", "symbol", "precondition", "evidence", "status"})
_ASSUMPTION_STATUS = ("proposed", "accepted", "rejected")


@dataclass(frozen=True)
class Seed:
    line: int
    data: dict[str, Any]


@dataclass(frozen=True)
class FreezeEntry:
    line: int
    key: str  # the node id, or "row:input_hash"
    nodeid: str | None
    expires: datetime.date | None
    data: dict[str, Any]


@dataclass(frozen=True)
class FreezeLedger:
    entries: tuple[FreezeEntry, ...]
    budget: int | None
    budget_line: int


def read_ledger(tree: Tree, path: str) -> bytes | None:
    """The bytes of the ledger (or changelog) at ``path``, None when ``tree`` has none.

    Its size is checked before it is read: a ledger larger than ``MAX_BYTES`` is
    refused without holding it in memory.

    Raises:
        LedgerError: it is larger than ``MAX_BYTES``.
        TreeError: it cannot be read (a FIFO, a device, a directory, ...).
    """
    size = tree.size(path)
    if size is None:
        return None
    if size > MAX_BYTES:
        raise LedgerError(
            f"is larger than {MAX_BYTES // (1024 * 1024)} MiB ({size} bytes); "
            "a ledger this size is not read",
            path,
        )
    return tree.read(path)


def expiry_problem(entry: FreezeEntry, today: datetime.date) -> str | None:
    """Why ``entry`` no longer holds on ``today``; a freeze is expired only after its date."""
    if entry.expires is None:
        return "has no expiry; every freeze must expire"
    if entry.expires < today:
        return f"expired on {entry.expires.isoformat()}"
    return None


def budget_problem(ledger: FreezeLedger) -> str | None:
    """Why the ledger holds more entries than its ``budget`` allows, if it does."""
    if ledger.budget is not None and len(ledger.entries) > ledger.budget:
        return f"{len(ledger.entries)} frozen entries exceed the budget of {ledger.budget}"
    return None


@dataclass(frozen=True)
class Assumption:
    line: int
    id: str
    status: str
    data: dict[str, Any]


def _seed_text(data: dict[str, Any], key: str, path: str, line: int) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise LedgerError(f"seed {key!r} must be a string, found {value!r}", path, line)
    return value


def _seed(data: Any, path: str, line: int) -> Seed:
    """One seeds.jsonl line, checked against the seed schema."""
    if not isinstance(data, dict):
        raise LedgerError("each line must be a JSON object", path, line)
    unknown = sorted(set(data) - _SEED_KEYS)
    if unknown:
        expected = ", ".join(sorted(_SEED_KEYS))
        raise LedgerError(f"unknown seed key {unknown[0]!r}; expected {expected}", path, line)
    missing = [key for key in _SEED_REQUIRED if key not in data]
    if missing:
        raise LedgerError(
            f"seed has no {missing[0]!r}; seeds need {', '.join(_SEED_REQUIRED)}", path, line
        )
    for key in ("row", "prop", "note", "retired_by"):
        _seed_text(data, key, path, line)
    if data["expect"] not in _EXPECT:
        raise LedgerError(f"expect must be 'hold' or 'fail', found {data['expect']!r}", path, line)
    if data.get("status", "active") not in _SEED_STATUS:
        raise LedgerError(
            f"status must be 'active' or 'retired', found {data['status']!r}", path, line
        )
    added = _seed_text(data, "added", path, line)
    if added is not None and parse_date(added) is None:
        raise LedgerError(f"added must be a YYYY-MM-DD date, found {added!r}", path, line)
    return Seed(line=line, data=data)


def parse_seeds(text: bytes, path: str) -> list[Seed]:
    """One Seed per non-blank line.

    Raises:
        LedgerError: the file is not UTF-8 or over the size limit, or a line is
            not a JSON object in the seed schema (row, prop, input, expect;
            optional note, added, status, retired_by; no other key, no key twice).
    """
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as error:
        # The bad byte's line, counted as splitlines() counts the JSON lines below.
        line = len((text[: error.start].decode("utf-8") + "x").splitlines())
        raise LedgerError("is not valid UTF-8", path, line) from error
    seeds = []
    for number, raw in enumerate(decoded.splitlines(), start=1):
        if raw.strip():
            seeds.append(_seed(load_json(raw, path, number, LedgerError), path, number))
    return seeds


def check_seed_refs(seeds: list[Seed], matrices: Iterable[Matrix], path: str) -> None:
    """Every seed names a row of one of ``matrices`` and a property that row lists there.

    A seed naming anything else would never be replayed, so it is an error,
    not a silent no-op. ``check`` passes the package's parent and head
    matrices: a patch that drops a row or property is judged as a narrowing
    (a reject), not as a malformed ledger.

    Raises:
        LedgerError: at the first seed naming an unknown row or property.
    """
    properties: dict[str, set[str]] = {}
    for matrix in matrices:
        for row in matrix.rows:
            names = properties.setdefault(row.id, set())
            names.update(ref.split(":", 1)[1] for ref in row.properties)
    for seed in seeds:
        row, prop = seed.data["row"], seed.data["prop"]
        if row not in properties:
            known = ", ".join(sorted(properties)) or "none"
            raise LedgerError(
                f"seed names row {row!r}, which the matrix does not declare (rows: {known})",
                path,
                seed.line,
            )
        if prop not in properties[row]:
            known = ", ".join(sorted(properties[row])) or "none"
            raise LedgerError(
                f"seed names property {prop!r}, which row {row!r} does not list "
                f"(properties: {known})",
                path,
                seed.line,
            )


def _root(
    reader: NodeReader, text: bytes, what: str, allowed: frozenset[str]
) -> dict[str, yaml.Node]:
    """The top-level mapping of a YAML ledger (an empty file is an empty mapping)."""
    root = compose_yaml(text, reader.path, LedgerError)
    if root is None:
        return {}
    fields = reader.mapping(root, what, allowed)
    if "version" in fields:
        version = reader.number(fields["version"], "version", int)
        if version != LEDGER_VERSION:
            reader.raise_at(
                fields["version"],
                f"version {version} is not supported; expected {LEDGER_VERSION}",
            )
    return fields


def _frozen_entry(reader: NodeReader, node: yaml.Node) -> FreezeEntry:
    fields = reader.mapping(node, "a frozen entry", _FROZEN_KEYS)
    line = node.start_mark.line + 1
    nodeid = reader.optional_string(fields.get("nodeid"), "nodeid")
    row = reader.optional_string(fields.get("row"), "row")
    input_hash = reader.optional_string(fields.get("input_hash"), "input_hash")
    if nodeid:
        key = nodeid
    elif row and input_hash:
        key = f"{row}:{input_hash}"
    else:
        raise reader.fail(node, "frozen entry names neither nodeid nor row + input_hash")
    reader.optional_string(fields.get("owner"), "owner")
    reader.optional_string(fields.get("replacement_row"), "replacement_row")
    expires = fields.get("expires")
    return FreezeEntry(
        line=line,
        key=key,
        nodeid=nodeid or None,
        expires=None if expires is None else reader.date(expires, "expires"),
        data=reader.plain(node),
    )


def parse_freeze(text: bytes, path: str) -> FreezeLedger:
    """The freeze ledger. A missing expiry is data (the lane rejects it), not a parse error.

    Raises:
        LedgerError: invalid YAML or over a limit; a key that is unknown or
            repeated; an entry naming neither nodeid nor row + input_hash, or
            naming one twice; an impossible date; a budget that is not a whole
            number >= 0; a version other than 1.
    """
    reader = NodeReader(path, LedgerError)
    fields = _root(reader, text, "the freeze ledger", _FREEZE_KEYS)
    entries: list[FreezeEntry] = []
    seen: dict[str, int] = {}
    for node in reader.items(fields.get("frozen"), "'frozen'"):
        entry = _frozen_entry(reader, node)
        if entry.key in seen:
            raise reader.fail(
                node, f"{entry.key} is frozen twice (first on line {seen[entry.key]})"
            )
        seen[entry.key] = entry.line
        entries.append(entry)
    budget, budget_line = None, 1
    budget_node = fields.get("budget")
    if budget_node is not None:
        budget, budget_line = reader.plain(budget_node), budget_node.start_mark.line + 1
        if budget is not None and (
            not isinstance(budget, int) or isinstance(budget, bool) or budget < 0
        ):
            raise reader.fail(budget_node, f"budget must be a whole number >= 0, found {budget!r}")
    return FreezeLedger(entries=tuple(entries), budget=budget, budget_line=budget_line)


def parse_assumptions(text: bytes, path: str) -> list[Assumption]:
    """The assumption register's items.

    Raises:
        LedgerError: invalid YAML or over a limit; a key that is unknown or
            repeated; an item without an id, or an id used twice; an unknown
            status; a version other than 1.
    """
    reader = NodeReader(path, LedgerError)
    fields = _root(reader, text, "the assumption register", _ASSUMPTIONS_KEYS)
    assumptions: list[Assumption] = []
    seen: dict[str, int] = {}
    for node in reader.items(fields.get("items"), "'items'"):
        item = reader.mapping(node, "an assumption", _ITEM_KEYS)
        line = node.start_mark.line + 1
        if "id" not in item:
            raise reader.fail(node, "assumption has no id")
        item_id = reader.string(item["id"], "assumption id")
        if item_id in seen:
            raise reader.fail(
                item["id"],
                f"assumption id {item_id!r} is used twice (first on line {seen[item_id]})",
            )
        seen[item_id] = line
        reader.optional_string(item.get("symbol"), "symbol")
        status = reader.optional_string(item.get("status"), "status") or "proposed"
        if status not in _ASSUMPTION_STATUS:
            raise reader.fail(
                item["status"],
                f"status must be proposed, accepted or rejected, found {status!r}",
            )
        assumptions.append(
            Assumption(line=line, id=item_id, status=status, data=reader.plain(node))
        )
    return assumptions
