"""Mutants of one source file: each operator site spliced in, at most N per function.

The choice is deterministic: a function with more sites than its budget keeps
a sample drawn by ``random.Random`` seeded with the file, the function and the
vet seed (a string seed, which Python hashes with SHA-512, never with the
per-process string hash), so the same tree always gives the same mutants.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass

from oracle_gate.errors import SurfaceError
from oracle_gate.pysource.parse import parse_python
from oracle_gate.vet.operators import Edit, Site, sites

__all__ = ["Mutant", "file_mutants", "functions"]


@dataclass(frozen=True)
class Mutant:
    """One mutated version of one file."""

    path: str  # repo-relative
    function: str  # qualified name in its module: ``merge_ranges``, ``Codec.decode``
    operator: str
    line: int
    column: int
    description: str
    source: bytes  # the whole mutated file

    @property
    def id(self) -> str:
        """Stable across runs: file, place, function, operator, and a digest of the mutated
        file (two edits at one place, ``1 -> 0`` and ``1 -> 2``, are two mutants)."""
        digest = hashlib.blake2b(self.source, digest_size=4).hexdigest()
        return f"{self.path}:{self.line}:{self.column}:{self.function}:{self.operator}:{digest}"

    def diff(self, original: bytes) -> str:
        """A unified diff of the file, with one line of context."""
        lines = difflib.unified_diff(
            original.decode("utf-8", "replace").splitlines(keepends=True),
            self.source.decode("utf-8", "replace").splitlines(keepends=True),
            f"a/{self.path}",
            f"b/{self.path}",
            n=1,
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def functions(
    tree: ast.Module,
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (``Outer.inner`` when nested)."""
    stack: list[tuple[str, ast.AST]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for child in reversed(list(ast.iter_child_nodes(node))):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                stack.append((f"{name}.", child))
                if not isinstance(child, ast.ClassDef):
                    yield name, child
            elif not isinstance(child, ast.expr):
                stack.append((prefix, child))


def _offsets(source: bytes) -> list[int]:
    """The byte offset at which each 1-based line starts (index 0 unused)."""
    starts = [0, 0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _splice(source: bytes, starts: list[int], edit: Edit) -> bytes:
    node = edit.node
    begin = starts[node.lineno] + node.col_offset
    if edit.before:
        indent = b" " * node.col_offset
        return source[:begin] + edit.text.encode() + b"\n" + indent + source[begin:]
    assert node.end_lineno is not None and node.end_col_offset is not None  # parsed, not built
    end = starts[node.end_lineno] + node.end_col_offset
    return source[:begin] + edit.text.encode() + source[end:]


def _mutant(path: str, function: str, site: Site, source: bytes, starts: list[int]) -> Mutant:
    return Mutant(
        path=path,
        function=function,
        operator=site.operator,
        line=site.line,
        column=site.column,
        description=site.description,
        source=_splice(source, starts, site.edit),
    )


def _valid(mutant: Mutant, index: int, original: ast.Module, dumps: list[str]) -> bool:
    """It compiles, and it is not the original program again.

    ``index`` is the mutated function's place among ``functions(original)``, ``dumps``
    each function's tree as text. A function there that differs proves the programs
    differ; only when none does is the whole module compared, which on a large file
    would cost more than the parse.
    """
    try:
        changed = parse_python(mutant.source, mutant.path, keep=False)
    except SurfaceError:
        return False  # Python cannot import it, so no test could tell it from the original
    found = [node for _, node in functions(changed)]
    if len(found) != len(dumps) or ast.dump(found[index]) != dumps[index]:
        return True
    return ast.dump(changed) != ast.dump(original)


def file_mutants(
    path: str, source: bytes, per_function: int, seed: int, only: tuple[str, ...] = ()
) -> list[Mutant]:
    """At most ``per_function`` mutants of each function in ``source`` (of the ``only``
    functions, when given), in source order.

    Raises:
        oracle_gate.errors.SurfaceError: ``source`` does not parse (the caller reports
            the file).
    """
    module = parse_python(source, path)
    every = list(functions(module))
    dumps = [ast.dump(function) for _, function in every]
    starts = _offsets(source)
    found: list[Mutant] = []
    for index, (name, function) in enumerate(every):
        if only and name not in only:
            continue
        candidates: list[Mutant] = []
        made: set[bytes] = set()  # one mutant per mutated text: the first site that makes it
        for site in sites(function):
            mutant = _mutant(path, name, site, source, starts)
            if mutant.source not in made and _valid(mutant, index, module, dumps):
                made.add(mutant.source)
                candidates.append(mutant)
        if len(candidates) > per_function:
            chosen = random.Random(f"{seed}:{path}:{name}").sample(candidates, per_function)
            candidates = [m for m in candidates if m in chosen]
        found += candidates
    return sorted(found, key=lambda m: (m.line, m.column, m.id, m.description))
