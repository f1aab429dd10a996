"""Which statements a patch may add to an existing test file without moving the oracle.

A test file is oracle as a whole module (docs/tests.md, "A test file is oracle as a
whole module"). A patch may add new tests to it: a ``def``/``class`` with a name the
parent file never mentions, whose import-time parts (decorators, defaults, annotations, bases,
class bodies) run no code but pytest's and unittest's own markers, or an
import or constant binding fresh names. Anything else added (a statement that
rebinds a name the parent uses, a hook, an autouse fixture, module-level code,
a non-test member of an existing class) can change how the existing tests run,
so it is an oracle move.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from oracle_gate.pysource.imports import import_origins
from oracle_gate.surface import keyed_statements, scope_bindings

__all__ = ["HARMLESS_FUTURES", "FileView", "rebound_names", "why_not_fresh"]

# Names pytest or unittest call on their own: defining one runs code for every test.
_RESERVED = frozenset(
    {
        "setup",
        "teardown",
        "setup_module",
        "teardown_module",
        "setUpModule",
        "tearDownModule",
        "setup_function",
        "teardown_function",
        "load_tests",
        "pytestmark",
        "pytest_plugins",
        "collect_ignore",
        "collect_ignore_glob",
    }
)
# Dunder names that neither pytest nor unittest reads: ``from module import *`` and
# metadata. Every other dunder may be read (``__test__``, a module ``__getattr__``).
_UNREAD_DUNDERS = frozenset({"__all__", "__version__", "__author__"})
# Future imports that change nothing a test checks: the no-ops of Python 3, and
# annotations kept as text (an assertion on an annotation fails; it cannot pass more).
# ``barry_as_FLUFL`` changes what ``!=`` means.
HARMLESS_FUTURES = frozenset(
    {
        "annotations",
        "absolute_import",
        "division",
        "generator_stop",
        "generators",
        "nested_scopes",
        "print_function",
        "unicode_literals",
        "with_statement",
    }
)
# Callables whose call at import time only builds a marker, a parameter set or a patcher.
_MARKER_CALLS = ("pytest.mark.",)
_MARKER_EXACT = frozenset(
    {
        "pytest.fixture",
        "pytest.param",
        "unittest.skip",
        "unittest.skipIf",
        "unittest.skipUnless",
        "unittest.expectedFailure",
        "unittest.mock.patch",
        "unittest.mock.patch.object",
        "unittest.mock.patch.dict",
        "unittest.mock.patch.multiple",
        "mock.patch",
        "mock.patch.object",
        "mock.patch.dict",
        "mock.patch.multiple",
    }
)
_TEST_CASES = frozenset({"TestCase", "IsolatedAsyncioTestCase"})
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


class FileView:
    """One side of a test file: its keyed statements, its imports, every name it mentions."""

    def __init__(self, tree: ast.Module) -> None:
        self.statements: dict[str, ast.stmt] = dict(keyed_statements(tree.body, ""))
        self.binders: dict[str, list[str]] = {}
        for key, node in self.statements.items():
            if "::" not in key:
                for name in scope_bindings(node):
                    self.binders.setdefault(name, []).append(key)
        self.imports = dict(import_origins(tree.body))  # module level: what the tests see
        self.mentions = frozenset(_mentioned(tree))


def _mentioned(tree: ast.Module) -> Iterator[str]:
    """Every identifier, attribute, parameter, keyword and string value in a file."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, ast.keyword):
            yield node.arg or ""
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.alias):
            yield node.asname or node.name.split(".")[0]
        elif isinstance(node, ast.Global | ast.Nonlocal):
            yield from node.names
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # usefixtures("db"), getfixturevalue("db"), parametrize(..., indirect=["db"])
            yield from node.value.replace(",", " ").split()


def rebound_names(parent: FileView, head: FileView) -> list[str]:
    """Names whose module-level binding statements (among the parent's) changed order."""
    rebound = []
    for name, keys in parent.binders.items():
        kept = [key for key in head.binders.get(name, []) if key in parent.statements]
        if kept != keys and all(key in head.statements for key in keys):
            rebound.append(name)
    return sorted(rebound)


def why_not_fresh(key: str, parent: FileView, head: FileView) -> str | None:
    """Why the added unit ``key`` of ``head`` moves the oracle, or None for a fresh addition."""
    node = head.statements[key]
    if "::" in key:
        owner = key.rsplit("::", 1)[0]
        if owner not in parent.statements:
            return None  # a member of a new class, judged with the class
        name = getattr(node, "name", "")
        if not name.startswith("test"):
            return f"adds {name} to the existing class {owner}"
        owner_node = parent.statements[owner]
        if isinstance(owner_node, ast.ClassDef) and not all(
            _plain_base(base) for base in owner_node.bases
        ):
            return f"adds {name} to {owner}, whose base class may define a test of that name"
        return _fresh(name, parent) or _inert_definition(node, parent, head)
    if isinstance(node, (*_DEFS, ast.ClassDef)):
        return _fresh(node.name, parent) or _inert_definition(node, parent, head)
    if isinstance(node, ast.Import | ast.ImportFrom):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            futures = {alias.name for alias in node.names}
            if not futures <= HARMLESS_FUTURES:
                return f"adds a __future__ import ({', '.join(sorted(futures))})"
        return _fresh_all(scope_bindings(node), parent)
    if isinstance(node, ast.Assign | ast.AnnAssign) and _plain_targets(node):
        value = node.value
        if value is not None and not _inert(value, head):
            return f"adds {key}, which runs code at import time"
        fixture = _fixture_declared(key, [value], parent, head) if value is not None else None
        return _fresh_all(scope_bindings(node), parent) or fixture
    return f"adds {key}, which runs code at import time"


def _plain_base(base: ast.expr) -> bool:
    """A base class that defines no tests of its own: ``object`` or unittest's test cases."""
    if isinstance(base, ast.Attribute):
        return (
            isinstance(base.value, ast.Name)
            and base.value.id == "unittest"
            and (base.attr in _TEST_CASES)
        )
    return isinstance(base, ast.Name) and base.id in {"object", *_TEST_CASES}


def _plain_targets(node: ast.Assign | ast.AnnAssign) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return all(isinstance(t, ast.Name) for t in targets)


def _fresh_all(names: list[str], parent: FileView) -> str | None:
    for name in names:
        why = _fresh(name, parent)
        if why:
            return why
    return None


def _fresh(name: str, parent: FileView) -> str | None:
    if name == "*":
        return "adds a star import, which can rebind any name"
    reserved = name.startswith("__") and name not in _UNREAD_DUNDERS
    if reserved or name in _RESERVED or name.startswith("pytest_"):
        return f"adds {name}, which pytest or unittest run for every test"
    if name in parent.mentions:
        return f"rebinds {name}, which the existing tests use"
    return None


def _inert_definition(
    node: ast.stmt, parent: FileView, head: FileView, scoped: bool = False
) -> str | None:
    """Why a new ``def``/``class`` runs code at import time or changes the fixtures existing
    tests get, or None. ``scoped``: a member of a new class, whose fixtures only its own
    tests see."""
    name = getattr(node, "name", "?")
    if isinstance(node, ast.ClassDef):
        parts: list[ast.expr] = list(node.bases)
        if node.keywords:
            return f"{name} passes class keywords (a metaclass runs code at import time)"
        body = [s for s in node.body if not _is_docstring(s)]
        for stmt in body:
            if isinstance(stmt, (*_DEFS, ast.ClassDef)):
                why = _inert_definition(stmt, parent, head, scoped=True)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign) and _plain_targets(stmt):
                ok = stmt.value is None or _inert(stmt.value, head)
                why = None if ok else f"{name} runs code in its class body"
            elif isinstance(stmt, ast.Pass):
                why = None
            else:
                why = f"{name} runs code in its class body"
            if why:
                return why
    elif isinstance(node, _DEFS):
        args = node.args
        parts = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        parts += [a.annotation for a in _args(args) if a.annotation is not None]
        parts += [node.returns] if node.returns is not None else []
    else:
        return f"{name} runs code at import time"
    for decorator in node.decorator_list:
        if not _marker_decorator(decorator, head):
            return f"{name} has a decorator that runs code at import time"
    if not all(_inert(part, head) for part in parts):
        return f"{name} runs code at import time (a default, annotation or base calls)"
    return _fixture_declared(name, node.decorator_list, parent, head, scoped)


def _fixture_declared(
    owner: str,
    expressions: list[ast.expr],
    parent: FileView,
    head: FileView,
    scoped: bool = False,
) -> str | None:
    """Why a ``pytest.fixture`` among ``expressions`` (decorators of ``owner``, or the value
    bound to it) changes what existing tests get, or None.

    pytest names a fixture by its ``name=`` argument, else by its function's own
    ``__name__``: ``@pytest.fixture(name="sample") def sample_v2()`` overrides the
    parent's ``sample`` for every test of the module, under a fresh name. An autouse
    fixture runs for every test.
    """
    for node in (sub for expression in expressions for sub in ast.walk(expression)):
        if not (isinstance(node, ast.Call) and _dotted(node.func, head) == "pytest.fixture"):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        if None in keywords:
            return f"{owner} declares a fixture with **options, which may hold autouse or name"
        autouse = keywords.get("autouse")
        if autouse is not None and not (isinstance(autouse, ast.Constant) and not autouse.value):
            return f"{owner} is an autouse fixture: it runs for every test"
        declared = keywords.get("name")
        if scoped:
            continue
        if declared is None and node.args:
            declared = node.args[0]  # pytest.fixture(function): the function's __name__
            if not (isinstance(declared, ast.Name) and _defined_here(declared.id, head)):
                return f"{owner} makes a fixture of {ast.unparse(declared)[:40]}, named as it is"
            declared = ast.Constant(declared.id)
        if declared is None:
            continue
        if not (isinstance(declared, ast.Constant) and isinstance(declared.value, str)):
            return f"{owner} names its fixture with an expression ({ast.unparse(declared)[:40]})"
        why = _fresh(declared.value, parent)
        if why:
            return f"{owner} declares the fixture {declared.value!r}: {why}"
    return None


def _defined_here(name: str, head: FileView) -> bool:
    """Whether ``name`` is bound in the module by ``def`` statements only."""
    binders = [head.statements[key] for key in head.binders.get(name, [])]
    return bool(binders) and all(isinstance(b, _DEFS) for b in binders)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _dotted(node: ast.expr, head: FileView) -> str | None:
    """The full dotted path of a name/attribute chain, its root resolved through imports."""
    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    root = head.imports.get(node.id)
    binders = [head.statements[key] for key in head.binders.get(node.id, [])]
    if root is None or not all(isinstance(b, ast.Import | ast.ImportFrom) for b in binders):
        return None  # not imported, or also bound by something else
    return ".".join([root, *reversed(attrs)])


def _marker(func: ast.expr, head: FileView) -> bool:
    path = _dotted(func, head)
    if path is None:
        return False
    return path in _MARKER_EXACT or path.startswith(_MARKER_CALLS)


def _marker_decorator(decorator: ast.expr, head: FileView) -> bool:
    if isinstance(decorator, ast.Name) and decorator.id in _PLAIN_DECORATORS:
        return decorator.id not in head.binders
    if isinstance(decorator, ast.Call):
        return _marker(decorator.func, head) and _inert_call_args(decorator, head)
    return _marker(decorator, head)


def _inert_call_args(call: ast.Call, head: FileView) -> bool:
    parts = [*call.args, *(k.value for k in call.keywords)]
    return all(_inert(part, head) for part in parts)


def _inert(node: ast.expr, head: FileView) -> bool:
    """Whether evaluating ``node`` can run code beyond building values and markers."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if not _marker(sub.func, head):
                return False
        elif isinstance(
            sub,
            ast.Await
            | ast.Yield
            | ast.YieldFrom
            | ast.NamedExpr
            | ast.Starred
            | ast.ListComp
            | ast.SetComp
            | ast.DictComp
            | ast.GeneratorExp,
        ):
            return False
    return True
