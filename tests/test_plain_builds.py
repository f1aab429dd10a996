"""A plain BUILD file read from its syntax gives what running it gives.

The native core skips the interpreter for a BUILD file that only loads rules
from repositories not in the tree and calls rules with literal arguments
(``rust/src/starlark/plain.rs``); every other file runs in full. These tests
generate BUILD files, plain and not, and hold the two readings to the same
outcome: the same edges with the same declarations and lines, the same loads,
the same error, the same gates and matrices. A construct the plain reading got
wrong would be a dependency missed (or invented) on the fast path only.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import _native, needs_native

pytestmark = needs_native

PATH = "pkg/sub/BUILD.bazel"

_LOADS = [
    'load("@rules_x//x:defs.bzl", "x_library", "x_test")\n',
    'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n',
    'load("//missing:defs.bzl", "m_rule")\n',
    'load("@rules_y//:y.bzl", lib = "y_library")\n',
    'load("@rules_z//:z.bzl", "glob")\n',
    'load("//tools:defs.bzl", "macro")\n',
    'load("@rules_x//x:defs.bzl", "x_library")\n',
]
_MACRO = b'def macro(name, deps = []):\n    native.filegroup(name = name, srcs = deps + ["//h"])\n'
_BZL = [("tools/defs.bzl", _MACRO)]
_CALLEES = [
    "x_library",
    "x_test",
    "invariant",
    "oracle_gate",
    "m_rule",
    "lib",
    "macro",
    "cc_library",
    "filegroup",
    "package",
    "package_group",
    "licenses",
    "exports_files",
    "glob",
    "select",
    "len",
    "Label",
]
_KEYS = ["name", "srcs", "deps", "visibility", "tags", "data", "features", "licenses"]
_KEYS += ["default_visibility", "default_applicable_licenses", "testonly", "owners", "rows", "x"]
_STRINGS = ["//a:b", "//libs/%s", "@rules_x//x", "@mono//y", ":local", "plain", "@team"]
_STRINGS += ["//conditions:default", "//pkg/sub:own", "//", "//lib:", "@//c", "@@//d:e"]

_LITERALS = st.one_of(
    st.sampled_from(_STRINGS).map(repr),
    st.sampled_from(["1", "0", "True", "False", "None", "2.5", "NAME", "-1"]),
)


def _call(callee: str, args: list[str]) -> str:
    return f"{callee}({', '.join(args)})"


def _values(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(children, max_size=3).map(lambda xs: f"[{', '.join(xs)}]"),
        st.lists(children, min_size=1, max_size=2).map(lambda xs: f"({', '.join(xs)},)"),
        st.lists(st.tuples(_LITERALS, children), max_size=3).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"
        ),
        st.tuples(children, children).map(lambda ab: f"{ab[0]} + {ab[1]}"),
        st.lists(children, max_size=2).map(lambda xs: f"glob([{', '.join(xs)}])"),
        children.map(lambda x: f"select({{'//config:x': {x}, '//conditions:default': []}})"),
        st.tuples(st.sampled_from(_CALLEES), st.lists(children, max_size=2)).map(
            lambda c: _call(c[0], c[1])
        ),
        children.map(lambda x: f"'//libs/%s' % {x}"),
        children.map(lambda x: f"[n for n in {x}]"),
    )


_VALUES = st.recursive(_LITERALS, _values, max_leaves=8)


@st.composite
def _statement(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["call"] * 8 + ["assign", "doc"]))
    if kind == "assign":
        return f"X = {draw(_VALUES)}\n"
    if kind == "doc":
        return '"""A docstring."""\n'
    callee = draw(st.sampled_from(_CALLEES))
    positional = draw(st.lists(_VALUES, max_size=2))
    keys = draw(st.lists(st.sampled_from(_KEYS), max_size=4, unique=True))
    named = [f"{key} = {draw(_VALUES)}" for key in keys]
    if draw(st.booleans()):  # one argument per line: the record's line is the call's
        inner = "".join(f"    {arg},\n" for arg in [*positional, *named])
        return f"{callee}(\n{inner})\n"
    return _call(callee, [*positional, *named]) + "\n"


_FILES = st.tuples(
    st.lists(st.sampled_from(_LOADS), max_size=3), st.lists(_statement(), min_size=1, max_size=4)
).map(lambda parts: "".join(parts[0]) + "\n" + "".join(parts[1]))


def _outcome(text: str, interpret_all: bool) -> list[Any]:
    assert _native is not None
    dependents, computed, approximate, [found] = _native.evaluate_build_files(
        [(PATH, "pkg/sub", "", text.encode())],
        _BZL,
        [("", ["mono"])],
        [PATH, "pkg/sub/a.py", "tools/defs.bzl"],
        interpret_all=interpret_all,
    )
    loads, error, rule_lines, gates, owned, matrix = found
    read = None if gates is None else gates.read()
    # In the order the records were made: the same edges, found in the same order.
    edges = [(target, list(found.items())) for target, found in dependents.items()]
    return [edges, computed, sorted(approximate), loads, error, rule_lines, read, owned, matrix]


@pytest.mark.parametrize(
    "text",
    [
        'load("@rules_x//x:defs.bzl", "x_library")\n'
        'x_library(name = "a", deps = ["//a:b", ":c"] + select({"//cfg:x": ["//d"]}))\n',
        'cc_library(\n    name = "a",\n    srcs = glob(["*.cc"]) + ["//e"],\n'
        '    visibility = ["//v"],\n)\n',
        '"""Doc."""\nfilegroup(name = "f", data = ["//g"] + select({"//cfg:y": ["//h"]}))\n',
        'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n'
        'oracle_gate(\n    name = "gate",\n    rows = [invariant(id = "r", globs = ["*.py"])],\n'
        '    owners = ["@team"],\n    deps = ["//a:gate"],\n)\n',
        'package(default_visibility = ["//x"])\nexports_files(["a.py"], visibility = ["//y"])\n',
    ],
)
def test_plain_files_read_as_they_run(text: str) -> None:
    assert _outcome(text, interpret_all=False) == _outcome(text, interpret_all=True)
    assert not _outcome(text, interpret_all=False)[4], "the file evaluates without error"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_FILES)
def test_generated_files_read_as_they_run(text: str) -> None:
    assert _outcome(text, interpret_all=False) == _outcome(text, interpret_all=True)
