"""The native core and the pure-Python fallback must agree byte for byte, errors included."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from backends import BACKENDS, needs_native, same_everywhere
from gitrepo import run
from oracle_gate import _fallback
from oracle_gate.cli.demo import EXAMPLE
from oracle_gate.errors import SurfaceError, TreeError


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "abc").write_bytes(b"abc")
    (tmp_path / "big").write_bytes(os.urandom(3 << 20))  # above the mmap threshold
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to("abc")
    (tmp_path / "broken").symlink_to("nowhere")
    (tmp_path / "loop_a").symlink_to("loop_b")
    (tmp_path / "loop_b").symlink_to("loop_a")
    return tmp_path


def test_fallback_digest_of_abc_is_the_blake3_test_vector(corpus: Path) -> None:
    expected = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
    assert _fallback.hash_files([str(corpus / "abc")]) == [expected]


@needs_native
@pytest.mark.parametrize(
    "names",
    [
        ["empty", "abc", "big", "link"],
        ["abc", "missing"],
        ["broken"],
        ["dir"],
        ["loop_a"],
        ["abc/child"],
        ["missing", "broken", "dir"],  # several failures: the smallest path is named
        ["nul\0byte"],  # not a path the OS accepts at all
    ],
)
def test_backends_agree_on_digests_and_errors(corpus: Path, names: list[str]) -> None:
    paths = [str(corpus / name) for name in names]
    same_everywhere("hash_files", paths)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing", "file does not exist"),
        ("broken", "broken symlink: its target does not exist"),
        ("dir", "is a directory, expected a file"),
        ("loop_a", "symlink loop"),
        ("abc/child", "cannot read file (errno 20)"),
    ],
)
def test_every_backend_names_the_failing_path(corpus: Path, name: str, message: str) -> None:
    for module in BACKENDS:
        with pytest.raises(TreeError) as caught:
            module.hash_files([str(corpus / "abc"), str(corpus / name)])
        assert caught.value.path == str(corpus / name)
        assert caught.value.message == message


@contextlib.contextmanager
def _unblocked_after(fifo: Path, seconds: float) -> Iterator[None]:
    """Open ``fifo`` for writing after ``seconds`` so that a reader that blocked on it
    returns (and the test fails on its result) instead of hanging the suite."""
    timer = threading.Timer(seconds, lambda: os.close(os.open(fifo, os.O_WRONLY)))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@pytest.fixture
def specials(corpus: Path) -> Path:
    os.mkfifo(corpus / "fifo")
    (corpus / "device").symlink_to("/dev/null")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(corpus / "socket"))
    return corpus


@pytest.mark.parametrize("name", ["fifo", "device", "socket"])
def test_fifos_sockets_and_devices_are_refused_without_blocking(specials: Path, name: str) -> None:
    for module in BACKENDS:
        with _unblocked_after(specials / "fifo", 10), pytest.raises(TreeError) as caught:
            module.hash_files([str(specials / "abc"), str(specials / name)])
        assert caught.value.path == str(specials / name)
        assert caught.value.message == "not a regular file (a FIFO, socket or device)"
        with _unblocked_after(specials / "fifo", 10), pytest.raises(TreeError) as caught:
            module.hash_files_cached(str(specials), ["abc", name], str(specials / "cache"))
        assert (caught.value.path, caught.value.message) == (
            name,
            "not a regular file (a FIFO, socket or device)",
        )


# Hashes one path with every backend and prints the outcome; with a uid argument
# it first drops to that uid. It is a fresh process, so the native core's
# thread pool starts after the drop (a fork would inherit a pool with no threads).
_HASH_AS = """
import os, sys
sys.path.insert(0, sys.argv[1])
from backends import same_everywhere
if len(sys.argv) > 3:
    os.setgroups([])
    os.setgid(int(sys.argv[3]))
    os.setuid(int(sys.argv[3]))
print(repr(same_everywhere("hash_files", [sys.argv[2]])))
"""


def _hash_unprivileged(path: Path) -> str:
    """Every backend's outcome for ``path`` without the privilege to ignore file modes."""
    drop = ["65534"] if os.geteuid() == 0 else []
    done = subprocess.run(
        [sys.executable, "-c", _HASH_AS, str(Path(__file__).parents[1]), str(path), *drop],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_unreadable_file_is_permission_denied_in_every_backend(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    secret = tmp_path / "secret"
    secret.write_bytes(b"x")
    secret.chmod(0o000)
    shown = _hash_unprivileged(secret)
    assert shown == repr(("TreeError", "permission denied", str(secret), None))


def _write_locks(root: Path, impl: str) -> dict[str, bytes]:
    done = run("lock", "--write", "--repo", str(root), ORACLE_GATE_IMPL=impl)
    assert done.returncode == 0, done.stderr
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("oracle_gate.lock"))
    }


@needs_native
def test_native_and_python_write_identical_lockfiles_for_the_example(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "mono"
    shutil.copytree(EXAMPLE, root)
    native = _write_locks(root, "native")
    python = _write_locks(root, "python")
    assert len(native) == 3
    assert native == python


def test_shipped_example_locks_are_up_to_date() -> None:
    done = run("lock", "--repo", str(EXAMPLE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") == 3


# ---------------------------------------------------------------- assertion surface

# Valid test files that exercise every rendering rule the parsers disagree on:
# f-strings, implicit concatenation, lone surrogates, number spellings, elif,
# match, nested classes, decorators, CRLF, form feeds, Unicode identifiers.
# They are stored as ``*.py.txt`` so that linters leave their odd style alone.
SURFACE_CORPUS = Path(__file__).resolve().parents[1] / "surface_corpus"
SURFACE_ACCEPTED: dict[str, bytes] = {
    p.name.removesuffix(".txt"): p.read_bytes() for p in sorted(SURFACE_CORPUS.glob("*.py.txt"))
}

# Files both backends must refuse with SurfaceError (the message may differ).
SURFACE_REJECTED: dict[str, bytes] = {
    "utf8.py": b"x = 1\r\ny = 2\rz = '\xff'\n",
    "nul.py": b"x = 1\ny = 2\0\n",
    "syntax.py": b"def test_a():\n    pass\n\ndef test_b(:\n    pass\n",
    "two_boms.py": b"\xef\xbb\xbf\xef\xbb\xbfx = 1\n",
    "too_deep_line.py": b"def test_a():\n    assert " + b"-" * 110 + b"x\n",
    "brackets.py": b"x = " + b"(" * 201 + b"1" + b")" * 201 + b"\n",
    "indent.py": b"".join(b" " * i + b"if x:\n" for i in range(100)) + b" " * 100 + b"pass\n",
    "int_digits.py": b"x = " + b"1" * 4301 + b"\n",
    "deep_tree.py": b"x = " + b"-" * 100_000 + b"x\n",
    "fstring_conversion.py": b"assert f'{x!r :>3}'\n",
    "fstring_nesting.py": b"assert f'{x:{y:{z}}}'\n",
    "fstring_starred.py": b"assert f'{*a}'\n",
}
if sys.version_info < (3, 12):
    SURFACE_REJECTED["type_alias.py"] = b"type X = int\n"
    SURFACE_REJECTED["pep701.py"] = b"f'{'nested'}'\n"


def _surface_outcome(module: ModuleType, source: bytes, path: str) -> object:
    try:
        return module.extract_units(source, path)
    except SurfaceError as error:
        return ("SurfaceError", error.path)


@needs_native
@pytest.mark.parametrize("name", sorted(SURFACE_ACCEPTED))
def test_backends_extract_identical_units(name: str) -> None:
    source = SURFACE_ACCEPTED[name]
    outcomes = [_surface_outcome(module, source, name) for module in BACKENDS]
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[0], list)


@pytest.mark.parametrize("name", sorted(SURFACE_REJECTED))
def test_every_backend_refuses_malformed_sources(name: str) -> None:
    for module in BACKENDS:
        with pytest.raises(SurfaceError) as caught:
            module.extract_units(SURFACE_REJECTED[name], name)
        assert caught.value.path == name
        assert caught.value.line is not None and caught.value.line >= 1


def test_utf8_nul_and_depth_errors_agree_on_message_and_line() -> None:
    for name in ("utf8.py", "nul.py", "too_deep_line.py"):
        seen = set()
        for module in BACKENDS:
            with pytest.raises(SurfaceError) as caught:
                module.extract_units(SURFACE_REJECTED[name], name)
            seen.add((caught.value.message, caught.value.line))
        assert len(seen) == 1, seen


def test_batches_match_single_calls_and_name_the_smallest_failing_path() -> None:
    items = [(SURFACE_ACCEPTED[name], name) for name in sorted(SURFACE_ACCEPTED)]
    bad = [(SURFACE_REJECTED["syntax.py"], "z.py"), (SURFACE_REJECTED["nul.py"], "b.py")]
    for module in BACKENDS:
        assert module.extract_units_many(items) == [module.extract_units(*i) for i in items]
        with pytest.raises(SurfaceError) as caught:
            module.extract_units_many(items + bad)
        assert caught.value.path == "b.py"


def _git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    command = ["git", "-C", str(repo), *args]
    return subprocess.run(command, input=input, capture_output=True, check=True).stdout


def test_backends_read_a_tree_listing_alike(tmp_path: Path) -> None:
    """Odd names (a tab, a newline, bytes that are not UTF-8), a link and a submodule."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    names = [b"plain.py", b"dir/sub/deep.txt", b"tab\tname", b"new\nline", b"caf\xc3\xa9"]
    names.append(b"bad\xff")
    for name in names:
        target = tmp_path / os.fsdecode(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(name)
    (tmp_path / "link").symlink_to("plain.py")
    _git(tmp_path, "add", "-A")
    submodule = f"160000,{'0' * 39}1,module"
    _git(tmp_path, "update-index", "--add", "--cacheinfo", submodule)
    tree = _git(tmp_path, "write-tree").decode().strip()
    listing = _git(tmp_path, "ls-tree", "-r", "-z", "--full-tree", tree)
    found = same_everywhere("parse_tree_listing", listing)
    assert isinstance(found, tuple)
    oids, links = found
    assert list(oids) == sorted([*map(os.fsdecode, names), "link"], key=os.fsencode)
    assert links == {"link"}
    assert oids["plain.py"] == _git(tmp_path, "rev-parse", f"{tree}:plain.py").decode().strip()


def test_backends_split_a_cat_file_batch_alike(tmp_path: Path) -> None:
    """Objects of every size (empty, with newlines, binary), a missing one, a cut output."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    blobs = [b"", b"one line\n", b"\n\n\n", bytes(range(256)), b"no newline at the end"]
    ids = [
        _git(tmp_path, "hash-object", "-w", "--stdin", input=blob).decode().strip()
        for blob in blobs
    ]
    ids.insert(2, "0" * 40)  # no such object
    request = "".join(f"{oid}\n" for oid in ids).encode()
    output = _git(tmp_path, "cat-file", "--batch=%(objectsize)", input=request)
    found = same_everywhere("split_cat_file_batch", output, len(ids))
    assert found == [*blobs[:2], None, *blobs[2:]]
    for module in BACKENDS:
        with pytest.raises(ValueError, match=r"^git cat-file output ends early$"):
            module.split_cat_file_batch(output[:-30], len(ids))
