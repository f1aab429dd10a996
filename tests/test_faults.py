"""Faults of the machine the gate runs on are gate errors, never internal ones.

A read-only or full file system (the tree, the cache, the temporary directory), a
file size limit, a name that is not UTF-8 under the C locale, a path longer than the
file system takes, a FIFO or a device where a ledger or changelog is expected: each
is one line on stderr and exit 2 (or, for the cache, a verdict and a warning), the
requested ``--format`` still written, and no temporary file left in the tree. The
tests run as root (CI does), where permissions do not stop writes: read-only and
full file systems are real mounts, made where the test may (else it skips).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import needs_native
from gitrepo import GitRepo, run

IMPLS = [pytest.param("native", marks=needs_native), "python"]
PKG = "libs/codec"


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()}): the fault needs a real mount")


@contextlib.contextmanager
def _read_only(directory: Path) -> Iterator[None]:
    """``directory`` as a read-only bind mount of itself."""
    _mount("--bind", str(directory), str(directory))
    try:
        _mount("-o", "remount,bind,ro", str(directory))
        yield
    finally:
        subprocess.run(["umount", str(directory)], check=True)


@contextlib.contextmanager
def _full(directory: Path) -> Iterator[None]:
    """``directory`` a small file system, filled to the last block."""
    directory.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(directory))
    try:
        yield
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def _fill(directory: Path) -> None:
    with contextlib.suppress(OSError), open(directory / "filler", "wb") as filler:
        while True:
            filler.write(b"\0" * 65536)
            filler.flush()


def _with_new_test(repo: GitRepo) -> None:
    """An edit ``lock --write`` must write a lock for."""
    repo.write(f"{PKG}/tests/test_more.py", "def test_more():\n    assert 1 + 1 == 2\n")


def _temporary_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.tmp"))


def test_lock_write_in_a_read_only_tree_is_one_line(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    _with_new_test(repo)
    with _read_only(repo.path):
        done = run("lock", "--write", "--repo", str(repo.path))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"oracle-gate: error: {PKG}/oracle_gate.lock: cannot write the lock (Read-only file "
        "system); run where it can be written\n"
    )
    # The honest neighbour: the same tree, writable, is locked.
    done = run("lock", "--write", "--repo", str(repo.path))
    assert done.returncode == 0, done.stderr
    assert f"wrote {PKG}/oracle_gate.lock" in done.stdout


def test_lock_write_on_a_full_disk_leaves_no_temporary_file(repo: GitRepo, tmp_path: Path) -> None:
    with _full(tmp_path / "disk"):
        full = GitRepo.init(tmp_path / "disk" / "repo")
        full.commit_example(PKG)
        _with_new_test(full)
        _fill(tmp_path / "disk")
        done = run("lock", "--write", "--repo", str(full.path))
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            f"oracle-gate: error: {PKG}/oracle_gate.lock: cannot write the lock (No space left "
            "on device); free some space and run again\n"
        )
        assert _temporary_files(full.path) == []


def test_lock_write_past_the_file_size_limit_is_one_line(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    _with_new_test(repo)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    done = subprocess.run(
        [sys.executable, "-m", "oracle_gate", "lock", "--write", "--repo", str(repo.path)],
        capture_output=True,
        text=True,
        preexec_fn=small_files,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"oracle-gate: error: {PKG}/oracle_gate.lock: cannot write the lock (File too large); "
        "raise the file size limit (ulimit -f)\n"
    )
    assert _temporary_files(repo.path) == []


@pytest.mark.parametrize("impl", IMPLS)
def test_a_full_cache_keeps_the_verdict(
    example_repo: tuple[GitRepo, str], tmp_path: Path, impl: str
) -> None:
    """The health record (and the stat cache) are lost, never the verdict."""
    repo, base = example_repo
    repo.replace(f"{PKG}/codec/__init__.py", "def encode(record):", "def encode(record):  # ok")
    head = repo.commit("a comment")
    cache = tmp_path / "cache"
    with _full(cache):
        _fill(cache)
        done = run(
            "check", "--repo", str(repo.path), "--base", base, "--head", head, "--format",
            "json", ORACLE_GATE_IMPL=impl, XDG_CACHE_HOME=str(cache),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdict"] == "merge"
    assert done.stderr == (
        "oracle-gate: warning: the files the tests read are not kept (run-time-reads.json): "
        "No space left on device\n"
        "oracle-gate: warning: the health record is not kept: No space left on device\n"
    )


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")
def test_a_full_temporary_directory_still_gives_a_verdict(
    example_repo: tuple[GitRepo, str],
) -> None:
    """/tmp full (in a mount namespace of the test's own): the replay's checkouts go
    where they can, or the check is one line and exit 2."""
    repo, base = example_repo
    repo.replace(f"{PKG}/codec/__init__.py", "def encode(record):", "def encode(record):  # ok")
    head = repo.commit("a comment")
    script = (
        "mount -t tmpfs -o size=1m tmpfs /tmp && "
        "(dd if=/dev/zero of=/tmp/filler bs=64k 2>/dev/null; true) && "
        f'exec "{sys.executable}" -m oracle_gate check --repo "{repo.path}" --base {base} '
        f"--head {head} --format json"
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if "unshare failed" in done.stderr or "mount:" in done.stderr:
        pytest.skip(f"no private mount namespace here: {done.stderr.strip()}")
    assert done.returncode in (0, 2), done.stderr
    report = json.loads(done.stdout)
    if done.returncode == 2:
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert "error" in report
    else:
        assert report["verdict"] == "merge", done.stdout


@pytest.mark.parametrize("impl", IMPLS)
def test_a_name_not_utf8_under_the_c_locale_is_reported_in_every_format(
    example_repo: tuple[GitRepo, str], tmp_path: Path, impl: str
) -> None:
    repo, base = example_repo
    with open(os.path.join(os.fsencode(repo.path / PKG / "testdata"), b"caf\xe9.json"), "w") as f:
        f.write("{}")
    head = repo.commit("a fixture named in Latin-1")
    outputs = [f"{fmt}:{tmp_path / fmt}" for fmt in ("json", "junit", "sarif", "markdown")]
    done = run(
        "check", "--repo", str(repo.path), "--base", base, "--head", head, "--no-replay",
        "--format", "markdown", *(arg for out in outputs for arg in ("--output", out)),
        ORACLE_GATE_IMPL=impl, LC_ALL="C", LANG="C", PYTHONCOERCECLOCALE="0",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the new fixture is rejected
    assert done.stderr == ""
    assert f"`{PKG}/testdata/caf\\udce9.json` | fixture | ❌ reject" in done.stdout
    for fmt in ("json", "junit", "sarif", "markdown"):
        assert "caf" in (tmp_path / fmt).read_text(encoding="utf-8"), fmt


@pytest.mark.parametrize("impl", IMPLS)
def test_a_path_longer_than_the_file_system_takes_is_one_line(
    example_repo: tuple[GitRepo, str], impl: str
) -> None:
    """4,064 characters: git holds it, the checkout of the replay cannot open it."""
    repo, base = example_repo
    directory = f"{PKG}/testdata/" + "/".join(["d" * 200] * 19)
    name = "x" * (4064 - len(directory) - 1 - len(".json")) + ".json"
    os.makedirs(repo.path / directory)
    descriptor = os.open(repo.path / directory, os.O_RDONLY)
    try:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT, dir_fd=descriptor))
    finally:
        os.close(descriptor)
    head = repo.commit("a long path")
    done = run(
        "check", "--repo", str(repo.path), "--base", base, "--head", head, "--format", "json",
        ORACLE_GATE_IMPL=impl,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.endswith(".json: cannot go on (File name too long); shorten the path\n")
    assert json.loads(done.stdout)["error"]["message"] == (
        "cannot go on (File name too long); shorten the path"
    )


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_device_changelog_makes_note_stop_not_wait(
    example_repo: tuple[GitRepo, str], kind: str
) -> None:
    repo, _ = example_repo
    changelog = repo.path / PKG / "ORACLE_CHANGELOG.md"
    changelog.unlink()
    if kind == "fifo":
        os.mkfifo(changelog)
    else:
        os.mknod(changelog, 0o644 | 0o020000, os.makedev(1, 5))  # /dev/zero
    done = run("note", f"{PKG}/codec/__init__.py", "--reason", "why", cwd=repo.path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"oracle-gate: error: {PKG}/ORACLE_CHANGELOG.md: not a regular file "
        "(a FIFO, socket or device)\n"
    )


def test_a_regular_changelog_takes_the_note(example_repo: tuple[GitRepo, str]) -> None:
    """The honest neighbour of the FIFO: the changelog gets the note."""
    repo, _ = example_repo
    done = run("note", f"{PKG}/codec/__init__.py", "--reason", "why", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    assert "`codec/__init__.py` blake3:" in repo.read(f"{PKG}/ORACLE_CHANGELOG.md")


@pytest.mark.parametrize("command", [("lock", "--ledgers"), ("seeds", "list")])
def test_a_fifo_seeds_file_is_an_error_not_skipped(
    example_repo: tuple[GitRepo, str], command: tuple[str, ...]
) -> None:
    repo, _ = example_repo
    seeds = repo.path / PKG / "seeds.jsonl"
    seeds.unlink()
    os.mkfifo(seeds)
    done = run(*command, "--repo", str(repo.path))
    assert done.returncode == 2, done.stderr
    assert f"{PKG}/seeds.jsonl: not a regular file (a FIFO, socket or device)\n" in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
