"""The child's first act: give up what the sandbox left it, and cap what it may use.

The bootstrap calls ``enter`` before it imports anything of the checkout (the
gate's own code and the standard library are all it has loaded). Under a gate
that runs as root, bubblewrap starts the child as root of a user namespace of
its own, holding only the capabilities this needs (``CAP_SETUID``,
``CAP_SETGID``, ``CAP_SETPCAP``, ``CAP_CHOWN``): here the child gives its private
home directory to the unprivileged user it becomes, empties its capability
bounding set, switches every user and group id to that user with no
supplementary groups, and clears its inheritable and ambient capabilities, so
the code under test runs as a plain user of the host (``nobody``) with no
capability in any namespace. Then, in every child, the resource limits
(``runtime/limits.py``) are set, soft and hard: no process of the child can
raise them again.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
from dataclasses import dataclass
from typing import Any

from oracle_gate.runtime.limits import Limits, reached_by
from oracle_gate.runtime.variants import forget_clock

__all__ = ["Confinement", "PrivilegesKept", "enter", "reached"]

_PR_CAPBSET_DROP = 24
_PR_SET_DUMPABLE = 4
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522
_CAP_LAST = "/proc/sys/kernel/cap_last_cap"
# What /proc/self/status must show once the child has let go of everything.
_NO_CAPABILITIES = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


class PrivilegesKept(Exception):
    """The child could not give up its privileges: it must not run any code then."""


@dataclass(frozen=True)
class Confinement:
    """What the gate tells a child about its own confinement (one JSON argument).

    Attributes:
        limits: the caps to set.
        user: the (uid, gid) to become, under a gate that runs as root; else None.
        home: the private home directory to hand to ``user`` (a tmpfs of the sandbox).
        sandboxed: the child runs under bubblewrap, in namespaces of its own.
    """

    limits: Limits
    user: tuple[int, int] | None = None
    home: str | None = None
    sandboxed: bool = False

    def to_argument(self) -> str:
        return json.dumps(
            {
                "limits": self.limits.to_json(),
                "user": list(self.user) if self.user else None,
                "home": self.home,
                "sandboxed": self.sandboxed,
            }
        )

    @classmethod
    def from_argument(cls, text: str) -> Confinement:
        data: dict[str, Any] = json.loads(text)
        user = data["user"]
        return cls(
            limits=Limits.from_json(data["limits"]),
            user=(int(user[0]), int(user[1])) if user else None,
            home=data["home"],
            sandboxed=bool(data["sandboxed"]),
        )


_ENTERED: list[Confinement] = []


def enter(argument: str) -> Confinement:
    """Drop privileges (when told to) and set the limits, for this process and all it starts.

    Raises:
        PrivilegesKept: a capability or id survived the drop.
    """
    confinement = Confinement.from_argument(argument)
    forget_clock()
    if confinement.user is not None:
        _become(*confinement.user, confinement.home)
    for which, (soft, hard) in confinement.limits.rlimits(confinement.sandboxed).items():
        resource.setrlimit(which, (soft, hard))
    _ENTERED[:] = [confinement]
    return confinement


def reached(error: BaseException) -> str | None:
    """The limit that raised ``error`` in this child (``limits.reached_by``), if any."""
    if not _ENTERED:
        return None
    confinement = _ENTERED[0]
    return reached_by(error, confinement.limits, confinement.sandboxed)


def _become(uid: int, gid: int, home: str | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    # Read as bytes: a text file would look its codec up now, after the home directory
    # changed hands, and the interpreter's files may lie in it.
    with open(_CAP_LAST, "rb") as last:
        for capability in range(int(last.read()) + 1):
            _checked(libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0), "empty the bounding set")
    if home is not None:  # from here until the ids change, nothing is read from the disk
        os.chown(home, uid, gid)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    _checked(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient")
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    _checked(libc.capset(header, (ctypes.c_uint32 * 6)()), "clear capabilities")
    # Changing ids made the process undumpable, which gives its /proc entries to root:
    # the child could not list its own descriptors. Nothing is left to protect.
    _checked(libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "set dumpable")
    _verify(uid, gid)


def _checked(result: int, what: str) -> None:
    if result != 0:
        raise PrivilegesKept(f"cannot {what}: {os.strerror(ctypes.get_errno())}")


def _verify(uid: int, gid: int) -> None:
    """Read back what the kernel holds: every id the user's, every capability set empty."""
    with open("/proc/self/status", "rb") as status:
        lines = status.read().decode().splitlines()
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    ids = {"Uid": uid, "Gid": gid}
    for name, wanted in ids.items():
        if {int(value) for value in fields[name].split()} != {wanted}:
            raise PrivilegesKept(f"{name} is {fields[name].strip()}, not {wanted}")
    if fields["Groups"].split():
        raise PrivilegesKept(f"supplementary groups kept: {fields['Groups'].strip()}")
    for name in _NO_CAPABILITIES:
        if int(fields[name], 16):
            raise PrivilegesKept(f"{name} is {fields[name].strip()}, not empty")
