"""Human notes that explain an oracle change: changelog entries and commit trailers.

A note names one changed path and is carried by one commit of the patch:

- an entry (a block under one heading) of an ``ORACLE_CHANGELOG.md`` that the
  head tree has and the parent's same file lacks. A package's changelog notes
  that package's paths; the root changelog notes paths outside every package.
  An entry names a path (package- or repo-relative) with the content it now
  has, ``PATH blake3:<hex>``, ``PATH blob:<git blob id>`` or ``PATH deleted``,
  which holds whatever the parent is while the head content matches (a test
  unit ``FILE::UNIT`` is named by the BLAKE3 of its canonical assertion
  surface, as the lock stores it); or it
  names the parent commit (12+ hex characters) and the path, which holds only
  against that parent. Its commit is the first of the patch whose tree holds it.
- ``Oracle-Change: <path> — <reason>`` with a non-empty ``Reviewed-by:`` on a
  commit of the patch.

Which notes count is the parent's ``notes`` setting: ``review`` counts every
note; ``signed`` and ``approvals`` need an owner among a note's endorsers
(``endorse``), which ``lanes/common.py`` checks.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from blake3 import blake3

from oracle_gate import backend
from oracle_gate.config.ledgers import read_ledger
from oracle_gate.errors import ConfigError, SurfaceError
from oracle_gate.model import Diff
from oracle_gate.repo.git import git
from oracle_gate.repo.signatures import ALLOWED_SIGNERS, read_allowed_signers, signers_of
from oracle_gate.repo.trees import GitTree

__all__ = [
    "CHANGELOG_FILE",
    "Note",
    "Notes",
    "changelog_entries",
    "endorse",
    "normalize_principal",
    "read_notes",
    "reviewer_name",
    "unit_digest",
]

CHANGELOG_FILE = "ORACLE_CHANGELOG.md"
_SHA_TOKEN = re.compile(r"\b[0-9a-f]{12,40}\b")
_HEADING = re.compile(r"^#{1,6}\s")
_PATH_REASON_SPLIT = re.compile(r"\s+(?:—|--|-)\s+")
# ``- `path` blake3:<hex>``: the path as one token (backquotes optional), then its content.
# Unicode categories of characters that show nothing: control, format (zero-width
# spaces and joiners, the bidirectional marks, the byte order mark), unassigned,
# private use and surrogates.
_INVISIBLE = frozenset({"Cc", "Cf", "Cn", "Co", "Cs"})
_CONTENT_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?`?(?P<name>[^\s`]+)`?\s+"
    r"(?P<token>blake3:[0-9a-f]{64}|blob:(?:[0-9a-f]{40}|[0-9a-f]{64})|deleted)(?![\w:])",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Note:
    """A note naming one repo-relative ``path``, carried by ``commit``.

    ``pinned``: the note names the path's head content, not only the path.
    ``endorsers``: lower-case principals who stand behind it (see ``endorse``).
    """

    path: str
    commit: str
    pinned: bool
    endorsers: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Notes:
    """Every note of the patch, the policy they are judged by, and who triaged added skips."""

    notes: tuple[Note, ...]
    freeze_triage: tuple[str, ...]
    policy: str = "review"

    def naming(self, path: str) -> tuple[Note, ...]:
        """The notes that name the repo-relative ``path``."""
        return tuple(note for note in self.notes if note.path == path)


def reviewer_name(text: str) -> str:
    """A name as a trailer or approval gives it, normalised: NFKC (full-width letters are
    ASCII ones), every zero-width, format and control character dropped (U+200B, U+2060,
    U+FEFF, the bidirectional marks, NUL...), runs of white space one space, stripped.
    A name that is empty after it names nobody."""
    normal = unicodedata.normalize("NFKC", text)
    kept = "".join(
        " " if char.isspace() else char
        for char in normal
        if unicodedata.category(char) not in _INVISIBLE or char.isspace()
    )
    return " ".join(kept.split())


def normalize_principal(name: str) -> str:
    """``reviewer_name``, lower case; a bare handle (no ``@`` anywhere) gets the ``@``
    CODEOWNERS writes. An empty name stays empty: it is nobody's."""
    name = reviewer_name(name).lower()
    return name if "@" in name or not name else f"@{name}"


def changelog_entries(text: bytes) -> list[str]:
    """The blocks of a changelog (text before the first heading is a block too), stripped."""
    blocks: list[list[str]] = [[]]
    for line in text.decode("utf-8", "replace").splitlines():
        if _HEADING.match(line):
            blocks.append([])
        blocks[-1].append(line)
    return [text for text in ("\n".join(lines).strip() for lines in blocks) if text]


def _names_path(entry: str, names: Iterable[str]) -> bool:
    return any(re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w/.-])", entry) for name in names)


def unit_digest(source: bytes, path: str, unit: str) -> str | None:
    """BLAKE3 of a test unit's canonical assertion surface (as the lock stores it), or None."""
    text = dict(backend.extract_units(source, path)).get(unit)
    return None if text is None else blake3(text.encode()).hexdigest()


def _unit_matches(token: str, path: str, unit: str, head: GitTree) -> bool:
    source = head.read_optional(path)
    try:
        digest = None if source is None else unit_digest(source, path, unit)
    except SurfaceError:
        return False  # a file that does not parse has no units to note
    if token == "deleted":
        return digest is None
    return token == f"blake3:{digest}"


def _content_matches(token: str, path: str, head: GitTree) -> bool:
    file, _, unit = path.partition("::")
    if unit:
        return _unit_matches(token, file, unit, head)
    blob = head.blob_id(path)
    if token == "deleted":
        return blob is None
    if blob is None:
        return False
    kind, _, value = token.partition(":")
    if kind == "blob":
        return blob == value
    return head.digests([path])[0] == value


def _join(directory: str, name: str) -> str:
    return posixpath.join(directory, name) if directory else name


def _entry_notes(
    entry: str, directory: str, diff: Diff, head: GitTree, changed: Mapping[str, str], commit: str
) -> list[Note]:
    """The notes one new changelog entry in ``directory`` makes for changed paths it names."""
    notes: list[Note] = []
    for match in _CONTENT_LINE.finditer(entry):
        for path in {_join(directory, match["name"]), match["name"]}:
            file = path.partition("::")[0]
            if changed.get(file) == directory and _content_matches(match["token"], path, head):
                notes.append(Note(path, commit, pinned=True))
    if any(diff.base.startswith(token) for token in _SHA_TOKEN.findall(entry)):
        for path, owner_dir in changed.items():
            relative = path[len(directory) + 1 :] if directory else path
            if owner_dir == directory and _names_path(entry, {path, relative}):
                notes.append(Note(path, commit, pinned=False))
    return notes


def _first_carriers(
    parent: GitTree, diff: Diff, changelogs: list[str], wanted: dict[str, list[str]]
) -> dict[tuple[str, str], str]:
    """(changelog, entry) -> the first commit of the patch, parents first, whose tree holds it."""
    carriers: dict[tuple[str, str], str] = {}
    repo = parent.repo
    order = git(repo, "rev-list", "--reverse", "--topo-order", f"{diff.base}..{diff.head}").split()
    for commit in order:
        tree = GitTree(repo, commit, near=parent)
        for changelog in changelogs:
            text = tree.read_optional(changelog)
            if text is None:
                continue
            for entry in set(changelog_entries(text)) & set(wanted[changelog]):
                carriers.setdefault((changelog, entry), commit)
    return carriers


def _changelog_notes(
    repo: Path, diff: Diff, parent: GitTree, head: GitTree, changed: Mapping[str, str]
) -> list[Note]:
    new_entries: dict[str, list[str]] = {}
    for directory in sorted(set(changed.values())):
        changelog = _join(directory, CHANGELOG_FILE)
        text = read_ledger(head, changelog)
        if text is None:
            continue
        old = set(changelog_entries(read_ledger(parent, changelog) or b""))
        fresh = [entry for entry in changelog_entries(text) if entry not in old]
        if fresh:
            new_entries[changelog] = fresh
    if not new_entries:
        return []
    carriers = _first_carriers(parent, diff, sorted(new_entries), new_entries)
    notes: list[Note] = []
    for changelog, entries in sorted(new_entries.items()):
        directory = posixpath.dirname(changelog)
        for entry in entries:
            commit = carriers[(changelog, entry)]
            notes.extend(_entry_notes(entry, directory, diff, head, changed, commit))
    return notes


def _trailer_notes(diff: Diff, changed: Mapping[str, str]) -> list[Note]:
    """Oracle-Change trailers of commits that also carry a Reviewed-by naming somebody
    (``reviewer_name`` is not empty: a zero-width space is nobody)."""
    notes: list[Note] = []
    for commit in diff.commits:
        reviewed = (value for key, value in commit.trailers if key.lower() == "reviewed-by")
        if not any(map(reviewer_name, reviewed)):
            continue
        for key, value in commit.trailers:
            if key.lower() != "oracle-change" or not value:
                continue
            path = _PATH_REASON_SPLIT.split(value, maxsplit=1)[0].strip()
            if path in changed:
                notes.append(Note(path, commit.sha, pinned=False))
    return notes


def read_notes(
    repo: Path, diff: Diff, parent: GitTree, head: GitTree, changed: Mapping[str, str]
) -> Notes:
    """Every note the patch carries for its changed paths.

    Args:
        changed: each changed path (and old path of a rename) -> the directory of
            the package that owns it, ``""`` for the root or no package; its
            changelog is the one that can note it.
    """
    notes = _changelog_notes(repo, diff, parent, head, changed) + _trailer_notes(diff, changed)
    triage = tuple(
        reviewer_name(value)
        for commit in diff.commits
        for key, value in commit.trailers
        if key.lower() == "freeze-triage" and reviewer_name(value)
    )
    return Notes(notes=tuple(notes), freeze_triage=triage)


def _still_as_signed(note: Note, repo: Path, head: GitTree, trees: dict[str, GitTree]) -> bool:
    """A note that names only a path vouches for the path as it was in its own commit."""
    if note.pinned:
        return True
    tree = trees.setdefault(note.commit, GitTree(repo, note.commit))
    return tree.blob_id(note.path) == head.blob_id(note.path)


def endorse(
    notes: Notes,
    policy: str,
    repo: Path,
    parent: GitTree,
    head: GitTree,
    approvals: tuple[str, ...] | None,
) -> Notes:
    """Fill in who stands behind each note under ``policy`` (the parent's ``notes`` setting).

    ``signed``: the principals of the parent's allowed signers whose key made a
    good signature on the note's commit, provided the noted path has not
    changed since that commit (or the note names the content). ``approvals``:
    the reviewers who approved the change. ``review``: nobody is needed.

    Raises:
        ConfigError: ``signed`` without an allowed-signers file in the parent,
            or ``approvals`` without ``--approvals``.
    """
    if policy == "review":
        return dataclasses.replace(notes, policy=policy)
    if policy == "approvals":
        if approvals is None:
            raise ConfigError(
                "the parent's notes policy is 'approvals': pass check --approvals FILE "
                "(a JSON list of the reviewers who approved the change)"
            )
        approvers = frozenset(normalize_principal(name) for name in approvals)
        endorsed = tuple(dataclasses.replace(n, endorsers=approvers) for n in notes.notes)
        return dataclasses.replace(notes, notes=endorsed, policy=policy)
    allowed = read_allowed_signers(parent)
    if allowed is None:
        raise ConfigError(
            f"the parent's notes policy is 'signed' but the parent has no {ALLOWED_SIGNERS}",
            ALLOWED_SIGNERS,
        )
    signers = signers_of(repo, [note.commit for note in notes.notes], allowed)
    trees: dict[str, GitTree] = {}
    endorsed = tuple(
        dataclasses.replace(
            note,
            endorsers=signers[note.commit]
            if _still_as_signed(note, repo, head, trees)
            else frozenset(),
        )
        for note in notes.notes
    )
    return dataclasses.replace(notes, notes=endorsed, policy=policy)
