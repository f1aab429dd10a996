"""Shared fixtures: isolated git repositories, a fixed date, and each backend in turn."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from backends import BACKENDS, backend_id
from gitrepo import GitRepo, isolate_git, leave_ci


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """An empty repository whose commits do not depend on the developer's git config."""
    isolate_git(monkeypatch)
    return GitRepo.init(tmp_path / "repo")


@pytest.fixture
def repo_outside_tmp(repo: GitRepo) -> Iterator[GitRepo]:
    """``repo``'s settings, but in /var/tmp: bubblewrap's private /tmp does not hide it,
    as it does not hide a user's repository."""
    path = Path(tempfile.mkdtemp(prefix="oracle-gate-test-", dir="/var/tmp"))
    try:
        yield GitRepo.init(path / "repo")
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def example_repo(repo: GitRepo) -> tuple[GitRepo, str]:
    """The example monorepo committed as the trusted parent; returns (repo, parent sha)."""
    return repo, repo.commit_example()


@pytest.fixture(params=BACKENDS, ids=backend_id)
def impl(request: pytest.FixtureRequest) -> ModuleType:
    """Each backend in turn (test_surface.py has its own ``impl``, over extractors)."""
    module: ModuleType = request.param
    return module


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's cache (health log, stat cache) goes to the test's own directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run under CI=true too; the gate's CI refusals are tested explicitly."""
    leave_ci(monkeypatch)
