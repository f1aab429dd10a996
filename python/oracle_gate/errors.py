"""The GateError hierarchy: every way the gate can fail to reach a verdict.

This module imports nothing from oracle_gate: the native core raises these very
classes (``pyo3::import_exception!``), so importing ``_native`` here would be
circular.
"""

from __future__ import annotations

import errno


class GateError(Exception):
    """The gate could not reach a verdict. The CLI exits 2."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message, path, line)
        self.message = message
        self.path = path
        self.line = line

    def __str__(self) -> str:
        where = self.path or ""
        if self.path and self.line:
            where += f":{self.line}"
        return f"{where}: {self.message}" if where else self.message


class ConfigError(GateError):
    """invariants.yaml or a gate declaration in BUILD is invalid."""


class LockError(GateError):
    """An oracle_gate.lock is missing, unreadable or malformed."""


class LedgerError(GateError):
    """seeds.jsonl, flake_freeze.yaml or assumptions.yaml is malformed."""


class GitError(GateError):
    """A ref does not resolve, history is shallow, or git failed."""


class SurfaceError(GateError):
    """A test file does not parse, so its assertion surface is unknown."""


class TreeError(GateError):
    """A file in the tree cannot be read: missing, a broken link, no permission."""


class BackendError(GateError):
    """The native backend was required but cannot be imported."""


class DeadlineError(GateError):
    """The command ran past its ``--timeout``; nothing was decided."""


class RefusedError(GateError):
    """The command is not allowed in this context (for example ``lock --write`` in CI)."""


class FaultError(GateError):
    """The machine refused an operation: a read-only or full file system, a name too
    long for it, a missing permission. Nothing was decided; the message says what to do."""


# What to do about an operating system refusal, by errno.
_REMEDIES = {
    errno.EROFS: "run where it can be written",
    errno.ENOSPC: "free some space and run again",
    errno.EDQUOT: "free some space and run again",
    errno.EFBIG: "raise the file size limit (ulimit -f)",
    errno.ENAMETOOLONG: "shorten the path",
    errno.EACCES: "run as a user who may",
    errno.EMFILE: "raise the open-file limit (ulimit -n)",
}


def fault(error: OSError, doing: str, root: str | None = None) -> FaultError:
    """The gate error for an ``OSError`` met while ``doing`` something ("write the lock"):
    one line naming the file (relative to ``root`` when it is inside), whatever bytes
    its name holds, and what to do."""
    why = error.strerror or str(error)
    remedy = _REMEDIES.get(error.errno or 0)
    message = f"cannot {doing} ({why})" + (f"; {remedy}" if remedy else "")
    name = error.filename
    if isinstance(name, bytes):
        name = name.decode("utf-8", "surrogateescape")
    if name is not None and root is not None and str(name).startswith(f"{root}/"):
        name = str(name)[len(root) + 1 :]
    path = (
        None
        if name is None
        else str(name).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    )
    return FaultError(message, path)
