"""The generated Starlark and rule docs match their sources (tools/bzlgen.py --check)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "tools" / "bzlgen.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_generated_files_are_current() -> None:
    done = _check(ROOT)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("edited", "old", "new", "stale"),
    [
        # The Starlark copy of the schema edited by hand.
        ("rules/private/schema.bzl", "has no globs", "lacks globs", "rules/private/schema.bzl"),
        # A message changed in Python but not regenerated.
        (
            "python/oracle_gate/config/schema.py",
            "has no globs",
            "lacks globs",
            "rules/private/schema.bzl",
        ),
        # A rule's documentation changed without regenerating docs/rules.md.
        (
            "rules/private/gate.bzl",
            "Declares a package's invariant matrix",
            "Declares the invariant matrix",
            "docs/rules.md",
        ),
        ("rules/python.bzl", 'default = "python3"', 'default = "python"', "docs/rules.md"),
        # The Rust copy of the shared tables edited by hand.
        (
            "rust/src/starlark/tables.rs",
            '("seeds", "seeds.jsonl")',
            '("seeds", "seeds.json")',
            "rust/src/starlark/tables.rs",
        ),
        # A table of the Python reader changed but not regenerated.
        (
            "python/oracle_gate/bazel/read/tables.py",
            '{"name", "tags", "licenses"}',
            '{"name", "tags"}',
            "rust/src/starlark/tables.rs",
        ),
        # The Rust copy of the string methods edited by hand.
        (
            "rust/src/starlark/tables.rs",
            '    "removeprefix",\n',
            "",
            "rust/src/starlark/tables.rs",
        ),
        (
            "rust/src/starlark/tables.rs",
            '"rfind",\n    "rindex",\n    "startswith",',
            '"rfind",\n    "startswith",',
            "rust/src/starlark/tables.rs",
        ),
        # A string method the Python reader computes added, or one it bounds dropped,
        # but not regenerated.
        (
            "python/oracle_gate/bazel/read/tables.py",
            '"rsplit", "partition"',
            '"rsplit", "rsplit_all", "partition"',
            "rust/src/starlark/tables.rs",
        ),
        (
            "python/oracle_gate/bazel/read/tables.py",
            '"rfind", "index", "rindex", "count"}',
            '"rfind", "index", "rindex"}',
            "rust/src/starlark/tables.rs",
        ),
        # A budget default changed in Python only.
        (
            "python/oracle_gate/model.py",
            "seconds: float = 20.0",
            "seconds: float = 30.0",
            "rust/src/starlark/tables.rs",
        ),
    ],
)
def test_a_drift_is_reported(tmp_path: Path, edited: str, old: str, new: str, stale: str) -> None:
    copy = tmp_path / "checkout"
    for name in ("tools", "rules", "python/oracle_gate", "docs", "rust/src/starlark"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("*.so", "examples"))
    path = copy / edited
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    done = _check(copy)
    assert done.returncode == 1
    assert f"{stale} is stale" in done.stderr
