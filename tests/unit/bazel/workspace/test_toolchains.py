"""bazel/workspace/toolchains.py: the packages registered toolchains and platforms name."""

from __future__ import annotations

from oracle_gate.bazel.workspace.repositories import Repositories
from oracle_gate.bazel.workspace.toolchains import toolchain_packages

DIRS = ["", "app", "tc", "tc/linux", "tc/linux/arm", "vendor/v", "vendor/v/tc"]
ONE = Repositories(roots=frozenset({""}), names={"": frozenset()})
VENDORED = Repositories(
    roots=frozenset({"", "vendor/v"}),
    names={"": frozenset(), "vendor/v": frozenset({"v"})},
    named={"v": "vendor/v"},
)


def test_a_package_pattern_names_that_package() -> None:
    found = toolchain_packages([("//tc:all", "WORKSPACE registers")], ONE, DIRS)
    assert found == {"tc": "WORKSPACE registers //tc:all"}


def test_a_recursive_pattern_names_every_package_under_it() -> None:
    found = toolchain_packages([("//tc/...", ".bazelrc names")], ONE, DIRS)
    assert sorted(found) == ["tc", "tc/linux", "tc/linux/arm"]


def test_the_first_to_name_a_package_is_why() -> None:
    registered = [("//tc:x", "WORKSPACE registers"), ("//tc/...", ".bazelrc names")]
    found = toolchain_packages(registered, ONE, DIRS)
    assert found["tc"] == "WORKSPACE registers //tc:x"
    assert found["tc/linux"] == ".bazelrc names //tc/..."


def test_a_repository_of_the_tree_is_followed() -> None:
    found = toolchain_packages([("@v//tc:all", "WORKSPACE registers")], VENDORED, DIRS)
    assert found == {"vendor/v/tc": "WORKSPACE registers @v//tc:all"}


def test_patterns_outside_the_tree_or_not_absolute_name_nothing() -> None:
    registered = [("@far//tc:all", "w"), ("tc:all", "w"), ("//missing:all", "w")]
    assert toolchain_packages(registered, VENDORED, DIRS) == {}
