"""Running oracle and production code: child processes, and their sandbox.

Patched code never runs in the gate process. Each call starts a child
(``oracle_gate.runtime.child``) in a checkout of one tree (``checkouts.py``), in its
own process group (``processes.py``), with an allow-listed environment, resource
limits (``runtime/limits.py``) and a timeout (``runner.py``); where bubblewrap is
installed, inside ``bwrap`` with no network, a read-only file system, a private
``/tmp`` and no privilege (``bubblewrap.py``, ``runtime/privileges.py``). A gate
that runs as root refuses to run code where bubblewrap cannot take root's
privileges away (``probe.find_bwrap``).

Results travel on a private pipe, never on stdout (``relay.py``): the request is one
length-prefixed JSON frame on one pipe, the answer exactly one frame on
another, and nothing may follow it. A second frame (an ``atexit`` hook or a
thread forging an answer), bytes after the answer, or a malformed frame is a
``RunnerTamper`` (``failures.py``). The child exits with ``os._exit`` right after its
answer, so ``atexit`` hooks of the code under test never run.
"""

from oracle_gate.runtime.sandbox.failures import (
    OracleMistake,
    OutsideCheckout,
    RunnerFailure,
    RunnerTamper,
)
from oracle_gate.runtime.sandbox.probe import UNSANDBOXED_ROOT, find_bwrap
from oracle_gate.runtime.sandbox.processes import kill_children
from oracle_gate.runtime.sandbox.runner import (
    DEFAULT_TIMEOUT_FLOOR,
    ENV_ALLOWED,
    Runner,
    library_paths,
    top_level_modules,
)

__all__ = [
    "DEFAULT_TIMEOUT_FLOOR",
    "ENV_ALLOWED",
    "UNSANDBOXED_ROOT",
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
