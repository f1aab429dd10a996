"""The environments head code runs in, so that behaviour which depends on how it is run shows.

Static tamper marks enumerate the ways code can tell a test run from a real one,
and each new spelling gets through. So the head's code also runs a second time
in another environment: one that differs in what such code reads. The usual
environment is the sandbox as ``sandbox.Runner`` makes it; the shifted one has:

- the clock more than a year ahead (libfaketime, preloaded into the child and
  its variables gone from ``os.environ`` before any code of the checkout runs),
  so a time bomb (``if date.today() >= SUNSET``) trips in the gate rather than
  in production;
- another host name (a name drawn from the check's seed, under bubblewrap);
- the variables a shell gives every command (``PWD``, ``SHLVL``, ``_``), as in a
  plain ``python -m pytest`` from a terminal, so the environment's size and
  names differ;
- another ``PYTHONHASHSEED``;
- another launch: the ``pytest`` script rather than ``python -m pytest``
  (``runtime/launch.py``: ``__main__``, ``sys.argv``, ``sys.orig_argv``).

A deterministic result that differs between the two on the head's code, where
the parent's code gives the same in both, is a reject: behaviour depends on how
it is run (``replay._verdict``). What the shifted run cannot vary is in
docs/replay.md.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from oracle_gate.runtime.launch import MODULE, SCRIPT, pytest_script

__all__ = [
    "CLOCK_VARIABLES",
    "SHIFTED",
    "USUAL",
    "Variant",
    "clock_library",
    "forget_clock",
]

# libfaketime's multithreaded build: production may start threads.
_LIBRARY = "libfaketimeMT.so.1"
_LIBRARY_DIRS = ("/usr/lib/{multiarch}/faketime", "/usr/lib/faketime", "/usr/local/lib/faketime")
# Set to a path, the gate preloads that library instead of looking for it.
LIBRARY_SETTING = "ORACLE_GATE_FAKETIME"
# The child drops these before any code of the checkout runs (``confine.enter``); a cache
# longer than any run keeps libfaketime from reading them again once they are gone (it
# reads its setting again every ten seconds by default, and would find the real clock).
CLOCK_VARIABLES = ("LD_PRELOAD", "FAKETIME", "FAKETIME_CACHE_DURATION", "FAKETIME_SHARED")
# Where libfaketime keeps the clock it shares with the processes a child starts.
_SHARED = ("/dev/shm/faketime_shm_{pid}", "/dev/shm/sem.faketime_sem_{pid}")
_CACHE_SECONDS = str(10**8)


@dataclass(frozen=True)
class Variant:
    """How one environment differs from the usual one.

    Attributes:
        name: ``usual`` or ``shifted``, as reports say it.
        clock_days: how far ahead the children's clock runs (0: the real clock).
        other_host: under bubblewrap, the children get a host name of their own.
        shell_variables: the children get ``PWD``, ``SHLVL`` and ``_``.
        hash_shift: added to the child's hash seed, so ``PYTHONHASHSEED`` differs.
        launch: how the children look launched (``launch.MODULE`` or ``launch.SCRIPT``).
    """

    name: str
    clock_days: int = 0
    other_host: bool = False
    shell_variables: bool = False
    hash_shift: int = 0
    launch: str = MODULE

    def clock(self, library: str | None) -> dict[str, str]:
        """The variables that move a child's clock (none for the real clock, or without
        libfaketime)."""
        if not self.clock_days or library is None:
            return {}
        return {
            "LD_PRELOAD": library,
            "FAKETIME": f"+{self.clock_days}d",
            "FAKETIME_CACHE_DURATION": _CACHE_SECONDS,
        }

    def shell(self, cwd: str, python: str) -> dict[str, str]:
        """The variables a shell sets for a command it runs in ``cwd``."""
        return {"PWD": cwd, "SHLVL": "1", "_": python} if self.shell_variables else {}

    def host_name(self, seed: int) -> str | None:
        """The children's host name (from ``seed``, so a check run again runs as it did)."""
        return f"runner-{seed % 16**6:06x}" if self.other_host else None

    def described(self, library: str | None, sandboxed: bool) -> str:
        """What this environment changes, for the report; empty for the usual one."""
        if self is USUAL:
            return ""
        parts = []
        if self.clock_days:
            parts.append(
                f"the clock {self.clock_days} days ahead"
                if library
                else "the real clock (libfaketime not found: apt-get install libfaketime, "
                f"or set {LIBRARY_SETTING} to its {_LIBRARY})"
            )
        if self.other_host and sandboxed:
            parts.append("another host name")
        if self.shell_variables:
            parts.append("a shell's PWD, SHLVL and _")
        if self.hash_shift:
            parts.append("another PYTHONHASHSEED")
        if self.launch == SCRIPT and pytest_script() is not None:
            parts.append("launched as the pytest script")
        return ", ".join(parts)


USUAL = Variant("usual")
# Four hundred days: any date a bomb compares with in the coming year lies behind it.
SHIFTED = Variant(
    "shifted", clock_days=400, other_host=True, shell_variables=True, hash_shift=1, launch=SCRIPT
)


def clock_library() -> str | None:
    """libfaketime's preload library: the setting's path if given, else the first found."""
    import sysconfig  # not at the top: every child imports this module at start-up

    given = os.environ.get(LIBRARY_SETTING)
    if given:
        return given if os.path.isfile(given) else None
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for directory in _LIBRARY_DIRS:
        path = os.path.join(directory.format(multiarch=multiarch), _LIBRARY)
        if os.path.isfile(path):
            return path
    return None


def forget_clock() -> None:
    """In a child whose clock libfaketime moves, before any code of the checkout runs: its
    variables gone from ``os.environ`` and its shared memory unlinked (it keeps them open),
    so neither tells the shifted run apart, and none is left in a host's ``/dev/shm``."""
    if os.environ.get("FAKETIME") is None:
        return
    for name in CLOCK_VARIABLES:
        os.environ.pop(name, None)
    for path in _SHARED:
        with contextlib.suppress(OSError):
            os.unlink(path.format(pid=os.getpid()))
