"""Labels hidden from the static reader: every one still gives its edge.

Each case is a small workspace where Bazel (4.2.3) reports the edge ``a -> lib``
(``lib/BUILD`` declares ``//lib:l``), written so that the label is no literal of
``a/BUILD``: a subscript, a comprehension, a conditional, a tuple assignment, a
method, a mutation... The static reader (forced here, whatever the backend) must
keep that edge: it computes the label, or, where it cannot, takes the packages the
label's known start may name (every package when nothing is known) and says the graph
is approximate. Each honest neighbour, a label the reader can compute, stays exact: no
edge to ``other``, no approximation.
"""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.bazel import starlark
from oracle_gate.bazel.read import parse_build
from oracle_gate.graph import PackageGraph, load_graph
from oracle_gate.repo.trees import GitTree

_LIB = 'filegroup(name = "l", srcs = ["f.txt"], visibility = ["//visibility:public"])\n'
_OTHER = 'filegroup(name = "o", srcs = [], visibility = ["//visibility:public"])\n'
_LOAD = 'load("//tools:defs.bzl", "NAME", "PIECES", "SLASH", "N")\n'


def _group(srcs: str, prelude: str = "") -> str:
    return (
        _LOAD
        + prelude
        + f'filegroup(name = "a", srcs = {srcs}, visibility = ["//visibility:public"])\n'
    )


# (a/BUILD, the package it is in): Bazel 4.2.3 has the edge a -> lib for each.
EVASIONS: dict[str, tuple[str, str]] = {
    # The probe's cases.
    "subscript_then_add": (_group('[["/"][0] + "/lib:l"]'), "a"),
    "comprehension": (_group('["/" + x for x in ["/lib:l"]]'), "a"),
    "conditional": (_group('["/" + "/lib:l" if True else "x"]'), "a"),
    "conditional_unknown_test": (_group('["/" + "/lib:l" if N else "x"]'), "a"),
    "tuple_assignment": (_group("[A + B]", 'A, B = "/", "/lib:l"\n'), "a"),
    "call_result_sliced": (_group('[str("/x")[:1] + "/lib:l"]'), "a"),
    "package_name_character": (_group('[S + S + "lib:l"]', "S = package_name()[1]\n"), "a/b"),
    # String methods and formats on what the reader does not know.
    "percent_unknown_piece": (_group('["%s/lib:l" % SLASH]'), "a"),
    "percent_loaded_name": (_group('["%s:l" % NAME]'), "a"),
    "format_unknown_piece": (_group('["{}/lib:l".format(SLASH)]'), "a"),
    "method_of_unknown": (_group('[SLASH.lower() + "/lib:l"]'), "a"),
    "method_not_computed": (_group('["//LIB:L".capitalize()]'), "a"),
    "join_of_unknown_list": (_group('["".join(PIECES)]'), "a"),
    "join_with_unknown_item": (_group('["".join(["/", SLASH, "lib:l"])]'), "a"),
    "slice_unknown_bounds": (_group('["xx//lib:l"[N:]]'), "a"),
    "slice_of_unknown": (_group('[NAME[1:] + "lib:l"]'), "a"),
    "loaded_piece_added": (_group('[SLASH + "/lib:l"]'), "a"),
    "repeated_string": (_group('["/" * 2 + "lib:l"]'), "a"),
    "json_decode": (_group("""[json.decode('"\\\\/\\\\/lib:l"')]"""), "a"),
    "getattr_method": (_group('[getattr("/", "join")(["", "/lib:l"])]'), "a"),
    "lambda": (_group('[(lambda x: "/" + x)("/lib:l")]'), "a"),
    "str_of_list": (_group('[str(["/lib:l"])[2:-2]]'), "a"),
    # Values that flow: variables, lists and dicts changed after they were made.
    "augmented_string": (_group("[S]", 'S = "/"\nS += "/lib:l"\n'), "a"),
    "augmented_alias": (_group('[L[1] + "/lib:l"]', 'L = ["x"]\nM = L\nM += ["/"]\n'), "a"),
    "append": (_group('[L[-1] + "/lib:l"]', 'L = ["x"]\nL.append("/")\n'), "a"),
    "append_through_alias": (_group("L", 'L = []\nM = L\nM.append("/" + "/lib:l")\n'), "a"),
    "append_in_a_name": (
        _LOAD + 'L = []\nfilegroup(name = L.append(SLASH + "/lib:l") or "a", srcs = L)\n',
        "a",
    ),
    "item_assignment": (_group('[L[0] + "/lib:l"]', 'L = ["x"]\nM = L\nM[0] = "/"\n'), "a"),
    "dict_lookup": (_group('[D["k"] + "/lib:l"]', 'D = {"k": "/"}\n'), "a"),
    "dict_item_assignment": (_group('[D["k"] + "/lib:l"]', 'D = {"k": "x"}\nD["k"] = "/"\n'), "a"),
    "dict_update": (_group('[D["k"] + "/lib:l"]', 'D = {"k": "x"}\nD.update(k = "/")\n'), "a"),
    "dict_get_unknown_key": (_group('[D.get(N, "x") + "/lib:l"]', 'D = {"k": "/"}\n'), "a"),
    "pop_in_a_branch": (_group('[L[0] + "/lib:l"]', 'L = ["/", "x"]\nN and L.pop(0)\n'), "a"),
    "struct_field": (_group('[S.p + "/lib:l"]', 'S = struct(p = "/")\n'), "a"),
    "kwargs_dict": (
        _LOAD + 'filegroup(name = "a", **{"srcs": ["/" + "/lib:l"], "visibility": ["//x"]})\n',
        "a",
    ),
    "select_branch_added": (
        _group('[select({"//conditions:default": "/"}) + "/lib:l"]'),
        "a",
    ),
    "unpacked_loop_variable": (_group('[a + b for a, b in [("/", "/lib:l")]]'), "a"),
    # Statements Bazel refuses in a BUILD file: read as any label all the same.
    "for_loop_appends": (_group("L", 'L = []\nfor x in ["/lib:l"]:\n    L.append("/" + x)\n'), "a"),
    "if_statement_assigns": (_group('[S + "/lib:l"]', 'S = "x"\nif True:\n    S = "/"\n'), "a"),
    "nested_function": (_group('[f("/lib:l")]', 'def f(x):\n    return "/" + x\n'), "a"),
    # A macro may use any argument as a dependency, even tags.
    "tags_of_a_macro": (
        'load("//tools:defs.bzl", "grp")\ngrp(name = "a", tags = ["//lib:l"])\n',
        "a",
    ),
}

# Their honest neighbours: labels the reader computes, exactly.
HONEST: dict[str, str] = {
    "literal_list": _group('["//lib:l"]'),
    "literal_concatenation": _group('["//lib:" + "l"]'),
    "variable": _group("DEPS", 'DEPS = ["//lib:l"]\n'),
    "format_known": _group('["//%s:l" % X]', 'X = "lib"\n'),
    "comprehension_known": _group('["//lib:" + n for n in ["l"]]'),
    "conditional_known": _group('["//lib:l" if True else "//other:o"]'),
    # Starlark's equality knows types: True in [1] is False, where Python says True.
    "bool_not_in_ints": _group('["//other:o" if True in [1] else "//lib:l"]'),
    "int_not_in_bools": _group('["//other:o" if 0 in [False] else "//lib:l"]'),
    "select_literal": _group('["f.txt"] + select({"//conditions:default": ["//lib:l"]})'),
    "relative_names_from_unknowns": _group(
        '["//lib:l", "x_" + NAME, "gen".capitalize(), "lib_test"[N:], type(NAME)]'
    ),
    "computed_name": _group('["//lib:l"]').replace('name = "a"', 'name = "%s_a" % NAME'),
    "glob_files": _group('["//lib:l"] + [f for f in glob(["*.txt"])]'),
    "tags_of_a_rule": _group('["//lib:l"]').replace(
        "visibility", 'tags = ["//other:o"], visibility', 1
    ),
}


@pytest.fixture(autouse=True)
def static_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every BUILD file goes to the static reader, whatever the backend."""
    monkeypatch.setattr(starlark, "available", lambda: False)


def _graph(repo: GitRepo, build: str, package: str = "a") -> PackageGraph:
    files = {
        "WORKSPACE": "",
        "tools/BUILD": "",
        "tools/defs.bzl": (
            'NAME = "name"\nPIECES = []\nSLASH = "-"\nN = 0\n\n'
            "def grp(name, tags = []):\n    native.filegroup(name = name, srcs = tags)\n"
        ),
        "lib/BUILD": _LIB,
        "lib/f.txt": "",
        "other/BUILD": _OTHER,
        "a/x.txt": "",
        f"{package}/BUILD": build,
    }
    if package != "a":
        files["a/BUILD"] = ""
    for path, text in files.items():
        repo.write(path, text)
    return load_graph(GitTree(repo.path, repo.commit("workspace")))


@pytest.mark.parametrize("name", sorted(EVASIONS))
def test_a_label_hidden_from_the_static_reader_keeps_its_edge(repo: GitRepo, name: str) -> None:
    build, package = EVASIONS[name]
    graph = _graph(repo, build, package)
    assert package in graph.dependents(["lib"])
    if package in graph.dependents(["other"]):  # over-approximated: and said so
        assert any(f"{package}/BUILD" in why for why in graph.approximate)


@pytest.mark.parametrize("name", sorted(HONEST))
def test_a_label_the_static_reader_computes_stays_exact(repo: GitRepo, name: str) -> None:
    graph = _graph(repo, HONEST[name])
    assert graph.dependents(["lib"]) == {"a"}
    assert graph.dependents(["other"]) == set()
    assert graph.approximate == ()


def test_an_unknown_start_names_only_the_packages_it_can(repo: GitRepo) -> None:
    """``"//li" + x`` may name ``lib`` or ``libx``, never ``other``; ``"//lib:" + x``
    names ``lib`` alone, exactly."""
    repo.write("libx/BUILD", _OTHER)
    graph = _graph(repo, _group('["//li" + NAME]'))
    assert graph.dependents(["lib"]) == graph.dependents(["libx"]) == {"a"}
    assert graph.dependents(["other"]) == set()
    assert graph.approximate == (
        "a/BUILD:2 names //li..., a computed label: every package under //li",
    )
    graph = _graph(repo, _group('["//lib:" + NAME]'))
    assert graph.dependents(["lib"]) == {"a"}
    assert graph.dependents(["libx"]) == graph.dependents(["other"]) == set()
    assert graph.approximate == ()


@pytest.mark.parametrize(
    "call",
    [
        'filegroup(name = "%s_a" % NAME, srcs = [])',
        'package_group(name = "g", packages = ["%s//x/..." % NAME])',
        'filegroup(name = "a", tags = [NAME + "/" + "/lib:l"])',
        '[filegroup(name = "%s_test" % n, srcs = ["x.txt"]) for n in ["a", NAME]]',
        'package(features = [NAME + "//x"])',
    ],
)
def test_what_names_no_dependency_is_not_approximated(call: str) -> None:
    """A computed ``name``, ``visibility`` or ``tags``: Bazel follows none of them."""
    source = f'load("//t:d.bzl", "NAME")\n{call}\n'
    assert parse_build(source.encode(), "a/BUILD").deps == ()


def test_a_value_made_in_a_loop_is_any_label() -> None:
    """A list a comprehension changes may hold any string: each run builds on the last."""
    source = (
        'L = ["x"]\nX = [L.append(L[-1][1:]) for i in range(N)]\nfilegroup(name = "a", srcs = L)\n'
    )
    deps = parse_build(source.encode(), "a/BUILD").deps
    assert any(dep.package == "" and dep.prefix for dep in deps)


def test_a_string_that_may_name_another_repository_reaches_every_repository(
    repo: GitRepo,
) -> None:
    """In a nested repository, ``AT + "//lib:l"`` may be ``@//lib:l``: the main one's."""
    files = {
        "WORKSPACE": 'local_repository(name = "v", path = "tp/v")\n',
        "tp/v/WORKSPACE": "",
        "tp/v/tools/BUILD": "",
        "tp/v/tools/defs.bzl": 'AT = "@"\n',
        "tp/v/a/BUILD": 'load("//tools:defs.bzl", "AT")\n'
        'filegroup(name = "a", srcs = [AT + "//lib:l"])\n',
        "tp/v/b/BUILD": 'filegroup(name = "b", srcs = ["//lib:l"])\n',  # its own //lib
        "tp/v/lib/BUILD": _LIB,
        "lib/BUILD": _LIB,
    }
    for path, text in files.items():
        repo.write(path, text)
    graph = load_graph(GitTree(repo.path, repo.commit("workspace")))
    assert "tp/v/a" in graph.dependents(["lib"])
    assert "tp/v/b" not in graph.dependents(["lib"])


def test_a_main_label_in_a_bzl_may_be_relative_to_a_repository_it_names(repo: GitRepo) -> None:
    """``Label("@v//:x").relative("//z:y")`` is ``@v//z:y``: a ``.bzl`` file naming ``@v``
    reaches v's ``z`` as well as the main one's; its honest neighbour, a file naming no
    other repository, does not."""
    files = {
        "WORKSPACE": 'local_repository(name = "v", path = "tp/v")\n',
        "tp/v/WORKSPACE": "",
        "tp/v/BUILD": 'filegroup(name = "x")\n',
        "tp/v/z/BUILD": _LIB,
        "z/BUILD": _LIB,
        "tools/BUILD": "",
        "tools/rel.bzl": "def grp(name):\n"
        '    native.filegroup(name = name, srcs = [Label("@v//:x").relative("//z:y")])\n',
        "tools/own.bzl": 'def grp(name):\n    native.filegroup(name = name, srcs = ["//z:y"])\n',
        "a/BUILD": 'load("//tools:rel.bzl", "grp")\ngrp(name = "a")\n',
        "b/BUILD": 'load("//tools:own.bzl", "grp")\ngrp(name = "b")\n',
    }
    for path, text in files.items():
        repo.write(path, text)
    graph = load_graph(GitTree(repo.path, repo.commit("workspace")))
    assert graph.dependents(["tp/v/z"]) == {"a"}
    assert graph.dependents(["z"]) == {"a", "b"}
