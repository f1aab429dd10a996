"""What every command shares: finding the repository, and the date freeze expiry is judged on."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from oracle_gate.errors import ConfigError, GitError, RefusedError
from oracle_gate.repo.git import git

__all__ = ["keep_until_exit", "refuse_unless_human", "repo_root", "today"]

# What the last command read, kept alive: ``entry`` ends the process with ``os._exit``,
# so a monorepo's graphs (millions of objects) are never freed one by one.
_kept: list[object] = []


def repo_root(given: str | None) -> Path:
    """The repository's top directory: ``--repo`` as given, else git's, else the current one."""
    if given:
        if not Path(given).is_dir():
            raise ConfigError("repository directory does not exist", given)
        return Path(given).resolve()
    try:
        return Path(git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    except GitError:
        return Path.cwd()


def today(value: str | None) -> datetime.date:
    if value is None:
        return datetime.date.today()
    try:
        return datetime.date.fromisoformat(value)
    except ValueError as error:
        raise ConfigError(f"--today must be a YYYY-MM-DD date, found {value!r}") from error


def refuse_unless_human(command: str) -> None:
    """Refuse a command that moves the oracle where CI is set or for an agent.

    This is a guard rail, not the defence: an agent could edit the file by hand,
    and the gate's lanes judge every such edit in the patch anyway.

    Raises:
        RefusedError: ``CI`` is set, or ``ORACLE_GATE_ROLE=agent``.
    """
    if os.environ.get("CI"):
        raise RefusedError(f"{command} is refused where CI is set: the oracle is moved by humans")
    if os.environ.get("ORACLE_GATE_ROLE") == "agent":
        raise RefusedError(
            f"{command} is refused for ORACLE_GATE_ROLE=agent: "
            "the oracle is not the agent's to move"
        )


def keep_until_exit(value: object) -> None:
    """Keep ``value`` (and nothing an earlier command kept) until the process ends."""
    _kept[:] = [value]
