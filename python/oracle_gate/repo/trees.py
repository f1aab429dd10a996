"""The two kinds of file tree the gate reads: a git commit, or a working directory.

Parent-vs-head comparisons only ever use ``GitTree``, so nothing patched code
writes while it runs can change a verdict. ``WorkTree`` serves ``lock``, which
describes the files a developer has on disk.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from blake3 import blake3

from oracle_gate import backend
from oracle_gate.errors import TreeError
from oracle_gate.repo.cache import cache_dir
from oracle_gate.repo.files import NOT_REGULAR, NotRegularFileError, open_regular
from oracle_gate.repo.git import git_bytes

__all__ = ["STAT_CACHE", "GitTree", "Tree", "WorkTree"]

# The stat cache's name inside the repository's cache directory (``repo/cache.py``).
# The tree walk still skips ``.oracle_gate`` directories, where older versions kept it.
STAT_CACHE = "stat-cache"
_SYMLINK_MODE = "120000"
_MAX_LINK_HOPS = 40


class Tree(Protocol):
    """Read access to one version of the repository."""

    def files(self) -> tuple[str, ...]:
        """Every file path, repo-relative POSIX, sorted."""
        ...

    def read(self, path: str) -> bytes:
        """The bytes of one file. Raises TreeError when it cannot be read."""
        ...

    def digests(self, paths: Sequence[str]) -> list[str]:
        """BLAKE3 hex digests of ``paths``, in order. Raises TreeError."""
        ...


class WorkTree:
    """A directory on disk; walking and hashing go through the selected backend.

    Digests reuse the stat cache in the repository's cache directory (outside
    the tree, ``repo/cache.py``) when the root is a git working tree, unless
    ``cache`` is False. Other directories (the example shipped inside the
    installed package, an exported tree) get no cache files.
    """

    def __init__(self, root: Path, cache: bool = True) -> None:
        self.root = root
        self.cache = cache

    @functools.cache  # noqa: B019 - a tree lives as long as one command
    def files(self) -> tuple[str, ...]:
        return tuple(backend.walk_tree(str(self.root)))

    def read(self, path: str) -> bytes:
        try:
            descriptor, _ = open_regular(self.root / path)
            with open(descriptor, "rb") as handle:
                return handle.read()
        except IsADirectoryError:
            raise TreeError("is a directory, expected a file", path) from None
        except NotRegularFileError:
            raise TreeError(NOT_REGULAR, path) from None
        except OSError as error:
            raise TreeError(f"cannot read file ({error.strerror})", path) from error

    def _cache_file(self) -> str | None:
        if not self.cache or not (self.root / ".git").exists():
            return None
        # The backend creates the directory; failing to write the cache is never an error.
        return str(cache_dir(self.root) / STAT_CACHE)

    def digests(self, paths: Sequence[str]) -> list[str]:
        return backend.hash_files_cached(str(self.root), paths, self._cache_file())


class GitTree:
    """The tree of one commit, read from git objects."""

    def __init__(self, repo: Path, commit: str) -> None:
        self.repo = repo
        self.commit = commit

    @functools.cached_property
    def _entries(self) -> dict[str, tuple[str, str]]:
        listing = git_bytes(self.repo, "ls-tree", "-r", "-z", "--full-tree", self.commit)
        entries: dict[str, tuple[str, str]] = {}
        for entry in listing.split(b"\0"):
            if not entry:
                continue
            meta, _, name = entry.partition(b"\t")
            mode, kind, oid = meta.decode().split()
            if kind == "blob":
                entries[name.decode("utf-8", "surrogateescape")] = (mode, oid)
        return entries

    def _resolve(self, path: str) -> str:
        current = path
        for _hop in range(_MAX_LINK_HOPS):
            entry = self._entries.get(current)
            if entry is None:
                raise TreeError("broken symlink: its target does not exist", path)
            mode, oid = entry
            if mode != _SYMLINK_MODE:
                return oid
            target = git_bytes(self.repo, "cat-file", "blob", oid).decode("utf-8", "replace")
            current = posixpath.normpath(posixpath.join(posixpath.dirname(current), target))
        raise TreeError("symlink loop", path)

    @functools.cached_property
    def _files(self) -> tuple[str, ...]:
        return tuple(sorted(self._entries))

    def files(self) -> tuple[str, ...]:
        return self._files

    def blob_id(self, path: str) -> str | None:
        """The git object id of ``path`` as committed (a link's own blob), or None."""
        entry = self._entries.get(path)
        return entry[1] if entry else None

    def _content_id(self, path: str) -> str:
        """The blob holding ``path``'s content, symlinks resolved inside the commit.

        A working tree hashes what a link points at, so a commit must too, or a
        lock written on disk would never match the same commit read from git.
        """
        if path not in self._entries:
            raise TreeError(f"not in commit {self.commit[:12]}", path)
        return self._resolve(path)

    def read(self, path: str) -> bytes:
        return git_bytes(self.repo, "cat-file", "blob", self._content_id(path))

    def read_optional(self, path: str) -> bytes | None:
        """The bytes of ``path``, or None when the commit has no such file."""
        return self.read(path) if path in self._entries else None

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        """Several files in one ``git cat-file --batch`` call."""
        wanted = list(paths)
        if not wanted:
            return {}
        request = "".join(self._content_id(path) + "\n" for path in wanted).encode()
        output = git_bytes(self.repo, "cat-file", "--batch", input=request)
        contents: dict[str, bytes] = {}
        offset = 0
        for path in wanted:
            header_end = output.index(b"\n", offset)
            size = int(output[offset:header_end].split()[2])
            start = header_end + 1
            contents[path] = output[start : start + size]
            offset = start + size + 1
        return contents

    def digests(self, paths: Sequence[str]) -> list[str]:
        contents = self.read_many(paths)
        return [blake3(contents[path]).hexdigest() for path in paths]
