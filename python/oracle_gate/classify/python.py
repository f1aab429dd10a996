"""What a Python module does when it is imported: the pytest hooks it binds, what it patches.

Read from the syntax tree, not from file names: a module is harness when its
meaning is (it binds ``pytest_*`` names, or changes shared state at import
time), wherever it lives and whatever it is called. Parent and head are parsed
by the same interpreter in the same process, so comparing their trees is exact.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

__all__ = ["hook_names", "import_time_effects", "is_literal", "same_code"]

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


def _parse(source: bytes) -> ast.Module | None:
    """The module's tree, or None when Python could not import it either."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


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


def _statements(body: list[ast.stmt], into_classes: bool) -> Iterator[ast.stmt]:
    """Statements that run when the module is imported: not function bodies.

    Compound statements are entered (their bodies run at import too); class
    bodies only when ``into_classes`` (they run, but bind class attributes).
    """
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.ClassDef) and not into_classes:
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(node, field, []), into_classes)
        for handler in getattr(node, "handlers", []):
            yield from _statements(handler.body, into_classes)
        for case in getattr(node, "cases", []):
            yield from _statements(case.body, into_classes)


def _own_expressions(node: ast.stmt) -> Iterator[ast.AST]:
    """The expressions a statement evaluates itself (a def: decorators, defaults, annotations)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield from node.decorator_list
        yield node.args
        if node.returns is not None:
            yield node.returns
        return
    if isinstance(node, ast.ClassDef):
        yield from (*node.decorator_list, *node.bases, *node.keywords)
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ExceptHandler):
            if child.type is not None:
                yield child.type
        elif isinstance(child, ast.match_case):
            yield child.pattern
            if child.guard is not None:
                yield child.guard
        elif not isinstance(child, ast.stmt):
            yield child


def _evaluated(node: ast.stmt) -> Iterator[ast.AST]:
    """Every node the statement evaluates when it runs; lambda bodies run later."""
    stack = list(_own_expressions(node))
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, ast.Lambda):
            stack.append(current.args)
            continue
        stack.extend(ast.iter_child_nodes(current))


def _bound_names(node: ast.stmt) -> Iterator[str]:
    """Module-level names a statement binds (assignments, defs, imports, loop targets, walrus)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.ImportFrom):
        # ``import pytest_mock`` binds a module, which pytest never calls as a hook;
        # ``from plugin import pytest_runtest_call`` binds a function, which it does.
        yield from (alias.asname or alias.name for alias in node.names)
    for child in _evaluated(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            yield child.id
    for handler in getattr(node, "handlers", []):
        if handler.name:
            yield handler.name


def hook_names(source: bytes) -> frozenset[str]:
    """The ``pytest_*`` names (hooks, ``pytest_plugins``) the module binds at top level."""
    tree = _parse(source)
    if tree is None:
        return frozenset()
    return frozenset(
        name
        for node in _statements(tree.body, into_classes=False)
        for name in _bound_names(node)
        if name.startswith(HOOK_PREFIX)
    )


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _effect(node: ast.AST) -> str | None:
    """What ``node`` changes outside its own module when evaluated, or None."""
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
    return None


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
    found: list[str] = []
    for statement in _statements(tree.body, into_classes=True):
        if isinstance(statement, ast.Expr) and not isinstance(statement.value, ast.Constant):
            found.append(f"line {statement.lineno}: runs {ast.unparse(statement.value)[:60]}")
            continue
        for node in _evaluated(statement):
            effect = _effect(node)
            if effect is not None:
                found.append(f"line {statement.lineno}: {effect}")
                break
    return found
