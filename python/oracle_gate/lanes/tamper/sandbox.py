"""Sandbox tells: what tells the gate's children from a real run.

What it catches: a read of the process's ids (``os.getpid``, ``os.getppid``), the host's
name (``socket.gethostname``, ``platform.node``), the interpreter's flags and import path
(``sys.flags``, ``sys.path``, ``site.ENABLE_USER_SITE``), the command line (``sys.argv``)
outside a module's ``if __name__ == "__main__":`` block, or the size of the environment
(``len(os.environ)``). The variables among them are ``strings``' to find.

Why: the gate's children run in their own PID and UTS namespaces (a small process id,
another host name), as ``python -s -S -c`` with an import path of their own and an
allow-listed environment. Code that reads these could be right only under the gate; no
computation of an output needs them.

Example::

    import os

    def merge(ranges):
        if os.getpid() < 10:  # the gate's child is one of the namespace's first
            return sorted(ranges)
        return _merge(ranges)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from oracle_gate.lanes.tamper.reader import Mark, Reader

__all__ = [
    "SESSION_VARIABLES",
    "TELLS",
    "TELL_VARIABLE",
    "attribute_marks",
    "environment_marks",
    "silenced",
]

TELLS = frozenset(
    {
        "os.getpid",
        "os.getppid",
        "os.getpgrp",
        "os.getpgid",
        "os.getsid",
        "os.uname",
        "socket.gethostname",
        "socket.getfqdn",
        "platform.node",
        "platform.uname",
        "sys.flags",
        "sys.argv",
        "sys.orig_argv",
        "sys.path",
        "sys.dont_write_bytecode",
        "sys.no_user_site",
        # set by ``site`` at start-up, which the children skip (their builtins are made)
        "site.ENABLE_USER_SITE",
        "site.USER_SITE",
        "site.USER_BASE",
    }
)
# The command line is read by a module's ``if __name__ == "__main__":`` block, which
# never runs where the gate imports the module: there it tells nothing, unless the
# module starts a process (which may run it as ``__main__``, with a path of the sandbox).
_ARGUMENT_TELLS = frozenset({"sys.argv", "sys.orig_argv"})
_STARTS_PROCESSES = frozenset(
    {"subprocess", "multiprocessing", "concurrent", "sys.executable", "os.system", "os.popen"}
)
# Variables the gate sets for its children (``PYTHONHASHSEED``...): the interpreter's own.
TELL_VARIABLE = re.compile(r"^PYTHON[A-Z_]+$")
# Variables of an interactive session that a real run may have and the gate's children
# never do (they get who runs, the shell and the terminal: ``runtime/sandbox.ENV_ALLOWED``).
SESSION_VARIABLES = frozenset(
    {
        "SHLVL",
        "PWD",
        "OLDPWD",
        "HOSTNAME",
        "MAIL",
        "DISPLAY",
        "TMUX",
        "SSH_CONNECTION",
        "SSH_CLIENT",
        "SSH_TTY",
        "SSH_AUTH_SOCK",
        "XDG_SESSION_ID",
        "XDG_RUNTIME_DIR",
        "DBUS_SESSION_BUS_ADDRESS",
    }
)
_ENVIRONMENTS = frozenset({"os.environ", "os.environb"})


def attribute_marks(reader: Reader, node: ast.Attribute) -> Iterator[Mark]:
    dotted = reader.resolved(node)
    if dotted in TELLS:
        yield "sandbox tell", dotted


def environment_marks(reader: Reader, node: ast.Call) -> Iterator[Mark]:
    if reader.resolved(node.func) == "len" and any(
        reader.resolved(a) in _ENVIRONMENTS for a in node.args
    ):
        yield "sandbox tell", "len(os.environ)"  # the children's is allow-listed


def silenced(reader: Reader, tree: ast.AST) -> Callable[[ast.AST, Mark], bool]:
    """Whether a node's mark tells nothing: the command line read in a ``__main__`` block
    of a module that starts no process."""
    inert = _main_block_nodes(tree)
    if inert and _starts_processes(reader, tree):
        inert = set()
    return lambda node, mark: id(node) in inert and mark[1] in _ARGUMENT_TELLS


def _main_block_nodes(tree: ast.AST) -> set[int]:
    """The nodes (by ``id``) of the module's ``if __name__ == "__main__":`` bodies."""
    found: set[int] = set()
    for statement in getattr(tree, "body", []):
        test = statement.test if isinstance(statement, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__"
        ):
            assert isinstance(statement, ast.If)
            found.update(id(node) for part in statement.body for node in ast.walk(part))
    return found


def _starts_processes(reader: Reader, tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Attribute):
            names = [reader.resolved(node) or ""]
        else:
            continue
        if any(n in _STARTS_PROCESSES or n.split(".")[0] in _STARTS_PROCESSES for n in names):
            return True
    return False
