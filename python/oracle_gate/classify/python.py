"""What a Python module does when it is imported: the pytest hooks it binds, what it patches.

Read from the syntax tree, not from file names: a module is harness when its
meaning is (it binds ``pytest_*`` names, or changes shared state at import
time), wherever it lives and whatever it is called. Parent and head are parsed
by the same interpreter in the same process, so comparing their trees is exact.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from oracle_gate.classify.import_time import evaluated, statements
from oracle_gate.classify.module_names import (
    ModuleNames,
    bound_names,
    declared_global,
    module_names,
)
from oracle_gate.errors import SurfaceError
from oracle_gate.pysource.parse import parse_python
from oracle_gate.surface import target_names

__all__ = [
    "BUILDERS",
    "Function",
    "call_effects",
    "called_in",
    "hook_names",
    "import_time_calls",
    "import_time_effects",
    "imports_in",
    "is_literal",
    "module_effects",
    "same_code",
]

HOOK_PREFIX = "pytest_"

# Calls that change state other modules see: attribute and item setters,
# container mutators, environment, warnings and randomness, plugin registries,
# mock patchers started by hand, and reflection that reaches any namespace.
_MUTATING_CALLS = frozenset(
    {
        "setattr",
        "delattr",
        "exec",
        "eval",
        "compile",
        "globals",
        "vars",
        "locals",
        "reload",
        "register",
        "register_profile",
        "load_profile",
        "start",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "clear",
        "append",
        "extend",
        "insert",
        "remove",
        "discard",
        "add",
        "putenv",
        "unsetenv",
        "chdir",
        "seed",
        "simplefilter",
        "filterwarnings",
        "resetwarnings",
        "setrecursionlimit",
        "settrace",
        "setprofile",
        "addaudithook",
        "setenv",
        "delenv",
        "setitem",
        "delitem",
        "syspath_prepend",
    }
)
# Dunder attributes that are plain data; any other one reaches into an object's
# namespace, code or class (``__dict__``, ``__globals__``, ``__code__``, ...).
_INERT_DUNDERS = frozenset({"__name__", "__file__", "__doc__", "__qualname__", "__module__"})
# Module names the import system reads: a package's ``__path__`` says where its
# submodules (the existing tests, under a new ``tests/__init__.py``) are found.
_IMPORT_STATE = frozenset({"__path__", "__spec__", "__loader__"})
# Methods that change only the container they are called on.
_CONTAINER_METHODS = frozenset(
    {"append", "extend", "insert", "remove", "discard", "add", "update", "setdefault"}
    | {"pop", "popitem", "clear", "sort", "reverse"}
)
# Functions of a standard module that build a new object and change nothing, though
# their name is one ``_MUTATING_CALLS`` lists (the builtin ``compile`` makes code a
# later call runs). ``re`` is imported before any test module (pytest uses it), so
# ``import re`` is the standard one even beside a repository's ``re.py``.
_BUILDS: dict[str, frozenset[str]] = {"re": frozenset({"compile"})}


def _parse(source: bytes) -> ast.Module | None:
    """The module's tree, or None when Python could not import it either."""
    try:
        return parse_python(source, "<source>")
    except SurfaceError:
        return None  # Python cannot import it either: each caller says what that means


def is_literal(node: ast.expr) -> bool:
    """Whether ``node`` is a literal Python can evaluate without running any code."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def same_code(before: bytes | None, after: bytes | None) -> bool:
    """Whether two module texts are the same program (comments and formatting aside).

    A side that is missing or does not parse is never the same as anything.
    """
    if before is None or after is None:
        return False
    old, new = _parse(before), _parse(after)
    if old is None or new is None:
        return False
    return ast.dump(old) == ast.dump(new)


def hook_names(source: bytes) -> frozenset[str]:
    """The ``pytest_*`` names (hooks, ``pytest_plugins``) the module binds at top level."""
    tree = _parse(source)
    if tree is None:
        return frozenset()
    # ``import pytest_mock`` binds a module, which pytest never calls as a hook;
    # ``from plugin import pytest_runtest_call`` binds a function, which it does.
    bound = (
        name
        for node in statements(tree.body, into_classes=False)
        if not isinstance(node, ast.Import)
        for name in bound_names(node)
    )
    return frozenset(n for n in (*bound, *declared_global(tree)) if n.startswith(HOOK_PREFIX))


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _effect(node: ast.AST, names: ModuleNames) -> str | None:
    """What ``node`` changes outside its own module when evaluated, or None."""
    if _changes_only_its_own(node, names):
        return None
    if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
        node.ctx, (ast.Store, ast.Del)
    ):
        return f"assigns to {ast.unparse(node)}"
    if isinstance(node, ast.Call) and _callee(node) in _MUTATING_CALLS:
        return f"calls {_callee(node)}()"
    if (
        isinstance(node, ast.Attribute)
        and node.attr.startswith("__")
        and node.attr.endswith("__")
        and node.attr not in _INERT_DUNDERS
    ):
        return f"reaches {node.attr}"
    if isinstance(node, ast.Name) and node.id == "__builtins__":
        return "reaches __builtins__"
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in _IMPORT_STATE:
        return f"binds {node.id}"
    return None


def _changes_only_its_own(node: ast.AST, names: ModuleNames) -> bool:
    """A store into, or a container method of, a container the module made itself
    (``CASES["a"] = ...``, ``_expected.append(...)``), or a call that builds a new object
    (``re.compile``): nothing another module sees. Only the name itself: ``CASES[0]``
    may be an object that lives elsewhere."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return names.is_fresh(node.value)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    method, owner = node.func.attr, node.func.value
    if method in _CONTAINER_METHODS and names.is_fresh(owner):
        return True
    return method in _BUILDS.get(names.module_of(owner) or "", ())


def import_time_effects(source: bytes) -> list[str]:
    """How the module changes shared state when imported, one ``line N: ...`` each.

    A syntactic approximation that errs toward reporting: a statement that
    only calls something (``sys.path.insert(...)``, ``random.seed(0)``), a
    store into an attribute or item (``intervals.merge_ranges = ...``), a call
    that mutates (``setattr``, ``.update``, ``.start()`` of a patcher) or a
    reach into ``__dict__``/``__globals__``/``__builtins__``. Function bodies
    are not import time; decorators, defaults and class bodies are. A module
    that does not parse reports nothing (Python cannot import it either).
    """
    tree = _parse(source)
    if tree is None:
        return []
    return [f"line {line}: {what}" for line, what in module_effects(tree)]


def module_effects(tree: ast.Module) -> list[tuple[int, str]]:
    """``import_time_effects`` of a parsed module, ``(line, what)`` each."""
    run = list(statements(tree.body, into_classes=True))
    names = module_names(tree, run)
    found: list[tuple[int, str]] = []
    for statement in run:
        value = statement.value if isinstance(statement, ast.Expr) else None
        # a statement that only calls something runs it, unless it fills its own container
        if value is not None and not (
            isinstance(value, ast.Constant) or _changes_only_its_own(value, names)
        ):
            found.append((statement.lineno, f"runs {ast.unparse(value)[:60]}"))
            continue
        for node in evaluated(statement):
            effect = _effect(node, names)
            if effect is not None:
                found.append((statement.lineno, effect))
                break
    return found


# ------------------------------------------------------- import-time calls, call effects

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
# Builtins that hand out a namespace or run a string: passed around as values, they
# patch as well as called (``functools.partial(setattr, json)``).
_REFLECTIVE = frozenset(
    {"setattr", "delattr", "globals", "vars", "locals", "exec", "eval", "compile", "__import__"}
)
# Calls that import the module a string names.
_IMPORTERS = frozenset({"import_module", "__import__", "importorskip"})
# Calls whose result is an object that already exists elsewhere (a module, a namespace,
# an entry of a shared table): a local bound to one is an alias, not a new object.
_GETTERS = frozenset(
    {"getattr", "vars", "globals", "locals", "__import__", "import_module", "type", "next"}
)
_LOOKUPS = frozenset({"get", "setdefault", "pop", "values", "items", "__getitem__"})
# What reaches into a namespace, a function's code or a class's machinery from a function
# body (``super().__init__`` and ``type(self).__name__`` do not).
_NAMESPACE_DUNDERS = frozenset(
    {
        "__dict__",
        "__globals__",
        "__builtins__",
        "__code__",
        "__closure__",
        "__defaults__",
        "__kwdefaults__",
        "__getattribute__",
        "__setattr__",
        "__delattr__",
        "__setitem__",
        "__delitem__",
        "__subclasses__",
        "__bases__",
        "__mro__",
        "__func__",
        "__self__",
        "__loader__",
        "__spec__",
    }
)
# Constructors whose ``self`` a method builds: its stores change only the new object.
BUILDERS = frozenset({"__init__", "__post_init__"})


def import_time_calls(tree: ast.Module) -> Iterator[tuple[int, ast.expr, str]]:
    """What the module calls while it is imported: ``(line, callee, how)`` for each call,
    decorator and class statement outside function bodies.

    ``how`` is ``"call"`` (a call or a decorator applied), ``"subclass"`` (a base class,
    whose ``__init_subclass__`` runs) or ``"metaclass"``.
    """
    for statement in statements(tree.body, into_classes=True):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in statement.decorator_list:
                if not isinstance(decorator, ast.Call):
                    yield decorator.lineno, decorator, "call"
        if isinstance(statement, ast.ClassDef):
            for base in statement.bases:
                yield base.lineno, base, "subclass"
            for keyword in statement.keywords:
                if keyword.arg == "metaclass":
                    yield keyword.value.lineno, keyword.value, "metaclass"
        for node in evaluated(statement):
            if isinstance(node, ast.Call):
                yield from ((node.lineno, f, "call") for f in _callables(node))


def _callables(call: ast.Call) -> Iterator[ast.expr]:
    """What a call may call: its callee, and what it is handed that may be a function
    (``functools.partial(f)``, ``map(f, xs)``, ``atexit.register(f)``)."""
    yield call.func
    for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
        if isinstance(argument, ast.Name | ast.Attribute | ast.Lambda):
            yield argument


def imports_in(nodes: Iterable[ast.AST], at_import: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements among ``nodes`` and what they hold; with ``at_import``, only
    those a module runs when imported (not inside function bodies). A call that imports
    a module named by a constant (``importlib.import_module("m")``, ``__import__("m")``,
    ``pytest.importorskip("m")``) counts as ``import m``."""
    for node in nodes:
        found: Iterable[ast.AST] = ast.walk(node)
        if at_import and isinstance(node, ast.Module):
            run = list(statements(node.body, into_classes=True))
            found = [*run, *(sub for s in run for sub in evaluated(s))]
        for sub in found:
            if isinstance(sub, ast.Import | ast.ImportFrom):
                yield sub
            elif isinstance(sub, ast.Call) and _callee(sub) in _IMPORTERS and sub.args:
                name = sub.args[0]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    yield ast.Import([ast.alias(name.value)], lineno=sub.lineno)


def called_in(function: Function) -> Iterator[tuple[int, ast.expr]]:
    """Every callee in a function's body (and what its calls are handed, as
    ``import_time_calls``), nested functions and decorators in it included."""
    for statement in _body(function):
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                yield from ((node.lineno, f) for f in _callables(node))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from ((d.lineno, d) for d in node.decorator_list)


def _body(function: Function) -> list[ast.AST]:
    return [function.body] if isinstance(function, ast.Lambda) else list(function.body)


def call_effects(function: Function, method: bool = False) -> list[tuple[int, str]]:
    """How a call of ``function`` changes what outlives it, ``(line, what)`` each.

    A store into an attribute or item, a mutating call (``setattr``, ``.update``,
    ``.append``, ``.start()``) or a reach into a namespace counts unless what it changes
    is the function's own new object: a local bound only to new values (a display, a
    literal, a copy, the result of most calls), or ``self`` of a constructor
    (``method``: ``__init__``/``__post_init__``). A local bound to something that
    already exists (``m = json``, ``m = sys.modules.get("json")``, ``for m in
    sys.modules.values()``) is an alias: changing it changes the original. Calls
    the function makes are judged by the caller (``called_in``). Syntactic, erring
    toward reporting; nested functions count as if they ran.
    """
    own = _own_objects(function, method)
    found: list[tuple[int, str]] = []
    for statement in _body(function):
        for node in ast.walk(statement):
            what = _call_effect(node, own)
            if what is not None:
                found.append((getattr(node, "lineno", function.lineno), what))
    return found


def _call_effect(node: ast.AST, own: frozenset[str]) -> str | None:
    if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
        node.ctx, (ast.Store, ast.Del)
    ):
        return None if _root(node) in own else f"assigns to {ast.unparse(node)[:60]}"
    if isinstance(node, ast.Call):
        callee = _callee(node)
        if isinstance(node.func, ast.Attribute) and _root(node.func.value) in own:
            return None  # a method of the function's own object
        if callee in _MUTATING_CALLS:
            return f"calls {callee}()"
        return None
    if isinstance(node, ast.Name) and node.id in (_REFLECTIVE | {"__builtins__"}):
        return f"uses {node.id}"
    if isinstance(node, ast.Attribute) and node.attr in _NAMESPACE_DUNDERS:
        return f"reaches {node.attr}"
    return None


def _root(node: ast.expr) -> str | None:
    """The name an attribute, item or method chain starts from (``a`` in ``a.b[0].c()``)."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _own_objects(function: Function, method: bool) -> frozenset[str]:
    """The function's locals that only ever hold objects it made itself."""
    args = function.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    names = {a.arg for a in params if a is not None}
    shared: set[str] = set(names)
    bound: dict[str, list[ast.expr | None]] = {}
    for statement in _body(function):
        for node in ast.walk(statement):
            if isinstance(node, ast.Global | ast.Nonlocal):
                shared.update(node.names)
            for target, value in _bindings(node):
                for name in target_names(target):
                    exact = value if isinstance(target, ast.Name) else None
                    bound.setdefault(name, []).append(exact)
    own: set[str] = set()
    # an alias of an alias is an alias: settle the names until nothing changes
    changed = True
    while changed:
        changed = False
        for name, values in bound.items():
            if name in shared or name in own:
                continue
            if all(v is not None and not _aliases(v, shared | (set(bound) - own)) for v in values):
                own.add(name)
                changed = True
    first = [*args.posonlyargs, *args.args][:1]
    if method and first:
        own.add(first[0].arg)
    return frozenset(own)


def _bindings(node: ast.AST) -> Iterator[tuple[ast.expr, ast.expr | None]]:
    """(target, value) for each binding ``node`` makes; the value is None where the bound
    object comes out of another (a loop over it, a ``with`` of it, an ``except``)."""
    if isinstance(node, ast.Assign):
        yield from ((target, node.value) for target in node.targets)
    elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
        yield node.target, node.value
    elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        yield node.target, None
    elif isinstance(node, ast.With | ast.AsyncWith):
        yield from ((i.optional_vars, None) for i in node.items if i.optional_vars is not None)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield ast.Name(node.name), None


def _aliases(value: ast.expr, shared: set[str]) -> bool:
    """Whether ``value`` may be an object that exists outside the function: a name that is
    not the function's own, an attribute or item of anything, a getter's result."""
    if isinstance(value, ast.Name):
        return value.id in shared
    if isinstance(value, ast.Attribute | ast.Subscript | ast.Starred | ast.NamedExpr):
        return True
    if isinstance(value, ast.IfExp):
        return _aliases(value.body, shared) or _aliases(value.orelse, shared)
    if isinstance(value, ast.BoolOp):
        return any(_aliases(v, shared) for v in value.values)
    if isinstance(value, ast.Call):
        callee = _callee(value)
        if callee in _GETTERS:
            return True
        if isinstance(value.func, ast.Attribute) and callee in _LOOKUPS:
            return True  # sys.modules.get("json")
        return isinstance(value.func, ast.Call)  # operator.attrgetter("loads")(json)
    return False
