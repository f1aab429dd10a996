"""The base commit a merge queue is testing against, read from its environment."""

from __future__ import annotations

import json
from collections.abc import Mapping

from oracle_gate.errors import GitError

__all__ = ["base_from_environment"]


# A merge_group event is a few kilobytes; anything far larger is not one.
_MAX_EVENT_BYTES = 1024 * 1024


def _read_event(path: str) -> dict[str, object]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_EVENT_BYTES + 1)
    except OSError as error:
        raise GitError(f"cannot read the merge_group event ({error.strerror})", path) from None
    if len(data) > _MAX_EVENT_BYTES:
        raise GitError("merge_group event file is larger than 1 MiB", path)
    try:
        event = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise GitError("merge_group event file is not valid UTF-8", path, line) from None
    except json.JSONDecodeError as error:
        raise GitError(
            f"merge_group event file is not valid JSON: {error.msg}", path, error.lineno
        ) from None
    except (ValueError, RecursionError):
        raise GitError("merge_group event file is not JSON the gate can read", path) from None
    if not isinstance(event, dict):
        raise GitError(
            f"merge_group event must be a JSON object, found {type(event).__name__}", path, 1
        )
    return event


def _github_merge_group(env: Mapping[str, str]) -> str | None:
    if env.get("GITHUB_EVENT_NAME") != "merge_group":
        return None
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        raise GitError(
            "GITHUB_EVENT_NAME is merge_group but GITHUB_EVENT_PATH is not set, so the merge "
            "group's base is unknown; pass --base REF"
        )
    group = _read_event(path).get("merge_group")
    base = group.get("base_sha") if isinstance(group, dict) else None
    if not isinstance(base, str) or not base:
        raise GitError("merge_group event has no merge_group.base_sha", path)
    return base


def base_from_environment(env: Mapping[str, str]) -> str:
    """The base SHA of a GitHub merge group or a GitLab merge train / merge request.

    Never guesses: with none of those environments present it raises.

    Raises:
        GitError: no merge-queue environment names a base.
    """
    github = _github_merge_group(env)
    if github:
        return github
    for name in ("CI_MERGE_REQUEST_DIFF_BASE_SHA", "CI_MERGE_REQUEST_TARGET_BRANCH_SHA"):
        if env.get(name):
            return env[name]
    raise GitError(
        "no --base given and no merge-queue environment found (GitHub merge_group event, "
        "GitLab CI_MERGE_REQUEST_DIFF_BASE_SHA); pass --base REF"
    )
