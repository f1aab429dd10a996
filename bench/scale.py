"""Scale: many fixtures in one package, many rows in one repository.

``python bench/run.py scale`` builds two git repositories in a temporary directory and
prints, measured side by side in one run:

- ``--fixtures N`` (default 100,000) JSON fixtures in one package: ``lock --write`` of
  the package, then ``check --no-replay`` of a one-line patch of its code, and their
  ratio (the goal: check within 3x of lock);
- ``--rows N`` (default 10,000) rows in one package, each guarding a module of its own:
  ``check --no-replay`` of a patch of one module (one row selected) and of ten modules
  (ten rows), against the same patch with 100 rows in all: a check must grow with the
  rows it selects, not with all rows.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from common import commit_id

_IDENTITY = ["-c", "user.email=bench@example.com", "-c", "user.name=bench"]
_LEDGERS = {"seeds.jsonl": "", "assumptions.yaml": "", "flake_freeze.yaml": "frozen: []\n"}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *_IDENTITY, *args], cwd=root, check=True, capture_output=True)


def _gate(root: Path, *args: str) -> float:
    """Seconds ``oracle-gate`` took; a failure stops the benchmark with its output."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "oracle_gate", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "XDG_CACHE_HOME": str(root.parent / "cache")},
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"oracle-gate {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return seconds


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _package(root: Path, matrix: str, files: dict[str, str]) -> None:
    """A committed, locked package ``pkg`` in a new repository at ``root``."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    _write(root, {"pkg/invariants.yaml": matrix, **{f"pkg/{k}": v for k, v in _LEDGERS.items()}})
    _write(root, files)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "package")


def _patched(root: Path, paths: list[str]) -> None:
    for path in paths:
        target = root / path
        target.write_text(target.read_text().replace("2 * x", "x + x"))
    _git(root, "commit", "-q", "-am", f"patch {len(paths)} module(s)")


def fixtures(where: Path, count: int) -> str:
    root = where / "fixtures"
    matrix = (
        'version: 1\nfixtures: ["testdata/**"]\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
        '    fixtures: ["testdata/cases/"]\n    budget: {seconds: 10}\n'
    )
    files = {
        f"pkg/testdata/cases/{i // 1000:03d}/c{i}.json": f'{{"input": {i}, "expected": {2 * i}}}\n'
        for i in range(count)
    }
    _package(root, matrix, {"pkg/mod.py": "def double(x):\n    return 2 * x\n", **files})
    lock = _gate(root, "lock", "--write", "pkg")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "lock")
    _patched(root, ["pkg/mod.py"])
    check = _gate(root, "check", "--base", "HEAD~1", "--no-replay")
    return (
        f"{count} fixtures: lock --write {lock:.1f} s, check --no-replay of a one-line patch "
        f"{check:.1f} s: {check / lock:.2f}x lock (goal 3x)"
    )


def _rows_repository(where: Path, count: int) -> Path:
    root = where / f"rows-{count}"
    rows = "".join(
        f'  - id: r{i}\n    globs: ["m/m{i}.py"]\n    budget: {{seconds: 10}}\n'
        for i in range(count)
    )
    modules = {f"pkg/m/m{i}.py": "def double(x):\n    return 2 * x\n" for i in range(count)}
    _package(root, f"version: 1\nrows:\n{rows}", modules)
    _gate(root, "lock", "--write", "pkg")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "lock")
    return root


def _rows_check(root: Path, touched: int) -> float:
    _git(root, "checkout", "-q", "-B", f"touch-{touched}", "main")
    _patched(root, [f"pkg/m/m{i}.py" for i in range(touched)])
    return _gate(root, "check", "--base", "main", "--no-replay")


def rows(where: Path, count: int) -> list[str]:
    small, large = _rows_repository(where, 100), _rows_repository(where, count)
    found = []
    for touched in (1, 10):
        few, many = _rows_check(small, touched), _rows_check(large, touched)
        found.append(
            f"{touched} row(s) selected: {few:.1f} s of 100 rows, {many:.1f} s of {count} rows: "
            f"{many / few:.2f}x for {count // 100}x the rows"
        )
    return found


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="run.py scale", description=__doc__)
    parser.add_argument("--fixtures", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args(argv)
    print(f"scale bench at {commit_id()}")
    with tempfile.TemporaryDirectory(prefix="oracle-gate-scale-", dir="/var/tmp") as scratch:
        print(fixtures(Path(scratch), args.fixtures), flush=True)
        for line in rows(Path(scratch), args.rows):
            print(line, flush=True)
    return 0
