"""Read what a patch changed from git objects: paths, kinds, renames and commit trailers."""

from __future__ import annotations

from pathlib import Path

from oracle_gate.errors import GitError
from oracle_gate.model import Change, ChangeKind, Commit, Diff
from oracle_gate.repo.git import git, git_bytes

__all__ = ["read_diff", "resolve_commit"]

_KINDS = {"A": ChangeKind.ADDED, "M": ChangeKind.MODIFIED, "D": ChangeKind.DELETED}
# The mode git gives a submodule: a commit of another repository, not a file.
_GITLINK = "160000"
_FIELD_END = "\x1f"
_RECORD_END = "\x1e"


def _is_shallow(repo: Path) -> bool:
    return git(repo, "rev-parse", "--is-shallow-repository").strip() == "true"


def resolve_commit(repo: Path, ref: str) -> str:
    """The full SHA of ``ref``.

    Raises:
        GitError: the ref does not resolve; in a shallow clone the message says
            how to fetch the missing history.
    """
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except GitError:
        if _is_shallow(repo):
            raise GitError(
                f"'{ref}' is not in this shallow clone; fetch it first "
                "(git fetch --deepen=50, or git fetch --unshallow)",
                str(repo),
            ) from None
        raise GitError(f"'{ref}' does not name a commit", str(repo)) from None


def _parent_of(repo: Path, base: str, head: str) -> str:
    """The last trusted commit: where ``head`` left ``base``'s history."""
    try:
        return git(repo, "merge-base", base, head).strip()
    except GitError:
        hint = (
            "; the clone is shallow, run git fetch --deepen=50 (or --unshallow)"
            if _is_shallow(repo)
            else ""
        )
        raise GitError(f"{base[:12]} and {head[:12]} share no history{hint}", str(repo)) from None


def _changes(repo: Path, parent: str, head: str) -> tuple[Change, ...]:
    raw = git_bytes(
        repo, "diff", "--raw", "-z", "-M", "--no-ext-diff", "--no-textconv", parent, head
    )
    fields = [field.decode("utf-8", "surrogateescape") for field in raw.split(b"\0")]
    changes: list[Change] = []
    index = 0
    while index < len(fields) and fields[index]:
        # ":<old mode> <new mode> <old id> <new id> <status>", then the path(s)
        old_mode, new_mode, _, _, status = fields[index].lstrip(":").split(" ")
        submodule = _GITLINK in (old_mode, new_mode)
        if status.startswith(("R", "C")):
            old, new = fields[index + 1], fields[index + 2]
            index += 3
            if status.startswith("R"):
                changes.append(Change(new, ChangeKind.RENAMED, old, submodule))
            else:
                changes.append(Change(new, ChangeKind.ADDED, submodule=submodule))
            continue
        path = fields[index + 1]
        index += 2
        # T (type change) and anything unusual is a modification: fail closed.
        kind = _KINDS.get(status[0], ChangeKind.MODIFIED)
        changes.append(Change(path, kind, submodule=submodule))
    return tuple(sorted(changes, key=lambda change: change.path))


def _trailers(block: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for line in block.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


def _commits(repo: Path, parent: str, head: str) -> tuple[Commit, ...]:
    log = git(
        repo,
        "log",
        f"--format=%H{_FIELD_END}%(trailers:only,unfold){_RECORD_END}",
        f"{parent}..{head}",
    )
    commits = []
    for record in log.split(_RECORD_END):
        if not record.strip():
            continue
        sha, _, block = record.strip("\n").partition(_FIELD_END)
        commits.append(Commit(sha=sha.strip(), trailers=_trailers(block)))
    return tuple(commits)


def read_diff(repo: Path, base: str, head: str) -> Diff:
    """The patch from ``base`` (last trusted commit) to ``head``.

    Raises:
        GitError: a ref does not resolve, history is shallow, git failed, or
            ``head`` is a proper ancestor of ``base`` (swapped refs).
    """
    base_sha = resolve_commit(repo, base)
    head_sha = resolve_commit(repo, head)
    parent = _parent_of(repo, base_sha, head_sha)
    if parent == head_sha != base_sha:
        # Swapped refs would otherwise be an empty patch: a merge by accident.
        raise GitError(
            f"--head {head} ({head_sha[:12]}) is an ancestor of --base {base} "
            f"({base_sha[:12]}): there is no patch to judge; are --base and --head swapped?",
            str(repo),
        )
    return Diff(
        base=parent,
        head=head_sha,
        changes=_changes(repo, parent, head_sha),
        commits=_commits(repo, parent, head_sha),
    )
