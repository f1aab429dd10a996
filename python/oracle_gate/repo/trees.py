"""The two kinds of file tree the gate reads: a git commit, or a working directory.

Parent-vs-head comparisons only ever use ``GitTree``, so nothing patched code
writes while it runs can change a verdict. ``WorkTree`` serves ``lock``, which
describes the files a developer has on disk.

A commit's listing is read before any code runs (the diff needs it), and every
blob the gate reads is checked against its id: git hashes a blob's header and
content to name it, and does not check that a stored object still holds what
its name says when it reads one. So a loose object rewritten in the object
store, by code run without the sandbox or by anything else on the disk, is a
gate error naming the object rather than content the verdict would rest on.
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, cast

from blake3 import blake3

from oracle_gate import backend
from oracle_gate.errors import GitError, TreeError
from oracle_gate.repo.cache import cache_dir
from oracle_gate.repo.files import NOT_REGULAR, NotRegularFileError, open_regular
from oracle_gate.repo.git import git_bytes, git_bytes_together, git_records

__all__ = ["STAT_CACHE", "GitTree", "Tree", "WorkTree", "follow_link", "link_end"]

# The stat cache's name inside the repository's cache directory (``repo/cache.py``).
# The tree walk still skips ``.oracle_gate`` directories, where older versions kept it.
STAT_CACHE = "stat-cache"
_SYMLINK_MODE = "120000"
# How many symbolic links a path may pass through (Linux gives up at 40 too).
MAX_LINK_HOPS = 40


class Tree(Protocol):
    """Read access to one version of the repository."""

    def files(self) -> tuple[str, ...]:
        """Every file path, repo-relative POSIX, sorted."""
        ...

    def read(self, path: str) -> bytes:
        """The bytes of one file. Raises TreeError when it cannot be read."""
        ...

    def size(self, path: str) -> int | None:
        """The size of one file in bytes, without reading it; None when there is no such
        file. Raises TreeError when it cannot be looked at."""
        ...

    def digests(self, paths: Sequence[str]) -> list[str]:
        """BLAKE3 hex digests of ``paths``, in order. Raises TreeError."""
        ...


def link_end(
    path: str, kind: Callable[[str], str], target_of: Callable[[str], str]
) -> tuple[str, str]:
    """Where ``path`` leads once its links are followed inside the repository, and what
    is there: "file", "dir" or "missing" (``follow_link`` says what the arguments are).

    Raises:
        TreeError: a link points outside the repository (absolute, or up past its
            root), or round in a loop.
    """
    current = path
    for _hop in range(MAX_LINK_HOPS):
        found = kind(current)
        if found != "link":
            return current, found
        target = target_of(current)
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(current), target))
        if posixpath.isabs(target) or joined == ".." or joined.startswith("../"):
            raise TreeError(f"symlink points outside the repository (to {target})", path)
        current = joined
    raise TreeError("symlink loop", path)


def follow_link(path: str, kind: Callable[[str], str], target_of: Callable[[str], str]) -> str:
    """The repo-relative file the symlink ``path`` leads to, followed inside the repository.

    Both trees follow links with this one function, so ``lock`` (a working tree)
    and ``check`` (git objects) refuse the same link with the same message.
    ``kind`` says what a repo-relative path is in the tree: "file", "link",
    "dir" or "missing"; ``target_of`` reads a link's target text.

    Raises:
        TreeError: a link points outside the repository (absolute, or up past
            its root), at a directory, at nothing, or round in a loop.
    """
    current, found = link_end(path, kind, target_of)
    if found == "missing":
        raise TreeError("broken symlink: its target does not exist", path)
    if found == "dir":
        raise TreeError("symlink to a directory, expected a file", path)
    return current


class WorkTree:
    """A directory on disk; walking and hashing go through the selected backend.

    Its files are found by the backend's walk; in a git working tree, the
    files ``.gitignore`` ignores are then dropped (unless tracked), so it sees
    what git would track: tracked files plus untracked files not ignored.
    Symlinks are followed only inside the tree (``follow_link``).

    Digests reuse the stat cache in the repository's cache directory (outside
    the tree, ``repo/cache.py``) when the root is a git working tree, unless
    ``cache`` is False. Other directories (the example shipped inside the
    installed package, an exported tree) get no cache files.

    ``runfiles`` marks a Bazel runfiles tree (what a gate target's launcher
    verifies): every file there is a symlink Bazel made to a declared input
    outside the tree, so links are followed wherever they lead.
    """

    def __init__(self, root: Path, cache: bool = True, runfiles: bool = False) -> None:
        self.root = root
        self.cache = cache
        self.runfiles = runfiles

    @functools.cache  # noqa: B019 - a tree lives as long as one command
    def files(self) -> tuple[str, ...]:
        walked = tuple(backend.walk_tree(str(self.root)))
        if not walked or not (self.root / ".git").exists():
            return walked
        # What git would track: drop what .gitignore ignores (a tracked file is
        # never ignored). A FIFO stays listed, so reading it is an error, as before.
        request = b"".join(path.encode("utf-8") + b"\0" for path in walked)
        output = git_bytes(
            self.root, "check-ignore", "--stdin", "-z", input=request, ok_codes=(0, 1)
        )
        ignored = {raw.decode("utf-8") for raw in output.split(b"\0") if raw}
        return tuple(path for path in walked if path not in ignored)

    def _kind(self, path: str) -> str:
        """What ``path`` is, as git would see it: a path through a linked directory is missing."""
        current = self.root
        parts = path.split("/")
        for index, part in enumerate(parts):
            current = current / part
            try:
                mode = current.lstat().st_mode
            except OSError:
                return "missing"
            if stat.S_ISLNK(mode):
                return "link" if index == len(parts) - 1 else "missing"
            if index < len(parts) - 1 and not stat.S_ISDIR(mode):
                return "missing"
        if path in (".", "") or stat.S_ISDIR(mode):
            return "dir"
        return "file"

    def _resolved(self, path: str) -> str:
        """``path``, or the file inside the tree its symlink leads to."""
        if self.runfiles or not (self.root / path).is_symlink():
            return path
        return follow_link(path, self._kind, lambda link: os.readlink(self.root / link))

    def read(self, path: str) -> bytes:
        try:
            descriptor, _ = open_regular(self.root / self._resolved(path))
            with open(descriptor, "rb") as handle:
                return handle.read()
        except IsADirectoryError:
            raise TreeError("is a directory, expected a file", path) from None
        except NotRegularFileError:
            raise TreeError(NOT_REGULAR, path) from None
        except OSError as error:
            raise TreeError(f"cannot read file ({error.strerror})", path) from error

    def size(self, path: str) -> int | None:
        try:
            return (self.root / self._resolved(path)).stat().st_size
        except FileNotFoundError:
            return None
        except OSError as error:
            raise TreeError(f"cannot read file ({error.strerror})", path) from error

    def _cache_file(self) -> str | None:
        if not self.cache or not (self.root / ".git").exists():
            return None
        # The backend creates the directory; failing to write the cache is never an error.
        return str(cache_dir(self.root) / STAT_CACHE)

    def digests(self, paths: Sequence[str]) -> list[str]:
        resolved = [self._resolved(path) for path in paths]
        return backend.hash_files_cached(str(self.root), resolved, self._cache_file())


# ``git diff-tree -r -z`` records: ":<old mode> <new mode> <old id> <new id> <status>" NUL path NUL
_RAW_CHANGE = re.compile(r":[0-7]+ ([0-7]+) [0-9a-f]+ ([0-9a-f]+) [A-Z][0-9]*\0([^\0]*)\0")
# What a new mode of a raw change is when the path holds no blob there: gone, or a submodule.
_NOT_BLOB_MODES = frozenset({"000000", "160000"})


# From this many blobs on, ``_blobs`` reads them with two ``git cat-file`` at once.
_SPLIT_READS_AT = 2000
# Each object's header is its size alone ("<id> missing" for an object git lacks).
_BATCH = "--batch=%(objectsize)"


def _blobs(repo: Path, ids: list[str]) -> list[bytes]:
    """The contents of the blobs ``ids``, in order, from ``git cat-file --batch``."""
    if not ids:
        return []
    if len(ids) < _SPLIT_READS_AT:
        output = git_bytes(repo, "cat-file", _BATCH, input=_request(ids))
        return _batch_contents(ids, output, repo)
    half = len(ids) // 2
    parts = [ids[:half], ids[half:]]
    outputs = git_bytes_together(repo, ["cat-file", _BATCH], [_request(p) for p in parts])
    return [
        blob
        for part, output in zip(parts, outputs, strict=True)
        for blob in _batch_contents(part, output, repo)
    ]


def _request(ids: list[str]) -> bytes:
    return "".join(f"{oid}\n" for oid in ids).encode()


def _batch_contents(ids: list[str], output: bytes, repo: Path) -> list[bytes]:
    """The blobs ``git cat-file --batch`` wrote for ``ids``, in order, each checked
    against its id."""
    try:
        found = backend.split_cat_file_batch(output, len(ids))
    except ValueError as error:
        raise GitError(f"git cat-file: {error}", str(repo)) from error
    for oid, content in zip(ids, found, strict=True):
        if content is None:  # a damaged or incomplete repository
            raise GitError(f"git object {oid} is missing from the repository", str(repo))
        _check_blob(oid, content, repo)
    return cast("list[bytes]", found)


# A repository's object ids are SHA-1 (40 hex digits) or, in a SHA-256 one, 64.
_ID_HASHES = {40: hashlib.sha1, 64: hashlib.sha256}


def _check_blob(oid: str, content: bytes, repo: Path) -> None:
    """That ``content`` is the blob ``oid`` names: its hash of ``blob <size>\\0<content>``.

    Raises:
        GitError: it is not (the object store was changed since git wrote it).
    """
    digest = _ID_HASHES.get(len(oid), hashlib.sha1)(b"blob %d\0" % len(content))
    digest.update(content)
    if digest.hexdigest() != oid:
        raise GitError(
            f"git object {oid} does not hold what its id names: the repository's object "
            "store was changed after git wrote it (by code run without the sandbox, or on "
            "disk); nothing read from it can be trusted, run 'git fsck'",
            str(repo),
        )


class GitTree:
    """The tree of one commit, read from git objects.

    Given ``near``, a tree whose listing this one is derived from: that listing,
    changed by ``git diff-tree`` between the two commits. For a patch of a few
    files that is much less work than listing the whole commit again.
    """

    def __init__(self, repo: Path, commit: str, near: GitTree | None = None) -> None:
        self.repo = repo
        self.commit = commit
        self._near = near

    @functools.cached_property
    def _listing(self) -> tuple[dict[str, str], set[str]]:
        """Each file's blob id, and the files that are symbolic links."""
        if self._near is not None:
            return self._listing_near(self._near)
        oids: dict[str, str] = {}
        links: set[str] = set()
        # Parsed piece by piece while git walks the rest of the commit's trees.
        for piece in git_records(self.repo, "ls-tree", "-r", "-z", "--full-tree", self.commit):
            found, linked = backend.parse_tree_listing(piece)
            oids.update(found)
            links |= linked
        return oids, links

    def _listing_near(self, near: GitTree) -> tuple[dict[str, str], set[str]]:
        # diff-tree reads the index, which a raw diff of two commits never needs: in a
        # monorepo that takes longer than the diff itself. An empty one is read instead.
        with tempfile.TemporaryDirectory() as empty:
            raw = git_bytes(
                self.repo,
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                near.commit,
                self.commit,
                env={"GIT_INDEX_FILE": os.path.join(empty, "index")},
            )
        oids, links = near._listing
        oids, links = dict(oids), set(links)
        for mode, oid, name in _RAW_CHANGE.findall(raw.decode("utf-8", "surrogateescape")):
            links.discard(name)
            if mode in _NOT_BLOB_MODES:
                oids.pop(name, None)
                continue
            oids[name] = oid
            if mode == _SYMLINK_MODE:
                links.add(name)
        return oids, links

    @property
    def _oids(self) -> dict[str, str]:
        return self._listing[0]

    @functools.cached_property
    def _directories(self) -> frozenset[str]:
        return frozenset(
            posixpath.dirname(path[: index + 1])
            for path in self._oids
            for index in range(len(path))
            if path[index] == "/"
        ) | {"."}

    def _kind(self, path: str) -> str:
        if path not in self._oids:
            return "dir" if path in self._directories else "missing"
        return "link" if path in self._listing[1] else "file"

    def _link_text(self, link: str) -> str:
        return self._link_texts[link]

    def _resolve(self, path: str) -> str:
        """The blob id of the file ``path`` leads to (``follow_link`` for a symlink)."""
        return self._oids[follow_link(path, self._kind, self._link_text)]

    def leads_to(self, path: str) -> str:
        """What ``path`` is once its links are followed: "file", "dir" or "missing".

        Raises:
            TreeError: a link points outside the repository, or round in a loop.
        """
        return link_end(path, self._kind, self._link_text)[1]

    @functools.cached_property
    def _files(self) -> tuple[str, ...]:
        return tuple(sorted(self._oids))

    def files(self) -> tuple[str, ...]:
        return self._files

    def paths(self) -> Iterable[str]:
        """Every file path, in no set order: for a scan, ``files()`` without its sort."""
        return self._oids.keys()

    def has_directory(self, path: str) -> bool:
        """Whether the commit holds files below ``path`` (not following links)."""
        return path in self._directories

    def is_link(self, path: str) -> bool:
        """Whether ``path`` is committed as a symbolic link: its content is another blob's."""
        return path in self._listing[1]

    def links(self) -> frozenset[str]:
        """Every path committed as a symbolic link (``is_link``), to scan the few of them."""
        return frozenset(self._listing[1])

    @functools.cached_property
    def _link_texts(self) -> dict[str, str]:
        # One batch for every link: the graph follows them all, and a BUILD file that is a
        # link is looked at before, so a git process per link would be paid per BUILD file.
        oids, links = self._listing
        ordered = sorted(links)
        texts = _blobs(self.repo, [oids[path] for path in ordered]) if ordered else []
        return {
            path: text.decode("utf-8", "surrogateescape")
            for path, text in zip(ordered, texts, strict=True)
        }

    def link_targets(self) -> dict[str, str]:
        """Each symbolic link the commit holds, with the text it points to."""
        return dict(self._link_texts)

    def blob_id(self, path: str) -> str | None:
        """The git object id of ``path`` as committed (a link's own blob), or None."""
        return self._oids.get(path)

    def blob_ids(self, paths: Iterable[str]) -> dict[str, str]:
        """``blob_id`` of each of ``paths``, all of which the commit holds."""
        oids = self._oids
        return {path: oids[path] for path in paths}

    def _content_id(self, path: str) -> str:
        """The blob holding ``path``'s content, symlinks resolved inside the commit.

        A working tree hashes what a link points at, so a commit must too, or a
        lock written on disk would never match the same commit read from git.
        """
        oid = self._oids.get(path)
        if oid is None:
            raise TreeError(f"not in commit {self.commit[:12]}", path)
        # A path git lists cannot run through a linked directory: only a link is followed.
        return self._resolve(path) if path in self._listing[1] else oid

    def read(self, path: str) -> bytes:
        oid = self._content_id(path)
        content = git_bytes(self.repo, "cat-file", "blob", oid)
        _check_blob(oid, content, self.repo)
        return content

    def size(self, path: str) -> int | None:
        if path not in self._oids:
            return None
        return int(git_bytes(self.repo, "cat-file", "-s", self._content_id(path)))

    def read_optional(self, path: str) -> bytes | None:
        """The bytes of ``path``, or None when the commit has no such file."""
        return self.read(path) if path in self._oids else None

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        """Several files in one ``git cat-file --batch`` call."""
        wanted = list(paths)
        oids, links = self._listing
        try:
            # Most commits hold no symbolic link: then each path's own blob is its content.
            ids = [oids[path] for path in wanted] if not links else None
        except KeyError:
            ids = None  # _content_id names the path the commit does not hold
        if ids is None:
            ids = [self._content_id(path) for path in wanted]
        return dict(zip(wanted, _blobs(self.repo, ids), strict=True))

    def digests(self, paths: Sequence[str]) -> list[str]:
        contents = self.read_many(paths)
        return [blake3(contents[path]).hexdigest() for path in paths]
