"""The command line: exit codes, one-line errors naming file and line, nothing written on error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from gitrepo import GitRepo, run
from oracle_gate.cli import main

PKG = "libs/codec"


@pytest.fixture
def codec(repo: GitRepo) -> GitRepo:
    repo.commit_example(PKG)
    return repo


def test_lock_verifies_a_clean_package(codec: GitRepo) -> None:
    done = run("lock", "--repo", str(codec.path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"ok {PKG}/oracle_gate.lock\n"


def test_lock_reports_a_moved_fixture_with_exit_1(codec: GitRepo) -> None:
    codec.write(f"{PKG}/testdata/golden.txt", "level=4\nname=gate\n")
    done = run("lock", "--repo", str(codec.path))
    assert done.returncode == 1
    assert f"FAIL {PKG}/testdata/golden.txt: fixtures entry changed" in done.stdout


def test_lock_write_then_verify_round_trips(codec: GitRepo) -> None:
    codec.write(f"{PKG}/testdata/extra.txt", "x")
    assert run("lock", "--write", PKG, cwd=codec.path).returncode == 0
    assert run("lock", "--repo", str(codec.path)).returncode == 0
    assert "testdata/extra.txt" in codec.read(f"{PKG}/oracle_gate.lock")


@pytest.mark.parametrize(("variable", "value"), [("CI", "true"), ("ORACLE_GATE_ROLE", "agent")])
def test_lock_write_is_refused_for_ci_and_agents(codec: GitRepo, variable: str, value: str) -> None:
    before = codec.read(f"{PKG}/oracle_gate.lock")
    codec.write(f"{PKG}/testdata/extra.txt", "x")
    done = run("lock", "--write", "--repo", str(codec.path), **{variable: value})
    assert done.returncode == 2
    assert "refused" in done.stderr
    assert codec.read(f"{PKG}/oracle_gate.lock") == before


def test_missing_package_path_is_a_gate_error(codec: GitRepo) -> None:
    done = run("lock", "libs/nowhere", cwd=codec.path)
    assert done.returncode == 2
    assert done.stderr == "oracle-gate: error: libs/nowhere: package directory does not exist\n"


def test_directory_without_matrix_is_not_a_package(codec: GitRepo) -> None:
    done = run("lock", "libs", cwd=codec.path)
    assert done.returncode == 2
    assert "libs: not a package" in done.stderr


def test_broken_symlink_fixture_is_a_gate_error_and_nothing_is_written(codec: GitRepo) -> None:
    before = codec.read(f"{PKG}/oracle_gate.lock")
    (codec.path / PKG / "testdata" / "gone.txt").symlink_to("missing-target")
    done = run("lock", "--write", "--repo", str(codec.path))
    assert done.returncode == 2
    assert done.stderr == (
        f"oracle-gate: error: {PKG}/testdata/gone.txt: broken symlink: its target does not exist\n"
    )
    assert codec.read(f"{PKG}/oracle_gate.lock") == before


@pytest.mark.parametrize("name", ["testdata/pipe.txt", "tests/test_pipe.py"])
def test_fifo_fixture_or_test_file_is_a_gate_error_not_a_hang(codec: GitRepo, name: str) -> None:
    os.mkfifo(codec.path / PKG / name)
    done = run("lock", "--repo", str(codec.path))
    assert done.returncode == 2
    assert done.stderr == (
        f"oracle-gate: error: {PKG}/{name}: not a regular file (a FIFO, socket or device)\n"
    )


def test_lockfile_that_is_not_json_names_file_and_line(codec: GitRepo) -> None:
    codec.write(f"{PKG}/oracle_gate.lock", '{\n  "version": 1,\n  "fixtures": {,\n}\n')
    for args in (["lock"], ["lock", "--write"]):
        done = run(*args, "--repo", str(codec.path))
        assert done.returncode == 2
        assert done.stderr.startswith(
            f"oracle-gate: error: {PKG}/oracle_gate.lock:3: is not valid JSON"
        )
        assert len(done.stderr.splitlines()) == 1
    assert codec.read(f"{PKG}/oracle_gate.lock").startswith('{\n  "version": 1,\n  "fixtures": {,')


def test_invalid_matrix_is_a_gate_error_with_line(codec: GitRepo) -> None:
    line = len(codec.read(f"{PKG}/invariants.yaml").splitlines()) + 1
    codec.append(f"{PKG}/invariants.yaml", "  - id: codec_roundtrip\n    globs: ['x.py']\n")
    done = run("lock", "--repo", str(codec.path))
    assert done.returncode == 2
    expected = f"{PKG}/invariants.yaml:{line}: row id 'codec_roundtrip' is declared twice"
    assert expected in done.stderr


def test_select_imports_no_module_only_other_commands_need(codec: GitRepo) -> None:
    """A fresh select pays for what select uses: check's runtime and formats stay unloaded."""
    script = (
        "import sys\n"
        "from oracle_gate.cli import main\n"
        f"code = main(['select', '--repo', {str(codec.path)!r}, '--base', 'HEAD'])\n"
        "others = ('oracle_gate.gate', 'oracle_gate.cli.check', 'oracle_gate.formats', 'rich')\n"
        "print(sorted(name for name in others if name in sys.modules), code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("[] 0\n"), done.stdout
    assert "give up with exit 2 after this long" in run("check", "--help").stdout  # built then


def test_native_backend_required_but_missing_is_a_gate_error(codec: GitRepo) -> None:
    script = (
        "import sys; sys.modules['oracle_gate._native'] = None\n"
        "from oracle_gate.cli import main\n"
        f"raise SystemExit(main(['lock', '--repo', {str(codec.path)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "ORACLE_GATE_IMPL": "native"},
    )
    assert done.returncode == 2
    assert "ORACLE_GATE_IMPL=native but the native core is not importable" in done.stderr


def test_unknown_backend_name_is_a_gate_error(codec: GitRepo) -> None:
    done = run("lock", "--repo", str(codec.path), ORACLE_GATE_IMPL="rust")
    assert done.returncode == 2
    assert "ORACLE_GATE_IMPL='rust' is not a backend" in done.stderr


def test_check_without_base_outside_a_merge_queue_is_a_gate_error(codec: GitRepo) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_MERGE"))}
    done = subprocess.run(
        [sys.executable, "-m", "oracle_gate", "check"],
        cwd=codec.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no --base given and no merge-queue environment found" in done.stderr


def test_unknown_ref_is_a_gate_error(codec: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--repo", str(codec.path), "--base", "no-such-ref"]) == 2
    assert "'no-such-ref' does not name a commit" in capsys.readouterr().err


def test_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.startswith("oracle-gate ")


def test_short_version_flag_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["-V"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.startswith("oracle-gate ")


def test_lock_repo_resolves_pkg_against_the_repo_not_the_current_directory(
    codec: GitRepo, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    done = run("lock", "--repo", str(codec.path), PKG, cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"ok {PKG}/oracle_gate.lock\n"
    # A PKG that exists only under the current directory is not taken from there.
    (elsewhere / "only_here").mkdir()
    done = run("lock", "--repo", str(codec.path), "only_here", cwd=elsewhere)
    assert done.returncode == 2
    assert "only_here: package directory does not exist" in done.stderr


@pytest.mark.parametrize("command", ["check", "select"])
def test_check_and_select_take_the_same_graph(
    codec: GitRepo, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check --graph bazel`` builds the graph ``select --graph bazel`` prints: same refusal."""
    base = codec.git("rev-parse", "HEAD").strip()
    codec.append(f"{PKG}/codec/__init__.py", "\n# tweak\n")
    codec.commit("tweak")
    assert main([command, "--repo", str(codec.path), "--base", base, "--graph", "bazel"]) == 2
    assert "--graph=bazel needs a Bazel workspace" in capsys.readouterr().err


def test_check_output_writes_more_formats_from_one_run(codec: GitRepo) -> None:
    base = codec.git("rev-parse", "HEAD").strip()
    codec.write(f"{PKG}/testdata/golden.txt", "level=4\n")
    codec.commit("agent: edit a fixture")
    outputs = ("--output", "junit:out.xml", "--output", "markdown:out.md")
    done = run("check", "--base", base, "--format", "json", *outputs, cwd=codec.path)
    assert done.returncode == 1
    assert json.loads(done.stdout)["verdict"] == "reject"
    assert ET.parse(codec.path / "out.xml").getroot().tag == "testsuites"
    assert (codec.path / "out.md").read_text().startswith("## oracle-gate: ❌")


@pytest.mark.parametrize("value", ["yaml:out.txt", "junit:", "junit"])
def test_check_output_needs_a_known_format_and_a_file(codec: GitRepo, value: str) -> None:
    done = run("check", "--repo", str(codec.path), "--base", "HEAD", "--output", value)
    assert done.returncode == 2
    assert "expected FORMAT:FILE" in done.stderr
