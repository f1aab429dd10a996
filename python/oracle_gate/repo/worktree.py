"""The working tree's uncommitted changes: listed for a warning, or snapshotted as a commit.

``check`` judges commits, so uncommitted edits are not judged; the CLI warns
about them. ``check --worktree`` (a pre-commit hook) judges them instead: the
working tree, as git would commit it with ``git add -A``, is written as a
commit object through a temporary index. Neither the user's index, nor any
ref, nor the working tree is touched; the objects are unreferenced and git's
garbage collection removes them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from oracle_gate.repo.git import git, git_bytes

__all__ = ["snapshot_worktree", "uncommitted_paths"]

_IDENTITY = {
    "GIT_AUTHOR_NAME": "oracle-gate",
    "GIT_AUTHOR_EMAIL": "oracle-gate@localhost",
    "GIT_COMMITTER_NAME": "oracle-gate",
    "GIT_COMMITTER_EMAIL": "oracle-gate@localhost",
}


def uncommitted_paths(repo: Path) -> list[str]:
    """Paths whose working-tree state differs from HEAD: staged, unstaged or untracked
    (ignored files excluded), sorted.

    Raises:
        GitError: ``repo`` is not a git working tree.
    """
    raw = git_bytes(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    paths: set[str] = set()
    fields = raw.split(b"\0")
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if len(entry) < 4:
            continue
        paths.add(entry[3:].decode("utf-8", "surrogateescape"))
        if entry[:1] in (b"R", b"C"):
            index += 1  # the rename's source path follows
    return sorted(paths)


def snapshot_worktree(repo: Path) -> str:
    """A commit (child of HEAD) holding the working tree as ``git add -A`` would stage it.

    Raises:
        GitError: not a git working tree, no HEAD commit, or git failed.
    """
    head = git(repo, "rev-parse", "--verify", "HEAD^{commit}").strip()
    with tempfile.TemporaryDirectory(prefix="oracle-gate-index-") as scratch:
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        git_bytes(repo, "read-tree", head, env=env)
        git_bytes(repo, "add", "-A", ".", env=env)
        tree = git_bytes(repo, "write-tree", env=env).decode().strip()
    message = b"oracle-gate: the working tree, uncommitted\n"
    return (
        git_bytes(repo, "commit-tree", tree, "-p", head, input=message, env=_IDENTITY)
        .decode()
        .strip()
    )
