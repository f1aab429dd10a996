"""Differential test: the Rust and the Python surface extractors on real test suites.

Both implementations run over every ``test_*.py`` of the standard library's
own test suite, and over a pinned list that does not depend on what else is
installed: this repository's own test files, the surface corpus and the example
monorepo's tests. For every file both accept, the units must be identical; for
every file, the accept/reject decision must be the same. A
failure lists each file that differs, with its first differing unit.

How accept/reject is decided, since the two sides use different parsers:

- The native side asks ruff's parser for the syntax of the *running*
  interpreter (``sys.version_info`` is passed as ruff's target version) and
  refuses what ruff reports as unsupported for that version. So ``type X =
  int`` is refused under Python 3.11 by both sides and accepted by both under
  3.12, and a lockfile never depends on which backend wrote it.
- CPython's tokenizer limits that ruff lacks are mirrored on the native side:
  at most 200 open brackets, fewer than 100 indentation levels, decimal int
  literals no longer than ``sys.get_int_max_str_digits()``.
- Known gap, not exercised by real files: CPython refuses syntax trees deeper
  than about 3 x (recursion limit - caller's stack depth), a limit that moves
  with the call site; the native side refuses trees deeper than a fixed 2,800
  levels (``rust/src/surface/source.rs``), so a file nesting between the two
  is accepted by one side only.
- Messages (and for some errors the line) of rejected files may differ between
  the parsers (docs/surface.md §9); the test compares the decision, the error
  class and the path.

``KNOWN_DIFFERENCES`` lists files allowed to differ, each with its reason. It is
empty: the last run compared 560 standard-library files and 48 pinned files on
Python 3.11 with no difference.
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from backends import _native, needs_native
from oracle_gate import surface
from oracle_gate.errors import GateError

pytestmark = needs_native

Extract = Callable[[bytes, str], list[tuple[str, str]]]
Outcome = tuple[str, object]

# path suffix -> reason; see the module docstring.
KNOWN_DIFFERENCES: dict[str, str] = {}


def _stdlib_tests() -> list[str]:
    import test  # the standard library's own test package

    root = os.path.dirname(test.__file__)
    return sorted(glob.glob(os.path.join(root, "**", "test_*.py"), recursive=True))


PROJECT = Path(__file__).resolve().parents[2]
# Globs under the project root; each must match at least one file.
PINNED = (
    "tests/**/*.py",
    "tests/surface_corpus/*.py.txt",
    "python/oracle_gate/examples/monorepo/**/tests/*.py",
)


def _pinned_tests() -> list[str]:
    found: list[str] = []
    for pattern in PINNED:
        matched = sorted(str(p) for p in PROJECT.glob(pattern) if p.is_file())
        assert matched, f"pinned corpus glob {pattern!r} matches nothing"
        found += matched
    return found


def _outcome(extract: Extract, path: str) -> Outcome:
    data = Path(path).read_bytes()
    try:
        return ("accept", extract(data, path))
    except GateError as error:
        return ("reject", (type(error).__name__, error.path))


def _python_outcome(path: str) -> Outcome:
    return _outcome(surface.extract_units, path)


def _first_difference(python: object, native: object) -> str:
    py_units = dict(python)  # type: ignore[call-overload]
    rs_units = dict(native)  # type: ignore[call-overload]
    for key in sorted(py_units.keys() | rs_units.keys()):
        py_text, rs_text = py_units.get(key), rs_units.get(key)
        if py_text == rs_text:
            continue
        if py_text is None or rs_text is None:
            return f"unit {key!r} only in {'native' if py_text is None else 'python'}"
        py_lines, rs_lines = py_text.splitlines(), rs_text.splitlines()
        for i in range(max(len(py_lines), len(rs_lines))):
            a = py_lines[i] if i < len(py_lines) else "<none>"
            b = rs_lines[i] if i < len(rs_lines) else "<none>"
            if a != b:
                return f"unit {key!r} line {i + 1}:\n    python: {a[:400]}\n    native: {b[:400]}"
    return "units differ"


def _compare(files: list[str]) -> tuple[dict[str, int], list[str]]:
    assert _native is not None
    started = time.perf_counter()
    native = [_outcome(_native.extract_units, path) for path in files]
    native_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        python = list(pool.map(_python_outcome, files, chunksize=16))
    python_seconds = time.perf_counter() - started

    counts = {
        "files": len(files),
        "python_accepted": sum(o[0] == "accept" for o in python),
        "native_accepted": sum(o[0] == "accept" for o in native),
        "native_ms": round(native_seconds * 1000),
        "python_ms": round(python_seconds * 1000),
    }
    differences: list[str] = []
    for path, py, rs in zip(files, python, native, strict=True):
        if any(path.endswith(suffix) for suffix in KNOWN_DIFFERENCES):
            continue
        if py[0] != rs[0]:
            differences.append(f"{path}: python {py[0]}s {py[1]!r}, native {rs[0]}s {rs[1]!r}")
        elif py[0] == "reject" and py[1] != rs[1]:
            differences.append(f"{path}: rejected as {py[1]!r} by python, {rs[1]!r} by native")
        elif py[0] == "accept" and py[1] != rs[1]:
            differences.append(f"{path}: {_first_difference(py[1], rs[1])}")
    return counts, differences


@pytest.mark.parametrize("corpus", [_stdlib_tests, _pinned_tests], ids=["stdlib", "pinned"])
def test_native_and_python_extract_identical_units(
    corpus: Callable[[], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    files = corpus()
    if not files:
        pytest.skip("no test files found")
    counts, differences = _compare(files)
    with capsys.disabled():
        print(
            f"\nsurface differential ({corpus.__name__}): {counts}, differences={len(differences)}"
        )
    assert not differences, f"{len(differences)} of {len(files)} files differ:\n" + "\n".join(
        differences
    )
