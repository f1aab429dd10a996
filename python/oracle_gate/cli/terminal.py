"""What a terminal gets and a pipe does not: progress bars (drawn with rich) and colour.

Progress goes to stderr and only when stderr is a TTY. Colour follows
``--color``: ``always``, ``never``, or ``auto`` (stdout is a TTY, ``NO_COLOR``
is unset or empty, ``TERM`` is not ``dumb``), so the report's bytes in a pipe
or a file never change.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from oracle_gate import progress

__all__ = ["COLOR_CHOICES", "colour_enabled", "colour_verdicts", "progress_on_tty", "styled"]

COLOR_CHOICES = ("auto", "always", "never")
_RESET = "\033[0m"
_COLOURS = {
    "reject": "\033[1;31m",
    "pass": "\033[32m",
    "merge": "\033[1;32m",
    "human_noted": "\033[33m",
    "preexisting": "\033[35m",
    "ignored_as_oracle": "\033[36m",
}
# A verdict word where the text format prints one: the last column of a path row,
# the first word of a finding line, and the final "verdict:" line.
_VERDICT = re.compile(
    r"(?<![\w/.-])(" + "|".join(sorted(_COLOURS, key=len, reverse=True)) + r")(?![\w/.-])",
    re.IGNORECASE,
)


def colour_enabled(choice: str, stream: TextIO) -> bool:
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return stream.isatty()


def _paint(line: str) -> str:
    def paint(found: re.Match[str]) -> str:
        return f"{_COLOURS[found.group(1).lower()]}{found.group(1)}{_RESET}"

    if line.startswith("verdict: "):
        return "verdict: " + _VERDICT.sub(paint, line[len("verdict: ") :], count=1)
    head, space, rest = line.partition(" ")
    if head.lower() in _COLOURS:  # a finding line: "REJECT   path: reason"
        return _VERDICT.sub(paint, head) + space + rest
    body, gap, last = line.rpartition(" ")
    if gap and last.lower() in _COLOURS:  # a path row: "path  lane  verdict"
        return body + gap + _VERDICT.sub(paint, last)
    return line


def colour_verdicts(text: str) -> str:
    """``text`` (the text report) with each verdict word coloured; paths and reasons untouched."""
    return "\n".join(_paint(line) for line in text.split("\n"))


def styled(text: str, format: str, choice: str) -> str:
    """The text report coloured for stdout when ``--color`` says so; other formats as they are."""
    if format == "text" and colour_enabled(choice, sys.stdout):
        return colour_verdicts(text)
    return text


class _RichReporter:
    def __init__(self, bars: Progress) -> None:
        self.bars = bars
        self.tasks: list[TaskID] = []

    def start(self, name: str, total: int | None) -> None:
        self.tasks.append(self.bars.add_task(name, total=total))

    def advance(self) -> None:
        if self.tasks:
            self.bars.advance(self.tasks[-1])

    def finish(self) -> None:
        self.bars.remove_task(self.tasks.pop())


@contextmanager
def progress_on_tty(stream: TextIO = sys.stderr) -> Iterator[None]:
    """Draw the library's stages as rich progress bars on ``stream`` if it is a terminal."""
    if not stream.isatty():
        yield
        return
    bars = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(file=stream),
        transient=True,
    )
    with bars, progress.installed(_RichReporter(bars)):
        yield
