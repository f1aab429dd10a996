"""``Runner``: one call of oracle or production code in a child, with its checkout, its
environment, its limits and its sandbox."""

from __future__ import annotations

import dataclasses
import os
import secrets
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle_gate.model import CONFTEST
from oracle_gate.runtime.confine import Confinement
from oracle_gate.runtime.limits import Limits
from oracle_gate.runtime.privileges import (
    bwrap_privileges,
    identity,
    inside,
    unsearchable,
)
from oracle_gate.runtime.sandbox.bubblewrap import SANDBOX_TMP, Place, bwrap_options, mount_points
from oracle_gate.runtime.sandbox.failures import RunnerFailure, RunnerTamper
from oracle_gate.runtime.sandbox.processes import (
    Child,
    Launch,
    kill_group,
    live,
    live_lock,
    spawn,
    tail,
)
from oracle_gate.runtime.sandbox.relay import checked, collect, parse_answer, served_answer
from oracle_gate.runtime.variants import SHIFTED, USUAL, Variant, clock_library

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEFAULT_TIMEOUT_FLOOR",
    "ENV_ALLOWED",
    "Runner",
    "library_paths",
    "python_command",
    "top_level_modules",
]

DEFAULT_TIMEOUT = 60.0
DEFAULT_TIMEOUT_FLOOR = 5.0
# Not resolved: under Bazel the driver is a runfiles symlink tree, and the
# child must import the same files, from inside the sandbox.
_DRIVER_PATH = os.path.abspath(
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir)
)


# The only variables a child sees from the gate's environment: never CI tokens. Who runs
# and in which shell are there too, as in a real run: without them code could tell the two
# apart (``if os.environ.get("USER"): <skip the checks>``).
ENV_ALLOWED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "SHELL", "TERM")


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


# PYTHONHASHSEED is 1 to 2**32 - 1, never 0 (which turns randomization off, as no real
# run has it), and never one code can know beforehand: hash("x") would tell the gate.
_HASH_SEEDS = 2**32 - 1


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
    placements: dict[str, Place | None] = field(default_factory=dict, compare=False)
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
            data, output = collect(child.process, child.result_fd, timeout)
        finally:
            child.stop()
        if data is None:
            raise RunnerFailure(f"timed out after {timeout:g}s")
        try:
            return checked(parse_answer(data))
        except RunnerTamper:
            raise
        except RunnerFailure:
            raise RunnerFailure(f"runner gave no result ({tail(output, child)})") from None

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
        started: list[Child] = []
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
            return served_answer(oracle, server, timeout)
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
            "launch": self.variant.launch,
        }

    def _command(
        self,
        checkout: Path,
        cwd: Path,
        fds: tuple[int, int],
        masked: Sequence[Path],
        launch: Launch | None = None,
    ) -> list[str]:
        return self._sandboxed(
            [*python_command(_BOOTSTRAP), *map(str, fds), self._confinement().to_argument()],
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
        launch: Launch | None = None,
    ) -> list[str]:
        """``command`` under bubblewrap, in ``checkout`` (``cwd`` there), when there is one."""
        if self.bwrap is None:
            return command
        place = self._place(checkout)
        visible = self._needed()
        if place is None:
            visible.append(str(checkout))
        else:
            mount_points(place, visible)
        home = self.home()
        homes = [os.path.realpath(home)] if home else []
        hidden = [*self.hidden, *homes]
        who = identity()
        if who.drops_root:
            reached = [*visible, place.shown_at if place else str(checkout), *homes]
            hidden += unsearchable(reached, [SANDBOX_TMP, *hidden], who)
        options = bwrap_options(visible, masked, hidden, place, homes, self.limits.tmpfs_size)
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
        command = [*python_command(_PROBE), self._confinement().to_argument()]
        launch = Launch.make()
        try:
            sandboxed = self._sandboxed(command, scratch, scratch, (), launch)
            environment = self._environment(0, self._shown(scratch, scratch))
            process = spawn(sandboxed, scratch, environment, (), launch)
        except (OSError, RunnerFailure) as error:
            return str(error)
        finally:
            launch.close()
        try:
            output, _ = process.communicate(timeout=_PROBE_SECONDS)
        except subprocess.TimeoutExpired:
            output = b"the probe timed out"
        finally:
            kill_group(process)
            with live_lock:
                live.discard(process)
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

    def _place(self, checkout: Path) -> Place | None:
        """Where ``checkout`` appears, decided once per checkout (before any mount point is
        made in it): nowhere else when a path the child needs (the gate's own code run from
        the repository it gates) lies where the checkout has files of its own."""
        if self.bwrap is None or self.shown_at is None:
            return None
        source = os.path.realpath(checkout)
        if source not in self.placements:
            place = Place(source, os.path.realpath(self.shown_at))
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
        tmp = SANDBOX_TMP if self.bwrap else tempfile.gettempdir()
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
    ) -> Child:
        """A child in its own process group, its request already sent (its pipe kept open);
        it also inherits the ``passed`` descriptors (a split run's two pipes).

        Raises:
            RunnerFailure: the sandbox did not start.
        """
        request_read, request_write = os.pipe()
        result_read, result_write = os.pipe()
        launch = Launch.make() if self.bwrap else None
        try:
            process = spawn(
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
        child = Child(process, request_write, result_read, limits=self.limits)
        child.send(self._moved(payload, checkout))
        return child


def python_command(bootstrap: str) -> list[str]:
    """The interpreter running ``bootstrap`` with the gate's own code first on its path."""
    return [sys.executable, "-s", "-S", "-c", bootstrap, _DRIVER_PATH]
