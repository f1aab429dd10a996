"""Rewrites of the human-owned ledgers, done the way the ledger lane accepts them.

Each function takes the file's current bytes (``None`` when it does not exist
yet) and returns the new bytes; the CLI writes them. They parse the input first,
so a ledger that is already broken is reported, never overwritten, and parse
their own output again, so they can never write a file the gate refuses.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import yaml

from oracle_gate.config.ledgers import (
    FreezeEntry,
    FreezeLedger,
    parse_assumptions,
    parse_freeze,
    parse_seeds,
)
from oracle_gate.errors import LedgerError

__all__ = ["assumptions_add", "freeze_add", "freeze_extend", "freeze_remove", "retire_seed"]


def _raw(source: bytes) -> tuple[dict[str, Any], str]:
    """The ledger's raw mapping, and the comment lines at its top (kept)."""
    raw = yaml.safe_load(source.decode("utf-8")) or {}
    header = []
    for line in source.decode("utf-8").splitlines(keepends=True):
        if line.strip() and not line.lstrip().startswith("#"):
            break
        header.append(line)
    return raw, "".join(header)


def _document(text: bytes | None, path: str) -> tuple[FreezeLedger, dict[str, Any], str]:
    """The parsed ledger, its raw mapping, and the comment lines at its top (kept)."""
    source = text or b""
    ledger = parse_freeze(source, path)
    return (ledger, *_raw(source))


def _dumped(raw: dict[str, Any], header: str) -> bytes:
    body = yaml.safe_dump(raw, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return (header + body).encode("utf-8")


def _render(raw: dict[str, Any], header: str, path: str) -> bytes:
    rendered = _dumped(raw, header)
    parse_freeze(rendered, path)  # never write what the gate would refuse
    return rendered


def assumptions_add(text: bytes | None, path: str, items: list[dict[str, Any]]) -> bytes:
    """The register with ``items`` appended (each must have an id the file does not use).

    Raises:
        LedgerError: the register is already invalid, or an item would make it so
            (a repeated id, an unknown key).
    """
    source = text or b""
    parse_assumptions(source, path)
    raw, header = _raw(source)
    raw = {"version": raw.get("version", 1), **raw}
    raw["items"] = [*(raw.get("items") or []), *items]
    rendered = _dumped(raw, header)
    parse_assumptions(rendered, path)  # never write what the gate would refuse
    return rendered


def _entry(ledger: FreezeLedger, key: str, path: str) -> FreezeEntry:
    for entry in ledger.entries:
        if entry.key == key:
            return entry
    raise LedgerError(f"nothing frozen under {key!r}", path)


def _index(raw: dict[str, Any], entry: FreezeEntry) -> int:
    """Where ``entry`` sits in the raw ``frozen`` list (entries keep their order)."""
    return next(i for i, item in enumerate(raw["frozen"]) if _key_of(item) == entry.key)


def _key_of(item: dict[str, Any]) -> str:
    if item.get("nodeid"):
        return str(item["nodeid"])
    return f"{item.get('row')}:{item.get('input_hash')}"


def freeze_add(text: bytes | None, path: str, entry: dict[str, Any], today: datetime.date) -> bytes:
    """``entry`` appended to the ``frozen`` list.

    Raises:
        LedgerError: the file does not parse, the key is already frozen, the
            expiry is not after ``today``, or the budget would be exceeded.
    """
    ledger, raw, header = _document(text, path)
    key = _key_of(entry)
    if any(existing.key == key for existing in ledger.entries):
        raise LedgerError(f"{key} is already frozen; use 'oracle-gate freeze extend'", path)
    if entry["expires"] <= today:
        raise LedgerError(f"expires must be after today ({today.isoformat()})", path)
    if ledger.budget is not None and len(ledger.entries) >= ledger.budget:
        raise LedgerError(
            f"{len(ledger.entries)} entries already fill the budget of {ledger.budget}; "
            "raise 'budget' in a reviewed change or remove a freeze first",
            path,
            ledger.budget_line,
        )
    raw["frozen"] = [*(raw.get("frozen") or []), entry]
    return _render(raw, header, path)


def freeze_extend(
    text: bytes, path: str, key: str, expires: datetime.date, reason: str | None
) -> bytes:
    """The entry under ``key`` with a later expiry (and a new reason, if given).

    Raises:
        LedgerError: the file does not parse, nothing is frozen under ``key``,
            or ``expires`` is not later than the current expiry.
    """
    ledger, raw, header = _document(text, path)
    entry = _entry(ledger, key, path)
    if entry.expires is not None and expires <= entry.expires:
        raise LedgerError(
            f"{key} already expires on {entry.expires.isoformat()}; extend to a later date",
            path,
            entry.line,
        )
    item = raw["frozen"][_index(raw, entry)]
    item["expires"] = expires
    if reason:
        item["reason"] = reason
    return _render(raw, header, path)


def freeze_remove(text: bytes, path: str, key: str) -> bytes:
    """The ledger without the entry under ``key`` (a thaw).

    Raises:
        LedgerError: the file does not parse, or nothing is frozen under ``key``.
    """
    ledger, raw, header = _document(text, path)
    del raw["frozen"][_index(raw, _entry(ledger, key, path))]
    return _render(raw, header, path)


def retire_seed(text: bytes, path: str, line: int, by: str) -> bytes:
    """Seed line ``line`` with ``status: retired`` and ``retired_by``: the only rewrite of
    a seed line the ledger lane accepts. Every other line keeps its bytes.

    Raises:
        LedgerError: the file does not parse, ``line`` holds no seed, or it is
            already retired.
    """
    seeds = {seed.line: seed for seed in parse_seeds(text, path)}
    if line not in seeds:
        raise LedgerError("holds no seed", path, line)
    data = dict(seeds[line].data)
    if data.get("status") == "retired":
        raise LedgerError(f"seed is already retired by {data.get('retired_by')!r}", path, line)
    data["status"] = "retired"
    data["retired_by"] = by
    lines = text.decode("utf-8").splitlines(keepends=True)
    ending = lines[line - 1][len(lines[line - 1].rstrip("\r\n")) :]
    lines[line - 1] = json.dumps(data, ensure_ascii=False) + ending
    rendered = "".join(lines).encode("utf-8")
    parse_seeds(rendered, path)
    return rendered
