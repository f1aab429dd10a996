"""Cases appended to an existing test's ``@pytest.mark.parametrize``: a stronger oracle.

The test's body, signature and other decorators stay the parent's; each
parametrize list keeps the parent's cases, in order, and may only gain cases at
its end. An added case must be a literal (``(3, 4)``, ``"x"``, ``{"a": 1}``) or
``pytest.param(<literals>, id="...")``: parametrize arguments are evaluated when
the module is imported, so anything else could run code before the first test,
and a mark (``marks=pytest.mark.xfail``) could change how other cases report.
"""

from __future__ import annotations

import ast
import copy

__all__ = ["only_cases_appended"]

_PARAMETRIZE = "pytest.mark.parametrize"


def only_cases_appended(before: bytes, after: bytes, key: str) -> bool:
    """Whether the unit ``key`` (``test_x``, ``TestC::test_x``) of the test module
    ``before`` became the one of ``after`` by appending literal parametrize cases only."""
    old, new = _function(before, key), _function(after, key)
    if old is None or new is None or len(old.decorator_list) != len(new.decorator_list):
        return False
    if _without_decorators(old) != _without_decorators(new):
        return False
    grew = False
    for parent, head in zip(old.decorator_list, new.decorator_list, strict=True):
        if ast.dump(parent) == ast.dump(head):
            continue
        if not _appended(parent, head):
            return False
        grew = True
    return grew


def _function(source: bytes, key: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        body: list[ast.stmt] = ast.parse(source).body
    except (SyntaxError, ValueError):
        return None
    found: ast.stmt | None = None
    for name in key.split("::"):
        found = next(
            (
                node
                for node in body
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and node.name == name
            ),
            None,
        )
        if found is None:
            return None
        body = found.body
    return found if isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef) else None


def _without_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    bare = copy.copy(node)
    bare.decorator_list = []
    return ast.dump(bare)


def _appended(parent: ast.expr, head: ast.expr) -> bool:
    """Whether ``head`` is the parametrize call ``parent`` with literal cases appended."""
    if not (_is_parametrize(parent) and _is_parametrize(head)):
        return False
    assert isinstance(parent, ast.Call) and isinstance(head, ast.Call)
    if len(parent.args) != 2 or len(head.args) != 2:
        return False  # argvalues given by keyword, or a malformed call: not judged here
    same_rest = ast.dump(parent.args[0]) == ast.dump(head.args[0]) and [
        ast.dump(k) for k in parent.keywords
    ] == [ast.dump(k) for k in head.keywords]
    old, new = parent.args[1], head.args[1]
    if not (same_rest and isinstance(old, ast.List | ast.Tuple) and type(old) is type(new)):
        return False
    assert isinstance(new, ast.List | ast.Tuple)
    kept = [ast.dump(e) for e in new.elts[: len(old.elts)]] == [ast.dump(e) for e in old.elts]
    return kept and all(_inert_case(case) for case in new.elts[len(old.elts) :])


def _is_parametrize(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == _PARAMETRIZE


def _inert_case(node: ast.expr) -> bool:
    """A literal, or ``pytest.param`` of literals with at most a literal ``id``."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.param":
        return all(_literal(arg) for arg in node.args) and all(
            k.arg == "id" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
            for k in node.keywords
        )
    return _literal(node)


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True
