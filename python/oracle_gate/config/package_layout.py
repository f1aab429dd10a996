"""What ``oracle-gate init`` reads of a package: the rows to be (its top-level modules and their
public functions), its test globs, its fixture folders, and the scripts no row would guard.

The package's code may sit at its root (flat layout) or in ``src/`` (src layout);
its tests in ``tests/`` or inside the code. Everything is read from the paths and
the ``.py`` and ``.pyi`` texts, never imported.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from oracle_gate.config.public_api import Function, module_functions
from oracle_gate.errors import SurfaceError
from oracle_gate.globs import matches_any
from oracle_gate.pysource.parse import parse_python
from oracle_gate.repo.layout import SRC, src_dir

__all__ = ["PROPS_FILE", "Layout", "SourceUnit", "read_layout"]

PROPS_FILE = "props.py"
# The gate's own modules and test plumbing: never a source to guard with a property.
_ORACLE_MODULES = frozenset({PROPS_FILE, "partitions.py", "relations.py", "conftest.py"})
# Build, task and documentation helpers: never a source to guard, tooling instead.
_BUILD_HELPERS = frozenset({"tasks.py", "versioneer.py", "ez_setup.py", "fabfile.py"})
_NOT_SOURCE = frozenset({"setup.py", "noxfile.py", *_BUILD_HELPERS})
# The gate judges these by their effect (setup.py) or as harness (noxfile.py, conftest.py).
_NOT_TOOLING = frozenset({"setup.py", "noxfile.py", "conftest.py", "sitecustomize.py"})
_PYTHON = ".py"
_SCRIPT_SUFFIXES = (_PYTHON, ".sh")
# Directory names that hold recorded inputs and expected outputs.
FIXTURE_DIRS = frozenset(
    {"testdata", "test_data", "fixtures", "golden", "goldens", "snapshots", "__snapshots__"}
)
_TEST_DIRS = frozenset({"tests", "test", "testing"})
_TEST_FILE = re.compile(r"(test_.*|.*_test)\.py")
_ROW_ID_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class SourceUnit:
    """One row to be: an import package (``name/**``, ``src/name/**``) or a top-level module
    (``name.py``), with its public functions in file order."""

    row: str
    glob: str
    functions: tuple[Function, ...] = ()

    @property
    def module(self) -> str:
        """The dotted name of the module or package the row guards."""
        glob = self.glob.removeprefix(f"{SRC}/")
        return glob[: -len("/**")] if glob.endswith("/**") else glob[: -len(_PYTHON)]


@dataclass(frozen=True)
class Layout:
    """What init found: rows to be, test globs, fixture folders, and the package's scripts
    no row guards (the ``tooling`` to list in the root settings)."""

    sources: tuple[SourceUnit, ...]
    tests: tuple[str, ...]
    fixtures: tuple[str, ...]
    tooling: tuple[str, ...] = ()


def _is_hidden(path: str) -> bool:
    return any(part.startswith((".", "__pycache__")) for part in path.split("/"))


def _fixture_dirs(files: Sequence[str]) -> tuple[str, ...]:
    """The shallowest directories named like fixture folders, each ending in '/'."""
    found: set[str] = set()
    for path in files:
        parts = path.split("/")[:-1]
        for depth, part in enumerate(parts):
            if part in FIXTURE_DIRS:
                found.add("/".join(parts[: depth + 1]) + "/")
                break
    return tuple(sorted(d for d in found if not any(d != o and d.startswith(o) for o in found)))


def _test_globs(files: Sequence[str], fixtures: tuple[str, ...]) -> tuple[str, ...]:
    globs: set[str] = set()
    for path in files:
        name = posixpath.basename(path)
        if not _TEST_FILE.fullmatch(name) or path.startswith(fixtures):
            continue
        pattern = "test_*.py" if name.startswith("test_") else "*_test.py"
        top = path.split("/")[0] if "/" in path else ""
        globs.add(f"{top}/**/{pattern}" if top else pattern)
    return tuple(sorted(globs))


def _imported_tops(files: Sequence[str], read: Mapping[str, bytes]) -> set[str]:
    """The top-level module names the package's test files import."""
    names: set[str] = set()
    for path in files:
        if not _TEST_FILE.fullmatch(posixpath.basename(path)) or path not in read:
            continue
        try:
            tree = parse_python(read[path], path)
        except SurfaceError:
            continue  # pytest cannot import it either, so it imports nothing
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def _source_units(
    files: Sequence[str], excluded: tuple[str, ...], root: str, imported: set[str]
) -> dict[str, str]:
    """Row id -> glob of each top-level module under the import root ``root`` ("" or
    "src"): an import package (a folder with ``__init__.py``, or one the tests import
    although it has none) or a single-file module."""
    units: dict[str, str] = {}
    prefix = f"{root}/" if root else ""
    packages = {p[len(prefix) :].split("/")[0] for p in files if p.startswith(prefix)
                and p.endswith("/__init__.py") and p[len(prefix) :].count("/") == 1}  # fmt: skip
    for path in files:
        if not path.endswith(".py") or not path.startswith(prefix) or path.startswith(excluded):
            continue
        top, _, rest = path[len(prefix) :].partition("/")
        if not rest:
            if (
                path not in _ORACLE_MODULES
                and top not in _NOT_SOURCE
                and not _TEST_FILE.fullmatch(top)
            ):
                units[_ROW_ID_CHARS.sub("_", top[: -len(".py")])] = path
        elif (top in packages or top in imported) and top.isidentifier() and top != SRC:
            units[_ROW_ID_CHARS.sub("_", top)] = f"{prefix}{top}/**"
    return units


def _in_tests(path: str) -> bool:
    return _TEST_FILE.fullmatch(posixpath.basename(path)) is not None or any(
        part in _TEST_DIRS for part in path.split("/")[:-1]
    )


def _tooling(
    files: Sequence[str], globs: Sequence[str], excluded: tuple[str, ...]
) -> tuple[str, ...]:
    """Scripts no row guards and no test is (docs/conf.py, scripts/, versioneer.py): the
    ``tooling`` globs of the root settings, whole folders where a folder holds nothing else
    the gate would call production."""
    candidates = [
        path
        for path in files
        if path.endswith(_SCRIPT_SUFFIXES)
        and not path.startswith(excluded)
        and not _in_tests(path)
        and path not in _ORACLE_MODULES
        and posixpath.basename(path) not in _NOT_TOOLING
        and not matches_any(path, globs)
    ]
    found: list[str] = []
    for top in sorted({path.split("/")[0] for path in candidates}):
        inside = [p for p in candidates if p.split("/")[0] == top]
        if "/" in inside[0] and all(
            not p.endswith(_PYTHON) or p in inside for p in files if p.startswith(top + "/")
        ):
            found.append(f"{top}/**")
        else:
            found += inside
    return tuple(found)


def read_layout(files: Sequence[str], read: Mapping[str, bytes], prefix: str = "") -> Layout:
    """The layout of a package from its package-relative ``files`` and the contents of its
    ``.py`` and ``.pyi`` files; ``prefix`` (the package directory and '/') makes error paths
    repo-relative. Its code may sit at the package's root (flat layout) or in ``src/``.

    Raises:
        ConfigError: a source module does not parse.
    """
    files = [f for f in sorted(files) if not _is_hidden(f)]
    fixtures = _fixture_dirs(files)
    tests = _test_globs(files, fixtures)
    test_tops = tuple(
        f"{path.split('/')[0]}/"
        for path in files
        if "/" in path and path.split("/")[0] in _TEST_DIRS
    )
    excluded = (*fixtures, *test_tops)
    roots = ("", SRC) if src_dir(files, "") else ("",)
    imported = _imported_tops(files, read)
    units: dict[str, tuple[str, str]] = {}
    for root in roots:
        for row, glob in _source_units(files, excluded, root, imported).items():
            units.setdefault(row, (root, glob))
    sources = []
    for row, (root, glob) in sorted(units.items()):
        under = glob[: -len("**")] if glob.endswith("**") else glob
        functions = [
            function
            for path in files
            if path.endswith(".py") and path.startswith(under) and not _in_tests(path)
            for function in module_functions(read, path, root, prefix)
        ]
        sources.append(SourceUnit(row=row, glob=glob, functions=tuple(functions)))
    globs = [unit.glob for unit in sources]
    return Layout(
        sources=tuple(sources),
        tests=tests,
        fixtures=fixtures,
        tooling=_tooling(files, globs, excluded),
    )
