"""Child processes: started in their own process group, written to by a deadline, their
output's tail kept for the report, and all killed on an interrupt."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle_gate.runtime.frames import frame_bytes, write_frame
from oracle_gate.runtime.limits import Limits, reached_by_signal
from oracle_gate.runtime.privileges import (
    Handshake,
    Identity,
    bwrap_privileges,
    identity,
    seccomp_descriptor,
)
from oracle_gate.runtime.sandbox.failures import RunnerFailure

__all__ = [
    "Child",
    "Launch",
    "kill_children",
    "kill_group",
    "live",
    "live_lock",
    "spawn",
    "tail",
]


# How long a child whose result pipe closed may take to be gone, so its exit status
# can say why.
_EXIT_SECONDS = 1.0


# Children running now, from any thread: an interrupt kills them all.
live: set[subprocess.Popen[bytes]] = set()


live_lock = threading.Lock()


@dataclass
class Launch:
    """What one sandboxed start hands bubblewrap besides the child's own pipes: the
    seccomp program, and under a root gate the user-namespace handshake."""

    seccomp: int | None
    handshake: Handshake | None

    @classmethod
    def make(cls) -> Launch:
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


def spawn(
    command: list[str],
    cwd: Path,
    env: dict[str, str],
    fds: tuple[int, ...],
    launch: Launch | None,
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
    with live_lock:
        live.add(process)
    if launch is not None:
        try:
            launch.started()
        except OSError as error:
            kill_group(process)
            with live_lock:
                live.discard(process)
            assert process.stdout is not None
            with process.stdout:
                said = process.stdout.read().decode(errors="replace").strip().splitlines()
            why = said[-1][:200] if said else str(error)
            raise RunnerFailure(f"the sandbox did not start ({why})") from None
    return process


@dataclass
class Child:
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
        kill_group(self.process)
        with live_lock:
            live.discard(self.process)
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


def tail(output: bytes | bytearray, child: Child) -> str:
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


def kill_children() -> None:
    """Kill every child running now (their threads then return at once with a failure)."""
    with live_lock:
        running = list(live)
    for process in running:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole process group (grandchildren too) and reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
