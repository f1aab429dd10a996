"""The package graph: which directories declare a matrix, and who depends on whom.

Nodes are directories: every Bazel package (a directory with a BUILD file, gate
or not, so dependencies through ungated packages still count) and every
package that declares a matrix. An edge A -> B means A depends on B. Edges come
from (1) labels in BUILD files, read statically (``bazel/read/``), (2) ``deps``
in invariants.yaml and in ``oracle_gate(...)``, and (3) ``bazel query`` when the
``bazel`` graph is asked for.

Everything else asks ``PackageGraph``; its edges are plain dicts of sets. The modules:
``scan`` reads a tree (``reading`` holds what it found, ``evaluate`` runs the native
evaluator, ``edges`` turns declarations into edges, one Bazel construct a module,
``gates`` builds Bazel gates), ``model`` is the graph, ``load`` and ``derive`` give a
tree's graph. The workspace's own files are read in ``bazel/workspace/``.
"""

from oracle_gate.graph.derive import derive_graph
from oracle_gate.graph.load import GRAPH_MODES, load_graph
from oracle_gate.graph.model import PackageGraph
from oracle_gate.graph.scan import load_packages

__all__ = [
    "GRAPH_MODES",
    "PackageGraph",
    "derive_graph",
    "load_graph",
    "load_packages",
]
