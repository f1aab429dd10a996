"""The append-only and human-owned ledgers: seeds.jsonl, flake_freeze.yaml, assumptions.yaml."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any

import yaml

from oracle_gate.config.matrix import load_yaml
from oracle_gate.errors import LedgerError

__all__ = [
    "ASSUMPTIONS_FILE",
    "FREEZE_FILE",
    "SEEDS_FILE",
    "Assumption",
    "FreezeEntry",
    "FreezeLedger",
    "Seed",
    "parse_assumptions",
    "parse_freeze",
    "parse_seeds",
]

SEEDS_FILE = "seeds.jsonl"
FREEZE_FILE = "flake_freeze.yaml"
ASSUMPTIONS_FILE = "assumptions.yaml"

_SEED_KEYS = ("row", "prop", "input", "expect")
_EXPECT = frozenset({"hold", "fail"})
_SEED_STATUS = frozenset({"active", "retired"})
_ASSUMPTION_STATUS = frozenset({"proposed", "accepted", "rejected"})
_LINE = "__line__"


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


@dataclass(frozen=True)
class Assumption:
    line: int
    id: str
    status: str
    data: dict[str, Any]


def parse_seeds(text: bytes, path: str) -> list[Seed]:
    """One Seed per non-blank line.

    Raises:
        LedgerError: the file is not UTF-8, or a line is not a JSON object with
            row, prop, input and expect.
    """
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as error:
        # The bad byte's line, counted as splitlines() counts the JSON lines below.
        line = len((text[: error.start].decode("utf-8") + "x").splitlines())
        raise LedgerError("is not valid UTF-8", path, line) from error
    seeds = []
    for number, raw in enumerate(decoded.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as error:
            raise LedgerError(f"is not valid JSON: {error.msg}", path, number) from error
        if not isinstance(data, dict):
            raise LedgerError("each line must be a JSON object", path, number)
        missing = [key for key in _SEED_KEYS if key not in data]
        if missing:
            raise LedgerError(
                f"seed has no {missing[0]!r}; seeds need {', '.join(_SEED_KEYS)}", path, number
            )
        if data["expect"] not in _EXPECT:
            raise LedgerError(
                f"expect must be 'hold' or 'fail', found {data['expect']!r}", path, number
            )
        if data.get("status", "active") not in _SEED_STATUS:
            raise LedgerError(
                f"status must be 'active' or 'retired', found {data['status']!r}", path, number
            )
        seeds.append(Seed(line=number, data=data))
    return seeds


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader that records each mapping's 1-based line under ``__line__``.

    Nested mappings get one too; ``_without_line`` removes them all. (It builds
    mappings deep, so a recursive alias is a YAML error, never a cycle.)
    """


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    mapping[_LINE] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_yaml(text: bytes, path: str) -> dict[str, Any]:
    data = load_yaml(text, path, lambda source: yaml.load(source, Loader=_LineLoader), LedgerError)
    if data is None:
        return {_LINE: 1}
    if not isinstance(data, dict):
        raise LedgerError("must be a YAML mapping", path, 1)
    return data


def _items(data: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    items = data.get(key) or []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise LedgerError(f"'{key}' must be a list of mappings", path, data[_LINE])
    return items


def _date(value: Any, path: str, line: int) -> datetime.date | None:
    if value is None:
        return None
    if isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError as error:
        raise LedgerError(
            f"expires must be a YYYY-MM-DD date, found {value!r}", path, line
        ) from error


def _without_line(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` as written: without the ``__line__`` the loader put in it and in every
    mapping nested in it, so that an entry moved to another line compares equal."""
    return {key: _as_written(value) for key, value in item.items() if key != _LINE}


def _as_written(value: Any) -> Any:
    if isinstance(value, dict):
        return _without_line(value)
    if isinstance(value, list):
        return [_as_written(item) for item in value]
    return value


def parse_freeze(text: bytes, path: str) -> FreezeLedger:
    """The freeze ledger. A missing expiry is data (the lane rejects it), not a parse error.

    Raises:
        LedgerError: invalid YAML, an entry naming neither nodeid nor row+input_hash,
            a malformed date or budget.
    """
    data = _load_yaml(text, path)
    entries = []
    for item in _items(data, "frozen", path):
        line = item[_LINE]
        nodeid = item.get("nodeid")
        if nodeid:
            key = str(nodeid)
        elif item.get("row") and item.get("input_hash"):
            key = f"{item['row']}:{item['input_hash']}"
        else:
            raise LedgerError("frozen entry names neither nodeid nor row + input_hash", path, line)
        entries.append(
            FreezeEntry(
                line=line,
                key=key,
                nodeid=str(nodeid) if nodeid else None,
                expires=_date(item.get("expires"), path, line),
                data=_without_line(item),
            )
        )
    budget = data.get("budget")
    if budget is not None and (not isinstance(budget, int) or budget < 0):
        raise LedgerError(
            f"budget must be a whole number >= 0, found {budget!r}", path, data[_LINE]
        )
    return FreezeLedger(entries=tuple(entries), budget=budget, budget_line=data[_LINE])


def parse_assumptions(text: bytes, path: str) -> list[Assumption]:
    """The assumption register's items.

    Raises:
        LedgerError: invalid YAML, an item without id, or an unknown status.
    """
    data = _load_yaml(text, path)
    assumptions = []
    for item in _items(data, "items", path):
        line = item[_LINE]
        if not item.get("id"):
            raise LedgerError("assumption has no id", path, line)
        status = item.get("status", "proposed")
        if status not in _ASSUMPTION_STATUS:
            raise LedgerError(
                f"status must be proposed, accepted or rejected, found {status!r}", path, line
            )
        assumptions.append(
            Assumption(line=line, id=str(item["id"]), status=status, data=_without_line(item))
        )
    return assumptions
