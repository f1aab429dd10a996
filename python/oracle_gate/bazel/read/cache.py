"""Parsed BUILD files cached in memory by git blob id: a BUILD file says the same
wherever it sits, so one parse serves every tree that holds the blob."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

from oracle_gate.bazel.read.parse import parse_build
from oracle_gate.bazel.read.values import BuildFile
from oracle_gate.errors import ConfigError

__all__ = ["blob_id", "cache_info", "clear_cache", "parse_build_cached"]


_CACHE: dict[str, BuildFile] = {}
_CACHE_LIMIT = 500_000
_STATS = {"hits": 0, "misses": 0}


def blob_id(content: bytes) -> str:
    """The git blob id of ``content``: the same key for a commit and a working tree."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


def _gates_only(text: bytes, path: str, rule_lines: Sequence[tuple[int, int]]) -> BuildFile:
    """``text`` parsed without ``rule_lines``, for its gates; the whole file if that fails.

    The lines are blanked, not removed, so every line number stays. They come from
    the Starlark parser, whose only line break is ``\\n``: a file with another
    one (``\\r``, which Python also breaks at) is parsed whole.
    """
    if not rule_lines or b"\r" in text:
        return parse_build(text, path)
    lines = text.split(b"\n")
    for first, last in rule_lines:
        lines[first - 1 : last] = [b""] * len(lines[first - 1 : last])
    try:
        return parse_build(b"\n".join(lines), path)
    except ConfigError:
        return parse_build(text, path)  # the parsers split statements differently here


def parse_build_cached(
    items: Sequence[tuple[str, str | None]],
    read: Callable[[list[str]], Mapping[str, bytes]],
    linked: set[str] | None = None,
    rule_lines: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> dict[str, BuildFile]:
    """Parse several BUILD files, reusing any already parsed with the same blob id.

    Args:
        items: (path, blob id or None when unknown) pairs.
        read: reads the bytes of the paths it is given (one batch for all misses);
            what it returns holds them, and maybe more.
        linked: collects the paths whose content is not the blob they are listed
            with (symlinks, read through the link).
        rule_lines: for a path read only for its gate (its rules were evaluated
            as Starlark), the line ranges holding only other rule calls
            (``starlark.Evaluated.rule_lines``): they are skipped, so that
            file's ``calls`` and ``deps`` are incomplete and its ``gates`` whole.

    Raises:
        ConfigError: a BUILD file does not parse (see ``parse_build``).
    """
    rule_lines = rule_lines or {}
    parsed: dict[str, BuildFile] = {}
    missing: list[str] = []
    keys = {path: key and _cache_key(key, path in rule_lines) for path, key in items}
    for path, key in keys.items():
        hit = _CACHE.get(key) if key else None
        if hit is not None:
            parsed[path] = hit
        else:
            missing.append(path)
    _STATS["hits"] += len(parsed)
    _STATS["misses"] += len(missing)
    if missing:
        contents = read(missing)
        if len(_CACHE) + len(missing) > _CACHE_LIMIT:
            _CACHE.clear()
        for path in missing:
            skipped = rule_lines.get(path)
            build = (
                parse_build(contents[path], path)
                if skipped is None
                else _gates_only(contents[path], path, skipped)
            )
            parsed[path] = build
            # Stored under the content's own id: a symlinked BUILD file is listed
            # with the link's id, never matches, and so is always read afresh.
            content_id = _cache_key(blob_id(contents[path]), skipped is not None)
            _CACHE[content_id] = build
            if linked is not None and keys.get(path) not in (None, content_id):
                linked.add(path)
    return parsed


def _cache_key(blob: str, gates_only: bool) -> str:
    """A file read for its gates only is cached apart from the same file read whole."""
    return f"{blob}:gates" if gates_only else blob


def clear_cache() -> None:
    """Forget every parsed BUILD file (benchmarks measure a cold start with it)."""
    _CACHE.clear()
    _STATS.update(hits=0, misses=0)


def cache_info() -> dict[str, int]:
    """Hits, misses and entries of the parse cache since the last ``clear_cache``."""
    return {**_STATS, "entries": len(_CACHE)}
