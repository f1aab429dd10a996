"""Terminal output: progress only on a TTY, colour only when asked or on a TTY without NO_COLOR."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import threading

import pytest

from gitrepo import GitRepo, run
from oracle_gate import progress
from oracle_gate.cli.terminal import colour_enabled, colour_verdicts

ANSI = re.compile(r"\033\[[0-9;]*m")
FIXTURE = "libs/intervals/testdata/ranges/unsorted.json"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _reject_and_refactor(repo: GitRepo) -> None:
    repo.write(FIXTURE, "[[0, 1]]\n")
    repo.replace("libs/intervals/intervals/__init__.py", "merged = []", "merged = list()")
    repo.commit("agent: a refactor and a fixture edit")


def test_color_always_paints_verdict_words_and_nothing_else(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _reject_and_refactor(repo)
    plain = run("check", "--repo", str(repo.path), "--base", base, "--color", "never").stdout
    painted = run("check", "--repo", str(repo.path), "--base", base, "--color", "always").stdout
    assert ANSI.search(plain) is None
    assert "\033[1;31mREJECT\033[0m" in painted
    assert "\033[1;31mreject\033[0m" in painted  # the path row of the fixture
    assert ANSI.sub("", painted) == plain


def test_color_auto_is_off_in_a_pipe_and_json_is_never_painted(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    _reject_and_refactor(repo)
    done = run("check", "--repo", str(repo.path), "--base", base)
    assert done.returncode == 1 and ANSI.search(done.stdout) is None
    json_out = run("check", "--repo", str(repo.path), "--base", base, "--format", "json",
                   "--color", "always").stdout  # fmt: skip
    assert ANSI.search(json_out) is None


def test_no_color_and_dumb_terminals_turn_auto_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert colour_enabled("auto", _Tty()) is True
    assert colour_enabled("auto", io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert colour_enabled("auto", _Tty()) is False
    assert colour_enabled("always", io.StringIO()) is True  # the flag wins over NO_COLOR
    monkeypatch.setenv("NO_COLOR", "")
    monkeypatch.setenv("TERM", "dumb")
    assert colour_enabled("auto", _Tty()) is False
    assert colour_enabled("never", _Tty()) is False


def test_painting_never_touches_a_path_or_reason_that_contains_a_verdict_word() -> None:
    text = (
        "libs/pass/reject.py          production         pass\n"
        "REJECT             libs/pass/reject.py: the pass rejects a merge\n"
        "verdict: REJECT (1 pass, 1 reject)\n"
    )
    painted = colour_verdicts(text)
    assert ANSI.sub("", painted) == text
    assert "libs/pass/reject.py" in painted and "the pass rejects a merge" in painted
    assert painted.count("\033[") == 6  # three words painted, each opened and reset


def test_progress_is_silent_without_a_tty(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _reject_and_refactor(repo)
    done = run("check", "--repo", str(repo.path), "--base", base)
    assert done.stderr == ""


def test_progress_is_drawn_on_a_tty(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _reject_and_refactor(repo)
    leader, follower = pty.openpty()
    drawn = bytearray()

    def drain() -> None:
        # Read while the child draws: a full pty buffer would block it.
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                return
            if not chunk:
                return
            drawn.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    command = [
        sys.executable,
        "-m",
        "oracle_gate",
        "check",
        "--repo",
        str(repo.path),
        "--base",
        base,
    ]
    try:
        done = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=follower,
            env={**os.environ, "TERM": "xterm", "COLUMNS": "120"},
            timeout=300,
            check=False,
        )
    finally:
        os.close(follower)
        reader.join(timeout=10)
        os.close(leader)
    assert done.returncode == 1
    text = bytes(drawn).decode("utf-8", "replace")
    assert "reading both trees and package graphs" in text
    assert "running rows" in text
    assert ANSI.search(done.stdout.decode()) is None  # stdout is a pipe: no colour


def test_stages_report_to_the_installed_reporter_only() -> None:
    seen: list[str] = []

    class Recorder:
        def start(self, name: str, total: int | None) -> None:
            seen.append(f"start {name} {total}")

        def advance(self) -> None:
            seen.append("advance")

        def finish(self) -> None:
            seen.append("finish")

    assert list(progress.steps("quiet", [1, 2])) == [1, 2]  # no reporter: nothing recorded
    with progress.installed(Recorder()):
        assert list(progress.steps("rows", ["a", "b"])) == ["a", "b"]
    assert seen == ["start rows 2", "advance", "advance", "finish"]
