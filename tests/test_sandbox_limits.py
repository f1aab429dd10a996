"""What a child may use: each limit holds, and the reject names it (and its setting).

One repository serves the module: its parent sets small limits, and each test
patches ``run`` from that parent to run into one of them, so the row's partition
fails with that limit as the reason; an honest patch within every limit passes.
"""

from __future__ import annotations

import os
import resource
import shutil
from collections.abc import Iterator

import pytest

from gitrepo import GitRepo
from oracle_gate.config.settings import Settings, read_settings
from oracle_gate.errors import ConfigError
from oracle_gate.model import Verdict
from oracle_gate.repo.trees import GitTree
from oracle_gate.report import Report
from oracle_gate.runtime import sandbox
from oracle_gate.runtime.limits import Limits, format_size, parse_size
from reports import reasons_of

# CI installs bubblewrap and sets ORACLE_GATE_REQUIRE_BWRAP (.ci/run): there a missing
# bwrap fails instead of skipping.
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("ORACLE_GATE_REQUIRE_BWRAP"),
    reason="bubblewrap not installed",
)

SETTINGS = (
    "timeout-floor = 1\n"
    'memory-limit = "512 MiB"\n'
    "cpu-limit = 2\n"
    "process-limit = 16\n"
    "open-files-limit = 64\n"
    'file-size-limit = "2 MiB"\n'
    'tmpfs-size = "8 MiB"\n'
)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GitRepo, str]]:
    """pkg/ with one partition row (``run(1) == 1``) under the small limits; (repo, base)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        for who in ("AUTHOR", "COMMITTER"):
            patch.setenv(f"GIT_{who}_NAME", "t")
            patch.setenv(f"GIT_{who}_EMAIL", "t@example.com")
            patch.setenv(f"GIT_{who}_DATE", "2026-01-01T00:00:00Z")
        repo = GitRepo.init(tmp_path_factory.mktemp("limits") / "repo")
        repo.write(
            "pkg/invariants.yaml",
            'version: 1\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
            '    partitions: ["partitions.py:PARTITIONS"]\n    budget: {seconds: 60}\n',
        )
        repo.write("pkg/mod.py", "def run(x):\n    return x\n")
        repo.write(
            "pkg/partitions.py",
            'SUBJECT = "mod:run"\nPARTITIONS = [{"id": "S1", "kind": "representative", '
            '"input": 1, "contract": lambda out: out == 1}]\n',
        )
        repo.write("oracle-gate.toml", SETTINGS)
        yield repo, repo.commit("package under small limits")


def _patched(limited: tuple[GitRepo, str], body: str, replay: bool = False) -> Report:
    """The gate on ``run`` patched to ``body`` (indented, returning x) from the parent."""
    repo, base = limited
    repo.git("reset", "-q", "--hard", base)
    repo.write("pkg/mod.py", f"import os\nimport threading\n\n\ndef run(x):\n{body}    return x\n")
    return repo.gate(base, repo.commit("patch"), replay=replay)


def test_allocating_past_the_memory_limit_is_a_reject_naming_it(
    limited: tuple[GitRepo, str],
) -> None:
    reasons = reasons_of(_patched(limited, "    bytearray(1 << 30)\n"))
    assert "memory limit 512 MiB reached (setting memory-limit)" in reasons, reasons


@needs_bwrap
def test_spinning_past_the_cpu_limit_is_a_reject_naming_it(limited: tuple[GitRepo, str]) -> None:
    """Killed by SIGXCPU: the child gives no answer, and its exit says why."""
    reasons = reasons_of(_patched(limited, "    while True:\n        pass\n"))
    assert "CPU time limit 2 s reached (setting cpu-limit)" in reasons, reasons


@needs_bwrap
def test_starting_threads_past_the_process_limit_is_a_reject_naming_it(
    limited: tuple[GitRepo, str],
) -> None:
    """Each thread's stack is address space too: 16 of them fit well within 512 MiB."""
    body = (
        "    stop = threading.Event()\n"
        "    for _ in range(32):\n"
        "        threading.Thread(target=stop.wait, daemon=True).start()\n"
    )
    reasons = reasons_of(_patched(limited, body))
    assert "process limit 16 reached (setting process-limit)" in reasons, reasons


def test_opening_files_past_the_open_files_limit_is_a_reject_naming_it(
    limited: tuple[GitRepo, str],
) -> None:
    body = "    held = [open(os.devnull) for _ in range(100)]\n"
    reasons = reasons_of(_patched(limited, body))
    assert "open files limit 64 reached (setting open-files-limit)" in reasons, reasons


def test_writing_past_the_file_size_limit_is_a_reject_naming_it(
    limited: tuple[GitRepo, str],
) -> None:
    body = (
        "    import tempfile\n    with tempfile.TemporaryFile() as big:\n"
        "        big.write(bytes(3 << 20))\n        big.flush()\n"
    )
    reasons = reasons_of(_patched(limited, body))
    assert "file size limit 2 MiB reached (setting file-size-limit)" in reasons, reasons


@needs_bwrap
@pytest.mark.parametrize("where", ["'/tmp'", "os.path.expanduser('~')", "'/dev/shm'"])
def test_filling_a_tmpfs_of_the_sandbox_is_a_reject_naming_its_size(
    limited: tuple[GitRepo, str], where: str
) -> None:
    body = (
        f"    for n in range(16):\n"
        f"        with open(os.path.join({where}, f'part{{n}}'), 'wb') as part:\n"
        f"            part.write(bytes(1 << 20))\n"
    )
    reasons = reasons_of(_patched(limited, body))
    expected = "size limit of the sandbox's /tmp, home directory and /dev/shm 8 MiB reached"
    assert f"{expected} (setting tmpfs-size)" in reasons, reasons


@needs_bwrap
def test_code_within_every_limit_passes(limited: tuple[GitRepo, str]) -> None:
    """The honest neighbour: some memory, threads, files, a file in /tmp and one at home."""
    body = (
        "    kept = bytearray(64 << 20)\n"
        "    workers = [threading.Thread(target=len, args=(kept,)) for _ in range(4)]\n"
        "    for worker in workers:\n        worker.start()\n"
        "    for worker in workers:\n        worker.join()\n"
        "    held = [open(os.devnull) for _ in range(16)]\n"
        "    for where in ('/tmp', os.path.expanduser('~'), '/dev/shm'):\n"
        "        with open(os.path.join(where, 'part'), 'wb') as part:\n"
        "            part.write(bytes(1 << 20))\n"
    )
    report = _patched(limited, body, replay=True)
    assert report.verdict is Verdict.PASS, reasons_of(report)


SERVED_TEST = """import resource

from mod import caps


def test_both_children_are_capped():
    assert caps() == [{limit}, {limit}]
    assert resource.getrlimit(resource.RLIMIT_AS) == ({limit}, {limit})
"""


@pytest.mark.parametrize("bwrap", [None, "bwrap"])
def test_both_children_of_a_split_run_are_capped(
    repo: GitRepo, bwrap: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle child (pytest and the tests) and the production child serving its calls."""
    if bwrap and sandbox.find_bwrap() is None:
        pytest.skip("bubblewrap is not installed")
    monkeypatch.setenv(sandbox.UNSANDBOXED_ROOT, "1")
    limit = 384 << 20
    caps = "def caps():\n    return list(resource.getrlimit(resource.RLIMIT_AS))\n"
    repo.write("pkg/mod.py", f"import resource\n\n\n{caps}")
    repo.write("pkg/tests/test_mod.py", SERVED_TEST.format(limit=limit))
    runner = sandbox.Runner(
        library=sandbox.library_paths(exclude=[repo.path]),
        bwrap=bwrap and sandbox.find_bwrap(),
        repo_modules=("mod",),
        limits=Limits(memory=limit),
    )
    request = {"role": "pytest_split", "files": ["tests/test_mod.py"], "test_side": []}
    pkg = repo.path / "pkg"
    answer = runner.run_served(request, pkg, import_paths=[pkg], checkout=repo.path)
    assert answer["outcomes"] == {"tests/test_mod.py::test_both_children_are_capped": "passed"}


def test_no_settings_give_the_generous_default_limits(repo: GitRepo) -> None:
    repo.write("README.md", "x\n")
    settings = read_settings(GitTree(repo.path, repo.commit("no settings")))
    assert settings.limits == Limits()
    assert (format_size(Limits().memory), Limits().cpu_seconds) == ("4 GiB", 600)


def test_limit_settings_are_read_in_their_units(repo: GitRepo) -> None:
    repo.write("oracle-gate.toml", SETTINGS)
    settings = read_settings(GitTree(repo.path, repo.commit("limits")))
    assert settings.limits == Limits(
        memory=512 << 20,
        cpu_seconds=2,
        processes=16,
        open_files=64,
        file_size=2 << 20,
        tmpfs_size=8 << 20,
    )
    assert Settings().limits == Limits()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('memory-limit = "4 GB"\n', "oracle-gate.toml:1: 'memory-limit' must be a size"),
        ("\nmemory-limit = 1024\n", "oracle-gate.toml:2: 'memory-limit' must be a size"),
        ('tmpfs-size = "-1 MiB"\n', "oracle-gate.toml:1: 'tmpfs-size' must be a size"),
        ('file-size-limit = ["1 GiB"]\n', "oracle-gate.toml:1: 'file-size-limit' must be a size"),
        ("cpu-limit = 0\n", "oracle-gate.toml:1: 'cpu-limit' must be a number of CPU seconds"),
        ('cpu-limit = "60"\n', "oracle-gate.toml:1: 'cpu-limit' must be a number of CPU seconds"),
        ("process-limit = true\n", "oracle-gate.toml:1: 'process-limit' must be a number of"),
        ("open-files-limit = 8\n", "oracle-gate.toml:1: 'open-files-limit' must be a number of"),
    ],
)
def test_a_bad_limit_setting_is_a_config_error_naming_file_and_line(
    repo: GitRepo, text: str, message: str
) -> None:
    repo.write("oracle-gate.toml", text)
    with pytest.raises(ConfigError) as error:
        read_settings(GitTree(repo.path, repo.commit("bad limit")))
    assert str(error.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "size"),
    [(4096, 4096), ("4 GiB", 4 << 30), ("512 MiB", 512 << 20), ("10 KiB", 10240), ("7 B", 7)],
)
def test_sizes_are_bytes_or_a_whole_number_of_a_unit(text: object, size: int) -> None:
    assert parse_size(text) == size
    assert parse_size(format_size(size)) == size


@pytest.mark.parametrize("text", ["4GB", "4 GB", "1.5 GiB", "0 MiB", "", True, 0, -3, 2.0])
def test_other_sizes_are_not_sizes(text: object) -> None:
    assert parse_size(text) is None


def test_a_child_never_raises_a_limit_above_the_gates_own() -> None:
    """setrlimit above the hard limit needs a privilege the child does not have."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limits = Limits(open_files=1 << 20).rlimits(own_user_namespace=False)
    wanted_soft, wanted_hard = limits[resource.RLIMIT_NOFILE]
    assert wanted_hard <= (hard if hard != resource.RLIM_INFINITY else 1 << 62)
    assert wanted_soft <= (soft if soft != resource.RLIM_INFINITY else 1 << 62)
    assert resource.RLIMIT_NPROC not in limits  # counted per user outside a namespace


def test_the_process_limit_is_set_only_in_a_namespace_of_its_own() -> None:
    assert Limits(processes=64).rlimits(own_user_namespace=True)[resource.RLIMIT_NPROC] == (64, 64)
