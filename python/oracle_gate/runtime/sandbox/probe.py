"""Whether bubblewrap can run a child here with no privilege: a probe child, asked once
per process, and the refusal to run code as root without it."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from oracle_gate.errors import RefusedError
from oracle_gate.runtime.sandbox.runner import Runner

__all__ = ["UNSANDBOXED_ROOT", "find_bwrap"]


# Set to 1, the gate runs code as root without a sandbox where bubblewrap cannot take
# root's privileges away; otherwise it refuses to (docs/sandbox.md, "Root without a
# sandbox is refused").
UNSANDBOXED_ROOT = "ORACLE_GATE_UNSANDBOXED_ROOT"


_said_no_sandbox: list[bool] = []
# bubblewrap binaries whose probe child confined itself, in this process.
_sandbox_works: set[str] = set()


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
