"""The tamper rule: production code must not know it is tested.

A production change that adds a reference to test or gate machinery (pytest,
Hypothesis, unittest, oracle_gate; frame inspection; ``os._exit`` and
``atexit``; variables such as ``PYTEST_CURRENT_TEST``; the package's ledgers,
locks or fixtures; a value equal to a recorded seed input or to a fixture's
case, however it is spelled: ``lanes/spellings.py``, ``lanes/recorded.py``) could behave
one way under the oracles and another in production. So could one that reads
what tells the gate's sandbox from a real run: its process id, host name,
interpreter flags, command line, import path, or a ``PYTHON...`` variable. Such a change is a
``tamper:`` reject unless a human note covers the file.

The same holds for the ways to reach the process itself: a raw file
descriptor (``os.write``, ``os.dup2``, ``open(3)``, ``/proc/self/fd``), its
memory (``mmap``, ``ctypes``), its signals, a fork. The trusted replay runs
pytest and production code in one process, where such code could write a
forged answer on the result pipe.

Names are read through their aliases (``import os as o``, ``from os import
write as w``, ``o = os``, ``posix`` for ``os``), and ``from os import *`` of a
watched module is itself a mark.

Both sides are read from git objects (parent blob, head blob), and only what
the patch added counts: a reference the parent already had is not new.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from oracle_gate.config.ledgers import (
    ASSUMPTIONS_FILE,
    FREEZE_FILE,
    SEEDS_FILE,
    parse_seeds,
)
from oracle_gate.config.lockfile import LOCK_FILE
from oracle_gate.errors import GateError, SurfaceError
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.globs import matches_any
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.lanes.recorded import Recorded
from oracle_gate.lanes.spellings import NOTHING, Folder, names_bound_once
from oracle_gate.model import ChangeKind, Finding, Package
from oracle_gate.pysource.parse import parse_python
from oracle_gate.repo.trees import GitTree

__all__ = ["judge"]

# Modules production has no business importing: the test and gate machinery,
# and ctypes (which reaches anything in the process).
_MODULES = frozenset({"pytest", "_pytest", "hypothesis", "unittest", "oracle_gate", "atexit"})
_MODULES_TOO = frozenset({"ctypes", "doctest", "nose", "faulthandler"})
# Modules (dotted names too) that reach raw descriptors, the process's memory or its
# limits: no production change needs them to compute an output.
_PROCESS_MODULES = frozenset(
    {"fcntl", "mmap", "resource", "pty", "_posixsubprocess", "multiprocessing.reduction", "runpy"}
)
# Other spellings of a module: ``posix.write`` is ``os.write``.
_SAME_MODULE = {"posix": "os", "nt": "os", "_io": "io", "_socket": "socket", "_signal": "signal"}
# Dotted references that look at the caller, the process or the interpreter's tables.
_DOTTED = frozenset(
    {
        "sys._getframe",
        "sys._getframemodulename",
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "sys.modules",
        "inspect.stack",
        "inspect.currentframe",
        "inspect.getouterframes",
        "inspect.getinnerframes",
        "inspect.trace",
        "traceback.extract_stack",
        "traceback.walk_stack",
        "traceback.format_stack",
        "traceback.print_stack",
        "os._exit",
        "gc.get_objects",
        "gc.get_referrers",
        "importlib.import_module",
        "builtins.__import__",
        "builtins.exec",
        "builtins.eval",
        "builtins.compile",
        # A raw file descriptor (the result pipe is one), or the process itself.
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
# What tells the gate's children from a real run: their own PID and UTS namespaces (a
# small process id, another host name), ``python -s -S -c`` with an import path of its
# own, an allow-listed environment. Code that reads these could be right only under
# the gate; no computation of an output needs them.
_SANDBOX_TELLS = frozenset(
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
# Modules the gate's children import for themselves: the standard library, the test
# machinery and what it imports. A production module of that name at the package's import
# root is not what the children import, but would be what production imports.
_SHADOWED = sys.stdlib_module_names | {
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "hypothesis",
    "attr",
    "attrs",
    "sortedcontainers",
    "exceptiongroup",
    "tomli",
    "oracle_gate",
}
# Variables the gate sets for its children (``PYTHONHASHSEED``...): the interpreter's own.
_TELL_VARIABLE = re.compile(r"^PYTHON[A-Z_]+$")
# Variables of an interactive session that a real run may have and the gate's children
# never do (they get who runs, the shell and the terminal: ``runtime/sandbox.ENV_ALLOWED``).
_SESSION_VARIABLES = frozenset(
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
# The clock compared with a fixed moment: code that does one thing when the gate runs it
# and another from a date to come (a time bomb). A duration (``time.time() - start``)
# or a moment from data is not fixed.
_CLOCKS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
    }
)
_MOMENTS = frozenset(
    {
        "datetime.date",
        "datetime.datetime",
        "datetime.date.fromisoformat",
        "datetime.datetime.fromisoformat",
        "datetime.datetime.strptime",
        "datetime.datetime.fromtimestamp",
        "datetime.date.fromtimestamp",
    }
)
_EPOCH_MOMENT = 10**9  # seconds since 1970 in September 2001: less is a duration
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_YEARS = range(1970, 10000)
# Keywords that hand a descriptor over: open(..., opener=), socket(fileno=), Popen(pass_fds=).
_FD_KEYWORDS = frozenset({"opener", "closefd", "fileno", "pass_fds", "close_fds"})
# open() given one of these (or an int) opens a descriptor, not a path.
_OPENERS = frozenset({"open", "io.open", "builtins.open"})
# Calls that say whether a descriptor is open (or stat it) when handed a number: a child
# holds its result pipe open under a number a real run has closed.
_FD_PROBES = frozenset(
    {
        "os.fstat",
        "os.stat",
        "os.fstatvfs",
        "os.statvfs",
        "os.isatty",
        "os.ttyname",
        "os.lseek",
        "os.get_inheritable",
        "os.get_blocking",
        "os.set_blocking",
        "os.device_encoding",
        "os.fsync",
        "os.fdatasync",
        "os.ftruncate",
        "os.fchmod",
        "os.fchown",
        "os.fchdir",
        "os.close",
        "os.closerange",
        "os.listdir",
        "os.scandir",
        "os.path.exists",
        "os.path.isfile",
        "os.path.getsize",
        "os.path.samestat",
    }
)
_FD_CALLS = frozenset({"int", "fileno", "len", "abs", "ord", "hash", "round"})
# Paths into the process's own descriptors and memory.
_PROCESS_PATHS = re.compile(r"/proc(?:/|$)|/dev/fd(?:/|$)|^proc/?$")
# Attributes of frames, generators and tracebacks: walking to a caller's frame.
_FRAME_ATTRIBUTES = frozenset({"f_back", "f_globals", "f_locals", "f_code", "tb_frame", "gi_frame"})
# exec and eval run a string the reader never sees as code (compile: see _Reader).
_NAMES = frozenset({"__import__", "__builtins__", "exec", "eval"})
# getattr(sys, name) and friends hide a dotted reference from a reader.
_REFLECTION = frozenset({"getattr", "setattr", "delattr", "vars"})
_REFLECTED = frozenset(
    {
        "sys",
        "os",
        "inspect",
        "gc",
        "builtins",
        "importlib",
        "traceback",
        "io",
        "signal",
        "socket",
        "platform",
    }
)
# Callables that make a getter of a name given before the object: attrgetter(name)(sys).
_GETTERS = frozenset({"operator.attrgetter", "operator.methodcaller"})
# Attributes that reach a module's whole namespace: os.__dict__["write"].
_NAMESPACES = frozenset({"__dict__", "__getattribute__"})
# ``from os import *`` brings every watched name in unseen.
_STARRED = _REFLECTED | {name.split(".")[0] for name in _DOTTED | _SANDBOX_TELLS}
# Words that name the machinery, in any string (case-insensitive).
_WORDS = (
    "pytest",
    "hypothesis",
    "unittest",
    "oracle_gate",
    "oracle-gate",
    "conftest",
    "_getframe",
    SEEDS_FILE,
    FREEZE_FILE,
    ASSUMPTIONS_FILE,
    LOCK_FILE,
    "invariants.yaml",
    "oracle_changelog",
)
# A seed input this short (as JSON text) is too common to count as special-casing it.
_MIN_SEED_TEXT = 5
# A fixture holds more values than a seed: its cases' inputs and outputs, two levels
# down; shorter ones ("[0, 1]") are what honest code writes too. Fixture sets this large,
# or files this large (images, archives), are left out.
_FIXTURE_DEPTH = 2
_MIN_FIXTURE_TEXT = 8
# A structured literal a test hands the code or an oracle module holds (an input): long
# enough to be a case and not a piece honest code shares.
_MIN_ORACLE_TEXT = 12
_MAX_FIXTURES = 2000
_MAX_FIXTURE_BYTES = 1 << 16

Mark = tuple[str, str]  # (what kind of reference, its text)


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _json_text(value: object) -> str | None:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return None


def _printed(text: str) -> object:
    """What a string that prints a value (``str([[0, 1]])``, ``json.dumps``) holds, else
    the string itself."""
    try:
        return ast.literal_eval(text) if text[:1] in "[({" else json.loads(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text


def _literal(node: ast.AST) -> str | None:
    """The JSON text of a literal expression, tuples as lists; None if it is not one."""
    # a negative number is a unary minus on a constant
    if not isinstance(node, (ast.Constant, ast.UnaryOp, ast.List, ast.Tuple, ast.Dict, ast.Set)):
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, (set, frozenset)):
        return None
    return _json_text(value)


def _number(node: ast.AST) -> float | None:
    """The value of arithmetic on number constants (``1.7e9 + 400 * 86400``), else None."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if not isinstance(node, ast.BinOp):
        return None
    left, right = _number(node.left), _number(node.right)
    if left is None or right is None or max(abs(left), abs(right)) > 1e30:
        return None
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Sub):
        return left - right
    if isinstance(node.op, ast.Mult):
        return left * right
    if isinstance(node.op, (ast.Div, ast.FloorDiv)) and right:
        return left / right if isinstance(node.op, ast.Div) else left // right
    return None


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound to modules or their members: ``import os as o`` (o -> os), ``from os
    import write as w`` (w -> os.write), ``o = os``. Scopes are ignored: a name bound
    anywhere in the file is read that way everywhere, which errs towards a mark."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                found[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name)
            and node.value.id in found
        ):
            found[node.targets[0].id] = found[node.value.id]
    return found


def _is_fd(node: ast.AST, numbers: frozenset[str] = frozenset()) -> bool:
    """An expression that is a descriptor number rather than a path: ``3``, ``-x``,
    ``n + 1``, ``int(...)``, ``f.fileno()``, or a name in ``numbers``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id in numbers
    if isinstance(node, ast.UnaryOp):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _is_fd(node.left, numbers) or _is_fd(node.right, numbers)
    if isinstance(node, ast.Call):
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        return name in _FD_CALLS
    return False


def _is_guessed_fd(node: ast.AST, numbers: frozenset[str] = frozenset()) -> bool:
    """A descriptor number the code did not get from a file it opened: ``5``, ``n + 1``, a
    name in ``numbers``; not 0, 1 or 2 (every run has them) nor ``f.fileno()``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool) and node.value > 2
    if isinstance(node, ast.Call):
        return False
    return _is_fd(node, numbers)


def _is_year(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in _YEARS


@dataclass(frozen=True)
class _Bindings:
    """What the file binds, scopes ignored as for aliases: the variables of ``for ... in
    range(...)`` loops and comprehensions, and each name a plain assignment (``=``, an
    annotated one, ``:=``) gives a value."""

    ranged: frozenset[str]
    assigned: tuple[tuple[str, ast.expr], ...]

    def holding(self, is_wanted: Callable[[ast.expr], bool]) -> frozenset[str]:
        """Names assigned anywhere a value ``is_wanted`` says yes to."""
        return frozenset(name for name, value in self.assigned if is_wanted(value))


def _bindings(tree: ast.AST) -> _Bindings:
    ranged: set[str] = set()
    assigned: list[tuple[str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            iterated = node.iter
            if isinstance(iterated, ast.Call) and getattr(iterated.func, "id", "") == "range":
                ranged.add(node.target.id)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned += [(t.id, node.value) for t in targets if isinstance(t, ast.Name)]
    return _Bindings(frozenset(ranged), tuple(assigned))


class _Reader:
    """What one side of a production file refers to."""

    def __init__(self, fixtures: frozenset[str], known: Recorded) -> None:
        self.fixtures = fixtures
        self.known = known
        self.folder = Folder({}, self._resolved)
        self.aliases: dict[str, str] = {}
        self.numbers: frozenset[str] = frozenset()
        self.guessed: frozenset[str] = frozenset()
        self.moments: frozenset[str] = frozenset()

    def marks(self, tree: ast.AST) -> Iterator[tuple[Mark, int]]:
        self.aliases = _aliases(tree)
        bindings = _bindings(tree)
        # ``fd = 5``, ``fd = f.fileno()``, ``for fd in range(...)``: names holding a number
        self.numbers = bindings.ranged | bindings.holding(_is_fd)
        self.guessed = bindings.ranged | bindings.holding(_is_guessed_fd)
        self.moments = bindings.holding(self._is_moment)
        self.folder = Folder(names_bound_once(tree), self._resolved)
        inert = _main_block_nodes(tree)
        if inert and self._starts_processes(tree):
            inert = set()
        for node in ast.walk(tree):
            line = getattr(node, "lineno", 0)
            for mark in self._node_marks(node):
                if id(node) not in inert or mark[1] not in _ARGUMENT_TELLS:
                    yield mark, line

    def _starts_processes(self, tree: ast.AST) -> bool:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Attribute):
                names = [self._resolved(node) or ""]
            else:
                continue
            if any(n in _STARTS_PROCESSES or n.split(".")[0] in _STARTS_PROCESSES for n in names):
                return True
        return False

    def _resolved(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` spells, through aliases and a module's other names."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        head = self.aliases.get(head, head)
        top, _, inner = head.partition(".")
        head = ".".join(filter(None, [_SAME_MODULE.get(top, top), inner]))
        return f"{head}.{rest}" if rest else head

    def _node_marks(self, node: ast.AST) -> Iterator[Mark]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from self._module(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield from self._import_from(node.module, [alias.name for alias in node.names])
        elif isinstance(node, ast.Attribute):
            yield from self._attribute(node)
        elif isinstance(node, ast.Name) and node.id in _NAMES and node.id not in self.aliases:
            yield "reference", node.id
        elif isinstance(node, ast.Call):
            yield from self._reflection(node)
            yield from self._descriptor(node)
            if self._resolved(node.func) == "len" and self._counts_environment(node):
                yield "sandbox tell", "len(os.environ)"  # the children's is allow-listed
            if self._resolved(node.func) == "compile" and (
                len(node.args) >= 3 or any(k.arg == "mode" for k in node.keywords)
            ):
                yield "reference", "compile"  # the builtin's (source, filename, mode)
        elif isinstance(node, ast.Compare) and self._is_time_bomb(node):
            yield "time bomb", ast.unparse(node)[:60]
        if isinstance(node, ast.expr) and not isinstance(node, ast.Name | ast.Slice):
            # a name's value counts where it is bound, not at each use
            value = self.folder.value(node)
            if isinstance(value, (str, bytes)):
                yield from self._string(value)
            if self.known and value is not NOTHING:
                yield from self._recorded(value)

    def _recorded(self, value: object) -> Iterator[Mark]:
        """A recorded value (seed input, test value, fixture value) that ``value`` (what
        an expression folds to, ``lanes/spellings.py``) is, prints or digests."""
        if value is None or isinstance(value, bool):
            return
        found = self.known.kind_of(value)
        if found is None and isinstance(value, str):
            # str(ranges) == "[[0, 10], [2, 3]]": the value's printed form, as a string
            printed = _printed(value)
            found = self.known.kind_of(printed) if printed is not value else None
        found = found or self.known.digest_in(value)
        if found is not None:
            yield found[0], found[1][:60]

    def _is_time_bomb(self, node: ast.Compare) -> bool:
        """The clock on one side, a fixed moment on another: ``time.time() > 1.8e9``,
        ``date.today() >= SUNSET`` with ``SUNSET = date(2027, 1, 1)``, ``now().year > 2026``,
        also spelled in arithmetic: ``time.time() > 1.7e9 + 400 * 86400``, the time since a
        fixed moment (``time.time() - 1.7e9 > 3e7``) or the clock cut into days or weeks
        (``time.time() // 86400 > 20500``) compared with a number."""
        operands = [node.left, *node.comparators]
        clocks = [o for o in operands if self._reads_clock(o) and not self._is_duration(o)]
        others = [o for o in operands if o not in clocks]
        years = any(isinstance(o, ast.Attribute) and o.attr == "year" for o in clocks)
        calendar = any(self._counts_from_a_moment(o) for o in clocks)
        return bool(clocks) and any(
            self._is_moment(o)
            or (years and isinstance(o, ast.Constant) and _is_year(o.value))
            or (calendar and (_number(o) or 0) > 0)  # `>= 0` holds from now on
            for o in others
        )

    def _is_duration(self, node: ast.AST) -> bool:
        """The clock minus something other than a fixed moment (``time.time_ns() -
        start``): a duration, whatever number it is compared with."""
        return any(
            isinstance(n, ast.BinOp)
            and isinstance(n.op, ast.Sub)
            and (
                (self._reads_clock(n.left) and not self._is_moment(n.right))
                or (self._reads_clock(n.right) and not self._is_moment(n.left))
            )
            for n in ast.walk(node)
        )

    def _counts_from_a_moment(self, node: ast.AST) -> bool:
        """The clock minus a fixed moment, or divided into spans of a minute or more
        (``time.time() // 86400``, ``% 604800``): a count that names dates to come."""
        return any(
            isinstance(n, ast.BinOp)
            and self._reads_clock(n.left)
            and (
                (isinstance(n.op, ast.Sub) and self._is_moment(n.right))
                or (
                    isinstance(n.op, (ast.FloorDiv, ast.Div, ast.Mod))
                    and (_number(n.right) or 0) >= 60
                )
            )
            for n in ast.walk(node)
        )

    def _reads_clock(self, node: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Call) and self._resolved(n.func) in _CLOCKS for n in ast.walk(node)
        )

    def _is_moment(self, node: ast.AST) -> bool:
        number = _number(node)
        if number is not None and not isinstance(node, ast.Constant):
            return number >= _EPOCH_MOMENT  # 1.7e9 + 400 * 86400
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            # date(2027, 1, 1) + timedelta(days=30)
            return self._is_moment(node.left) and self._is_span(node.right)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, str):
                return bool(_ISO_DATE.match(value))
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return False
            return value >= _EPOCH_MOMENT
        if isinstance(node, ast.Name):
            return node.id in self.moments
        return (
            isinstance(node, ast.Call)
            and self._resolved(node.func) in _MOMENTS
            and bool(node.args)
            and all(
                isinstance(a, ast.Constant) for a in [*node.args, *(k.value for k in node.keywords)]
            )
        )

    def _is_span(self, node: ast.AST) -> bool:
        """A fixed length of time: a number, or a ``timedelta`` of constants."""
        return _number(node) is not None or (
            isinstance(node, ast.Call)
            and self._resolved(node.func) == "datetime.timedelta"
            and all(_number(a) is not None for a in [*node.args, *(k.value for k in node.keywords)])
        )

    def _counts_environment(self, node: ast.Call) -> bool:
        return any(self._resolved(a) in _ENVIRONMENTS for a in node.args)

    def _module(self, name: str) -> Iterator[Mark]:
        top = name.split(".")[0]
        if top in _MODULES or top in _MODULES_TOO:
            yield "import", top
            return
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            if ".".join(parts[:end]) in _PROCESS_MODULES:
                yield "import", ".".join(parts[:end])
                return

    def _import_from(self, module: str, names: list[str]) -> Iterator[Mark]:
        marks = list(self._module(module))
        yield from marks
        canonical = _SAME_MODULE.get(module, module)
        for name in names:
            if name == "*" and canonical in _STARRED:
                yield "import *", module
            elif f"{canonical}.{name}" in _DOTTED:
                yield "reference", f"{canonical}.{name}"
            elif f"{canonical}.{name}" in _SANDBOX_TELLS:
                yield "sandbox tell", f"{canonical}.{name}"
            elif not marks:
                yield from self._module(f"{module}.{name}")

    def _attribute(self, node: ast.Attribute) -> Iterator[Mark]:
        dotted = self._resolved(node)
        if dotted in _DOTTED:
            yield "reference", dotted
        elif dotted in _SANDBOX_TELLS:
            yield "sandbox tell", dotted
        elif dotted in _PROCESS_MODULES:
            yield "import", dotted
        if node.attr in _FRAME_ATTRIBUTES:
            yield "frame attribute", node.attr
        if node.attr in _NAMESPACES and self._resolved(node.value) in _REFLECTED:
            yield "reflection", f"{self._resolved(node.value)}.{node.attr}"
        if not isinstance(node.ctx, ast.Load) and self._resolved(node.value) == "builtins":
            # every module's names: an oracle's all() or min() too, where they share a process
            yield "reflection", f"builtins.{node.attr} replaced"

    def _reflection(self, node: ast.Call) -> Iterator[Mark]:
        function = node.func
        if isinstance(function, ast.Name) and function.id in _REFLECTION and node.args:
            target = self._resolved(node.args[0])
            if target in _REFLECTED:
                yield "reflection", f"{function.id}({target}, ...)"
        getter = self._resolved(function.func) if isinstance(function, ast.Call) else None
        if getter in _GETTERS:
            # operator.attrgetter('modules')(sys): getattr with the name given first
            for argument in node.args:
                target = self._resolved(argument)
                if target in _REFLECTED:
                    yield "reflection", f"{getter}(...)({target})"
        if self._resolved(function) == "functools.partial" and len(node.args) > 1:
            # functools.partial(getattr, os): getattr(os, ...) made later
            reflector, target = node.args[0], self._resolved(node.args[1])
            reflects = isinstance(reflector, ast.Name) and reflector.id in _REFLECTION
            if reflects and target in _REFLECTED:
                yield "reflection", f"functools.partial({ast.unparse(reflector)}, {target})"

    def _descriptor(self, node: ast.Call) -> Iterator[Mark]:
        """A call handed a descriptor: ``open(3)``, ``open(f.fileno())``, ``opener=``."""
        for keyword in node.keywords:
            if keyword.arg in _FD_KEYWORDS:
                yield "file descriptor", f"{keyword.arg}="
        name = self._resolved(node.func)
        if name in _FD_PROBES and node.args and _is_guessed_fd(node.args[0], self.guessed):
            yield "file descriptor", f"{name}({ast.unparse(node.args[0])[:30]})"
        if name in _OPENERS:
            first = node.args[0] if node.args else None
            given = [k.value for k in node.keywords if k.arg == "file"]
            target = first if first is not None else (given[0] if given else None)
            if target is not None and _is_fd(target, self.numbers):
                yield "file descriptor", f"{name}({ast.unparse(target)[:30]})"

    def _string(self, value: str | bytes) -> Iterator[Mark]:
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        lowered = text.lower()
        for word in _WORDS:
            if word.lower() in lowered:
                yield "name of test machinery", word
        if "PYTEST_" in text or "HYPOTHESIS_" in text:
            yield "test variable", text[:40]
        elif _TELL_VARIABLE.match(text) or text in _SESSION_VARIABLES:
            yield "sandbox tell", text[:40]
        if _PROCESS_PATHS.search(text):
            yield "process path", text[:40]
        for fixture in self.fixtures:
            if fixture in text:
                yield "fixture path", fixture


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


def _fixture_files(tree: GitTree, package: Package) -> tuple[str, ...]:
    """The package's fixture files (package-relative)."""
    return _files_matching(tree, package.path, package.matrix.fixture_globs)


# Every changed production file of a package asks again: the tree's files are walked,
# and its fixtures read, once per package.
@functools.lru_cache(maxsize=4)
def _files_matching(tree: GitTree, directory: str, globs: tuple[str, ...]) -> tuple[str, ...]:
    prefix = f"{directory}/" if directory else ""
    return tuple(
        path[len(prefix) :]
        for path in tree.files()
        if path.startswith(prefix) and matches_any(path[len(prefix) :], globs)
    )


def _fixture_names(tree: GitTree, package: Package) -> frozenset[str]:
    """Package-relative fixture paths, their file names and top directories."""
    names: set[str] = set()
    for relative in _fixture_files(tree, package):
        names.add(relative)
        base = relative.rsplit("/", 1)[-1]
        if "." in base and len(base) >= 5:
            names.add(base)
        if "/" in relative:
            names.add(relative.split("/", 1)[0] + "/")
    return frozenset(names)


def _fixture_values(tree: GitTree, package: Package) -> frozenset[str]:
    """What the parent's fixtures hold that code could answer from, as JSON text: a JSON
    fixture's lists and dicts down to its cases' inputs and expected outputs
    (``{"input": [...], "expected": [...]}``, or a list of such cases), long enough to
    matter; a text fixture's whole text."""
    return _values_of(tree, tuple(package.join(f) for f in _fixture_files(tree, package)))


@functools.lru_cache(maxsize=4)
def _values_of(tree: GitTree, files: tuple[str, ...]) -> frozenset[str]:
    texts: set[str] = set()
    if len(files) > _MAX_FIXTURES:
        return frozenset()
    for data in tree.read_many(files).values():
        if len(data) > _MAX_FIXTURE_BYTES:
            continue
        try:
            text = data.decode("utf-8")
            document = json.loads(text)
        except UnicodeDecodeError:
            continue
        except ValueError:
            document = text.strip()  # not JSON: the text is the value, with its newlines too
            texts.update(_case_values(text, 0))
        texts.update(_case_values(document, _FIXTURE_DEPTH))
    return frozenset(text for text in texts if len(text) >= _MIN_FIXTURE_TEXT)


def _case_values(value: object, depth: int) -> Iterator[str]:
    """The JSON text of ``value`` when it is a list, a dict or a string, and of what it
    holds, ``depth`` levels down."""
    if isinstance(value, (list, dict, str)):
        text = _json_text(value)
        if text is not None:
            yield text
    if depth > 0 and isinstance(value, (list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _case_values(item, depth - 1)


def _oracle_values(tree: GitTree, package: Package) -> frozenset[str]:
    """The cases the parent's tests and oracle modules hand the code, as JSON text: code
    that answers those inputs from memory passes them while broken.

    In a test file, a structured literal passed to a call (``merge_ranges([[0, 2], [2,
    4]])``, a parametrize table) and each case in it; not what a test compares with
    (``== {"timeout": 30, ...}`` is what honest code may define too). In an oracle module
    (partitions, relations), every structured literal: its tables are inputs."""
    modules = sorted({module for row in package.matrix.rows for module in row.oracle_modules})
    # only those the tree holds: the head's matrix may name a module the patch adds
    tests = _files_matching(tree, package.path, package.matrix.tests)
    oracles = _files_matching(tree, package.path, tuple(modules))
    return _written_values(tree, tuple(package.join(f) for f in tests), arguments_only=True) | (
        _written_values(tree, tuple(package.join(f) for f in oracles), arguments_only=False)
    )


@functools.lru_cache(maxsize=8)
def _written_values(tree: GitTree, files: tuple[str, ...], arguments_only: bool) -> frozenset[str]:
    texts: set[str] = set()
    for data in tree.read_many(files).values():
        parsed = _parsed(data) if len(data) <= _MAX_FIXTURE_BYTES else None
        nodes = (_arguments(parsed) if arguments_only else ast.walk(parsed)) if parsed else ()
        for node in nodes:
            text = _literal(node) if _is_structured(node) else None
            texts.update([text] if text and len(text) >= _MIN_ORACLE_TEXT else [])
    return frozenset(texts)


def _arguments(tree: ast.AST) -> Iterator[ast.AST]:
    """Every call's arguments, and what those that are containers hold."""
    for call in ast.walk(tree):
        if isinstance(call, ast.Call):
            for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
                yield argument
                if isinstance(argument, (ast.List, ast.Tuple, ast.Set)):
                    yield from argument.elts


def _is_structured(node: ast.AST) -> bool:
    """A list, tuple or dict that holds another: a case's shape, not an enumeration of
    scalars (status codes, names) that tests and honest code both write."""
    if not isinstance(node, (ast.List, ast.Tuple, ast.Dict)):
        return False
    items = node.values if isinstance(node, ast.Dict) else node.elts
    return any(isinstance(item, (ast.List, ast.Tuple, ast.Dict)) for item in items)


def _seed_texts(parent: GitTree, head: GitTree, package: Package) -> frozenset[str]:
    """Recorded seed inputs (parent and head ledgers) as JSON text, long enough to matter."""
    texts: set[str] = set()
    path = package.join(SEEDS_FILE)
    for tree in (parent, head):
        data = tree.read_optional(path)
        if not data:
            continue
        try:
            seeds = parse_seeds(data, path)
        except GateError:
            continue  # the ledger lane reports a broken ledger
        for seed in seeds:
            text = _json_text(seed.data.get("input"))
            if text is not None and len(text) >= _MIN_SEED_TEXT:
                texts.add(text)
    return frozenset(texts)


@functools.lru_cache(maxsize=4)
def _recorded(parent: GitTree, head: GitTree, package: Package) -> Recorded:
    """The package's recorded values, once per check (their digests are built on first
    need): test values, then fixture values, then seed inputs, the last kind winning."""
    entries = [(text, "test value") for text in sorted(_oracle_values(parent, package))]
    entries += [(text, "fixture value") for text in sorted(_fixture_values(parent, package))]
    entries += [(text, "seed input") for text in sorted(_seed_texts(parent, head, package))]
    return Recorded(entries)


def _parsed(data: bytes | None) -> ast.AST | None:
    if data is None:
        return None
    try:
        return parse_python(data, "<source>")
    except SurfaceError:
        return None  # Python cannot import it either: no marks or values are read from it


def added_marks(
    parent: bytes | None, head: bytes, fixtures: frozenset[str], known: Recorded
) -> list[tuple[Mark, int]]:
    """References in ``head`` beyond those ``parent`` already had, with a head line each.
    ``known``: the package's recorded values (seed inputs, test values, fixture values)."""
    reader = _Reader(fixtures, known)
    head_tree = _parsed(head)
    if head_tree is None:
        return []  # not Python (or not valid): the rows' runs judge it
    parent_tree = _parsed(parent)
    before = Counter(mark for mark, _ in reader.marks(parent_tree)) if parent_tree else Counter()
    after = sorted(reader.marks(head_tree), key=lambda pair: pair[1])
    added: list[tuple[Mark, int]] = []
    for mark, line in after:
        if before[mark] > 0:
            before[mark] -= 1
        else:
            added.append((mark, line))
    return added


def _new_shadow(path: str, package: Package, parent: GitTree) -> list[tuple[Mark, int]]:
    """A module at the package's import root (``json.py``, ``json/...``) named like one the
    gate's children import themselves, which the parent did not have."""
    top, slash, _ = package.relative(path).partition("/")
    name = top if slash else top.removesuffix(".py")
    if name not in _SHADOWED:
        return []
    held = package.join(name)
    if parent.blob_id(f"{held}.py") is not None or parent.has_directory(held):
        return []
    return [(("module named like the standard library's or the gate's", name), 1)]


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    """A ``tamper:`` reject (or ``human_noted``) when the patch added such references."""
    package = laned.package
    if package is None or laned.change.kind is ChangeKind.DELETED or not laned.path.endswith(".py"):
        return []
    head = facts.head.read_optional(laned.path)
    if head is None:
        return []
    parent = facts.parent.read_optional(laned.change.old_path or laned.path)
    fixtures = _fixture_names(facts.parent, package) | _fixture_names(facts.head, package)
    added = added_marks(parent, head, fixtures, _recorded(facts.parent, facts.head, package))
    added += _new_shadow(laned.path, package, facts.parent)
    if not added:
        return []
    shown = summarize([f"{kind} {text!r} (line {line})" for (kind, text), line in added])
    return [
        oracle_move(
            laned,
            facts,
            f"tamper: production code now refers to test or gate machinery: {shown}",
        )
    ]
