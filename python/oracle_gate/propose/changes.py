"""The changed functions of a patch: parent and head syntax trees, with the diff's lines.

A function is changed when the head has it and the parent's is missing or
different (by syntax tree, so a reformatting changes nothing). Its symbol is
``module.name``: the module as the package directory imports it (the
directory is on ``sys.path`` when rows run), the name its top-level function
or class, which is what ``resolve`` checks for an accepted assumption.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

from oracle_gate.errors import SurfaceError
from oracle_gate.model import Package
from oracle_gate.pysource.parse import parse_python
from oracle_gate.vet.mutants import functions

__all__ = ["Changed", "DiffLines", "changed_functions", "diff_lines", "module_of", "parse_text"]

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class DiffLines:
    """The lines a file's diff removes (from the parent) and adds (in the head), by number."""

    removed: dict[int, str]
    added: dict[int, str]

    def quotes(self) -> set[str]:
        """Every removed or added line's text, stripped, for matching quoted evidence."""
        texts = [*self.removed.values(), *self.added.values()]
        return {text.strip() for text in texts if text.strip()}


@dataclass(frozen=True)
class Changed:
    """One changed function of one file."""

    path: str  # repo-relative
    package: str
    symbol: str  # module.top-level name
    function: str  # qualified name in the module
    parent: FunctionNode | None
    head: FunctionNode
    parent_file: ast.Module | None
    head_file: ast.Module
    diff: DiffLines


def diff_lines(parent: str, head: str) -> DiffLines:
    """The removed and added lines of ``parent`` -> ``head``, numbered in their own file."""
    old, new = parent.splitlines(), head.splitlines()
    removed: dict[int, str] = {}
    added: dict[int, str] = {}
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed.update({i + 1: old[i] for i in range(a0, a1)})
        if tag in ("replace", "insert"):
            added.update({j + 1: new[j] for j in range(b0, b1)})
    return DiffLines(removed, added)


def module_of(package: Package, path: str) -> str | None:
    """The dotted module ``path`` is imported as from its package directory, or None."""
    relative = package.relative(path).removesuffix(".py")
    parts = relative.split("/")
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def parse_text(text: str | None, path: str) -> ast.Module | None:
    """The module of a file's text as propose reads it (its bytes decoded as UTF-8), or
    None when there is no text or it does not parse."""
    if text is None:
        return None
    try:
        return parse_python(text.encode("utf-8"), path)
    except SurfaceError:
        return None  # Python cannot import it either: no function of it is proposed for


def changed_functions(
    package: Package, path: str, parent_text: str | None, head_text: str
) -> list[Changed]:
    """The functions of ``path`` the patch adds or changes (none when the head does not parse)."""
    head_file = parse_text(head_text, path)
    module = module_of(package, path)
    if head_file is None or module is None:
        return []
    parent_file = parse_text(parent_text, path)
    before = dict(functions(parent_file)) if parent_file else {}
    lines = diff_lines(parent_text or "", head_text)
    found = []
    for name, node in functions(head_file):
        old = before.get(name)
        if old is not None and ast.dump(old) == ast.dump(node):
            continue
        found.append(
            Changed(
                path=path,
                package=package.path,
                symbol=f"{module}.{name.split('.')[0]}",
                function=name,
                parent=old,
                head=node,
                parent_file=parent_file,
                head_file=head_file,
                diff=lines,
            )
        )
    return found
