"""BUILD files through the native Starlark evaluator: the edges it found, the files that
may declare a gate, and the computed labels to widen."""

from __future__ import annotations

import posixpath
import re

from oracle_gate.bazel import limits, starlark
from oracle_gate.bazel.read import GATE_FUNCTION
from oracle_gate.bazel.starlark import Evaluated
from oracle_gate.graph.edges import label_targets
from oracle_gate.graph.reading import Listing, Scan, is_utf8, read_files
from oracle_gate.repo.trees import GitTree

__all__ = ["add_computed", "evaluate"]

_GATE_CALL = re.compile(rb"\b%s\s*\(|=\s*[\"']%s[\"']" % ((GATE_FUNCTION.encode(),) * 2))


def evaluate(
    scan: Scan, listing: Listing, linked: set[str]
) -> tuple[dict[str, Evaluated], set[str], list[tuple[str, str, str, str]]]:
    """BUILD files evaluated by the native core, by path, those that may declare a gate,
    and the computed labels they name: (BUILD path, package prefix, why, repository root).

    The other edges the core found are added to ``scan``. Empty under the pure-Python
    backend: the static reader reads every file then. Paths in ``not_utf8`` never
    reach the core (no ``load()`` can name one).
    """
    tree, files, builds = listing.tree, listing.files, listing.builds
    not_utf8, repositories = listing.not_utf8, listing.repositories
    if not starlark.available():
        return {}, set(), []
    if isinstance(tree, GitTree):
        linked |= {p for p in tree.links() if builds.get(posixpath.dirname(p)) == p}
    seen = [path for path in files if path not in not_utf8] if not_utf8 else list(files)
    paths = [path for path in builds.values() if path not in not_utf8]
    contents = listing.read(paths)
    bzl_paths = [path for path in listing.bzl_files if path not in not_utf8]
    inputs = []
    for directory, path in builds.items():
        if path not in not_utf8:
            workspace = listing.workspace_of[directory]
            package = directory[len(workspace) + 1 :] if workspace else directory
            inputs.append((path, package, workspace, contents[path]))
    names = repositories.names.items()
    evaluation = starlark.evaluate_build_files(
        inputs,
        read_files(tree, bzl_paths),
        {root: sorted(n) for root, n in names if is_utf8(root)},
        seen,
        {name: root for name, root in repositories.named.items() if is_utf8(root)},
        repositories.unknown,
        # A link whose name is not UTF-8 is not among the files the core sees either.
        [p for p in tree.links() if p not in not_utf8] if isinstance(tree, GitTree) else (),
        [p for p in scan.ignored if is_utf8(p)],
    )
    assert not scan.dependents, "the evaluator's edges come first: nothing may be replaced"
    scan.dependents = evaluation.dependents
    scan.approximate.update(evaluation.approximate)
    evaluated = dict(zip(paths, evaluation.outcomes, strict=True))
    for outcome in evaluated.values():
        # Not a file for the static reader: the code the patch added would hold Bazel
        # too, or builds more than any BUILD file may (bazel/limits.py).
        stopped = limits.stopped_error(outcome.error)
        if stopped is not None:
            raise stopped
    # The static reader builds a gate's matrix: files that call oracle_gate (or a name a
    # load() binds to it). Merely loading it, as every BUILD file of a monorepo may, is not one.
    # Where the native core read the gate calls, it says so; a search decides elsewhere.
    gates = {
        path
        for path, outcome in evaluated.items()
        if outcome.declares_gate
        or (outcome.native_gates is None and _GATE_CALL.search(contents[path]))
    }
    computed = [
        (paths[index], package, why, root) for index, package, why, root in evaluation.computed
    ]
    return evaluated, gates, computed


def add_computed(
    scan: Scan, computed: list[tuple[str, str, str, str]], sorted_dirs: list[str]
) -> None:
    """The edges of computed labels (``"//libs/%s" % n``): to every package under the
    prefix, in the repository (root) the label names."""
    for path, package, why, root in computed:
        directory = path.rpartition("/")[0]
        for target in label_targets(package, True, root, sorted_dirs):
            scan.add_edge(directory, target, why)
