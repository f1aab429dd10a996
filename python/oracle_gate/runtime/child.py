"""The child side of the runtime lanes (untrusted): started by ``sandbox.Runner``.

Reads one request frame on a private pipe, runs oracle or production code
from a checkout of one tree, writes one answer frame on another pipe and
leaves with ``os._exit``, so no ``atexit`` hook of the code under test runs
after it. Whatever that code prints goes to the gate's diagnostics, never to
the result. Outputs of production code leave this process only in canonical
tagged form (``canonical.py``).

Properties and the split replay take two children: the oracle child (role
``properties`` or ``pytest_split``) runs the property bodies and Hypothesis,
or pytest and the parent's tests, with repository modules as proxies
(``proxy.py``), and a production child (role ``serve``) answers each call,
attribute or import they make, one framed answer per framed question, until
its request pipe closes. The verdict is the oracle child's; the production
child only ever sends values.

``sys.path`` is built here, not inherited (the bootstrap leaves the working
directory off it, so none of the package's files is this module's own import):
the package and its declared dependencies from one checkout first, then the
standard library, then the gate's libraries; no site or ``.pth`` processing, no
user site directory.
Roles that only read oracle tables (``describe``, ``evaluate``) get no package
directory on ``sys.path`` at all, so contracts and comparisons run without
the production code ever being imported.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import importlib
import importlib.util
import json
import operator
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from oracle_gate.runtime.canonical import (
    CanonicalError,
    NotPlainData,
    canonical_text,
    decode,
    encode,
)
from oracle_gate.runtime.confine import reached
from oracle_gate.runtime.frames import read_frame, write_frame
from oracle_gate.runtime.launch import look_launched
from oracle_gate.runtime.proxy import Link, TestSide, install, module_names

_MODULE_COUNTER = [0]
# Roles that run production code; the others see oracle files only.
_PRODUCTION_ROLES = frozenset({"subject", "serve", "resolve", "pytest"})
# The oracle child's own libraries: imported before any proxy exists, never proxied.
_ORACLE_LIBRARIES = ("hypothesis", "pytest")
_PR_SET_DUMPABLE = 4
# How long the production child may take to leave once a split run's questions end.
_QUIET_AFTER = 5.0
# Items of a drained production iterator per answer; what is left is asked for again.
DRAIN_ITEMS = 4096
# The default CPython's list() gives PyObject_LengthHint.
_LENGTH_HINT = 8
# The type's own ``__mro__`` and ``__bases__``, whatever a metaclass defines under those names.
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_BASES = type.__dict__["__bases__"]
# How a split run's outcome says a test needed a value that cannot cross.
UNSENDABLE = "unsendable: "
# How it says a test passed holding production objects (remote handles): then one
# "<file>:<line>\t<what>" per line, the test line that received each.
PASSED_HOLDING = "passed, holding:\n"
# The production objects a serving child handed out, by handle (a split replay only).
_HANDLES: dict[int, Any] = {}
_HANDLES_ON: list[bool] = []
# What an oracle may do with a handle: the operations a test's expressions make.
_OPERATIONS: dict[str, Callable[..., Any]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "contains": operator.contains,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "setattr": setattr,
    "delattr": delattr,
    "len": len,
    "bool": bool,
    "iter": iter,
    "next": next,
    "hash": hash,
    "repr": repr,
    "str": str,
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "neg": operator.neg,
    "abs": abs,
    "isinstance": lambda value, path: _is_instance(value, path),
}


class OracleMistake(Exception):
    """An oracle file or reference is wrong (not the patch's code): a gate error.

    ``file`` is package-relative; ``ref`` is the invariants.yaml reference
    that led here, so the gate can name the line that wrote it.
    """

    def __init__(self, message: str, file: str, line: int | None = None, ref: str = "") -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.ref = ref


def _describe_error(error: BaseException) -> str:
    limit = reached(error)  # "MemoryError: memory limit 4 GiB reached (setting memory-limit)"
    if limit is not None:
        return f"{type(error).__name__}: {limit}"
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}"[:300] if text else type(error).__name__


def _load_file(package_dir: Path, file: str) -> ModuleType:
    """Import an oracle module by path, under a unique name so two refs never collide."""
    _MODULE_COUNTER[0] += 1
    path = package_dir / file
    name = f"_oracle_gate_oracle_{_MODULE_COUNTER[0]}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _assignment_line(package_dir: Path, file: str, name: str) -> int | None:
    """The line where ``name`` is assigned at the top of ``file``, for an error message."""
    try:
        text = (package_dir / file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.search(rf"^{re.escape(name)}\s*[:=]", text, re.MULTILINE)
    return text.count("\n", 0, found.start()) + 1 if found else None


def _resolve_ref(package_dir: Path, ref: str) -> tuple[ModuleType, Any]:
    file, _, name = ref.partition(":")
    if not (package_dir / file).is_file():
        raise OracleMistake(f"{ref} names a file that does not exist", file, ref=ref)
    module = _load_file(package_dir, file)
    if not hasattr(module, name):
        raise OracleMistake(f"{ref}: {file} defines no {name}", file, ref=ref)
    return module, getattr(module, name)


def _table_subject(package_dir: Path, ref: str, module: ModuleType) -> str:
    subject = getattr(module, "SUBJECT", None)
    file, _, name = ref.partition(":")
    if not isinstance(subject, str) or ":" not in subject:
        raise OracleMistake(
            f"{file} sets no SUBJECT = 'module:function' for {name}",
            file,
            _assignment_line(package_dir, file, "SUBJECT")
            or _assignment_line(package_dir, file, name),
        )
    return subject


def _subject(spec: str) -> Callable[[Any], Any]:
    module_name, _, attribute = spec.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"SUBJECT {spec} is not callable")
    return target  # type: ignore[no-any-return]


def _call(function: Callable[[Any], Any], value: Any) -> dict[str, Any]:
    try:
        output = function(value)
    except Exception as error:
        return {"raised": _describe_error(error)}
    try:
        return {"ok": encode(output)}
    except CanonicalError as error:
        return {"raised": f"CanonicalError: {error}"}


def role_subject(request: dict[str, Any]) -> dict[str, Any]:
    """SUBJECT applied to each tagged input."""
    function = _subject(request["subject"])
    return {"outputs": [_call(function, decode(tagged)) for tagged in request["inputs"]]}


def _partitions(package_dir: Path, ref: str) -> dict[str, Any]:
    module, rows = _resolve_ref(package_dir, ref)
    described = []
    for row in rows:
        described.append(
            {
                "id": str(row["id"]),
                "cls": str(row.get("cls", "")),
                "kind": str(row.get("kind", "representative")),
                "input": encode(row.get("input")),
                "relation": str(row.get("relation", "")),
                "assumptions": [str(a) for a in row.get("assumptions", ())],
                "has_contract": row.get("contract") is not None,
            }
        )
    return {"subject": _table_subject(package_dir, ref, module), "items": described}


def _relations(package_dir: Path, ref: str) -> dict[str, Any]:
    module, relations = _resolve_ref(package_dir, ref)
    described = []
    for relation in relations:
        transform = relation.get("transform")
        compare = relation.get("compare", "equal")
        inputs = list(relation.get("inputs", ()))
        described.append(
            {
                "id": str(relation["id"]),
                "compare": "equal" if compare == "equal" else "callable",
                "inputs": [encode(x) for x in inputs],
                # transforms run on plain inputs here, never on patched outputs
                "transformed": [
                    encode(transform(copy.deepcopy(x))) if transform else None for x in inputs
                ],
            }
        )
    return {"subject": _table_subject(package_dir, ref, module), "items": described}


def role_describe(request: dict[str, Any]) -> dict[str, Any]:
    """What a partitions or relations table asks: ids, inputs, transformed inputs."""
    package_dir = Path(request["package_dir"])
    if request["kind"] == "partitions":
        return _partitions(package_dir, request["ref"])
    return _relations(package_dir, request["ref"])


def _verdict(function: Callable[..., Any], *args: Any) -> dict[str, Any]:
    try:
        return {"holds": bool(function(*args))}
    except Exception as error:
        return {"holds": False, "error": _describe_error(error)}


def role_evaluate(request: dict[str, Any]) -> dict[str, Any]:
    """Contracts and comparisons, on decoded plain outputs only."""
    _module, table = _resolve_ref(Path(request["package_dir"]), request["ref"])
    by_id = {str(entry["id"]): entry for entry in table}
    results = []
    for item in request["items"]:
        entry = by_id[item["id"]]
        if request["kind"] == "partitions":
            results.append(_verdict(entry["contract"], decode(item["output"])))
        else:
            results.append(
                _verdict(entry["compare"], decode(item["output"]), decode(item["input"]))
            )
    return {"results": results}


def _json_input(value: Any) -> Any:
    """The value as seeds.jsonl can hold it, or None when JSON cannot."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None


def _strategy(package_dir: Path, ref: str, prop: Callable[[Any], Any]) -> Any:
    strategy = getattr(prop, "strategy", None)
    if strategy is None:
        file, _, name = ref.partition(":")
        code = getattr(prop, "__code__", None)
        line = code.co_firstlineno if code is not None else None
        raise OracleMistake(f"property {name} has no .strategy attribute", file, line)
    return strategy


def _failures() -> tuple[type[BaseException], ...]:
    """What a failing property raises: any Exception, and pytest's ``fail`` and ``raises``
    outcome (a BaseException, so a plain ``except Exception`` would let it end the run)."""
    failed = getattr(sys.modules.get("_pytest.outcomes"), "Failed", None)
    return (Exception, failed) if isinstance(failed, type) else (Exception,)


def _search(prop: Callable[[Any], Any], strategy: Any, request: dict[str, Any]) -> dict[str, Any]:
    from hypothesis import HealthCheck, Phase, assume, given, settings
    from hypothesis import seed as fixed_seed

    # The clock starts at the first example: Hypothesis's own set-up (its character
    # tables, built afresh in a sandbox's empty /tmp) is not search time.
    state: dict[str, Any] = {"examples": 0, "stopped": False, "failing": None, "deadline": None}

    def probe(sample: Any) -> None:
        if state["deadline"] is None:
            state["deadline"] = time.monotonic() + float(request["seconds"])
        if time.monotonic() > state["deadline"]:
            state["stopped"] = True
            assume(False)
        state["examples"] += 1
        kept = copy.deepcopy(sample)
        try:
            prop(sample)
        except _failures():
            state["failing"] = kept  # Hypothesis replays the example it reports last
            raise

    # A caller that only asks whether a counterexample exists (vet) skips the shrinking,
    # and with it the examples Hypothesis generates after the first one to find others.
    searching = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target)
    unshrunk: dict[str, Any] = {} if request.get("shrink", True) else {"phases": searching}
    # given() over an untyped probe is untyped to mypy; the wrapped test takes no arguments.
    wrap: Any = given(strategy)
    run: Callable[[], None] = settings(
        max_examples=int(request["examples"]),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
        **unshrunk,
    )(fixed_seed(int(request["seed"]))(wrap(probe)))
    try:
        run()
    except _failures() as error:
        if state["failing"] is None:
            return {"status": "error", "error": _describe_error(error)}
        return {
            "status": "counterexample",
            "input": _json_input(state["failing"]),
            "error": _describe_error(error),
            "examples": state["examples"],
        }
    status = "budget" if state["stopped"] else "hold"
    return {"status": status, "examples": state["examples"]}


def _run_property(
    package_dir: Path, item: dict[str, Any], request: dict[str, Any], link: Link
) -> dict[str, Any]:
    _module, prop = _resolve_ref(package_dir, item["ref"])
    strategy = _strategy(package_dir, item["ref"], prop) if request["examples"] > 0 else None
    seeds: list[dict[str, str | None]] = []
    for seed in item["seeds"]:
        try:
            prop(copy.deepcopy(seed["input"]))
            seeds.append({"raised": None})
        except _failures() as error:
            seeds.append({"raised": _describe_error(error)})
    search = _search(prop, strategy, request) if strategy is not None else {"status": "skipped"}
    _check_link(link, item["ref"])
    return {"seeds": seeds, "search": search}


class _Tampered(Exception):
    """The production child answered with something that is not a value."""


def _check_link(link: Link, ref: str) -> None:
    """No verdict stands on an answer that was tampered with or on a value that never crossed.

    Raises:
        _Tampered: an answer was malformed.
        OracleMistake: the oracle needs a value that cannot cross (the file and
            line that asked for it, else the oracle reference).
    """
    if link.tamper:
        raise _Tampered(link.tamper)
    if not link.problems:
        return
    problem = link.problems[0]
    where = f"property {ref.partition(':')[2]}" if ref else "an oracle file"
    raise OracleMistake(
        f"{where} needs {problem.what}, which cannot cross between the production and "
        "oracle processes: properties may call plain-data APIs only "
        '(docs/sandbox.md, "What a property can call: plain-data APIs")',
        problem.file or ref_file(ref),
        problem.line,
        "" if problem.file else ref,
    )


def ref_file(ref: str) -> str:
    return ref.partition(":")[0]


def role_properties(request: dict[str, Any], link: Link) -> dict[str, Any]:
    """For each property of a row: replay its seeds, then search within the budget."""
    package_dir = Path(request["package_dir"])
    return {
        "results": [
            _run_property(package_dir, item, request, link) for item in request["properties"]
        ]
    }


def _defined(symbol: str) -> bool:
    """Whether ``module.name`` resolves as Python resolves it: an attribute or a submodule."""
    module_name, _, name = symbol.rpartition(".")
    if not module_name:
        return False
    try:
        module = importlib.import_module(module_name)
        if hasattr(module, name):
            return True
        importlib.import_module(symbol)
    except Exception:
        return False
    return True


def role_resolve(request: dict[str, Any]) -> dict[str, Any]:
    """For each cited ``module.name``: does it exist in this checkout?"""
    return {"defined": [_defined(symbol) for symbol in request["symbols"]]}


class _Outcomes:
    """A pytest plugin: the outcome of every test node and of every collection error."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and report.when != "teardown":
            self.outcomes.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcomes.setdefault(report.nodeid, "passed")

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.outcomes[report.nodeid or "<collection>"] = "failed"


class _SplitOutcomes(_Outcomes):
    """Outcomes of a split run; a test that needed a value that cannot cross says which."""

    def __init__(self, link: Link) -> None:
        super().__init__()
        self.link = link
        self.seen = 0
        self.done = 0  # the link's held objects already given to a test or to ``outside``
        self.outside: set[str] = set()

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.seen = len(self.link.problems)
        # objects received outside any test (importing test modules and conftests) count
        # for every test after: ``EXPECTED = make()`` at module level is what a test compares
        self.outside |= self._held_since(self.done)
        self.done = len(self.link.held)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        for problem in self.link.problems[self.seen : self.seen + 1]:
            where = f" ({problem.file}:{problem.line})" if problem.file else ""
            self.outcomes[nodeid] = f"{UNSENDABLE}{problem.what}{where}"
        held = self.outside | self._held_since(self.done)
        self.done = len(self.link.held)
        if held and self.outcomes.get(nodeid) == "passed":
            self.outcomes[nodeid] = PASSED_HOLDING + "\n".join(sorted(held))

    def _held_since(self, start: int) -> set[str]:
        return {f"{h.file}:{h.line}\t{h.what}" for h in self.link.held[start:]}


def _in_this_process() -> list[str]:
    """Options that keep every test in this process, whatever the tests' configuration asks
    (``addopts = -n auto``): a pytest-xdist or pytest-forked worker is a new interpreter that
    imports the production code itself, beside pytest, and reports back as a test's result."""
    options = ["-p", "no:forked"]
    if importlib.util.find_spec("xdist") is not None:
        options += ["-n", "0"]
    return options


class _Selected:
    """A pytest plugin keeping only the tests named (the replay's tests to run again)."""

    def __init__(self, nodeids: list[str]) -> None:
        self.nodeids = frozenset(nodeids)

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        dropped = [item for item in items if item.nodeid not in self.nodeids]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item.nodeid in self.nodeids]


def _imported_plugins() -> list[str]:
    """Warning filters for the pytest plugins this child imported before pytest started (an
    oracle child loads Hypothesis first): pytest warns that it cannot rewrite their asserts,
    which the tests' ``filterwarnings = ["error"]`` would make the whole run's failure, and
    which no run of the tests outside the gate gives."""
    from importlib.metadata import entry_points, packages_distributions

    # pytest rewrites every top-level module of a distribution that has a plugin
    plugins = {point.dist.name for point in entry_points(group="pytest11") if point.dist}
    names = {
        module
        for module, distributions in packages_distributions().items()
        if plugins.intersection(distributions)
    }
    message = "Module already imported so cannot be rewritten; "
    return [
        f"-Wignore:{message}{name}:pytest.PytestAssertRewriteWarning"
        for name in sorted(names)
        if name in sys.modules
    ]


def role_pytest(request: dict[str, Any], collector: _Outcomes | None = None) -> dict[str, Any]:
    """Run pytest on the given test files (only the ``select`` node ids, if given); every
    node id with passed, failed or skipped, and with ``footprint``, every test's footprint
    (``footprint.py``: the trusted parent's one-process run only)."""
    import pytest

    collector = collector or _Outcomes()
    plugins: list[object] = [collector]
    if "select" in request:
        plugins.append(_Selected(request["select"]))
    recorder = None
    if request.get("footprint"):
        from oracle_gate.runtime.footprint import Recorder

        recorder = Recorder(request["checkout"])
        plugins.append(recorder)
    # A test file that does not import fails alone; the others still run.
    arguments = ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    arguments += ["--rootdir", request["package_dir"], *_in_this_process(), *_imported_plugins()]
    code = pytest.main([*arguments, *request["files"]], plugins=plugins)
    answer: dict[str, Any] = {"outcomes": collector.outcomes, "exit": int(code)}
    if recorder is not None:
        answer["footprint"] = recorder.result()
    return answer


def role_pytest_split(request: dict[str, Any], link: Link) -> dict[str, Any]:
    """pytest in the oracle child, production served by the production child.

    Production code never runs in this process, so it cannot reach pytest or
    the result pipe; a test that needs one of its values that cannot cross
    (an instance of a production class) is reported as such, not as a pass.
    """
    answer = role_pytest(request, _SplitOutcomes(link))
    if link.tamper:
        raise _Tampered(link.tamper)
    return {**answer, "questions": link.sequence}


ROLES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "subject": role_subject,
    "describe": role_describe,
    "evaluate": role_evaluate,
    "resolve": role_resolve,
    "pytest": role_pytest,
}


def _set_path(request: dict[str, Any]) -> None:
    """The checkout's paths first (production roles only), the standard library, the libraries."""
    driver = os.path.abspath(sys.path[0])
    stdlib = [p for p in sys.path[1:] if p and os.path.abspath(p) != driver]
    own = request["import_paths"] if request["role"] in _PRODUCTION_ROLES else []
    sys.path[:] = [*own, *stdlib, *request["library"]]
    importlib.invalidate_caches()


def _site_builtins() -> None:
    """What ``site`` gives every real run and ``python -S`` does not: ``exit``, ``quit``,
    ``help``, ``copyright``, ``credits`` and ``license``. Without them ``try: quit`` would
    tell the gate's child from a real run. Only these: no ``.pth`` file runs."""
    import site  # under -S its import runs nothing

    site.setquit()
    site.setcopyright()
    site.sethelper()


def _outside_imports(checkout: str, names: frozenset[str]) -> list[str]:
    """Repository modules (``names``) this process imported from outside ``checkout``.

    Only modules actually imported count: a repository module name that a
    library elsewhere also uses (``utils``) matters only if the code under
    test imports it. A module named like one of the standard library's is
    left out: the standard library is where the gate itself expects it.
    The production child asks after every answer, so this walks what is
    imported (hundreds), not every module name of a monorepo.
    """
    checkout = os.path.realpath(checkout)
    outside = []
    for name in sorted(names.intersection(sys.modules) - sys.stdlib_module_names):
        module = sys.modules[name]
        places = [getattr(module, "__file__", None) or "", *getattr(module, "__path__", ())]
        real = [os.path.realpath(p) for p in places if isinstance(p, str) and p]
        if real and not any(p.startswith(checkout + os.sep) for p in real):
            outside.append(f"{name} (from {real[0]})")
    return outside


def _answer(
    request: dict[str, Any], role: Callable[[dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """The role's answer; for a role that ran production code, none if it imported a
    repository module from outside the checkout (the answer stood on the wrong code)."""
    answer = _role_answer(request, role)
    if request["role"] in _PRODUCTION_ROLES:
        outside = _outside_imports(request["checkout"], frozenset(request["repo_modules"]))
        if outside:
            return {"outside": outside}
    return answer


def _role_answer(
    request: dict[str, Any], role: Callable[[dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    try:
        return role(request)
    except OracleMistake as mistake:
        return {
            "mistake": str(mistake),
            "file": mistake.file,
            "line": mistake.line,
            "ref": mistake.ref,
        }
    except _Tampered as tampered:
        return {"tamper": str(tampered)}
    except Exception as error:
        return {"error": _describe_error(error)}


def _production(path: str) -> Any:
    """The object ``module:attr.path`` names in production (the module for ``module:``);
    ``#<handle>.attr.path`` starts at an object handed out before."""
    if path.startswith("#"):
        handle, _, attribute = path[1:].partition(".")
        target: Any = _HANDLES[int(handle)]
    else:
        module_name, _, attribute = path.partition(":")
        target = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        target = getattr(target, part)
    return target


def _type_key(cls: type) -> str:
    """``module:qualified name`` of a class. A class's ``__module__`` and ``__qualname__``
    are whatever its body says, so ``builtins:`` (which the oracle side takes for the
    builtin itself) is said only of a builtin class by identity: a ``LookupError``
    subclass calling itself ``builtins.ValueError`` is not ``ValueError``."""
    module, qualname = str(cls.__module__), str(cls.__qualname__)
    if module == "builtins" and getattr(builtins, qualname, None) is not cls:
        module = "builtins (a class of the code under test)"
    return f"{module}:{qualname}"


def _exception_type(cls: type) -> dict[str, Any]:
    """An exception class as the oracle side rebuilds it: its name and every base's, by
    the type's own bases and method resolution order (a metaclass cannot change them)."""
    mro: tuple[type, ...] = _TYPE_MRO.__get__(cls, type(cls))
    classes = {_type_key(c): [_type_key(b) for b in _TYPE_BASES.__get__(c, type(c))] for c in mro}
    return {"type": _type_key(cls), "classes": classes}


def _raised(error: Exception) -> dict[str, Any]:
    answer = {"raised": _describe_error(error), **_exception_type(type(error))}
    with contextlib.suppress(CanonicalError):  # else the message alone crosses
        answer["args"] = encode(error.args, plain=True)
    return answer


def _sendable(value: Any) -> dict[str, Any]:
    """The answer for ``value``: plain data, else a handle (a split replay), else refused."""
    try:
        return {"ok": encode(value, plain=True)}
    except NotPlainData as error:
        if not _HANDLES_ON:
            return {"unsendable": error.type_name}
        _HANDLES[len(_HANDLES)] = value
        return {"object": {"id": len(_HANDLES) - 1, "type": _type_key(type(value))}}
    except CanonicalError as error:
        return {"unsendable": f"value that {error}"}


def _changed(sent: list[Any], values: list[Any]) -> dict[str, Any]:
    """Arguments production changed in place, by position: the oracle side copies them.

    Raises:
        NotPlainData: production put something that is not plain data into one.
    """
    changed = {}
    for index, (before, value) in enumerate(zip(sent, values, strict=True)):
        if _is_handle(before):
            continue  # production's own object, changed where it lives
        after = encode(value, plain=True)
        if canonical_text(after) != canonical_text(before):
            changed[str(index)] = after
    return changed


def _is_handle(tagged: Any) -> bool:
    return isinstance(tagged, dict) and set(tagged) == {"handle"} and bool(_HANDLES_ON)


def _argument(tagged: Any) -> Any:
    """A call's argument: plain data, or ``{"handle": n}``, an object handed out before."""
    return _HANDLES[int(tagged["handle"])] if _is_handle(tagged) else decode(tagged)


def _serve_call(question: dict[str, Any]) -> dict[str, Any]:
    function = _production(question["call"])
    return _answer_call(function, question["args"], question["kwargs"])


def _answer_call(
    function: Callable[..., Any], sent_args: list[Any], sent_kwargs: dict[str, Any]
) -> dict[str, Any]:
    args = [_argument(tagged) for tagged in sent_args]
    kwargs = {str(key): _argument(tagged) for key, tagged in sent_kwargs.items()}
    try:
        answer = _sendable(function(*args, **kwargs))
    except Exception as error:
        answer = _raised(error)
    try:
        changed = _changed([*sent_args, *sent_kwargs.values()], [*args, *kwargs.values()])
    except NotPlainData as error:
        return {"unsendable": f"{error.type_name} put into an argument"}
    return {**answer, "changed": changed} if changed else answer


def _serve_describe(path: str) -> dict[str, Any]:
    target = _production(path)
    if isinstance(target, ModuleType):
        return {"kind": "module", "name": target.__name__}
    if isinstance(target, type) and issubclass(target, BaseException):
        return {"kind": "exception", **_exception_type(target)}
    if isinstance(target, type) and _HANDLES_ON:
        return {"kind": "class", "type": _type_key(target)}
    if callable(target):
        return {"kind": "callable"}
    return _sendable(target)


def _is_instance(value: Any, path: str) -> bool:
    """``isinstance`` of a handed-out object and the production class at ``path``."""
    return isinstance(value, _production(path))


def _drained(iterator: Any) -> dict[str, Any]:
    """Up to ``DRAIN_ITEMS`` items of ``iterator`` as their answers, and how it ended: the
    exception it raised, or the handle of what is left (``more``)."""
    items: list[dict[str, Any]] = []
    for _ in range(DRAIN_ITEMS):
        try:
            item = next(iterator)
        except StopIteration:
            return {"items": items}
        except Exception as error:
            return {"items": items, "end": _raised(error)}
        items.append(_sendable(item))
    _HANDLES[len(_HANDLES)] = iterator
    return {"items": items, "more": len(_HANDLES) - 1}


def _serve_drain(question: dict[str, Any]) -> dict[str, Any]:
    """``list(x)`` of a production object, as CPython's own ``list``, ``tuple`` and
    ``sorted`` take it, in one answer: ``iter(x)``, then its length hint (the outcome of
    which the oracle child gives ``list`` when it asks), then every item.

    The oracle child asks this only when such a call is the one iterating, so no code of
    the test runs between two items: production sees the very calls it would see one
    question at a time.
    """
    value = _HANDLES[int(question["drain"])]
    if question.get("more"):
        return _drained(value)
    iterator = iter(value)
    try:
        hint = {"ok": encode(operator.length_hint(value, _LENGTH_HINT), plain=True)}
    except Exception as error:
        return {"items": [], "hint": _raised(error)}  # list() stops there, iterating nothing
    return {**_drained(iterator), "hint": hint}


def _serve_one(question: dict[str, Any]) -> dict[str, Any]:
    try:
        if "drain" in question and _HANDLES_ON:
            return _serve_drain(question)
        if "call" in question:
            return _serve_call(question)
        if "describe" in question:
            return _serve_describe(str(question["describe"]))
        if "op" in question and _HANDLES_ON:
            return _answer_call(_OPERATIONS[str(question["op"])], question["args"], {})
        module = importlib.import_module(str(question["import"]))
        return {"kind": "module", "name": module.__name__}
    except Exception as error:
        return _raised(error)


def serve(request: dict[str, Any]) -> None:
    """The production child: one framed answer per framed question on the pipes to the oracle
    child (``request["link"]``), until the questions end, or until an answer stood on a
    repository module imported from outside the checkout."""
    question_fd, answer_fd = request["link"]
    names = frozenset(request["repo_modules"])
    if request.get("handles"):
        _HANDLES_ON.append(True)
    write_frame(answer_fd, {"seq": 0, "ready": True})
    while True:
        try:
            question = read_frame(question_fd)
        except EOFError:
            return
        sequence = question.pop("seq")
        answer = _serve_one(question)
        sys.stdout.flush()
        sys.stderr.flush()
        outside = _outside_imports(request["checkout"], names)
        write_frame(answer_fd, {"seq": sequence, **({"outside": outside} if outside else answer)})
        if outside:
            return


def _not_dumpable() -> None:
    """No other process of this user (production code) may open this one's pipes through
    ``/proc/PID/fd`` or trace it: the kernel allows neither on a process that is not dumpable."""
    import ctypes

    # not Linux: bubblewrap's own PID namespace is the protection there
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _local(name: str) -> bool:
    """Modules an oracle child takes from its own libraries, never from production."""
    return name in sys.stdlib_module_names or name in sys.modules or name == "oracle_gate"


def _test_side(request: dict[str, Any]) -> TestSide | None:
    """The tests' own files of a split pytest run (checkout-relative in the request)."""
    if "test_side" not in request:
        return None
    checkout = os.path.realpath(request["checkout"])
    files = frozenset(os.path.join(checkout, path) for path in request["test_side"])
    return TestSide(checkout, files, tuple(request["import_paths"]))


def _oracle_link(request: dict[str, Any], result_fd: int) -> Link:
    """The oracle child's setup: its libraries loaded, then repository modules proxied."""
    _not_dumpable()
    for library in _ORACLE_LIBRARIES:
        # pytest is optional: an oracle that needs it says so when it imports it
        with contextlib.suppress(ImportError):
            importlib.import_module(library)
    question_fd, answer_fd = request["link"]
    link = Link(question_fd, answer_fd, str(Path(request["package_dir"])), result_fd)
    link.handles = bool(request.get("handles"))
    names = {*request["repo_modules"], *module_names(request["import_paths"])}
    install(link, names, _local, _test_side(request))
    return link


# Oracle roles whose calls into production a production child serves.
_SERVED_ROLES: dict[str, Callable[[dict[str, Any], Link], dict[str, Any]]] = {
    "properties": role_properties,
    "pytest_split": role_pytest_split,
}


def main(request_fd: int, result_fd: int) -> None:
    """Answer one request, then leave at once: no atexit hook, no buffered output."""
    request = read_frame(request_fd)
    os.close(request_fd)
    _set_path(request)
    look_launched(request["launch"], request.get("files", ()))
    _site_builtins()
    if request["role"] == "serve":
        os.close(result_fd)  # it answers the oracle child only
        serve(request)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    if request["role"] in _SERVED_ROLES:
        link = _oracle_link(request, result_fd)
        served = _SERVED_ROLES[request["role"]]
        answer = _answer(request, lambda r: served(r, link))
        link.finish(_QUIET_AFTER)
    else:
        answer = _answer(request, ROLES[request["role"]])
    sys.stdout.flush()
    sys.stderr.flush()
    write_frame(result_fd, answer)
    os._exit(0)
