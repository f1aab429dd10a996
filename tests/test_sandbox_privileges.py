"""A gate that runs as root: its children hold no privilege, and every way out is shut.

Each attack is what a patch did to a gate that ran its children as root: its
production code runs a script the static lanes never read (``tune.txt``), which
takes ``/proc`` and the sandbox's mounts away, makes ``/`` writable, and then
writes the user's tree, ``.git``, ``$HOME``, the gate's cache or the host's
``/tmp``; reads the gate's environment or memory; joins its network namespace;
plants a git hook; or rewrites the object of a test the parent holds. The patch
is one the gate must reject (``run`` is off by one), and it turns honest
exactly when its attack worked: so each attack that works shows as a MERGE.
Each must fail, and the reject stand.
"""

from __future__ import annotations

import ast
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitrepo import GitRepo, isolate_git, run
from oracle_gate.errors import GitError, RefusedError
from oracle_gate.model import Verdict
from oracle_gate.report import Report
from oracle_gate.runtime import sandbox, seccomp
from oracle_gate.runtime.canonical import decode

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="these attacks are a root gate's; run the tests as root (CI does)"
)
# CI installs bubblewrap and sets ORACLE_GATE_REQUIRE_BWRAP (.ci/run): there a missing
# bwrap fails (the gate refuses to run the patch's code) instead of skipping.
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("ORACLE_GATE_REQUIRE_BWRAP"),
    reason="bubblewrap not installed",
)

# Production code that runs the attack and passes the row only when it worked.
MOD = """import os
import subprocess
import sys
import sys


def run(x):
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "tune.txt")
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, check=False)
    return x if "escaped" in done.stdout else x + 1
"""
# What every attack does first: what a child holding root's capabilities could.
ESCAPE = """import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)


def peel(path, times=4):
    for _ in range(times):
        libc.umount2(path.encode(), 2)  # MNT_DETACH


def writable_root():
    libc.mount(None, b"/", None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND, not read-only


def processes():
    return [name for name in os.listdir("/proc") if name.isdigit()]


def in_some_process(look):
    \"\"\"Whether ``look(pid)`` holds for a process in sight, once the host's /proc is.\"\"\"
    peel("/proc", 1)  # the host's own /proc lies beneath
    for pid in processes():
        try:
            if look(pid):
                return True
        except OSError:
            pass
    return False

"""
# Writes ``target`` if the directory it is in is the host's: there, the ``canary`` the
# test left is in sight (the sandbox's own /tmp and home are writable, and empty).
WRITE = (
    ESCAPE
    + """
for path in {peel!r}:
    peel(path)
writable_root()
try:
    if not os.path.exists({canary!r}):
        raise FileNotFoundError({canary!r})
    with open({target!r}, "w") as planted:
        planted.write({text!r})
    os.chmod({target!r}, 0o755)
    print("escaped")
except OSError:
    print("contained")
"""
)
READ_ENVIRONMENT = (
    ESCAPE
    + """
def environment(pid):
    with open(f"/proc/{pid}/environ", "rb") as environ:
        return b"GITHUB_TOKEN=" in environ.read()


print("escaped" if in_some_process(environment) else "contained")
"""
)
READ_MEMORY = (
    ESCAPE
    + """
def memory(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        if b"-m\\0oracle_gate\\0check\\0" not in cmdline.read():
            return False
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            if "[stack]" in line or "[heap]" in line:
                start, end = (int(part, 16) for part in line.split()[0].split("-"))
                mem.seek(start)
                if b"GITHUB_TOKEN" in mem.read(end - start):
                    return True
    return False


print("escaped" if in_some_process(memory) else "contained")
"""
)
JOIN_NETWORK = (
    ESCAPE
    + """import socket

mine = os.readlink("/proc/self/ns/net")


def join(pid):
    if os.readlink(f"/proc/{{pid}}/ns/net") == mine:
        return False
    return libc.setns(os.open(f"/proc/{{pid}}/ns/net", os.O_RDONLY), 0x40000000) == 0


in_some_process(join)
reached = False
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    reached = True
except OSError:
    pass
print("escaped" if reached else "contained")
"""
)
# The parent's test, which the off-by-one patch fails: an honest test that always passes.
TEST = "from mod import run\n\n\ndef test_run():\n    assert run(1) == 1\n"
FORGED_TEST = "def test_run():\n    pass\n"
HOOK = "#!/bin/sh\necho ran > {marker}\n"


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GitRepo, str]]:
    """pkg/ whose row S1 needs ``run(1) == 1``, with a test of the same; (repo, parent).

    In /var/tmp, outside the sandbox's private /tmp, as a user's repository is.
    """
    outside = Path(tempfile.mkdtemp(prefix="oracle-gate-attacked-", dir="/var/tmp"))
    with pytest.MonkeyPatch.context() as patch:
        isolate_git(patch)
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        repo = GitRepo.init(outside / "repo")
        repo.write(
            "pkg/invariants.yaml",
            'version: 1\ntests: ["tests/test_*.py"]\nrows:\n'
            '  - id: r\n    globs: ["mod.py", "tune.txt"]\n'
            '    partitions: ["partitions.py:PARTITIONS"]\n    budget: {seconds: 30}\n',
        )
        repo.write("pkg/mod.py", "def run(x):\n    return x\n")
        repo.write("pkg/tests/test_mod.py", TEST)
        repo.write(
            "pkg/partitions.py",
            'SUBJECT = "mod:run"\nPARTITIONS = [{"id": "S1", "kind": "representative", '
            '"input": 1, "contract": lambda out: out == 1}]\n',
        )
        repo.write("oracle-gate.toml", "timeout-floor = 1\n")
        try:
            yield repo, repo.commit("package")
        finally:
            shutil.rmtree(outside, ignore_errors=True)


def _attack(attacked: tuple[GitRepo, str], script: str, parent: str | None = None) -> str:
    """The off-by-one patch with ``script`` as its attack, from ``parent``; its commit."""
    repo, base = attacked
    repo.git("reset", "-q", "--hard", parent or base)
    repo.write("pkg/mod.py", MOD)
    repo.write("pkg/tune.txt", script)
    return repo.commit("tune")


def _rejected_by_the_row(report: Report) -> None:
    reasons = "\n".join(f.reason for f in report.findings if f.verdict is Verdict.REJECT)
    assert report.verdict is Verdict.REJECT, "the attack worked: the patch got MERGE"
    assert "partition S1 (representative: ) fails its contract" in reasons, reasons


def test_the_control_run_rejects_the_patch(attacked: tuple[GitRepo, str]) -> None:
    """Without an attack that works, the patch is what it is: off by one."""
    repo, base = attacked
    head = _attack(attacked, 'print("contained")\n')
    _rejected_by_the_row(repo.gate(base, head))


@needs_bwrap
@pytest.mark.parametrize("where", ["tree", ".git", "home", "cache", "host tmp"])
def test_a_child_cannot_write_outside_its_sandbox(
    attacked: tuple[GitRepo, str], where: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, base = attacked
    home = Path(tempfile.mkdtemp(prefix="oracle-gate-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    cache = Path(os.environ["XDG_CACHE_HOME"])
    cache.mkdir(parents=True, exist_ok=True)
    peel, directory = {
        "tree": ([str(repo.path)], repo.path),
        ".git": ([str(repo.path)], repo.path / ".git"),
        "home": ([str(home)], home),
        "cache": (["/tmp", str(cache)], cache),
        "host tmp": (["/tmp"], Path("/tmp")),
    }[where]
    canary = directory / f"oracle-gate-canary-{tmp_path.name}"
    target = directory / f"oracle-gate-planted-{tmp_path.name}"
    canary.write_text("the host's\n")
    try:
        script = WRITE.format(peel=peel, canary=str(canary), target=str(target), text="pwned")
        _rejected_by_the_row(repo.gate(base, _attack(attacked, script)))
        assert not target.exists()
    finally:
        shutil.rmtree(home, ignore_errors=True)
        for planted in (canary, target):
            planted.unlink(missing_ok=True)


@needs_bwrap
@pytest.mark.parametrize("script", [READ_ENVIRONMENT, READ_MEMORY], ids=["environment", "memory"])
def test_a_child_cannot_read_the_gates_environment_or_memory(
    attacked: tuple[GitRepo, str], script: str
) -> None:
    """The gate is a process of its own here, started with the secrets in its environment."""
    repo, base = attacked
    head = _attack(attacked, script)
    done = run("check", "--base", base, "--head", head, cwd=repo.path, GITHUB_TOKEN="s3cr3t")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "partition S1 (representative: ) fails its contract" in done.stdout


@needs_bwrap
def test_a_child_cannot_join_the_gates_network_namespace(attacked: tuple[GitRepo, str]) -> None:
    repo, base = attacked
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        head = _attack(attacked, JOIN_NETWORK.format(port=port))
        _rejected_by_the_row(repo.gate(base, head))
        listener.settimeout(0)
        with pytest.raises(BlockingIOError):
            listener.accept()


@needs_bwrap
def test_a_hook_a_child_plants_never_runs(attacked: tuple[GitRepo, str], tmp_path: Path) -> None:
    """The next check adds worktrees, which runs a post-checkout hook."""
    repo, base = attacked
    marker = tmp_path / "hook-ran"
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    script = WRITE.format(
        peel=[str(repo.path)],
        canary=str(repo.path / ".git" / "HEAD"),
        target=str(hook),
        text=HOOK.format(marker=marker),
    )
    _rejected_by_the_row(repo.gate(base, _attack(attacked, script)))
    assert not hook.exists()
    repo.gate(base, _attack(attacked, 'print("contained")\n'))
    assert not marker.exists()


def test_no_git_command_of_the_gate_runs_a_repository_hook(
    attacked: tuple[GitRepo, str], tmp_path: Path
) -> None:
    """Planted by anything that could write .git (code run without the sandbox): git itself
    runs it, the gate's git commands never do."""
    repo, base = attacked
    marker = tmp_path / "hook-ran"
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(HOOK.format(marker=marker))
    hook.chmod(0o755)
    try:
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(tmp_path / "plain"), base],
            cwd=repo.path,
            check=True,
        )
        assert marker.exists()  # the hook works
        marker.unlink()
        repo.git("worktree", "remove", "--force", str(tmp_path / "plain"))
        _rejected_by_the_row(repo.gate(base, _attack(attacked, 'print("contained")\n')))
        assert not marker.exists()
    finally:
        hook.unlink()


def _forged_object_attack(attacked: tuple[GitRepo, str]) -> tuple[str, str, Path, bytes]:
    """A parent whose row takes any integer, so only the parent's test catches the
    off-by-one, and a patch that rewrites that test's loose object into one that always
    passes; (parent, head, the object's file, its bytes)."""
    repo, base = attacked
    repo.git("reset", "-q", "--hard", base)
    repo.replace("pkg/partitions.py", "lambda out: out == 1", "lambda out: isinstance(out, int)")
    parent = repo.commit("any integer")
    oid = repo.git("rev-parse", f"{parent}:pkg/tests/test_mod.py").strip()
    loose = repo.path / ".git" / "objects" / oid[:2] / oid[2:]
    forged = zlib.compress(b"blob %d\0" % len(FORGED_TEST) + FORGED_TEST.encode())
    rewrite = ESCAPE + (
        f"peel({str(repo.path)!r})\nwritable_root()\n"
        f"try:\n    os.chmod({str(loose)!r}, 0o644)\n"
        f"    with open({str(loose)!r}, 'wb') as stored:\n        stored.write({forged!r})\n"
        "    print('escaped')\nexcept OSError:\n    print('contained')\n"
    )
    return parent, _attack(attacked, rewrite, parent), loose, loose.read_bytes()


@needs_bwrap
def test_a_child_cannot_rewrite_an_object_the_verdict_reads(
    attacked: tuple[GitRepo, str],
) -> None:
    repo, _ = attacked
    parent, head, loose, stored = _forged_object_attack(attacked)
    report = repo.gate(parent, head)
    assert report.verdict is Verdict.REJECT, "the forged test passed the replay: MERGE"
    assert loose.read_bytes() == stored


def test_a_rewritten_object_is_a_gate_error_even_without_the_sandbox(
    attacked: tuple[GitRepo, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as root unsandboxed (the documented opt-out), the patch does rewrite the object;
    the gate reads it back checked against its id and stops, rather than judge by it."""
    repo, _ = attacked
    parent, head, loose, stored = _forged_object_attack(attacked)
    monkeypatch.setenv(sandbox.UNSANDBOXED_ROOT, "1")
    monkeypatch.setattr("oracle_gate.gate.find_bwrap", lambda: None)
    try:
        with pytest.raises(GitError, match="does not hold what its id names"):
            repo.gate(parent, head)
    finally:
        loose.chmod(0o644)
        loose.write_bytes(stored)


STATUS = """import os
import subprocess
import sys


def run(x):
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    names = ["Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]
    seen = {{name: fields[name].split() for name in [*names, "NoNewPrivs", "Seccomp"]}}
    spaces = ["user", "mnt", "pid", "net", "ipc", "uts", "cgroup"]
    seen["namespaces"] = [os.readlink(f"/proc/self/ns/{{name}}") for name in spaces]
    nested = subprocess.run(["unshare", "--user", "true"], capture_output=True, check=False)
    seen["unshare"] = nested.returncode
    return seen
"""


@needs_bwrap
def test_a_child_runs_as_nobody_with_no_capability_in_namespaces_of_its_own(
    repo: GitRepo,
) -> None:
    repo.write("pkg/mod.py", STATUS.format())
    runner = sandbox.Runner(library=sandbox.library_paths([repo.path]), bwrap=sandbox.find_bwrap())
    request = {"role": "subject", "subject": "mod:run", "inputs": [["int", "1"]]}
    answer = runner.run(request, repo.path / "pkg", checkout=repo.path)
    seen = decode(answer["outputs"][0]["ok"])
    nobody = [str(65534)] * 4
    assert (seen["Uid"], seen["Gid"], seen["Groups"]) == (nobody, nobody, [])
    for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert seen[name] == ["0000000000000000"], name
    assert (seen["NoNewPrivs"], seen["Seccomp"]) == (["1"], ["2"])
    spaces = ["user", "mnt", "pid", "net", "ipc", "uts", "cgroup"]
    gates = [os.readlink(f"/proc/self/ns/{name}") for name in spaces]
    assert all(a != b for a, b in zip(seen["namespaces"], gates, strict=True)), seen["namespaces"]
    assert seen["unshare"] != 0  # no user namespace of its own making either


FAKE_BWRAP = "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"


def _broken_bwrap(tmp_path: Path) -> dict[str, str]:
    """PATH with a bubblewrap first that cannot make a sandbox, as in a locked-down container."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text(FAKE_BWRAP)
    (fake / "bwrap").chmod(stat.S_IRWXU)
    return {"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}


def test_a_root_gate_refuses_to_run_code_without_a_sandbox(
    attacked: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = attacked
    head = _attack(attacked, 'print("contained")\n')
    done = run("check", "--base", base, "--head", head, cwd=repo.path, **_broken_bwrap(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "refusing to run the patch's code as root without a sandbox" in lines[0]
    assert "No permissions to create new namespace" in lines[0]
    assert f"{sandbox.UNSANDBOXED_ROOT}=1" in lines[0]


def test_the_refusal_can_be_waived_and_a_patch_that_runs_no_code_needs_no_sandbox(
    attacked: tuple[GitRepo, str], tmp_path: Path
) -> None:
    """Waived, the code runs as root (and the verdict is still the row's); a patch of
    documentation alone runs nothing, so it is judged with no sandbox at all."""
    repo, base = attacked
    head = _attack(attacked, 'print("contained")\n')
    broken = _broken_bwrap(tmp_path)
    waived = run("check", "--base", base, "--head", head, cwd=repo.path, **broken, **{
        sandbox.UNSANDBOXED_ROOT: "1"
    })  # fmt: skip
    assert waived.returncode == 1, waived.stdout + waived.stderr
    assert "bubblewrap (bwrap) is not usable here" in waived.stderr
    repo.git("reset", "-q", "--hard", base)
    repo.write("docs/notes.md", "a note\n")
    docs = repo.commit("docs")
    done = run("check", "--base", base, "--head", docs, cwd=repo.path, **broken)
    assert done.returncode == 0, done.stdout + done.stderr


def test_find_bwrap_refuses_as_root_when_the_sandbox_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _broken_bwrap(tmp_path)["PATH"])
    monkeypatch.delenv(sandbox.UNSANDBOXED_ROOT, raising=False)
    with pytest.raises(RefusedError, match="cannot take root's privileges away here"):
        sandbox.find_bwrap()


# The seccomp program, run on struct seccomp_data the way the kernel does.
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050001, 0x00050026


def _decide(program: bytes, arch: int, nr: int, *args: int) -> int:
    """What the filter returns for one call (classic BPF: A, jumps, returns)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *args, *[0] * (6 - len(args)))
    instructions = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = instructions[pc]
        if code == 0x20:
            (accumulator,) = struct.unpack_from("=I", data, k)
        elif code == 0x06:
            return k
        else:
            taken = {
                0x15: accumulator == k,
                0x35: accumulator >= k,
                0x45: bool(accumulator & k),
            }[code]
            pc += jt if taken else jf
        pc += 1


@pytest.mark.parametrize(
    ("machine", "numbers"),
    [
        ("x86_64", {"read": 0, "openat": 257, "mount": 165, "ptrace": 101, "keyctl": 250}),
        ("aarch64", {"read": 63, "openat": 56, "mount": 40, "ptrace": 117, "keyctl": 219}),
    ],
)
def test_the_seccomp_program_refuses_what_it_lists_and_allows_the_rest(
    machine: str, numbers: dict[str, int]
) -> None:
    program = seccomp.program(machine)
    assert program is not None and len(program) % 8 == 0 and len(program) // 8 < 4096
    arch = _AUDIT_ARCH[machine]
    for name in ("read", "openat"):
        assert _decide(program, arch, numbers[name]) == _ALLOW, name
    for name in ("mount", "ptrace", "keyctl"):
        assert _decide(program, arch, numbers[name]) == _EPERM, name
    assert _decide(program, arch ^ 1, numbers["read"]) == _ENOSYS  # another architecture
    table = seccomp._ARCHITECTURES[machine][1]
    for name in seccomp.DENIED:
        if name in table:
            assert _decide(program, arch, table[name]) == _EPERM, name
    clone, clone3, ioctl = table["clone"], table["clone3"], table["ioctl"]
    assert _decide(program, arch, clone, 0x01200011) == _ALLOW  # fork's flags
    assert _decide(program, arch, clone, 0x003D0F00) == _ALLOW  # a thread's
    assert _decide(program, arch, clone, 0x10000000 | 0x11) == _EPERM  # CLONE_NEWUSER
    assert _decide(program, arch, clone, 0x40000000) == _EPERM  # CLONE_NEWNET
    assert _decide(program, arch, clone3) == _ENOSYS
    assert _decide(program, arch, ioctl, 0, 0x5412) == _EPERM  # TIOCSTI
    assert _decide(program, arch, ioctl, 0, 0x5401) == _ALLOW  # TCGETS


def test_the_seccomp_program_refuses_the_x32_numbering_and_knows_no_other_machine() -> None:
    program = seccomp.program("x86_64")
    assert program is not None
    assert _decide(program, _AUDIT_ARCH["x86_64"], 0x40000000 | 0) == _ENOSYS
    assert seccomp.program("riscv64") is None


@needs_bwrap
def test_a_child_cannot_mount_trace_or_enter_a_namespace(repo: GitRepo) -> None:
    """The kernel applies the filter: each call fails with EPERM inside the sandbox."""
    repo.write(
        "pkg/mod.py",
        "import ctypes, errno, os\n\n\ndef run(x):\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    calls = {\n"
        "        'mount': lambda: libc.mount(b'none', b'/tmp', b'tmpfs', 0, None),\n"
        "        'umount': lambda: libc.umount2(b'/proc', 2),\n"
        "        'ptrace': lambda: libc.ptrace(16, 1, 0, 0),\n"
        "        'setns': lambda: libc.setns(os.open('/proc/self/ns/net', os.O_RDONLY), 0),\n"
        "        'unshare': lambda: libc.unshare(0x40000000),\n"
        "        'keyctl': lambda: libc.syscall(250 if os.uname().machine == 'x86_64' else 219,"
        " 0, 0, 0, 0, 0),\n"
        "    }\n"
        "    seen = {}\n"
        "    for name, call in calls.items():\n"
        "        seen[name] = 'ok' if call() == 0 else errno.errorcode[ctypes.get_errno()]\n"
        "    return seen\n",
    )
    runner = sandbox.Runner(library=sandbox.library_paths([repo.path]), bwrap=sandbox.find_bwrap())
    request = {"role": "subject", "subject": "mod:run", "inputs": [["int", "1"]]}
    answer = runner.run(request, repo.path / "pkg", checkout=repo.path)
    seen = decode(answer["outputs"][0]["ok"])
    names = ["mount", "umount", "ptrace", "setns", "unshare", "keyctl"]
    assert seen == dict.fromkeys(names, "EPERM"), seen


AS_A_USER = """
import sys
from pathlib import Path

from oracle_gate.runtime import sandbox
from oracle_gate.runtime.canonical import decode

runner = sandbox.Runner(bwrap=sandbox.find_bwrap(), library=())
request = {"role": "subject", "subject": "mod:run", "inputs": [["int", "1"]]}
answer = runner.run(request, Path(sys.argv[1]) / "pkg", checkout=Path(sys.argv[1]))
print(decode(answer["outputs"][0]["ok"]))
"""


@needs_bwrap
def test_a_gate_run_by_a_user_gives_its_children_that_user_and_no_capability(
    tmp_path: Path,
) -> None:
    """The other side of the rule, run here as ``nobody``: bubblewrap maps the user's own
    id, drops every capability and forbids a nested user namespace."""
    python = next((p for p in (sys.executable, "/usr/bin/python3") if _runs_as_nobody(p)), None)
    if python is None:
        pytest.skip("no interpreter with oracle_gate that the unprivileged user can run")
    checkout = Path(tempfile.mkdtemp(prefix="oracle-gate-user-", dir="/var/tmp"))
    try:
        (checkout / "pkg").mkdir()
        (checkout / "pkg" / "mod.py").write_text(STATUS.format())
        for path in (checkout, checkout / "pkg", checkout / "pkg" / "mod.py"):
            path.chmod(0o755)
        done = subprocess.run(
            [python, "-c", AS_A_USER, str(checkout)],
            **_as_nobody(),
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        shutil.rmtree(checkout)
    assert done.returncode == 0, done.stderr
    seen = ast.literal_eval(done.stdout)
    assert seen["Uid"] == [str(65534)] * 4
    for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert seen[name] == ["0000000000000000"], name
    assert (seen["NoNewPrivs"], seen["Seccomp"]) == (["1"], ["2"])
    assert seen["unshare"] != 0


def _as_nobody() -> dict[str, Any]:
    """Popen's arguments that start a process as ``nobody``, in an environment of its own."""
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "PYTHONPATH": _DRIVER}
    return {"user": 65534, "group": 65534, "extra_groups": [], "env": env}


_DRIVER = str(Path(sandbox.__file__).resolve().parents[3])


def _runs_as_nobody(python: str) -> bool:
    """Whether ``nobody`` can start ``python`` and import the gate from where it lies here."""
    try:
        done = subprocess.run(
            [python, "-c", "import oracle_gate.runtime.sandbox"],
            **_as_nobody(),
            cwd="/",
            capture_output=True,
            timeout=60,
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0
