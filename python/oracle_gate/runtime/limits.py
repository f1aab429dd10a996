"""What one child process may use: address space, CPU time, processes, open files,
file size, and the size of each writable tmpfs the sandbox gives it.

The gate reads the limits from the parent tree's settings (``config/settings.py``)
and hands them to each child, which applies them to itself before it imports any
code of the checkout (``runtime/confine.py``). When code under test runs into
one, the reason says which, and which setting raises it, rather than leaving a
bare crash: this module is imported by both sides, so it holds only the
standard library.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import signal
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "EXIT_SIGNALS",
    "SETTINGS",
    "SIZE_UNITS",
    "Limits",
    "format_size",
    "parse_size",
    "reached_by",
    "reached_by_signal",
]

# Byte multiples a size setting may be written in ("4 GiB", "512 MiB").
SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
# CPU time: the hard limit lies a second past the soft one, so the kernel sends
# SIGXCPU first, which says why the process stopped; SIGKILL follows if it is caught.
_CPU_GRACE = 1
# A shell reports death by signal N as exit code 128 + N, and so does bubblewrap.
EXIT_SIGNALS = 128


@dataclass(frozen=True)
class Limits:
    """The caps of every child process, with generous defaults.

    Attributes:
        memory: address space per process, in bytes (``memory-limit``).
        cpu_seconds: CPU time per process (``cpu-limit``).
        processes: processes and threads the child may have at once
            (``process-limit``); applied only inside a user namespace of its own,
            where Linux counts the child's processes alone.
        open_files: file descriptors per process (``open-files-limit``).
        file_size: the largest file a process may write, in bytes (``file-size-limit``).
        tmpfs_size: the size of each writable tmpfs of the sandbox (``/tmp``, the
            home directory, ``/dev/shm``), in bytes (``tmpfs-size``).
    """

    memory: int = 4 << 30
    cpu_seconds: int = 600
    processes: int = 1024
    open_files: int = 4096
    file_size: int = 1 << 30
    tmpfs_size: int = 1 << 30

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Limits:
        return cls(**{key: int(value) for key, value in data.items()})

    def rlimits(self, own_user_namespace: bool) -> dict[int, tuple[int, int]]:
        """The (soft, hard) resource limits a child sets on itself.

        The open-files soft limit only ever goes down: a real run keeps its
        usual soft limit (1024 on most machines), and code that ``select()``s on
        descriptors counts on it.
        """
        _, open_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = {
            resource.RLIMIT_AS: (self.memory, self.memory),
            resource.RLIMIT_CPU: (self.cpu_seconds, self.cpu_seconds + _CPU_GRACE),
            resource.RLIMIT_FSIZE: (self.file_size, self.file_size),
            resource.RLIMIT_NOFILE: (self.open_files, min(_finite(open_hard), self.open_files)),
        }
        if own_user_namespace:
            wanted[resource.RLIMIT_NPROC] = (self.processes, self.processes)
        return {which: _within(which, *pair) for which, pair in wanted.items()}

    def reason(self, which: str) -> str:
        """The reason a reject gives when a child ran into limit ``which`` (a field)."""
        value = getattr(self, which)
        shown = f"{value} s" if which == "cpu_seconds" else value
        shown = format_size(value) if which in _SIZES else shown
        return f"{_LABELS[which]} {shown} reached (setting {SETTINGS[which]})"


# Each limit's setting, and how a reason names it.
SETTINGS = {
    "memory": "memory-limit",
    "cpu_seconds": "cpu-limit",
    "processes": "process-limit",
    "open_files": "open-files-limit",
    "file_size": "file-size-limit",
    "tmpfs_size": "tmpfs-size",
}
_LABELS = {
    "memory": "memory limit",
    "cpu_seconds": "CPU time limit",
    "processes": "process limit",
    "open_files": "open files limit",
    "file_size": "file size limit",
    "tmpfs_size": "size limit of the sandbox's /tmp, home directory and /dev/shm",
}
_SIZES = frozenset({"memory", "file_size", "tmpfs_size"})


def _finite(value: int) -> int:
    return value if value != resource.RLIM_INFINITY else 1 << 62


def _within(which: int, soft: int, hard: int) -> tuple[int, int]:
    """``(soft, hard)`` never above the process's own limits: only root can raise them."""
    own_soft, own_hard = resource.getrlimit(which)
    hard = min(hard, _finite(own_hard))
    if which == resource.RLIMIT_NOFILE:
        soft = min(soft, _finite(own_soft))
    return min(soft, hard), hard


def format_size(size: int) -> str:
    """``size`` bytes in the largest unit that writes it whole ("4 GiB", "1536 MiB")."""
    for unit, factor in reversed(SIZE_UNITS.items()):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def parse_size(value: object) -> int | None:
    """Bytes from a size setting: an integer of bytes or a string such as "4 GiB";
    None when it is neither (or not positive)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if not isinstance(value, str):
        return None
    number, _, unit = value.strip().partition(" ")
    factor = SIZE_UNITS.get(unit.strip() or "B")
    if factor is None or not number.isdigit() or int(number) <= 0:
        return None
    return int(number) * factor


def reached_by(error: BaseException, limits: Limits, sandboxed: bool) -> str | None:
    """The limit whose reach raised ``error`` in a child, as a reason; None for any other
    error. ``sandboxed``: the child runs under bubblewrap, where its only writable
    places are the sandbox's tmpfs and its processes are alone in their namespaces."""
    if isinstance(error, MemoryError):
        return limits.reason("memory")
    if sandboxed and _no_new_task(error) and _tasks() >= limits.processes * 9 // 10:
        return limits.reason("processes")
    if not isinstance(error, OSError):
        return None
    if error.errno == errno.EFBIG:
        return limits.reason("file_size")
    if error.errno == errno.EMFILE:
        return limits.reason("open_files")
    if error.errno == errno.ENOSPC and sandboxed:
        return limits.reason("tmpfs_size")
    return None


def _no_new_task(error: BaseException) -> bool:
    """Whether ``error`` is what starting a process (EAGAIN) or a thread gives at the
    process limit; EAGAIN elsewhere is a busy non-blocking descriptor, told apart by
    counting the tasks there are."""
    if isinstance(error, OSError):
        return error.errno == errno.EAGAIN
    return isinstance(error, RuntimeError) and "can't start new thread" in str(error)


def _tasks() -> int:
    """Threads of every process in sight: in the sandbox's PID namespace, the child's own."""
    count = 0
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError):
                    count += len(os.listdir(f"/proc/{name}/task"))
    return count


def reached_by_signal(returncode: int | None, limits: Limits) -> str | None:
    """The limit a child's exit status says it ran into (SIGXCPU: its CPU time), else None.

    ``returncode`` is the child's own (negative for a signal) or bubblewrap's
    (128 + the signal).
    """
    if returncode in (-signal.SIGXCPU, EXIT_SIGNALS + signal.SIGXCPU):
        return limits.reason("cpu_seconds")
    if returncode in (-signal.SIGXFSZ, EXIT_SIGNALS + signal.SIGXFSZ):
        return limits.reason("file_size")
    return None
