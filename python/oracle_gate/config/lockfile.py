"""oracle_gate.lock: the lockfile format (parse, render, compare), nothing about trees.

A lock holds the BLAKE3 digest of every fixture file and of the canonical
assertion surface of every test unit, keyed package-relative, as JSON with
sorted keys. It never records which backend wrote it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum

from oracle_gate.config.documents import load_json
from oracle_gate.errors import LockError

__all__ = [
    "LOCK_FILE",
    "Drift",
    "DriftKind",
    "Lock",
    "compare_locks",
    "parse_lock",
    "render_lock",
    "stale_drifts",
]

LOCK_FILE = "oracle_gate.lock"
LOCK_VERSION = 1
_SECTIONS = ("fixtures", "surface")
_DIGEST = re.compile(r"[0-9a-f]{64}")


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


def _digest_map(document: dict[str, object], section: str, text: str, path: str) -> dict[str, str]:
    value = document.get(section, {})
    if not isinstance(value, dict):
        raise LockError(
            f"'{section}' must map keys to digests, found {type(value).__name__}",
            path,
            _line_of(text, json.dumps(section)),
        )
    for key, digest in value.items():
        if not isinstance(digest, str) or _DIGEST.fullmatch(digest) is None:
            raise LockError(
                f"'{section}' entry {key!r} has digest {digest!r}; expected 64 lowercase hex "
                "digits (BLAKE3)",
                path,
                _line_of(text, json.dumps(key)),
            )
    return dict(value)


def _line_of(text: str, needle: str) -> int | None:
    """The 1-based line of the first ``needle`` in ``text``, if it is there."""
    found = text.find(needle)
    return text.count("\n", 0, found) + 1 if found >= 0 else None


def parse_lock(text: bytes, path: str) -> Lock:
    """Parse a lockfile.

    Raises:
        LockError: not UTF-8, not valid JSON, a key twice in one object, over
            the size or depth limit, or not the lock schema (version 1,
            fixtures, surface, digests of 64 lowercase hex digits); with the
            1-based line where it is known. A malformed lock is never drift.
    """
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LockError("is not valid UTF-8", path, text.count(b"\n", 0, error.start) + 1) from None
    document = load_json(decoded, path, 1, LockError)
    if not isinstance(document, dict):
        raise LockError("must be a JSON object with 'version', 'fixtures' and 'surface'", path, 1)
    unknown = sorted(set(document) - {"version", *_SECTIONS})
    if unknown:
        raise LockError(
            f"unknown key {unknown[0]!r}; expected version, fixtures, surface",
            path,
            _line_of(decoded, json.dumps(unknown[0])),
        )
    found = document.get("version")
    if type(found) is not int or found != LOCK_VERSION:
        raise LockError(
            f"lock version {found!r} is not supported; expected {LOCK_VERSION}",
            path,
            _line_of(decoded, '"version"') or 1,
        )
    return Lock(
        fixtures=_digest_map(document, "fixtures", decoded, path),
        surface=_digest_map(document, "surface", decoded, path),
    )


def stale_drifts(stored: Lock, actual: Lock) -> list[Drift]:
    """The drifts that make ``stored`` stale against ``actual``: all but added test units.

    A test unit the lock does not know yet is not oracle until a human relocks
    (the test lanes report it ``ignored_as_oracle``), so ``check``, ``lock`` and
    a Bazel gate all accept it.
    """
    return [
        drift
        for drift in compare_locks(stored, actual)
        if not (drift.section == "surface" and drift.kind is DriftKind.ADDED)
    ]


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
