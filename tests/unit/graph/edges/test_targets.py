"""graph/edges/targets.py: the packages a label names, and nodes outside every package."""

from __future__ import annotations

from oracle_gate.graph.edges.targets import label_targets, outside_node
from oracle_gate.graph.reading import Scan

DIRS = ["", "libs", "libs/a", "libs/b", "libsx", "ws", "ws/lib"]


def test_a_label_names_its_package_whether_or_not_the_tree_holds_one() -> None:
    assert label_targets("libs/a", False, "", DIRS) == ["libs/a"]
    assert label_targets("missing", False, "", DIRS) == ["missing"]


def test_a_label_of_a_nested_workspace_is_under_its_root() -> None:
    assert label_targets("lib", False, "ws", DIRS) == ["ws/lib"]
    assert label_targets("", False, "ws", DIRS) == ["ws"]


def test_a_repository_outside_the_tree_is_one_node() -> None:
    assert label_targets("lib", True, "@far", DIRS) == ["@far"]


def test_a_computed_label_names_every_package_under_its_prefix_and_no_neighbour() -> None:
    # "//libs/%s" % n: libs/a and libs/b, never libs itself nor libsx beside it.
    assert label_targets("libs/", True, "", DIRS) == ["libs/a", "libs/b"]


def test_a_prefix_with_no_package_under_it_names_its_directory() -> None:
    assert label_targets("gone/", True, "", DIRS) == ["gone"]


def test_a_bare_prefix_names_every_package_of_its_workspace_only() -> None:
    assert label_targets("", True, "", DIRS) == DIRS
    assert label_targets("", True, "ws", DIRS) == ["ws/lib"]


def test_a_node_outside_the_packages_is_in_its_holders_workspace() -> None:
    scan = Scan(nodes={"ws/lib"}, workspace_of={"ws/lib": "ws"})
    assert outside_node(scan, "ws/data", "ws/lib") == "ws/data"
    assert scan.nodes == {"ws/lib", "ws/data"}
    assert scan.workspace_of["ws/data"] == "ws"


def test_a_known_nodes_workspace_is_kept() -> None:
    scan = Scan(workspace_of={"ws/lib": "ws", "data": ""})
    outside_node(scan, "data", "ws/lib")
    assert scan.workspace_of["data"] == ""
