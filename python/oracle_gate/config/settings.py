"""Repository settings: ``[tool.oracle-gate]`` in the root pyproject.toml, or oracle-gate.toml.

Settings are always read from the **parent** tree (the last trusted commit), so a
patch can never change the policy it is judged by. Every key has a default, and
an unknown key or a wrong type is a ``ConfigError`` naming the file and line.
``docs/formats.md`` documents each key.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from oracle_gate.errors import ConfigError
from oracle_gate.globs import validate_glob
from oracle_gate.repo.trees import GitTree
from oracle_gate.runtime.limits import SETTINGS as LIMIT_SETTINGS
from oracle_gate.runtime.limits import Limits, format_size, parse_size

# tomllib is standard from Python 3.11; tomli is the same parser for 3.10.
tomllib: Any = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")

__all__ = [
    "DEFAULT_DOCS",
    "NOTE_POLICIES",
    "SETTINGS_FILE",
    "Settings",
    "limit_defaults",
    "load_toml",
    "read_settings",
]

SETTINGS_FILE = "oracle-gate.toml"
PYPROJECT = "pyproject.toml"
NOTE_POLICIES = ("review", "signed", "approvals")
# Package-relative globs of files that are documentation: they never run and
# never judge, so a patch may change them without a row. Anything else inside a
# package is production unless proven to be something else.
DEFAULT_DOCS = (
    "docs/**",
    "**/*.md",
    "**/*.rst",
    "**/README*",
    "**/LICENSE*",
    "**/CHANGELOG*",
    "**/py.typed",
)


@dataclass(frozen=True)
class Settings:
    """What the root configuration says, with every default filled in.

    Attributes:
        notes: which human notes count: ``review`` (any note; the platform
            enforces owner review), ``signed`` (signed by an owner) or
            ``approvals`` (an owner approved, per ``check --approvals``).
        docs: package-relative globs of documentation files.
        outside: repository-relative globs of paths outside every package that
            a patch may change without a row (scripts, tooling).
        tooling: repository-relative globs of files, inside packages or not, that
            neither ship nor run in the tests (build and release helpers, a
            documentation build's ``conf.py``, benchmarks): a patch may change them
            without a row; a Python one only while no other Python file of its
            package names its module.
        timeout_floor: the least time, in seconds, any one child process of
            the runtime lanes is given, whatever a row's budget says
            (``timeout-floor``; slow CI machines raise it, fast test suites lower it).
        replay_seconds: the trusted replay's time budget per package run
            (``replay-seconds``); None derives it from the parent's baseline.
        limits: what each child process may use (``memory-limit``, ``cpu-limit``,
            ``process-limit``, ``open-files-limit``, ``file-size-limit``,
            ``tmpfs-size``; ``runtime/limits.py``).
        path: the file the settings came from, ``None`` for the defaults.
    """

    notes: str = "review"
    docs: tuple[str, ...] = DEFAULT_DOCS
    outside: tuple[str, ...] = ()
    tooling: tuple[str, ...] = ()
    timeout_floor: float = 5.0
    replay_seconds: float | None = None
    limits: Limits = field(default_factory=Limits)
    path: str | None = None


# Each limit (a Limits field) and its range: sizes at least so many bytes, else counts.
_SIZE_LIMITS = {"memory": 64 << 20, "file_size": 1 << 20, "tmpfs_size": 1 << 20}
_COUNT_LIMITS = {
    "cpu_seconds": (1, 86400, "a number of CPU seconds"),
    "processes": (16, 1 << 20, "a number of processes"),
    "open_files": (64, 1 << 20, "a number of open files"),
}


def limit_defaults() -> dict[str, int | str]:
    """Each limit's key with its default as it is written in the settings file."""
    limits = Limits()
    return {
        key: format_size(getattr(limits, name)) if name in _SIZE_LIMITS else getattr(limits, name)
        for name, key in LIMIT_SETTINGS.items()
    }


def load_toml(data: bytes) -> dict[str, Any] | None:
    """``data`` as a TOML document, or None when it is not UTF-8 TOML."""
    try:
        document: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return document


def _line_of(text: str, key: str) -> int | None:
    """The 1-based line where ``key =`` is written (tomllib keeps no positions)."""
    pattern = re.compile(rf"^[ \t]*[\"']?{re.escape(key)}[\"']?[ \t]*=", re.MULTILINE)
    found = pattern.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def _toml_error_line(message: str) -> int | None:
    """The line of a tomllib error: Python 3.11's errors carry it only in the text."""
    found = re.search(r"\(at line (\d+)", message)
    return int(found.group(1)) if found else None


def _globs(table: dict[str, Any], key: str, text: str, path: str) -> tuple[str, ...] | None:
    if key not in table:
        return None
    value = table[key]
    line = _line_of(text, key)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"'{key}' must be a list of glob strings, found {value!r}", path, line)
    for pattern in value:
        problem = validate_glob(pattern)
        if problem:
            raise ConfigError(f"'{key}' pattern {pattern!r} {problem}", path, line)
    return tuple(value)


def _parse(data: bytes, path: str, table_of: str | None) -> Settings | None:
    try:
        text = data.decode("utf-8")
        document = tomllib.loads(text)
    except UnicodeDecodeError:
        raise ConfigError("is not valid UTF-8", path) from None
    except tomllib.TOMLDecodeError as error:
        line = getattr(error, "lineno", None) or _toml_error_line(str(error))
        message = str(error).split(" (at")[0]
        raise ConfigError(f"is not valid TOML: {message}", path, line) from None
    table: Any = document
    if table_of is not None:
        table = document.get("tool", {}).get(table_of)
        if table is None:
            return None
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.{table_of}] must be a table", path)
    known = {"notes", "docs", "outside", "tooling", "timeout-floor", "replay-seconds"}
    known |= set(LIMIT_SETTINGS.values())
    for key in table:
        if key not in known:
            expected = ", ".join(sorted(known))
            raise ConfigError(
                f"unknown key {key!r}; expected {expected}", path, _line_of(text, key)
            )
    notes = table.get("notes", "review")
    if notes not in NOTE_POLICIES:
        raise ConfigError(
            f"'notes' must be one of {', '.join(NOTE_POLICIES)}, found {notes!r}",
            path,
            _line_of(text, "notes"),
        )
    docs = _globs(table, "docs", text, path)
    outside = _globs(table, "outside", text, path)
    tooling = _globs(table, "tooling", text, path)
    floor = table.get("timeout-floor", Settings.timeout_floor)
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 < floor <= 3600:
        raise ConfigError(
            f"'timeout-floor' must be a number of seconds in (0, 3600], found {floor!r}",
            path,
            _line_of(text, "timeout-floor"),
        )
    return Settings(
        notes=notes,
        docs=DEFAULT_DOCS if docs is None else docs,
        outside=() if outside is None else outside,
        tooling=() if tooling is None else tooling,
        timeout_floor=float(floor),
        replay_seconds=_seconds(table, "replay-seconds", text, path),
        limits=_limits(table, text, path),
        path=path,
    )


def _seconds(table: dict[str, Any], key: str, text: str, path: str) -> float | None:
    """An optional number of seconds, in (0, 86400]."""
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
        raise ConfigError(
            f"'{key}' must be a number of seconds in (0, 86400], found {value!r}",
            path,
            _line_of(text, key),
        )
    return float(value)


def _limits(table: dict[str, Any], text: str, path: str) -> Limits:
    """The child caps the settings give, each checked against its range."""
    values: dict[str, int] = {}
    for name, key in LIMIT_SETTINGS.items():
        if key not in table:
            continue
        value = table[key]
        if name in _SIZE_LIMITS:
            size = parse_size(value)
            if size is None or size < _SIZE_LIMITS[name]:
                raise ConfigError(
                    f'\'{key}\' must be a size such as "4 GiB" or "512 MiB" (or a number of '
                    f"bytes), at least {format_size(_SIZE_LIMITS[name])}, found {value!r}",
                    path,
                    _line_of(text, key),
                )
            values[name] = size
            continue
        least, most, what = _COUNT_LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            raise ConfigError(
                f"'{key}' must be {what} in [{least}, {most}], found {value!r}",
                path,
                _line_of(text, key),
            )
        values[name] = value
    return Limits(**values)


def read_settings(tree: GitTree) -> Settings:
    """The settings of ``tree`` (callers pass the parent tree).

    ``oracle-gate.toml`` wins over ``[tool.oracle-gate]`` in pyproject.toml;
    having both is an error, so nobody edits the one that is not read.

    Raises:
        ConfigError: unreadable TOML, an unknown key, a wrong type or value.
    """
    own = tree.read_optional(SETTINGS_FILE)
    pyproject = tree.read_optional(PYPROJECT)
    from_pyproject = _parse(pyproject, PYPROJECT, "oracle-gate") if pyproject else None
    if own is not None:
        if from_pyproject is not None:
            raise ConfigError(
                f"settings are in both {SETTINGS_FILE} and {PYPROJECT} [tool.oracle-gate]; "
                "keep one",
                SETTINGS_FILE,
            )
        parsed = _parse(own, SETTINGS_FILE, None)
        assert parsed is not None  # a whole-file table is never absent
        return parsed
    return from_pyproject or Settings()
