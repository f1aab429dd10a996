"""The oracle side of a property run: repository modules as proxies of a production child.

A property and Hypothesis run in an oracle child that never imports the
package's production code. A meta-path finder answers imports of the
repository's modules with proxy modules; an attribute of one is a remote
callable, a production exception class or a plain value, fetched from the
production child (``child.serve``) through the gate. Arguments and results
cross as canonical plain data (``canonical.encode(plain=True)``) in both
directions, so nothing the production code builds ever runs here.

What cannot cross (an instance of a production class, a function passed as an
argument) is recorded with the oracle file and line that asked for it, and the
property run becomes an oracle mistake: the row can never pass on a value the
oracle did not see. An answer that is not a well-formed value is recorded as
tampering.

This module imports only the standard library and the canonical form: it runs
before the child's ``sys.path`` holds anything else.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import selectors
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType, ModuleType
from typing import Any, NoReturn

from oracle_gate.runtime.canonical import CanonicalError, NotPlainData, decode, encode
from oracle_gate.runtime.consumers import exhausts
from oracle_gate.runtime.frames import ANSWER_OUTCOMES, FrameError, read_checked, write_frame

__all__ = ["Link", "TestSide", "Unsendable", "install"]

# Frames up the stack searched for the oracle line that asked for an unsendable value.
_STACK_LIMIT = 200


class Unsendable(Exception):
    """A value that cannot cross between the oracle and production processes."""


class ProxyFault(Exception):
    """The production child's answer is not a well-formed value: tampering."""


@dataclass(frozen=True)
class Problem:
    """What could not cross, and the oracle file (package-relative) and line that asked."""

    what: str
    file: str
    line: int | None


@dataclass
class Link:
    """The oracle child's end of the conversation with the production child: questions out
    on one pipe, answers in on another, straight between the two processes.

    This process keeps the protocol: each question has the next sequence number
    and only one is outstanding; the production child's first frame is its
    ``ready`` handshake, and each answer after it must carry the question's number
    and exactly one outcome (``ANSWER_OUTCOMES``), with nothing before or after it.
    ``oracle_dir`` is where the oracle files live; the first frame on the stack
    inside it names the line of an unsendable value.
    """

    question_fd: int
    answer_fd: int
    oracle_dir: str
    # The pipe to the gate: when the conversation cannot go on (the production child
    # died, broke the protocol, or stood on outside code), the oracle child's last word
    # goes there at once and it leaves; no test code in between can catch that.
    result_fd: int = -1
    problems: list[Problem] = field(default_factory=list)
    tamper: str | None = None
    classes: dict[str, type[Exception]] = field(default_factory=dict)
    # Production objects received (split replay), with the oracle line that received each.
    held: list[Problem] = field(default_factory=list)
    types: dict[int, str] = field(default_factory=dict)  # handle -> its object's type
    # Whether production may answer with object handles: only in a split replay, where
    # the gate compares where the parent's and the head's code gave objects. A property
    # run takes plain data alone, or an object's ``==`` would decide the property.
    handles: bool = False
    class_stand_ins: dict[str, type] = field(default_factory=dict)
    sequence: int = 0
    # (handle, answer): the length hint production gave when it drained that object, for
    # the ``len`` that CPython's list() asks right after; any other question ends it
    hint: tuple[int, dict[str, Any]] | None = None

    def ask(self, question: dict[str, Any]) -> dict[str, Any]:
        """Production's answer to ``question``.

        When the production child died, broke the protocol or imported a repository
        module from outside the checkout, this process answers the gate so and leaves.
        """
        if self.sequence == 0:
            self._answer(0, "ready")
        self.hint = None
        self.sequence += 1
        try:
            write_frame(self.question_fd, {"seq": self.sequence, **question})
        except OSError:
            self.stop({"gone": "the production child died"})
        return self._answer(self.sequence)

    def _answer(self, sequence: int, expected: str | None = None) -> dict[str, Any]:
        try:
            frame = read_checked(self.answer_fd)
        except (EOFError, OSError):
            self.stop({"gone": "the production child died"})
        except FrameError as error:
            self.stop({"tamper": f"the production child wrote {error}"})
        if frame.get("seq") != sequence or type(frame.get("seq")) is not int:
            self.stop({"tamper": "the production child answered out of order"})
        outcome = [key for key in frame if key in ANSWER_OUTCOMES]
        if len(outcome) != 1 or set(frame) - {"seq", *outcome, *ANSWER_OUTCOMES[outcome[0]]}:
            self.stop({"tamper": "a malformed answer from the production child"})
        del frame["seq"]
        if outcome == ["outside"] or (expected is not None and outcome != [expected]):
            if outcome in (["outside"], ["error"]):
                self.stop(frame)  # the answer stood on code from outside the checkout
            self.stop({"tamper": "the production child answered before it was asked"})
        return frame

    def stop(self, answer: dict[str, Any]) -> NoReturn:
        """Give the gate ``answer`` as this child's last word, and leave at once."""
        sys.stdout.flush()
        sys.stderr.flush()
        write_frame(self.result_fd, answer)
        os._exit(0)

    def finish(self, wait: float) -> None:
        """The conversation is over: the production child is told so, and may say nothing
        more (within ``wait`` seconds, until it closes its end).

        A frame after the last answer is tampering: this child then says so and leaves.
        """
        os.close(self.question_fd)
        if self.sequence == 0:
            return  # nothing was asked: its handshake is all it may have said
        deadline = time.monotonic() + wait
        os.set_blocking(self.answer_fd, False)
        with selectors.DefaultSelector() as selector:
            selector.register(self.answer_fd, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0 and selector.select(left):
                try:
                    chunk = os.read(self.answer_fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
                self.stop({"tamper": "the production child wrote a frame nobody asked for"})

    def refuse(self, what: str) -> Unsendable:
        """Record an unsendable ``what`` with the oracle line that asked for it."""
        file, line = self._oracle_line(sys._getframe(1))
        self.problems.append(Problem(what, file, line))
        return Unsendable(f"{what} cannot cross to the oracle process")

    def fault(self, detail: str) -> ProxyFault:
        self.tamper = self.tamper or f"the production child answered {detail}"
        return ProxyFault(self.tamper)

    def _oracle_line(self, frame: FrameType | None) -> tuple[str, int | None]:
        root = self.oracle_dir + os.sep
        for _ in range(_STACK_LIMIT):
            if frame is None:
                break
            name = frame.f_code.co_filename
            if name.startswith(root):
                return name[len(root) :], frame.f_lineno
            frame = frame.f_back
        return "", None

    def call(self, path: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self._asked({"call": path}, path, args, kwargs)

    def operate(self, name: str, *args: Any) -> Any:
        """``operator.<name>(*args)`` (or the builtin) on a production object, in production."""
        return self._asked({"op": name}, f"{name}() of {self.shown(args[0])}", args, {})

    def _asked(
        self, question: dict[str, Any], path: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        try:
            sent_args = [self._sent(value) for value in args]
            sent_kwargs = {key: self._sent(value) for key, value in kwargs.items()}
        except NotPlainData as error:
            raise self.refuse(f"an argument of {self.shown(path)} ({error.type_name})") from None
        except CanonicalError as error:
            raise self.refuse(f"an argument of {self.shown(path)} ({error})") from None
        answer = self.ask({**question, "args": sent_args, "kwargs": sent_kwargs})
        self._write_back(path, [*args, *kwargs.values()], answer.get("changed", {}))
        return self.value(answer, path)

    def drain(self, remote: RemoteObject) -> Iterator[Any]:
        """Every item of a production object, for a ``list``, ``tuple`` or ``sorted`` call
        (``consumers.exhausts``): asked in one question per ``DRAIN_ITEMS`` items."""
        handle = object.__getattribute__(remote, "_id")
        path = f"iter() of {self.shown(remote)}"
        answer = self.ask({"drain": handle})
        if "items" not in answer:
            raise self.value(answer, path)  # production's iter() raised
        hint = answer.get("hint")
        if not isinstance(hint, dict):
            raise self.fault("a drained object without its length hint")
        self.hint = (handle, hint)
        return self._items(answer, path)

    def _items(self, answer: dict[str, Any], path: str) -> Iterator[Any]:
        while True:
            items = answer["items"]
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise self.fault("a malformed list of items")
            for item in items:
                yield self.value(item, path)
            if "end" in answer:
                if not isinstance(answer["end"], dict) or "raised" not in answer["end"]:
                    raise self.fault("a malformed end of items")
                raise self.exception(answer["end"])
            if "more" not in answer:
                return
            rest = answer["more"]
            if type(rest) is not int:
                raise self.fault("a malformed rest of items")
            answer = self.ask({"drain": rest, "more": True})
            if "items" not in answer:
                raise self.fault("no items where the rest of items was asked for")

    def length(self, remote: RemoteObject) -> int:
        """``len`` of a production object: the hint its drain gave, when list() asks for it
        right after, else asked of production."""
        handle = object.__getattribute__(remote, "_id")
        if self.hint is not None and self.hint[0] == handle:
            answer = self.hint[1]
            self.hint = None
            value = self.value(answer, f"len() of {self.shown(remote)}")
            if type(value) is not int or value < 0:
                raise self.fault("a length hint that is not a count")
            return value
        found = self.operate("len", remote)
        return int(found)

    def _sent(self, value: Any) -> Any:
        """An argument as it crosses: plain data, or the handle of a production object."""
        if isinstance(value, RemoteObject) and object.__getattribute__(value, "_link") is self:
            return {"handle": object.__getattribute__(value, "_id")}
        return encode(value, plain=True)

    def shown(self, path: Any) -> str:
        """A path for a message: ``#3.value`` as ``a mod.Doubler's value``."""
        if isinstance(path, RemoteObject):
            path = f"#{object.__getattribute__(path, '_id')}"
        if not isinstance(path, str) or not path.startswith("#"):
            return str(path)
        handle, _, rest = path[1:].partition(".")
        owner = f"a {self.types.get(int(handle), 'production object')}"
        return f"{owner}'s {rest}" if rest else owner

    def _write_back(self, path: str, values: list[Any], changed: Any) -> None:
        """In-place changes production made to list, dict and set arguments, made here too."""
        if not isinstance(changed, dict):
            raise self.fault("a malformed list of changed arguments")
        for index, tagged in changed.items():
            if not isinstance(index, str) or not index.isdigit() or int(index) >= len(values):
                raise self.fault("a malformed list of changed arguments")
            target, new = values[int(index)], self._decode(tagged)
            if type(target) is list and type(new) is list:
                target[:] = new
            elif (type(target), type(new)) in ((dict, dict), (set, frozenset)):
                target.clear()
                target.update(new)
            else:
                raise self.refuse(f"an in-place change {path} made to a {type(target).__name__}")

    def _decode(self, tagged: Any) -> Any:
        try:
            return decode(tagged)
        except (CanonicalError, TypeError, ValueError, IndexError):
            raise self.fault("a value that is not in canonical form") from None

    def value(self, answer: dict[str, Any], path: str) -> Any:
        """The plain value an answer carries, or the exception it raised here."""
        if "ok" in answer:
            return self._decode(answer["ok"])
        if "object" in answer:
            return self._object(answer["object"], path)
        if "unsendable" in answer:
            raise self.refuse(f"a {answer['unsendable']} from {self.shown(path)}")
        if "raised" in answer:
            raise self.exception(answer)
        raise self.fault("with neither a value nor an exception")

    def _class(self, path: str, key: Any) -> type:
        """A production class's stand-in (split replay only), made once per path."""
        if not self.handles:
            raise self.fault("a class where only plain data may cross")
        if not isinstance(key, str) or ":" not in key:
            raise self.fault("a malformed class")
        if path not in self.class_stand_ins:
            module, _, qualname = key.partition(":")
            namespace = {"_link": self, "_path": path, "__module__": module}
            name = qualname.rpartition(".")[2] or "ProductionClass"
            made = RemoteClass(name, (), {**namespace, "__qualname__": qualname})
            self.class_stand_ins[path] = made
        return self.class_stand_ins[path]

    def _object(self, described: Any, path: str) -> RemoteObject:
        """A production object, held by handle; the oracle line that received it is kept."""
        if not self.handles:
            raise self.fault("an object handle where only plain data may cross")
        if not isinstance(described, dict) or set(described) != {"id", "type"}:
            raise self.fault("a malformed object handle")
        handle, key = described["id"], described["type"]
        if type(handle) is not int or not isinstance(key, str) or handle in self.types:
            raise self.fault("a malformed object handle")
        self.types[handle] = key.replace(":", ".")
        file, line = self._oracle_line(sys._getframe(1))
        self.held.append(Problem(f"a {self.types[handle]} from {self.shown(path)}", file, line))
        return RemoteObject(self, handle)

    def exception(self, answer: dict[str, Any]) -> Exception:
        """The exception production raised, as a class of the same name here.

        A builtin exception is itself; any other is a class made once per
        (module, qualified name), with its bases made the same way, so the
        proxy's ``module.ThatError`` is the very class ``except`` catches.
        Production can never raise an exception this process treats as its
        own control flow (``SystemExit``, a Hypothesis exception): only
        builtin ``Exception`` subclasses are taken as they are.
        """
        cls = self.exception_class(answer.get("type"), answer.get("classes"))
        message = str(answer["raised"]).partition(": ")[2]
        arguments = self._decode(answer["args"]) if "args" in answer else (message,)
        try:
            return cls(*arguments) if isinstance(arguments, tuple) else cls(message)
        except Exception:
            return cls(message)

    def exception_class(self, key: Any, classes: Any, depth: int = 0) -> type[Exception]:
        if not isinstance(key, str) or ":" not in key or not isinstance(classes, dict):
            raise self.fault("a malformed exception type")
        if key in self.classes:
            return self.classes[key]
        module, _, qualname = key.partition(":")
        found = getattr(builtins, qualname, None) if module == "builtins" else None
        if isinstance(found, type) and issubclass(found, Exception):
            return found
        names = classes.get(key, [])
        if depth > _STACK_LIMIT or not isinstance(names, list):
            raise self.fault("a malformed exception type")
        bases = [
            self.exception_class(name, classes, depth + 1)
            for name in names
            if not str(name).startswith("builtins:") or _exception(str(name))
        ]
        self.classes[key] = _make_class(module, qualname, bases)
        return self.classes[key]

    def describe(self, path: str) -> Any:
        """What ``module:attr.path`` is in production, as this process can hold it."""
        answer = self.ask({"describe": path})
        kind = answer.get("kind")
        if kind == "module":
            return importlib.import_module(str(answer["name"]))
        if kind == "callable":
            return Remote(self, path)
        if kind == "exception":
            return self.exception_class(answer.get("type"), answer.get("classes"))
        if kind == "class":
            return self._class(path, answer.get("type"))
        if "raised" in answer and str(answer["raised"]).startswith("AttributeError"):
            raise AttributeError(path)
        return self.value(answer, path)


def _exception(key: str) -> bool:
    """Whether a ``builtins:`` base is an ``Exception`` class (others are left out)."""
    found = getattr(builtins, key.partition(":")[2], None)
    return isinstance(found, type) and issubclass(found, Exception)


def _make_class(module: str, qualname: str, bases: list[type[Exception]]) -> type[Exception]:
    unique = tuple(dict.fromkeys(bases)) or (Exception,)
    namespace = {"__module__": module, "__qualname__": qualname}
    name = qualname.rpartition(".")[2] or "ProductionError"
    try:
        return type(name, unique, namespace)
    except TypeError:  # bases whose layouts cannot be combined here: keep the first
        return type(name, unique[:1], namespace)


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class Remote:
    """A production callable (function, class, method): calls and attributes go remote."""

    def __init__(self, link: Link, path: str) -> None:
        self._link = link
        self._path = path
        # the names a function has, read here without asking production
        module, _, qualname = path.partition(":")
        self.__module__ = module
        self.__qualname__ = qualname
        self.__name__ = qualname.rpartition(".")[2]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._link.call(self._path, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if _is_dunder(name) or name.startswith("_link") or name == "_path":
            raise AttributeError(name)
        return self._link.describe(f"{self._path}.{name}")

    def __repr__(self) -> str:
        return f"<production {self._path}>"


class RemoteObject:
    """A production object a split replay's test holds: each use is asked of production.

    Attributes, calls and the operators tests use (comparisons, ``len``,
    iteration, indexing, arithmetic, ``repr``) run in the production child on
    the object itself; what comes back is plain data or another such object.
    """

    __slots__ = ("_id", "_link")

    def __init__(self, link: Link, handle: int) -> None:
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_id", handle)

    def __getattr__(self, name: str) -> Any:
        if _is_dunder(name):
            raise AttributeError(name)
        return self._link.describe(f"#{self._id}.{name}")

    def __setattr__(self, name: str, value: Any) -> None:
        self._link.operate("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        self._link.operate("delattr", self, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._link.call(f"#{self._id}", args, kwargs)

    def __iter__(self) -> Any:
        link = object.__getattribute__(self, "_link")
        if link.handles and exhausts(sys._getframe(1)):
            return link.drain(self)
        return link.operate("iter", self)

    def __len__(self) -> int:
        link: Link = object.__getattribute__(self, "_link")
        return link.length(self)


class RemoteClass(type):
    """The type of a production class's stand-in in a split replay: calling it builds the
    object in production (the test holds a handle), ``isinstance`` asks production, and
    its attributes are production's. Subclassing it is refused: the subclass's methods
    would have to run beside the production class, which the split cannot do."""

    _link: Link
    _path: str

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> RemoteClass:
        if "_path" not in namespace:
            raise TypeError("a production class cannot be subclassed in a split run")
        return super().__new__(mcs, name, bases, namespace)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._link.call(cls._path, args, kwargs)

    def __getattr__(cls, name: str) -> Any:
        if _is_dunder(name):
            raise AttributeError(name)
        return cls._link.describe(f"{cls._path}.{name}")

    def __instancecheck__(cls, instance: Any) -> bool:
        if not isinstance(instance, RemoteObject):
            return False
        return bool(cls._link.operate("isinstance", instance, cls._path))

    def __repr__(cls) -> str:
        return f"<production class {cls._path}>"


def _operation(name: str) -> Callable[..., Any]:
    def method(self: RemoteObject, *args: Any) -> Any:
        return object.__getattribute__(self, "_link").operate(name, self, *args)

    return method


# Operators whose result only production can give; the child applies each to the object.
for _name in [
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "contains",
    "getitem",
    "setitem",
    "delitem",
    "bool",
    "next",
    "hash",
    "repr",
    "str",
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "neg",
    "abs",
]:
    setattr(RemoteObject, f"__{_name}__", _operation(_name))


class ProxyModule(ModuleType):
    """A repository module: each attribute is asked of production once, then kept."""

    _link: Link

    def __getattr__(self, name: str) -> Any:
        if _is_dunder(name) and name not in ("__all__", "__version__"):
            raise AttributeError(name)
        value = self._link.describe(f"{self.__name__}:{name}")
        self.__dict__[name] = value
        return value


class _Loader(importlib.abc.Loader):
    def __init__(self, link: Link) -> None:
        self.link = link

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        answer = self.link.ask({"import": spec.name})
        if answer.get("kind") != "module":
            if "raised" in answer:
                raise self.link.exception(answer)
            raise self.link.fault("an import with something other than a module")
        module = ProxyModule(spec.name)
        module._link = self.link
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing runs here: the module's code runs in production."""


@dataclass(frozen=True)
class TestSide:
    """The files of a checkout that are the tests' own (test files, support, harness).

    A pytest run in the oracle child imports these itself; every other module
    found in the checkout is production's, served by the production child,
    whatever ``sys.path`` entry (pytest's ``rootdir`` insertion, a ``pythonpath``
    setting) made it findable.
    """

    checkout: str
    files: frozenset[str]  # real paths
    roots: tuple[str, ...] = ()  # the import path: where a dotted name's file would be

    def spec(self, fullname: str) -> importlib.machinery.ModuleSpec | None:
        """The spec of ``fullname`` when its file is one of the tests' own, found under the
        import path by its dotted name: a test package inside a production package
        (``intervals.tests``) is the tests' own although its parent is a proxy."""
        for root in self.roots:
            base = os.path.join(root, *fullname.split("."))
            package = os.path.join(base, "__init__.py")
            if os.path.realpath(package) in self.files:
                return importlib.util.spec_from_file_location(
                    fullname, package, submodule_search_locations=[base]
                )
            if os.path.realpath(base + ".py") in self.files:
                return importlib.util.spec_from_file_location(fullname, base + ".py")
        return None

    def holds(self, spec: importlib.machinery.ModuleSpec) -> bool | None:
        """True: the tests' own module; False: production's; None: not in the checkout."""
        places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or ())
        real = [os.path.realpath(place) for place in places if place]
        if not real or not all(p.startswith(self.checkout + os.sep) for p in real):
            return None
        if spec.origin:
            return real[0] in self.files
        # a namespace package: the tests' own if every module directly in it is
        return all(self._only_tests(directory) for directory in real)

    def _only_tests(self, directory: str) -> bool:
        try:
            names = os.listdir(directory)
        except OSError:
            return False
        modules = [os.path.join(directory, n) for n in names if n.endswith(".py")]
        return all(module in self.files for module in modules)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(
        self,
        link: Link,
        names: frozenset[str],
        keep: Callable[[str], bool],
        tests: TestSide | None,
    ) -> None:
        self.loader = _Loader(link)
        self.names = names
        self.keep = keep
        self.tests = tests

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        # the gate's own libraries; a proxied name is in sys.modules too once imported
        library = top not in self.names and self.keep(top)
        if self.tests is not None and not library:
            own_file = self.tests.spec(fullname)
            if own_file is not None:
                return own_file
        if isinstance(sys.modules.get(fullname.rpartition(".")[0]), ProxyModule):
            return self._proxy(fullname)
        if self.tests is not None and not library:
            found = importlib.machinery.PathFinder.find_spec(fullname, path)
            own = self.tests.holds(found) if found is not None else None
            if own is not None:
                return None if own else self._proxy(fullname)
        if top not in self.names:
            return None
        return self._proxy(fullname)

    def _proxy(self, fullname: str) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self.loader, is_package=True)


def module_names(directories: Iterable[str]) -> set[str]:
    """Top-level modules and packages directly inside ``directories`` (without importing)."""
    names = set()
    for directory in directories:
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            stem = entry.removesuffix(".py")
            if stem == entry and not os.path.isdir(os.path.join(directory, entry)):
                continue
            if stem.isidentifier() and not stem.startswith("__"):
                names.add(stem)
    return names


def install(
    link: Link,
    names: Iterable[str],
    keep: Callable[[str], bool],
    tests: TestSide | None = None,
) -> frozenset[str]:
    """Serve imports of ``names`` (and their submodules) from production; returns them.

    Names ``keep`` says stay local (the standard library, the gate's own
    libraries already imported) are never proxied, so oracles always get the
    gate's Hypothesis even if a patch adds a package of that name. With
    ``tests``, a module found in the checkout is imported here only if it is
    one of the tests' own files; any other is proxied too.
    """
    proxied = frozenset(name for name in names if not keep(name))
    sys.meta_path.insert(0, _Finder(link, proxied, keep, tests))
    importlib.invalidate_caches()
    return proxied
