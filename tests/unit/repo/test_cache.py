"""hash_files_cached: identical digests, errors and cache files from both backends.

The cache format is written out here from its documentation in ``_native.pyi``,
independently of either implementation, so the doc, the Rust core and the
fallback are held to the same bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from blake3 import blake3

from backends import BACKENDS, _native, backend_id, needs_native, same_everywhere
from oracle_gate import _fallback
from oracle_gate.errors import TreeError
from oracle_gate.repo.cache import cache_dir
from oracle_gate.repo.trees import STAT_CACHE, WorkTree

MAGIC = "oracle-gate stat cache 1"


def _settle() -> None:
    """Let file times fall into an earlier timestamp tick than the next cache's."""
    time.sleep(0.05)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha")
    (root / "b.txt").write_text("beta")
    (root / "sub" / "name with space.txt").write_text("gamma")
    (root / "big.bin").write_bytes(bytes(range(256)) * 8192)  # 2 MiB: the mmap path
    (root / "empty").write_bytes(b"")
    (root / "link").symlink_to("a.txt")
    (root / "broken").symlink_to("nowhere")
    (root / "dir").mkdir()
    _settle()
    return root


GOOD = ["a.txt", "b.txt", "sub/name with space.txt", "big.bin", "empty", "link"]


def _expected(root: Path, paths: list[str]) -> list[str]:
    return [blake3((root / path).read_bytes()).hexdigest() for path in paths]


def _cache_of(root: Path) -> str:
    return str(root / ".oracle_gate" / "stat-cache")


def _render(root: Path, written_ns: int, entries: dict[str, tuple[os.stat_result, str]]) -> bytes:
    """The documented cache format, built without either implementation."""
    body = f"{MAGIC}\0{written_ns}\0{root}\0"
    for path in sorted(entries):
        info, digest = entries[path]
        body += (
            f"{digest} {info.st_size} {info.st_mtime_ns} {info.st_ctime_ns} "
            f"{info.st_dev} {info.st_ino} {path}\0"
        )
    raw = body.encode()
    return raw + b"#" + blake3(raw).hexdigest().encode() + b"\n"


def _normalised(cache: str) -> bytes:
    """Cache bytes with the write time and checksum blanked, to compare backends."""
    data = Path(cache).read_bytes()
    body = data[:-66]
    assert data[-66:] == b"#" + blake3(body).hexdigest().encode() + b"\n"
    magic, _written, rest = body.split(b"\0", 2)
    return magic + b"\0<written>\0" + rest


def test_cold_warm_and_uncached_digests_equal_plain_hashing(tree: Path, impl: ModuleType) -> None:
    expected = _expected(tree, GOOD)
    assert impl.hash_files([str(tree / path) for path in GOOD]) == expected
    assert impl.hash_files_cached(str(tree), GOOD, None) == expected
    cache = _cache_of(tree)
    assert impl.hash_files_cached(str(tree), GOOD, cache) == expected  # cold
    assert Path(cache).exists()
    assert impl.hash_files_cached(str(tree), GOOD, cache) == expected  # warm


@needs_native
def test_both_backends_write_the_same_cache_bytes(tree: Path) -> None:
    written = {}
    for module in BACKENDS:
        cache = str(tree / f"cache-{module.__name__}")
        module.hash_files_cached(str(tree), GOOD, cache)
        written[module.__name__] = _normalised(cache)
    assert len(set(written.values())) == 1, written
    # Every regular file (symlinks followed) has an entry; the format matches the doc.
    assert written["oracle_gate._fallback"].count(b"\0") == 3 + len(GOOD)


@pytest.mark.parametrize("writer", BACKENDS, ids=backend_id)
def test_each_backend_trusts_the_others_cache(tree: Path, writer: ModuleType) -> None:
    cache = _cache_of(tree)
    writer.hash_files_cached(str(tree), GOOD, cache)
    before = Path(cache).stat().st_mtime_ns, Path(cache).read_bytes()
    for reader in BACKENDS:
        assert reader.hash_files_cached(str(tree), GOOD, cache) == _expected(tree, GOOD)
        # All hits: an unchanged cache is not rewritten.
        assert (Path(cache).stat().st_mtime_ns, Path(cache).read_bytes()) == before


def test_a_settled_entry_is_trusted_without_reading_the_file(tree: Path, impl: ModuleType) -> None:
    info = os.stat(tree / "a.txt")
    fake = "f" * 64
    cache = _cache_of(tree)
    Path(cache).parent.mkdir()
    Path(cache).write_bytes(_render(tree, info.st_ctime_ns + 1, {"a.txt": (info, fake)}))
    # The cache is believed: proof that a hit never reads the file.
    assert impl.hash_files_cached(str(tree), ["a.txt"], cache) == [fake]


@pytest.mark.parametrize("racy", ["mtime", "ctime"])
def test_racily_clean_entries_are_rehashed(tree: Path, impl: ModuleType, racy: str) -> None:
    """Git's rule: an entry not older than the cache's write time is not trusted."""
    info = os.stat(tree / "a.txt")
    written_ns = info.st_mtime_ns if racy == "mtime" else info.st_ctime_ns
    cache = _cache_of(tree)
    Path(cache).parent.mkdir()
    Path(cache).write_bytes(_render(tree, written_ns, {"a.txt": (info, "f" * 64)}))
    assert impl.hash_files_cached(str(tree), ["a.txt"], cache) == _expected(tree, ["a.txt"])


def test_a_file_touched_after_the_cache_started_is_not_cached(tree: Path, impl: ModuleType) -> None:
    future = time.time_ns() + 3600 * 10**9
    os.utime(tree / "a.txt", ns=(future, future))
    cache = _cache_of(tree)
    assert impl.hash_files_cached(str(tree), ["a.txt", "b.txt"], cache) == _expected(
        tree, ["a.txt", "b.txt"]
    )
    listed = Path(cache).read_bytes()
    assert b" a.txt\0" not in listed
    assert b" b.txt\0" in listed


def test_a_same_size_edit_is_seen(tree: Path, impl: ModuleType) -> None:
    cache = _cache_of(tree)
    impl.hash_files_cached(str(tree), ["a.txt"], cache)
    (tree / "a.txt").write_text("ALPHA")
    assert impl.hash_files_cached(str(tree), ["a.txt"], cache) == _expected(tree, ["a.txt"])


def _cached_paths(cache: str) -> list[str]:
    body = Path(cache).read_bytes()[:-66].decode()
    return [record.split(" ", 6)[6] for record in body.split("\0")[3:-1]]


def test_entries_of_deleted_files_leave_the_cache(tree: Path, impl: ModuleType) -> None:
    cache = _cache_of(tree)
    impl.hash_files_cached(str(tree), GOOD, cache)
    (tree / "b.txt").unlink()
    (tree / "empty").unlink()
    (tree / "empty").mkdir()  # no longer a regular file either
    (tree / "a.txt").write_text("ALPHA")
    _settle()
    # Only a.txt is asked for (and changed, so the cache is rewritten); the other
    # files that still exist keep their entries.
    assert impl.hash_files_cached(str(tree), ["a.txt"], cache) == _expected(tree, ["a.txt"])
    assert _cached_paths(cache) == sorted(set(GOOD) - {"b.txt", "empty"})


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_temporary_files_of_killed_writers_are_removed(tree: Path, impl: ModuleType) -> None:
    cache = Path(_cache_of(tree))
    cache.parent.mkdir()
    dead = cache.parent / f".stat-cache.{_dead_pid()}.1.tmp"
    live = cache.parent / f".stat-cache.{os.getppid()}.2.tmp"  # a running process
    stale = cache.parent / f".stat-cache.{os.getppid()}.3.tmp"
    other = cache.parent / f".other-cache.{_dead_pid()}.4.tmp"  # not this cache's
    for path in (dead, live, stale, other):
        path.write_bytes(b"partial")
    two_days_ago = time.time() - 2 * 86400
    os.utime(stale, (two_days_ago, two_days_ago))
    impl.hash_files_cached(str(tree), GOOD, str(cache))
    assert sorted(p.name for p in cache.parent.iterdir()) == sorted(
        [cache.name, live.name, other.name]
    )


def _corruptions(good: bytes) -> list[bytes]:
    flipped = bytearray(good)
    flipped[len(MAGIC) + 3] ^= 1
    return [
        b"",
        b"garbage",
        good[: len(good) // 2],  # torn
        good[:-1],
        bytes(flipped),
        good.replace(b"# ", b"#0") if b"# " in good else good + b"x",
    ]


@pytest.mark.parametrize("case", range(6))
def test_a_corrupt_or_torn_cache_is_ignored_and_replaced(
    tree: Path, impl: ModuleType, case: int
) -> None:
    info = os.stat(tree / "a.txt")
    good = _render(tree, info.st_ctime_ns + 1, {"a.txt": (info, "f" * 64)})
    cache = _cache_of(tree)
    Path(cache).parent.mkdir()
    Path(cache).write_bytes(_corruptions(good)[case])
    assert impl.hash_files_cached(str(tree), ["a.txt"], cache) == _expected(tree, ["a.txt"])
    _normalised(cache)  # rewritten whole


def test_a_cache_for_another_root_is_ignored(tree: Path, impl: ModuleType) -> None:
    info = os.stat(tree / "a.txt")
    cache = _cache_of(tree)
    Path(cache).parent.mkdir()
    Path(cache).write_bytes(
        _render(tree / "elsewhere", info.st_ctime_ns + 1, {"a.txt": (info, "f" * 64)})
    )
    assert impl.hash_files_cached(str(tree), ["a.txt"], cache) == _expected(tree, ["a.txt"])


@pytest.mark.parametrize(
    "paths",
    [
        ["a.txt", "missing"],
        ["broken"],
        ["dir"],
        ["a.txt/child"],
        ["missing", "broken", "dir"],
        ["z-missing", "a-missing"],
        ["nul\0byte", "b.txt"],
        ["sub/nul\0byte"],
    ],
)
def test_errors_are_identical_and_name_the_relative_path(tree: Path, paths: list[str]) -> None:
    for cached in (False, True):
        cache = _cache_of(tree) if cached else None
        if cache:
            _fallback.hash_files_cached(str(tree), GOOD, cache)  # warm entries too
        outcome = same_everywhere("hash_files_cached", str(tree), paths, cache)
        assert isinstance(outcome, tuple) and outcome[2] == min(p for p in paths if p not in GOOD)
    leftovers = [p.name for p in (tree / ".oracle_gate").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_an_unwritable_cache_location_is_not_an_error(tree: Path, impl: ModuleType) -> None:
    (tree / "blocker").write_text("")
    cache = str(tree / "blocker" / "stat-cache")
    assert impl.hash_files_cached(str(tree), GOOD, cache) == _expected(tree, GOOD)


_WRITER = """
import sys
from oracle_gate import _fallback
try:
    from oracle_gate import _native
except ImportError:
    _native = None
module = _native if sys.argv[1] == "native" and _native is not None else _fallback
root, cache, rounds = sys.argv[2], sys.argv[3], int(sys.argv[4])
names = sys.argv[5:]
for i in range(rounds):
    # Alternate subsets so that every round really rewrites the cache.
    chosen = names[i % 2 :: 2] if i % 3 else names
    module.hash_files_cached(root, chosen, cache)
"""


def test_two_processes_writing_at_once_never_leave_a_torn_cache(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    names = [f"f{i:04d}" for i in range(400)]
    for name in names:
        (root / name).write_text(name * 20)
    _settle()
    cache = str(root / ".oracle_gate" / STAT_CACHE)
    kinds = ["native", "python"] if _native is not None else ["python", "python"]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, kind, str(root), cache, "40", *names],
            stderr=subprocess.PIPE,
        )
        for kind in kinds
    ]
    snapshots = 0
    while any(w.poll() is None for w in writers):
        try:
            data = Path(cache).read_bytes()
        except FileNotFoundError:
            continue
        body = data[:-66]
        assert data[-66:] == b"#" + blake3(body).hexdigest().encode() + b"\n", "torn cache"
        snapshots += 1
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr
    assert snapshots > 0
    _normalised(cache)
    for module in BACKENDS:
        assert module.hash_files_cached(str(root), names, cache) == _expected(root, names)
    assert [p.name for p in (root / ".oracle_gate").iterdir()] == ["stat-cache"]


def test_work_tree_digests_use_a_cache_outside_the_tree(tree: Path) -> None:
    (tree / ".git").mkdir()
    before = sorted(p.name for p in tree.iterdir())
    work = WorkTree(tree)
    assert work.digests(GOOD) == _expected(tree, GOOD)
    assert (cache_dir(tree) / STAT_CACHE).exists()
    assert not cache_dir(tree).is_relative_to(tree)
    assert sorted(p.name for p in tree.iterdir()) == before
    assert WorkTree(tree, cache=False).digests(GOOD) == _expected(tree, GOOD)


def test_a_tree_that_is_not_a_git_work_tree_gets_no_cache_files(tree: Path) -> None:
    assert WorkTree(tree).digests(GOOD) == _expected(tree, GOOD)
    assert not (tree / ".oracle_gate").exists()


def test_work_tree_reads_regular_files_only(tree: Path) -> None:
    os.mkfifo(tree / "fifo")
    work = WorkTree(tree)
    assert work.read("big.bin") == (tree / "big.bin").read_bytes()
    assert work.read("link") == b"alpha"
    for name, message in [
        ("fifo", "not a regular file (a FIFO, socket or device)"),
        ("dir", "is a directory, expected a file"),
        # The same words as hashing and a commit's tree use for a dangling link.
        ("broken", "broken symlink: its target does not exist"),
    ]:
        with pytest.raises(TreeError) as caught:
            work.read(name)
        assert (caught.value.path, caught.value.message) == (name, message)
