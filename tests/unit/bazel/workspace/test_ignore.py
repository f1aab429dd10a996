"""bazel/workspace/ignore.py: the directories a root .bazelignore hides, as Bazel 4.2.3 reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle_gate.bazel.workspace.ignore import BAZELIGNORE, bazel_ignored
from oracle_gate.repo.trees import WorkTree


def _hidden(tmp_path: Path, text: bytes | None) -> tuple[str, ...]:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "BUILD").write_text("")
    if text is not None:
        (tmp_path / BAZELIGNORE).write_bytes(text)
    tree = WorkTree(tmp_path, cache=False)
    return bazel_ignored(tree, tree.files())


@pytest.mark.parametrize("line", [b"lib/gen", b"lib/gen/", b"./lib/gen", b"lib//gen"])
def test_a_line_is_normalised(tmp_path: Path, line: bytes) -> None:
    assert _hidden(tmp_path, line + b"\n") == ("lib/gen/",)


def test_a_line_is_never_trimmed(tmp_path: Path) -> None:
    assert _hidden(tmp_path, b" lib/gen\n") == (" lib/gen/",)


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_each_java_line_ending_ends_a_line(tmp_path: Path, ending: bytes) -> None:
    assert _hidden(tmp_path, ending.join([b"a", b"b/c", b""])) == ("a/", "b/c/")


@pytest.mark.parametrize("line", [b"# lib", b"/abs/lib", b".", b"../x", b"lib/../.."])
def test_lines_that_hide_nothing(tmp_path: Path, line: bytes) -> None:
    # Hiding less than Bazel might keeps packages: the graph selects more, never less.
    assert _hidden(tmp_path, line + b"\nkept\n") == ("kept/",)


def test_no_file_hides_nothing(tmp_path: Path) -> None:
    assert _hidden(tmp_path, None) == ()
