"""The Report: findings of one check, their aggregation per path, and the exit code."""

from __future__ import annotations

from dataclasses import dataclass

from oracle_gate.model import ExitCode, Finding, Lane, Verdict

__all__ = ["APPROXIMATE_SHOWN", "PathVerdict", "Report", "worst"]

# How many places of an approximate graph the text and markdown reports list.
APPROXIMATE_SHOWN = 5

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
    # Where the head's package graph assumes edges it could not evaluate
    # (``PackageGraph.approximate``): selection there errs toward more packages.
    approximate: tuple[str, ...] = ()

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
        approximate: tuple[str, ...] = (),
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
        return cls(base, head, backend, paths, ordered, docs_only, approximate)

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

    def approximate_summary(self) -> str:
        """One sentence on the graph's over-approximation, or "" when it has none."""
        if not self.approximate:
            return ""
        return (
            f"package graph approximate in {len(self.approximate)} place(s): edges were assumed "
            "where BUILD files could not be evaluated, so more packages may be selected, "
            "never fewer (`oracle-gate select --explain` lists them)"
        )

    def approximate_shown(self) -> tuple[str, ...]:
        """The places a human report lists: the first few, then how many more."""
        shown = self.approximate[:APPROXIMATE_SHOWN]
        more = len(self.approximate) - len(shown)
        return shown + ((f"... and {more} more",) if more else ())

    def reviewers(self) -> tuple[str, ...]:
        """Owners whose review a human-noted oracle change requires."""
        found: list[str] = []
        for finding in self.findings:
            if finding.verdict is Verdict.HUMAN_NOTED:
                found.extend(owner for owner in finding.owners if owner not in found)
        return tuple(found)
