"""One view of the tree: ``lock`` (a working tree) and ``check`` (commits) see the same files."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gitrepo import GitRepo
from oracle_gate import backend
from oracle_gate.cli import main
from oracle_gate.errors import GitError
from oracle_gate.repo import git as git_module
from oracle_gate.repo import trees
from oracle_gate.repo.git import git_bytes, git_bytes_together, git_records
from oracle_gate.repo.trees import GitTree

PKG = "libs/codec"
TESTDATA = f"{PKG}/testdata"


@pytest.fixture
def codec(repo: GitRepo) -> tuple[GitRepo, str]:
    return repo, repo.commit_example(PKG)


def _lock(repo: GitRepo, *args: str) -> int:
    return main(["lock", "--repo", str(repo.path), *args])


def _check(repo: GitRepo, base: str) -> int:
    return main(["check", "--repo", str(repo.path), "--base", base])


def test_lock_ignores_what_git_ignores_so_check_agrees_after_the_commit(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _ = codec
    repo.write(".gitignore", "*.tmp\n")
    repo.write(f"{TESTDATA}/scratch.tmp", "local only\n")
    assert _lock(repo, "--write", PKG) == 0
    assert "scratch.tmp" not in repo.read(f"{PKG}/oracle_gate.lock")
    base = repo.commit("ignore scratch files")
    repo.write(f"{PKG}/README.md", "docs\n")
    repo.commit("docs")
    capsys.readouterr()
    assert _check(repo, base) == 0, capsys.readouterr()


def test_an_untracked_file_that_is_not_ignored_is_seen_by_lock(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _ = codec
    repo.write(f"{TESTDATA}/new_case.json", "{}\n")
    capsys.readouterr()
    assert _lock(repo, PKG) == 1
    assert f"FAIL {TESTDATA}/new_case.json: fixtures entry added" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("/etc/passwd", "symlink points outside the repository (to /etc/passwd)"),
        ("../../../../outside.txt", "symlink points outside the repository"),
        (".", "symlink to a directory, expected a file"),
        ("loop", "symlink loop"),
        ("missing.json", "broken symlink: its target does not exist"),
    ],
    ids=["absolute", "up-and-out", "self", "loop", "broken"],
)
def test_lock_and_check_give_the_same_message_for_the_same_link(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    repo, base = codec
    os.symlink(target, repo.path / TESTDATA / "link")
    if target == "loop":
        os.symlink("link", repo.path / TESTDATA / "loop")
    capsys.readouterr()
    assert _lock(repo, PKG) == 2
    lock_err = capsys.readouterr().err
    repo.commit("a fixture link")
    assert _check(repo, base) == 2
    check_err = capsys.readouterr().err
    assert lock_err.startswith(f"oracle-gate: error: {TESTDATA}/link: {message}"), lock_err
    assert check_err.splitlines()[-1] == lock_err.strip()


def test_a_link_to_a_file_inside_the_repository_is_followed_by_both(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = codec
    repo.write(f"{PKG}/shared/golden.json", '{"a": 1}\n')
    os.symlink("../shared/golden.json", repo.path / TESTDATA / "golden.json")
    assert _lock(repo, "--write", PKG) == 0
    repo.note(PKG, base, "testdata/golden.json", "oracle_gate.lock", "shared/golden.json")
    repo.commit("a linked fixture, noted and relocked")
    capsys.readouterr()
    assert _lock(repo, PKG) == 0
    assert _check(repo, base) in (0, 1)
    assert "symlink" not in capsys.readouterr().err


def test_lock_and_check_both_accept_an_added_test(
    codec: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = codec
    repo.write(f"{PKG}/tests/test_more.py", "def test_more():\n    assert 1 + 1 == 2\n")
    capsys.readouterr()
    assert _lock(repo, PKG) == 0
    repo.commit("an agent's own test")
    assert _check(repo, base) == 0
    # A changed existing test is still drift for both.
    repo.replace(f"{PKG}/tests/test_codec.py", "assertEqual", "assertNotEqual")
    assert _lock(repo, PKG) == 1


def test_a_commit_lists_its_files_links_and_odd_names_but_no_submodule(repo: GitRepo) -> None:
    """``GitTree`` parses ``git ls-tree -z`` whole: every kind of entry and name is kept."""
    repo.write("plain.txt", "x\n")
    repo.write("tab\tand space.txt", "x\n")
    repo.write("run.sh", "#!/bin/sh\n")
    os.chmod(repo.path / "run.sh", 0o755)
    os.symlink("plain.txt", repo.path / "link.txt")
    odd = os.fsdecode(b"caf\xe9.txt")  # not UTF-8: kept as git spells it
    (repo.path / odd).write_bytes(b"x\n")
    sub = repo.commit("odd names")
    # A submodule is a "commit" entry: git add -A would drop it, having no directory.
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sub},vendored")
    repo.git("commit", "-q", "--no-verify", "-m", "a submodule entry")
    tree = GitTree(repo.path, repo.git("rev-parse", "HEAD").strip())
    assert "vendored" in repo.git("ls-tree", "--name-only", "HEAD")
    listed = tree.files()
    assert [p for p in listed if not p.startswith(".")] == sorted(
        ["plain.txt", "tab\tand space.txt", "run.sh", "link.txt", odd]
    )
    assert tree.is_link("link.txt") and not tree.is_link("run.sh")
    assert tree.read(odd) == b"x\n"
    assert tree.read("link.txt") == b"x\n"
    assert "vendored" not in listed


def test_a_listing_derived_from_a_near_commit_equals_the_commits_own(repo: GitRepo) -> None:
    """The head's listing is the parent's changed by ``git diff-tree``: every kind of
    change (edit, addition, deletion, mode, file to link and back, file to directory,
    submodule in and out, odd names) must leave the same entries as listing the head."""
    odd = os.fsdecode(b"caf\xe9.txt")
    for path in ("kept.txt", "edited.txt", "gone.txt", "mode.sh", "to_link.txt", "becomes"):
        repo.write(path, f"{path}\n")
    os.symlink("kept.txt", repo.path / "from_link.txt")
    first = repo.commit("base")
    # ``repo.commit`` adds with -A, which would drop a submodule entry without its directory
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{first},old_submodule")
    repo.git("commit", "-q", "--no-verify", "-m", "a submodule")
    base = repo.git("rev-parse", "HEAD").strip()
    repo.write("edited.txt", "changed\n")
    (repo.path / "gone.txt").unlink()
    os.chmod(repo.path / "mode.sh", 0o755)
    (repo.path / "to_link.txt").unlink()
    os.symlink("kept.txt", repo.path / "to_link.txt")
    (repo.path / "from_link.txt").unlink()
    repo.write("from_link.txt", "now a file\n")
    (repo.path / "becomes").unlink()
    repo.write("becomes/inside.txt", "x\n")
    repo.write("tab\tand space.txt", "x\n")
    (repo.path / odd).write_bytes(b"x\n")
    repo.git("add", "-A", "--", ":!old_submodule")
    repo.git("rm", "-q", "--cached", "old_submodule")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{first},new_submodule")
    repo.git("commit", "-q", "--no-verify", "-m", "every kind of change")
    head = repo.git("rev-parse", "HEAD").strip()
    assert "new_submodule" in repo.git("ls-tree", "--name-only", head)
    near = GitTree(repo.path, head, near=GitTree(repo.path, base))
    listed = GitTree(repo.path, head)
    assert near.files() == listed.files()
    assert {p: near.blob_id(p) for p in near.files()} == {
        p: listed.blob_id(p) for p in listed.files()
    }
    assert [p for p in near.files() if near.is_link(p)] == ["to_link.txt"]
    assert "becomes/inside.txt" in near.files() and "gone.txt" not in near.files()
    assert near.read("to_link.txt") == b"kept.txt\n"


def test_a_listing_derived_from_a_near_commit_never_reads_the_index(repo: GitRepo) -> None:
    """Two commits are compared from git objects alone: the index (what a checkout has
    staged, which the patched code can write) changes nothing, even when it is garbage."""
    repo.write("a.txt", "a\n")
    base = repo.commit("base")
    repo.write("b.txt", "b\n")
    head = repo.commit("head")
    (repo.path / ".git" / "index").write_bytes(b"DIRC not an index")
    with pytest.raises(GitError, match="index"):
        git_bytes(repo.path, "diff-tree", "-r", base, head)
    near = GitTree(repo.path, head, near=GitTree(repo.path, base))
    assert near.files() == ("a.txt", "b.txt")


@pytest.mark.parametrize("split", [False, True])
def test_a_blob_missing_from_the_repository_is_a_git_error(
    repo: GitRepo, split: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged repository (a blob deleted from ``.git/objects``) fails closed, by name,
    whether one ``git cat-file`` reads the blobs or two at once."""
    monkeypatch.setattr(trees, "_SPLIT_READS_AT", 2 if split else 1000)
    repo.write("kept.txt", "kept\n")
    repo.write("lost.txt", "lost\n")
    head = repo.commit("two files")
    lost = repo.git("rev-parse", f"{head}:lost.txt").strip()
    (repo.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    tree = GitTree(repo.path, head)
    assert tree.read_many(["kept.txt"]) == {"kept.txt": b"kept\n"}
    with pytest.raises(GitError, match=f"git object {lost} is missing from the repository"):
        tree.read_many(["kept.txt", "lost.txt"])


def test_blobs_read_by_two_processes_at_once_are_the_blobs_read_by_one(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(7):
        repo.write(f"dir{index % 3}/file{index}.txt", f"content {index}\n" * index)
    head = repo.commit("files")
    paths = sorted(GitTree(repo.path, head).files())
    monkeypatch.setattr(trees, "_SPLIT_READS_AT", 1000)
    one = GitTree(repo.path, head).read_many(paths)
    monkeypatch.setattr(trees, "_SPLIT_READS_AT", 2)
    two = GitTree(repo.path, head).read_many(paths)
    assert list(one) == list(two) == paths
    assert one == two and one["dir1/file4.txt"] == b"content 4\n" * 4


def test_git_run_together_fails_with_gits_own_reason(repo: GitRepo) -> None:
    with pytest.raises(GitError, match="'git rev-parse --verify no-such-ref' failed: fatal"):
        git_bytes_together(repo.path, ["rev-parse", "--verify", "no-such-ref"], [b"", b""])
    # Each process reads its own input: two blobs' ids, in input order.
    assert git_bytes_together(repo.path, ["hash-object", "--stdin"], [b"a", b"b"]) == [
        b"2e65efe2a145dda7ee51d1741299f848e5bf752e\n",
        b"63d8dbd40c23542e740659a7168a0ce3138ea748\n",
    ]


def test_git_records_come_in_whole_records_that_join_to_gits_output(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(40):
        repo.write(f"dir{index % 4}/{'long-name-' * (index % 5)}file{index}.txt", f"{index}\n")
    os.symlink("file0.txt", repo.path / "dir0/link")
    head = repo.commit("files")
    whole = git_bytes(repo.path, "ls-tree", "-r", "-z", "--full-tree", head)
    # Reads smaller than a record: pieces are still whole records.
    monkeypatch.setattr(git_module, "_READ_SIZE", 7)
    pieces = list(git_records(repo.path, "ls-tree", "-r", "-z", "--full-tree", head))
    assert len(pieces) > 10 and b"".join(pieces) == whole
    assert all(piece.endswith(b"\0") and piece.count(b"\0") >= 1 for piece in pieces)
    # A commit's listing parsed piece by piece is the listing parsed at once.
    assert GitTree(repo.path, head)._listing == backend.parse_tree_listing(whole)
    assert GitTree(repo.path, head).is_link("dir0/link")


def test_git_records_fail_with_gits_own_reason(repo: GitRepo) -> None:
    with pytest.raises(GitError, match="'git ls-tree -r no-such-ref' failed: fatal"):
        list(git_records(repo.path, "ls-tree", "-r", "no-such-ref"))
    with pytest.raises(GitError, match="failed: fatal: not a tree object"):
        GitTree(repo.path, "0" * 40).files()


# A git alias that writes, then runs a child that outlives git unless it is killed too.
_SLOW = ["-c", "alias.wait=!echo a; sleep 3", "wait"]


@pytest.mark.parametrize(
    "run",
    [
        lambda path: git_bytes_together(path, _SLOW, [b""]),
        lambda path: list(git_records(path, *_SLOW)),
    ],
    ids=["together", "records"],
)
def test_git_runs_are_killed_at_the_timeout(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, run: Callable[[Path], object]
) -> None:
    monkeypatch.setattr(git_module, "TIMEOUT_SECONDS", 0.2)
    started = time.monotonic()
    with pytest.raises(GitError, match="timed out after 0s"):
        run(repo.path)
    assert time.monotonic() - started < 2.5
