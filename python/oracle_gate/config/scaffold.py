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
from dataclasses import dataclass, field

from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.matrix import MATRIX_FILE
from oracle_gate.config.settings import DEFAULT_DOCS, NOTE_POLICIES, Settings, limit_defaults
from oracle_gate.errors import ConfigError

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
_NOT_SOURCE = frozenset({"setup.py", "noxfile.py", "tasks.py"})
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
    """One row to be: a source folder (``name/**``) or a top-level module (``name.py``)."""

    row: str
    glob: str
    # (importable module, function name) of each public function, in file order.
    functions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Layout:
    sources: tuple[SourceUnit, ...]
    tests: tuple[str, ...]
    fixtures: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())


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


def _module_name(path: str) -> str:
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def public_functions(source: bytes, path: str) -> list[str]:
    """Top-level public functions of a module, limited to ``__all__`` when it is a literal.

    Raises:
        ConfigError: the module does not parse.
    """
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None)
        detail = getattr(error, "msg", str(error))
        raise ConfigError(f"does not parse as Python: {detail}", path, line) from None
    names = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    ]
    exported = _literal_all(tree)
    return [name for name in names if exported is None or name in exported]


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


def _source_units(files: Sequence[str], excluded: tuple[str, ...]) -> list[tuple[str, str]]:
    """(row id, glob) of each source folder and top-level module."""
    units: dict[str, str] = {}
    for path in files:
        if not path.endswith(".py") or path.startswith(excluded):
            continue
        top, _, rest = path.partition("/")
        if not rest:
            if path not in _ORACLE_MODULES and path not in _NOT_SOURCE:
                units[_ROW_ID_CHARS.sub("_", top[: -len(".py")])] = path
        elif top == "src" and "/" in rest:
            folder = rest.split("/")[0]
            units[_ROW_ID_CHARS.sub("_", folder)] = f"src/{folder}/**"
        elif top != "src":
            units[_ROW_ID_CHARS.sub("_", top)] = f"{top}/**"
    return sorted(units.items())


def read_layout(files: Sequence[str], read: dict[str, bytes], prefix: str = "") -> Layout:
    """The layout of a package from its package-relative ``files`` and their contents;
    ``prefix`` (the package directory and '/') makes error paths repo-relative.

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
    sources = []
    for row, glob in _source_units(files, excluded):
        functions = []
        under = glob[: -len("**")] if glob.endswith("**") else glob
        for path in files:
            is_test = _TEST_FILE.fullmatch(posixpath.basename(path))
            if path.endswith(".py") and path.startswith(under) and not is_test:
                module = _module_name(path)
                functions += [
                    (module, name) for name in public_functions(read[path], prefix + path)
                ]
        sources.append(SourceUnit(row=row, glob=glob, functions=tuple(functions)))
    return Layout(sources=tuple(sources), tests=tests, fixtures=fixtures)


def _flow(items: Iterable[str]) -> str:
    return json.dumps(list(items))


def _property_names(layout: Layout) -> dict[tuple[str, str], str]:
    """A unique ``prop_`` name for each function, qualified by its module on a clash."""
    all_functions = [f for unit in layout.sources for f in unit.functions]
    clashes = {name for _, name in all_functions if sum(n == name for _, n in all_functions) > 1}
    return {
        (module, name): "prop_"
        + (f"{module.replace('.', '_')}_{name}" if name in clashes else name)
        for module, name in all_functions
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
        lines += [f"  - id: {unit.row}", f"    globs: {_flow([unit.glob])}"]
        if unit.functions:
            lines.append("    properties:")
            lines += [f'      - "{PROPS_FILE}:{names[f]}"' for f in unit.functions]
        if layout.fixtures:
            lines.append(f"    fixtures: {_flow(layout.fixtures)}")
        budget = ", ".join(f"{k}: {v}" for k, v in DEFAULT_BUDGET.items())
        lines.append(f"    budget: {{{budget}}}")
    return "\n".join(lines) + "\n"


def render_props(package: str, layout: Layout) -> str:
    """One stub per public function; each FAILS (raises) until a human writes it."""
    names = _property_names(layout)
    functions = [f for unit in layout.sources for f in unit.functions]
    lines = [
        f'"""Properties of {package}: each takes one sample and raises on violation.',
        "",
        "Written by 'oracle-gate init'. Every property is a stub that raises until it is",
        "written, so a row that runs it rejects: an unwritten property is never a pass.",
        "Write the invariant, give it a real .strategy, then run 'oracle-gate lock --write'.",
        '"""',
        "",
        "from hypothesis import strategies as st",
    ]
    modules: dict[str, list[str]] = {}
    for module, name in functions:
        modules.setdefault(module, []).append(name)
    if modules:
        lines.append("")
    lines += [f"from {module} import {', '.join(sorted(set(n)))}" for module, n in modules.items()]
    for module, name in functions:
        prop = names[(module, name)]
        lines += [
            "",
            "",
            f"def {prop}(sample):",
            f'    """An invariant of {module}.{name}: a round trip, an ordering, a bound..."""',
            f'    raise NotImplementedError("{prop} is a stub: {_STUB_TODO}"'
            f" + {name}.__qualname__)",
            "",
            "",
            f"{prop}.strategy = st.none()  # the samples to try: replace with a real strategy",
        ]
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


def render_settings() -> str:
    """oracle-gate.toml with every key commented out at its default."""
    docs = ",\n".join(f'#   "{glob}"' for glob in DEFAULT_DOCS)
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
        "# The least time, in seconds, each child process of a row gets, whatever the\n"
        "# row's budget says: raise it on slow CI machines.\n"
        f"# timeout-floor = {Settings.timeout_floor}\n"
        "\n"
        "# What each child process that runs the package's code may use: address space,\n"
        "# CPU seconds, processes, open files, the largest file it writes, and the size\n"
        "# of each of the sandbox's /tmp, home directory and /dev/shm.\n"
        + "".join(f"# {key} = {json.dumps(value)}\n" for key, value in limit_defaults().items())
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
