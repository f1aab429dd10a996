"""The generated Starlark and rule docs match their sources (tools/bzlgen.py --check)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "bzlgen.py"


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


def test_a_drifted_schema_bzl_is_reported(tmp_path: Path) -> None:
    copy = tmp_path / "checkout"
    for name in ("tools", "rules", "python/oracle_gate", "docs"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("*.so", "examples"))
    schema = copy / "rules" / "private" / "schema.bzl"
    schema.write_text(schema.read_text().replace("has no globs", "lacks globs"))
    done = _check(copy)
    assert done.returncode == 1
    assert "rules/private/schema.bzl is stale" in done.stderr
