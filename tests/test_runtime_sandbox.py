"""The child sandbox: a result channel code under test cannot forge, an allow-listed
environment, a process group killed as a whole, bubblewrap, and sys.path from one checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gitrepo import GitRepo
from oracle_gate.errors import GateError
from oracle_gate.model import Verdict
from oracle_gate.report import Report
from oracle_gate.runtime import privileges, sandbox
from oracle_gate.runtime.sandbox import bubblewrap, checkouts, probe, relay
from reports import reasons_of

# CI installs bubblewrap and sets ORACLE_GATE_REQUIRE_BWRAP (.ci/run): there a missing
# bwrap fails instead of skipping.
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("ORACLE_GATE_REQUIRE_BWRAP"),
    reason="bubblewrap not installed",
)

HONEST = "def run(x):\n    return x\n"
# Finds the result pipe the way code under test could (every open fd) and writes a
# well-formed frame that says every contract holds.
FORGE = """
import json, os, struct

def _forge():
    frame = json.dumps({"results": [{"holds": True}], "outputs": [{"ok": ["int", "1"]}]})
    data = struct.pack(">Q", len(frame)) + frame.encode()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.write(int(name), data)
        except OSError:
            pass
"""


def _package(repo: GitRepo, contract: str = "out == 1", extra: str = "", seconds: int = 10) -> str:
    """pkg/ with one partition row S1: run(1) must satisfy ``contract`` within ``seconds``
    (a busy machine can take more than a second to start a sandboxed child); returns the
    commit."""
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
        '    partitions: ["partitions.py:PARTITIONS"]\n'
        f"    budget: {{seconds: {seconds}}}\n",
    )
    repo.write("pkg/mod.py", HONEST)
    repo.write(
        "pkg/partitions.py",
        f'{extra}SUBJECT = "mod:run"\nPARTITIONS = [{{"id": "S1", "kind": "representative", '
        f'"input": 1, "contract": lambda out: {contract}}}]\n',
    )
    repo.write("oracle-gate.toml", "timeout-floor = 1\n")
    return repo.commit("package")


def _patch(repo: GitRepo, base: str, code: str) -> Report:
    repo.write("pkg/mod.py", code)
    return repo.gate(base, repo.commit("patch"))


def test_a_forged_frame_on_the_result_pipe_is_a_tamper_reject(repo: GitRepo) -> None:
    base = _package(repo)
    report = _patch(repo, base, FORGE + "\ndef run(x):\n    _forge()\n    return x\n")
    assert "tamper: more than one frame on the result channel" in reasons_of(report)
    assert report.verdict is Verdict.REJECT


def test_an_atexit_hook_forging_a_result_is_never_taken(repo: GitRepo) -> None:
    """The old runner took the last nonce line on stdout; an atexit hook could print it."""
    base = _package(repo)
    code = (
        FORGE
        + "\nimport atexit, sys\natexit.register(_forge)\n"
        + 'atexit.register(lambda: print(\'0\' * 32, \'{"outputs": [{"ok": ["int", "1"]}]}\'))\n'
        + "\ndef run(x):\n    return x + 1\n"
    )
    reasons = reasons_of(_patch(repo, base, code))
    assert "partition S1 (representative: ) fails its contract" in reasons


def test_the_honest_neighbour_of_the_forgers_passes(repo: GitRepo) -> None:
    base = _package(repo)
    report = _patch(repo, base, "import os\n\n\ndef run(x):\n    return abs(x)\n")
    assert report.verdict is Verdict.PASS, reasons_of(report)


def test_children_never_see_ci_tokens(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "secret-token")
    monkeypatch.setenv("CI_JOB_TOKEN", "secret-token")
    code = (
        "import os\n\n\ndef run(x):\n"
        "    seen = [v for v in os.environ.values() if 'secret' in v]\n"
        "    return 'leaked' if seen else 'absent'\n"
    )
    _holds(repo, "out == 'absent'", code)


def _holds(repo: GitRepo, contract: str, code: str) -> None:
    """A patch making ``run`` ``code`` passes: run(1) satisfies ``contract`` in the child."""
    report = _patch(repo, _package(repo, contract=contract), code)
    assert report.verdict is Verdict.PASS, reasons_of(report)


def test_a_timeout_kills_the_whole_process_group(repo: GitRepo) -> None:
    """A grandchild holding the output pipe open must not keep the gate waiting."""
    base = _package(repo, seconds=1)
    code = (
        "import subprocess, time\n\n\ndef run(x):\n"
        "    subprocess.Popen(['sleep', '60'])\n    time.sleep(60)\n    return x\n"
    )
    started = time.monotonic()
    report = _patch(repo, base, code)
    assert "timed out after 1s" in reasons_of(report)
    assert time.monotonic() - started < 30


@needs_bwrap
def test_under_bubblewrap_the_tree_is_read_only_tmp_private_and_no_network(
    repo: GitRepo, tmp_path: Path
) -> None:
    marker = Path("/tmp") / f"og-marker-{tmp_path.name}"
    marker.write_text("x")
    try:
        base = _package(repo, contract="out == ['read-only', 'private', 'offline']")
        code = (
            "import os, socket\n\n\ndef run(x):\n    seen = []\n    try:\n"
            "        open(os.path.join(os.path.dirname(__file__), 'w'), 'w').close()\n"
            "        seen.append('writable')\n    except OSError:\n"
            "        seen.append('read-only')\n"
            f"    seen.append('shared' if os.path.exists({str(marker)!r}) else 'private')\n"
            "    try:\n        socket.create_connection(('1.1.1.1', 53), timeout=2).close()\n"
            "        seen.append('online')\n    except OSError:\n"
            "        seen.append('offline')\n    return seen\n"
        )
        report = _patch(repo, base, code)
        assert report.verdict is Verdict.PASS, reasons_of(report)
    finally:
        marker.unlink()


# Finds the user's repository the way patched code could: from the checkout's ``.git``
# file, which names the repository's git directory.
FIND_REPOSITORY = """
import os


def _repository():
    here = os.path.dirname(os.path.abspath(__file__))
    while here != "/" and not os.path.exists(os.path.join(here, ".git")):
        here = os.path.dirname(here)
    with open(os.path.join(here, ".git")) as pointer:
        git_dir = pointer.read().split(":", 1)[1].strip()
    return git_dir, git_dir.split(os.sep + ".git" + os.sep)[0]
"""


@needs_bwrap
def test_under_bubblewrap_the_users_repository_shows_only_the_checkout(
    repo_outside_tmp: GitRepo,
) -> None:
    """Where the repository is, the child finds the checkout of the tree it runs: not the
    user's working tree (a file there that was never committed), not its git directory."""
    repo = repo_outside_tmp
    assert not str(repo.path.resolve()).startswith("/tmp/")
    base = _package(repo, contract="out == [False, ['.git', 'oracle-gate.toml', 'pkg'], False]")
    code = FIND_REPOSITORY + (
        "\n\ndef run(x):\n    git_dir, root = _repository()\n"
        "    objects = os.path.join(root, '.git', 'objects')\n"
        "    return [os.path.exists(git_dir), sorted(os.listdir(root)), os.path.exists(objects)]\n"
    )
    repo.write("pkg/mod.py", code)
    head = repo.commit("patch")
    repo.write("uncommitted-notes.txt", "only in the working tree\n")
    report = repo.gate(base, head)
    assert report.verdict is Verdict.PASS, reasons_of(report)


@needs_bwrap
@pytest.mark.parametrize("where", ["tmp", "outside_tmp"])
def test_under_bubblewrap_code_runs_where_the_repository_is(
    where: str, request: pytest.FixtureRequest
) -> None:
    """Not in a temporary checkout: ``__file__`` and the working directory are the
    repository's own, so code cannot tell the gate's run from a run in the repository."""
    repo: GitRepo = request.getfixturevalue("repo" if where == "tmp" else "repo_outside_tmp")
    package = os.path.realpath(repo.path / "pkg")
    code = (
        "import os\n\n\ndef run(x):\n"
        "    here = os.path.dirname(os.path.abspath(__file__))\n"
        "    return [here, os.getcwd(), os.path.isfile(os.path.join(here, 'mod.py'))]\n"
    )
    _holds(repo, f"out == [{package!r}, {package!r}, True]", code)


# What a real run has and a sandbox might not: who runs, in which shell and terminal,
# and a home directory of its own (``if os.environ.get("USER"): <skip the checks>``).
SESSION = {"USER": "alice", "LOGNAME": "alice", "SHELL": "/bin/zsh", "TERM": "xterm-256color"}
READ_SESSION = (
    "import os\n\n\ndef run(x):\n"
    "    home = os.path.expanduser('~')\n"
    "    open(os.path.join(home, '.cache-of-run'), 'w').close()\n"
    "    seen = [os.environ.get(name) for name in {names!r}]\n"
    "    return [*seen, home, sorted(os.listdir(home)), 'TMPDIR' in os.environ]\n"
)


@needs_bwrap
@pytest.mark.parametrize("where", ["/tmp", "/var/tmp"])
def test_under_bubblewrap_children_see_the_session_and_home_of_a_real_run(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The same strings as the gate's own, and its home directory at its own path, but
    empty (nothing of the user's is readable there) and writable, as a home is."""
    home = Path(tempfile.mkdtemp(prefix="oracle-gate-home-", dir=where))
    try:
        (home / "private.txt").write_text("the user's own\n")
        for name, value in SESSION.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.delenv("TMPDIR", raising=False)
        expected = [*SESSION.values(), str(home), [".cache-of-run"], False]
        _holds(repo, f"out == {expected!r}", READ_SESSION.format(names=list(SESSION)))
    finally:
        shutil.rmtree(home)


def test_children_have_the_builtins_site_gives_a_real_run(repo: GitRepo) -> None:
    """``python -S`` has no ``quit``: ``try: quit / except NameError: <checks>`` would pass
    the gate and skip its checks in a real run."""
    names = ["exit", "quit", "help", "copyright", "credits", "license"]
    code = (
        "import builtins\n\n\ndef run(x):\n    try:\n        quit\n"
        "    except NameError:\n        return 'under the gate'\n"
        f"    return [name for name in {names!r} if hasattr(builtins, name)]\n"
    )
    expected = names
    _holds(repo, f"out == {expected!r}", code)


def test_no_child_runs_under_a_hash_seed_code_could_know(repo: GitRepo) -> None:
    """Not 0 (randomization off), not the first few: ``hash('probe')`` under each, written
    into the patch, would tell the gate's children from a real run."""
    known = [
        int(
            subprocess.run(
                [sys.executable, "-c", "print(hash('probe'))"],
                env={**os.environ, "PYTHONHASHSEED": str(seed)},
                capture_output=True,
                check=True,
                text=True,
            ).stdout
        )
        for seed in range(8)
    ]
    code = f"def run(x):\n    return 'known' if hash('probe') in {known!r} else 'unknown'\n"
    _holds(repo, "out == 'unknown'", code)


@pytest.mark.parametrize(
    ("hidden", "visible", "expected"),
    [
        # the checkout under the private /tmp stays
        (
            ["/tmp"],
            ["/tmp/trees/head"],
            ["--tmpfs", "/tmp", "--ro-bind", "/tmp/trees/head", "/tmp/trees/head"],
        ),
        # a repository inside a shown directory stays hidden
        (
            ["/tmp", "/tmp/venv/repo"],
            ["/tmp/venv"],
            ["--tmpfs", "/tmp", "--ro-bind", "/tmp/venv", "/tmp/venv", "--tmpfs", "/tmp/venv/repo"],
        ),
        # a git directory inside the hidden working tree is not even a mount point there
        (["/tmp", "/srv/repo", "/srv/repo/.git"], [], ["--tmpfs", "/tmp", "--tmpfs", "/srv/repo"]),
        # a path outside every hidden one needs no mount; /tmp itself is never shown
        (["/tmp", "/srv/repo"], ["/usr", "/tmp"], ["--tmpfs", "/tmp", "--tmpfs", "/srv/repo"]),
    ],
)
def test_hidden_and_shown_paths_are_mounted_outermost_first(
    hidden: list[str], visible: list[str], expected: list[str]
) -> None:
    assert bubblewrap.layered_mounts(hidden, visible) == expected


def test_a_checkout_appears_at_the_repository_unless_the_gates_own_code_is_there(
    tmp_path: Path,
) -> None:
    """A virtual environment in the repository (not in the checkout) gets a mount point and
    the checkout still appears at the repository's path, on every child; the gate's own
    code run from the repository it gates would be hidden by the checkout's copy of it, so
    then the checkout stays where it is."""
    repo, checkout = tmp_path / "repo", tmp_path / "checkout"
    for directory in (repo / ".venv", repo / "python", checkout / "python"):
        directory.mkdir(parents=True)
    venv = sandbox.Runner(bwrap="bwrap", shown_at=str(repo), library=(str(repo / ".venv"),))
    for _ in range(2):
        command = venv._command(checkout, checkout, (3, 4), ())
        assert command[command.index(str(checkout.resolve())) + 1] == str(repo.resolve())
    assert (checkout / ".venv").is_dir()
    driver = sandbox.Runner(bwrap="bwrap", shown_at=str(repo), library=(str(repo / "python"),))
    command = driver._command(checkout, checkout, (3, 4), ())
    shown = command.index(str(checkout.resolve()))
    assert command[shown - 1 : shown + 2] == ["--ro-bind", *[str(checkout.resolve())] * 2]
    assert "--chdir" not in command


def test_python_in_the_home_directory_stays_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A virtual environment in the home directory, made from an installation there too
    (pyenv): the children get the home empty, but both show through it."""
    outside = Path(tempfile.mkdtemp(prefix="oracle-gate-home-", dir="/var/tmp"))
    try:
        _python_in_home_shows(outside / "home", tmp_path, monkeypatch)
    finally:
        shutil.rmtree(outside)


def _python_in_home_shows(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv, base = home / ".venv", home / ".pyenv" / "versions" / "3.11"
    for directory in (venv, base / "bin"):
        directory.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(sys, "exec_prefix", str(venv))
    monkeypatch.setattr(sys, "base_prefix", str(base))
    monkeypatch.setattr(sys, "base_exec_prefix", str(base))
    runner = sandbox.Runner(bwrap="bwrap", library=())
    assert runner.home() == str(home)
    command = runner._command(tmp_path / "checkout", tmp_path / "checkout", (3, 4), ())
    tmpfs = command.index(str(home.resolve()))
    assert command[tmpfs - 1] == "--tmpfs"
    for shown in (venv, base):
        real = str(shown.resolve())
        assert command[command.index(real) - 1 : command.index(real) + 2] == [
            "--ro-bind",
            real,
            real,
        ]
        assert command.index(real) > tmpfs


def test_a_placed_checkout_covers_the_repository_and_keeps_what_is_shown_inside_it() -> None:
    place = bubblewrap.Place("/tmp/trees/head", "/srv/repo")
    hidden = ["/tmp", "/srv/repo", "/srv/repo/.git", "/srv/common.git"]
    visible = ["/srv/repo/.venv", "/usr"]
    assert bubblewrap.layered_mounts(hidden, visible, place) == [
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/srv/common.git",
        "--ro-bind",
        "/tmp/trees/head",
        "/srv/repo",
        "--ro-bind",
        "/srv/repo/.venv",
        "/srv/repo/.venv",
    ]
    assert place.moved("/tmp/trees/head/pkg") == "/srv/repo/pkg"
    assert place.moved("/tmp/trees/header") == "/tmp/trees/header"


def test_without_bubblewrap_the_gate_says_so_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    # a gate that runs as root refuses instead, unless told it may (test_sandbox_privileges.py)
    monkeypatch.setenv(sandbox.UNSANDBOXED_ROOT, "1")
    monkeypatch.setattr(probe, "_said_no_sandbox", [])
    assert sandbox.find_bwrap() is None
    assert sandbox.find_bwrap() is None
    assert capsys.readouterr().err.count("bubblewrap (bwrap) is not usable here") == 1


def test_parse_answer_takes_exactly_one_frame() -> None:
    frame = b'{"a": 1}'
    one = len(frame).to_bytes(8, "big") + frame
    assert relay.parse_answer(one) == {"a": 1}
    for bad in (one + one, one + b"x", one[:-1], one[:3]):
        with pytest.raises(sandbox.RunnerTamper):
            relay.parse_answer(bad)
    with pytest.raises(sandbox.RunnerFailure, match="no answer"):
        relay.parse_answer(b"")


def test_top_level_modules_are_packages_and_single_files_at_a_package_root() -> None:
    files = [
        "libs/a/a/__init__.py",
        "libs/a/a/sub/__init__.py",
        "libs/a/a/sub/deep.py",
        "libs/a/props.py",
        "libs/a/conftest.py",
        "libs/a/test_props.py",
        "libs/a/props_test.py",
        "libs/a/__init__.py",
        "libs/a/README.md",
        "x/__init__.py",
        "libs/b/money.py",
    ]
    assert sandbox.top_level_modules(files, ["libs/a", ""]) == ("a", "props", "x")


# The same output whichever money it finds: only where money came from can fail the run.
USES_MONEY = "def run(x):\n    import money\n\n    return x * money.RATE // money.RATE\n"


def _money_here_and_installed(repo: GitRepo, tmp_path: Path) -> Path:
    """libs/money in the repository, a stale copy in a site directory (returned), and pkg/."""
    outside = tmp_path / "site"
    (outside / "money").mkdir(parents=True)
    (outside / "money" / "__init__.py").write_text("RATE = 1\n")
    repo.write("libs/money/money/__init__.py", "RATE = 2\n")
    _package(repo)
    return outside


@pytest.mark.parametrize("bwrap", [None, "bwrap"])
def test_the_childs_own_imports_are_never_the_packages_files(
    repo: GitRepo, bwrap: str | None
) -> None:
    """The child starts in the package directory: a package file named like a module the
    child itself imports (json, contextlib) must not stand in for it, or it could write
    the answer frame. Production code still imports the package's own modules."""
    if bwrap and sandbox.find_bwrap() is None:
        pytest.skip("bubblewrap is not installed")
    _package(repo)
    for name in ("json", "contextlib", "copy", "operator", "struct"):
        repo.write(f"pkg/{name}.py", 'raise RuntimeError("the package file ran in the child")\n')
    repo.write("pkg/helper.py", "STEP = 1\n")
    repo.write("pkg/mod.py", "import helper\n\n\ndef run(x):\n    return x + helper.STEP\n")
    runner = sandbox.Runner(library=sandbox.library_paths([repo.path]), bwrap=bwrap)
    request = {"role": "subject", "subject": "mod:run", "inputs": [["int", "1"]]}
    answer = runner.run(request, repo.path / "pkg", checkout=repo.path)
    assert answer == {"outputs": [{"ok": ["int", "2"]}]}


def test_a_repo_module_imported_from_outside_the_checkout_is_a_gate_error(
    repo: GitRepo, tmp_path: Path
) -> None:
    outside = _money_here_and_installed(repo, tmp_path)
    runner = sandbox.Runner(library=(str(outside),), bwrap=None, repo_modules=("money",))
    request = {"role": "subject", "subject": "mod:run", "inputs": [["int", "1"]]}
    # code that never imports money does not care where it would come from
    answer = runner.run(request, repo.path / "pkg", checkout=repo.path)
    assert answer == {"outputs": [{"ok": ["int", "1"]}]}
    repo.write("pkg/mod.py", USES_MONEY)
    with pytest.raises(GateError, match=r"money \(from .*site/money"):
        runner.run(request, repo.path / "pkg", checkout=repo.path)
    # declared as a dependency, it comes from the checkout: the honest neighbour runs
    paths = [repo.path / "pkg", repo.path / "libs/money"]
    answer = runner.run(request, repo.path / "pkg", import_paths=paths, checkout=repo.path)
    assert answer == {"outputs": [{"ok": ["int", "1"]}]}


def test_a_single_file_repo_module_imported_from_outside_the_checkout_is_a_gate_error(
    repo: GitRepo, tmp_path: Path
) -> None:
    """``money.py`` at a package root, and a stale copy installed in site-packages."""
    outside = tmp_path / "site"
    outside.mkdir()
    (outside / "money.py").write_text("RATE = 1\n")
    repo.write("libs/money/money.py", "RATE = 2\n")
    repo.write("libs/money/invariants.yaml", "version: 1\nrows: []\n")
    _package(repo)
    files = repo.git("ls-files").splitlines()
    modules = sandbox.top_level_modules(files, ["pkg", "libs/money"])
    assert "money" in modules
    runner = sandbox.Runner(library=(str(outside),), bwrap=None, repo_modules=modules)
    request = {"role": "subject", "subject": "mod:run", "inputs": [["int", "1"]]}
    repo.write("pkg/mod.py", USES_MONEY)
    with pytest.raises(GateError, match=r"money \(from .*site/money\.py"):
        runner.run(request, repo.path / "pkg", checkout=repo.path)
    paths = [repo.path / "pkg", repo.path / "libs/money"]
    answer = runner.run(request, repo.path / "pkg", import_paths=paths, checkout=repo.path)
    assert answer == {"outputs": [{"ok": ["int", "1"]}]}


def test_a_split_replay_whose_production_imports_a_repo_module_from_outside_is_a_gate_error(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The production child checks each answer: the import happens on the first call."""
    outside = _money_here_and_installed(repo, tmp_path)
    repo.write("pkg/mod.py", USES_MONEY)
    repo.write(
        "pkg/tests/test_mod.py",
        "from mod import run\n\n\ndef test_run():\n    assert run(3) == 3\n",
    )
    libraries = (str(outside), *sandbox.library_paths(exclude=[repo.path]))
    runner = sandbox.Runner(library=libraries, bwrap=None, repo_modules=("money", "mod"))
    request = {
        "role": "pytest_split",
        "files": ["tests/test_mod.py"],
        "test_side": ["pkg/tests/test_mod.py"],
    }
    pkg = repo.path / "pkg"
    with pytest.raises(GateError, match=r"money \(from .*site/money"):
        runner.run_served(request, pkg, import_paths=[pkg], checkout=repo.path)
    paths = [pkg, repo.path / "libs/money"]
    answer = runner.run_served(request, pkg, import_paths=paths, checkout=repo.path)
    assert answer["outcomes"] == {"tests/test_mod.py::test_run": "passed"}


def _pass_reasons(report: Report) -> str:
    return reasons_of(report, Verdict.PASS)


def test_code_under_test_finds_no_ledgers_locks_or_fixtures_and_no_hypothesis(
    repo: GitRepo,
) -> None:
    """The tamper lane rejects this patch statically; the run itself must also hold."""
    repo.write("pkg/data/known.json", "[1]\n")
    repo.write("pkg/flake_freeze.yaml", "frozen: []\nbudget: 2\n")
    _package(repo, contract="out == [['invariants.yaml', 'mod.py', 'partitions.py'], [], False]")
    repo.write("pkg/invariants.yaml", repo.read("pkg/invariants.yaml") + 'fixtures: ["data/**"]\n')
    repo.relock("pkg")
    base = repo.commit("fixtures, seeds and a lock")
    assert (repo.path / "pkg/oracle_gate.lock").is_file()
    code = (
        "import os, sys\n\n\ndef run(x):\n    here = os.path.dirname(__file__)\n"
        "    names = sorted(\n"
        "        n for n in os.listdir(here) if not os.path.isdir(os.path.join(here, n))\n    )\n"
        "    data = sorted(os.listdir(os.path.join(here, 'data')))\n"
        "    return [names, data, any(m.startswith('hypo') for m in sys.modules)]\n"
    )
    report = _patch(repo, base, code)
    assert "all 1 partition rows hold" in _pass_reasons(report), reasons_of(report)


def _with_money(repo: GitRepo, deps: str) -> str:
    """pkg/ whose subject imports ``money`` (a sibling package); returns the commit."""
    repo.write("money/invariants.yaml", "version: 1\nrows: []\n")
    repo.write("money/money/__init__.py", "RATE = 1\n")
    _package(repo)
    repo.replace("pkg/invariants.yaml", "version: 1\n", f"version: 1\n{deps}")
    return repo.commit("pkg uses money")


def test_a_declared_dependency_is_imported_from_the_same_checkout(repo: GitRepo) -> None:
    base = _with_money(repo, 'deps: ["../money"]\n')
    code = "def run(x):\n    from money import RATE\n\n    return x * RATE\n"
    report = _patch(repo, base, code)
    assert report.verdict is Verdict.PASS, reasons_of(report)


def test_an_undeclared_dependency_is_not_importable(repo: GitRepo) -> None:
    base = _with_money(repo, "")
    code = "def run(x):\n    from money import RATE\n\n    return x * RATE\n"
    reasons = reasons_of(_patch(repo, base, code))
    assert "partition S1 () raised ModuleNotFoundError: No module named 'money'" in reasons


def test_the_working_directory_on_sys_path_is_not_a_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m oracle_gate`` run from a directory puts that directory on sys.path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert str(tmp_path) not in sandbox.library_paths(exclude=())


@needs_bwrap
def test_a_library_path_of_tmp_itself_leaves_the_child_a_private_writable_tmp(
    repo: GitRepo,
) -> None:
    """Bound in whole, the gate's /tmp would hide the sandbox's own, read-only: pytest in
    the oracle child then found no usable temporary directory."""
    repo.write("pkg/mod.py", "def run(x):\n    return x\n")
    repo.write(
        "pkg/tests/test_mod.py",
        "import tempfile\n\nfrom mod import run\n\n\n"
        "def test_run():\n    with tempfile.TemporaryFile() as scratch:\n"
        "        scratch.write(b'x')\n    assert run(3) == 3\n",
    )
    library = ("/tmp", *sandbox.library_paths(exclude=[repo.path]))
    runner = sandbox.Runner(library=library, bwrap=sandbox.find_bwrap(), repo_modules=("mod",))
    request = {"role": "pytest_split", "files": ["tests/test_mod.py"], "test_side": []}
    pkg = repo.path / "pkg"
    answer = runner.run_served(request, pkg, import_paths=[pkg], checkout=repo.path)
    assert answer["outcomes"] == {"tests/test_mod.py::test_run": "passed"}


def _worktrees(repo: GitRepo) -> list[str]:
    listing = repo.git("worktree", "list", "--porcelain").splitlines()
    return [line for line in listing if line.startswith("worktree ")]


def test_the_worktrees_of_a_killed_check_are_removed_by_the_next(repo: GitRepo) -> None:
    """SIGKILL leaves no cleanup to run: git keeps both checkouts registered until the next
    check finds that no living run holds them."""
    base = _package(repo, seconds=60)
    repo.write("pkg/mod.py", "import time\n\n\ndef run(x):\n    time.sleep(60)\n    return x\n")
    slow = repo.commit("slow")
    command = [sys.executable, "-m", "oracle_gate", "check", "--base", base, "--head", slow]
    gate = subprocess.Popen(
        command, cwd=repo.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while len(_worktrees(repo)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(_worktrees(repo)) == 3
    finally:
        gate.kill()
        gate.wait()
    left = [Path(line.split(" ", 1)[1]) for line in _worktrees(repo)[1:]]
    assert len(left) == 2 and all(path.is_dir() for path in left)  # the kill left both
    repo.git("reset", "-q", "--hard", base)
    repo.write("README.md", "a note\n")  # the next check need not run any code
    report = repo.gate(base, repo.commit("docs"))
    assert report.verdict is Verdict.PASS, reasons_of(report)
    assert len(_worktrees(repo)) == 1
    assert not any(path.exists() for path in left)


def test_the_worktrees_of_a_running_check_are_kept(repo: GitRepo) -> None:
    """The honest neighbour: another check, at the same time, leaves them alone."""
    base = _package(repo)
    with checkouts.checkouts(repo.path, base, base) as trees:
        checkouts.prune_abandoned(repo.path)
        assert len(_worktrees(repo)) == 3
        assert trees.head.is_dir() and trees.parent.is_dir()
    assert len(_worktrees(repo)) == 1


def test_each_tmpfs_is_sized_and_the_hiding_ones_are_read_only() -> None:
    """/tmp, /dev/shm and the home directory take up to tmpfs-size; the repository's and
    /run's tmpfs only hide, and the directories on the way to a mount point inside a
    tmpfs are made searchable (bubblewrap 0.8 would make them 0700)."""
    options = bubblewrap.bwrap_options(
        ["/home/u/.pyenv/versions/3.11"],
        hidden=["/srv/repo", "/home/u"],
        writable=["/home/u"],
        tmpfs_size=8 << 20,
    )
    pairs = [options[i : i + 2] for i in range(len(options) - 1)]

    def before(path: str) -> list[str]:
        at = next(i for i, pair in enumerate(pairs) if pair == ["--tmpfs", path])
        return options[at - 4 : at]

    assert before("/tmp") == ["--perms", "1777", "--size", str(8 << 20)]
    assert before("/dev/shm") == ["--perms", "1777", "--size", str(8 << 20)]
    assert before("/home/u") == ["--perms", "0700", "--size", str(8 << 20)]
    assert before("/srv/repo")[2:] == ["--size", str(64 << 10)]
    remounted = {pair[1] for pair in pairs if pair[0] == "--remount-ro"}
    assert {"/dev", "/srv/repo"} <= remounted and not {"/tmp", "/dev/shm", "/home/u"} & remounted
    made = options.index("/home/u/.pyenv")
    assert options[made - 3 : made] == ["--perms", "0755", "--dir"]
    assert made < options.index("/home/u/.pyenv/versions") < options.index("--ro-bind", made)


def test_a_directory_nobody_cannot_pass_is_found_on_the_way(tmp_path: Path) -> None:
    """The outermost one on the way to each path, unless the sandbox replaces it anyway."""
    locked = Path(tempfile.mkdtemp(prefix="oracle-gate-locked-", dir="/var/tmp"))
    try:
        (locked / "inner").mkdir(mode=0o700)
        repo = str(locked / "inner" / "repo")
        nobody = privileges.Identity(65534, 65534, drops_root=True)
        assert privileges.unsearchable([repo], [], nobody) == [str(locked)]
        assert privileges.unsearchable([repo], [str(locked)], nobody) == []
        owner = privileges.Identity(os.getuid(), os.getgid(), drops_root=False)
        assert privileges.unsearchable([repo], [], owner) == []
        assert privileges.unsearchable(["/usr/lib"], [], nobody) == []
    finally:
        shutil.rmtree(locked)
