"""graph/edges/rejected.py: a BUILD file the evaluator rejected that loads the tree's code."""

from __future__ import annotations

from edge_builders import edges

from oracle_gate.graph.edges.rejected import add_rejected
from oracle_gate.graph.reading import Scan

DIRS = ["", "app", "lib"]
BZL = ["tools/defs.bzl"]


def _rejected(loaded: dict[str, set[str]]) -> Scan:
    """The scan after ``app/BUILD`` is rejected, with the static reader's ``loaded``."""
    scan = Scan(read_loads=loaded)
    add_rejected(scan, "app", "app/BUILD", BZL, DIRS, "boom")
    return scan


def test_a_rejected_file_loading_the_trees_code_depends_on_every_package() -> None:
    scan = _rejected({"tools/defs.bzl": {"app"}})
    why = "app/BUILD loads the tree's own .bzl code, and the evaluator could not run it"
    assert edges(scan) == {("app", ""): why, ("app", "lib"): why}
    assert scan.approximate == {("app/BUILD", f"{why} (boom): taken to depend on every package")}


def test_a_rejected_file_loading_no_code_of_the_tree_gives_no_edge() -> None:
    # tools/defs.bzl is loaded by another package; vendor/gone.bzl is no file of the tree.
    scan = _rejected({"tools/defs.bzl": {"lib"}, "vendor/gone.bzl": {"app"}})
    assert edges(scan) == {}
    assert scan.approximate == set()
