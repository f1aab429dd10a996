"""The package graph: BUILD files, invariants.yaml deps, bazel query, and deriving a head graph."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from bazel_edges import bazel_package_edges
from gitrepo import GitRepo
from oracle_gate.bazel import query as query_module
from oracle_gate.bazel.query import bazel_query_edges
from oracle_gate.errors import ConfigError, GateError
from oracle_gate.graph import (
    PackageGraph,
    derive_graph,
    load_graph,
    load_packages,
)
from oracle_gate.model import Change, ChangeKind, Matrix, Package
from oracle_gate.repo.trees import GitTree

LOAD = 'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n'
GATE = 'oracle_gate(name = "oracle_gate", rows = [invariant(id = "r", globs = ["*.py"])])\n'


def _lib(*deps: str) -> str:
    return f'py_library(name = "lib", srcs = glob(["*.py"]), deps = {list(deps)!r})\n'.replace(
        "'", '"'
    )


def _graph(repo: GitRepo, files: dict[str, str]) -> PackageGraph:
    for path, text in files.items():
        repo.write(path, text)
    return load_graph(GitTree(repo.path, repo.commit("tree")))


def test_build_files_make_nodes_and_label_edges(repo: GitRepo) -> None:
    graph = _graph(
        repo,
        {
            "apps/web/BUILD.bazel": LOAD + _lib("//libs/mid:lib") + GATE,
            "apps/web/main.py": "",
            "libs/mid/BUILD": _lib("//libs/core", ":local"),
            "libs/core/BUILD.bazel": LOAD + _lib() + GATE,
            "libs/core/sub/x.py": "",
        },
    )
    assert sorted(graph.packages) == ["apps/web", "libs/core"]
    assert graph.nodes() == {"apps/web", "libs/mid", "libs/core"}
    assert graph.dependents(["libs/core"]) == {"libs/mid", "apps/web"}
    assert graph.node_of("libs/core/sub/x.py") == "libs/core"
    assert graph.package_of("libs/mid/m.py") is None  # a Bazel package without a gate
    assert graph.why("libs/mid", "libs/core") == "libs/mid/BUILD:1 names //libs/core"
    assert graph.packages["apps/web"].target == "//apps/web:oracle_gate"
    assert graph.packages["apps/web"].matrix_file == "BUILD.bazel"


def test_build_bazel_wins_over_build_in_one_directory(repo: GitRepo) -> None:
    graph = _graph(
        repo,
        {
            "a/BUILD": _lib("//b"),
            "a/BUILD.bazel": _lib("//c"),
            "b/BUILD": _lib(),
            "c/BUILD": _lib(),
        },
    )
    assert graph.dependents(["c"]) == {"a"}
    assert graph.dependents(["b"]) == set()


def test_label_naming_its_own_package_is_no_edge(repo: GitRepo) -> None:
    graph = _graph(repo, {"a/BUILD": _lib("//a:other", ":x"), "b/BUILD": _lib("//a")})
    assert graph.dependents(["a"]) == {"b"}
    assert graph.dependency_chains(["a"]) == {"b": ("b", "a")}


def test_labels_in_a_nested_workspace_resolve_against_its_root(repo: GitRepo) -> None:
    graph = _graph(
        repo,
        {
            # A nested workspace is a repository of its own when the root says so.
            "WORKSPACE": 'local_repository(name = "ws", path = "e2e/ws")\n',
            "b/BUILD": _lib(),
            "e2e/ws/MODULE.bazel": "",
            "e2e/ws/a/BUILD": LOAD + _lib("//b") + GATE,
            "e2e/ws/b/BUILD": _lib(),
        },
    )
    assert graph.dependents(["e2e/ws/b"]) == {"e2e/ws/a"}
    assert graph.dependents(["b"]) == set()
    # `bazel test` at the root cannot name a nested workspace's target.
    assert graph.packages["e2e/ws/a"].target is None


def test_a_nested_workspace_the_root_does_not_declare_is_part_of_the_main_repository(
    repo: GitRepo,
) -> None:
    """Bazel reads a nested WORKSPACE file only as the root of a declared repository."""
    graph = _graph(
        repo,
        {
            "WORKSPACE": 'local_repository(name = "other", path = "third_party/other")\n',
            "b/BUILD": _lib(),
            "e2e/ws/WORKSPACE": "",
            "e2e/ws/a/BUILD": LOAD + _lib("//b") + GATE,
            "e2e/ws/b/BUILD": _lib(),
            "third_party/other/WORKSPACE": "",
            "third_party/other/x/BUILD": _lib("//b"),
        },
    )
    assert graph.dependents(["b"]) == {"e2e/ws/a"}
    assert graph.dependents(["e2e/ws/b"]) == set()
    assert graph.packages["e2e/ws/a"].target == "//e2e/ws/a:oracle_gate"
    assert graph.dependents(["third_party/other/b"]) == {"third_party/other/x"}


def test_the_main_repositorys_own_name_resolves_to_itself(repo: GitRepo) -> None:
    """``@<workspace name>//pkg`` is the main repository, under WORKSPACE and MODULE.bazel."""
    for marker, declaration in (
        ("WORKSPACE", 'workspace(name = "mono")\n'),
        ("MODULE.bazel", 'module(name = "mono", version = "1")\n'),
    ):
        graph = _graph(
            repo,
            {
                marker: declaration,
                "a/BUILD": _lib("@mono//b:lib", "@other//c:lib"),
                "b/BUILD": _lib(),
                "c/BUILD": _lib(),
            },
        )
        assert graph.dependents(["b"]) == {"a"}, marker
        assert graph.dependents(["c"]) == set(), marker  # @other is another repository
        repo.remove(marker)


def test_bazelignore_hides_packages_as_bazel_does(repo: GitRepo) -> None:
    graph = _graph(
        repo,
        {
            ".bazelignore": "# generated trees\nthird_party/vendored/\nnode_modules\n",
            "a/BUILD": _lib(),
            "third_party/vendored/x/BUILD": _lib("//a"),
            "node_modules/y/BUILD": _lib("//a"),
        },
    )
    assert graph.nodes() == {"a"}


def test_bazelignore_leaves_the_packages_of_a_local_repository_in_it(repo: GitRepo) -> None:
    """A vendored repository the main one ignores (so as not to read its packages twice)
    and declares as ``@v``: Bazel 4.2.3 still reads @v's packages, so ``a -> @v//lib``
    is an edge; vendor/w, ignored and declared by no one, stays hidden."""
    graph = _graph(
        repo,
        {
            "WORKSPACE": 'local_repository(name = "v", path = "vendor/v")\n',
            ".bazelignore": "vendor\n",
            "vendor/v/WORKSPACE": "",
            "vendor/v/lib/BUILD": _lib(),
            "vendor/v/lib/f.py": "",
            "vendor/w/WORKSPACE": "",
            "vendor/w/lib/BUILD": _lib(),
            "vendor/w/lib/f.py": "",
            "a/BUILD": _lib("@v//lib"),
        },
    )
    assert graph.nodes() == {"a", "vendor/v/lib"}
    assert graph.node_of("vendor/v/lib/f.py") == "vendor/v/lib"
    assert graph.node_of("vendor/w/lib/f.py") is None
    assert graph.dependents(["vendor/v/lib"]) == {"a"}


def test_bazelignore_lines_are_read_as_bazel_reads_them(repo: GitRepo) -> None:
    """Bazel 4.2.3 normalises each line as a path but never trims it (measured: `bazel
    query //...` lists lib/a, lib/b and lib/h and no other package here)."""
    lines = [" lib/a", "/lib/b", "lib/c/", "./lib/d", "lib//e", "lib/x/../f", "lib/g", "#lib/h"]
    names = "abcdefgh"
    graph = _graph(
        repo,
        {
            ".bazelignore": "\n".join(lines[:-2]) + "\r\n" + "\r\n".join(lines[-2:]) + "\n",
            **{f"lib/{name}/BUILD": _lib() for name in names},
        },
    )
    assert graph.nodes() == {"lib/a", "lib/b", "lib/h"}


def test_cycles_terminate_and_reach_around(repo: GitRepo) -> None:
    graph = _graph(repo, {"a/BUILD": _lib("//b"), "b/BUILD": _lib("//c"), "c/BUILD": _lib("//a")})
    assert graph.dependents(["a"]) == {"b", "c"}
    # Chains also name a source that depends on itself around the cycle.
    chains = graph.dependency_chains(["a"])
    assert chains == {"c": ("c", "a"), "b": ("b", "c", "a"), "a": ("a", "b", "c", "a")}


def test_loaders_are_the_packages_whose_build_loads_a_bzl(repo: GitRepo) -> None:
    graph = _graph(
        repo,
        {
            "tools/BUILD": "",
            "tools/defs.bzl": "",
            "a/BUILD": 'load("//tools:defs.bzl", "m")\n',
            "tools/x/BUILD": 'load(":y.bzl", "n")\nload("@ext//:z.bzl", "o")\n',
        },
    )
    assert graph.loaders("tools/defs.bzl") == {"a"}
    assert graph.loaders("tools/x/y.bzl") == {"tools/x"}
    assert graph.loaders("z.bzl") == frozenset()


def test_matrix_declared_in_yaml_and_build_is_a_config_error(repo: GitRepo) -> None:
    repo.write("a/BUILD.bazel", LOAD + GATE)
    repo.write("a/invariants.yaml", "version: 1\nrows: []\n")
    tree = GitTree(repo.path, repo.commit("both"))
    with pytest.raises(ConfigError, match=r"^a/invariants.yaml: the package declares its matrix"):
        load_packages(tree)


def test_gate_deps_must_name_a_gate(repo: GitRepo) -> None:
    gate = GATE.replace(")\n", ', deps = ["//b:lib"])\n')
    repo.write("a/BUILD.bazel", LOAD + gate)
    repo.write("b/BUILD.bazel", _lib())
    with pytest.raises(ConfigError, match=r"^a/BUILD.bazel: deps entry '//b:lib' names no package"):
        load_graph(GitTree(repo.path, repo.commit("bad dep")))


def test_build_file_that_does_not_parse_is_a_config_error_with_line(repo: GitRepo) -> None:
    repo.write("a/BUILD", 'py_library(\n    name = "lib"\n    deps = [],\n)\n')
    with pytest.raises(ConfigError, match=r"^a/BUILD:2: BUILD file does not parse as Starlark"):
        load_graph(GitTree(repo.path, repo.commit("broken")))


def test_graph_from_a_dict_needs_no_tree() -> None:
    matrix = Matrix(owners=(), tests=(), fixtures=(), deps=(), rows=())
    graph = PackageGraph(
        {"a": Package("a", matrix), "b": Package("b", matrix)},
        nodes=["mid"],
        dependents={"mid": {"a": "test"}, "b": {"mid": "test"}},
    )
    assert graph.dependents(["b"]) == {"a", "mid"}


# --- deriving the head graph ----------------------------------------------------------------


def test_head_graph_is_the_parents_when_only_other_files_change(repo: GitRepo) -> None:
    repo.write("a/BUILD.bazel", LOAD + _lib() + GATE)
    repo.write("a/x.py", "x = 1\n")
    parent = load_graph(GitTree(repo.path, repo.commit("base")))
    repo.write("a/x.py", "x = 2\n")
    head = GitTree(repo.path, repo.commit("edit"))
    same = derive_graph(parent, head, [Change("a/x.py", ChangeKind.MODIFIED)])
    assert same is parent


@pytest.mark.parametrize(
    "change",
    [
        Change("a/y.py", ChangeKind.ADDED),
        Change("a/x.py", ChangeKind.DELETED),
        Change("a/z.py", ChangeKind.RENAMED, "a/x.py"),
        Change("a/BUILD.bazel", ChangeKind.MODIFIED),
        Change("b/invariants.yaml", ChangeKind.MODIFIED),
        Change("WORKSPACE", ChangeKind.MODIFIED),
        Change("tools/defs.bzl", ChangeKind.MODIFIED),  # its macros and labels are edges
    ],
)
def test_head_graph_is_read_anew_when_the_diff_touches_graph_inputs(
    repo: GitRepo, change: Change
) -> None:
    repo.write("a/BUILD.bazel", LOAD + _lib() + GATE)
    commit = repo.commit("base")
    parent = load_graph(GitTree(repo.path, commit))
    derived = derive_graph(parent, GitTree(repo.path, commit), [change])
    assert derived is not parent
    fresh = load_graph(GitTree(repo.path, commit))  # read anew: what a full read gives
    assert (derived.packages, derived.nodes()) == (fresh.packages, fresh.nodes())
    assert derived.dependents(["a"]) == fresh.dependents(["a"])


def test_head_graph_derived_after_adds_deletes_and_renames_equals_a_full_read(
    repo: GitRepo,
) -> None:
    gate = GATE.replace(")\n", ', tests = glob(["tests/**/*.py"]), fixtures = glob(["data/*"]))\n')
    repo.write("a/BUILD.bazel", LOAD + _lib() + gate)
    repo.write("a/tests/test_one.py", "")
    repo.write("a/data/one.json", "")
    repo.write("a/sub/BUILD", _lib("//b"))  # a subpackage: its files are not a's
    repo.write("b/BUILD.bazel", LOAD + _lib("//a") + gate)
    repo.write("b/data/old.json", "")
    repo.write("c/invariants.yaml", "version: 1\nrows: []\n")
    base = repo.commit("base")
    parent = load_graph(GitTree(repo.path, base))
    repo.write("a/tests/deep/test_two.py", "")
    repo.write("a/sub/tests/test_not_a.py", "")
    repo.remove("a/data/one.json")
    repo.git("mv", "b/data/old.json", "a/data/moved.json")
    repo.write("c/x.py", "")
    head = repo.commit("move things")
    changes = [
        Change("a/tests/deep/test_two.py", ChangeKind.ADDED),
        Change("a/sub/tests/test_not_a.py", ChangeKind.ADDED),
        Change("a/data/one.json", ChangeKind.DELETED),
        Change("a/data/moved.json", ChangeKind.RENAMED, "b/data/old.json"),
        Change("c/x.py", ChangeKind.ADDED),
    ]
    derived = derive_graph(parent, GitTree(repo.path, head), changes)
    fresh = load_graph(GitTree(repo.path, head))
    assert derived is not parent
    assert derived.packages == fresh.packages
    assert derived.packages["a"].matrix.tests == ("tests/deep/test_two.py", "tests/test_one.py")
    assert derived.packages["a"].matrix.fixtures == ("data/moved.json",)
    assert derived.packages["b"].matrix.fixtures == ()
    assert parent.packages["a"].matrix.fixtures == ("data/one.json",)  # the parent's is untouched
    for node in ("a", "a/sub", "b", "c"):
        assert derived.dependents([node]) == fresh.dependents([node])


def test_symlinked_build_file_makes_a_graph_underivable(repo: GitRepo) -> None:
    repo.write("templates/lib.BUILD", _lib())
    (repo.path / "a").mkdir()
    (repo.path / "a" / "BUILD").symlink_to("../templates/lib.BUILD")
    commit = repo.commit("linked")
    parent = load_graph(GitTree(repo.path, commit))
    assert "a" in parent.nodes()
    change = Change("templates/lib.BUILD", ChangeKind.MODIFIED)
    assert derive_graph(parent, GitTree(repo.path, commit), [change]) is not parent


def _write_linked_build_files(root: Path) -> None:
    """a/BUILD.bazel links to nothing and b/BUILD.bazel to a directory: Bazel reads each
    one's BUILD instead. c/BUILD links to nothing, with no BUILD.bazel: c is no package.
    d/BUILD.bazel, the honest neighbour, links to a file."""
    for path, text in {
        "WORKSPACE": "",
        "lib/BUILD": _lib(),
        "a/BUILD": _lib("//lib"),
        "b/BUILD": _lib("//lib"),
        "b/dir/x.txt": "",
        "c/x.txt": "",
        "templates/d.BUILD": _lib("//lib"),
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "a" / "BUILD.bazel").symlink_to("nowhere")
    (root / "b" / "BUILD.bazel").symlink_to("dir")
    (root / "c" / "BUILD").symlink_to("nowhere")
    (root / "d").mkdir()
    (root / "d" / "BUILD.bazel").symlink_to("../templates/d.BUILD")


def test_a_build_file_linked_to_nothing_or_a_directory_is_none(repo: GitRepo) -> None:
    _write_linked_build_files(repo.path)
    graph = load_graph(GitTree(repo.path, repo.commit("linked BUILD files")))
    assert graph.dependents(["lib"]) == {"a", "b", "d"}
    assert "c" not in graph.nodes()
    assert graph.node_of("c/x.txt") is None


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bazel") is None, reason="bazel is not on PATH")
def test_bazel_reads_build_where_build_bazel_links_to_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _write_linked_build_files(root)
    edges = bazel_package_edges(root, tmp_path / "bazel-root")
    assert edges == {("a", "lib"), ("b", "lib"), ("d", "lib")}


def test_a_package_named_under_a_linked_directory_depends_on_its_original(
    repo: GitRepo,
) -> None:
    repo.write("libs/real/BUILD", _lib())
    repo.write("libs/real/deep/BUILD", _lib())
    (repo.path / "libs" / "alias").symlink_to("real")
    repo.write("a/BUILD", _lib("//libs/alias/deep"))
    repo.write("b/BUILD", _lib())
    graph = load_graph(GitTree(repo.path, repo.commit("linked")))
    assert graph.dependents(["libs/real/deep"]) == {"libs/alias/deep", "a"}
    assert graph.dependents(["libs/real"]) == set()  # a names only the deep package
    assert graph.why("libs/alias/deep", "libs/real/deep") == (
        "libs/alias is a symbolic link to libs/real"
    )


def test_a_link_to_a_link_is_followed_to_its_end(repo: GitRepo) -> None:
    repo.write("libs/real/deep/BUILD", _lib())
    (repo.path / "libs" / "hop").symlink_to("real")
    (repo.path / "libs" / "alias").symlink_to("hop")
    (repo.path / "libs" / "loop").symlink_to("loop2")
    (repo.path / "libs" / "loop2").symlink_to("loop")
    repo.write("a/BUILD", _lib("//libs/alias/deep"))
    graph = load_graph(GitTree(repo.path, repo.commit("a chain of links, and a loop")))
    assert graph.dependents(["libs/real/deep"]) == {"libs/alias/deep", "a"}


def test_the_package_holding_a_link_depends_on_where_it_leads(repo: GitRepo) -> None:
    repo.write("shared/BUILD", 'exports_files(["data.txt"])\n')
    repo.write("shared/data.txt", "")
    repo.write("tools/BUILD", _lib())
    repo.write("tools/sub/BUILD", _lib())
    repo.write("a/BUILD", _lib())
    (repo.path / "a" / "data.txt").symlink_to("../shared/data.txt")
    (repo.path / "a" / "tools").symlink_to("../tools")
    repo.write("b/BUILD", _lib())
    graph = load_graph(GitTree(repo.path, repo.commit("links")))
    for package in ("shared", "tools", "tools/sub"):
        assert graph.dependents([package]) == {"a"}
    assert not graph.derivable


# --- bazel query ----------------------------------------------------------------------------

QUERY_XML = b"""<?xml version="1.1" encoding="UTF-8" standalone="no"?>
<query version="2">
    <rule class="py_library" location="/w/a/BUILD:2:11" name="//a:lib">
        <list name="deps"><label value="//b:lib"/></list>
        <rule-input name="//a:x.py"/>
        <rule-input name="//b:lib"/>
        <rule-input name="@pypi//requests:pkg"/>
    </rule>
    <rule class="filegroup" location="/w/b/BUILD:1:10" name="//b:lib">
        <rule-input name="//c:data.txt"/>
    </rule>
</query>
"""


def test_bazel_query_xml_becomes_package_edges() -> None:
    edges = query_module._edges_from_xml(io.BytesIO(QUERY_XML))
    assert [(a, b) for a, b, _ in edges] == [("a", "b"), ("b", "c")]
    assert edges[0][2] == "bazel query: //a:lib depends on //b:lib"


def test_bazel_query_xml_follows_visibility_groups_and_includes() -> None:
    """Query follows a visibility's package group and a group's includes; not
    //visibility:public nor a package spec, and not a group's packages."""
    xml = b"""<?xml version="1.1" encoding="UTF-8" standalone="no"?>
<query version="2">
    <package-group location="/w/g/BUILD:1:14" name="//g:grp">
        <list name="includes"><label value="//h:base"/></list>
        <list name="packages"><label value="//p/..."/></list>
    </package-group>
    <rule class="filegroup" location="/w/a/BUILD:1:10" name="//a:a">
        <list name="visibility">
            <label value="//g:grp"/>
            <label value="//v:__pkg__"/>
            <label value="//w:__subpackages__"/>
        </list>
    </rule>
    <rule class="filegroup" location="/w/b/BUILD:1:10" name="//b:b">
        <list name="visibility"><label value="//visibility:public"/></list>
    </rule>
</query>
"""
    edges = query_module._edges_from_xml(io.BytesIO(xml))
    assert [(a, b) for a, b, _ in edges] == [("g", "h"), ("a", "g")]


def test_bazel_graph_without_bazel_is_a_gate_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query_module.shutil, "which", lambda name: None)
    with pytest.raises(GateError, match="--graph=bazel needs 'bazel' on PATH"):
        bazel_query_edges(Path("."))


def test_bazel_graph_refuses_a_checkout_that_is_not_the_commit(repo: GitRepo) -> None:
    repo.write("WORKSPACE", "")
    first = repo.commit("one")
    repo.write("a/BUILD", "")
    repo.commit("two")
    with pytest.raises(GateError, match="--graph=bazel queries the working tree, which is at"):
        load_graph(GitTree(repo.path, first), mode="bazel")


def test_bazel_graph_refuses_a_dirty_checkout(repo: GitRepo) -> None:
    repo.write("WORKSPACE", "")
    head = repo.commit("one")
    repo.write("a/BUILD", "")
    with pytest.raises(GateError, match="--graph=bazel needs a clean checkout, but 'a/'"):
        load_graph(GitTree(repo.path, head), mode="bazel")


def test_unknown_graph_mode_is_a_config_error(repo: GitRepo) -> None:
    head = repo.commit("empty")
    with pytest.raises(ConfigError, match="unknown graph 'magic'"):
        load_graph(GitTree(repo.path, head), mode="magic")


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bazel") is None, reason="bazel is not on PATH")
def test_bazel_query_graph_matches_the_static_graph(repo: GitRepo) -> None:
    """Needs no network: `bazel query` loads no toolchain or test rule."""
    stub = repo.path.parent / "stub"
    (stub / "rules").mkdir(parents=True)
    (stub / "WORKSPACE").write_text("")
    (stub / "rules" / "BUILD").write_text("")
    (stub / "rules" / "defs.bzl").write_text(
        "def invariant(**kwargs):\n    return kwargs\n\n"
        "def oracle_gate(name, rows = [], deps = [], **kwargs):\n"
        '    native.filegroup(name = name, srcs = deps + [":lib"])\n'
    )
    repo.write("WORKSPACE", 'local_repository(name = "oracle_gate", path = "../stub")\n')
    repo.write(".gitignore", "/bazel-*\n")
    # Bazel's server and output base live under the test's own directory.
    repo.write(".bazelrc", f"startup --output_user_root={repo.path.parent / 'bazel-root'}\n")
    files = {
        "apps/web/BUILD.bazel": LOAD + _lib("//libs/mid:lib") + GATE,
        "libs/mid/BUILD": _lib("//libs/core")
        + 'filegroup(name = "d", srcs = ["//libs/data:x.txt"])\n',
        "libs/core/BUILD.bazel": LOAD + _lib() + GATE,
        "libs/data/BUILD": 'exports_files(["x.txt"])\n',
        "libs/data/x.txt": "",
    }
    for path, text in files.items():
        repo.write(path, text)
    head = repo.commit("workspace")
    try:
        static = load_graph(GitTree(repo.path, head))
        bazel = load_graph(GitTree(repo.path, head), mode="bazel", timeout=600)
    finally:
        subprocess.run(["bazel", "shutdown"], cwd=repo.path, capture_output=True, timeout=120)
    for node in ("libs/core", "libs/data", "libs/mid", "apps/web"):
        assert bazel.dependents([node]) == static.dependents([node]), node
    assert bazel.why("libs/mid", "libs/core").startswith("bazel query: //libs/mid:lib depends on")


def _fake_bazel(tmp_path: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    bazel = tmp_path / "bin" / "bazel"
    bazel.parent.mkdir()
    bazel.write_text("#!/bin/sh\n" + script)
    bazel.chmod(0o755)
    monkeypatch.setattr(query_module.shutil, "which", lambda name: str(bazel))
    return bazel


def test_bazel_query_failure_shows_the_last_lines_of_stdout_and_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_bazel(
        tmp_path,
        'echo "Loading: 0 packages loaded"\n'
        "echo \"no such package '@rules_go//go': repository not defined\" \n"
        'echo "ERROR: //a:lib: error loading package" >&2\n'
        'echo "FAILED: query did not complete" >&2\nexit 7\n',
        monkeypatch,
    )
    with pytest.raises(GateError) as raised:
        bazel_query_edges(tmp_path)
    message = str(raised.value)
    assert "bazel query failed (exit 7):" in message
    # Bazel said it on stdout: the gate used to print "no output" here.
    assert "no such package '@rules_go//go': repository not defined" in message
    assert "ERROR: //a:lib: error loading package\nFAILED: query did not complete" in message


def test_bazel_query_that_prints_nothing_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_bazel(tmp_path, "exit 1\n", monkeypatch)
    with pytest.raises(GateError, match=r"\(bazel printed nothing\)"):
        bazel_query_edges(tmp_path)


def test_bazel_query_keeps_implicit_dependencies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule's private attribute default (``_tool``) is an edge for the build, so for us."""
    args = tmp_path / "args"
    xml = tmp_path / "out.xml"
    xml.write_bytes(QUERY_XML)
    _fake_bazel(tmp_path, f'echo "$@" > {args}\ncat {xml}\n', monkeypatch)
    edges = bazel_query_edges(tmp_path)
    assert [(a, b) for a, b, _ in edges] == [("a", "b"), ("b", "c")]
    assert args.read_text().split() == [
        "query",
        'kind("rule|package',
        'group",',
        "//...:*)",
        "--output=xml",
        "--xml:default_values",
    ]
