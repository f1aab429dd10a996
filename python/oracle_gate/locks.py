"""Locks of a tree: compute each package's lock, verify it against the tree, write it.

The file format lives in ``config.lockfile``.

A lock holds the BLAKE3 digest of every fixture file and of the canonical
assertion surface of every unit of the test files and test-support modules,
keyed package-relative, as JSON with sorted keys. It records the oracle-gate and
the algorithm versions that wrote it, never which backend.

A lock an older oracle-gate wrote (another surface or digest algorithm) cannot be
compared with this gate's digests entry by entry. Verifying one, this gate
recomputes the lock of the commit that last wrote it: an entry that differs only
because the algorithm changed is stale, not drift; one that differs because the
tree changed since is drift, as with any lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from blake3 import blake3

from oracle_gate import backend
from oracle_gate.bazel.glob import package_files
from oracle_gate.config.lockfile import (
    CURRENT,
    LOCK_FILE,
    Drift,
    Lock,
    gate_version,
    parse_lock,
    render_lock,
    stale_drifts,
)
from oracle_gate.errors import GateError, SurfaceError
from oracle_gate.globs import matches_any
from oracle_gate.graph import PackageGraph, load_packages
from oracle_gate.model import Package
from oracle_gate.repo.files import replace_file
from oracle_gate.repo.git import git
from oracle_gate.repo.trees import GitTree, Tree, WorkTree

__all__ = [
    "LockStatus",
    "comparable",
    "compute_lock",
    "fixture_paths",
    "lock_statuses",
    "relock",
    "support_paths",
    "test_paths",
    "write_locks",
]


def _package_files(tree: Tree, graph: PackageGraph, package: Package) -> list[str]:
    """Package-relative paths of the files this package owns (not a nested package's)."""
    if package.path not in graph.packages:
        return []  # the graph gives it no file, as ``graph.package_of`` never names it
    return package_files(tree.files(), package.path, graph.packages.keys())


def fixture_paths(files: list[str], package: Package) -> list[str]:
    """The package-relative fixture files: the matrix's and every row's fixture globs."""
    return sorted(path for path in files if package.matrix.is_fixture(path))


def test_paths(files: list[str], package: Package) -> list[str]:
    """The package-relative test files whose assertion surface is locked."""
    return sorted(path for path in files if matches_any(path, package.matrix.tests))


def support_paths(files: list[str], package: Package) -> list[str]:
    """The package-relative test-support modules locked like tests (helpers, ``__init__.py``,
    ``conftest.py``): Python files in the test folders that are not tests, fixtures or oracle code.
    """
    matrix = package.matrix
    oracle = matrix.oracle_modules
    fixtures = set(fixture_paths(files, package))
    return sorted(
        path
        for path in files
        if path.endswith(".py")
        and matrix.is_test_support(path)
        and path not in oracle
        and path not in fixtures
    )


def _support_units(tree: Tree, package: Package, support: list[str]) -> dict[str, str]:
    """``surface_units`` of test-support modules, leaving out those Python cannot parse.

    Such a module cannot be imported, only read as data (CPython keeps
    ``badsyntax_*.py`` beside its tests); the diff still judges any change to it.
    """
    units: dict[str, str] = {}
    for path in support:
        try:
            units.update(surface_units(tree, package, [path]))
        except SurfaceError:
            continue
    return units


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
    units.update(_support_units(tree, package, support_paths(files, package)))
    return Lock(
        fixtures=dict(zip(fixtures, digests, strict=True)),
        surface={key: blake3(text.encode()).hexdigest() for key, text in units.items()},
    )


def comparable(stored: Lock, section: str) -> bool:
    """Whether ``stored``'s digests of ``section`` were computed as this gate computes them:
    fixtures need the same digest algorithm, surface units the same surface one too. A
    format-1 lock used digest algorithm 1 and an unrecorded surface algorithm."""
    digest = stored.algorithms.digest if stored.algorithms else 1
    if section == "fixtures":
        return digest == CURRENT.digest
    return stored.current


@dataclass(frozen=True)
class LockStatus:
    """How a package's lock on disk compares with its tree.

    Attributes:
        drifts: entries the tree moved since the lock was written.
        stale: for a lock an older oracle-gate wrote, entries that differ only because
            the algorithm changed (not drift: relock at your convenience).
        unknown: entries of such a lock that differ where no history says why (not
            committed, or no git history, as in a Bazel runfiles tree).
        stored: the lock on disk, None when missing.
    """

    package: Package
    lock_path: str  # repo-relative
    drifts: tuple[Drift, ...]
    missing: bool
    stale: tuple[Drift, ...] = ()
    unknown: tuple[Drift, ...] = ()
    stored: Lock | None = None


def _written_from(root: Path, lock_path: str, text: bytes) -> GitTree | None:
    """The commit tree ``text`` was committed in (the last commit that changed the lock,
    if it holds these very bytes), or None outside git or for an uncommitted lock."""
    try:
        commit = git(root, "log", "-1", "--format=%H", "--", lock_path).strip()
        if not commit:
            return None
        tree = GitTree(root, commit)
        return tree if tree.read_optional(lock_path) == text else None
    except GateError:
        return None


def _lock_then(root: Path, package: Package, lock_path: str, text: bytes) -> Lock | None:
    """What this gate computes for ``package`` in the commit that wrote the lock."""
    tree = _written_from(root, lock_path, text)
    if tree is None:
        return None
    try:
        graph = PackageGraph(load_packages(tree))
        then = graph.packages.get(package.path)
        return None if then is None else compute_lock(tree, graph, then)
    except GateError:
        return None  # that commit's tree is not one this gate can read: no history then


def _split(
    stored: Lock, actual: Lock, then: Lock | None
) -> tuple[list[Drift], list[Drift], list[Drift]]:
    """(drifts, stale, unknown) of ``stored`` against ``actual``; ``then`` is this gate's
    lock of the commit that wrote ``stored``."""
    drifts: list[Drift] = []
    stale: list[Drift] = []
    unknown: list[Drift] = []
    for drift in stale_drifts(stored, actual):
        if comparable(stored, drift.section):
            drifts.append(drift)
        elif then is None:
            unknown.append(drift)
        elif getattr(then, drift.section).get(drift.key) == getattr(actual, drift.section).get(
            drift.key
        ):
            stale.append(drift)  # the tree kept the entry; the algorithm moved it
        else:
            drifts.append(drift)
    return drifts, stale, unknown


def lock_statuses(tree: WorkTree, graph: PackageGraph, packages: list[Package]) -> list[LockStatus]:
    """Compare each package's lockfile with what its tree says it should be.

    Raises:
        LockError: a lockfile is not valid JSON or not the lock schema, or a newer
            oracle-gate wrote it.
        TreeError, SurfaceError: a fixture or test cannot be read or parsed.
    """
    statuses = []
    for package in packages:
        lock_path = package.join(LOCK_FILE)
        actual = compute_lock(tree, graph, package)
        if not (tree.root / lock_path).exists():
            statuses.append(LockStatus(package, lock_path, (), missing=True))
            continue
        text = tree.read(lock_path)
        stored = parse_lock(text, lock_path)
        then = None
        if not stored.current and stale_drifts(stored, actual):
            then = _lock_then(tree.root, package, lock_path, text)
        drifts, stale, unknown = _split(stored, actual, then)
        statuses.append(
            LockStatus(
                package, lock_path, tuple(drifts), False, tuple(stale), tuple(unknown), stored
            )
        )
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
        (package.join(LOCK_FILE), render_lock(compute_lock(tree, graph, package), gate_version()))
        for package in packages
    ]
    for lock_path, content in rendered:
        replace_file(tree.root / lock_path, content)
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
