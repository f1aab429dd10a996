"""graph/edges/read.py: the labels and loads of a BUILD file the static reader read."""

from __future__ import annotations

from edge_builders import ONE, VENDORED, edges, repositories

from oracle_gate.bazel.read import parse_build
from oracle_gate.bazel.workspace.repositories import Repositories
from oracle_gate.graph.edges.read import add_read
from oracle_gate.graph.reading import Scan

DIRS = ["", "app", "lib", "libs/a", "libs/b", "vendor/v/lib"]


def _read(text: str, repos: Repositories = ONE) -> Scan:
    """The scan after ``app/BUILD`` (package ``app`` of the main repository) holds ``text``."""
    scan = Scan()
    build = parse_build(text.encode(), "app/BUILD")
    add_read(scan, build, "app", "app/BUILD", "app", "", repos, DIRS)
    return scan


def test_a_label_of_another_package_is_an_edge_and_one_of_its_own_is_none() -> None:
    scan = _read('cc_library(name = "a", deps = ["//lib:l", ":own", "//app:b"])\n')
    assert edges(scan) == {("app", "lib"): "app/BUILD:1 names //lib:l"}
    assert scan.approximate == set()


def test_a_label_of_a_repository_of_the_tree_is_an_edge_into_it() -> None:
    scan = _read('cc_library(name = "a", deps = ["@v//lib:l"])\n', VENDORED)
    assert edges(scan) == {("app", "vendor/v/lib"): "app/BUILD:1 names @v//lib:l"}


def test_a_computed_label_is_an_edge_to_every_package_under_it() -> None:
    scan = _read('cc_library(name = "a", deps = ["//libs/%s" % n])\n')
    why = "app/BUILD:1 names //libs/%s, a computed label: every package under //libs/"
    assert edges(scan) == {("app", "libs/a"): why, ("app", "libs/b"): why}
    assert scan.approximate == {("app/BUILD", why)}


def test_a_repository_outside_the_tree_is_no_edge() -> None:
    scan = _read('cc_library(name = "a", deps = ["@far//x:y"])\n')
    assert edges(scan) == {}
    assert scan.approximate == set()


def test_a_repository_the_workspace_may_hide_in_the_tree_is_an_edge_to_every_package() -> None:
    hiding = repositories(unknown="WORKSPACE declares in a loop or function")
    scan = _read('cc_library(name = "a", deps = ["@far//x:y"])\n', hiding)
    why = (
        "app/BUILD:1 names @far//x:y, a repository WORKSPACE declares in a loop or function "
        "may declare: every package"
    )
    assert edges(scan) == {("app", target): why for target in DIRS if target != "app"}
    assert scan.approximate == {("app/BUILD", why)}


def test_each_load_of_the_tree_makes_the_package_its_loader() -> None:
    text = (
        'load(":defs.bzl", "a")\n'
        'load("//tools:t.bzl", "t")\n'
        'load("@v//:v.bzl", "v")\n'
        'load("@far//:f.bzl", "f")\n'
    )
    scan = _read(text, VENDORED)
    loaded = {"app/defs.bzl": {"app"}, "tools/t.bzl": {"app"}, "vendor/v/v.bzl": {"app"}}
    assert scan.loads == loaded
    assert scan.read_loads == loaded
    assert edges(scan) == {}
