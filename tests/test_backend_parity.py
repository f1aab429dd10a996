"""The native core and the pure-Python fallback must agree byte for byte, errors included."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import pytest

from oracle_gate import _fallback
from oracle_gate.demo import EXAMPLE
from oracle_gate.errors import TreeError

try:
    from oracle_gate import _native
except ImportError:  # pragma: no cover - CI always builds it
    _native = None

needs_native = pytest.mark.skipif(_native is None, reason="native extension is not built")
HashFn = Callable[[Sequence[str]], list[str]]


def _backends() -> list[ModuleType]:
    return [module for module in (_fallback, _native) if module is not None]


def _outcome(hash_files: HashFn, paths: list[str]) -> object:
    try:
        return hash_files(paths)
    except TreeError as error:
        return (type(error).__name__, error.message, error.path, error.line)


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
    ],
)
def test_backends_agree_on_digests_and_errors(corpus: Path, names: list[str]) -> None:
    paths = [str(corpus / name) for name in names]
    outcomes = {module.__name__: _outcome(module.hash_files, paths) for module in _backends()}
    assert len(set(map(repr, outcomes.values()))) == 1, outcomes


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
    for module in _backends():
        with pytest.raises(TreeError) as caught:
            module.hash_files([str(corpus / "abc"), str(corpus / name)])
        assert caught.value.path == str(corpus / name)
        assert caught.value.message == message


def test_permission_error_is_classified_like_the_native_core() -> None:
    error = PermissionError(13, "Permission denied")
    assert _fallback._read_error("/nonexistent-dir-x/f", error).message == "permission denied"


def _write_locks(root: Path, impl: str) -> dict[str, bytes]:
    env = {**os.environ, "ORACLE_GATE_IMPL": impl}
    done = subprocess.run(
        [sys.executable, "-m", "oracle_gate", "lock", "--write", "--repo", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
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


def test_shipped_example_locks_are_up_to_date(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oracle_gate", "lock", "--repo", str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") == 3
