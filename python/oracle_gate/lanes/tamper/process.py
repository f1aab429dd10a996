"""The process itself: raw descriptors, memory, signals, forks and exec.

What it catches: a call that writes or reads a raw file descriptor (``os.write``,
``os.dup2``, ``os.sendfile``, ``io.FileIO``), hands one over (``os.set_inheritable``,
``socket.fromfd``), signals or replaces the process (``os.kill``, ``signal.signal``,
``os.fork``, ``os.execv``, ``os.posix_spawn``), and a module that reaches descriptors, the
process's memory or its limits (``fcntl``, ``mmap``, ``resource``, ``pty``, ``runpy``).

Why: the trusted replay runs pytest and production code in one process, where such code
could write a forged answer on the result pipe, or kill the child before its failure is
told. No production change needs them to compute an output.

Example::

    import os

    def merge(ranges):
        os.write(3, b'{"outcome": "passed"}')  # the result pipe's number in the gate's child
        return ranges
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from oracle_gate.lanes.tamper.reader import Mark, Reader

__all__ = ["DOTTED", "MODULES", "attribute_marks"]

# A raw file descriptor (the result pipe is one), or the process itself.
DOTTED = frozenset(
    {
        "os.write",
        "os.writev",
        "os.pwrite",
        "os.pwritev",
        "os.read",
        "os.readv",
        "os.pread",
        "os.preadv",
        "os.fdopen",
        "os.dup",
        "os.dup2",
        "os.sendfile",
        "os.splice",
        "os.copy_file_range",
        "os.set_inheritable",
        "os.kill",
        "os.killpg",
        "os.fork",
        "os.forkpty",
        "os.register_at_fork",
        "os.posix_spawn",
        "os.posix_spawnp",
        "os.execv",
        "os.execve",
        "os.execl",
        "os.execle",
        "os.execlp",
        "os.execlpe",
        "os.execvp",
        "os.execvpe",
        "io.FileIO",
        "signal.signal",
        "signal.setitimer",
        "signal.alarm",
        "signal.raise_signal",
        "signal.pthread_kill",
        "signal.set_wakeup_fd",
        "socket.fromfd",
        "socket.fromshare",
        "multiprocessing.connection.Connection",
    }
)
# Modules (dotted names too) that reach raw descriptors, the process's memory or its
# limits: no production change needs them to compute an output.
MODULES = frozenset(
    {"fcntl", "mmap", "resource", "pty", "_posixsubprocess", "multiprocessing.reduction", "runpy"}
)


def attribute_marks(reader: Reader, node: ast.Attribute) -> Iterator[Mark]:
    dotted = reader.resolved(node)
    if dotted in DOTTED:
        yield "reference", dotted
    elif dotted in MODULES:
        yield "import", dotted
