"""oracle_gate.lock: the lockfile format (parse, render, compare), nothing about trees.

A lock holds the BLAKE3 digest of every fixture file and of the canonical
assertion surface of every test unit, keyed package-relative, as JSON with
sorted keys. It records the oracle-gate that wrote it and the versions of the two
algorithms its digests depend on (``algorithms``: ``digest``, ``surface``), never
which backend wrote it. Format 1, written before algorithms were recorded, is
still read: its digest algorithm is 1 (BLAKE3 has been the only one), its surface
algorithm unknown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum

from oracle_gate.config.documents import load_json
from oracle_gate.errors import LockError
from oracle_gate.surface import SURFACE_VERSION

__all__ = [
    "CURRENT",
    "LOCK_FILE",
    "Algorithms",
    "Drift",
    "DriftKind",
    "Lock",
    "compare_locks",
    "gate_version",
    "parse_lock",
    "render_lock",
    "stale_drifts",
]

LOCK_FILE = "oracle_gate.lock"
LOCK_VERSION = 2
# Format 1: no "written_by" nor "algorithms"; still read, never written.
_FIRST_VERSION = 1
# The digest algorithm: BLAKE3 of a fixture's bytes and of a unit's canonical text.
DIGEST_VERSION = 1
_SECTIONS = ("fixtures", "surface")
_KEYS = {_FIRST_VERSION: {"version", *_SECTIONS}, LOCK_VERSION: {"version", "written_by",
         "algorithms", *_SECTIONS}}  # fmt: skip
_ALGORITHM_KEYS = ("digest", "surface")
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, order=True)
class Algorithms:
    """The versions of the algorithms a lock's digests were computed with."""

    digest: int
    surface: int

    def describe(self) -> str:
        return f"surface v{self.surface}, digest v{self.digest}"


CURRENT = Algorithms(digest=DIGEST_VERSION, surface=SURFACE_VERSION)


@dataclass(frozen=True)
class Lock:
    """Digests by package-relative key: fixture paths, and ``test_file::unit`` names.

    ``algorithms`` is None for a format-1 lock, which did not record them; ``written_by``
    is the version of the oracle-gate that wrote it, None for format 1.
    """

    fixtures: dict[str, str] = field(default_factory=dict)
    surface: dict[str, str] = field(default_factory=dict)
    algorithms: Algorithms | None = CURRENT
    written_by: str | None = None

    @property
    def current(self) -> bool:
        """Whether this gate's algorithms wrote it, so its digests compare with its own."""
        return self.algorithms == CURRENT

    def writer(self) -> str:
        """Who wrote it, for a report: "oracle-gate 0.1.0, surface v2, digest v1"."""
        if self.algorithms is None:
            return "an oracle-gate that did not record its algorithms (lock format 1)"
        return f"oracle-gate {self.written_by}, {self.algorithms.describe()}"

    def same_algorithms(self, other: Lock) -> bool:
        """Whether the two locks' digests were computed alike and so compare entry by entry."""
        return self.algorithms == other.algorithms


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


def render_lock(lock: Lock, written_by: str) -> bytes:
    """The lockfile bytes of a lock this gate computed: JSON, sorted keys, two-space
    indent, final newline; ``written_by`` is this oracle-gate's version."""
    document = {
        "version": LOCK_VERSION,
        "written_by": written_by,
        "algorithms": {"digest": CURRENT.digest, "surface": CURRENT.surface},
        "fixtures": lock.fixtures,
        "surface": lock.surface,
    }
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


def gate_version() -> str:
    """This oracle-gate's version, as a lock records it."""
    import oracle_gate  # the package's __version__ is computed on first use

    return str(oracle_gate.__version__)


def _newer(found: str, path: str, line: int | None) -> LockError:
    return LockError(
        f"written by a newer oracle-gate ({found}) than this one ({CURRENT.describe()}); "
        "upgrade oracle-gate to read it",
        path,
        line,
    )


def _algorithms(document: dict[str, object], text: str, path: str) -> Algorithms:
    value = document.get("algorithms")
    line = _line_of(text, '"algorithms"') or 1
    if not isinstance(value, dict) or sorted(value) != sorted(_ALGORITHM_KEYS):
        raise LockError(
            f"'algorithms' must map {' and '.join(_ALGORITHM_KEYS)} to versions, found {value!r}",
            path,
            line,
        )
    numbers = [value[key] for key in _ALGORITHM_KEYS]
    if not all(type(number) is int and number >= 1 for number in numbers):
        raise LockError(
            f"'algorithms' versions must be whole numbers >= 1, found {value!r}", path, line
        )
    return Algorithms(digest=numbers[0], surface=numbers[1])


def _written_by(document: dict[str, object], text: str, path: str) -> str:
    value = document.get("written_by")
    if not isinstance(value, str) or not value:
        line = _line_of(text, '"written_by"') or 1
        raise LockError(
            f"'written_by' must be the oracle-gate version, found {value!r}", path, line
        )
    return value


def parse_lock(text: bytes, path: str) -> Lock:
    """Parse a lockfile of format 1 (no algorithms recorded) or 2.

    Raises:
        LockError: not UTF-8, not valid JSON, a key twice in one object, over
            the size or depth limit, or not the lock schema (its version's keys,
            digests of 64 lowercase hex digits); with the 1-based line where it is
            known. A lock from a newer oracle-gate (a later format or algorithm) is
            an error saying so. A malformed lock is never drift.
    """
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LockError("is not valid UTF-8", path, text.count(b"\n", 0, error.start) + 1) from None
    document = load_json(decoded, path, 1, LockError)
    if not isinstance(document, dict):
        raise LockError("must be a JSON object with 'version', 'fixtures' and 'surface'", path, 1)
    found = document.get("version")
    version_line = _line_of(decoded, '"version"') or 1
    if type(found) is int and found > LOCK_VERSION:
        writer = document.get("written_by")
        raise _newer(f"{writer}, lock format {found}" if isinstance(writer, str) else
                     f"lock format {found}", path, version_line)  # fmt: skip
    if type(found) is not int or found not in _KEYS:
        raise LockError(
            f"lock version {found!r} is not supported; expected {_FIRST_VERSION} or {LOCK_VERSION}",
            path,
            version_line,
        )
    unknown = sorted(set(document) - _KEYS[found])
    if unknown:
        raise LockError(
            f"unknown key {unknown[0]!r}; expected {', '.join(sorted(_KEYS[found]))}",
            path,
            _line_of(decoded, json.dumps(unknown[0])),
        )
    algorithms, written_by = None, None
    if found == LOCK_VERSION:
        algorithms = _algorithms(document, decoded, path)
        written_by = _written_by(document, decoded, path)
        if algorithms.digest > CURRENT.digest or algorithms.surface > CURRENT.surface:
            raise _newer(
                f"{written_by}, {algorithms.describe()}", path, _line_of(decoded, '"algorithms"')
            )
    return Lock(
        fixtures=_digest_map(document, "fixtures", decoded, path),
        surface=_digest_map(document, "surface", decoded, path),
        algorithms=algorithms,
        written_by=written_by,
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
