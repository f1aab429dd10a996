"""Pure-Python implementation of the native core's API (see ``_native.pyi``).

Every function returns exactly what the native one returns and raises the same
errors with the same messages; ``tests/parity/test_backend_parity.py`` holds us to it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from blake3 import blake3

from oracle_gate import surface
from oracle_gate.errors import GateError, SurfaceError, TreeError
from oracle_gate.repo.files import NOT_REGULAR, NotRegularFileError, open_regular

__all__ = [
    "extract_units",
    "extract_units_many",
    "hash_files",
    "hash_files_cached",
    "parse_tree_listing",
    "split_cat_file_batch",
    "walk_tree",
]

_CHUNK = 1 << 20
_E = TypeVar("_E", bound=GateError)


def _read_error(path: str, error: OSError | ValueError, shown: str | None = None) -> TreeError:
    """Classify an OSError exactly as ``classify`` in ``rust/src/hash.rs`` does.

    ``path`` is inspected on disk; the error names ``shown`` (default ``path``).
    A ValueError (a NUL byte in the path) is Rust's InvalidInput, which has no errno.
    """
    name = path if shown is None else shown
    if isinstance(error, ValueError):
        return TreeError("cannot read file", name)
    if isinstance(error, FileNotFoundError):
        try:
            is_link = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            is_link = False
        if is_link:
            return TreeError("broken symlink: its target does not exist", name)
        return TreeError("file does not exist", name)
    if isinstance(error, IsADirectoryError) or os.path.isdir(path):
        return TreeError("is a directory, expected a file", name)
    if isinstance(error, NotRegularFileError) or _is_special(path):
        return TreeError(NOT_REGULAR, name)
    if isinstance(error, PermissionError):
        return TreeError("permission denied", name)
    if error.errno == errno.ELOOP:
        return TreeError("symlink loop", name)
    if error.errno is None:
        return TreeError("cannot read file", name)
    return TreeError(f"cannot read file (errno {error.errno})", name)


def _is_special(path: str) -> bool:
    """Whether ``path`` (symlinks followed) is a FIFO, socket or device, as
    ``Found::Special`` in ``rust/src/hash.rs``."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _hash_opened(path: str) -> tuple[str, os.stat_result]:
    """The digest of the regular file at ``path`` and its stat data from before the read."""
    descriptor, info = open_regular(path)
    hasher = blake3()
    with open(descriptor, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest(), info


def hash_files(paths: Sequence[str]) -> list[str]:
    """See ``oracle_gate._native.hash_files``."""
    digests: list[str] = []
    failures: list[TreeError] = []
    for path in paths:
        try:
            digests.append(_hash_opened(path)[0])
        except (OSError, ValueError) as error:
            failures.append(_read_error(path, error))
    if failures:
        raise _smallest(failures)
    return digests


def _smallest(errors: list[_E]) -> _E:
    """The error naming the smallest path, the one the Rust core reports."""
    return min(errors, key=lambda error: error.path or "")


# Keep in step with SKIPPED_DIRS in rust/src/walk.rs.
SKIPPED_DIRS = frozenset({".git", ".oracle_gate", "__pycache__"})


def _shown(relative: str) -> str | None:
    """``relative`` with U+FFFD for undecodable bytes, or None when it is valid UTF-8."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(relative).decode("utf-8", "replace")
    return None


def _dir_error(shown: str, error: OSError) -> TreeError:
    """Classify a directory-listing failure as ``dir_error`` in ``rust/src/walk.rs`` does."""
    if isinstance(error, (FileNotFoundError, NotADirectoryError)):
        return TreeError("vanished while the tree was walked", shown)
    if isinstance(error, PermissionError):
        return TreeError("permission denied", shown)
    if error.errno is None:
        return TreeError("cannot read directory", shown)
    return TreeError(f"cannot read directory (errno {error.errno})", shown)


def _is_dir_following_links(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


# One ``git ls-tree -z`` entry of a file: "<mode> blob <id>\t<path>\0" (trees and
# submodules, "tree" and "commit" entries, are no files).
_BLOB_ENTRY = re.compile(r"([0-7]+) blob ([0-9a-f]+)\t([^\0]*)\0")


_SYMLINK_MODE = "120000"


def parse_tree_listing(listing: bytes) -> tuple[dict[str, str], set[str]]:
    # One decode and one pattern over the whole listing: much faster than entry by entry.
    found = _BLOB_ENTRY.findall(listing.decode("utf-8", "surrogateescape"))
    oids = {name: oid for _, oid, name in found}
    return oids, {name for mode, _, name in found if mode == _SYMLINK_MODE}


def split_cat_file_batch(output: bytes, count: int) -> list[bytes | None]:
    objects: list[bytes | None] = []
    offset = 0
    while len(objects) < count:
        header_end = output.find(b"\n", offset)
        if header_end < 0:
            raise ValueError("git cat-file output ends early")
        header = output[offset:header_end]
        offset = header_end + 1
        if not header.isdigit():  # "<id> missing"
            objects.append(None)
            continue
        end = offset + int(header)
        if end > len(output):
            raise ValueError("git cat-file output ends early")
        objects.append(output[offset:end])
        offset = end + 1
    return objects


def walk_tree(root: str) -> list[str]:
    """See ``oracle_gate._native.walk_tree``."""
    try:
        root_mode = os.stat(root).st_mode
    except FileNotFoundError:
        raise TreeError("tree root does not exist", root) from None
    except OSError as error:
        raise _dir_error(root, error) from None
    except ValueError:  # a NUL byte: Rust's InvalidInput, which has no errno
        raise TreeError("cannot read directory", root) from None
    if not stat.S_ISDIR(root_mode):
        raise TreeError("tree root is not a directory", root)
    found: list[str] = []
    errors: list[TreeError] = []
    pending = [("", root)]
    while pending:
        relative_dir, directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as error:
            shown_dir = relative_dir[:-1] or root
            errors.append(_dir_error(_shown(shown_dir) or shown_dir, error))
            continue
        for entry in entries:
            relative = relative_dir + entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_link = not is_dir and entry.is_symlink()
            except OSError as error:
                errors.append(_dir_error(_shown(relative) or relative, error))
                continue
            if entry.name in SKIPPED_DIRS and (
                is_dir or (is_link and _is_dir_following_links(entry.path))
            ):
                continue
            lossy = _shown(relative)
            if lossy is not None:
                errors.append(TreeError("file name is not valid UTF-8", lossy))
            elif is_dir:
                pending.append((relative + "/", entry.path))
            else:
                found.append(relative)
    if errors:
        raise _smallest(errors)
    return sorted(found)


# The stat cache: format and rules in ``_native.pyi`` (``hash_files_cached``).
_CACHE_MAGIC = "oracle-gate stat cache 1"
_TRAILER_LEN = 66  # "#", 64 hex digits, "\n"
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class _Stat:
    size: int
    mtime_ns: int
    ctime_ns: int
    dev: int
    ino: int

    @classmethod
    def of(cls, info: os.stat_result) -> _Stat:
        return cls(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_dev, info.st_ino)

    def settled_before(self, written_ns: int) -> bool:
        """Git's racy-clean rule: only a file last touched before the cache is trusted."""
        return self.mtime_ns < written_ns and self.ctime_ns < written_ns


def _parse_int(text: str, signed: bool) -> int | None:
    """Decimal digits (and a leading "-" when signed), in range; as ``parse_int`` in Rust."""
    digits = text[1:] if signed and text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()):
        return None
    value = int(text)
    low, high = (-(2**127), 2**127) if signed else (0, 2**64)
    return value if low <= value < high else None


def _parse_entry(record: str) -> tuple[str, _Stat, str] | None:
    fields = record.split(" ", 6)
    if len(fields) != 7 or not fields[6]:
        return None
    digest, size, mtime_ns, ctime_ns, dev, ino, path = fields
    if len(digest) != 64 or not set(digest) <= _HEX:
        return None
    numbers = [
        _parse_int(size, False),
        _parse_int(mtime_ns, True),
        _parse_int(ctime_ns, True),
        _parse_int(dev, False),
        _parse_int(ino, False),
    ]
    if None in numbers:
        return None
    return path, _Stat(*(n for n in numbers if n is not None)), digest


def _parse_cache(data: bytes, root: str) -> dict[str, tuple[_Stat, str]] | None:
    """The settled entries of a whole, well-formed cache for ``root``; else None."""
    if len(data) < _TRAILER_LEN:
        return None
    body, trailer = data[:-_TRAILER_LEN], data[-_TRAILER_LEN:]
    if trailer != b"#" + blake3(body).hexdigest().encode() + b"\n":
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.endswith("\0"):
        return None
    records = text[:-1].split("\0")
    if len(records) < 3 or records[0] != _CACHE_MAGIC or records[2] != root:
        return None
    written_ns = _parse_int(records[1], True)
    if written_ns is None:
        return None
    entries: dict[str, tuple[_Stat, str]] = {}
    for record in records[3:]:
        parsed = _parse_entry(record)
        if parsed is None:
            return None
        path, info, digest = parsed
        if info.settled_before(written_ns):
            entries[path] = (info, digest)
    return entries


def _load_cache(cache: str, root: str) -> dict[str, tuple[_Stat, str]] | None:
    try:
        with open(cache, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return _parse_cache(data, root)


def _render_cache(root: str, written_ns: int, entries: dict[str, tuple[_Stat, str]]) -> bytes:
    parts = [f"{_CACHE_MAGIC}\0{written_ns}\0{root}\0"]
    for path in sorted(entries):
        info, digest = entries[path]
        parts.append(
            f"{digest} {info.size} {info.mtime_ns} {info.ctime_ns} {info.dev} {info.ino} {path}\0"
        )
    body = "".join(parts).encode("utf-8")
    return body + b"#" + blake3(body).hexdigest().encode() + b"\n"


def _start_cache_writer(cache: str) -> tuple[int, str, int] | None:
    """Create the private temporary file; its mtime is this run's cut-off."""
    directory, name = os.path.split(cache)
    try:
        if directory:
            os.makedirs(directory, exist_ok=True)
        handle, temporary = tempfile.mkstemp(
            prefix=f".{name}.{os.getpid()}.", suffix=".tmp", dir=directory or "."
        )
    except OSError:
        return None
    try:
        written_ns = os.fstat(handle).st_mtime_ns
    except OSError:
        _abandon_cache_writer((handle, temporary, 0))
        return None
    return handle, temporary, written_ns


# As ABANDONED_AFTER in rust/src/stat_cache.rs.
_ABANDONED_AFTER_S = 24 * 3600


def _remove_abandoned(cache: str) -> None:
    """Remove temporary files of killed writers, as ``remove_abandoned`` in Rust does:
    ``.{name}.{pid}.{unique}.tmp`` whose process is gone or that is over a day old."""
    directory, name = os.path.split(cache)
    directory = directory or "."
    prefix = f".{name}."
    try:
        listing = os.listdir(directory)
    except OSError:
        return
    now = time.time()
    for entry in listing:
        if not (entry.startswith(prefix) and entry.endswith(".tmp")):
            continue
        pid = _parse_int(entry[len(prefix) : -len(".tmp")].split(".", 1)[0], False)
        if pid is None or pid >= 2**32 or pid == os.getpid():
            continue
        path = os.path.join(directory, entry)
        try:
            stale = now - os.stat(path).st_mtime > _ABANDONED_AFTER_S
        except OSError:
            stale = False
        if _process_gone(pid) or stale:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _process_gone(pid: int) -> bool:
    """Whether no process with this id exists (in this pid namespace)."""
    if pid > 2**31 - 1:
        return True
    if pid == 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _abandon_cache_writer(writer: tuple[int, str, int]) -> None:
    os.close(writer[0])
    with contextlib.suppress(OSError):
        os.unlink(writer[1])


def _commit_cache(writer: tuple[int, str, int], cache: str, content: bytes) -> None:
    handle, temporary, _ = writer
    try:
        with os.fdopen(handle, "wb") as output:
            output.write(content)
        os.replace(temporary, cache)
    except OSError:
        # Best effort, as in the native core: a lost cache only costs speed.
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return
    # Only writers clean up, so a run that leaves the cache as it is does no more I/O.
    _remove_abandoned(cache)


def _still_regular_files(
    root: str, old: dict[str, tuple[_Stat, str]], this_run: set[str]
) -> dict[str, tuple[_Stat, str]]:
    """Old entries of files not hashed in this run that are still regular files,
    so deleted files leave the cache (``merge`` in Rust)."""
    kept: dict[str, tuple[_Stat, str]] = {}
    for relative, entry in old.items():
        if relative in this_run:
            continue
        try:
            regular = stat.S_ISREG(os.stat(os.path.join(root, relative)).st_mode)
        except (OSError, ValueError):
            regular = False
        if regular:
            kept[relative] = entry
    return kept


def _hash_cached_one(
    root: str, relative: str, old: dict[str, tuple[_Stat, str]] | None
) -> tuple[str, _Stat, bool]:
    path = os.path.join(root, relative)
    entry = old.get(relative) if old is not None else None
    if entry is not None:
        info = os.stat(path)
        if stat.S_ISREG(info.st_mode) and _Stat.of(info) == entry[0]:
            return entry[1], entry[0], True
    digest, info = _hash_opened(path)
    return digest, _Stat.of(info), False


def hash_files_cached(root: str, paths: Sequence[str], cache: str | None = None) -> list[str]:
    """See ``oracle_gate._native.hash_files_cached``."""
    # Start the writer first: its file's mtime is the cut-off for this run.
    writer = _start_cache_writer(cache) if cache is not None else None
    try:
        old = _load_cache(cache, root) if cache is not None else None
        outcomes: list[tuple[str, _Stat, bool]] = []
        errors: list[TreeError] = []
        for relative in paths:
            try:
                outcomes.append(_hash_cached_one(root, relative, old))
            except (OSError, ValueError) as error:
                errors.append(_read_error(os.path.join(root, relative), error, relative))
        if errors:
            raise _smallest(errors)
        unchanged = old is not None and all(from_cache for _, _, from_cache in outcomes)
        if writer is not None and cache is not None and not unchanged:
            entries = _still_regular_files(root, old or {}, set(paths))
            for relative, (digest, info, _) in zip(paths, outcomes, strict=True):
                if info.settled_before(writer[2]):
                    entries[relative] = (info, digest)
            handed_over, writer = writer, None
            _commit_cache(handed_over, cache, _render_cache(root, handed_over[2], entries))
        return [digest for digest, _, _ in outcomes]
    finally:
        if writer is not None:
            _abandon_cache_writer(writer)


def extract_units(source: bytes, path: str) -> list[tuple[str, str]]:
    """See ``oracle_gate._native.extract_units``."""
    return surface.extract_units(source, path)


def extract_units_many(items: Sequence[tuple[bytes, str]]) -> list[list[tuple[str, str]]]:
    """See ``oracle_gate._native.extract_units_many``."""
    results: list[list[tuple[str, str]]] = []
    failures: list[SurfaceError] = []
    for source, path in items:
        try:
            results.append(surface.extract_units(source, path))
        except SurfaceError as error:
            failures.append(error)
    if failures:
        raise _smallest(failures)
    return results
