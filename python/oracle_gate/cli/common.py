"""What every command shares: finding the repository, and the date freeze expiry is judged on."""

from __future__ import annotations

import datetime
from pathlib import Path

from oracle_gate.errors import ConfigError, GitError
from oracle_gate.repo.git import git

__all__ = ["repo_root", "today"]


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
