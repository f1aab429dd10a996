"""What vet found: each mutant's outcome per judge, each row's kill score, the whole report.

Plain frozen dataclasses with a JSON form (``to_json``/``from_json``): the same
form is the cache entry ``check --require-vetted`` reads and the body of
``vet --format json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["MutantResult", "Outcome", "RowStatus", "RowVet", "VetReport"]


class Outcome(str, Enum):
    """How one judge took one mutant. Values appear in JSON."""

    KILLED = "killed"  # the judge rejected it: the gate would refuse this patch
    SURVIVED = "survived"
    TIMED_OUT = "timed_out"  # a child ran out of time: refused too, but slowly
    # survived, and gave the same outputs as the tree on every recorded input: no recorded
    # input tells it apart, so it may be the same program (or the row records too little)
    EQUIVALENT = "equivalent_suspect"


class RowStatus(str, Enum):
    """Whether a row could be scored. Values appear in JSON."""

    SCORED = "scored"
    FAILING = "failing"  # the row rejects the unmutated tree: no score means anything
    NO_MUTANTS = "no_mutants"  # its globs guard no function an operator applies to


@dataclass(frozen=True)
class MutantResult:
    """One mutant and its verdicts.

    ``row`` is the row's own oracles (properties with their seeds, partitions,
    relations). ``tests`` is the second column: the replayed parent tests whose
    footprint meets the mutant; None until per-test footprints exist for the
    replay (it is not judged yet).
    """

    id: str
    path: str
    function: str
    operator: str
    line: int
    description: str
    row: Outcome
    reason: str  # the finding that killed it, or why it counts as it does
    diff: str
    tests: Outcome | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "function": self.function,
            "operator": self.operator,
            "line": self.line,
            "description": self.description,
            "row": self.row.value,
            "tests": self.tests.value if self.tests else None,
            "reason": self.reason,
            "diff": self.diff,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MutantResult:
        tests = data.get("tests")
        return cls(
            id=str(data["id"]),
            path=str(data["path"]),
            function=str(data["function"]),
            operator=str(data["operator"]),
            line=int(data["line"]),
            description=str(data["description"]),
            row=Outcome(data["row"]),
            reason=str(data["reason"]),
            diff=str(data["diff"]),
            tests=Outcome(tests) if tests else None,
        )


@dataclass(frozen=True)
class RowVet:
    """One row's vet: its content key, status, mutants and notes."""

    package: str
    row: str
    key: str  # the content key (vet/store.py) the cache files it under
    status: RowStatus
    mutants: tuple[MutantResult, ...]
    notes: tuple[str, ...] = ()

    def count(self, outcome: Outcome) -> int:
        return sum(m.row is outcome for m in self.mutants)

    @property
    def caught(self) -> int:
        """Killed or timed out: either way the gate refuses the mutant as a patch."""
        return self.count(Outcome.KILLED) + self.count(Outcome.TIMED_OUT)

    @property
    def decorative(self) -> bool:
        """Scored, over at least one mutant, and caught none of them."""
        return self.status is RowStatus.SCORED and bool(self.mutants) and self.caught == 0

    @property
    def survivors(self) -> tuple[MutantResult, ...]:
        """Survived or equivalent suspect: each is a change no oracle of the row refused."""
        return tuple(m for m in self.mutants if m.row in (Outcome.SURVIVED, Outcome.EQUIVALENT))

    @property
    def score(self) -> str:
        """``caught/mutants (percent)``, or the status when there is no score. Equivalent
        suspects count as not caught: a suspect is not a proof, and a human reads its diff."""
        if self.status is not RowStatus.SCORED:
            return str(self.status.value).replace("_", " ")
        total = len(self.mutants)
        return f"{self.caught}/{total} ({100 * self.caught // total}%)"

    @property
    def name(self) -> str:
        return f"{self.package or '.'}:{self.row}"

    def to_json(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "row": self.row,
            "key": self.key,
            "status": self.status.value,
            "score": self.score,
            "decorative": self.decorative,
            "counts": {outcome.value: self.count(outcome) for outcome in Outcome},
            "notes": list(self.notes),
            "mutants": [m.to_json() for m in self.mutants],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RowVet:
        return cls(
            package=str(data["package"]),
            row=str(data["row"]),
            key=str(data["key"]),
            status=RowStatus(data["status"]),
            mutants=tuple(MutantResult.from_json(m) for m in data["mutants"]),
            notes=tuple(str(n) for n in data.get("notes", ())),
        )


@dataclass(frozen=True)
class VetReport:
    """Every vetted row of one commit, sorted by package then row id."""

    commit: str
    per_function: int
    seed: int
    rows: tuple[RowVet, ...]

    @property
    def decorative(self) -> tuple[RowVet, ...]:
        return tuple(row for row in self.rows if row.decorative)

    @property
    def failing(self) -> tuple[RowVet, ...]:
        return tuple(row for row in self.rows if row.status is RowStatus.FAILING)

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "per_function": self.per_function,
            "seed": self.seed,
            "rows": [row.to_json() for row in self.rows],
        }
