"""CODEOWNERS: who must review a path (GitHub/GitLab syntax, last match wins)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from oracle_gate.repo.trees import Tree

__all__ = ["CODEOWNERS_PATHS", "CodeOwners", "read_codeowners"]

CODEOWNERS_PATHS = ("CODEOWNERS", ".github/CODEOWNERS", ".gitlab/CODEOWNERS", "docs/CODEOWNERS")


def _tokens(body: str) -> list[str]:
    """``**`` (any run), ``*`` (a run without ``/``), ``?`` (one character but ``/``), or
    one literal character, in order."""
    tokens: list[str] = []
    index = 0
    while index < len(body):
        width = 2 if body.startswith("**", index) else 1
        tokens.append(body[index : index + width])
        index += width
    return tokens


def _pattern_regex(anchored: bool, tokens: list[str]) -> re.Pattern[str]:
    """The regular expression of a pattern with one wildcard run at most."""
    parts = {"**": ".*", "*": "[^/]*", "?": "[^/]"}
    body = "".join(parts.get(token) or re.escape(token) for token in tokens)
    prefix = "" if anchored else "(?:.*/)?"
    # A pattern names a file or a directory; a directory owns everything below it.
    return re.compile(prefix + body + "(?:/.*)?")


class _Pattern:
    """One CODEOWNERS pattern: ``matches(path)``.

    One with several wildcard runs (``**a**a**b``) would make a backtracking matcher
    try every way to split the path among them, time growing with their number; it is
    matched instead by following every place in the pattern a prefix of the path can
    reach at once, in time proportional to the pattern's length times the path's.
    """

    def __init__(self, pattern: str) -> None:
        self.anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
        self.tokens = _tokens(pattern.strip("/"))
        runs = sum(token in ("*", "**") for token in self.tokens)
        self.regex = _pattern_regex(self.anchored, self.tokens) if runs <= 1 else None
        # closures[i]: the places reached from place i by letting wildcards match nothing.
        self.closures = [0] * (len(self.tokens) + 1)
        for place in range(len(self.tokens), -1, -1):
            skips = place < len(self.tokens) and self.tokens[place] in ("*", "**")
            self.closures[place] = (1 << place) | (self.closures[place + 1] if skips else 0)

    def matches(self, path: str) -> bool:
        if self.regex is not None:
            return self.regex.fullmatch(path) is not None
        end = 1 << len(self.tokens)
        start = self.closures[0]
        places = start
        for char in path:
            if places & end and char == "/":
                return True  # the pattern names a directory holding the path
            following = start if char == "/" and not self.anchored else 0
            for place, token in enumerate(self.tokens):
                if not places >> place & 1:
                    continue
                if token == "**" or (token == "*" and char != "/"):
                    following |= self.closures[place]
                elif token == char or (token == "?" and char != "/"):
                    following |= self.closures[place + 1]
            places = following
            if not places and self.anchored:
                return False
        return bool(places & end)


@dataclass(frozen=True)
class CodeOwners:
    rules: tuple[tuple[_Pattern, tuple[str, ...]], ...]

    def owners_of(self, path: str) -> tuple[str, ...]:
        """The owners of the last rule matching ``path`` (empty when none does)."""
        found: tuple[str, ...] = ()
        for pattern, owners in self.rules:
            if pattern.matches(path):
                found = owners
        return found


def read_codeowners(tree: Tree) -> CodeOwners:
    """The first CODEOWNERS file of ``tree`` in GitHub's search order, parsed."""
    files = set(tree.files())
    for candidate in CODEOWNERS_PATHS:
        if candidate in files:
            text = tree.read(candidate).decode("utf-8", "replace")
            rules = []
            for line in text.splitlines():
                fields = line.split("#", 1)[0].split()
                if fields:
                    rules.append((_Pattern(fields[0]), tuple(fields[1:])))
            return CodeOwners(tuple(rules))
    return CodeOwners(())
