"""Which of the parent's tests the diff can reach: their footprints against the changes.

A footprint (``runtime/footprint.py``, recorded on the trusted parent) names the
code a test executed, line by line, the files it opened and the directories it
listed. The replay tree differs from the parent's checkout only in the paths
``changes`` lists. A test must run again on the head when:

- its footprint could not be recorded;
- it opened a changed path, or listed a directory where a path appears or
  disappears; or pytest's loader read its configuration from a changed path
  whose pytest sections the classifier did not find unchanged (``pytest_sections_kept``:
  what pytest reads of such a file is the same on both sides);
- it had ``linecache`` give it a line of a changed path (a traceback rendered
  as text) whose text the change does not keep: a line of code is followed to
  the head's lines its instructions are on, in code objects the change left as
  they were, so a line a comment above moved keeps its text; any other line
  keeps its text only where it is;
- it executed code of a changed Python file that the change reaches: the
  file's code objects are compared with their line numbers left out, so a
  comment or a blank line moves nothing; a change to a function's body
  reaches the tests that ran a line of that function; any other change (to
  module-level code: an import, a constant, a decorator, a new function or
  class, a class body) reaches every test that ran any line of the file;
  a file that does not compile on either side counts as changed throughout;
- the patch changes a symbolic link (what a path means changes under it).

Everything that runs outside a test (what collection imports) is part of every
test's footprint, so a change reaching module-level code imported while pytest
collects reaches every test. ``docs/replay.md`` gives the argument.
"""

from __future__ import annotations

import dis
import functools
import io
import posixpath
import tokenize
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import CodeType
from typing import Any

from blake3 import blake3

# What a code object runs before its first statement, on its ``def`` line.
_PROLOGUE = frozenset(
    {"RESUME", "MAKE_CELL", "COPY_FREE_VARS", "RETURN_GENERATOR", "POP_TOP", "NOP"}
)

__all__ = [
    "Change",
    "ChangeKind",
    "Footprint",
    "Impact",
    "entries",
    "file_change",
    "listing_changes",
]


class ChangeKind(Enum):
    ADDED = "adds"
    REMOVED = "removes"
    CHANGED = "changes"
    LINK = "changes the symbolic link"


@dataclass(frozen=True)
class Footprint:
    """One test's footprint, as ``runtime/footprint.py`` recorded it (the session's merged in)."""

    lines: Mapping[str, frozenset[int]] = field(default_factory=dict)
    opened: frozenset[str] = frozenset()
    listed: frozenset[str] = frozenset()
    unrecorded: str = ""
    rendered: Mapping[str, frozenset[int]] = field(default_factory=dict)
    configured: frozenset[str] = frozenset()  # the files pytest's configuration loader read

    @classmethod
    def decode(cls, data: Mapping[str, Any]) -> Footprint:
        """From the child's encoding: ``[first, last]`` line runs per file."""
        return cls(
            _decoded_runs(data["lines"]),
            frozenset(map(str, data["opened"])),
            frozenset(map(str, data["listed"])),
            str(data["unrecorded"]),
            _decoded_runs(data["rendered"]),
            frozenset(map(str, data["configured"])),
        )

    def with_session(self, session: Footprint) -> Footprint:
        """This footprint and the session's: what collection ran, every test stands on."""
        return Footprint(
            _joined(session.lines, self.lines),
            self.opened | session.opened,
            self.listed | session.listed,
            self.unrecorded or session.unrecorded,
            _joined(session.rendered, self.rendered),
            self.configured | session.configured,
        )


def _decoded_runs(data: Mapping[str, Any]) -> dict[str, frozenset[int]]:
    return {
        str(file): frozenset(
            line for first, last in runs for line in range(int(first), int(last) + 1)
        )
        for file, runs in data.items()
    }


def _joined(
    first: Mapping[str, frozenset[int]], second: Mapping[str, frozenset[int]]
) -> dict[str, frozenset[int]]:
    joined = dict(first)
    for file, found in second.items():
        joined[file] = joined.get(file, frozenset()) | found
    return joined


@dataclass(frozen=True)
class Change:
    """A path the replay tree has otherwise than the parent's checkout.

    ``units`` are the code units (``_units`` keys) whose code changed, for a
    Python file both sides compile and whose module-level code is the same
    (empty when only comments, blank lines or line numbers moved); None when
    the change counts for the whole file. ``owners`` maps each line of the
    parent's file to the units with code on it.
    """

    path: str
    kind: ChangeKind
    units: frozenset[str] | None = None
    owners: Mapping[int, frozenset[str]] = field(default_factory=dict)
    listings: frozenset[str] = frozenset()  # directories whose entries it adds or removes
    # both sides' bytes, for the lines whose text it keeps (None: it keeps none)
    texts: tuple[bytes, bytes] | None = field(default=None, repr=False, compare=False)
    # a configuration file whose pytest sections the classifier found unchanged: pytest's
    # loader reads the same configuration from it on both sides
    pytest_sections_kept: bool = False

    @functools.cached_property
    def kept(self) -> frozenset[int]:
        """The parent's lines whose text the change keeps, as linecache would give them
        (``kept_lines``); worked out only for a path some test had linecache give it
        lines of."""
        if self.texts is None:
            return frozenset()
        return kept_lines(self.path, *self.texts)

    def reached(self, footprint: Footprint) -> str:
        """Why a test with ``footprint`` meets this change, or ``""``."""
        what = f"{self.path}, which the patch {self.kind.value}"
        ran = footprint.lines.get(self.path, frozenset())
        if ran and self.units is None:
            return f"it ran code of {what}"
        hit = sorted(
            {unit for line in ran for unit in self.owners.get(line, ())} & (self.units or set())
        )
        if hit:
            return f"it ran {_shown_unit(hit[0])} in {what}"
        if self.path in footprint.opened:
            return f"it read {what}"
        if self.path in footprint.configured and not self.pytest_sections_kept:
            return f"pytest read its configuration from {what}"
        shown = sorted(footprint.rendered.get(self.path, frozenset()) - self.kept)
        if shown:
            return (
                f"it showed line {shown[0]} of {self.path}, whose text the patch {self.kind.value}"
            )
        listed = sorted(self.listings & footprint.listed)
        if listed:
            return f"it listed {listed[0] or '.'}, where the patch {self.kind.value} {self.path}"
        return ""


def _shown_unit(key: str) -> str:
    """``/chunked#0/<lambda>#1`` as ``chunked.<lambda>``."""
    return ".".join(part.partition("#")[0] for part in key.split("/") if part) or "module code"


@dataclass(frozen=True)
class Impact:
    """The changes between the parent's checkout and the replay tree, against footprints."""

    changes: tuple[Change, ...]

    def reason(self, footprint: Footprint) -> str:
        """Why a test with ``footprint`` must run again on the head, or ``""`` when the
        parent's result stands for it."""
        if footprint.unrecorded:
            return f"its footprint could not be recorded ({footprint.unrecorded})"
        for change in self.changes:
            if change.kind is ChangeKind.LINK:
                return f"the patch changes the symbolic link {change.path}"
            why = change.reached(footprint)
            if why:
                return why
        return ""


def file_change(
    path: str,
    parent: bytes | None,
    replay: bytes | None,
    listings: frozenset[str] = frozenset(),
) -> Change:
    """The change of ``path`` from ``parent`` to ``replay`` (None: absent on that side)."""
    if parent is None:
        return Change(path, ChangeKind.ADDED, listings=listings)
    if replay is None:
        return Change(path, ChangeKind.REMOVED, listings=listings)
    texts = (parent, replay)
    if not path.endswith(".py"):
        return Change(path, ChangeKind.CHANGED, texts=texts)
    before, after = _units(parent, path), _units(replay, path)
    if before is None or after is None or before[""][0] != after[""][0]:
        return Change(path, ChangeKind.CHANGED, texts=texts)
    changed = frozenset(
        key
        for key in before.keys() | after.keys()
        if before.get(key, (b"", None))[0] != after.get(key, (b"", None))[0]
    )
    return Change(path, ChangeKind.CHANGED, changed, _owners(before), texts=texts)


def kept_lines(path: str, parent: bytes, replay: bytes) -> frozenset[int]:
    """The 1-based lines of ``parent`` whose text ``replay`` keeps where a test that
    runs the same code is shown them.

    A traceback shows the line a frame's instruction is on. A line with instructions
    of code objects the change left as they were is followed to the lines the same
    instructions are on in ``replay`` (a comment above moves them), and is kept when
    each of those has its text; a line of changed code is not kept; any other line
    is kept only where it was. linecache decodes a file by its coding cookie or BOM:
    when the two sides decode otherwise, the same bytes may be other text, and none
    is kept.
    """
    if _encoding(parent) != _encoding(replay):
        return frozenset()
    before, after = parent.splitlines(), replay.splitlines()
    moved = _moved_lines(path, parent, replay)
    kept = set()
    for number, text in enumerate(before, 1):
        targets = moved.get(number, {number})
        if targets and all(0 < line <= len(after) and after[line - 1] == text for line in targets):
            kept.add(number)
    return frozenset(kept)


def _moved_lines(path: str, parent: bytes, replay: bytes) -> dict[int, set[int]]:
    """Each line of ``parent`` with instructions on it -> the lines of ``replay`` the same
    instructions are on (empty when a code object with instructions there changed)."""
    if not path.endswith(".py"):
        return {}
    before, after = _units(parent, path), _units(replay, path)
    if before is None or after is None:
        return {}
    moved: dict[int, set[int]] = {}
    changed: set[int] = set()
    for key, (digest, code) in before.items():
        twin = after.get(key)
        there = _offset_lines(twin[1]) if twin is not None and twin[0] == digest else {}
        for offset, line in _offset_lines(code).items():
            if offset in there:
                moved.setdefault(line, set()).add(there[offset])
            else:
                changed.add(line)
    return {**moved, **{line: set() for line in changed}}


def _offset_lines(code: CodeType) -> dict[int, int]:
    return {
        offset: line
        for start, end, line in code.co_lines()
        if line is not None
        for offset in range(start, end, 2)
    }


def _encoding(source: bytes) -> str:
    try:
        return tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    except SyntaxError:  # linecache gives no line of such a file, on either side
        return ""


def listing_changes(path: str, other: set[str]) -> frozenset[str]:
    """The directories whose entries differ when ``path`` is in one tree only: ``other``
    holds the paths (``entries``) of the tree without it. A directory lists differently
    when the entry below it that leads to ``path`` exists in one tree only."""
    found = set()
    entry = path
    while entry:
        directory = posixpath.dirname(entry)
        found.add(directory)
        if directory in other:
            break
        entry = directory
    return frozenset(found)


def entries(files: Iterable[str]) -> set[str]:
    """Every file of a tree and every directory above one (the root as ``""``)."""
    found: set[str] = {""}
    for file in files:
        while file and file not in found:
            found.add(file)
            file = posixpath.dirname(file)
    return found


def _compiled(source: bytes, path: str) -> CodeType | None:
    """``source`` compiled as the child's interpreter would, or None when it cannot be.

    Compiling runs none of the code; a file that does not compile (or exhausts the
    compiler) counts as changed throughout.
    """
    try:
        return compile(source, path, "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _units(source: bytes, path: str) -> dict[str, tuple[bytes, CodeType]] | None:
    """Every code object of a module (module code ``""``, then ``/name#n`` below it, the
    n-th nested code object of that name), with a digest of its own code: everything but
    its line numbers and file name, nested code objects by their keys."""
    module = _compiled(source, path)
    if module is None:
        return None
    found: dict[str, tuple[bytes, CodeType]] = {}
    pending = [("", module)]
    while pending:
        key, code = pending.pop()
        seen: Counter[str] = Counter()
        consts: list[object] = []
        for const in code.co_consts:
            if isinstance(const, CodeType):
                nested = f"{key}/{const.co_name}#{seen[const.co_name]}"
                seen[const.co_name] += 1
                pending.append((nested, const))
                consts.append(("code", nested))
            else:
                consts.append(_constant(const))
        found[key] = (_digest(code, consts), code)
    return found


def _constant(value: object) -> object:
    """A constant as plain comparable text: its type and repr (sets sorted)."""
    if isinstance(value, frozenset):
        return ("frozenset", sorted(repr(item) for item in value))
    if isinstance(value, tuple):
        return ("tuple", [_constant(item) for item in value])
    return (type(value).__name__, repr(value))


def _digest(code: CodeType, consts: list[object]) -> bytes:
    own = (
        code.co_code,
        consts,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        code.co_flags,
        # Python 3.11+: the exception table and the qualified name (3.10 has neither)
        getattr(code, "co_exceptiontable", b""),
        code.co_name,
        getattr(code, "co_qualname", ""),
    )
    return blake3(repr(own).encode()).digest()


def _owners(units: Mapping[str, tuple[bytes, CodeType]]) -> dict[int, frozenset[str]]:
    """Each line of the file -> the code units with an instruction on it.

    A function's prologue (``RESUME`` and the set-up before its first statement)
    sits on its ``def`` line, which the module's code runs when it defines the
    function: that line is the function's only when a statement of its body is on it
    too, or importing the module would count as running every function.
    """
    owners: dict[int, set[str]] = {}
    for key, (_, code) in units.items():
        opnames = {i.offset: i.opname for i in dis.get_instructions(code)}
        for start, end, line in code.co_lines():
            if line is None:
                continue
            if any(opnames.get(offset, "NOP") not in _PROLOGUE for offset in range(start, end, 2)):
                owners.setdefault(line, set()).add(key)
    return {line: frozenset(keys) for line, keys in owners.items()}
