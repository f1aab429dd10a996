"""graph/edges/bzl.py: the labels of the .bzl files the static reader's BUILD files load."""

from __future__ import annotations

from pathlib import Path

import pytest
from edge_builders import ONE, VENDORED, edges, package_dirs, work_tree

from oracle_gate.bazel.workspace.repositories import Repositories
from oracle_gate.errors import ConfigError
from oracle_gate.graph.edges.bzl import add_bzl_labels
from oracle_gate.graph.reading import Scan

PACKAGES = {"app/BUILD": "", "lib/BUILD": "", "other/BUILD": "", "tools/BUILD": ""}
# app/BUILD loads //tools:defs.bzl.
BY_APP = {"tools/defs.bzl": {"app"}}


def _labels(
    tmp_path: Path, bzl: dict[str, str], loaded: dict[str, set[str]], repos: Repositories = ONE
) -> Scan:
    """The scan after the .bzl files ``bzl`` are read, each ``loaded`` by those packages."""
    tree = work_tree(tmp_path, {**PACKAGES, **bzl})
    scan = Scan(read_loads={path: set(loaders) for path, loaders in loaded.items()})
    add_bzl_labels(scan, tree, sorted(bzl), repos, package_dirs(tree.files()))
    return scan


def _approximate(path: str, loaders: int) -> tuple[str, str]:
    why = f"{path} is loaded by {loaders} BUILD file(s), which are taken to depend on every label"
    return path, f"{why} it names"


def test_a_loader_depends_on_every_label_the_file_names(tmp_path: Path) -> None:
    scan = _labels(tmp_path, {"tools/defs.bzl": 'DEPS = ["//lib:l"]\n'}, BY_APP)
    assert edges(scan) == {("app", "lib"): "over-approximation: tools/defs.bzl names //lib:l"}
    assert scan.approximate == {_approximate("tools/defs.bzl", 1)}


def test_a_file_loaded_through_another_gives_its_labels_and_its_loaders(tmp_path: Path) -> None:
    bzl = {
        "tools/defs.bzl": 'load("//lib:more.bzl", "x")\n',
        "lib/more.bzl": 'DEPS = ["//other:o"]\n',
    }
    scan = _labels(tmp_path, bzl, BY_APP)
    assert edges(scan) == {
        ("app", "lib"): "over-approximation: tools/defs.bzl names //lib:more.bzl",
        ("app", "other"): "over-approximation: lib/more.bzl names //other:o",
    }
    # The file the BUILD file loads is its own load already (graph/edges/read.py).
    assert scan.loads == {"lib/more.bzl": {"app"}}
    assert scan.read_loads == {"tools/defs.bzl": {"app"}, "lib/more.bzl": {"app"}}
    assert scan.approximate == {_approximate("tools/defs.bzl", 1), _approximate("lib/more.bzl", 1)}


def test_a_file_nobody_loads_or_not_in_the_tree_gives_no_edge(tmp_path: Path) -> None:
    bzl = {"tools/unused.bzl": 'DEPS = ["//lib:l"]\n'}
    scan = _labels(tmp_path, bzl, {"tools/gone.bzl": {"app"}})
    assert edges(scan) == {}
    assert scan.approximate == set()
    assert scan.loads == {}


def test_a_label_relative_to_the_file_names_its_own_package(tmp_path: Path) -> None:
    scan = _labels(tmp_path, {"tools/defs.bzl": 'X = Label(":x")\n'}, BY_APP)
    assert edges(scan) == {("app", "tools"): "over-approximation: tools/defs.bzl names //tools:..."}


def test_a_label_of_another_repositorys_file_is_taken_in_both_repositories(
    tmp_path: Path,
) -> None:
    # A Label() is of the file's repository, a string of the loader's: both are taken.
    files = {"vendor/v/lib/BUILD": "", "vendor/v/defs.bzl": 'DEPS = ["//lib:l"]\n'}
    scan = _labels(tmp_path, files, {"vendor/v/defs.bzl": {"app"}}, VENDORED)
    why = "over-approximation: vendor/v/defs.bzl names //lib:l"
    assert edges(scan) == {("app", "lib"): why, ("app", "vendor/v/lib"): why}


def test_a_file_nested_too_deep_is_refused(tmp_path: Path) -> None:
    deep = "X = " + "[" * 1000 + "]" * 1000 + "\n"
    with pytest.raises(ConfigError):
        _labels(tmp_path, {"tools/defs.bzl": deep}, BY_APP)
