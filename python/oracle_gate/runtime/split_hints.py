"""What earlier checks learnt of a package's split run: that, split from the code, its
parent's tests do not fit the replay's budget.

The replay runs the tests it must run again split from the code, and in one process
what the split cannot hold (``runtime/replay.py``). A suite whose tests make hundreds of
thousands of calls into production (more-itertools) never fits the budget split: each
check that reaches most of it would spend the budget twice (the split beside the head's
run, then the parent's alone) to learn that again, and then run the tests in one process
all the same. So the user cache keeps the observation, per package and parent test side
(their blob ids, with the gate's code and the interpreter), for a week: a later check
that runs at least as many of those tests within no larger a budget goes to the
one-process run at once, as the split's timeout would have sent it.

A hint decides only how fast the same answer comes: without it the check takes the
same path after the budget runs out twice. A hint that cannot be read is no hint.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from blake3 import blake3

from oracle_gate.repo.cache import cache_home

__all__ = ["SplitHints", "hint_key"]

# How long an observation stands: the suite's calls change slowly, the machine may not.
_VALID_SECONDS = 7 * 24 * 3600


def hint_key(package: str, material: dict[str, object]) -> str:
    """The hint's key: the package and ``material``, the baseline's key material
    (``runtime/baseline.key_material``) with the parent's test side for its files."""
    text = json.dumps({"package": package, "material": material}, sort_keys=True)
    return blake3(text.encode()).hexdigest()


@dataclass(frozen=True)
class SplitHints:
    """The hints in the user cache (``None``: none kept, as in tests that isolate it)."""

    directory: Path | None = field(
        default_factory=lambda: cache_home() / "oracle-gate" / "split-hints"
    )

    def too_slow(self, key: str, tests: int | None, budget: float) -> bool:
        """Whether a split run of ``tests`` of them (None: all) within ``budget`` seconds
        is known not to fit."""
        hint = self._read(key)
        if hint is None or time.time() - hint.at > _VALID_SECONDS or budget > hint.budget:
            return False
        return tests is None if hint.tests is None else (tests is None or tests >= hint.tests)

    def remember(self, key: str, tests: int | None, budget: float) -> None:
        """Keep that ``tests`` of them (None: all) did not fit ``budget`` split; a cache
        that cannot take it loses only the time it would save."""
        if self.directory is None:
            return
        entry = {"tests": tests, "budget": budget, "at": time.time()}
        with contextlib.suppress(OSError):
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".hint-")
            with os.fdopen(handle, "w") as file:
                json.dump(entry, file)
            os.replace(temporary, self.directory / f"{key}.json")

    def _read(self, key: str) -> _Hint | None:
        if self.directory is None:
            return None
        try:
            entry = json.loads((self.directory / f"{key}.json").read_text())
            hint = _Hint(entry["tests"], float(entry["budget"]), float(entry["at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return hint if hint.tests is None or isinstance(hint.tests, int) else None


@dataclass(frozen=True)
class _Hint:
    tests: int | None  # how many of the tests ran split (None: all)
    budget: float  # within how many seconds
    at: float  # when it was seen (seconds since the epoch)
