"""graph/edges/built.py: repositories whose BUILD file is given apart (``build_file``,
``build_file_content``) or whose declaration names files of the tree (``patches``)."""

from __future__ import annotations

from pathlib import Path

from edge_builders import edges, package_dirs, repositories, work_tree

from oracle_gate.bazel.workspace.repositories import BuildFileRepository
from oracle_gate.graph.edges.built import add_built
from oracle_gate.graph.reading import Scan

V = "third_party/v"
FILES = {"WORKSPACE": "", "app/BUILD": "", "lib/BUILD": "", "patches/v.patch": ""}


def _built(tmp_path: Path, repository: BuildFileRepository, files: dict[str, str]) -> Scan:
    tree = work_tree(tmp_path, {**FILES, **files})
    paths = tree.files()
    scan = Scan(nodes=set(package_dirs(paths)))
    add_built(scan, tree, paths, repositories(V, built=(repository,)), package_dirs(paths))
    return scan


def _repository(
    build_file: str | None = None, content: str | None = None, patch: str | None = None
) -> BuildFileRepository:
    """``new_local_repository(path = "third_party/v", ...)``, or with ``patch`` given the
    ``http_archive`` ``@v`` that patches itself with it."""
    if patch is None:
        return BuildFileRepository(V, "WORKSPACE", build_file, content)
    return BuildFileRepository("@v", "WORKSPACE", build_file, content, (patch,), fetched=True)


def test_a_build_file_of_the_tree_gives_the_repository_its_labels(tmp_path: Path) -> None:
    build = 'cc_library(name = "v", deps = ["@//lib:l", "//src:s", ":v"])\n'
    scan = _built(tmp_path, _repository("//third_party:v.BUILD"), {"third_party/v.BUILD": build})
    assert edges(scan) == {
        (V, "lib"): "third_party/v.BUILD:1 names @//lib:l",
        (V, f"{V}/src"): "third_party/v.BUILD:1 names //src:s",
    }
    assert V in scan.nodes
    assert scan.workspace_of[V] == V
    assert scan.loads == {"third_party/v.BUILD": {V}}
    assert scan.approximate == set()


def test_an_inline_build_file_is_read_from_its_workspace(tmp_path: Path) -> None:
    scan = _built(tmp_path, _repository(content='cc_library(deps = ["@//lib:l"])'), {})
    assert edges(scan) == {(V, "lib"): "WORKSPACE:1 names @//lib:l"}
    assert scan.loads == {"WORKSPACE": {V}}


def test_a_build_file_not_in_the_tree_may_name_every_package(tmp_path: Path) -> None:
    scan = _built(tmp_path, _repository("//third_party:gone.BUILD"), {})
    why = f"WORKSPACE gives {V} a BUILD file not in the tree: it may name every package"
    assert edges(scan) == {(V, "app"): why, (V, "lib"): why}
    assert scan.approximate == {("WORKSPACE", why)}
    assert scan.loads == {}


def test_a_fetched_repositorys_own_build_files_are_no_edge_but_its_patch_is_read(
    tmp_path: Path,
) -> None:
    scan = _built(tmp_path, _repository("//third_party:gone.BUILD", patch="//patches:v.patch"), {})
    assert edges(scan) == {}
    assert scan.approximate == set()
    assert "@v" in scan.nodes
    assert scan.loads == {"patches/v.patch": {"@v"}}


def test_a_patch_not_in_the_tree_is_read_by_nobody(tmp_path: Path) -> None:
    scan = _built(tmp_path, _repository(patch="//patches:gone.patch"), {})
    assert scan.loads == {}
