"""What ``oracle-gate init`` writes: a package's matrix, property stubs and empty ledgers,
and the repository's root settings and CODEOWNERS stub.

Every text is derived from the package's files (package-relative paths) and is
parsed again by the gate's own readers before the CLI writes it, so init can
never write a file the gate refuses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.matrix import MATRIX_FILE
from oracle_gate.config.package_layout import PROPS_FILE, Layout
from oracle_gate.config.public_api import Function
from oracle_gate.config.settings import DEFAULT_DOCS, NOTE_POLICIES, Settings, limit_defaults

__all__ = [
    "CHANGELOG_FILE",
    "PROPS_FILE",
    "package_files",
    "render_codeowners",
    "render_settings",
]

CHANGELOG_FILE = "ORACLE_CHANGELOG.md"
DEFAULT_BUDGET = {"examples": 100, "seconds": 20}
_STUB_TODO = "write an invariant of "


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
        "\n"
        "# The trusted replay's time budget, in seconds, per package run; unset, it is five\n"
        "# times the parent's baseline plus a minute (a package's replay: {seconds} wins).\n"
        "# replay-seconds = 600\n"
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
