"""Per-test footprints of a pytest run on the trusted parent's code: the child side.

The trusted replay reruns on the head only the parent's tests whose footprint
meets the diff (``runtime/impact.py`` decides). This module records the
footprints, inside the child that runs the parent's tests in one process with
the parent's code (trusted code: nothing here defends against it):

- the repository files whose code each test executed, line by line, with
  coverage.py's C tracer (its ``sys.monitoring`` core keeps no per-test contexts).
  Code run outside any test (conftests and test modules imported while pytest
  collects, and the modules they import) is the session's footprint, which
  every test shares; a fixture of a wider scope than the function is its own
  footprint, shared by every test that requests it, whichever test ran it;
- the repository files each test opened (an audit hook on ``open``; reading a
  module's source to import it is the import's, whose code the tracer sees), and
  apart from them the configuration files pytest's own loader read (what it reads
  of them, its own section, the classifier compares: ``runtime/impact.py``),
  the lines of source it had ``linecache`` give line by line (a traceback or a
  warning rendered as text shows those lines and no others; a whole file asked
  of ``linecache``, as ``inspect.getsource`` does, is a file read, cached or
  not) and the directories it listed (``os.listdir``, ``os.scandir``: a file added
  there can change what it finds, an import among them);
- why a test's footprint could not be recorded: it started a process (whose
  code the tracer does not see), a thread outlived it or ran beside it, it
  replaced the tracer, a C extension of the repository was loaded. Such a test
  always runs again.

Paths are relative to the checkout's root (itself ``""``), as ``/``-separated text.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import linecache
import os
import sys
import threading
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

__all__ = ["SESSION", "Recorder"]

# The footprint label of everything that runs outside a test: every test shares it.
SESSION = ""
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork"}
)
_LISTING_EVENTS = frozenset({"os.listdir", "os.scandir"})
# A profiler sees no lines and takes nothing from coverage's tracer: only settrace counts.
_TRACER_EVENTS = frozenset({"sys.settrace"})
_EXTENSIONS = tuple(importlib.machinery.EXTENSION_SUFFIXES)


@dataclass
class _Trace:
    """What one label (a test, a wide fixture, the session) did besides executing lines."""

    opened: set[str] = field(default_factory=set)
    configured: set[str] = field(default_factory=set)  # read by pytest's configuration loader
    rendered: dict[str, set[int]] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)
    unrecorded: str = ""

    def lose(self, why: str) -> None:
        self.unrecorded = self.unrecorded or why


class Recorder:
    """A pytest plugin recording every test's footprint in this process.

    Made before pytest starts, so that what collection imports is traced;
    ``result()`` after pytest returned gives the footprints.
    """

    def __init__(self, root: str) -> None:
        import coverage

        self.root = os.path.realpath(root)
        self.label = SESSION
        self.traces: dict[str, _Trace] = {SESSION: _Trace()}
        self.fixtures: dict[str, list[str]] = {}  # test -> the wide fixtures' labels it uses
        self.wide: dict[str, list[str]] = {}  # fixture name -> labels it ran under
        self.modules = set(sys.modules)
        self.loaded_extension = ""
        self.coverage = coverage.Coverage(
            data_file=None, config_file=False, include=[os.path.join(self.root, "*")]
        )
        # coverage.py's C tracer: its sys.monitoring core records no dynamic contexts,
        # and the context is what tells one test's lines from another's
        self.coverage.set_option("run:core", "ctrace")
        sys.addaudithook(self._audit)
        # the import system lists each directory it searches once and keeps the listing:
        # listed again from here on, the session's footprint holds every one of them
        importlib.invalidate_caches()
        self.thread_tracer: Any = None
        self.tracer: Any = None
        self.started = False
        # sys.settrace's audit event names no tracer: this wrapper says which is being
        # set and by whom (per thread), so that putting coverage's own back (doctest
        # does, after each docstring) loses nothing
        self.setting = threading.local()
        self.settrace = sys.settrace
        sys.settrace = self._settrace
        # linecache keeps what it read: only asking it, test by test, says who needs what
        self.getline, self.getlines = linecache.getline, linecache.getlines
        self.reading = threading.local()
        linecache.getline, linecache.getlines = self._getline, self._getlines
        self.coverage.start()
        self.thread_tracer = threading.gettrace()
        self.tracer = sys.gettrace()
        self.started = True

    def _settrace(self, function: Any) -> None:
        self.setting.call = (function, sys._getframe(1).f_code.co_filename)
        try:
            self.settrace(function)
        finally:
            del self.setting.call
        # set from Python, coverage's tracer installs its C function on the next call
        # event in this thread, which is an audited settrace too
        self.setting.reinstall = function is self.tracer and function is not None

    def _getline(self, filename: str, lineno: int, module_globals: Any = None) -> str:
        """One line of source (a traceback's, a warning's): only that line's text counts."""
        outer = getattr(self.reading, "line", False)
        self.reading.line = True
        try:
            return self.getline(filename, lineno, module_globals)
        finally:
            self.reading.line = outer
            relative = self._relative(filename)
            if relative is not None:
                self._trace().rendered.setdefault(relative, set()).add(lineno)

    def _getlines(self, filename: str, module_globals: Any = None) -> list[str]:
        """A whole file's lines, from linecache's store or not: a read of the file."""
        if not getattr(self.reading, "line", False):
            self._note(self._trace().opened, filename)
        # linecache's own list, not a copy: getline asks for it for every line shown
        return self.getlines(filename, module_globals)

    def _trace(self) -> _Trace:
        return self.traces.setdefault(self.label, _Trace())

    def _switch(self, label: str) -> None:
        self.label = label
        self.coverage.switch_context(label)

    def _relative(self, path: Any) -> str | None:
        """``path`` relative to the checkout, or None when it lies outside or is no path."""
        if isinstance(path, int) or path is None:
            return None
        try:
            text = os.fsdecode(path)
        except TypeError:
            return None
        real = os.path.realpath(text)
        if real == self.root:
            return ""
        if not real.startswith(self.root + os.sep):
            return None
        return real[len(self.root) + 1 :]

    def _inside(self, path: Any) -> bool:
        return self._relative(path) is not None

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            # the import system reading a module to run it: the tracer sees its code;
            # linecache filling its store for one line: that line is what is read
            if getattr(self.reading, "line", False):
                return
            caller = sys._getframe(1)
            if _configuration_read(caller):
                self._note(self._trace().configured, args[0] if args else None)
            elif not caller.f_code.co_filename.startswith("<frozen importlib"):
                self._note(self._trace().opened, args[0] if args else None)
        elif event in _LISTING_EVENTS:
            self._note(self._trace().listed, args[0] if args and args[0] is not None else os.curdir)
        elif event in _PROCESS_EVENTS:
            self._trace().lose("it started a process, whose code is not traced")
        elif event in _TRACER_EVENTS and self.started and not self._tracer_kept():
            self._trace().lose("it replaced the tracer")
        elif event == "ctypes.dlopen" and self._inside(args[0] if args else None):
            self._trace().lose("it loaded a native library of the repository")

    def _note(self, found: set[str], path: Any) -> None:
        relative = self._relative(path)
        if relative is not None:
            found.add(relative)

    def _tracer_kept(self) -> bool:
        """Whether a tracer being set is coverage's: set by coverage itself, by a new
        thread starting with the hook coverage gave ``threading``, or put back."""
        if not hasattr(self.setting, "call") and getattr(self.setting, "reinstall", False):
            self.setting.reinstall = False
            return True
        function, caller = getattr(
            self.setting, "call", (None, sys._getframe(2).f_code.co_filename)
        )
        if function is not None and function is self.tracer:
            return True
        if f"{os.sep}coverage{os.sep}" in caller:
            return True
        return caller == threading.__file__ and threading.gettrace() is self.thread_tracer

    def _tracer_off(self) -> str:
        """Why lines run now go unseen: coverage's tracer is not this thread's."""
        if self.started and sys.gettrace() is not self.tracer:
            return "the tracer was not coverage's (a test replaced it)"
        return ""

    def _threads(self) -> str:
        others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
        return f"a thread ({others[0]}) ran beside it" if others else ""

    def _extension(self) -> str:
        """A C extension of the repository imported since the last look, if any."""
        new = set(sys.modules) - self.modules
        self.modules |= new
        for name in sorted(new):
            file = getattr(sys.modules.get(name), "__file__", None)
            if isinstance(file, str) and file.endswith(_EXTENSIONS) and self._inside(file):
                self.loaded_extension = f"a C extension of the repository ({name}) was loaded"
        return self.loaded_extension

    def _check(self, trace: _Trace) -> None:
        for why in (self._threads(), self._extension(), self._tracer_off()):
            if why:
                trace.lose(why)

    # pytest hooks

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._check(self.traces[SESSION])
        self._switch(nodeid)
        self._check(self._trace())

    def pytest_runtest_setup(self, item: Any) -> None:
        self.fixtures[item.nodeid] = list(getattr(item, "fixturenames", ()))

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self._check(self._trace())
        self._switch(SESSION)

    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Generator[None, Any, Any]:
        if fixturedef.scope == "function":
            return (yield)
        outer = self.label
        label = f"{fixturedef.scope} fixture {fixturedef.argname} ({fixturedef.baseid})"
        self.wide.setdefault(fixturedef.argname, [])
        if label not in self.wide[fixturedef.argname]:
            self.wide[fixturedef.argname].append(label)
        self._switch(label)
        try:
            return (yield)
        finally:
            self._switch(outer)

    pytest_fixture_setup.hookwrapper = True  # type: ignore[attr-defined]

    def result(self) -> dict[str, Any]:
        """Every test's footprint (wide fixtures it requests included) and the session's."""
        self._check(self.traces[SESSION])
        self.started = False
        self.coverage.stop()
        sys.settrace = self.settrace
        linecache.getline, linecache.getlines = self.getline, self.getlines
        lines = self._lines()
        session = _encoded(lines.get(SESSION, {}), self.traces[SESSION])
        tests = {}
        for nodeid in self.fixtures.keys() | (self.traces.keys() - {SESSION}):
            if " fixture " in nodeid and nodeid not in self.fixtures:
                continue
            labels = [nodeid, *self._wide_labels(self.fixtures.get(nodeid, ()))]
            tests[nodeid] = _merged(
                [
                    _encoded(lines.get(label, {}), self.traces.get(label, _Trace()))
                    for label in labels
                ]
            )
        return {"session": session, "tests": tests}

    def _wide_labels(self, names: Iterable[str]) -> list[str]:
        return [label for name in names for label in self.wide.get(name, ())]

    def _lines(self) -> dict[str, dict[str, set[int]]]:
        """label -> checkout-relative file -> the lines executed under that label."""
        data = self.coverage.get_data()
        found: dict[str, dict[str, set[int]]] = {}
        for file in data.measured_files():
            relative = self._relative(file)
            if relative is None:
                continue
            for line, labels in data.contexts_by_lineno(file).items():
                for label in labels:
                    found.setdefault(label, {}).setdefault(relative, set()).add(line)
        return found


# pytest's own loader of its configuration files, what it reads a file through, and what
# calls it: a test calling the loader's helpers itself (``_parse_toml_file`` gives the
# whole file) reads the file as any test does.
_CONFIG_LOADER = "_pytest.config.findpaths"
_READERS = frozenset({"pathlib", "iniconfig"})
_CONFIG = "_pytest.config"


def _configuration_read(frame: FrameType | None) -> bool:
    """Whether an open made in ``frame`` is pytest's configuration, as it starts, reading a
    file (``pyproject.toml``, ``setup.cfg``, ``tox.ini``, ``pytest.ini``) for its section."""
    while frame is not None and frame.f_globals.get("__name__") in _READERS:
        frame = frame.f_back
    if frame is None or frame.f_globals.get("__name__") != _CONFIG_LOADER:
        return False
    while frame is not None and frame.f_globals.get("__name__") == _CONFIG_LOADER:
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__") == _CONFIG


def _ranges(lines: Iterable[int]) -> list[list[int]]:
    """Sorted lines as ``[first, last]`` runs."""
    runs: list[list[int]] = []
    for line in sorted(lines):
        if runs and runs[-1][1] == line - 1:
            runs[-1][1] = line
        else:
            runs.append([line, line])
    return runs


def _lines_of(runs: Iterable[list[int]]) -> Iterable[int]:
    return (line for first, last in runs for line in range(first, last + 1))


def _encoded(lines: dict[str, set[int]], trace: _Trace) -> dict[str, Any]:
    return {
        "lines": {file: _ranges(found) for file, found in sorted(lines.items())},
        "opened": sorted(trace.opened),
        "configured": sorted(trace.configured),
        "rendered": {file: _ranges(found) for file, found in sorted(trace.rendered.items())},
        "listed": sorted(trace.listed),
        "unrecorded": trace.unrecorded,
    }


def _merged(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One footprint of several (a test and the wide fixtures it requests)."""
    if len(parts) == 1:
        return parts[0]
    lines: dict[str, set[int]] = {}
    trace = _Trace()
    for part in parts:
        for file, runs in part["lines"].items():
            lines.setdefault(file, set()).update(_lines_of(runs))
        trace.opened.update(part["opened"])
        trace.configured.update(part["configured"])
        for file, runs in part["rendered"].items():
            trace.rendered.setdefault(file, set()).update(_lines_of(runs))
        trace.listed.update(part["listed"])
        if part["unrecorded"]:
            trace.lose(part["unrecorded"])
    return _encoded(lines, trace)
