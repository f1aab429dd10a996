"""A package's public functions, read from syntax trees for ``init``'s property stubs.

Public means what a user of the package imports: the public functions of its
public modules (no part of the path starts with ``_``, ``__init__`` aside),
limited by a literal ``__all__``, and the functions a package's ``__init__``
re-exports from its private modules (``from ._parser import loads``). A function
that returns an iterator (a generator, or annotated ``-> Iterator[...]`` in the
module or its ``.pyi`` stub) is marked: its result cannot cross to a property.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from oracle_gate.errors import ConfigError, SurfaceError
from oracle_gate.pysource.parse import parse_python

__all__ = ["Function", "module_functions", "module_name", "public_functions"]

# Return annotations of functions whose result is an iterator or generator.
_ITERATING = ("Iterator", "Iterable", "Generator", "AsyncIterator", "AsyncGenerator")
_INIT = "__init__.py"


@dataclass(frozen=True)
class Function:
    """One public function: the module a property imports it from, its name, whether it
    returns an iterator (which cannot cross between the processes)."""

    module: str
    name: str
    iterates: bool = False


def _parse(source: bytes, path: str) -> ast.Module:
    try:
        return parse_python(source, path)
    except SurfaceError as error:
        # the public API of a module that does not parse is unknown: the config is wrong
        raise ConfigError(error.message, path, error.line) from None


def _literal_all(tree: ast.Module) -> set[str] | None:
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            return {
                e.value
                for e in node.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            }
    return None


def _defined(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    }


def public_functions(source: bytes, path: str) -> list[str]:
    """Top-level public functions of a module, limited to ``__all__`` when it is a literal.

    Raises:
        ConfigError: the module does not parse.
    """
    tree = _parse(source, path)
    exported = _literal_all(tree)
    return [name for name in _defined(tree) if exported is None or name in exported]


def module_name(path: str) -> str:
    """The dotted name a module file (relative to its import root) is imported by."""
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_private(path: str) -> bool:
    parts = path[: -len(".py")].split("/")
    return any(part.startswith("_") and part != "__init__" for part in parts)


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own body: not those of functions or classes inside it."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
        ):
            yield child
            yield from _own_nodes(child)


def _iterates(node: ast.FunctionDef | ast.AsyncFunctionDef, stub: ast.AST | None) -> bool:
    if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in _own_nodes(node)):
        return True
    annotations = [node.returns, stub]
    return any(
        n is not None and any(word in ast.unparse(n) for word in _ITERATING) for n in annotations
    )


def _stub_returns(sources: Mapping[str, bytes], path: str) -> dict[str, ast.AST]:
    """Return annotations of the ``.pyi`` stub beside ``path``, by function name."""
    stub_path = path[: -len(".py")] + ".pyi"
    stub = sources.get(stub_path)
    if stub is None:
        return {}
    try:
        tree = parse_python(stub, stub_path)
    except SurfaceError:
        return {}  # a stub that does not parse tells nothing; the module's own code decides
    return {
        node.name: node.returns
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None
    }


def _functions_in(sources: Mapping[str, bytes], path: str, prefix: str) -> dict[str, bool]:
    """Public function name -> whether it iterates, of the module at ``path``."""
    tree = _parse(sources[path], prefix + path)
    exported = _literal_all(tree)
    stubs = _stub_returns(sources, path)
    return {
        name: _iterates(node, stubs.get(name))
        for name, node in _defined(tree).items()
        if exported is None or name in exported
    }


def _resolve(sources: Mapping[str, bytes], init: str, node: ast.ImportFrom) -> str | None:
    """The module file a relative ``from .x import ...`` in a package's ``__init__`` names."""
    if node.level != 1 or not node.module:
        return None
    base = posixpath.join(posixpath.dirname(init), *node.module.split("."))
    for candidate in (base + ".py", posixpath.join(base, _INIT)):
        if candidate in sources:
            return candidate
    return None


def _reexports(sources: Mapping[str, bytes], init: str, prefix: str) -> dict[str, bool]:
    """The functions a package's ``__init__`` re-exports from its private modules."""
    tree = _parse(sources[init], prefix + init)
    exported = _literal_all(tree)
    deleted = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Delete)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found: dict[str, bool] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        target = _resolve(sources, init, node)
        if target is None or not _is_private(target):
            continue
        there = _functions_in(sources, target, prefix)
        for alias in node.names:
            names = there if alias.name == "*" else {alias.name: there.get(alias.name)}
            for name, iterates in names.items():
                public = (alias.asname or name) if alias.name != "*" else name
                if iterates is None or public.startswith("_") or public in deleted:
                    continue
                if exported is None or public in exported:
                    found[public] = iterates
    return found


def module_functions(
    sources: Mapping[str, bytes], path: str, root: str, prefix: str = ""
) -> list[Function]:
    """The public functions ``path`` (a key of ``sources``, under the import root ``root``)
    offers its users; none for a private module. ``prefix`` makes error paths repo-relative.

    Raises:
        ConfigError: a module does not parse.
    """
    relative = path[len(root) + 1 :] if root else path
    if _is_private(relative):
        return []
    module = module_name(relative)
    functions = _functions_in(sources, path, prefix)
    if posixpath.basename(path) == _INIT:
        functions.update(_reexports(sources, path, prefix))
    return [Function(module, name, iterates) for name, iterates in functions.items()]
