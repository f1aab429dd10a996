"""Assertion-surface benchmark: native (parallel) vs Python fallback vs a textbook script.

Run: ``python bench/run.py surface`` (``--runs 3`` for a quicker run).

The corpus is every ``test_*.py`` of the standard library's own test suite
(``python -c "import test, os; print(os.path.dirname(test.__file__))"``), read
into memory once, so only extraction is timed. Files either extractor rejects
are left out (and counted), because a batch stops at its first error.

Contenders, each timed in this process on the same in-memory files:

- native: ``_native.extract_units_many`` over all files in one call (parallel,
  GIL released);
- native, one file per call: ``_native.extract_units`` in a loop (the cost
  without parallelism, for reference);
- python: ``oracle_gate.surface.extract_units`` in a loop (the fallback, one
  process);
- textbook: ``ast.parse`` + ``ast.walk``, hashing ``ast.dump`` of every
  ``assert`` (what a straightforward script would do).

Each row is the median of ``--runs`` runs after one warm-up run. Native and
Python output must be identical, or the benchmark fails (exit 1). Targets (issue
4): native >= 8x the textbook script and >= 4x the Python fallback.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from common import median_seconds

Items = list[tuple[bytes, str]]
TARGET_VS_TEXTBOOK = 8.0
TARGET_VS_PYTHON = 4.0


def stdlib_tests() -> list[Path]:
    import test  # the standard library's own test package

    root = Path(test.__file__).resolve().parent
    return sorted(root.rglob("test_*.py"))


def textbook(items: Items) -> list[list[str]]:
    """The straightforward approach: parse, walk, hash each assert's ``ast.dump``."""
    out = []
    for data, path in items:
        tree = ast.parse(data, filename=path)
        out.append(
            [
                hashlib.sha256(ast.dump(node).encode()).hexdigest()
                for node in ast.walk(tree)
                if isinstance(node, ast.Assert)
            ]
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/run.py surface", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per contender")
    args = parser.parse_args(argv)

    from oracle_gate import surface
    from oracle_gate.errors import SurfaceError

    try:
        from oracle_gate import _native
    except ImportError:
        print("bench surface: the native extension is not built ('pip install -e .')")
        return 2

    items: Items = []
    rejected = []
    for path in stdlib_tests():
        data = path.read_bytes()
        try:
            surface.extract_units(data, str(path))
            _native.extract_units(data, str(path))
        except SurfaceError as error:
            rejected.append(f"{path.name}: {error.message}")
            continue
        items.append((data, str(path)))
    megabytes = sum(len(data) for data, _ in items) / 1e6

    native_out = _native.extract_units_many(items)
    python_out = [surface.extract_units(data, path) for data, path in items]
    if native_out != python_out:
        differing = [
            p for (_, p), a, b in zip(items, native_out, python_out, strict=True) if a != b
        ]
        print(f"bench surface: native and python differ on {len(differing)} files: {differing[:5]}")
        return 1

    contenders: list[tuple[str, Callable[[], object]]] = [
        ("native (parallel, one call)", lambda: _native.extract_units_many(items)),
        ("native (one file per call)", lambda: [_native.extract_units(d, p) for d, p in items]),
        ("python fallback (1 process)", lambda: [surface.extract_units(d, p) for d, p in items]),
        ("textbook ast.parse + ast.walk", lambda: textbook(items)),
    ]
    seconds = {name: median_seconds(args.runs, run)[0] for name, run in contenders}

    print(
        f"\nassertion surface: {len(items)} files, {megabytes:.1f} MB "
        f"(stdlib test suite, {len(rejected)} rejected by both and left out), "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"median of {args.runs} runs after a warm-up"
    )
    native = seconds[contenders[0][0]]
    print(f"{'contender':32} {'seconds':>9} {'files/s':>9} {'MB/s':>8} {'native is':>10}")
    for name, _ in contenders:
        s = seconds[name]
        print(f"{name:32} {s:9.3f} {len(items) / s:9.0f} {megabytes / s:8.1f} {s / native:9.1f}x")
    vs_textbook = seconds[contenders[3][0]] / native
    vs_python = seconds[contenders[2][0]] / native
    print(
        f"targets: >= {TARGET_VS_TEXTBOOK:.0f}x textbook: {vs_textbook:.1f}x "
        f"({'met' if vs_textbook >= TARGET_VS_TEXTBOOK else 'MISSED'}); "
        f">= {TARGET_VS_PYTHON:.0f}x python fallback: {vs_python:.1f}x "
        f"({'met' if vs_python >= TARGET_VS_PYTHON else 'MISSED'})"
    )
    print("native and python output identical: yes")
    # A missed target is reported above, not turned into a failure: timings vary by machine.
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
