"""graph/edges/rc.py: the root .bazelrc's --deleted_packages and --package_path."""

from __future__ import annotations

from edge_builders import edges

from oracle_gate.bazel.bazelrc import RcFlags
from oracle_gate.graph.edges.rc import add_rc_flags
from oracle_gate.graph.reading import Scan


def _flagged(dirs: list[str], deleted: tuple[str, ...] = (), roots: tuple[str, ...] = ()) -> Scan:
    scan = Scan(nodes=set(dirs))
    flags = RcFlags(frozenset(deleted), frozenset(roots), frozenset({".bazelrc"}))
    add_rc_flags(scan, flags, frozenset(dirs), sorted(dirs))
    return scan


def test_the_package_around_a_deleted_one_depends_on_it_and_reads_the_rc_file() -> None:
    scan = _flagged(["lib", "lib/sub"], deleted=("lib/sub",))
    assert edges(scan) == {("lib", "lib/sub"): ".bazelrc deletes the package lib/sub"}
    assert scan.loads == {".bazelrc": {"lib"}}


def test_a_deleted_package_with_none_around_it_or_no_package_is_no_edge() -> None:
    for scan in (
        _flagged(["", "lib"], deleted=("", "gone/sub")),  # the root has none around it
        _flagged(["lib", "lib/sub"], deleted=("lib", "gone")),
    ):
        assert edges(scan) == {}
        assert scan.loads == {}


def test_a_package_under_a_package_path_root_may_be_read_as_its_own_package() -> None:
    scan = _flagged(["alt/lib", "altx/lib"], roots=("alt",))
    why = ".bazelrc's --package_path may read //lib from alt"
    assert edges(scan) == {("lib", "alt/lib"): why}
    assert scan.nodes == {"alt/lib", "altx/lib", "lib"}
    assert scan.loads == {".bazelrc": {"lib"}}
