"""Human notes that explain an oracle change: changelog entries and commit trailers.

A path is noted when either
- the package's ``ORACLE_CHANGELOG.md`` in the head tree has an entry (a block
  under one heading) that names the parent commit (full SHA or 12+ hex chars)
  and the path (repo- or package-relative), or
- a head commit carries ``Oracle-Change: <path> — <reason>`` and ``Reviewed-by:``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oracle_gate.model import Diff, Package
from oracle_gate.repo.trees import GitTree

__all__ = ["CHANGELOG_FILE", "Notes", "read_notes"]

CHANGELOG_FILE = "ORACLE_CHANGELOG.md"
_SHA_TOKEN = re.compile(r"\b[0-9a-f]{12,40}\b")
_HEADING = re.compile(r"^#{1,6}\s")
_PATH_REASON_SPLIT = re.compile(r"\s+(?:—|--|-)\s+")


@dataclass(frozen=True)
class Notes:
    """Which paths a human explained, and who triaged added skips or sleeps."""

    changelog_entries: dict[str, tuple[str, ...]]  # package path -> entries naming the parent
    trailer_paths: frozenset[str]
    freeze_triage: tuple[str, ...]

    def covers(self, path: str, package: Package | None) -> bool:
        """Whether a human note names the repo-relative ``path``."""
        if path in self.trailer_paths:
            return True
        if package is None:
            return False
        names = {path, package.relative(path)}
        return any(
            any(re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w/.-])", entry) for name in names)
            for entry in self.changelog_entries.get(package.path, ())
        )


def _entries_naming(text: str, parent: str) -> tuple[str, ...]:
    entries: list[list[str]] = [[]]
    for line in text.splitlines():
        if _HEADING.match(line):
            entries.append([])
        entries[-1].append(line)
    naming = []
    for lines in entries:
        block = "\n".join(lines)
        if any(parent.startswith(token) for token in _SHA_TOKEN.findall(block)):
            naming.append(block)
    return tuple(naming)


def _trailer_paths(diff: Diff) -> frozenset[str]:
    paths: set[str] = set()
    for commit in diff.commits:
        keys = {key.lower() for key, _ in commit.trailers}
        if "reviewed-by" not in keys:
            continue
        for key, value in commit.trailers:
            if key.lower() == "oracle-change" and value:
                paths.add(_PATH_REASON_SPLIT.split(value, maxsplit=1)[0].strip())
    return frozenset(paths)


def read_notes(diff: Diff, head: GitTree, packages: dict[str, Package]) -> Notes:
    """Collect the notes the head commit carries for this diff."""
    entries: dict[str, tuple[str, ...]] = {}
    files = set(head.files())
    for package in packages.values():
        changelog = package.join(CHANGELOG_FILE)
        if changelog in files:
            text = head.read(changelog).decode("utf-8", "replace")
            entries[package.path] = _entries_naming(text, diff.base)
    triage = tuple(
        value
        for commit in diff.commits
        for key, value in commit.trailers
        if key.lower() == "freeze-triage" and value
    )
    return Notes(
        changelog_entries=entries, trailer_paths=_trailer_paths(diff), freeze_triage=triage
    )
