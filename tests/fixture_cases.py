"""Cheats and honest neighbours of a detector, read from its fixture file (tests/fixtures/).

A fixture file holds cases, as ruff's rule fixtures do: each starts with a header line

    # case: parent                      the version the others are compared with
    # case: cheat -> EXPECTED: what     must be caught; EXPECTED is what the catch names
    # case: honest: what                must pass

and runs to the next header. What comes before the first header documents the file.
A case that spans files splits its text with ``# file: PATH`` (the file's whole text)
and ``# append: PATH`` (text added to an existing file) lines (``Case.parts``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FIXTURES", "Case", "read_cases"]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_HEADER = re.compile(r"^# case: (parent|cheat|honest)(?: -> (.+?))?(?:: (.*))?$")
_PART = re.compile(r"^# (file|append): (\S+)$")


@dataclass(frozen=True)
class Case:
    kind: str  # "parent", "cheat" or "honest"
    name: str
    expect: str  # what a cheat's catch must name; "" otherwise
    source: str

    def __str__(self) -> str:  # the test id
        return f"{self.kind}: {self.name}"

    def parts(self) -> list[tuple[str, str, str]]:
        """``(mode, path, text)`` for each ``# file:``/``# append:`` part, in order."""
        parts: list[tuple[str, str, list[str]]] = []
        for line in self.source.splitlines():
            match = _PART.match(line)
            if match:
                parts.append((match.group(1), match.group(2), []))
            else:
                assert parts, f"case {self.name!r}: text before its first # file: line"
                parts[-1][2].append(line)
        return [(mode, path, "\n".join(text).strip("\n") + "\n") for mode, path, text in parts]


def read_cases(path: Path) -> list[Case]:
    """The cases of one fixture file, in order; a malformed header fails the test run."""
    blocks: list[tuple[re.Match[str], list[str]]] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("# case:"):
            match = _HEADER.match(line)
            assert match, f"{path}:{number}: malformed case header {line!r}"
            blocks.append((match, []))
        elif blocks:
            blocks[-1][1].append(line)
    cases = []
    for header, lines in blocks:
        kind, expect, name = header.groups()
        source = "\n".join(lines).strip("\n") + "\n"
        cases.append(Case(kind, name or kind, expect or "", source))
    assert all(c.expect for c in cases if c.kind == "cheat"), f"{path}: a cheat expects nothing"
    return cases
