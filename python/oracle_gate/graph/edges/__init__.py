"""The edges of a tree's declarations, one Bazel construct a module: ``read`` (labels
and ``load()``s of BUILD files the static reader read), ``bzl`` (the labels ``.bzl``
files name), ``built`` (repositories with a BUILD file given apart), ``links``
(symbolic links), ``binds`` (``bind()``), ``rc`` (the ``.bazelrc``'s flags),
``rejected`` (BUILD files the evaluator rejected). ``targets`` holds where their
edges end."""

from oracle_gate.graph.edges.binds import add_binds
from oracle_gate.graph.edges.built import add_built
from oracle_gate.graph.edges.bzl import add_bzl_labels
from oracle_gate.graph.edges.links import add_links
from oracle_gate.graph.edges.rc import add_rc_flags
from oracle_gate.graph.edges.read import add_read
from oracle_gate.graph.edges.rejected import add_rejected
from oracle_gate.graph.edges.targets import label_targets

__all__ = [
    "add_binds",
    "add_built",
    "add_bzl_labels",
    "add_links",
    "add_rc_flags",
    "add_read",
    "add_rejected",
    "label_targets",
]
