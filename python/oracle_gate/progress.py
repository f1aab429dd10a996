"""Progress of the long stages (graph read, rows run): the library reports, the CLI draws.

The library calls ``stage(name, total)`` and ``advance()``. Nothing is drawn
unless the command line installed a reporter, which it does only when stderr is
a terminal, so pipes, CI logs and library callers see no output at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

__all__ = ["Reporter", "advance", "installed", "stage", "steps"]


class Reporter(Protocol):
    def start(self, name: str, total: int | None) -> None: ...

    def advance(self) -> None: ...

    def finish(self) -> None: ...


T = TypeVar("T")

# One reporter per process: progress is a property of the terminal, not of a call.
_reporters: list[Reporter] = []


@contextmanager
def installed(reporter: Reporter) -> Iterator[None]:
    """Report every stage to ``reporter`` while the block runs."""
    _reporters.append(reporter)
    try:
        yield
    finally:
        _reporters.remove(reporter)


@contextmanager
def stage(name: str, total: int | None = None) -> Iterator[None]:
    """A long stage: ``total`` steps (each ``advance()``), or None for a spinner."""
    if not _reporters:
        yield
        return
    reporter = _reporters[-1]
    reporter.start(name, total)
    try:
        yield
    finally:
        reporter.finish()


def advance() -> None:
    """One step of the innermost stage is done."""
    if _reporters:
        _reporters[-1].advance()


def steps(name: str, items: Iterable[T]) -> Iterator[T]:
    """Each item of ``items`` as one step of a stage named ``name``."""
    collected = list(items)
    with stage(name, len(collected)):
        for item in collected:
            yield item
            advance()
