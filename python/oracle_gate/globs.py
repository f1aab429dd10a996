"""Bazel ``glob()`` semantics for matrix patterns, compiled to regular expressions.

``*`` and ``?`` never cross ``/``; ``**`` as a whole segment matches zero or more
directories; a trailing ``/`` means everything below that directory.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["GLOB_PROBLEMS", "compile_glob", "literal_directory", "matches_any", "validate_glob"]

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


@functools.lru_cache(maxsize=4096)
def compile_glob(pattern: str, bazel: bool = False) -> re.Pattern[str]:
    """The regex matching exactly the file paths ``pattern`` selects.

    ``bazel``: as Bazel's ``glob()`` does, a name starting with ``.`` is matched only
    by a segment that is ``*`` or starts with ``.`` (``*.dep`` leaves out ``.a.dep``;
    ``**`` and ``*`` still match it). A matrix's own row patterns match every name.
    """
    if pattern.endswith("/"):
        pattern += "**"
    segments = pattern.split("/")
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append("(?:[^/]+/)*[^/]+" if last else "(?:[^/]+/)*")
        else:
            hidden_needs_dot = bazel and segment != "*" and not segment.startswith(".")
            guard = r"(?!\.)" if hidden_needs_dot else ""
            parts.append(guard + _segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(parts))


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    """Whether the package-relative ``path`` is selected by any of ``patterns``."""
    return any(compile_glob(pattern).fullmatch(path) for pattern in patterns)


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
