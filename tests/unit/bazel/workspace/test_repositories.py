"""bazel/workspace/repositories.py: where the tree's repositories start, and their names."""

from __future__ import annotations

from pathlib import Path

from oracle_gate.bazel.workspace.repositories import read_repositories
from oracle_gate.repo.trees import WorkTree


def _tree(tmp_path: Path, files: dict[str, str]) -> WorkTree:
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return WorkTree(tmp_path, cache=False)


def test_a_nested_workspace_the_root_names_is_a_repository(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "WORKSPACE": 'local_repository(name = "v", path = "third_party/v")\n',
            "third_party/v/WORKSPACE": 'workspace(name = "v")\n',
        },
    )
    found = read_repositories(
        tree, {"": ["WORKSPACE"], "third_party/v": ["third_party/v/WORKSPACE"]}
    )
    assert found.roots == {"", "third_party/v"}
    assert found.named["v"] == "third_party/v"
    assert found.root_of("v", "") == "third_party/v"
    assert found.unknown == ""


def test_a_nested_workspace_the_root_does_not_name_is_the_main_one(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"WORKSPACE": "", "third_party/v/WORKSPACE": ""})
    found = read_repositories(
        tree, {"": ["WORKSPACE"], "third_party/v": ["third_party/v/WORKSPACE"]}
    )
    assert found.roots == {""}
    assert found.root_of(None, "") == ""


def test_a_loop_in_the_root_workspace_may_hide_a_repository(tmp_path: Path) -> None:
    text = 'for n in ["a"]:\n    local_repository(name = n, path = n)\n'
    found = read_repositories(_tree(tmp_path, {"WORKSPACE": text}), {"": ["WORKSPACE"]})
    assert found.unknown == "WORKSPACE declares in a loop or function"


def test_a_load_of_the_trees_own_code_may_hide_a_repository(tmp_path: Path) -> None:
    text = 'load("//tools:repos.bzl", "repos")\nrepos()\n'
    found = read_repositories(_tree(tmp_path, {"WORKSPACE": text}), {"": ["WORKSPACE"]})
    assert found.unknown == "WORKSPACE loads //tools:repos.bzl, the tree's own code"


def test_a_tree_without_a_root_workspace_has_a_main_one_at_each_outermost(
    tmp_path: Path,
) -> None:
    tree = _tree(tmp_path, {"ws/WORKSPACE": "", "ws/inner/WORKSPACE": ""})
    found = read_repositories(tree, {"ws": ["ws/WORKSPACE"], "ws/inner": ["ws/inner/WORKSPACE"]})
    assert found.mains == {"ws"}
    assert found.root_of(None, "ws") == "ws"


def test_a_workspace_bazel_reads_is_read_whole_for_what_may_hide_a_repository(
    tmp_path: Path,
) -> None:
    """The check for loops and functions reads the WORKSPACE as the BUILD reader does: a
    Latin-1 string, which Bazel loads, does not make it unreadable."""
    (tmp_path / "WORKSPACE").write_bytes(
        b'workspace(name = "caf\xe9")\nlocal_repository(name = "v", path = "third_party/v")\n'
    )
    (tmp_path / "third_party/v").mkdir(parents=True)
    (tmp_path / "third_party/v/WORKSPACE").write_text("")
    tree = WorkTree(tmp_path, cache=False)
    found = read_repositories(
        tree, {"": ["WORKSPACE"], "third_party/v": ["third_party/v/WORKSPACE"]}
    )
    assert found.named["v"] == "third_party/v"
    assert found.unknown == ""
