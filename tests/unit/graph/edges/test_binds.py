"""graph/edges/binds.py: ``bind()`` in the root WORKSPACE, the package ``//external``."""

from __future__ import annotations

import dataclasses

from edge_builders import ONE, VENDORED, edges

from oracle_gate.bazel.workspace.repositories import Repositories
from oracle_gate.graph.edges.binds import add_binds
from oracle_gate.graph.reading import Scan


def _bound(repos: Repositories, *binds: tuple[str, str]) -> Scan:
    scan = Scan()
    add_binds(scan, dataclasses.replace(repos, binds=binds))
    return scan


def test_external_depends_on_each_bound_package_of_the_tree() -> None:
    scan = _bound(ONE, ("l", "//lib:l"))
    assert edges(scan) == {("external", "lib"): "WORKSPACE binds //external:l to //lib:l"}
    assert scan.nodes == {"external"}


def test_a_bind_into_a_repository_of_the_tree_is_an_edge_into_it() -> None:
    scan = _bound(VENDORED, ("l", "@v//lib:l"))
    why = "WORKSPACE binds //external:l to @v//lib:l"
    assert edges(scan) == {("external", "vendor/v/lib"): why}


def test_a_bind_outside_the_tree_or_no_label_is_no_edge_nor_node() -> None:
    scan = _bound(ONE, ("far", "@far//x:y"), ("bad", "//lib:"))
    assert edges(scan) == {}
    assert scan.nodes == set()
