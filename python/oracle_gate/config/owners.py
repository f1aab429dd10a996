"""CODEOWNERS: who must review a path (GitHub/GitLab syntax, last match wins)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from oracle_gate.repo.trees import Tree

__all__ = ["CODEOWNERS_PATHS", "CodeOwners", "read_codeowners"]

CODEOWNERS_PATHS = ("CODEOWNERS", ".github/CODEOWNERS", ".gitlab/CODEOWNERS", "docs/CODEOWNERS")


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    out = []
    index = 0
    while index < len(body):
        if body.startswith("**", index):
            out.append(".*")
            index += 2
        elif body[index] == "*":
            out.append("[^/]*")
            index += 1
        elif body[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(body[index]))
            index += 1
    prefix = "" if anchored else "(?:.*/)?"
    # A pattern names a file or a directory; a directory owns everything below it.
    return re.compile(prefix + "".join(out) + "(?:/.*)?")


@dataclass(frozen=True)
class CodeOwners:
    rules: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]

    def owners_of(self, path: str) -> tuple[str, ...]:
        """The owners of the last rule matching ``path`` (empty when none does)."""
        found: tuple[str, ...] = ()
        for regex, owners in self.rules:
            if regex.fullmatch(path):
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
                    rules.append((_pattern_regex(fields[0]), tuple(fields[1:])))
            return CodeOwners(tuple(rules))
    return CodeOwners(())
