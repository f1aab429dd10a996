"""The data model shared by every stage: diff -> packages -> lanes -> report."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from enum import Enum, IntEnum

from oracle_gate.frozen import quick_init
from oracle_gate.globs import GlobIndex, literal_directory, matches_any

CONFTEST = "conftest.py"


class Lane(str, Enum):
    """The lane a touched path is judged in (SPEC §4). Values appear in JSON reports."""

    PRODUCTION = "production"
    TEST = "test"
    AGENT_TEST = "agent_test"
    FIXTURE = "fixture"
    LOCK = "lock"
    LEDGER = "ledger"
    MATRIX = "matrix"
    PROPERTY = "property"
    HARNESS = "harness"
    DOCS = "docs"
    OTHER = "other"


ORACLE_LANES = frozenset(
    {Lane.FIXTURE, Lane.LOCK, Lane.TEST, Lane.MATRIX, Lane.PROPERTY, Lane.HARNESS, Lane.LEDGER}
)


class Verdict(str, Enum):
    """What the gate says of one path or row. Values appear in JSON reports."""

    PASS = "pass"
    REJECT = "reject"
    HUMAN_NOTED = "human_noted"
    IGNORED_AS_ORACLE = "ignored_as_oracle"
    PREEXISTING = "preexisting"


class ExitCode(IntEnum):
    """Process exit codes a merge queue acts on."""

    MERGE = 0
    REJECT = 1
    GATE_ERROR = 2
    INTERRUPTED = 130


class ChangeKind(str, Enum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"


@dataclass(frozen=True)
class Change:
    """One path the diff touches, as ``git diff --raw -M`` reports it."""

    path: str
    kind: ChangeKind
    old_path: str | None = None
    # A git submodule (a commit, not a file) on either side.
    submodule: bool = False


@dataclass(frozen=True)
class Commit:
    """A commit between base and head: its SHA and its message trailers."""

    sha: str
    trailers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Diff:
    """What the patch changed, read from git objects only."""

    base: str
    head: str
    changes: tuple[Change, ...]
    commits: tuple[Commit, ...]


@dataclass(frozen=True)
class Budget:
    examples: int = 100
    seconds: float = 20.0


@quick_init
@dataclass(frozen=True)
class Row:
    """One invariant row of a package's matrix."""

    id: str
    globs: tuple[str, ...]
    properties: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    relations: tuple[str, ...] = ()
    fixtures: tuple[str, ...] = ()
    budget: Budget = field(default_factory=Budget)

    @property
    def oracle_modules(self) -> frozenset[str]:
        """The package-relative files its properties, partitions and relations live in."""
        return frozenset(
            ref_file(ref) for ref in (*self.properties, *self.partitions, *self.relations)
        )


def ref_file(ref: str) -> str:
    """The file of an oracle reference ``file.py:name``, relative to its package."""
    return ref.split(":", 1)[0]


@quick_init
@dataclass(frozen=True)
class Matrix:
    """A package's invariant matrix (invariants.yaml or a BUILD gate declaration)."""

    owners: tuple[str, ...]
    tests: tuple[str, ...]
    fixtures: tuple[str, ...]
    deps: tuple[str, ...]
    rows: tuple[Row, ...]
    version: int = 1
    # The trusted replay's time budget for this package (``replay: {seconds: N}``); None
    # takes the repository's ``replay-seconds``, or derives it from the parent's baseline.
    replay_seconds: float | None = None

    @property
    def test_folders(self) -> tuple[str, ...]:
        """The directories the ``tests`` globs live in (``tests/``); never the package root."""
        return tuple(sorted({literal_directory(g) for g in self.tests} - {""}))

    def rows_matching(self, relative: str) -> tuple[Row, ...]:
        """The rows whose globs select the package-relative path, in the matrix's order."""
        return tuple(self.rows[index] for index in self._row_globs.matching(relative))

    @functools.cached_property
    def _row_globs(self) -> GlobIndex:
        # Built on first use: most matrices of a large graph are never asked.
        return GlobIndex(row.globs for row in self.rows)

    @functools.cached_property
    def fixture_globs(self) -> tuple[str, ...]:
        """Every glob that makes a file a fixture: the package's, then each row's."""
        return (*self.fixtures, *(glob for row in self.rows for glob in row.fixtures))

    def is_fixture(self, relative: str) -> bool:
        """Whether a fixture glob (``fixture_globs``) selects the package-relative path."""
        return bool(self._fixture_globs.matching(relative))

    @functools.cached_property
    def _fixture_globs(self) -> GlobIndex:
        return GlobIndex([self.fixture_globs])

    @functools.cached_property
    def oracle_modules(self) -> frozenset[str]:
        """Every row's oracle modules (``Row.oracle_modules``)."""
        return frozenset(module for row in self.rows for module in row.oracle_modules)

    def __hash__(self) -> int:
        # Caches keyed by a package (``lanes/tamper``) look it up once per changed path;
        # the dataclass's own hash would hash all its rows again each time.
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:
        return hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self)))

    def is_test_support(self, relative: str) -> bool:
        """Whether a package-relative path is test support: in a test folder, not a test.

        ``conftest.py`` anywhere in the package is test support too (pytest loads it
        for every test below it).
        """
        if matches_any(relative, self.tests):
            return False
        return relative.startswith(self.test_folders) or relative.rsplit("/", 1)[-1] == CONFTEST


@quick_init
@dataclass(frozen=True)
class Package:
    """A directory that declares a matrix. ``path`` is repo-relative; the root is ``""``."""

    path: str
    matrix: Matrix
    # The file that declares the matrix: invariants.yaml, or BUILD(.bazel) for a Bazel gate.
    matrix_file: str = "invariants.yaml"
    # The Bazel gate target (``//libs/codec:oracle_gate``) when BUILD declares the matrix.
    target: str | None = None

    def relative(self, repo_path: str) -> str:
        """``repo_path`` relative to this package's directory."""
        return repo_path[len(self.path) + 1 :] if self.path else repo_path

    def join(self, package_path: str) -> str:
        """A package-relative path made repo-relative."""
        return f"{self.path}/{package_path}" if self.path else package_path


@dataclass(frozen=True)
class Finding:
    """One verdict on a path or a row, with the sentence that explains it."""

    verdict: Verdict
    lane: Lane
    path: str | None
    reason: str
    row: str | None = None
    package: str | None = None
    owners: tuple[str, ...] = ()
    line: int | None = None  # 1-based line in ``path`` the finding is about, when known

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.path or "", self.row or "", self.lane.value, self.reason)
