"""oracle_gate.lock: the lockfile format (parse, render, compare), nothing about trees.

A lock holds the BLAKE3 digest of every fixture file and of the canonical
assertion surface of every test unit, keyed package-relative, as JSON with
sorted keys. It never records which backend wrote it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum

from oracle_gate.errors import LockError

__all__ = [
    "LOCK_FILE",
    "Drift",
    "DriftKind",
    "Lock",
    "compare_locks",
    "parse_lock",
    "render_lock",
]

LOCK_FILE = "oracle_gate.lock"
LOCK_VERSION = 1
_SECTIONS = ("fixtures", "surface")


@dataclass(frozen=True)
class Lock:
    """Digests by package-relative key: fixture paths, and ``test_file::unit`` names."""

    fixtures: dict[str, str] = field(default_factory=dict)
    surface: dict[str, str] = field(default_factory=dict)


class DriftKind(str, Enum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True)
class Drift:
    """One entry on which two locks disagree."""

    section: str  # "fixtures" or "surface"
    key: str
    kind: DriftKind


def render_lock(lock: Lock) -> bytes:
    """The lockfile bytes: JSON, sorted keys, two-space indent, final newline."""
    document = {"version": LOCK_VERSION, "fixtures": lock.fixtures, "surface": lock.surface}
    return (json.dumps(document, sort_keys=True, indent=2) + "\n").encode()


def _digest_map(document: dict[str, object], section: str, path: str) -> dict[str, str]:
    value = document.get(section, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise LockError(f"'{section}' must map keys to digest strings", path)
    return dict(value)


def parse_lock(text: bytes, path: str) -> Lock:
    """Parse a lockfile.

    Raises:
        LockError: not valid JSON (with the 1-based line), or not the lock schema.
    """
    try:
        document = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise LockError("is not valid UTF-8", path) from error
    except json.JSONDecodeError as error:
        raise LockError(f"is not valid JSON: {error.msg}", path, error.lineno) from error
    if not isinstance(document, dict):
        raise LockError("must be a JSON object with 'version', 'fixtures' and 'surface'", path)
    if document.get("version") != LOCK_VERSION:
        found = document.get("version")
        raise LockError(f"lock version {found!r} is not supported; expected {LOCK_VERSION}", path)
    unknown = sorted(set(document) - {"version", *_SECTIONS})
    if unknown:
        raise LockError(f"unknown key {unknown[0]!r}; expected version, fixtures, surface", path)
    return Lock(
        fixtures=_digest_map(document, "fixtures", path),
        surface=_digest_map(document, "surface", path),
    )


def compare_locks(expected: Lock, actual: Lock) -> list[Drift]:
    """Entries where ``actual`` departs from ``expected``, sorted by section then key."""
    drifts: list[Drift] = []
    for section in _SECTIONS:
        old: dict[str, str] = getattr(expected, section)
        new: dict[str, str] = getattr(actual, section)
        for key in sorted(old.keys() | new.keys()):
            if key not in new:
                drifts.append(Drift(section, key, DriftKind.REMOVED))
            elif key not in old:
                drifts.append(Drift(section, key, DriftKind.ADDED))
            elif old[key] != new[key]:
                drifts.append(Drift(section, key, DriftKind.CHANGED))
    return drifts
