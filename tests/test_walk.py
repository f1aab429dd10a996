"""walk_tree: both backends list the same files and raise the same errors, byte for byte."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from backends import BACKENDS, _native, same_everywhere
from gitrepo import run
from oracle_gate.cli.demo import EXAMPLE
from oracle_gate.errors import TreeError


def _same_everywhere(root: Path | str) -> object:
    return same_everywhere("walk_tree", str(root))


def _write(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


def _os_walk_listing(root: Path) -> list[str]:
    """What WorkTree.files listed before it used the backends (os.walk, errors ignored)."""
    skipped = {".git", ".oracle_gate", "__pycache__"}
    found: list[str] = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = [name for name in subdirs if name not in skipped]
        relative = Path(directory).relative_to(root).as_posix()
        prefix = "" if relative == "." else relative + "/"
        found.extend(prefix + name for name in names)
        found.extend(prefix + name for name in subdirs if (Path(directory) / name).is_symlink())
    return sorted(found)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    _write(
        root,
        "b.txt",
        "a/z.py",
        "a/b/c.json",
        "a b/with space.txt",
        "ünï/cödé.txt",
        ".git/HEAD",
        "pkg/.oracle_gate/stat-cache",
        "pkg/__pycache__/m.pyc",
        "pkg/.git",  # a file named like a skipped directory is listed
        ".hidden",
        "pkg/.gitignore",
    )
    (root / "empty_dir").mkdir()
    (root / "to_dir").symlink_to("a")
    (root / "to_file").symlink_to("b.txt")
    (root / "broken").symlink_to("nowhere")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    (root / "a" / "__pycache__").symlink_to("../a")  # a link to a dir named like a skipped dir
    os.mkfifo(root / "fifo")
    return root


def test_backends_list_the_same_sorted_relative_files(corpus: Path) -> None:
    files = _same_everywhere(corpus)
    assert files == [
        ".hidden",
        "a b/with space.txt",
        "a/b/c.json",
        "a/z.py",
        "b.txt",
        "broken",
        "fifo",
        "loop_a",
        "loop_b",
        "pkg/.git",
        "pkg/.gitignore",
        "to_dir",
        "to_file",
        "ünï/cödé.txt",
    ]


def test_listing_matches_what_os_walk_listed(corpus: Path) -> None:
    assert _same_everywhere(corpus) == _os_walk_listing(corpus)


def test_the_shipped_example_is_listed_identically() -> None:
    assert _same_everywhere(EXAMPLE) == _os_walk_listing(EXAMPLE)


def test_an_empty_tree_has_no_files(tmp_path: Path) -> None:
    assert _same_everywhere(tmp_path) == []


def test_missing_root_is_a_tree_error_naming_the_root(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    for module in BACKENDS:
        with pytest.raises(TreeError) as caught:
            module.walk_tree(missing)
        assert (caught.value.path, caught.value.message) == (missing, "tree root does not exist")
    _same_everywhere(missing)


def test_a_root_with_a_nul_byte_is_a_tree_error(tmp_path: Path) -> None:
    outcome = _same_everywhere(f"{tmp_path}/a\0b")
    assert outcome == ("TreeError", "cannot read directory", f"{tmp_path}/a\0b", None)


def test_file_root_is_a_tree_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    for module in BACKENDS:
        with pytest.raises(TreeError, match="tree root is not a directory"):
            module.walk_tree(str(tmp_path / "f"))
    _same_everywhere(tmp_path / "f")


@pytest.fixture
def bytes_root(tmp_path: Path) -> bytes:
    root = tmp_path / "tree"
    _write(root, "ok.txt", "z/ok.txt")
    return os.fsencode(root)


def test_non_utf8_names_fail_naming_the_smallest_path(bytes_root: bytes) -> None:
    (Path(os.fsdecode(bytes_root + b"/z/b\xff\xfe.txt"))).write_text("x")
    os.mkdir(bytes_root + b"/z/a\xe9dir")
    Path(os.fsdecode(bytes_root + b"/z/a\xe9dir/inner")).write_text("x")
    for module in BACKENDS:
        with pytest.raises(TreeError) as caught:
            module.walk_tree(os.fsdecode(bytes_root))
        assert caught.value.message == "file name is not valid UTF-8"
        assert caught.value.path == "z/a\ufffddir"
    _same_everywhere(os.fsdecode(bytes_root))


@pytest.mark.parametrize(
    "raw",
    [b"\xff", b"a\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf", b"x\x80y"],
)
def test_lossy_names_are_shown_identically(bytes_root: bytes, raw: bytes) -> None:
    Path(os.fsdecode(bytes_root + b"/" + raw)).write_text("x")
    outcome = _same_everywhere(os.fsdecode(bytes_root))
    assert isinstance(outcome, tuple)
    assert outcome[2] == raw.decode("utf-8", "replace")


def test_a_directory_vanishing_mid_walk_is_a_clean_error_or_a_listing(tmp_path: Path) -> None:
    """Directories appear and disappear while both walkers run; nothing else may escape."""
    root = tmp_path / "tree"
    _write(root, *(f"d{i}/f{j}" for i in range(20) for j in range(20)))
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            for i in range(20):
                shutil.rmtree(root / f"d{i}", ignore_errors=True)
                _write(root, *(f"d{i}/sub/f{j}" for j in range(5)))

    worker = threading.Thread(target=churn)
    worker.start()
    seen: set[str] = set()
    try:
        for _ in range(30):
            for module in BACKENDS:
                try:
                    files = module.walk_tree(str(root))
                    assert all(not name.startswith("/") for name in files)
                    seen.add("listing")
                except TreeError as error:
                    assert error.message == "vanished while the tree was walked", error
                    assert error.path is not None and error.path.startswith("d")
                    seen.add("vanished")
    finally:
        stop.set()
        worker.join()
    assert seen


# Root ignores file modes through CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH; a
# child without them in its bounding set is refused like any other user.
_WITHOUT_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def _can_drop_dac_capabilities() -> bool:
    if shutil.which("setpriv") is None:
        return False
    probe = subprocess.run(
        [*_WITHOUT_DAC, "true"], capture_output=True, timeout=60, check=False, cwd="/"
    )
    return probe.returncode == 0


_PERMISSION_PROBE = """
import sys
from oracle_gate import _fallback
from oracle_gate.errors import TreeError
modules = [_fallback]
try:
    from oracle_gate import _native
    modules.append(_native)
except ImportError:
    pass
for module in modules:
    try:
        print(getattr(module, sys.argv[1])(*sys.argv[2:]))
    except TreeError as error:
        print(repr((error.message, error.path)))
"""


def _run_without_dac(*args: str) -> list[str]:
    done = subprocess.run(
        [*_WITHOUT_DAC, sys.executable, "-c", _PERMISSION_PROBE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


needs_dac_drop = pytest.mark.skipif(
    not _can_drop_dac_capabilities(), reason="needs setpriv to drop CAP_DAC_OVERRIDE"
)


@needs_dac_drop
def test_an_unreadable_directory_is_permission_denied_in_both_backends(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _write(root, "a/ok.txt", "locked/secret.txt", "z/locked/x")
    (root / "locked").chmod(0o000)
    (root / "z" / "locked").chmod(0o000)
    try:
        lines = _run_without_dac("walk_tree", str(root))
    finally:
        (root / "locked").chmod(0o755)
        (root / "z" / "locked").chmod(0o755)
    assert lines[0] == "('permission denied', 'locked')"
    assert len(set(lines)) == 1, lines


@needs_dac_drop
def test_an_unreadable_root_is_permission_denied_naming_the_root(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _write(root, "a.txt")
    root.chmod(0o000)
    try:
        lines = _run_without_dac("walk_tree", str(root))
    finally:
        root.chmod(0o755)
    assert lines[0] == repr(("permission denied", str(root)))
    assert len(set(lines)) == 1, lines


def test_lock_on_a_tree_with_a_bad_name_exits_2_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "mono"
    shutil.copytree(EXAMPLE, root)
    Path(os.fsdecode(os.fsencode(root) + b"/libs/bad\xff.txt")).write_text("x")
    for impl_name in ["python"] + ([] if _native is None else ["native"]):
        done = run("lock", "--repo", str(root), ORACLE_GATE_IMPL=impl_name)
        assert done.returncode == 2, (impl_name, done.stdout, done.stderr)
        assert "libs/bad\ufffd.txt: file name is not valid UTF-8" in done.stderr
