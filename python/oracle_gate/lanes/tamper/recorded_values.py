"""Recorded values: an answer from memory to a case the gate knows.

What it catches: an expression whose value (folded whatever its spelling:
``lanes/spellings.py``) is one the package records, compared by value
(``lanes/recorded.py``): a seed input of its ledger, a case a test or an oracle module
hands the code, a fixture's input or expected output (``collection.py`` gathers them); also
the value's printed form (``repr(ranges) == "[[0, 10], [2, 3]]"``) and a digest of it
(``hashlib.sha256(...).hexdigest() == "..."``, ``hash(...) == ...``).

Why: code that answers the inputs the oracles use from memory passes them while broken
everywhere else.

Example::

    def merge_ranges(ranges):
        if ranges == [[0, 10], [2, 3], [4, 12]]:  # a fixture's case
            return [[0, 12]]
        return ranges
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator

from oracle_gate.lanes.spellings import NOTHING
from oracle_gate.lanes.tamper.reader import Mark, Reader

__all__ = ["value_marks"]


def value_marks(reader: Reader, value: object) -> Iterator[Mark]:
    """A recorded value that ``value`` (what an expression folds to) is, prints or
    digests."""
    if not reader.known or value is NOTHING or value is None or isinstance(value, bool):
        return
    found = reader.known.kind_of(value)
    if found is None and isinstance(value, str):
        # str(ranges) == "[[0, 10], [2, 3]]": the value's printed form, as a string
        printed = _printed(value)
        found = reader.known.kind_of(printed) if printed is not value else None
    found = found or reader.known.digest_in(value)
    if found is not None:
        yield found[0], found[1][:60]


def _printed(text: str) -> object:
    """What a string that prints a value (``str([[0, 1]])``, ``json.dumps``) holds, else
    the string itself."""
    try:
        return ast.literal_eval(text) if text[:1] in "[({" else json.loads(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
