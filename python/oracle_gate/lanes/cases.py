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

from oracle_gate.facts import Facts

__all__ = ["grown_units"]

_PARAMETRIZE = "pytest.mark.parametrize"


def grown_units(facts: Facts, path: str, keys: Iterable[str]) -> set[str]:
    """The units among ``keys`` of the test module at ``path`` (in parent and head) that
    only gained cases: tests whose parametrize lists grew, tables read only as cases."""
    before, after = facts.parent.read_optional(path), facts.head.read_optional(path)
    if before is None or after is None:
        return set()
    grown = {key for key in keys if _only_cases_appended(before, after, key)}
    tables = {key: name for key in keys if (name := _grown_table(before, after, key))}
    if tables:
        named = _named_elsewhere(facts, path, set(tables.values()))
        grown |= {key for key, name in tables.items() if name not in named}
    return grown


def _named_elsewhere(facts: Facts, path: str, names: set[str]) -> set[str]:
    """Which of ``names`` another Python file of the package of ``path`` mentions."""
    package = facts.head_graph.package_of(path)
    prefix = f"{package.path}/" if package is not None and package.path else ""
    pattern = re.compile(rb"\b(" + b"|".join(n.encode() for n in sorted(names)) + rb")\b")
    found: set[str] = set()
    for other in facts.head.files():
        if other.endswith(".py") and other.startswith(prefix) and other != path:
            found |= {m.decode() for m in pattern.findall(facts.head.read(other))}
    return found


def _only_cases_appended(before: bytes, after: bytes, key: str) -> bool:
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


def _grown_table(before: bytes, after: bytes, key: str) -> str | None:
    """The name a module-level table unit ``key`` (``=CASES``) binds, when it only gained
    literal cases at its end and the head module reads it only as parametrize's cases."""
    name = key[1:]
    if not key.startswith("=") or not name.isidentifier():
        return None
    old, new = _parse(before), _parse(after)
    if old is None or new is None:
        return None
    old_table, new_table = _table(old, name), _table(new, name)
    if old_table is None or new_table is None or not _grew(old_table, new_table):
        return None
    return name if _read_only_as_cases(new, after, name) else None


def _parse(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _table(module: ast.Module, name: str) -> ast.List | ast.Tuple | None:
    """The list or tuple display the module's one binding of ``name`` assigns."""
    bindings = [
        node
        for node in module.body
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        and name in {t.id for t in ast.walk(node) if isinstance(t, ast.Name)}
    ]
    if len(bindings) != 1 or not isinstance(bindings[0], ast.Assign):
        return None
    binding = bindings[0]
    single = len(binding.targets) == 1 and isinstance(binding.targets[0], ast.Name)
    value = binding.value
    return value if single and isinstance(value, ast.List | ast.Tuple) else None


def _read_only_as_cases(module: ast.Module, source: bytes, name: str) -> bool:
    """Whether every mention of ``name`` is its binding or the cases argument of a
    parametrize decorator: a string, attribute or comment naming it counts too."""
    allowed = {
        id(decorator.args[1])
        for node in ast.walk(module)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for decorator in node.decorator_list
        if _is_parametrize(decorator)
        and isinstance(decorator, ast.Call)
        and len(decorator.args) == 2
    }
    names = [n for n in ast.walk(module) if isinstance(n, ast.Name) and n.id == name]
    reads = [n for n in names if not isinstance(n.ctx, ast.Store)]
    words = len(re.findall(rf"\b{name}\b", source.decode("utf-8", "replace")))
    return (
        len(names) == len(reads) + 1
        and all(id(n) in allowed for n in reads)
        and words == len(names)
    )


def _function(source: bytes, key: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    module = _parse(source)
    if module is None:
        return None
    body: list[ast.stmt] = module.body
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
    if not (same_rest and isinstance(old, ast.List | ast.Tuple)):
        return False
    return isinstance(new, ast.List | ast.Tuple) and _grew(old, new)


def _grew(old: ast.List | ast.Tuple, new: ast.List | ast.Tuple) -> bool:
    """Whether ``new`` is ``old``'s display with inert cases appended, nothing else."""
    if type(old) is not type(new) or len(new.elts) <= len(old.elts):
        return False
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
