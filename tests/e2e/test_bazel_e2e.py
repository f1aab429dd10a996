"""Real Bazel, end to end: the oracle_gate rules in a three-package monorepo (SPEC §8).

Each test copies a workspace from ``tests/e2e/workspaces`` into ``tmp_path``,
points it at this checkout (``--override_repository`` / ``--override_module``)
and at the air-gapped coverage-tools stand-in (``tools/airgap.sh``), and runs
``bazel`` with its output base inside ``tmp_path``. Bazel is slow on small
machines, so the WORKSPACE tests share one workspace and one Bazel server
(module-scoped), each test leaves the tree as it found it, and the server is
shut down when the module ends.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from backends import _native
from oracle_gate.bazel.read import BuildFile, gates_from_native, parse_build
from oracle_gate.config.matrix import gate_matrix, parse_matrix
from oracle_gate.errors import ConfigError
from webdav import free_port, webdav_server

ROOT = Path(__file__).resolve().parents[2]
WORKSPACES = Path(__file__).resolve().parent / "workspaces"
BAZEL = shutil.which("bazel")
# Read at import: tests/conftest.py unsets CI while tests run.
IN_CI = bool(os.environ.get("CI"))
BAZEL_TIMEOUT = 600
# The interpreter running pytest has the driver's dependencies installed.
PYTHON_ENV = {"ORACLE_GATE_PYTHON": sys.executable}
GATES = (
    "//libs/codec:oracle_gate",
    "//libs/intervals:oracle_gate",
    "//services/scheduler:oracle_gate",
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        BAZEL is None,
        reason="bazel is not on PATH; .ci/run installs Debian's bazel-bootstrap "
        "(apt-get install bazel-bootstrap)",
    ),
]


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str  # stdout and stderr, interleaved as Bazel wrote them


@dataclass
class Bazel:
    """One workspace and one output base; every invocation shares the server."""

    workspace: Path
    output_base: Path
    override: str  # --override_repository=... or --override_module=...
    trusted_run: Run | None = None  # the module fixture's first `bazel test`
    # The client environment: @oracle_gate_python reads ORACLE_GATE_PYTHON and PATH.
    env: dict[str, str] = field(default_factory=lambda: {**os.environ, **PYTHON_ENV})

    def startup(self) -> list[str]:
        # The same startup options every time: others would restart the server.
        return [
            f"--output_base={self.output_base}",
            "--nohome_rc",  # a developer's ~/.bazelrc must not change results
            "--max_idle_secs=600",  # a server the finalizer missed still goes away
        ]

    def run(self, command: str, *args: str) -> Run:
        flags = [self.override, "--color=no", "--curses=no"]
        if command in ("build", "test"):
            flags.append("--nosandbox_debug")  # query does not know it
        done = subprocess.run(
            [str(BAZEL), *self.startup(), command, *flags, *args],
            cwd=self.workspace,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=BAZEL_TIMEOUT,
            check=False,
        )
        return Run(done.returncode, done.stdout)

    def test(self, *args: str) -> Run:
        """``bazel test --config=oracle_gate``."""
        return self.run("test", "--config=oracle_gate", *args)

    def shutdown(self) -> None:
        subprocess.run(
            [str(BAZEL), *self.startup(), "shutdown"],
            cwd=self.workspace,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )

    def testlog(self, target: str, name: str = "test.log") -> str:
        package, _, target_name = target.removeprefix("//").partition(":")
        return (self.workspace / "bazel-testlogs" / package / target_name / name).read_text()


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The @oracle_gate repository as a user gets it: a copy of what Bazel reads.

    A copy (like an http_archive) rather than this working tree, so an edit
    made while the tests run cannot change a cache key between two builds.
    """
    snapshot = tmp_path_factory.mktemp("oracle_gate_checkout") / "oracle_gate"
    snapshot.mkdir()
    for name in ("BUILD.bazel", "MODULE.bazel", "WORKSPACE.bazel"):
        shutil.copy2(ROOT / name, snapshot / name)
    for name in ("rules", "tools"):
        shutil.copytree(ROOT / name, snapshot / name)
    shutil.copytree(
        ROOT / "python" / "oracle_gate",
        snapshot / "python" / "oracle_gate",
        ignore=shutil.ignore_patterns("examples", "__pycache__", "*.so", "*.pyd"),
    )
    shutil.copy2(ROOT / "python" / "BUILD.bazel", snapshot / "python" / "BUILD.bazel")
    return snapshot


def _copy_workspace(name: str, destination: Path, checkout: Path) -> Path:
    """A private copy of ``tests/e2e/workspaces/<name>``, links resolved, air-gap rc written."""
    workspace = destination / name
    shutil.copytree(WORKSPACES / name, workspace, symlinks=False)
    # libs/ links into python/oracle_gate/examples/monorepo: the copy must hold
    # real files, or a test's edit would change the example.
    links = [str(path) for path in workspace.rglob("*") if path.is_symlink()]
    assert not links, links
    subprocess.run(
        [str(checkout / "tools" / "airgap.sh"), str(workspace)],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=60,
    )
    return workspace


def _bazel_major() -> int | None:
    """The major version from ``bazel --version``; None for a build without one.

    Debian's bazel-bootstrap 4.2.3 prints ``bazel no_version``.
    """
    done = subprocess.run(
        [str(BAZEL), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    found = re.search(r"(\d+)\.\d+", done.stdout)
    return int(found.group(1)) if found else None


def _status(run: Run, target: str) -> str:
    """Bazel's summary word for ``target``: ``PASSED``, ``(cached) PASSED``, ``FAILED``..."""
    found = re.search(rf"^{re.escape(target)}\s+(\(cached\) )?([A-Z ]+?) in ", run.output, re.M)
    assert found, f"{target} is not in Bazel's test summary:\n{run.output}"
    return f"{found.group(1) or ''}{found.group(2)}"


@pytest.fixture(scope="module")
def workspace_bazel(tmp_path_factory: pytest.TempPathFactory, checkout: Path) -> Iterator[Bazel]:
    """The WORKSPACE monorepo (Bazel 4 to 6 style) with one Bazel server for the module.

    Its first `bazel test` of the trusted tree runs here, so every test finds a
    warm cache whichever of them runs; each test restores what it edits.
    """
    base = tmp_path_factory.mktemp("bazel_workspace")
    bazel = Bazel(
        workspace=_copy_workspace("workspace", base, checkout),
        output_base=base / "output_base",
        override=f"--override_repository=oracle_gate={checkout}",
    )
    try:
        bazel.trusted_run = bazel.test("//...")
        yield bazel
    finally:
        bazel.shutdown()


def test_gates_pass_on_the_trusted_tree_and_a_second_run_is_cached(
    workspace_bazel: Bazel,
) -> None:
    first = workspace_bazel.trusted_run
    assert first is not None
    assert first.returncode == 0, first.output
    assert [_status(first, gate) for gate in GATES] == ["PASSED"] * 3
    # checks/ holds a test without the oracle_gate tag that always fails: not run.
    assert "not_a_gate_test" not in first.output
    assert "Executed 3 out of 3 tests: 3 tests pass." in first.output

    second = workspace_bazel.test("//...")
    assert second.returncode == 0, second.output
    assert [_status(second, gate) for gate in GATES] == ["(cached) PASSED"] * 3
    assert "Executed 0 out of 3 tests: 3 tests pass." in second.output


def test_fixture_and_assertion_edits_fail_the_package_gate_naming_file_and_unit(
    workspace_bazel: Bazel,
) -> None:
    package = workspace_bazel.workspace / "libs" / "intervals"
    fixture = package / "testdata" / "ranges" / "nested.json"
    test_file = package / "tests" / "test_merge.py"
    saved = {path: path.read_text() for path in (fixture, test_file)}
    edited = saved[test_file].replace(
        "assert merge_ranges([[0, 4], [3, 7]]) == [[0, 7]]",
        "assert merge_ranges([[0, 4], [3, 7]])",
    )
    assert edited != saved[test_file]
    fixture.write_text('{"input": [[0, 9], [2, 3]], "expected": [[0, 9], [2, 3]]}\n')
    test_file.write_text(edited)
    try:
        run = workspace_bazel.test("--test_output=errors", "//...")
        log = workspace_bazel.testlog("//libs/intervals:oracle_gate")
        junit = workspace_bazel.testlog("//libs/intervals:oracle_gate", "test.xml")
    finally:
        for path, text in saved.items():
            path.write_text(text)

    assert run.returncode == 3, run.output  # Bazel: build fine, tests failed
    assert _status(run, "//libs/intervals:oracle_gate") == "FAILED"
    assert _status(run, "//libs/codec:oracle_gate") == "(cached) PASSED"
    # scheduler depends on intervals: its gate re-runs, and passes.
    assert _status(run, "//services/scheduler:oracle_gate") == "PASSED"
    moved_fixture = (
        "FAIL: //libs/intervals:oracle_gate: libs/intervals/testdata/ranges/nested.json: "
        "fixture changed since libs/intervals/oracle_gate.lock was written"
    )
    moved_unit = (
        "FAIL: //libs/intervals:oracle_gate: "
        "libs/intervals/tests/test_merge.py::test_overlapping_ranges_merge: "
        "assertion surface of test unit changed"
    )
    for text in (run.output, log):
        assert moved_fixture in text
        assert moved_unit in text
    assert 'name="libs/intervals/testdata/ranges/nested.json"' in junit
    assert 'name="libs/intervals/tests/test_merge.py::test_overlapping_ranges_merge"' in junit
    assert 'failures="2"' in junit


def test_docstring_only_edit_of_a_test_reruns_the_gate_and_passes(
    workspace_bazel: Bazel,
) -> None:
    test_file = workspace_bazel.workspace / "libs" / "codec" / "tests" / "test_codec.py"
    saved = test_file.read_text()
    edited = saved.replace(
        "    def test_roundtrip(self):\n",
        '    def test_roundtrip(self):\n        """Encode, then decode: the same record."""\n',
    )
    assert edited != saved
    test_file.write_text(edited)
    try:
        run = workspace_bazel.test("--test_output=errors", "//...")
    finally:
        test_file.write_text(saved)
    assert run.returncode == 0, run.output
    # The test file is an input, so the gate ran again (not from cache) and passed.
    assert _status(run, "//libs/codec:oracle_gate") == "PASSED"
    assert "PASS: //libs/codec:oracle_gate" in workspace_bazel.testlog("//libs/codec:oracle_gate")


def test_query_output_build_shows_the_rows_as_attributes(workspace_bazel: Bazel) -> None:
    run = workspace_bazel.run("query", "--output=build", "//libs/intervals:oracle_gate")
    assert run.returncode == 0, run.output
    shown = run.output
    assert 'rows = ["merge_ranges_contract"]' in shown
    assert 'row_globs = {"merge_ranges_contract": ["intervals/**/*.py"]}' in shown
    assert 'row_partitions = {"merge_ranges_contract": ["partitions.py:PARTITIONS"]}' in shown
    assert '"props.py:prop_idempotent", "props.py:prop_permutation_invariant"' in shown
    assert 'row_examples = {"merge_ranges_contract": "80"}' in shown
    assert 'row_fixtures = {"merge_ranges_contract": ["testdata/ranges/"]}' in shown
    assert 'tests = ["tests/**/test_*.py"]' not in shown  # glob() arrives expanded
    assert 'problem = ""' in shown or "problem =" not in shown
    # The matrix travels as attributes, never as one opaque JSON string.
    assert "matrix =" not in shown


BAD_PACKAGES = {
    "no_id": (
        'oracle_gate(name = "oracle_gate", rows = [invariant(globs = ["m.py"])])',
        "//bad/no_id:oracle_gate: rows[0] has no id",
    ),
    "duplicate_id": (
        'oracle_gate(name = "oracle_gate", rows = [\n'
        '    invariant(id = "r", globs = ["m.py"]),\n'
        '    invariant(id = "r", globs = ["*.py"]),\n'
        "])",
        "//bad/duplicate_id:oracle_gate: row id 'r' is declared twice",
    ),
    "empty_glob": (
        'oracle_gate(name = "oracle_gate", rows = [invariant(id = "r", globs = ["src/**/*.py"])])',
        "//bad/empty_glob:oracle_gate: row 'r': globs entry 'src/**/*.py' matches no file",
    ),
    "lock_outside": (
        'oracle_gate(name = "oracle_gate", lock = "../../libs/codec/oracle_gate.lock",\n'
        '    rows = [invariant(id = "r", globs = ["m.py"])])',
        "//bad/lock_outside:oracle_gate: lock '../../libs/codec/oracle_gate.lock' is outside "
        "the package 'bad/lock_outside'",
    ),
}


def test_bad_declarations_are_analysis_errors_naming_the_target(workspace_bazel: Bazel) -> None:
    bad = workspace_bazel.workspace / "bad"
    for name, (call, _) in BAD_PACKAGES.items():
        (bad / name).mkdir(parents=True)
        (bad / name / "m.py").write_text("VALUE = 1\n")
        (bad / name / "BUILD.bazel").write_text(
            'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n\n' + call + "\n"
        )
    try:
        run = workspace_bazel.run("build", "--keep_going", "//bad/...")
    finally:
        shutil.rmtree(bad)
    assert run.returncode == 1, run.output  # Bazel: build (here: analysis) failed
    for name, (_, message) in BAD_PACKAGES.items():
        assert f"in oracle_gate_test rule //bad/{name}:oracle_gate" in run.output
        assert f"Error in fail: {message}" in run.output
        assert f"errors encountered while analyzing target '//bad/{name}:oracle_gate'" in run.output


def test_launcher_runs_from_a_runfiles_manifest_and_reports_errors_with_exit_2(
    workspace_bazel: Bazel, tmp_path: Path
) -> None:
    # Needs the launcher and runfiles the first test built; running it by hand
    # costs no Bazel invocation.
    launcher = workspace_bazel.workspace / "bazel-bin" / "libs" / "codec" / "oracle_gate-test.sh"
    if not launcher.exists():
        run = workspace_bazel.run("build", "//libs/codec:oracle_gate")
        assert run.returncode == 0, run.output
    base_env = {"PATH": os.environ["PATH"], "ORACLE_GATE_PYTHON": sys.executable}

    def launch(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(launcher)],
            cwd=tmp_path,
            env={**base_env, **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    manifest_only = launch(
        RUNFILES_MANIFEST_FILE=f"{launcher}.runfiles_manifest",
        RUNFILES_MANIFEST_ONLY="1",
        TEST_TMPDIR=str(tmp_path),
    )
    assert manifest_only.returncode == 0, manifest_only.stderr
    assert "PASS: //libs/codec:oracle_gate" in manifest_only.stdout

    nowhere = launch()
    assert nowhere.returncode == 2
    assert nowhere.stderr.startswith("ERROR: //libs/codec:oracle_gate: cannot find the runfiles")

    # The launcher runs the recorded interpreter, not whatever the caller names.
    named = launch(RUNFILES_DIR=f"{launcher}.runfiles", ORACLE_GATE_PYTHON="no-such-python")
    assert named.returncode == 0, named.stderr
    gone = tmp_path / "interpreter.txt"
    gone.write_text("/no/such/python3\n")
    manifest = tmp_path / "manifest"
    manifest.write_text(
        "".join(
            f"{line.split(' ')[0]} {gone}\n"
            if line.startswith("oracle_gate_python/interpreter.txt ")
            else line + "\n"
            for line in Path(f"{launcher}.runfiles_manifest").read_text().splitlines()
        )
    )
    no_python = launch(
        RUNFILES_MANIFEST_FILE=str(manifest), RUNFILES_MANIFEST_ONLY="1", TEST_TMPDIR=str(tmp_path)
    )
    assert no_python.returncode == 2
    assert (
        "ERROR: //libs/codec:oracle_gate: the recorded interpreter /no/such/python3 does not exist"
        in no_python.stderr
    )


def test_bzlmod_workspace_passes(tmp_path: Path, checkout: Path) -> None:
    major = _bazel_major()
    if major is None or major < 7:
        pytest.skip(
            f"the bzlmod workspace needs Bazel 7+ (MODULE.bazel, local_path_override); "
            f"this bazel reports {'no version' if major is None else f'version {major}'} "
            "(Debian's bazel-bootstrap 4.2.3 predates bzlmod); the WORKSPACE tests above "
            "cover the rules on it"
        )
    bazel = Bazel(
        workspace=_copy_workspace("bzlmod", tmp_path, checkout),
        output_base=tmp_path / "output_base",
        override=f"--override_module=oracle_gate={checkout}",
    )
    try:
        run = bazel.test("//...")
    finally:
        bazel.shutdown()
    assert run.returncode == 0, run.output
    for gate in GATES:
        assert _status(run, gate).endswith("PASSED"), run.output


# --- Remote cache: nginx with WebDAV, as Bazel's remote-caching docs set it up ------------


@pytest.fixture
def remote_cache(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An nginx WebDAV server on 127.0.0.1; yields its URL and its storage directory."""
    with webdav_server(tmp_path / "nginx", required=IN_CI) as server:
        yield server


def test_second_machine_gets_gate_results_from_the_remote_cache(
    tmp_path: Path, checkout: Path, remote_cache: tuple[str, Path]
) -> None:
    url, storage = remote_cache
    override = f"--override_repository=oracle_gate={checkout}"
    runs = []
    # Two checkouts with two output bases are two machines: nothing local is shared.
    for machine in ("first", "second"):
        bazel = Bazel(
            _copy_workspace("workspace", tmp_path / machine, checkout),
            tmp_path / machine / "output_base",
            override,
        )
        try:
            runs.append(bazel.test(f"--remote_cache={url}", "//..."))
        finally:
            bazel.shutdown()
    first, second = runs
    assert first.returncode == 0, first.output
    assert [_status(first, gate) for gate in GATES] == ["PASSED"] * 3
    assert any((storage / "ac").iterdir()) and any((storage / "cas").iterdir())

    assert second.returncode == 0, second.output
    hits = re.search(r"(\d+) remote cache hit", second.output)
    assert hits and int(hits.group(1)) >= 3, second.output  # at least the three test actions
    for gate in GATES:
        assert _status(second, gate).endswith("PASSED"), second.output
    assert "Executed 0 out of 3 tests" in second.output


# --- One schema: the same mistakes through gate.bzl and both Python readers ---------------
#
# Each case is one mistake in plain values. It becomes a BUILD package whose
# oracle_gate(...) Bazel analyses, the same BUILD file read by the static reader
# (config.matrix.gate_matrix), and, where the mistake can be written in YAML, an
# invariants.yaml (config.matrix.parse_matrix). All must say exactly the expected
# message, so the schema (config/schema.py, copied into rules/private/schema.bzl)
# cannot drift between them.

ROW = {"id": "r", "globs": ["m.py"]}


@dataclass(frozen=True)
class AsDict:
    """A rows entry written as a dict literal instead of an invariant(...) call."""

    fields: dict[str, object]


def row(**fields: object) -> dict[str, object]:
    """ROW with ``fields`` replaced (a None value drops the field)."""
    merged = {**ROW, **fields}
    return {key: value for key, value in merged.items() if value is not None}


# name -> (gate arguments as plain values, expected message, also in YAML?)
CASES: dict[str, tuple[dict[str, object], str, bool]] = {
    "no_id": (
        {"rows": [row(id=None)]},
        "rows[0] has no id; every row needs an id unique in the package",
        True,
    ),
    "bad_id": (
        {"rows": [row(id="bad id")]},
        "row id 'bad id' may only hold letters, digits, _ . - "
        "and must start with a letter or digit",
        True,
    ),
    "id_not_string": (
        {"rows": [row(id=5)]},
        "row id 5 may only hold letters, digits, _ . - and must start with a letter or digit",
        True,
    ),
    "twice": (
        {"rows": [row(), row(globs=["*.py"])]},
        "row id 'r' is declared twice; row ids must be unique in a package",
        True,
    ),
    "no_globs": (
        {"rows": [row(globs=None)]},
        "row 'r' has no globs; every row guards at least one production path",
        True,
    ),
    "globs_not_a_list": (
        {"rows": [row(globs="m.py")]},
        "row 'r': globs must be a list, found 'm.py'",
        True,
    ),
    "glob_not_a_string": (
        {"rows": [row(globs=[5])]},
        "row 'r': globs entry 5 is not a string",
        True,
    ),
    "glob_dot_dot": (
        {"rows": [row(globs=["../m.py"])]},
        "row 'r': globs entry '../m.py' has an empty, '.' or '..' segment",
        True,
    ),
    "glob_absolute": (
        {"rows": [row(globs=["/m.py"])]},
        "row 'r': globs entry '/m.py' is absolute; globs are relative to the package directory",
        True,
    ),
    "glob_label": (
        {"rows": [row(globs=[":m.py"])]},
        "row 'r': globs entry ':m.py' is a label; "
        "name the package's files by package-relative path",
        True,
    ),
    "glob_star_star": (
        {"rows": [row(globs=["a**/m.py"])]},
        "row 'r': globs entry 'a**/m.py' uses '**' inside a segment; "
        "'**' must be a whole path segment",
        True,
    ),
    "ref_form": (
        {"rows": [row(properties=["props"])]},
        "row 'r': properties entry 'props' is not of the form 'file.py:NAME'",
        True,
    ),
    "ref_outside": (
        {"rows": [row(partitions=["../props.py:P"])]},
        "row 'r': partitions entry '../props.py:P' is not of the form 'file.py:NAME'",
        True,
    ),
    "ref_two_colons": (
        {"rows": [row(relations=["props.py:A:B"])]},
        "row 'r': relations entry 'props.py:A:B' is not of the form 'file.py:NAME'",
        True,
    ),
    "fixture_dot_dot": (
        {"rows": [row(fixtures=["../data/"])]},
        "row 'r': fixtures entry '../data/' has an empty, '.' or '..' segment",
        True,
    ),
    "budget_not_a_mapping": (
        {"rows": [row(budget=5)]},
        "row 'r': budget must be a mapping with keys examples, seconds, found 5",
        True,
    ),
    "budget_key": (
        {"rows": [row(budget={"exampels": 3})]},
        "row 'r': budget has unknown key 'exampels'; expected examples, seconds",
        True,
    ),
    "examples_zero": (
        {"rows": [row(budget={"examples": 0})]},
        "row 'r': budget examples must be an integer of at least 1, found 0",
        True,
    ),
    "examples_fraction": (
        {"rows": [row(budget={"examples": 1.5})]},
        "row 'r': budget examples must be an integer of at least 1, found 1.5",
        True,
    ),
    "examples_string": (
        {"rows": [row(budget={"examples": "5"})]},
        "row 'r': budget examples must be an integer of at least 1, found '5'",
        True,
    ),
    "seconds_negative": (
        {"rows": [row(budget={"seconds": -1})]},
        "row 'r': budget seconds must be a positive number, found -1",
        True,
    ),
    "seconds_zero": (
        {"rows": [row(budget={"seconds": 0.0})]},
        "row 'r': budget seconds must be a positive number, found 0.0",
        True,
    ),
    "owners_not_a_list": (
        {"owners": "@team", "rows": [row()]},
        "owners must be a list, found '@team'",
        True,
    ),
    "test_outside": (
        {"tests": ["../t.py"], "rows": [row()]},
        "tests entry '../t.py' has an empty, '.' or '..' segment",
        True,
    ),
    "rows_not_a_list": (
        {"rows": "r"},
        "rows must be a list, found 'r'",
        True,
    ),
    # BUILD only: a row that is not an invariant() call, and the lock and ledgers.
    "row_not_invariant": (
        {"rows": [AsDict({"id": "r"})]},
        "rows[0] is not an invariant(...)",
        False,
    ),
    "lock_name": (
        {"lock": "other.lock", "rows": [row()]},
        "lock must be the file 'oracle_gate.lock' at the root of package 'cmp/lock_name', "
        "found 'other.lock'",
        False,
    ),
    "lock_outside": (
        {"lock": "../oracle_gate.lock", "rows": [row()]},
        "lock '../oracle_gate.lock' is outside the package 'cmp/lock_outside'; "
        "each package owns its own oracle_gate.lock at its root",
        False,
    ),
    # (A label into another package is refused by Bazel's visibility check first.)
    "lock_label_name": (
        {"lock": ":other.lock", "rows": [row()]},
        "lock must be the file 'oracle_gate.lock' at the root of package 'cmp/lock_label_name', "
        "found '//cmp/lock_label_name:other.lock'",
        False,
    ),
    "seeds_missing": (
        {"seeds": "seeds.jsonl", "rows": [row()]},
        "seeds 'seeds.jsonl' does not exist in package 'cmp/seeds_missing'",
        False,
    ),
    "assumptions_name": (
        {"assumptions": "assume.yaml", "rows": [row()]},
        "assumptions must be the file 'assumptions.yaml' at the root of package "
        "'cmp/assumptions_name', found 'assume.yaml'",
        False,
    ),
}


def _starlark(value: object) -> str:
    """Plain values as a Starlark literal; a row dict becomes an invariant(...) call."""
    return json.dumps(value)


def _row_call(item: object) -> str:
    if isinstance(item, AsDict):
        return _starlark(item.fields)
    assert isinstance(item, dict)
    return "invariant(" + ", ".join(f"{k} = {_starlark(v)}" for k, v in item.items()) + ")"


def _build_file(fields: dict[str, object]) -> str:
    arguments = ['    name = "oracle_gate",']
    for key, value in fields.items():
        if key == "rows" and isinstance(value, list):
            calls = [_row_call(item) for item in value]
            arguments.append(f"    rows = [{', '.join(calls)}],")
        else:
            arguments.append(f"    {key} = {_starlark(value)},")
    return (
        'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n\n'
        "oracle_gate(\n" + "\n".join(arguments) + "\n)\n"
    )


def _yaml(fields: dict[str, object]) -> bytes:
    return json.dumps({"version": 1, **fields}, indent=2).encode()


PACKAGE_FILES = ("m.py", "props.py", "other.lock")


def test_bazel_and_both_python_readers_word_every_mistake_alike(
    workspace_bazel: Bazel,
) -> None:
    root = workspace_bazel.workspace / "cmp"
    python_says: dict[str, list[str]] = {}
    read_natively: dict[str, tuple[str, int | None]] = {}
    read_statically: dict[str, tuple[str, int | None]] = {}
    for name, (fields, _, in_yaml) in CASES.items():
        package = root / name
        package.mkdir(parents=True)
        for file in PACKAGE_FILES:
            (package / file).write_text("P = 1\n")
        text = _build_file(fields)
        (package / "BUILD.bazel").write_text(text)
        said = []
        with pytest.raises(ConfigError) as from_build:
            gate_matrix(
                parse_build(text.encode(), f"cmp/{name}/BUILD.bazel"),
                f"cmp/{name}/BUILD.bazel",
                f"cmp/{name}",
                "",
                lambda: [*PACKAGE_FILES, "BUILD.bazel"],
            )
        said.append(from_build.value.message)
        natively = _read_natively(text)
        if natively is not None:  # the native core's reading, word and line alike
            with pytest.raises(ConfigError) as from_native:
                gate_matrix(
                    natively,
                    f"cmp/{name}/BUILD.bazel",
                    f"cmp/{name}",
                    "",
                    lambda: [*PACKAGE_FILES, "BUILD.bazel"],
                )
            read_natively[name] = (from_native.value.message, from_native.value.line)
            read_statically[name] = (from_build.value.message, from_build.value.line)
        if in_yaml:
            with pytest.raises(ConfigError) as from_yaml:
                parse_matrix(_yaml(fields), f"cmp/{name}/invariants.yaml")
            said.append(from_yaml.value.message)
        python_says[name] = said
    try:
        run = workspace_bazel.run("build", "--keep_going", "//cmp/...")
    finally:
        shutil.rmtree(root)
    assert run.returncode == 1, run.output
    bazel_says = dict(
        re.findall(r"^Error in fail: //cmp/(\w+):oracle_gate: (.*)$", run.output, re.M)
    )
    mismatches = {}
    for name, (_, expected, _) in CASES.items():
        said = {"bazel": bazel_says.get(name), "build": python_says[name][0]}
        if len(python_says[name]) > 1:
            said["yaml"] = python_says[name][1]
        if set(said.values()) != {expected}:
            mismatches[name] = said
    assert not mismatches, json.dumps(mismatches, indent=2)
    assert read_natively == read_statically
    if _native is not None:  # most mistakes are plain literals the native core reads
        assert len(read_natively) >= len(CASES) // 2, sorted(read_natively)


def _read_natively(text: str) -> BuildFile | None:
    """The gate calls as the native core reads them, or None (no core, or not plain).

    The native core never builds the matrix of a mistaken gate itself: it leaves
    every mistake to ``gate_matrix``, whose message is the one compared here.
    """
    if _native is None:
        return None
    files = sorted(f"cmp/x/{file}" for file in [*PACKAGE_FILES, "BUILD.bazel"])
    [(_, _, _, gates, _, matrix)] = _native.evaluate_build_files(
        [("cmp/x/BUILD.bazel", "cmp/x", "", text.encode())], [], [("", [])], files
    )[3]
    assert matrix is None, f"the native core built a matrix for a mistaken gate: {matrix}"
    return None if gates is None else gates_from_native(gates.read())


# --- The interpreter and its packages are inputs of every gate --------------------------


def _venv(path: Path) -> Path:
    """A virtual environment over this interpreter's packages; its bin directory."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(path)],
        check=True,
        timeout=120,
    )
    return path / "bin"


def test_switching_venvs_or_removing_a_shadowing_pth_misses_the_cache(
    tmp_path: Path, checkout: Path
) -> None:
    first, second = _venv(tmp_path / "venv_a"), _venv(tmp_path / "venv_b")
    # python3 on PATH picks the interpreter, as for a user with an activated venv.
    base = {key: value for key, value in os.environ.items() if key != "ORACLE_GATE_PYTHON"}
    bazel = Bazel(
        _copy_workspace("workspace", tmp_path, checkout),
        tmp_path / "output_base",
        f"--override_repository=oracle_gate={checkout}",
    )

    def gates(bin_dir: Path) -> list[str]:
        bazel.env = {**base, "PATH": f"{bin_dir}{os.pathsep}{base['PATH']}"}
        run = bazel.test("//...")
        assert run.returncode in (0, 3), run.output
        return [_status(run, gate) for gate in GATES]

    # A .pth in venv B that puts a broken yaml first: the gates cannot run there.
    shadow = tmp_path / "shadow"
    (shadow / "yaml").mkdir(parents=True)
    (shadow / "yaml" / "__init__.py").write_text("raise ImportError('shadowed yaml')\n")
    site_packages = next((tmp_path / "venv_b" / "lib").glob("python3*/site-packages"))
    pth = site_packages / "shadow.pth"
    try:
        assert gates(first) == ["PASSED"] * 3
        assert gates(first) == ["(cached) PASSED"] * 3
        record = bazel.output_base / "external" / "oracle_gate_python" / "record.json"
        assert str(tmp_path / "venv_a") in record.read_text()
        # Another interpreter: every gate runs again.
        assert gates(second) == ["PASSED"] * 3
        assert str(tmp_path / "venv_b") in record.read_text()
        # A shadowing .pth installed in place (PATH unchanged): the gates run
        # again and fail to import yaml, an ERROR Bazel reports as FAILED ...
        pth.write_text(f"{shadow}\n")
        assert gates(second) == ["FAILED"] * 3
        log = bazel.testlog("//libs/codec:oracle_gate")
        assert "ERROR: cannot import the oracle-gate driver" in log
        assert "shadowed yaml" in log
        # ... and removing it is a cache miss too: the FAILED is not served again.
        pth.unlink()
        assert gates(second) == ["PASSED"] * 3
    finally:
        bazel.shutdown()


# --- Remote execution: BuildGrid from PyPI on 127.0.0.1 --------------------------------
#
# BuildGrid 0.4.4 (the newest on PyPI for Python 3.11) needs PostgreSQL for its
# scheduler and ships no worker, so the fixture starts a throw-away PostgreSQL,
# `bgd server` (CAS, ByteStream, action cache, execution, bots) and the small
# worker in reapi_bot.py. .ci/run installs BuildGrid into a virtual environment
# and names its `bgd` in ORACLE_GATE_BGD.

BGD = os.environ.get("ORACLE_GATE_BGD") or shutil.which("bgd")
BGD_CONFIG = """\
server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
connections:
  - !sql-connection &sql
    connection-string: {database}
storages:
  - !disk-storage &storage
    path: {root}/cas
caches:
  - !lru-action-cache &cache
    storage: *storage
    max-cached-refs: 1024
    allow-updates: true
schedulers:
  - !sql-scheduler &scheduler
    sql: *sql
    action-cache: *cache
    storage: *storage
instances:
  - name: ""
    services:
      - !action-cache
        cache: *cache
      - !execution
        scheduler: *scheduler
      - !bots
        scheduler: *scheduler
      - !cas
        storage: *storage
      - !bytestream
        storage: *storage
"""


def _as_postgres(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    pytest.fail(f"BuildGrid did not start: {log.read_text()[-2000:]}")


@pytest.fixture
def buildgrid() -> Iterator[tuple[str, Path]]:
    """BuildGrid with PostgreSQL and one local worker; yields grpc://... and the worker's log."""
    missing = [
        name for name, found in (("bgd", BGD), ("initdb", shutil.which("initdb"))) if found is None
    ]
    if missing:
        message = f"{', '.join(missing)} not found; .ci/run installs BuildGrid and PostgreSQL"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    assert BGD is not None
    # Not below tmp_path: pytest's directory is private to root, and
    # PostgreSQL runs as the postgres user.
    root = Path(tempfile.mkdtemp(prefix="oracle-gate-buildgrid-"))
    data = root / "postgres"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    pg_port, port = free_port(), free_port()
    run = {"check": True, "timeout": 120, "capture_output": True}
    subprocess.run(_as_postgres(["initdb", "-D", str(data), "-A", "trust", "-U", "bgd"]), **run)
    subprocess.run(
        _as_postgres(
            [
                "pg_ctl",
                "-D",
                str(data),
                "-w",
                "-l",
                str(root / "postgres.log"),
                "-o",
                f"-p {pg_port} -k {root} -h 127.0.0.1",
                "start",
            ]
        ),
        **run,
    )
    server = bot = None
    try:
        subprocess.run(
            [
                "psql",
                "-h",
                "127.0.0.1",
                "-p",
                str(pg_port),
                "-U",
                "bgd",
                "-d",
                "postgres",
                "-c",
                "create database bgd",
            ],
            **run,
        )
        database = f"postgresql+psycopg2://bgd@127.0.0.1:{pg_port}/bgd"
        subprocess.run([BGD, "migrate", "apply", database], **run)
        config = root / "bgd.yml"
        config.write_text(BGD_CONFIG.format(port=port, database=database, root=root))
        server_log = root / "server.log"
        with server_log.open("wb") as out:
            server = subprocess.Popen([BGD, "server", "start", str(config)], stdout=out, stderr=out)
        _wait_for_port(port, server, server_log)
        bot_log = root / "bot.log"
        (root / "work").mkdir()
        python = str(Path(BGD).resolve().parent / "python")
        with bot_log.open("wb") as out:
            bot = subprocess.Popen(
                [
                    python,
                    "-u",
                    str(Path(__file__).parent / "reapi_bot.py"),
                    f"127.0.0.1:{port}",
                    str(root / "work"),
                ],
                stdout=out,
                stderr=out,
            )
        yield f"grpc://127.0.0.1:{port}", bot_log
    finally:
        for process in (bot, server):
            if process is not None:
                process.terminate()
                process.wait(timeout=60)
        subprocess.run(
            _as_postgres(["pg_ctl", "-D", str(data), "-m", "fast", "stop"]),
            timeout=120,
            capture_output=True,
            check=False,
        )


def test_gates_run_on_a_buildgrid_remote_executor_and_fail_as_locally(
    tmp_path: Path, checkout: Path, buildgrid: tuple[str, Path]
) -> None:
    executor, bot_log = buildgrid
    bazel = Bazel(
        _copy_workspace("workspace", tmp_path, checkout),
        tmp_path / "output_base",
        f"--override_repository=oracle_gate={checkout}",
    )
    fixture = bazel.workspace / "libs" / "intervals" / "testdata" / "ranges" / "nested.json"
    try:
        passing = bazel.test(f"--remote_executor={executor}", "//...")
        fixture.write_text('{"input": [[0, 9]], "expected": [[0, 9]]}\n')
        failing = bazel.test(f"--remote_executor={executor}", "--test_output=errors", "//...")
    finally:
        bazel.shutdown()
    assert passing.returncode == 0, passing.output
    assert [_status(passing, gate) for gate in GATES] == ["PASSED"] * 3
    assert re.search(r"processes: .*\b3 remote\b", passing.output), passing.output
    assert failing.returncode == 3, failing.output
    assert _status(failing, "//libs/intervals:oracle_gate") == "FAILED"
    assert "fixture changed since libs/intervals/oracle_gate.lock was written" in failing.output
    assert len(re.findall(r"^executed lease ", bot_log.read_text(), re.M)) >= 5
