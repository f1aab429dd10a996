"""``lock --matrix/--label/--ledgers/--junit``: what a Bazel oracle_gate test runs.

The tree here looks like a gate's runfiles: the package's declared files and
the JSON manifest the rule wrote, no invariants.yaml and no git.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitrepo import run
from oracle_gate.cli import main

PKG = "libs/codec"
LABEL = "//libs/codec:oracle_gate"
TEST_SOURCE = """\
from codec import encode


def test_roundtrip():
    assert encode({"a": "1"}) == "a=1\\n"


def test_empty():
    assert encode({}) == ""
"""
SEED = {"row": "codec_roundtrip", "prop": "p", "input": 1, "expect": "hold"}
MANIFEST = {
    "version": 1,
    "owners": ["@codec-team"],
    "tests": ["tests/test_codec.py"],
    "fixtures": ["testdata/golden.txt"],
    # Other gate targets: the lock never needs their packages.
    "deps": ["//libs/other:oracle_gate"],
    "rows": [
        {
            "id": "codec_roundtrip",
            "globs": ["codec/*.py"],
            "fixtures": ["testdata/golden.txt"],
            "properties": ["props.py:p"],  # the seed's; --ledgers checks it, never runs it
            "partitions": [],
            "relations": [],
            "budget": {"examples": 50, "seconds": 10},
        }
    ],
}


@pytest.fixture
def runfiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runfiles-like tree with a written lock; the current directory is its root."""
    root = tmp_path / "runfiles" / "_main"
    files = {
        f"{PKG}/codec/__init__.py": "def encode(record):\n    return ''\n",
        f"{PKG}/tests/test_codec.py": TEST_SOURCE,
        f"{PKG}/testdata/golden.txt": "a=1\n",
        f"{PKG}/seeds.jsonl": json.dumps(SEED) + "\n",
        f"{PKG}/oracle_gate.matrix.json": json.dumps(MANIFEST, indent=2),
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    monkeypatch.chdir(root)
    # Written in a child with the pure-Python backend, as a gate's launcher runs:
    # the backend is chosen once per process, so setting the variable here would
    # not change this process's choice.
    manifest = f"{PKG}/oracle_gate.matrix.json"
    written = run(
        "lock",
        "--repo",
        ".",
        "--matrix",
        manifest,
        "--write",
        PKG,
        cwd=root,
        ORACLE_GATE_IMPL="python",
    )
    assert written.returncode == 0, written.stderr
    return root


def lock(*args: str) -> int:
    return main(["lock", "--repo", ".", "--matrix", f"{PKG}/oracle_gate.matrix.json", *args, PKG])


def test_manifest_package_without_invariants_yaml_verifies(
    runfiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert lock("--label", LABEL, "--ledgers") == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [f"ok {PKG}/oracle_gate.lock", f"ok {PKG}/seeds.jsonl"]
    assert set(json.loads((runfiles / PKG / "oracle_gate.lock").read_text())["fixtures"]) == {
        "testdata/golden.txt"
    }


def test_moved_fixture_and_assertion_fail_naming_label_file_and_unit(
    runfiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (runfiles / PKG / "testdata/golden.txt").write_text("a=2\n")
    test_file = runfiles / PKG / "tests/test_codec.py"
    test_file.write_text(TEST_SOURCE.replace('== ""', "is not None"))
    capsys.readouterr()
    assert lock("--label", LABEL) == 1
    out = capsys.readouterr().out
    assert (
        f"FAIL: {LABEL}: {PKG}/testdata/golden.txt: fixture changed since "
        f"{PKG}/oracle_gate.lock was written"
    ) in out
    assert (
        f"FAIL: {LABEL}: {PKG}/tests/test_codec.py::test_empty: "
        "assertion surface of test unit changed"
    ) in out
    assert "test_roundtrip" not in out


def test_docstring_only_edit_of_a_test_passes(runfiles: Path) -> None:
    test_file = runfiles / PKG / "tests/test_codec.py"
    test_file.write_text(
        TEST_SOURCE.replace("def test_empty():\n", 'def test_empty():\n    """Nothing in."""\n')
    )
    assert lock("--label", LABEL) == 0


def test_junit_names_each_moved_file_as_a_failed_case(runfiles: Path, tmp_path: Path) -> None:
    (runfiles / PKG / "testdata/golden.txt").write_text("changed\n")
    junit = tmp_path / "test.xml"
    assert lock("--label", LABEL, "--ledgers", "--junit", str(junit)) == 1
    xml = junit.read_text()
    assert f'<testsuite name="{LABEL}" tests="2" failures="1" errors="0">' in xml
    assert f'<testcase classname="{LABEL}" name="{PKG}/testdata/golden.txt">' in xml
    assert '<failure message="fixture changed since' in xml
    assert f'<testcase classname="{LABEL}" name="{PKG}/seeds.jsonl" />' in xml


def test_missing_lock_fails_with_the_command_a_human_runs(
    runfiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (runfiles / PKG / "oracle_gate.lock").unlink()
    capsys.readouterr()
    assert lock("--label", LABEL) == 1
    out = capsys.readouterr().out
    assert f"FAIL: {LABEL}: {PKG}/oracle_gate.lock is missing" in out
    assert (
        f"bazel build {LABEL} && oracle-gate lock --write --matrix "
        f"bazel-bin/{PKG}/oracle_gate.matrix.json {PKG}"
    ) in out


def test_invalid_ledger_is_an_error_with_exit_2_named_in_junit(
    runfiles: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (runfiles / PKG / "seeds.jsonl").write_text('{"row": "codec_roundtrip"\n')
    junit = tmp_path / "test.xml"
    capsys.readouterr()
    assert lock("--label", LABEL, "--ledgers", "--junit", str(junit)) == 2
    err = capsys.readouterr().err
    assert f"ERROR: {LABEL}: {PKG}/seeds.jsonl:1: is not valid JSON" in err
    assert 'errors="1"' in junit.read_text()


def test_manifest_breaking_the_schema_is_a_gate_error_naming_file_and_line(
    runfiles: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = dict(MANIFEST, rows=[{"globs": ["codec/*.py"]}])
    (runfiles / PKG / "oracle_gate.matrix.json").write_text(json.dumps(broken, indent=2))
    junit = tmp_path / "test.xml"
    capsys.readouterr()
    assert lock("--label", LABEL, "--junit", str(junit)) == 2
    err = capsys.readouterr().err
    assert f"oracle-gate: error: {PKG}/oracle_gate.matrix.json:" in err
    assert "rows[0] has no id; every row needs an id unique in the package" in err
    assert "<error message=" in junit.read_text()


def test_matrix_describes_one_package_only(
    runfiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["lock", "--repo", ".", "--matrix", f"{PKG}/oracle_gate.matrix.json", PKG, "libs"])
    assert code == 2
    assert "--matrix describes one package" in capsys.readouterr().err


def test_write_with_junit_is_refused(runfiles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (runfiles / PKG / "oracle_gate.lock").read_text()
    (runfiles / PKG / "testdata/golden.txt").write_text("changed\n")
    assert lock("--write", "--junit", "x.xml") == 2
    assert "cannot be used with --write" in capsys.readouterr().err
    assert (runfiles / PKG / "oracle_gate.lock").read_text() == before


def test_runfiles_symlinks_to_declared_inputs_outside_the_tree_are_followed(
    runfiles: Path, tmp_path: Path
) -> None:
    """Bazel's runfiles are links into its execroot; a gate must read through them."""
    execroot = tmp_path / "execroot" / "golden.txt"
    execroot.parent.mkdir()
    fixture = runfiles / PKG / "testdata" / "golden.txt"
    execroot.write_bytes(fixture.read_bytes())
    fixture.unlink()
    fixture.symlink_to(execroot)
    assert lock() == 0
    execroot.write_text("a=2\n")  # the declared input changed: the lock must see it
    assert lock() == 1
