"""Cases appended to an existing test's ``@pytest.mark.parametrize``: a stronger oracle.

The test's body, signature and other decorators stay the parent's; each
parametrize list keeps the parent's cases, in order, and may only gain cases at
its end. An added case must be a literal (``(3, 4)``, ``"x"``, ``{"a": 1}``) or
``pytest.param(<literals>, id="...")``: parametrize arguments are evaluated when
the module is imported, so anything else could run code before the first test,
and a mark (``marks=pytest.mark.xfail``) could change how other cases report.

A table held in a module-level name (``CASES = [...]``) may grow the same way
only if the module reads the name nowhere but as parametrize's list of cases:
appended to a list an assertion reads (``assert code in ALLOWED``), a case
would weaken it. Nor may another Python file of the package name it.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterable
from typing import TypeGuard

from oracle_gate.classify.python import is_literal
from oracle_gate.errors import GateError
from oracle_gate.facts import Facts
from oracle_gate.surface import keyed_statements, parse_module

__all__ = ["grown_units"]

_PARAMETRIZE = "pytest.mark.parametrize"
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def grown_units(facts: Facts, path: str, keys: Iterable[str]) -> set[str]:
    """The units among ``keys`` of the test module at ``path`` (in parent and head) that
    only gained cases: tests whose parametrize lists grew, tables read only as cases."""
    before, after = facts.parent.read_optional(path), facts.head.read_optional(path)
    if before is None or after is None:
        return set()
    try:
        old_module, new_module = parse_module(before, path), parse_module(after, path)
    except GateError:
        return set()  # the tests lane reports a side Python refuses
    # the statements by the keys their units have (``surface.keyed_statements``)
    old = dict(keyed_statements(old_module.body, ""))
    new = dict(keyed_statements(new_module.body, ""))
    grown: set[str] = set()
    tables: dict[str, str] = {}
    for key in keys:
        parent, head = old.get(key), new.get(key)
        if isinstance(parent, _DEFS) and isinstance(head, _DEFS):
            if _only_cases_appended(parent, head):
                grown.add(key)
        elif parent is not None and head is not None:
            name = _grown_table(parent, head)
            if name is not None and _read_only_as_cases(new_module, after, name):
                tables[key] = name
    if tables:
        named = _named_elsewhere(facts, path, set(tables.values()))
        grown |= {key for key, name in tables.items() if name not in named}
    return grown


def _named_elsewhere(facts: Facts, path: str, names: set[str]) -> set[str]:
    """Which of ``names`` another Python file of the package of ``path`` mentions."""
    package = facts.head_graph.package_of(path)
    prefix = f"{package.path}/" if package is not None and package.path else ""
    others = [
        other
        for other in facts.head.files()
        if other.endswith(".py") and other.startswith(prefix) and other != path
    ]
    pattern = re.compile(rb"\b(" + b"|".join(n.encode() for n in sorted(names)) + rb")\b")
    return {
        match.decode()
        for text in facts.head.read_many(others).values()
        for match in pattern.findall(text)
    }


def _only_cases_appended(
    old: ast.FunctionDef | ast.AsyncFunctionDef, new: ast.FunctionDef | ast.AsyncFunctionDef
) -> bool:
    """Whether the test ``new`` is ``old`` with literal parametrize cases appended only."""
    if len(old.decorator_list) != len(new.decorator_list):
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


def _grown_table(old: ast.stmt, new: ast.stmt) -> str | None:
    """The name a module-level table (``CASES = [...]``) binds, when it only gained
    literal cases at its end."""
    old_table, new_table = _table(old), _table(new)
    if old_table is None or new_table is None or old_table[0] != new_table[0]:
        return None
    return old_table[0] if _grew(old_table[1], new_table[1]) else None


def _table(node: ast.stmt) -> tuple[str, ast.List | ast.Tuple] | None:
    """(name, display) of ``NAME = [...]`` or ``NAME = (...)``."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    target, value = node.targets[0], node.value
    if isinstance(target, ast.Name) and isinstance(value, ast.List | ast.Tuple):
        return target.id, value
    return None


def _read_only_as_cases(module: ast.Module, source: bytes, name: str) -> bool:
    """Whether every mention of ``name`` is its one binding or the cases argument of a
    parametrize decorator: a string, attribute or comment naming it counts too."""
    allowed = {
        id(decorator.args[1])
        for node in ast.walk(module)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for decorator in node.decorator_list
        if _is_parametrize(decorator) and len(decorator.args) == 2
    }
    names = [n for n in ast.walk(module) if isinstance(n, ast.Name) and n.id == name]
    reads = [n for n in names if not isinstance(n.ctx, ast.Store)]
    words = len(re.findall(rf"\b{name}\b", source.decode("utf-8", "replace")))
    return (
        len(names) == len(reads) + 1
        and all(id(n) in allowed for n in reads)
        and words == len(names)
    )


def _without_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    bare = copy.copy(node)
    bare.decorator_list = []
    return ast.dump(bare)


def _appended(parent: ast.expr, head: ast.expr) -> bool:
    """Whether ``head`` is the parametrize call ``parent`` with literal cases appended."""
    if not (_is_parametrize(parent) and _is_parametrize(head)):
        return False
    if len(parent.args) != 2 or len(head.args) != 2:
        return False  # argvalues given by keyword, or a malformed call: not judged here
    same_rest = ast.dump(parent.args[0]) == ast.dump(head.args[0]) and [
        ast.dump(k) for k in parent.keywords
    ] == [ast.dump(k) for k in head.keywords]
    old, new = parent.args[1], head.args[1]
    if not (same_rest and isinstance(old, ast.List | ast.Tuple)):
        return False
    return isinstance(new, ast.List | ast.Tuple) and _grew(old, new)


def _grew(old: ast.List | ast.Tuple, new: ast.List | ast.Tuple) -> bool:
    """Whether ``new`` is ``old``'s display with inert cases appended, nothing else."""
    if type(old) is not type(new) or len(new.elts) <= len(old.elts):
        return False
    kept = [ast.dump(e) for e in new.elts[: len(old.elts)]] == [ast.dump(e) for e in old.elts]
    return kept and all(_inert_case(case) for case in new.elts[len(old.elts) :])


def _is_parametrize(node: ast.expr) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == _PARAMETRIZE


def _inert_case(node: ast.expr) -> bool:
    """A literal, or ``pytest.param`` of literals with at most a literal ``id``."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.param":
        return all(is_literal(arg) for arg in node.args) and all(
            k.arg == "id" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
            for k in node.keywords
        )
    return is_literal(node)
