"""Running oracle and production code: child processes, and their sandbox.

Patched code never runs in the gate process. Each call starts a child
(``oracle_gate.runtime.child``) in a checkout of one tree
(``runtime/checkouts.py``), in its own process group, with an allow-listed
environment, resource limits (``runtime/limits.py``) and a timeout; where
bubblewrap is installed, inside ``bwrap`` with no network, a read-only file
system, a private ``/tmp`` and no privilege (``runtime/privileges.py``). A gate
that runs as root refuses to run code where bubblewrap cannot take root's
privileges away (``find_bwrap``).

Results travel on a private pipe, never on stdout: the request is one
length-prefixed JSON frame on one pipe, the answer exactly one frame on
another, and nothing may follow it. A second frame (an ``atexit`` hook or a
thread forging an answer), bytes after the answer, or a malformed frame is a
``RunnerTamper``. The child exits with ``os._exit`` right after its answer, so
``atexit`` hooks of the code under test never run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import selectors
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle_gate.errors import GateError, RefusedError
from oracle_gate.model import CONFTEST
from oracle_gate.runtime.confine import Confinement
from oracle_gate.runtime.frames import HEADER, MAX_FRAME, frame_bytes, write_frame
from oracle_gate.runtime.limits import Limits, reached_by_signal
from oracle_gate.runtime.privileges import (
    Handshake,
    Identity,
    bwrap_privileges,
    identity,
    inside,
    seccomp_descriptor,
    unsearchable,
)
from oracle_gate.runtime.variants import SHIFTED, USUAL, Variant, clock_library

__all__ = [
    "DEFAULT_TIMEOUT_FLOOR",
    "OracleMistake",
    "OutsideCheckout",
    "Runner",
    "RunnerFailure",
    "RunnerTamper",
    "find_bwrap",
    "kill_children",
    "library_paths",
    "top_level_modules",
]

DEFAULT_TIMEOUT = 60.0
DEFAULT_TIMEOUT_FLOOR = 5.0
# Not resolved: under Bazel the driver is a runfiles symlink tree, and the
# child must import the same files, from inside the sandbox.
_DRIVER_PATH = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
# The only variables a child sees from the gate's environment: never CI tokens. Who runs
# and in which shell are there too, as in a real run: without them code could tell the two
# apart (``if os.environ.get("USER"): <skip the checks>``).
ENV_ALLOWED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "SHELL", "TERM")
_SANDBOX_TMP = "/tmp"
# The child's start-up: the gate's own code first on sys.path (``-c`` would put the
# working directory, the package's, there), confinement before anything else runs.
_BOOTSTRAP = (
    "import sys; sys.path[:] = [sys.argv[1]] + [p for p in sys.path if p]; "
    "from oracle_gate.runtime.confine import enter; enter(sys.argv[4]); "
    "from oracle_gate.runtime.child import main; main(int(sys.argv[2]), int(sys.argv[3]))"
)
_PROBE = (
    "import sys; sys.path[:] = [sys.argv[1]] + [p for p in sys.path if p]; "
    "from oracle_gate.runtime.confine import enter; enter(sys.argv[2])"
)
_PROBE_SECONDS = 60.0
# How long a child whose result pipe closed may take to be gone, so its exit status
# can say why.
_EXIT_SECONDS = 1.0
# Set to 1, the gate runs code as root without a sandbox where bubblewrap cannot take
# root's privileges away; otherwise it refuses to (docs/sandbox.md, "Root without a sandbox is refused").
UNSANDBOXED_ROOT = "ORACLE_GATE_UNSANDBOXED_ROOT"
_SANDBOX_SHM = "/dev/shm"
# The host's runtime sockets (a user's session bus, the Docker daemon's) are no child's
# business: connecting to a socket needs no write access to the file system it is on.
_HOST_ONLY = ("/run",)
# A tmpfs that only hides what lies beneath it holds nothing but mount points.
_EMPTY_TMPFS = 64 << 10
# PYTHONHASHSEED is 1 to 2**32 - 1, never 0 (which turns randomization off, as no real
# run has it), and never one code can know beforehand: hash("x") would tell the gate.
_HASH_SEEDS = 2**32 - 1
_said_no_sandbox: list[bool] = []
# bubblewrap binaries whose probe child confined itself, in this process.
_sandbox_works: set[str] = set()
# Children running now, from any thread: an interrupt kills them all.
_running: set[subprocess.Popen[bytes]] = set()
_running_lock = threading.Lock()


class RunnerFailure(Exception):
    """The child crashed, timed out or answered nonsense; the caller makes it a reject."""


class RunnerTamper(RunnerFailure):
    """The child broke the result protocol: extra, trailing or malformed frames."""


class OracleMistake(Exception):
    """The child found an oracle file or reference wrong; the caller makes it a gate error.

    ``file`` is package-relative; ``ref`` is the invariants.yaml reference that
    led there, if the mistake is in the reference itself.
    """

    def __init__(self, message: str, file: str, line: int | None, ref: str) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.ref = ref


class OutsideCheckout(GateError):
    """A repository module would be imported from outside the checkout under test."""


def _parse_answer(data: bytes) -> dict[str, Any]:
    """The single answer frame in ``data``.

    Raises:
        RunnerFailure: no answer at all (the child died first).
        RunnerTamper: anything but exactly one well-formed frame.
    """
    if not data:
        raise RunnerFailure("no answer")
    buffer = bytearray(data)
    answer = _take_frame(buffer)
    if answer is None:
        raise RunnerTamper("tamper: a cut-short frame on the result channel")
    if buffer:
        raise RunnerTamper("tamper: more than one frame on the result channel")
    return answer


@dataclass(frozen=True)
class _Place:
    """Where a checkout (``source``) appears inside the sandbox (``shown_at``)."""

    source: str
    shown_at: str

    def moved(self, path: str) -> str:
        """``path`` as the sandboxed child sees it (paths outside the checkout stay)."""
        return self.shown_at + path[len(self.source) :] if inside(path, self.source) else path

    def moved_back(self, path: str) -> str:
        """Where ``path``, as the sandboxed child sees it, is in the checkout."""
        return self.source + path[len(self.shown_at) :] if inside(path, self.shown_at) else path


def _bwrap_options(
    visible: Sequence[str],
    masked: Sequence[Path] = (),
    hidden: Sequence[str] = (),
    place: _Place | None = None,
    writable: Sequence[str] = (),
    tmpfs_size: int = Limits.tmpfs_size,
) -> list[str]:
    """Read-only root, private /tmp and /dev/shm, the host's /run gone.

    ``hidden`` directories (the user's repository: its working tree and git
    directory) are empty; ``visible`` paths stay, read-only, even inside /tmp or
    a hidden directory; ``place``'s checkout appears, read-only, where it says;
    ``masked`` directories (in the checkout) are empty and ``masked`` files read
    as empty. Of the tmpfs mounts, /tmp, /dev/shm and the ``writable`` ones (the
    private home, one of the ``hidden`` paths) hold up to ``tmpfs_size`` bytes
    each; every other one is empty and read-only, and so is the tmpfs bubblewrap
    makes /dev on.
    """
    hiding = [p for p in _HOST_ONLY if os.path.isdir(p)]
    layered = _layered([_SANDBOX_TMP, *hidden, *hiding], visible, place, writable)
    for path in masked:
        shown = place.moved(str(path)) if place else str(path)
        if path.is_dir() and not path.is_symlink():
            layered += ["--tmpfs", shown]
        elif path.exists() and not path.is_symlink():
            layered += ["--ro-bind", "/dev/null", shown]
    layered += ["--tmpfs", _SANDBOX_SHM]
    mounts = _operations(layered)
    options = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    options += _sized(mounts, writable, tmpfs_size)
    tmpfs = [op[1] for op in mounts if op[0] == "--tmpfs"]
    for empty in ["/dev", *(p for p in tmpfs if _is_empty(p, writable))]:
        options += ["--remount-ro", empty]
    return [*options, "--die-with-parent", "--new-session"]


def _operations(options: Sequence[str]) -> list[tuple[str, ...]]:
    """``--tmpfs PATH`` and ``--ro-bind SOURCE PATH`` options, one tuple each."""
    operations: list[tuple[str, ...]] = []
    index = 0
    while index < len(options):
        width = 3 if options[index] == "--ro-bind" else 2
        operations.append(tuple(options[index : index + width]))
        index += width
    return operations


def _is_empty(path: str, writable: Sequence[str]) -> bool:
    """Whether the tmpfs at ``path`` only hides what lies beneath it."""
    return path not in (_SANDBOX_TMP, _SANDBOX_SHM, *writable)


def _sized(
    operations: Sequence[tuple[str, ...]], writable: Sequence[str], tmpfs_size: int
) -> list[str]:
    """The operations as bubblewrap options: each tmpfs with its size and mode, and every
    directory on the way to a mount point inside a tmpfs made first, searchable by all
    (bubblewrap 0.8 makes them ``0700``, which only the sandbox's root could pass)."""
    options: list[str] = []
    tmpfs: list[str] = []
    made: set[str] = set()
    for operation in operations:
        target = operation[-1]
        enclosing = max((root for root in tmpfs if inside(target, root)), key=len, default=None)
        if enclosing is not None and target != enclosing:
            for parent in _parents(target, enclosing):
                if parent not in made:
                    made.add(parent)
                    options += ["--perms", "0755", "--dir", parent]
        if operation[0] == "--tmpfs":
            tmpfs.append(target)
            if target in (_SANDBOX_TMP, _SANDBOX_SHM):
                options += ["--perms", "1777", "--size", str(tmpfs_size)]
            elif target in writable:
                options += ["--perms", "0700", "--size", str(tmpfs_size)]
            else:
                options += ["--size", str(_EMPTY_TMPFS)]
        options += operation
    return options


def _parents(path: str, root: str) -> list[str]:
    """The directories strictly between ``root`` and ``path``, outermost first."""
    parts = path[len(root.rstrip(os.sep)) :].strip(os.sep).split(os.sep)[:-1]
    return [os.path.join(root, *parts[: depth + 1]) for depth in range(len(parts))]


def _layered(
    hidden: Sequence[str],
    visible: Sequence[str],
    place: _Place | None = None,
    keep: Sequence[str] = (),
) -> list[str]:
    """Mounts that hide ``hidden``, show ``visible`` and put ``place``'s checkout where
    it says, outermost first, so a path shown inside a hidden one stays (the checkout
    under /tmp) and a path hidden inside a shown one stays hidden (a repository inside
    the virtual environment's directory). A mount that would change nothing is left
    out: a hidden directory inside another hidden one would show up there as an empty
    mount point, and one inside the placed checkout is the checkout's own; but the
    hidden paths in ``keep`` get a tmpfs of their own wherever they are (the private
    home directory, which the child writes)."""
    wanted: dict[str, str | None] = {os.path.realpath(p): None for p in hidden}
    for path in visible:
        wanted.setdefault(os.path.realpath(path), os.path.realpath(path))
    if place is not None:
        wanted = {p: s for p, s in wanted.items() if s is not None or not inside(p, place.shown_at)}
        wanted[place.shown_at] = place.source
    kept: dict[str, str | None] = {}
    for path in sorted(wanted, key=lambda p: (p.count(os.sep), p)):
        enclosing = max((k for k in kept if inside(path, k)), key=len, default=None)
        # the host's own content shows here: nothing covers it, or a bind of itself
        shown = enclosing is None or kept[enclosing] == enclosing
        source = wanted[path]
        if shown == (source is None) or (source is not None and source != path) or path in keep:
            kept[path] = source
    options: list[str] = []
    for path, source in kept.items():
        options += ["--tmpfs", path] if source is None else ["--ro-bind", source, path]
    return options


def _mount_points(place: _Place, visible: Sequence[str]) -> None:
    """Directories in the checkout for the ``visible`` paths that will be shown inside it
    (a virtual environment in the repository): bubblewrap cannot make them in a
    read-only bind."""
    for path in visible:
        real = os.path.realpath(path)
        if inside(real, place.shown_at) and real != place.shown_at and os.path.isdir(real):
            os.makedirs(place.moved_back(real), exist_ok=True)


def find_bwrap() -> str | None:
    """The bubblewrap binary when it is installed and can run a child without privilege
    here, else None (said once on stderr).

    Raises:
        RefusedError: the gate runs as root and the sandbox cannot take root's
            privileges away, unless ``ORACLE_GATE_UNSANDBOXED_ROOT=1`` accepts that.
    """
    path = shutil.which("bwrap")
    problem = _sandbox_problem(path) if path else "it is not installed"
    if problem is None:
        return path
    if os.geteuid() == 0 and os.environ.get(UNSANDBOXED_ROOT) != "1":
        raise RefusedError(
            f"refusing to run the patch's code as root without a sandbox: bubblewrap (bwrap) "
            f"cannot take root's privileges away here ({problem}); install bubblewrap "
            "where user namespaces are allowed, run the gate as an unprivileged user, or set "
            f"{UNSANDBOXED_ROOT}=1 to run the code as root without a sandbox"
        )
    if not _said_no_sandbox:
        _said_no_sandbox.append(True)
        sys.stderr.write(
            f"oracle-gate: note: bubblewrap (bwrap) is not usable here ({problem}); oracle and "
            "production code run without a network and file-system sandbox (process group, "
            "allow-listed environment, resource limits and timeout still apply)\n"
        )
    return None


def _sandbox_problem(path: str) -> str | None:
    """Why bubblewrap at ``path`` cannot run a child here with no privilege, or None: a
    child that only confines itself is started the way every child is, until one has
    (a failure may be the machine's of the moment, and is asked again next time)."""
    if path in _sandbox_works:
        return None
    with tempfile.TemporaryDirectory(prefix="oracle-gate-probe-") as scratch:
        problem = Runner(bwrap=path).probe(Path(scratch))
    if problem is None:
        _sandbox_works.add(path)
    return problem


def library_paths(exclude: Sequence[Path]) -> tuple[str, ...]:
    """Where the child finds the gate's own libraries (Hypothesis): this interpreter's path.

    Entries under ``exclude`` (the repository: editable installs and ``.pth``
    entries of its own packages), the user site directory and the working
    directory are left out; ``.pth`` files are never processed in the child.
    """
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    roots = [str(path.resolve()) for path in exclude]
    # ``python -m oracle_gate`` puts the working directory first on sys.path, whole
    working = os.path.realpath(os.getcwd())
    kept: list[str] = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        if real == working or (user_site and real.startswith(os.path.realpath(user_site))):
            continue
        if any(real == root or real.startswith(root + os.sep) for root in roots):
            continue
        if entry not in kept:
            kept.append(entry)
    return tuple(kept)


def top_level_modules(files: Iterable[str], roots: Iterable[str]) -> tuple[str, ...]:
    """Modules directly inside the directories ``roots``: import packages
    (``<root>/<name>/__init__.py``) and single-file modules (``<root>/<name>.py``).

    pytest's own files (``conftest.py``, ``test_*.py``, ``*_test.py``) are left
    out: pytest loads them by path, and no production code imports them.
    """
    wanted = {root.strip("/") for root in roots}
    names = set()
    for path in files:
        parent, _, file = path.rpartition("/")
        if file == "__init__.py":
            root, _, name = parent.rpartition("/")
        else:
            root, name = parent, file.removesuffix(".py")
            if name == file or _is_pytest_file(file):
                continue
        if root in wanted and name.isidentifier() and not name.startswith("__"):
            names.add(name)
    return tuple(sorted(names))


def _is_pytest_file(name: str) -> bool:
    return name == CONFTEST or name.startswith("test_") or name.endswith("_test.py")


@dataclass(frozen=True)
class Runner:
    """How children run.

    Attributes:
        library: import paths of the gate's libraries, after the checkout's own.
        bwrap: the bubblewrap binary, or None to run without that sandbox.
        timeout_floor: the least time any one child call is given, in seconds.
        repo_modules: top-level module names of the repository's packages (import
            packages and single-file modules); a child that runs production code
            refuses to run if one would be imported from outside the checkout, and
            an oracle child of a property run imports them as proxies.
        hidden: directories no child sees under bubblewrap (they are empty there):
            the user's repository, so patched code reaches the oracle's files only
            through the checkouts, where the gate masks them.
        shown_at: under bubblewrap, where every checkout appears to the code it runs:
            the user's repository's own path, so ``__file__`` and the working
            directory are what they are in any run from the repository, not a
            temporary directory's.
        hash_base: what every child's ``PYTHONHASHSEED`` is drawn from (the ``hash_seed``
            of a call picks one of them); ``check`` derives it from the two commits, so
            a check run again runs as it did, and no patch can know it beforehand.
        limits: what each child may use (``runtime/limits.py``); every child,
            sandboxed or not, sets them on itself before code of the checkout runs.
        placements: where each checkout appears (``_place``), decided on first use.
        variant: the environment the children run in (``runtime/variants.py``): the
            usual one, or the shifted one a second run of head code gets.
    """

    library: tuple[str, ...] = ()
    bwrap: str | None = None
    timeout_floor: float = DEFAULT_TIMEOUT_FLOOR
    repo_modules: tuple[str, ...] = field(default_factory=tuple)
    hidden: tuple[str, ...] = ()
    shown_at: str | None = None
    hash_base: int = field(default_factory=lambda: secrets.randbelow(_HASH_SEEDS))
    limits: Limits = field(default_factory=Limits)
    placements: dict[str, _Place | None] = field(default_factory=dict, compare=False)
    variant: Variant = USUAL

    def shifted(self) -> Runner:
        """This runner, its children in the shifted environment (``variants.SHIFTED``)."""
        return dataclasses.replace(self, variant=SHIFTED)

    def described(self) -> str:
        """What this runner's environment changes from the usual one; empty if nothing."""
        return self.variant.described(clock_library(), self.bwrap is not None)

    def run(
        self,
        request: dict[str, Any],
        package_dir: Path,
        *,
        import_paths: Sequence[Path] = (),
        checkout: Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        hash_seed: int = 0,
    ) -> dict[str, Any]:
        """Run one child role in ``package_dir``.

        ``import_paths`` (the package and its dependencies, from one checkout)
        come first on the child's ``sys.path``; ``checkout`` is that checkout's
        root, the only place repository modules may come from.

        Raises:
            RunnerFailure: timeout, crash, or no answer.
            RunnerTamper: the result protocol was broken.
        """
        payload = self._payload(request, package_dir, import_paths, checkout)
        child = self._start(payload, package_dir, checkout or package_dir, hash_seed)
        timeout = max(timeout, self.timeout_floor)
        try:
            child.close_request()
            data, output = _collect(child.process, child.result_fd, timeout)
        finally:
            child.stop()
        if data is None:
            raise RunnerFailure(f"timed out after {timeout:g}s")
        try:
            return _checked(_parse_answer(data))
        except RunnerTamper:
            raise
        except RunnerFailure:
            raise RunnerFailure(f"runner gave no result ({_tail(output, child)})") from None

    def run_served(
        self,
        request: dict[str, Any],
        package_dir: Path,
        *,
        import_paths: Sequence[Path] = (),
        checkout: Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        masked: Sequence[Path] = (),
    ) -> dict[str, Any]:
        """Run an oracle role whose calls into production code a second child serves.

        The oracle child has no package directory on ``sys.path``; each call
        it makes into a repository module goes to a production child (role
        ``serve``) as one framed question, and comes back as one framed answer
        with the question's sequence number, on two pipes straight between the
        two children (the gate relays nothing: a question costs two process
        switches, not four). The oracle child, which never runs production
        code, keeps the protocol (``proxy.Link``): anything else the production
        child writes is tampering, and the oracle child's answer says so. Both
        children get the sandbox, the environment and the process group of
        ``run``; ``timeout`` bounds the whole conversation. Under bubblewrap the
        production child does not see the ``masked`` paths (the tests' own
        files): directories are empty there and files read as empty.

        Raises:
            RunnerFailure: timeout, crash of either child, or no answer.
            RunnerTamper: the production child broke the protocol.
        """
        root = checkout or package_dir
        payload = self._payload(request, package_dir, import_paths, checkout)
        timeout = max(timeout, self.timeout_floor)
        questions_read, questions_write = os.pipe()
        answers_read, answers_write = os.pipe()
        ends = [questions_read, questions_write, answers_read, answers_write]
        started: list[_Child] = []
        try:
            production = (questions_read, answers_write)
            serve = {**payload, "role": "serve", "link": list(production)}
            started.append(self._start(serve, package_dir, root, 0, masked, production))
            oracle_ends = (questions_write, answers_read)
            asking = {**payload, "link": list(oracle_ends)}
            started.append(self._start(asking, package_dir, root, 0, passed=oracle_ends))
            for fd in ends:
                os.close(fd)
            ends = []
            server, oracle = started
            return _served_answer(oracle, server, timeout)
        finally:
            for fd in ends:
                os.close(fd)
            for child in started:
                child.stop()

    def _payload(
        self,
        request: dict[str, Any],
        package_dir: Path,
        import_paths: Sequence[Path],
        checkout: Path | None,
    ) -> dict[str, Any]:
        return {
            **request,
            "package_dir": str(package_dir),
            "import_paths": [str(p) for p in import_paths or (package_dir,)],
            "library": list(self.library),
            "checkout": str(checkout or package_dir),
            "repo_modules": list(self.repo_modules),
        }

    def _command(
        self,
        checkout: Path,
        cwd: Path,
        fds: tuple[int, int],
        masked: Sequence[Path],
        launch: _Launch | None = None,
    ) -> list[str]:
        return self._sandboxed(
            [*_python(_BOOTSTRAP), *map(str, fds), self._confinement().to_argument()],
            checkout,
            cwd,
            masked,
            launch,
        )

    def _sandboxed(
        self,
        command: list[str],
        checkout: Path,
        cwd: Path,
        masked: Sequence[Path] = (),
        launch: _Launch | None = None,
    ) -> list[str]:
        """``command`` under bubblewrap, in ``checkout`` (``cwd`` there), when there is one."""
        if self.bwrap is None:
            return command
        place = self._place(checkout)
        visible = self._needed()
        if place is None:
            visible.append(str(checkout))
        else:
            _mount_points(place, visible)
        home = self.home()
        homes = [os.path.realpath(home)] if home else []
        hidden = [*self.hidden, *homes]
        who = identity()
        if who.drops_root:
            reached = [*visible, place.shown_at if place else str(checkout), *homes]
            hidden += unsearchable(reached, [_SANDBOX_TMP, *hidden], who)
        options = _bwrap_options(visible, masked, hidden, place, homes, self.limits.tmpfs_size)
        if place is not None:
            options += ["--chdir", place.moved(str(cwd))]
        options += launch.options(who) if launch else bwrap_privileges(who, None, None)
        return [self.bwrap, *options, *self._variant_options(), "--", *command]

    def _variant_options(self) -> list[str]:
        """The shifted environment's host name, and its clock for the child alone (set in
        bubblewrap's environment, a setuid bubblewrap would drop the preload)."""
        options = []
        host = self.variant.host_name(self.hash_base)
        if host is not None:
            options += ["--hostname", host]
        for name, value in self.variant.clock(clock_library()).items():
            options += ["--setenv", name, value]
        return options

    def _confinement(self) -> Confinement:
        """What the child does to itself first: the ids a root gate's child becomes (and
        the private home it takes), and the limits."""
        who = identity()
        sandboxed = self.bwrap is not None
        home = self.home()
        return Confinement(
            limits=self.limits,
            user=(who.uid, who.gid) if sandboxed and who.drops_root else None,
            home=os.path.realpath(home) if home and who.drops_root else None,
            sandboxed=sandboxed,
        )

    def probe(self, scratch: Path) -> str | None:
        """Start a child that only confines itself, in the empty directory ``scratch``:
        None when it did, else why not (one line)."""
        command = [*_python(_PROBE), self._confinement().to_argument()]
        launch = _Launch.make()
        try:
            sandboxed = self._sandboxed(command, scratch, scratch, (), launch)
            environment = self._environment(0, self._shown(scratch, scratch))
            process = _spawn(sandboxed, scratch, environment, (), launch)
        except (OSError, RunnerFailure) as error:
            return str(error)
        finally:
            launch.close()
        try:
            output, _ = process.communicate(timeout=_PROBE_SECONDS)
        except subprocess.TimeoutExpired:
            output = b"the probe timed out"
        finally:
            _kill_group(process)
            with _running_lock:
                _running.discard(process)
        if process.returncode == 0:
            return None
        lines = output.decode(errors="replace").strip().splitlines()
        return lines[-1][:200] if lines else f"exit code {process.returncode}"

    def _needed(self) -> list[str]:
        """What every child needs to see besides its checkout: the gate's code, Python (a
        virtual environment's and the installation it was made from, which may both lie
        in the home directory the children get empty) and the gate's libraries."""
        python = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
        python.append(os.path.dirname(os.path.realpath(sys.executable)))
        return [*dict.fromkeys([_DRIVER_PATH, *python, *self.library])]

    def _place(self, checkout: Path) -> _Place | None:
        """Where ``checkout`` appears, decided once per checkout (before any mount point is
        made in it): nowhere else when a path the child needs (the gate's own code run from
        the repository it gates) lies where the checkout has files of its own."""
        if self.bwrap is None or self.shown_at is None:
            return None
        source = os.path.realpath(checkout)
        if source not in self.placements:
            place = _Place(source, os.path.realpath(self.shown_at))
            clash = any(
                os.path.lexists(place.moved_back(os.path.realpath(path)))
                for path in self._needed()
                if inside(os.path.realpath(path), place.shown_at)
            )
            self.placements[source] = None if clash else place
        return self.placements[source]

    def _moved(self, payload: dict[str, Any], checkout: Path) -> dict[str, Any]:
        """The request with its checkout paths as the sandboxed child sees them."""
        place = self._place(checkout)
        if place is None:
            return payload
        return {
            **payload,
            "package_dir": place.moved(os.path.realpath(payload["package_dir"])),
            "import_paths": [place.moved(os.path.realpath(p)) for p in payload["import_paths"]],
            "checkout": place.moved(os.path.realpath(payload["checkout"])),
        }

    def home(self) -> str | None:
        """The gate's own home directory when children under bubblewrap get it, empty and
        private at the same path, so ``~`` reads as in a real run; else None (a temporary
        directory stands in). Not when it holds what the children need or lies in the
        repository: its mount would hide them, or could not be made."""
        home = os.environ.get("HOME", "")
        real = os.path.realpath(home) if os.path.isabs(home) else os.sep
        if self.bwrap is None or real == os.sep or not os.path.isdir(real):
            return None
        kept = [*self._needed(), *self.hidden]
        return None if any(inside(real, os.path.realpath(p)) for p in kept) else home

    def _environment(self, hash_seed: int, cwd: str) -> dict[str, str]:
        """A child's environment; ``cwd`` is its working directory as it sees it."""
        env = {key: os.environ[key] for key in ENV_ALLOWED if key in os.environ}
        tmp = _SANDBOX_TMP if self.bwrap else tempfile.gettempdir()
        if "TMPDIR" in os.environ:  # a real run without TMPDIR has none
            env["TMPDIR"] = tmp
        seed = self.hash_base + hash_seed + self.variant.hash_shift
        return {
            **env,
            "HOME": self.home() or tmp,
            "PYTHONHASHSEED": str(1 + seed % _HASH_SEEDS),
            "PYTHONDONTWRITEBYTECODE": "1",
            # Hypothesis keeps a directory even without a database; never in the package.
            "HYPOTHESIS_STORAGE_DIRECTORY": os.path.join(tmp, "oracle-gate-hypothesis"),
            **self.variant.shell(cwd, sys.executable),
            **({} if self.bwrap else self.variant.clock(clock_library())),
        }

    def _shown(self, checkout: Path, cwd: Path) -> str:
        """``cwd`` as a child in ``checkout`` sees it."""
        place = self._place(checkout)
        return place.moved(str(cwd)) if place else str(cwd)

    def _start(
        self,
        payload: dict[str, Any],
        cwd: Path,
        checkout: Path,
        hash_seed: int,
        masked: Sequence[Path] = (),
        passed: tuple[int, ...] = (),
    ) -> _Child:
        """A child in its own process group, its request already sent (its pipe kept open);
        it also inherits the ``passed`` descriptors (a split run's two pipes).

        Raises:
            RunnerFailure: the sandbox did not start.
        """
        request_read, request_write = os.pipe()
        result_read, result_write = os.pipe()
        launch = _Launch.make() if self.bwrap else None
        try:
            process = _spawn(
                self._command(checkout, cwd, (request_read, result_write), masked, launch),
                cwd,
                self._environment(hash_seed, self._shown(checkout, cwd)),
                (request_read, result_write, *passed),
                launch,
            )
        except BaseException:
            for fd in (request_read, request_write, result_read, result_write):
                os.close(fd)
            raise
        finally:
            if launch is not None:
                launch.close()
        os.close(request_read)
        os.close(result_write)
        child = _Child(process, request_write, result_read, limits=self.limits)
        child.send(self._moved(payload, checkout))
        return child


@dataclass
class _Launch:
    """What one sandboxed start hands bubblewrap besides the child's own pipes: the
    seccomp program, and under a root gate the user-namespace handshake."""

    seccomp: int | None
    handshake: Handshake | None

    @classmethod
    def make(cls) -> _Launch:
        return cls(seccomp_descriptor(), Handshake() if identity().drops_root else None)

    def options(self, who: Identity) -> list[str]:
        return bwrap_privileges(who, self.seccomp, self.handshake)

    def fds(self) -> tuple[int, ...]:
        own = () if self.seccomp is None else (self.seccomp,)
        return own + (self.handshake.child_fds() if self.handshake else ())

    def started(self) -> None:
        """bubblewrap runs: it has its copy of the program; map its namespace.

        Raises:
            OSError: the handshake failed (``Handshake.complete``).
        """
        self._close_seccomp()
        if self.handshake is not None:
            self.handshake.complete()

    def close(self) -> None:
        self._close_seccomp()
        if self.handshake is not None:
            self.handshake.close()

    def _close_seccomp(self) -> None:
        if self.seccomp is not None:
            os.close(self.seccomp)
            self.seccomp = None


def _spawn(
    command: list[str],
    cwd: Path,
    env: dict[str, str],
    fds: tuple[int, ...],
    launch: _Launch | None,
) -> subprocess.Popen[bytes]:
    """``command`` in a session of its own, with ``fds`` (and the launch's) inherited;
    under bubblewrap, its user namespace mapped before it goes on.

    Raises:
        RunnerFailure: the sandbox did not start (the process is killed).
    """
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        pass_fds=(*fds, *(launch.fds() if launch else ())),
        start_new_session=True,
    )
    with _running_lock:
        _running.add(process)
    if launch is not None:
        try:
            launch.started()
        except OSError as error:
            _kill_group(process)
            with _running_lock:
                _running.discard(process)
            assert process.stdout is not None
            with process.stdout:
                said = process.stdout.read().decode(errors="replace").strip().splitlines()
            why = said[-1][:200] if said else str(error)
            raise RunnerFailure(f"the sandbox did not start ({why})") from None
    return process


def _python(bootstrap: str) -> list[str]:
    """The interpreter running ``bootstrap`` with the gate's own code first on its path."""
    return [sys.executable, "-s", "-S", "-c", bootstrap, _DRIVER_PATH]


@dataclass
class _Child:
    """A started child: the write end of its request pipe, the read end of its result pipe."""

    process: subprocess.Popen[bytes]
    request_fd: int | None
    result_fd: int
    output: bytearray = field(default_factory=bytearray)
    limits: Limits = field(default_factory=Limits)

    def send(self, frame: dict[str, Any], deadline: float | None = None) -> None:
        """One frame to the child; a child that died already says so by not answering.

        With ``deadline`` (``time.monotonic``), the child must have taken the
        frame by then: production code that stops reading its requests cannot
        keep the gate waiting.

        Raises:
            TimeoutError: the deadline passed first.
        """
        if self.request_fd is None:
            return
        try:
            if deadline is None:
                write_frame(self.request_fd, frame)
            else:
                _write_by(self.request_fd, frame_bytes(frame), deadline)
        except BrokenPipeError:
            self.close_request()

    def close_request(self) -> None:
        if self.request_fd is not None:
            os.close(self.request_fd)
            self.request_fd = None

    def stop(self) -> None:
        """Kill its process group, reap it, close its pipes."""
        self.close_request()
        os.close(self.result_fd)
        _kill_group(self.process)
        with _running_lock:
            _running.discard(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _write_by(fd: int, data: bytes, deadline: float) -> None:
    """All of ``data`` on the pipe ``fd`` before ``deadline``, else TimeoutError."""
    os.set_blocking(fd, False)
    view = memoryview(data)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_WRITE)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise TimeoutError
            with contextlib.suppress(BlockingIOError):
                view = view[os.write(fd, view) :]


def _tail(output: bytes | bytearray, child: _Child) -> str:
    """Why the child gave no answer: the limit it ran into (its exit signal, or a
    ``MemoryError`` it died of), else the last line it printed, or its exit code."""
    tail = bytes(output).decode(errors="replace").strip().splitlines()[-1:]
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.process.wait(timeout=_EXIT_SECONDS)  # its result pipe closed as it died
    reached = reached_by_signal(child.process.returncode, child.limits)
    if reached is None and tail and tail[0].split(":")[0] == "MemoryError":
        reached = child.limits.reason("memory")
    if reached is not None:
        return reached
    return tail[0][:200] if tail else f"exit code {child.process.returncode}"


def _checked(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer, or the exception a child's report of failure stands for."""
    if "error" in answer:
        raise RunnerFailure(str(answer["error"]))
    if "tamper" in answer:
        raise RunnerTamper(f"tamper: {answer['tamper']}")
    if "mistake" in answer:
        raise OracleMistake(
            str(answer["mistake"]), str(answer["file"]), answer["line"], str(answer["ref"])
        )
    if "outside" in answer:
        raise OutsideCheckout(
            "repository modules would be imported from outside the checkout under test: "
            + ", ".join(map(str, answer["outside"]))
            + "; declare the package in deps (invariants.yaml or BUILD), and uninstall "
            "editable installs of the repository's packages"
        )
    return answer


def _take_frame(buffer: bytearray) -> dict[str, Any] | None:
    """The first whole frame in ``buffer`` (removed from it), or None while it is incomplete.

    Raises:
        RunnerTamper: an oversized frame, or one that is not a JSON object.
    """
    if len(buffer) < HEADER.size:
        return None
    (size,) = HEADER.unpack(buffer[: HEADER.size])
    if size > MAX_FRAME:
        raise RunnerTamper("tamper: an oversized frame on the result channel")
    end = HEADER.size + size
    if len(buffer) < end:
        return None
    data = bytes(buffer[HEADER.size : end])
    del buffer[:end]
    try:
        frame = json.loads(data)
    except ValueError:
        raise RunnerTamper("tamper: a result frame that is not JSON") from None
    if not isinstance(frame, dict):
        raise RunnerTamper("tamper: a result frame that is not an object")
    return frame


def _served_answer(oracle: _Child, server: _Child, timeout: float) -> dict[str, Any]:
    """The oracle child's answer; both children's output is kept for a diagnostic.

    Raises:
        RunnerFailure: timeout, a child died before the oracle's answer.
        RunnerTamper: the oracle child found the production child breaking the protocol.
    """
    oracle.close_request()
    server.close_request()
    data, output = _collect(oracle.process, oracle.result_fd, timeout, also=server)
    if data is None:
        raise RunnerFailure(f"timed out after {timeout:g}s")
    try:
        answer = _parse_answer(data)
    except RunnerTamper:
        raise
    except RunnerFailure:
        raise RunnerFailure(f"runner gave no result ({_tail(output, oracle)})") from None
    if "gone" in answer:
        raise RunnerFailure(f"the production child died ({_tail(server.output, server)})")
    return _checked(answer)


def _collect(
    process: subprocess.Popen[bytes],
    result_fd: int,
    timeout: float,
    also: _Child | None = None,
) -> tuple[bytes | None, bytes]:
    """Everything on the result pipe until the child exits and closes it; None on timeout.

    The child's stdout and stderr are read too (for a diagnostic), and those of
    ``also`` (the production child of a split run, which must never block on a
    full pipe) into its ``output``, but a grandchild holding them open never
    delays the answer.
    """
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    result = bytearray()
    output = bytearray()
    result_open = True
    with selectors.DefaultSelector() as selector:
        selector.register(result_fd, selectors.EVENT_READ, result)
        selector.register(process.stdout, selectors.EVENT_READ, output)
        if also is not None and also.process.stdout is not None:
            selector.register(also.process.stdout, selectors.EVENT_READ, also.output)
        while result_open or process.poll() is None:
            if process.poll() is not None:
                _kill_group(process)  # the child is done: its group may hold the pipe open
            left = deadline - time.monotonic()
            if left <= 0:
                return None, bytes(output)
            for key, _ in selector.select(min(left, 0.5)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                    if key.fd == result_fd:
                        result_open = False
                    continue
                if len(key.data) < (1 << 16) or key.fd == result_fd:
                    key.data.extend(chunk)
    return bytes(result), bytes(output)


def kill_children() -> None:
    """Kill every child running now (their threads then return at once with a failure)."""
    with _running_lock:
        running = list(_running)
    for process in running:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole process group (grandchildren too) and reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
