"""Strings that name the machinery, its variables, the process or a fixture.

What it catches: a string (whatever expression folds to it: ``"py" + "test"``,
``"tset" "yp"[::-1]``, ``lanes/spellings.py``) that holds a word of the test or gate
machinery (``pytest``, ``conftest``, ``_getframe``, the package's ledger and lock files),
names a test variable (``PYTEST_CURRENT_TEST``, ``HYPOTHESIS_...``) or one of the
interpreter's or a session's that tells the sandbox (``PYTHONHASHSEED``, ``SSH_TTY``), a
path into the process's descriptors or memory (``/proc/self/fd``, ``/dev/fd/3``), or one
of the package's fixture paths.

Why: a string is how code asks ``os.environ`` or ``sys.modules`` about its runner, opens
the result pipe by its path, or reads the fixture a test answers from.

Example::

    import os

    def parse(text):
        strict = "PYTEST_CURRENT_TEST" in os.environ
        ...
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.lockfile import LOCK_FILE
from oracle_gate.lanes.tamper import sandbox
from oracle_gate.lanes.tamper.reader import Mark, Reader

__all__ = ["string_marks"]

# Words that name the machinery, in any string (case-insensitive).
_WORDS = (
    "pytest",
    "hypothesis",
    "unittest",
    "oracle_gate",
    "oracle-gate",
    "conftest",
    "_getframe",
    SEEDS_FILE,
    FREEZE_FILE,
    ASSUMPTIONS_FILE,
    LOCK_FILE,
    "invariants.yaml",
    "oracle_changelog",
)
# Paths into the process's own descriptors and memory.
_PROCESS_PATHS = re.compile(r"/proc(?:/|$)|/dev/fd(?:/|$)|^proc/?$")


def string_marks(reader: Reader, value: str | bytes) -> Iterator[Mark]:
    """``value``: what an expression folds to."""
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    lowered = text.lower()
    for word in _WORDS:
        if word.lower() in lowered:
            yield "name of test machinery", word
    if "PYTEST_" in text or "HYPOTHESIS_" in text:
        yield "test variable", text[:40]
    elif sandbox.TELL_VARIABLE.match(text) or text in sandbox.SESSION_VARIABLES:
        yield "sandbox tell", text[:40]
    if _PROCESS_PATHS.search(text):
        yield "process path", text[:40]
    for fixture in reader.fixtures:
        if fixture in text:
            yield "fixture path", fixture
