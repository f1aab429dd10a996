"""oracle_gate.lock: compute, parse, render and compare a package's lockfile.

A lock holds the BLAKE3 digest of every fixture file and of the canonical
assertion surface of every test unit, keyed package-relative, as JSON with
sorted keys. It never records which backend wrote it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from blake3 import blake3

from oracle_gate import backend
from oracle_gate.buildfiles import package_files
from oracle_gate.errors import LockError
from oracle_gate.globs import matches_any
from oracle_gate.graph import PackageGraph, load_packages
from oracle_gate.model import Package
from oracle_gate.repo.trees import Tree, WorkTree

__all__ = [
    "LOCK_FILE",
    "Drift",
    "DriftKind",
    "Lock",
    "LockStatus",
    "compare_locks",
    "compute_lock",
    "fixture_paths",
    "lock_statuses",
    "parse_lock",
    "relock",
    "render_lock",
    "test_paths",
    "write_locks",
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


def _package_files(tree: Tree, graph: PackageGraph, package: Package) -> list[str]:
    """Package-relative paths of the files this package owns (not a nested package's)."""
    if package.path not in graph.packages:
        return []  # the graph gives it no file, as ``graph.package_of`` never names it
    return package_files(tree.files(), package.path, graph.packages.keys())


def fixture_paths(files: list[str], package: Package) -> list[str]:
    """The package-relative fixture files: the matrix's and every row's fixture globs."""
    patterns = list(package.matrix.fixtures)
    for row in package.matrix.rows:
        patterns.extend(row.fixtures)
    return sorted(path for path in files if matches_any(path, patterns))


def test_paths(files: list[str], package: Package) -> list[str]:
    """The package-relative test files whose assertion surface is locked."""
    return sorted(path for path in files if matches_any(path, package.matrix.tests))


def surface_units(tree: Tree, package: Package, tests: list[str]) -> dict[str, str]:
    """Canonical assertion-surface text per ``test_file::unit`` key.

    Raises:
        SurfaceError: a test file does not parse.
    """
    repo_paths = [package.join(test) for test in tests]
    per_file = backend.extract_units_many([(tree.read(path), path) for path in repo_paths])
    units: dict[str, str] = {}
    for test, file_units in zip(tests, per_file, strict=True):
        for key, text in file_units:
            units[f"{test}::{key}"] = text
    return units


def compute_lock(tree: Tree, graph: PackageGraph, package: Package) -> Lock:
    """The lock ``package`` should have in ``tree``.

    Raises:
        TreeError: a fixture or test file cannot be read.
        SurfaceError: a test file does not parse.
    """
    files = _package_files(tree, graph, package)
    fixtures = fixture_paths(files, package)
    digests = tree.digests([package.join(path) for path in fixtures])
    units = surface_units(tree, package, test_paths(files, package))
    return Lock(
        fixtures=dict(zip(fixtures, digests, strict=True)),
        surface={key: blake3(text.encode()).hexdigest() for key, text in units.items()},
    )


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


@dataclass(frozen=True)
class LockStatus:
    """How a package's lock on disk compares with its tree."""

    package: Package
    lock_path: str  # repo-relative
    drifts: tuple[Drift, ...]
    missing: bool


def lock_statuses(tree: WorkTree, graph: PackageGraph, packages: list[Package]) -> list[LockStatus]:
    """Compare each package's lockfile with what its tree says it should be.

    Raises:
        LockError: a lockfile is not valid JSON or not the lock schema.
        TreeError, SurfaceError: a fixture or test cannot be read or parsed.
    """
    statuses = []
    for package in packages:
        lock_path = package.join(LOCK_FILE)
        actual = compute_lock(tree, graph, package)
        if not (tree.root / lock_path).exists():
            statuses.append(LockStatus(package, lock_path, (), missing=True))
            continue
        stored = parse_lock(tree.read(lock_path), lock_path)
        statuses.append(LockStatus(package, lock_path, tuple(compare_locks(stored, actual)), False))
    return statuses


def write_locks(tree: WorkTree, graph: PackageGraph, packages: list[Package]) -> list[str]:
    """Rewrite the lockfiles of ``packages``; returns the repo-relative paths written.

    Every lock is computed before any is written, so an error leaves all files
    as they were; each write is atomic (a temporary file renamed into place).
    An existing lock that does not parse is not overwritten: it may hold
    merge-conflict markers a human must resolve.

    Raises:
        LockError: an existing lockfile is not a valid lock.
        TreeError, SurfaceError: a fixture or test cannot be read or parsed.
    """
    for package in packages:
        lock_path = package.join(LOCK_FILE)
        if (tree.root / lock_path).exists():
            parse_lock(tree.read(lock_path), lock_path)
    rendered = [
        (package.join(LOCK_FILE), render_lock(compute_lock(tree, graph, package)))
        for package in packages
    ]
    for lock_path, content in rendered:
        target = tree.root / lock_path
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temporary.write_bytes(content)
        os.replace(temporary, target)
    return [lock_path for lock_path, _ in rendered]


def relock(root: Path, package_dirs: Sequence[str]) -> list[str]:
    """``oracle-gate lock --write`` for repo-relative package directories under ``root``.

    Raises:
        ConfigError: a directory is not a package, or a matrix is invalid.
        LockError, TreeError, SurfaceError: as ``write_locks``.
    """
    tree = WorkTree(root)
    graph = PackageGraph(load_packages(tree))
    return write_locks(tree, graph, [graph.resolve(directory) for directory in package_dirs])
