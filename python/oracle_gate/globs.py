"""Bazel ``glob()`` semantics for matrix patterns, compiled to regular expressions.

``*`` and ``?`` never cross ``/``; ``**`` as a whole segment matches zero or more
directories; a trailing ``/`` means everything below that directory.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = [
    "GLOB_PROBLEMS",
    "GlobIndex",
    "GlobPattern",
    "compile_glob",
    "literal_directory",
    "literal_prefix",
    "matches_any",
    "validate_glob",
    "wildcard_match",
]

# What validate_glob says; rules/private/schema.bzl has the same words.
GLOB_PROBLEMS = {
    "empty": "is empty",
    "absolute": "is absolute; globs are relative to the package directory",
    "segment": "has an empty, '.' or '..' segment",
    "star_star": "uses '**' inside a segment; '**' must be a whole path segment",
}


def validate_glob(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid package glob, or None when it is."""
    if not pattern:
        return GLOB_PROBLEMS["empty"]
    if pattern.startswith("/"):
        return GLOB_PROBLEMS["absolute"]
    segments = pattern.rstrip("/").split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        return GLOB_PROBLEMS["segment"]
    if any("**" in segment and segment != "**" for segment in segments):
        return GLOB_PROBLEMS["star_star"]
    return None


def _segment_regex(segment: str) -> str:
    out = []
    for char in segment:
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
    return "".join(out)


def _regex(pattern: str, bazel: bool) -> re.Pattern[str]:
    """The regular expression of a pattern whose wildcards cannot make it backtrack
    (``_is_linear``)."""
    segments = pattern.split("/")
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append("(?:[^/]+/)*[^/]+" if last else "(?:[^/]+/)*")
        else:
            guard = r"(?!\.)" if _hides_dot_names(segment, bazel) else ""
            parts.append(guard + _segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(parts))


def _hides_dot_names(segment: str, bazel: bool) -> bool:
    """Whether ``segment`` leaves out a name starting with ``.`` (``compile_glob``)."""
    return bazel and segment != "*" and not segment.startswith(".")


def _is_linear(segments: list[str]) -> bool:
    """Whether the regular expression of ``segments`` matches in time linear in the path:
    one ``**`` at most, and one ``*`` at most in each other segment. More (``a*a*a*b``,
    ``**/a/**/a/**``) make a backtracking matcher try every way to split the path."""
    stars = [segment.count("*") for segment in segments if segment != "**"]
    return segments.count("**") <= 1 and all(count <= 1 for count in stars)


def wildcard_match(pattern: str, text: str) -> bool:
    """Whether ``text`` (no ``/`` in it) is matched whole by ``pattern`` of literals, ``?``
    (one character) and ``*`` (any run): each character of ``text`` is looked at once per
    ``*`` before it at most, never once per way of splitting it."""
    p = t = 0
    star = -1  # where in ``pattern`` the last ``*`` seen is
    resume = 0  # where in ``text`` that ``*`` stopped matching
    while t < len(text):
        if p < len(pattern) and pattern[p] in ("?", text[t]) and pattern[p] != "*":
            p += 1
            t += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, resume = p, t
            p += 1
        elif star >= 0:
            p = star + 1
            resume += 1
            t = resume
        else:
            return False
    return all(char == "*" for char in pattern[p:])


def _any_names(names: list[str], matched: list[bool], last: bool) -> list[bool]:
    """For a ``**`` segment: whether it and what follows (``matched``) can match
    ``names[j:]``, for each ``j``. It takes whole names, none empty: one or more when it
    is ``last``, else zero or more."""
    count = len(names)
    reach = [False] * (count + 1)
    reach[count] = matched[count] and not last
    for j in range(count - 1, -1, -1):
        if last:
            reach[j] = bool(names[j]) and (j == count - 1 or reach[j + 1])
        else:
            reach[j] = matched[j] or (bool(names[j]) and reach[j + 1])
    return reach


class GlobPattern:
    """A compiled glob: ``fullmatch(path)`` says whether it selects ``path``.

    A pattern whose wildcards could make a backtracking matcher take time exponential
    in their number (``_is_linear``) is matched segment by segment instead, in time
    proportional to the pattern's length times the path's.
    """

    def __init__(self, pattern: str, bazel: bool) -> None:
        self.segments = pattern.split("/")
        self.bazel = bazel
        self.regex = _regex(pattern, bazel) if _is_linear(self.segments) else None

    def fullmatch(self, path: str) -> bool:
        if self.regex is not None:
            return self.regex.fullmatch(path) is not None
        return self.segments_match(path.split("/"))

    def segments_match(self, names: list[str]) -> bool:
        """Whether the path of ``names`` is matched, by dynamic programming over the
        pattern's segments: ``matched[j]``, can what follows match ``names[j:]``."""
        count = len(names)
        matched = [j == count for j in range(count + 1)]  # past the last segment
        for index in range(len(self.segments) - 1, -1, -1):
            segment = self.segments[index]
            last = index == len(self.segments) - 1
            if segment == "**":
                matched = _any_names(names, matched, last)
            else:
                matched = [
                    j < count and self.segment_allows(segment, names[j]) and matched[j + 1]
                    for j in range(count + 1)
                ]
        return matched[0]

    def segment_allows(self, segment: str, name: str) -> bool:
        if name.startswith(".") and _hides_dot_names(segment, self.bazel):
            return False
        return wildcard_match(segment, name)


@functools.lru_cache(maxsize=4096)
def compile_glob(pattern: str, bazel: bool = False) -> GlobPattern:
    """The matcher of exactly the file paths ``pattern`` selects.

    ``bazel``: as Bazel's ``glob()`` does, a name starting with ``.`` is matched only
    by a segment that is ``*`` or starts with ``.`` (``*.dep`` leaves out ``.a.dep``;
    ``**`` and ``*`` still match it). A matrix's own row patterns match every name.
    """
    if pattern.endswith("/"):
        pattern += "**"
    return GlobPattern(pattern, bazel)


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    """Whether the package-relative ``path`` is selected by any of ``patterns``."""
    return any(compile_glob(pattern).fullmatch(path) for pattern in patterns)


def literal_prefix(pattern: str) -> str:
    """What every path ``pattern`` selects starts with: the pattern before its first
    wildcard (all of it when it has none). ``m/m1.py`` -> ``m/m1.py``; ``src/*.py`` ->
    ``src/``; ``**/a.py`` -> ``""``."""
    cut = min((index for index in (pattern.find("*"), pattern.find("?")) if index >= 0), default=-1)
    return pattern if cut < 0 else pattern[:cut]


class GlobIndex:
    """Which of many lists of globs (a matrix's rows) select a path, each glob compiled
    only when a path starts with its literal prefix (``literal_prefix``): a path is held
    against the globs of its own prefixes alone, so ten thousand rows of a glob each cost
    one dictionary entry each, not a compiled expression each per path."""

    def __init__(self, lists: Iterable[Iterable[str]]) -> None:
        self.by_prefix: dict[str, list[tuple[int, str]]] = {}
        for index, patterns in enumerate(lists):
            for pattern in patterns:
                self.by_prefix.setdefault(literal_prefix(pattern), []).append((index, pattern))
        self.lengths = sorted({len(prefix) for prefix in self.by_prefix})

    def matching(self, path: str) -> list[int]:
        """The positions of the lists with a glob that selects ``path``, in order."""
        found: set[int] = set()
        for length in self.lengths:
            if length > len(path):
                break
            for index, pattern in self.by_prefix.get(path[:length], ()):
                if index not in found and compile_glob(pattern).fullmatch(path):
                    found.add(index)
        return sorted(found)


def literal_directory(pattern: str) -> str:
    """The directory ``pattern`` is rooted in, before its first wildcard ("" for none).

    ``tests/**/test_*.py`` -> ``tests/``; ``tests/test_a.py`` -> ``tests/``;
    ``test_*.py`` -> ``""``.
    """
    segments = pattern.rstrip("/").split("/")[:-1]
    literal: list[str] = []
    for segment in segments:
        if any(char in segment for char in "*?"):
            break
        literal.append(segment)
    return "".join(f"{segment}/" for segment in literal)
