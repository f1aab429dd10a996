"""The base commit a merge queue is testing against, read from its environment."""

from __future__ import annotations

import json
from collections.abc import Mapping

from oracle_gate.errors import GitError

__all__ = ["base_from_environment"]


def _github_merge_group(env: Mapping[str, str]) -> str | None:
    if env.get("GITHUB_EVENT_NAME") != "merge_group" or not env.get("GITHUB_EVENT_PATH"):
        return None
    try:
        with open(env["GITHUB_EVENT_PATH"], encoding="utf-8") as handle:
            event = json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        raise GitError(
            f"cannot read the merge_group event ({error})", env["GITHUB_EVENT_PATH"]
        ) from error
    base = event.get("merge_group", {}).get("base_sha")
    if not isinstance(base, str) or not base:
        raise GitError("merge_group event has no merge_group.base_sha", env["GITHUB_EVENT_PATH"])
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
