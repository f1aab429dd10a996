"""``bazel query``: package edges from a real Bazel server, for ``--graph bazel``."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import IO

from oracle_gate.bazel.labels import WORKSPACE_MARKERS, main_repo_package, visible_to_a_target
from oracle_gate.errors import GateError
from oracle_gate.repo.git import git
from oracle_gate.repo.trees import GitTree, Tree

__all__ = ["BAZEL_TIMEOUT_SECONDS", "Edge", "bazel_query_edges", "bazel_workspace"]

BAZEL_TIMEOUT_SECONDS = 3600.0
# Rules and package groups: a rule's visibility names groups, a group includes others.
_BAZEL_QUERY = 'kind("rule|package group", //...:*)'
# The attributes whose labels bazel query follows though they are no rule-input; with
# --xml:default_values, a visibility a package gives its rules by default shows.
_LABEL_LISTS = frozenset({"visibility", "includes"})
_ERROR_LINES = 20  # of Bazel's output shown when the query fails

Edge = tuple[str, str, str]  # (dependent, dependency, why: the declaration that makes it)


def bazel_workspace(tree: Tree) -> Path:
    if not isinstance(tree, GitTree):
        root: Path = getattr(tree, "root", Path.cwd())
        return root
    checked_out = git(tree.repo, "rev-parse", "HEAD").strip()
    if checked_out != tree.commit:
        raise GateError(
            f"--graph=bazel queries the working tree, which is at {checked_out[:12]}, "
            f"not at {tree.commit[:12]}; check that commit out or use --graph=static",
            str(tree.repo),
        )
    dirty = git(tree.repo, "status", "--porcelain", "--untracked-files=normal").splitlines()
    if dirty:
        raise GateError(
            f"--graph=bazel needs a clean checkout, but {dirty[0][3:]!r} differs from the "
            "commit; commit or stash it, or use --graph=static",
            str(tree.repo),
        )
    if not any((tree.repo / name).is_file() for name in WORKSPACE_MARKERS):
        raise GateError(
            "--graph=bazel needs a Bazel workspace (WORKSPACE or MODULE.bazel) at the "
            "repository root; use --graph=static",
            str(tree.repo),
        )
    return tree.repo


def bazel_query_edges(workspace: Path, timeout: float = BAZEL_TIMEOUT_SECONDS) -> list[Edge]:
    """Package edges from ``bazel query`` of every rule and package group (``--output=xml``)
    in ``workspace``.

    Every ``rule-input`` of a rule in another package of the main repository
    is an edge, implicit dependencies included (a rule's private attribute
    defaults, launchers), as for the build itself. So is each package group a
    rule's visibility names, and each one a package group includes: query
    follows them, and narrowing one breaks the build of what it made visible.

    Raises:
        GateError: bazel is not on PATH, timed out, or the query failed.
    """
    bazel = shutil.which("bazel")
    if bazel is None:
        raise GateError(
            "--graph=bazel needs 'bazel' on PATH, and it is not there; install Bazel "
            "or use --graph=static (BUILD files read without Bazel)"
        )
    command = [bazel, "query", _BAZEL_QUERY, "--output=xml", "--xml:default_values"]
    with tempfile.TemporaryFile() as output:
        try:
            done = subprocess.run(
                command,
                cwd=workspace,
                stdout=output,
                stderr=subprocess.PIPE,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise GateError(
                f"bazel query timed out after {timeout:.0f}s", str(workspace)
            ) from error
        output.seek(0)
        if done.returncode != 0:
            raise GateError(
                f"bazel query failed (exit {done.returncode}):\n"
                + _tail(output.read(), done.stderr),
                str(workspace),
            )
        return _edges_from_xml(output)


def _tail(stdout: bytes, stderr: bytes) -> str:
    """The last lines Bazel printed, stdout then stderr: it reports errors on either."""
    lines = [
        line.rstrip()
        for stream in (stdout, stderr)
        for line in stream.decode("utf-8", "replace").splitlines()
        if line.strip()
    ]
    return "\n".join(lines[-_ERROR_LINES:]) or "(bazel printed nothing)"


def _edges_from_xml(stream: IO[bytes]) -> list[Edge]:
    edges: list[Edge] = []
    inputs: list[str] = []
    for _event, element in ElementTree.iterparse(stream):
        if element.tag == "rule-input":
            inputs.append(element.get("name", ""))
        elif element.tag == "list" and element.get("name") in _LABEL_LISTS:
            labels = (label.get("value", "") for label in element.iter("label"))
            inputs += filter(visible_to_a_target, labels)
        elif element.tag in ("rule", "package-group"):
            name = element.get("name", "")
            source = main_repo_package(name)
            if source is not None:
                for text in inputs:
                    target = main_repo_package(text)
                    if target is not None and target != source:
                        edges.append((source, target, f"bazel query: {name} depends on {text}"))
            inputs = []
            element.clear()
    return edges
