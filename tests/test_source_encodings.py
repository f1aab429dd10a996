"""Test files are decoded exactly as Python decodes them (docs/surface.md §2), in both backends."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from backends import needs_native
from gitrepo import GitRepo, run
from oracle_gate import surface
from oracle_gate.errors import SurfaceError
from oracle_gate.model import Verdict

MATRIX = 'version: 1\nowners: ["@core"]\ntests: ["tests/**/*.py"]\nrows: []\n'


def _stdlib_files_declaring_an_encoding() -> list[Path]:
    import test  # the standard library's own test package

    root = Path(test.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        head = b"\n".join(path.read_bytes().split(b"\n", 2)[:2])
        if b"coding" not in head:
            continue
        try:
            surface.extract_units(path.read_bytes(), str(path))
        except SurfaceError:
            continue  # deliberately broken files (bad_coding.py, badsyntax_*.py)
        found.append(path)
    return found


@needs_native
def test_cpython_test_files_with_cookies_lock_identically_with_both_backends(
    repo: GitRepo,
) -> None:
    files = _stdlib_files_declaring_an_encoding()
    names = {path.name for path in files}
    assert "test_source_encoding.py" in names  # koi8-r literals
    for index, path in enumerate(files):
        target = repo.path / "cpython" / "tests" / f"{index:02d}_{path.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    repo.write("cpython/invariants.yaml", MATRIX)
    locks = {}
    for impl in ("python", "native"):
        done = run("lock", "--write", "cpython", cwd=repo.path, ORACLE_GATE_IMPL=impl)
        assert done.returncode == 0, done.stdout + done.stderr
        locks[impl] = (repo.path / "cpython" / "oracle_gate.lock").read_bytes()
        os.remove(repo.path / "cpython" / "oracle_gate.lock")
    assert locks["python"] == locks["native"]
    assert locks["python"].count(b"::") > len(files)


PKG = "libs/intervals"
TEST = f"{PKG}/tests/test_merge.py"


@pytest.mark.parametrize("codec", ["unicode_escape", "raw_unicode_escape", "utf-7"])
def test_a_patch_declaring_a_transforming_codec_is_a_gate_error_naming_the_line(
    example_repo: tuple[GitRepo, str], codec: str
) -> None:
    repo, base = example_repo
    # Read as UTF-8 the new line is a comment; under the codec it runs and hides a test.
    repo.write(
        TEST,
        f"# coding: {codec}\n# \\x0atest_touching_ranges_stay_apart = None\n" + repo.read(TEST),
    )
    with pytest.raises(SurfaceError, match="not a plain text encoding") as info:
        repo.gate(base, repo.commit("declare a codec"))
    assert (info.value.path, info.value.line) == (TEST, 1)


def test_a_patch_declaring_a_plain_encoding_is_judged_on_the_decoded_text(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(TEST, "# -*- coding: latin-1 -*-\n" + repo.read(TEST))
    report = repo.gate(base, repo.commit("declare latin-1"))
    assert report.verdict_of(TEST) is Verdict.PASS
