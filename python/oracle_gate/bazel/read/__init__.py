"""Bazel BUILD files read statically: Starlark parsed as Python syntax, never executed.

A BUILD file is parsed with ``ast`` and its top level is *evaluated symbolically*:
literals, lists, dicts, ``+``, variables, conditionals, comprehensions, subscripts,
list and dict changes, ``glob()``/``select()`` calls and the string operations a label
can be made with (``%``, slices, ``format``, ``join``, ``lower``...) become values.
What the reader cannot compute becomes an ``Unknown`` that keeps every string it may
hold and the known start of every string it could not finish, so label scanning
over-approximates rather than misses a dependency: ``"//libs/" + n`` names every
package under ``libs/``, and a string whose start is unknown (``"%s/lib:l" % X``,
``X + "/lib:l"``) may be any label: it names every package.

What a BUILD file says depends on its bytes only (labels are resolved later,
against the package's location), so ``parse_build`` results are cached in
memory by git blob id. See ``docs/selection.md`` for why the cache is not on disk.

The modules: ``values`` (what a file's values and the parsed file are), ``operations``
(those values where part of them is unknown), ``evaluator`` (the symbolic evaluation),
``parse`` (``parse_build``), ``cache`` (by blob id), ``native`` (the gate calls the
native core read) and ``tables`` (names and tables shared with the Rust reader).
"""

from oracle_gate.bazel.read.cache import blob_id, cache_info, clear_cache, parse_build_cached
from oracle_gate.bazel.read.native import gates_from_native
from oracle_gate.bazel.read.parse import parse_build
from oracle_gate.bazel.read.tables import GATE_FUNCTION
from oracle_gate.bazel.read.values import BuildFile, Call, Dep, Glob, Unknown, Value, strings_of

__all__ = [
    "GATE_FUNCTION",
    "BuildFile",
    "Call",
    "Dep",
    "Glob",
    "Unknown",
    "Value",
    "blob_id",
    "cache_info",
    "clear_cache",
    "gates_from_native",
    "parse_build",
    "parse_build_cached",
    "strings_of",
]
