"""graph/edges/links.py: symbolic links, which Bazel follows and git lists as files."""

from __future__ import annotations

from edge_builders import edges, package_dirs

from oracle_gate.graph.edges.links import add_links
from oracle_gate.graph.reading import Scan

# libs/alias -> real: a directory link inside the package libs, to the package libs/real.
DIRECTORY = ("libs/BUILD", "libs/alias", "libs/real/BUILD", "libs/real/x.txt")


def _linked(links: dict[str, str], files: tuple[str, ...], scan: Scan | None = None) -> Scan:
    """``scan`` (a scan of ``files``' packages if None) after ``links`` are added."""
    if scan is None:
        scan = Scan(nodes=set(package_dirs(files)))
    add_links(scan, links, files, package_dirs(files))
    return scan


def test_the_package_holding_a_directory_link_depends_on_what_it_leads_into() -> None:
    scan = _linked({"libs/alias": "real"}, DIRECTORY)
    assert edges(scan) == {("libs", "libs/real"): "libs/alias is a symbolic link to libs/real"}
    assert scan.linked


def test_a_package_named_under_a_linked_directory_depends_on_its_original() -> None:
    scan = Scan(nodes=set(package_dirs(DIRECTORY)))
    scan.add_edge("app", "libs/alias", "app/BUILD:1 names //libs/alias")
    _linked({"libs/alias": "real"}, DIRECTORY, scan)
    why = "libs/alias is a symbolic link to libs/real"
    assert edges(scan) == {
        ("app", "libs/alias"): "app/BUILD:1 names //libs/alias",
        ("libs", "libs/real"): why,
        ("libs/alias", "libs/real"): why,
    }


def test_a_link_to_a_file_outside_every_package_is_a_node_of_its_own() -> None:
    scan = _linked({"lib/f.txt": "../data/f.txt"}, ("lib/BUILD", "lib/f.txt", "data/f.txt"))
    assert edges(scan) == {("lib", "data"): "lib/f.txt is a symbolic link to data/f.txt"}
    assert scan.nodes == {"lib", "data"}
    assert scan.workspace_of == {"data": ""}


def test_a_link_inside_its_own_package_is_no_edge() -> None:
    scan = _linked({"lib/a.txt": "b.txt"}, ("lib/BUILD", "lib/a.txt", "lib/b.txt"))
    assert edges(scan) == {}
    assert scan.linked  # its target can still change with no diff entry of the link


def test_a_link_out_of_the_repository_or_round_a_loop_is_no_edge() -> None:
    links = {"lib/etc": "../../etc", "lib/abs": "/etc", "lib/a": "b", "lib/b": "a"}
    scan = _linked(links, ("lib/BUILD", *links))
    assert edges(scan) == {}
    assert not scan.linked


def test_who_loads_through_a_link_loads_its_target() -> None:
    files = ("app/BUILD", "tools/BUILD", "tools/alias", "tools/real/defs.bzl")
    scan = Scan(nodes=set(package_dirs(files)), loads={"tools/alias/defs.bzl": {"app"}})
    _linked({"tools/alias": "real"}, files, scan)
    assert scan.loads == {"tools/alias/defs.bzl": {"app"}, "tools/real/defs.bzl": {"app"}}
