"""What ``oracle-gate init`` writes: a package's matrix, property stubs and empty ledgers,
and the repository's root settings and CODEOWNERS stub.

Every text is derived from the package's files (package-relative paths) and is
parsed again by the gate's own readers before the CLI writes it, so init can
never write a file the gate refuses.
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.matrix import MATRIX_FILE
from oracle_gate.config.public_api import Function, module_functions
from oracle_gate.config.settings import DEFAULT_DOCS, NOTE_POLICIES, Settings
from oracle_gate.globs import matches_any
from oracle_gate.layout import SRC, src_dir

__all__ = [
    "CHANGELOG_FILE",
    "PROPS_FILE",
    "Layout",
    "SourceUnit",
    "package_files",
    "read_layout",
    "render_codeowners",
    "render_settings",
]

PROPS_FILE = "props.py"
CHANGELOG_FILE = "ORACLE_CHANGELOG.md"
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
DEFAULT_BUDGET = {"examples": 100, "seconds": 20}
_STUB_TODO = "write an invariant of "


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
            tree = ast.parse(read[path])
        except (SyntaxError, ValueError):
            continue
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


def _flow(items: Iterable[str]) -> str:
    return json.dumps(list(items))


def _identifier(text: str) -> str:
    return re.sub(r"\W", "_", text)


def _property_names(layout: Layout) -> dict[tuple[str, str], str]:
    """A unique ``prop_`` name for each (module, function), qualified by its module on a
    clash, and for each row without functions, keyed (module, "")."""
    all_functions = [(f.module, f.name) for unit in layout.sources for f in unit.functions]
    clashes = {name for _, name in all_functions if sum(n == name for _, n in all_functions) > 1}
    names = {
        (module, name): "prop_" + (f"{_identifier(module)}_{name}" if name in clashes else name)
        for module, name in all_functions
    }
    for unit in layout.sources:
        if not unit.functions:
            name = f"prop_{_identifier(unit.row)}"
            names[(unit.module, "")] = name + "_module" if name in names.values() else name
    return names


def _local_names(functions: Sequence[Function]) -> dict[tuple[str, str], str]:
    """The name each function has in props.py: its own, aliased by module on a clash."""
    counts: dict[str, int] = {}
    for function in functions:
        counts[function.name] = counts.get(function.name, 0) + 1
    return {
        (f.module, f.name): f"{_identifier(f.module)}_{f.name}" if counts[f.name] > 1 else f.name
        for f in functions
    }


def render_matrix(package: str, layout: Layout, owners: Sequence[str]) -> str:
    names = _property_names(layout)
    lines = [
        f"# Written by 'oracle-gate init {package}'. docs/formats.md describes every key.",
        "version: 1",
        f"owners: {_flow(owners)}  # who reviews a change to this package's oracle",
        f"tests: {_flow(layout.tests)}  # test files whose assertion surface is locked",
        f"fixtures: {_flow(f + '**' for f in layout.fixtures)}  # recorded inputs and outputs",
        "rows:" + ("" if layout.sources else " []  # no source folder found: add rows by hand"),
    ]
    for unit in layout.sources:
        lines += [f"  - id: {unit.row}", f"    globs: {_flow([unit.glob])}", "    properties:"]
        keys = [(f.module, f.name) for f in unit.functions] or [(unit.module, "")]
        lines += [f'      - "{PROPS_FILE}:{names[key]}"' for key in keys]
        if layout.fixtures:
            lines.append(f"    fixtures: {_flow(layout.fixtures)}")
        budget = ", ".join(f"{k}: {v}" for k, v in DEFAULT_BUDGET.items())
        lines.append(f"    budget: {{{budget}}}")
    return "\n".join(lines) + "\n"


_PROPS_DOC = [
    "Written by 'oracle-gate init'. Every property is a stub that raises until it is",
    "written, so a row that runs it rejects: an unwritten property is never a pass.",
    "Write the invariant, give it a real .strategy, then run 'oracle-gate lock --write'.",
    "Delete the stubs you do not want, and their lines in invariants.yaml: each row",
    "needs one property at least.",
    "",
    "A property runs apart from the package's code: arguments and results cross as",
    "plain data only (None, bool, int, float, str, bytes, and lists, tuples, dicts",
    "and sets of them). A function that returns an iterator, a generator or an object",
    "cannot be called from here, not even as list(f(...)): call a plain-data function",
    "of the package instead, one that returns list(f(...)) or the object's fields (a",
    "row guards it like the rest of the package's code).",
]


def _stub(prop: str, what: str, message: str, iterates: str | None) -> list[str]:
    doc = [f'    """An invariant of {what}: a round trip, an ordering, a bound...']
    if iterates is not None:
        doc += [
            "",
            f"    {iterates} returns an iterator, which cannot cross to this process: call",
            f"    a function of the package that returns list({iterates}(...)) instead.",
            '    """',
        ]
    else:
        doc[0] += '"""'
    return [
        "",
        "",
        f"def {prop}(sample):",
        *doc,
        f'    raise NotImplementedError("{prop} is a stub: {_STUB_TODO}" + {message})',
        "",
        "",
        f"{prop}.strategy = st.none()  # the samples to try: replace with a real strategy",
    ]


def render_props(package: str, layout: Layout) -> str:
    """One stub per public function (per row, for a row without any); each FAILS (raises)
    until a human writes it."""
    names = _property_names(layout)
    functions = [f for unit in layout.sources for f in unit.functions]
    local = _local_names(functions)
    where = "the package at the repository's root" if package == "." else package
    lines = [f'"""Properties of {where}: each takes one sample and raises on violation.', ""]
    lines += [*_PROPS_DOC, '"""', "", "from hypothesis import strategies as st"]
    imports: dict[str, list[str]] = {}
    for f in functions:
        alias = local[(f.module, f.name)]
        imports.setdefault(f.module, []).append(
            f.name if alias == f.name else f"{f.name} as {alias}"
        )
    bare = sorted({unit.module for unit in layout.sources if not unit.functions})
    if imports or bare:
        lines.append("")
    lines += [f"import {module}" for module in bare]
    lines += [f"from {module} import {', '.join(sorted(set(n)))}" for module, n in imports.items()]
    for unit in layout.sources:
        if not unit.functions:
            prop = names[(unit.module, "")]
            lines += _stub(prop, f"the {unit.module} module", f"{unit.module}.__name__", None)
        for f in unit.functions:
            name = local[(f.module, f.name)]
            iterates = name if f.iterates else None
            what = f"{f.module}.{f.name}"
            lines += _stub(names[(f.module, f.name)], what, f"{name}.__qualname__", iterates)
    return "\n".join(lines) + "\n"


def package_files(package: str, layout: Layout, owners: Sequence[str]) -> dict[str, str]:
    """Package-relative path -> text of every file ``init PKG`` writes."""
    return {
        MATRIX_FILE: render_matrix(package, layout, owners),
        PROPS_FILE: render_props(package, layout),
        SEEDS_FILE: "",
        FREEZE_FILE: (
            "# Flaky tests frozen for a while; see 'oracle-gate freeze'.\n"
            "frozen: []\n"
            "budget: 2  # at most this many frozen entries at once\n"
        ),
        ASSUMPTIONS_FILE: "version: 1\nitems: []\n",
        CHANGELOG_FILE: (
            f"# Oracle changelog: {package}\n\n"
            "Each entry names the parent commit it applies to and the oracle paths it changes.\n"
        ),
    }


def render_settings(tooling: Sequence[str] = ()) -> str:
    """oracle-gate.toml with every key commented out at its default, but ``tooling`` when
    init found scripts no row guards."""
    docs = ",\n".join(f'#   "{glob}"' for glob in DEFAULT_DOCS)
    if tooling:
        listed = "".join(f'    "{glob}",\n' for glob in tooling)
        tooling_line = f"tooling = [\n{listed}]\n"
    else:
        tooling_line = "# tooling = []\n"

    return (
        "# oracle-gate settings. The gate reads them from the parent commit of each patch,\n"
        "# so a patch never changes the policy it is judged by. Each line below is the\n"
        "# default; uncomment one to change it. docs/formats.md describes every key.\n"
        "\n"
        f"# Which human notes count: {', '.join(repr(p) for p in NOTE_POLICIES)}.\n"
        '# notes = "review"\n'
        "\n"
        "# Package-relative globs of documentation files: never run, never judge.\n"
        f"# docs = [\n{docs},\n# ]\n"
        "\n"
        "# Repository-relative globs of paths outside every package that a patch may\n"
        '# change without a row, for example ["scripts/**", "tools/**"].\n'
        "# outside = []\n"
        "\n"
        "# Repository-relative globs of files, inside packages too, that neither ship nor\n"
        "# run in the tests (build helpers, docs/conf.py, benchmarks): a patch may change\n"
        "# them without a row; a Python one only while no other Python file names it.\n"
        f"{tooling_line}"
        "\n"
        "# The least time, in seconds, each child process of a row gets, whatever the\n"
        "# row's budget says: raise it on slow CI machines.\n"
        f"# timeout-floor = {Settings.timeout_floor}\n"
    )


def render_codeowners(packages: Mapping[str, Sequence[str]]) -> str:
    """A CODEOWNERS stub: one line per package that names owners in its matrix."""
    lines = [
        "# Owners review oracle changes (fixtures, locks, ledgers, matrices) in their packages.",
        "# GitHub/GitLab syntax: PATTERN OWNER..., the last matching line wins.",
    ]
    named = {path: owners for path, owners in sorted(packages.items()) if owners}
    lines += [f"/{path}/ {' '.join(owners)}" if path else f"* {' '.join(owners)}"
              for path, owners in named.items()]  # fmt: skip
    if not named:
        lines.append("# /libs/example/    @example-team")
    return "\n".join(lines) + "\n"
