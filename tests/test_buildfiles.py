"""Static BUILD reading: labels, glob(), tolerated macros, gate declarations, parse errors."""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from backends import _native, needs_native
from oracle_gate.bazel.glob import evaluate_glob, package_files
from oracle_gate.bazel.labels import Label, parse_label
from oracle_gate.bazel.read import (
    Glob,
    cache_info,
    clear_cache,
    gates_from_native,
    parse_build,
    parse_build_cached,
)
from oracle_gate.config.matrix import gate_matrix
from oracle_gate.errors import ConfigError
from oracle_gate.model import Budget, Matrix

# --- labels ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "package", "expected"),
    [
        (":lib", "libs/a", Label("", "libs/a", "lib")),
        ("lib", "libs/a", Label("", "libs/a", "lib")),
        ("src/x.py", "libs/a", Label("", "libs/a", "src/x.py")),
        ("//libs/b:lib", "libs/a", Label("", "libs/b", "lib")),
        ("//libs/b", "libs/a", Label("", "libs/b", "b")),
        ("//:root", "libs/a", Label("", "", "root")),
        ("@pypi//requests:pkg", "libs/a", Label("pypi", "requests", "pkg")),
        ("@pypi//requests", "libs/a", Label("pypi", "requests", "requests")),
        ("@zlib", "libs/a", Label("zlib", "", "zlib")),
        ("@//libs/b:lib", "libs/a", Label("", "libs/b", "lib")),
        ("@@//libs/b:lib", "libs/a", Label("", "libs/b", "lib")),
    ],
)
def test_labels_resolve_like_bazel(text: str, package: str, expected: Label) -> None:
    assert parse_label(text, package) == expected


def test_external_labels_are_marked_external() -> None:
    assert parse_label("@repo//x:y", "").external
    assert not parse_label("@//x:y", "").external
    assert str(parse_label("//libs/b", "")) == "//libs/b:b"


@pytest.mark.parametrize(
    "text", ["//", "//a:b:c", "//a/../b:c", "//a//b:c", "//a/:b", "@bad name//x", "@r:x", ":"]
)
def test_malformed_labels_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_label(text, "pkg")


# --- parsing ----------------------------------------------------------------------------


def _deps(source: str) -> set[str]:
    return {dep.package for dep in parse_build(source.encode(), "x/BUILD").deps}


def test_rule_deps_name_other_packages() -> None:
    source = 'py_library(name = "lib", srcs = ["a.py"], deps = [":local", "//libs/b:lib"])\n'
    assert _deps(source) == {"libs/b"}


def test_external_labels_and_visibility_are_not_package_deps() -> None:
    source = (
        'py_library(name = "lib", deps = ["@pypi//requests", "//libs/b"],\n'
        '           visibility = ["//visibility:public", "//libs/c:__pkg__"])\n'
        'package(default_visibility = ["//libs/d:__subpackages__"])\n'
    )
    assert _deps(source) == {"libs/b"}


def test_variables_concatenation_and_select_branches_are_followed() -> None:
    source = (
        'COMMON = ["//libs/base:lib"]\n'
        "EXTRA = COMMON\n"
        'EXTRA += ["//libs/more"]\n'
        'py_library(name = "lib", deps = EXTRA + select({\n'
        '    "//conds:linux": ["//libs/linux:lib"],\n'
        '    "//conditions:default": [],\n'
        "}))\n"
    )
    assert _deps(source) == {"libs/base", "libs/more", "conds", "libs/linux"}


def test_unknown_macros_and_comprehensions_are_tolerated_and_scanned() -> None:
    source = (
        'load("//tools:macros.bzl", "my_macro")\n'
        'my_macro(name = "m", thing = helper("//libs/hidden:y"), **KWARGS)\n'
        '[py_test(name = n, deps = ["//libs/t:lib"]) for n in ["a", "b"]]\n'
    )
    build = parse_build(source.encode(), "x/BUILD")
    assert {dep.package for dep in build.deps} == {"libs/hidden", "libs/t"}
    assert build.loads == (("//tools:macros.bzl", (("my_macro", "my_macro"),)),)


@pytest.mark.parametrize(
    ("expression", "every_package"),
    [
        # A known piece with "/" or ":" the reader cannot finish: any label at all.
        ('"%s/lib:l" % SLASH', True),
        ('"{}/lib:l".format(SLASH)', True),
        ('"//LIB:L".capitalize()', True),
        ('"xx//lib:l"[N:]', True),
        # Nothing known of its start: NAME may be "//lib", which makes //lib_test.
        ('"%s_test" % NAME', True),
        ('"{}_test".format(NAME)', True),
        # Its honest neighbours: computed, or no start that can make a label.
        ('"%s_test" % LOCAL', False),
        ('"{}_test".format(LOCAL)', False),
        ('"gen".capitalize()', False),
        ('"lib_test"[N:]', False),
        ('"lib_" + NAME', False),
    ],
)
def test_a_string_the_reader_cannot_finish_names_every_package_only_if_it_can(
    expression: str, every_package: bool
) -> None:
    source = (
        'load("//tools:names.bzl", "N", "NAME", "SLASH")\n'
        'LOCAL = "//lib"\n'
        f'filegroup(name = "g", srcs = [{expression}])\n'
    )
    deps = parse_build(source.encode(), "x/BUILD").deps
    assert any(dep.package == "" and dep.prefix for dep in deps) is every_package


def test_dep_records_the_line_that_names_it() -> None:
    source = 'py_library(\n    name = "lib",\n    deps = [\n        "//libs/b",\n    ],\n)\n'
    (dep,) = parse_build(source.encode(), "x/BUILD").deps
    assert (dep.label, dep.line) == ("//libs/b", 3)


def test_build_file_python_cannot_parse_is_a_config_error_with_line() -> None:
    source = b'py_library(\n    name = "lib",\n    deps = [":a" ":b",,],\n)\n'
    with pytest.raises(ConfigError) as caught:
        parse_build(source, "libs/a/BUILD.bazel")
    assert str(caught.value).startswith("libs/a/BUILD.bazel:3: BUILD file does not parse")


def test_a_build_file_that_is_not_utf8_is_read_as_bazel_reads_its_bytes() -> None:
    """Bazel loads a Latin-1 comment; a string of such bytes names the directory git
    lists with the same bytes (decoded with surrogateescape, as the tree names it)."""
    source = b'# Jos\xe9 wrote this\nfilegroup(name = "a", srcs = ["//libs/b", "//caf\xe9:x"])\n'
    build = parse_build(source, "libs/a/BUILD")
    assert {dep.package for dep in build.deps} == {"libs/b", "caf\udce9"}
    with pytest.raises(ConfigError, match="libs/a/BUILD:1: BUILD file does not parse"):
        parse_build(b"\xab\xbb", "libs/a/BUILD")


def test_a_name_only_python_reserves_is_a_name() -> None:
    """Bazel 4.2.3 loads ``await = ...``; a string holding the word stays as written."""
    source = (
        b'await = "//lib:l"\nasync = ["//await:x"]\nfilegroup(name = "a", srcs = [await] + async)\n'
    )
    build = parse_build(source, "a/BUILD")
    assert {dep.package for dep in build.deps} == {"lib", "await"}
    with pytest.raises(ConfigError, match="a/BUILD:1: BUILD file does not parse"):
        parse_build(b"await = = 1\n", "a/BUILD")


def test_a_long_chain_of_additions_is_read_without_recursing_per_term() -> None:
    """Generated BUILD files add thousands of lists; Bazel loads them."""
    terms = " + ".join(['["//lib:l"]'] + [f'["x{i}"]' for i in range(1500)])
    build = parse_build(f"filegroup(name = 'a', srcs = {terms})\n".encode(), "a/BUILD")
    assert {dep.package for dep in build.deps} == {"lib"}
    longer = " + ".join(["[]"] * 8000)  # past the 2000 levels one expression may nest
    with pytest.raises(ConfigError, match="a/BUILD:1: BUILD file is nested too deeply: more"):
        parse_build(f"x = {longer}\n".encode(), "a/BUILD")


def test_gate_call_is_found_through_a_load_alias() -> None:
    source = (
        'load("@oracle_gate//rules:defs.bzl", inv = "invariant", gate = "oracle_gate")\n'
        'gate(name = "g", rows = [inv(id = "r", globs = ["*.py"])])\n'
    )
    build = parse_build(source.encode(), "x/BUILD")
    assert [call.function for call in build.gates] == ["gate"]
    assert "inv" in build.invariant_names


def test_parse_cache_reuses_a_blob_and_reads_only_misses() -> None:
    clear_cache()
    text = b'py_library(name = "lib", deps = ["//libs/b"])\n'
    reads: list[list[str]] = []

    def read(paths: list[str]) -> dict[str, bytes]:
        reads.append(paths)
        return dict.fromkeys(paths, text)

    from oracle_gate.bazel.read import blob_id

    first = parse_build_cached([("a/BUILD", None)], read)
    second = parse_build_cached([("b/BUILD", blob_id(text)), ("c/BUILD", "0" * 40)], read)
    assert first["a/BUILD"] is second["b/BUILD"]
    assert reads == [["a/BUILD"], ["c/BUILD"]]
    assert cache_info()["hits"] == 1


# --- glob() -----------------------------------------------------------------------------

FILES = ("a.py", "b.py", "sub/c.py", "sub/deep/d.py", "tests/test_a.py", "tests/helper.py")


def _glob(include: tuple[str, ...], exclude: tuple[str, ...] = (), dirs: bool = True) -> Glob:
    return Glob(include=include, exclude=exclude, exclude_directories=dirs, line=4)


def test_glob_star_does_not_cross_directories() -> None:
    assert evaluate_glob(_glob(("*.py",)), FILES, "p/BUILD") == ("a.py", "b.py")


def test_glob_double_star_matches_zero_or_more_directories() -> None:
    assert evaluate_glob(_glob(("**/*.py",), ("tests/**",)), FILES, "p/BUILD") == (
        "a.py",
        "b.py",
        "sub/c.py",
        "sub/deep/d.py",
    )
    assert evaluate_glob(_glob(("tests/**/test_*.py",)), FILES, "p/BUILD") == ("tests/test_a.py",)


def test_glob_directories_match_only_when_asked() -> None:
    assert evaluate_glob(_glob(("sub*",)), FILES, "p/BUILD") == ()
    assert evaluate_glob(_glob(("sub*",), dirs=False), FILES, "p/BUILD") == ("sub",)


def test_invalid_glob_pattern_is_a_config_error_with_line() -> None:
    with pytest.raises(ConfigError, match=r"^p/BUILD:4: glob pattern '\.\./x'"):
        evaluate_glob(_glob(("../x",)), FILES, "p/BUILD")


def test_package_files_stop_at_subpackages() -> None:
    files = ("p/BUILD", "p/a.py", "p/sub/BUILD", "p/sub/b.py", "p/sub/x/c.py", "p/z/d.py", "q/e.py")
    assert package_files(files, "p", {"p", "p/sub"}) == ["BUILD", "a.py", "z/d.py"]
    assert package_files(files, "", {"p", "p/sub"}) == ["q/e.py"]


# --- the gate declaration ----------------------------------------------------------------

GATE = """\
load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")

oracle_gate(
    name = "oracle_gate",
    rows = [
        invariant(
            id = "merge_ranges_contract",
            globs = ["intervals/**/*.py"],
            properties = ["props.py:prop_idempotent"],
            budget = {"examples": 80, "seconds": 20},
        ),
    ],
    tests = glob(["tests/test_*.py"]),
    fixtures = glob(["testdata/**"], exclude = ["testdata/README.md"]),
    lock = "oracle_gate.lock",
    owners = ["@intervals-team"],
    deps = ["//libs/codec:oracle_gate", ":sibling"],
)
"""
PACKAGE_FILES = ["BUILD.bazel", "tests/test_a.py", "testdata/README.md", "testdata/r/1.json"]


def _gate(source: str, files: list[str] | None = None) -> tuple[Matrix, str]:
    build = parse_build(source.encode(), "libs/intervals/BUILD.bazel")
    return gate_matrix(
        build, "libs/intervals/BUILD.bazel", "libs/intervals", "", lambda: files or PACKAGE_FILES
    )


def test_gate_call_becomes_a_matrix_with_evaluated_globs() -> None:
    matrix, name = _gate(GATE)
    assert name == "oracle_gate"
    assert matrix.tests == ("tests/test_a.py",)
    assert matrix.fixtures == ("testdata/r/1.json",)
    assert matrix.owners == ("@intervals-team",)
    assert matrix.deps == (
        "//libs/codec:oracle_gate",
        "//libs/intervals:sibling",
    )
    (row,) = matrix.rows
    assert row.id == "merge_ranges_contract"
    assert row.globs == ("intervals/**/*.py",)
    assert row.budget == Budget(examples=80, seconds=20.0)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('id = "merge_ranges_contract"', 'id = "bad id"'), ":7: row id 'bad id' may only hold"),
        (
            ('globs = ["intervals/**/*.py"]', "globs = []"),
            "row 'merge_ranges_contract' has no globs",
        ),
        (
            ('"props.py:prop_idempotent"', '"props"'),
            ":9: row 'merge_ranges_contract': properties entry 'props' is not of",
        ),
        (
            ('"examples": 80', '"examples": 0'),
            ":10: row 'merge_ranges_contract': budget examples must",
        ),
        (
            ('lock = "oracle_gate.lock"', 'lock = "other.lock"'),
            ":15: lock must be the file 'oracle_gate.lock' at the root of package "
            "'libs/intervals', found 'other.lock'",
        ),
        (("rows = [", "rows = ROWS + ["), ':5: rows is "ROWS + [invariant('),
        (('"//libs/codec:oracle_gate"', '"@other//libs:g"'), ":17: deps entry '@other//libs:g'"),
        (('name = "oracle_gate",\n', ""), ":3: oracle_gate() needs a string name"),
        (("invariant(\n", "struct(\n"), ":6: rows[0] is not an invariant(...)"),
    ],
)
def test_gate_declaration_errors_name_the_build_file_and_line(
    edit: tuple[str, str], message: str
) -> None:
    source = GATE.replace(*edit)
    assert source != GATE
    with pytest.raises(ConfigError) as caught:
        _gate(source)
    text = str(caught.value)
    assert text.startswith("libs/intervals/BUILD.bazel:"), text
    assert message in text, text


def test_two_gates_in_one_package_is_a_config_error() -> None:
    source = GATE + 'oracle_gate(name = "again", rows = [])\n'
    with pytest.raises(ConfigError, match=r"BUILD.bazel:19: declares a second oracle_gate"):
        _gate(source)


# --- a gate read without the rule calls the evaluator already read ---------------------


def _native_core() -> ModuleType:
    """The native core itself, whichever backend the gate uses (these tests need it)."""
    assert _native is not None
    return _native


_PLAIN_GATE = """oracle_gate(
    name = "p2",
    rows = [invariant(id = "r", globs = ["src/*.py"], budget = {"examples": 20, "seconds": 0})],
    tests = glob(["tests/test_*.py"], exclude = ["tests/test_x.py"], exclude_directories = 0),
    fixtures = native.glob(["testdata/**"]) + ["a.json"],
    owners = ["@team"] + ["@other"],
    lock = "oracle_gate.lock",
    deps = [],
    flag = True,
    nothing = None,
    name2 = "a" + "b",
)
"""

_STATEMENTS = st.sampled_from(
    [
        'py_library(\n    name = "lib",\n    deps = ["//x:y"],\n)\n',
        'native.filegroup(name = "f", srcs = glob(["*.txt"]))\n',
        'DEPS = ["//libs/a"]\n',
        'ROWS = [invariant(id = "shared", globs = ["*.py"])]\n',
        'DEPS += ["//libs/b"]\n',
        'g(\n    name = "aliased",\n    rows = ROWS,\n)\n',
        'oracle_gate(name = "plain", rows = [invariant(id = "r", globs = ["src/*.py"])],'
        " deps = DEPS)\n",
        'cc_library(name = "a"); NAME = "later"\n',
        'oracle_gate(name = NAME, owners = ["@team"])\n',
        '"""A docstring."""\n',
        "# a comment\n",
        _PLAIN_GATE,
        'oracle_gate(name = "escaped", owners = ["@a\\nb"])\n',
        'oracle_gate(name = "parenthesised", owners = ("@a",))\n',
        'oracle_gate(name = "selected", tests = select({"//c:d": ["t.py"]}))\n',
        "\n",
        "x = [1,\n  2]; filegroup(name = 'shared_line')\n",
        'exports_files(["a.txt"])  # oracle_gate(name = "in a comment")\n',
    ]
)


@needs_native
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_STATEMENTS, max_size=12))
def test_a_gate_read_without_the_rule_calls_is_the_gate_read_whole(
    statements: list[str],
) -> None:
    """The lines the evaluator says hold only rule calls never change what the gate reads."""
    text = (
        'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate", g = "oracle_gate")\n'
        + "".join(statements)
    ).encode()
    [(_, error, rule_lines, native, _, _)] = _native_core().evaluate_build_files(
        [("a/BUILD", "a", "", text)], [], [("", [])]
    )[3]
    assume(not error)
    whole = parse_build(text, "a/BUILD")
    if native is not None:  # the native core read every gate call itself
        read_natively = gates_from_native(native.read())
        assert read_natively.gates == whole.gates
        assert read_natively.invariant_names == whole.invariant_names
    clear_cache()
    read = parse_build_cached(
        [("a/BUILD", "blob")], lambda paths: {"a/BUILD": text}, rule_lines={"a/BUILD": rule_lines}
    )["a/BUILD"]
    assert read.gates == whole.gates
    assert read.invariant_names == whole.invariant_names
    assert read.loads == whole.loads
    clear_cache()


@needs_native
def test_a_plain_gate_call_is_read_by_the_native_core_as_the_static_reader_reads_it() -> None:
    text = (
        'load("@oracle_gate//rules:defs.bzl", "oracle_gate", inv = "invariant")\n'
        + 'py_library(name = "lib")\n'
        + _PLAIN_GATE.replace("invariant(", "inv(")
    ).encode()
    [(_, error, _, native, _, _)] = _native_core().evaluate_build_files(
        [("a/BUILD", "a", "", text)], [], [("", [])]
    )[3]
    assert error == ""
    assert native is not None
    whole = parse_build(text, "a/BUILD")
    assert whole.gates[0].line == 3
    assert gates_from_native(native.read()).gates == whole.gates
    assert gates_from_native(native.read()).invariant_names == frozenset({"invariant", "inv"})


@needs_native
@pytest.mark.parametrize(
    "value",
    [
        "OWNERS",  # a name: the static reader's environment decides
        '["@a\\tb"]',  # an escape
        '"""@a"""',  # a triple-quoted string
        '("@a",)',  # a tuple, dated from its parenthesis
        '["@a"] if True else []',
        '[x for x in ["@a"]]',
        'select({"//c:d": ["@a"]})',
        "-1",
        "1.5",
        "0x10",
        'f"@{1}"',
    ],
)
def test_a_gate_call_not_written_plainly_is_left_to_the_static_reader(value: str) -> None:
    text = f'OWNERS = ["@a"]\noracle_gate(name = "g", owners = {value})\n'.encode()
    [(_, error, _, native, _, _)] = _native_core().evaluate_build_files(
        [("a/BUILD", "a", "", text)], [], [("", [])]
    )[3]
    assert native is None
    # A float is not even run (Bazel prints floats otherwise), nor an f-string (Bazel 4.2.3
    # has none, and the checks on what a file builds do not see inside one): the static
    # reader reads it all.
    unrun = {
        "1.5": "a/BUILD: a float, which Bazel prints otherwise",
        'f"@{1}"': "a/BUILD: an f-string, which Bazel 4.2.3 does not have",
    }
    assert error == unrun.get(value, "")
