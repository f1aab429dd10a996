"""Who a sandboxed child runs as, and what bubblewrap is told so that it has no privilege.

Every child starts in a user namespace of its own, with no capabilities
(``--cap-drop ALL``), no new privileges (bubblewrap always sets
``no_new_privs``), the seccomp filter of ``runtime/seccomp.py``, and its own
IPC, PID, network, UTS and cgroup namespaces. What it runs as depends on who
runs the gate:

- **A user.** bubblewrap maps the user's own id into the namespace, and
  ``--disable-userns`` keeps the child from making another one. The child is
  that user, without capabilities: it can do what the user can, in the
  read-only, hidden file system the sandbox shows it.
- **Root.** Being root of a user namespace that maps the host's root is
  still root for the files, sockets and processes root owns; so the child
  must not stay uid 0. bubblewrap waits (``--userns-block-fd``) while the gate
  maps every host id to itself in the child's namespace (``--info-fd`` names
  the process), so that bubblewrap, as that namespace's root, can still build
  the sandbox from files only root reaches (a Python installation in
  ``/root``). The child then keeps only the capabilities it needs to let go of
  the rest (``runtime/confine.py``) and becomes ``nobody`` (65534:65534) of the
  host before any code of the checkout runs. Paths the child must reach
  through a directory ``nobody`` cannot search (a repository in a ``0700``
  directory) are shown through an empty tmpfs put in that directory's place,
  which holds nothing else, as the directory showed ``nobody`` nothing else.
"""

from __future__ import annotations

import json
import os
import selectors
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from oracle_gate.runtime import seccomp

__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "Handshake",
    "Identity",
    "bwrap_privileges",
    "identity",
    "inside",
    "seccomp_descriptor",
    "unsearchable",
]

# The host user a child of a root gate becomes: the kernel's overflow user, which
# owns nothing.
SANDBOX_UID = SANDBOX_GID = 65534
# Every host id, mapped to itself: "inside outside count".
_IDENTITY_MAP = "0 0 4294967295\n"
# What the child of a root gate keeps until ``confine`` has dropped everything.
_KEPT_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_CHOWN")
# How long bubblewrap may take to make the child's namespaces.
_HANDSHAKE_SECONDS = 30.0


@dataclass(frozen=True)
class Identity:
    """Whom a child runs as: the host ids it ends with, and whether the gate is root and
    the child must become them itself (``runtime/confine.py``)."""

    uid: int
    gid: int
    drops_root: bool


def identity() -> Identity:
    if os.geteuid() == 0:
        return Identity(SANDBOX_UID, SANDBOX_GID, drops_root=True)
    return Identity(os.getuid(), os.getgid(), drops_root=False)


def bwrap_privileges(
    who: Identity, seccomp_fd: int | None, handshake: Handshake | None
) -> list[str]:
    """bubblewrap's options for the namespaces, capabilities and seccomp filter."""
    options = ["--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net"]
    options += ["--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
    if who.drops_root:
        for capability in _KEPT_CAPABILITIES:
            options += ["--cap-add", capability]
    else:
        options.append("--disable-userns")
    if handshake is not None:
        options += handshake.options()
    if seccomp_fd is not None:
        options += ["--seccomp", str(seccomp_fd)]
    return options


def seccomp_descriptor() -> int | None:
    """A pipe's read end holding the seccomp program (for ``--seccomp``), or None when
    there is none for this architecture. The caller closes it once the child has it."""
    program = seccomp.program()
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # far below a pipe's buffer: never blocks
    finally:
        os.close(write)
    return read


class Handshake:
    """The pipes through which a root gate maps the ids of a child's user namespace."""

    def __init__(self) -> None:
        self._info_read, self._info_write = os.pipe()
        self._block_read, self._block_write = os.pipe()
        self._open = {self._info_read, self._info_write, self._block_read, self._block_write}

    def options(self) -> list[str]:
        return ["--info-fd", str(self._info_write), "--userns-block-fd", str(self._block_read)]

    def child_fds(self) -> tuple[int, int]:
        """The descriptors bubblewrap inherits."""
        return self._info_write, self._block_read

    def complete(self) -> None:
        """Once bubblewrap runs: map the ids of its namespace, then let it go on.

        Raises:
            OSError: bubblewrap died first, or never said which process to map.
                The caller kills it before it ``close``s the handshake: bubblewrap
                goes on when its block descriptor closes, and a child it started in
                an unmapped namespace would then only stop at ``confine``, unable to
                take the ids it must.
        """
        for fd in self.child_fds():
            self._close(fd)
        pid = _child_pid(self._info_read)
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w", encoding="ascii") as mapping:
                mapping.write(_IDENTITY_MAP)
        os.write(self._block_write, b"1")
        self.close()

    def close(self) -> None:
        for fd in list(self._open):
            self._close(fd)

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)


def _child_pid(fd: int) -> int:
    """The ``child-pid`` bubblewrap writes on its info descriptor, which it then closes."""
    deadline = time.monotonic() + _HANDSHAKE_SECONDS
    data = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise OSError("bubblewrap did not start its sandbox in time")
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError):
        raise OSError("bubblewrap stopped before its sandbox started") from None


def unsearchable(paths: Iterable[str], covered: Sequence[str], who: Identity) -> list[str]:
    """For each of ``paths``, the outermost directory on the way there that ``who``
    cannot search, unless the sandbox already replaces it (it lies in ``covered``)."""
    found: list[str] = []
    for path in paths:
        parts = path.strip(os.sep).split(os.sep)[:-1]
        for depth in range(1, len(parts) + 1):
            ancestor = os.sep + os.sep.join(parts[:depth])
            if any(inside(ancestor, place) for place in [*covered, *found]):
                break
            if not _searchable(ancestor, who):
                found.append(ancestor)
                break
    return found


def inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies below it."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _searchable(directory: str, who: Identity) -> bool:
    """Whether ``who`` (no supplementary groups) may pass through ``directory``."""
    try:
        info = os.stat(directory)
    except OSError:
        return True  # nothing there to hide; bubblewrap says so if it matters
    if info.st_uid == who.uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == who.gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)
