"""Small git repositories built on demand for tests (never stored)."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from oracle_gate.cli import main
from oracle_gate.cli.demo import EXAMPLE
from oracle_gate.gate import check
from oracle_gate.locks import relock
from oracle_gate.report import Report

__all__ = [
    "TODAY",
    "GitRepo",
    "isolate_git",
    "leave_ci",
    "oracle_gate_on_path",
    "run",
    "run_measured",
]

TODAY = datetime.date(2026, 11, 30)


def isolate_git(patch: pytest.MonkeyPatch) -> None:
    """Commits that depend neither on the developer's git config nor on the clock."""
    patch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        patch.setenv(f"GIT_{who}_NAME", "t")
        patch.setenv(f"GIT_{who}_EMAIL", "t@example.com")
        patch.setenv(f"GIT_{who}_DATE", "2026-01-01T00:00:00Z")


def leave_ci(patch: pytest.MonkeyPatch) -> None:
    """The gate as outside CI: tests run under CI=true too, and test its CI refusals
    explicitly."""
    patch.delenv("CI", raising=False)
    patch.delenv("ORACLE_GATE_ROLE", raising=False)


def run(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m oracle_gate *args`` in a child process, with ``env`` added to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "oracle_gate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def run_measured(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``run``, and the child's own peak resident memory in KiB.

    ``os.wait4`` on the child gives its own peak; ``RUSAGE_CHILDREN`` would give the
    largest of every child the test process ever waited for, another test's included.
    A child still running at ``timeout`` is killed.
    """
    command = [sys.executable, "-m", "oracle_gate", *args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env or os.environ)
        # A watchdog, not a wait with a timeout: the child must stay unreaped until wait4.
        watchdog = threading.Timer(timeout, child.kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            watchdog.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    done = subprocess.CompletedProcess(command, child.returncode, stdout, stderr)
    return done, usage.ru_maxrss


def oracle_gate_on_path(bin_dir: Path) -> dict[str, str]:
    """The environment with an ``oracle-gate`` on PATH that runs this interpreter's
    oracle_gate, as shell recipes (README, CI jobs) call it."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "oracle-gate"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m oracle_gate "$@"\n')
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


class GitRepo:
    """A throwaway repository with fixed identity and dates, so SHAs are reproducible."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def init(cls, path: Path) -> GitRepo:
        path.mkdir(parents=True)
        repo = cls(path)
        repo.git("init", "-q", "-b", "main")
        return repo

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "commit.gpgsign=false", *args],
            cwd=self.path,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout

    def write(self, path: str, text: str | bytes) -> None:
        target = self.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)

    def read(self, path: str) -> str:
        return (self.path / path).read_text()

    def replace(self, path: str, old: str, new: str) -> None:
        text = self.read(path)
        assert old in text, f"{old!r} not in {path}"
        self.write(path, text.replace(old, new, 1))

    def append(self, path: str, text: str) -> None:
        self.write(path, self.read(path) + text)

    def remove(self, path: str) -> None:
        target = self.path / path
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()

    def commit_example(self, *packages: str) -> str:
        """Copy the example monorepo (or some of its packages) in and commit it."""
        sources = packages or ("",)
        for package in sources:
            shutil.copytree(
                EXAMPLE / package,
                self.path / package,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        return self.commit("example monorepo")

    def commit(
        self, message: str, trailers: dict[str, str] | None = None, signing_key: Path | None = None
    ) -> str:
        """Commit everything; with ``signing_key``, SSH-sign the commit with that private key."""
        body = message
        if trailers:
            body += "\n\n" + "\n".join(f"{key}: {value}" for key, value in trailers.items())
        self.git("add", "-A")
        options = ["commit", "-q", "--allow-empty", "--no-verify", "-m", body]
        if signing_key:
            self.git("-c", "gpg.format=ssh", "-c", f"user.signingkey={signing_key}", *options, "-S")
        else:
            self.git(*options)
        return self.git("rev-parse", "HEAD").strip()

    def gate(
        self, base: str, head: str = "HEAD", write_seeds: bool = False, replay: bool = True
    ) -> Report:
        """Run the gate from ``base`` to ``head`` as of TODAY.

        ``replay=False`` skips the trusted replay (the parent's tests run four
        times, most of a check's time). Only a test that asserts a finding is
        present, never a PASS nor an absence, may pass it: replay only adds
        findings, so it cannot make such an assertion true; test_replay.py
        covers replay itself.
        """
        return check(
            self.path, base=base, head=head, today=TODAY, write_seeds=write_seeds, replay=replay
        )

    def judge_paths(self, base: str, head: str = "HEAD") -> Report:
        """The gate without running rows: for tests that assert on path and package verdicts."""
        return check(self.path, base=base, head=head, today=TODAY, run_rows=False)

    def note(self, package: str, parent: str, *paths: str) -> None:
        """Add an ORACLE_CHANGELOG.md entry naming ``parent`` and ``paths`` (package-relative)."""
        lines = "".join(f"- {path}: changed on purpose, reviewed.\n" for path in paths)
        changelog = f"{package}/ORACLE_CHANGELOG.md"
        existing = self.read(changelog) if (self.path / changelog).exists() else ""
        self.write(changelog, f"{existing}\n## {parent[:12]}\n\n{lines}")

    def note_content(self, reason: str, *paths: str) -> None:
        """``oracle-gate note PATHS --reason REASON``: changelog lines with the paths' digests."""
        absolute = [str(self.path / path) for path in paths]
        assert main(["note", "--repo", str(self.path), *absolute, "--reason", reason]) == 0

    def relock(self, *packages: str) -> None:
        """What a human does after a reviewed oracle change: ``oracle-gate lock --write``."""
        relock(self.path, packages)
