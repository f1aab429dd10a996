"""The Report: findings of one check, their aggregation per path, and the exit code."""

from __future__ import annotations

from dataclasses import dataclass

from oracle_gate.model import ExitCode, Finding, Lane, Verdict

__all__ = ["PathVerdict", "Report", "worst"]

# Which verdict wins when one path has several findings.
_SEVERITY = {
    Verdict.PASS: 0,
    Verdict.IGNORED_AS_ORACLE: 1,
    Verdict.PREEXISTING: 2,
    Verdict.HUMAN_NOTED: 3,
    Verdict.REJECT: 4,
}


def worst(verdicts: list[Verdict]) -> Verdict:
    """The verdict that decides: a reject beats a note, a note beats a pass."""
    return max(verdicts, key=_SEVERITY.__getitem__, default=Verdict.PASS)


@dataclass(frozen=True)
class PathVerdict:
    path: str
    lane: Lane
    verdict: Verdict


@dataclass(frozen=True)
class Report:
    """Everything a format needs to print, sorted so two runs are byte-identical."""

    base: str
    head: str
    backend: str
    paths: tuple[PathVerdict, ...]
    findings: tuple[Finding, ...]
    docs_only: bool = False

    @classmethod
    def build(
        cls,
        *,
        base: str,
        head: str,
        backend: str,
        lanes: dict[str, Lane],
        findings: list[Finding],
        docs_only: bool,
    ) -> Report:
        ordered = tuple(sorted(findings, key=Finding.sort_key))
        # Package-level findings (a stale lock, an expired freeze) name paths the
        # diff did not touch; they get a table line too.
        lanes = dict(lanes)
        for finding in ordered:
            if finding.path is not None:
                lanes.setdefault(finding.path, finding.lane)
        paths = tuple(
            PathVerdict(
                path=path,
                lane=lane,
                verdict=worst([f.verdict for f in ordered if f.path == path]),
            )
            for path, lane in sorted(lanes.items())
        )
        return cls(base, head, backend, paths, ordered, docs_only)

    @property
    def verdict(self) -> Verdict:
        """REJECT when any finding rejects, else PASS."""
        rejected = any(f.verdict is Verdict.REJECT for f in self.findings)
        return Verdict.REJECT if rejected else Verdict.PASS

    @property
    def verdict_word(self) -> str:
        """What the merge queue should do: "reject" or "merge"."""
        return "reject" if self.verdict is Verdict.REJECT else "merge"

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.REJECT if self.verdict is Verdict.REJECT else ExitCode.MERGE

    def verdict_of(self, path: str) -> Verdict:
        """The deciding verdict over every finding about ``path``.

        ``build`` stored it in ``paths`` for every path a finding names; a path
        outside ``paths`` has no finding, so PASS, as ``worst([])`` is.
        """
        return next((p.verdict for p in self.paths if p.path == path), Verdict.PASS)

    def reviewers(self) -> tuple[str, ...]:
        """Owners whose review a human-noted oracle change requires."""
        found: list[str] = []
        for finding in self.findings:
            if finding.verdict is Verdict.HUMAN_NOTED:
                found.extend(owner for owner in finding.owners if owner not in found)
        return tuple(found)
