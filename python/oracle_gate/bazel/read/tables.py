"""Names and tables the BUILD reader's two implementations share: the gate's own
functions, the attributes that are not dependencies, the calls that are not rules,
and the string methods and built-ins the reader computes."""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "ANY_PACKAGE",
    "ARGUMENTS_OF_NON_RULES",
    "BOUNDED_STRING_METHODS",
    "BUILTINS",
    "CASES",
    "GATE_FUNCTION",
    "INVARIANT_FUNCTION",
    "NOT_DEPS",
    "NOT_RULES",
    "PREDICATES",
    "SPLITS",
    "STRING_METHODS",
    "STRING_METHOD_NAMES",
    "STRING_NAMES",
    "VISIBILITY",
]

GATE_FUNCTION = "oracle_gate"
INVARIANT_FUNCTION = "invariant"

# Attributes whose strings are not dependencies (bazel query does not follow them).
NOT_DEPS = frozenset({"name", "tags", "licenses"})


# Attributes whose strings are a visibility: only a package group's label is followed.
VISIBILITY = frozenset({"visibility", "default_visibility"})


# A computed label that may name any package of its workspace: what a string the
# reader cannot compute becomes (``label_ref`` reads it as every package under //).
ANY_PACKAGE = "//"
# The string methods the reader computes: Starlark's and Python's agree on them.
STRING_METHODS: dict[str, Callable[..., object]] = {
    "format": str.format,
    "join": str.join,
    "lower": str.lower,
    "lstrip": str.lstrip,
    "removeprefix": str.removeprefix,
    "removesuffix": str.removesuffix,
    "replace": str.replace,
    "rstrip": str.rstrip,
    "strip": str.strip,
    "upper": str.upper,
}


# Calls that declare no rule: of their arguments only ``ARGUMENTS_OF_NON_RULES`` count.
NOT_RULES = frozenset({"load", "package", "package_group", "licenses", "workspace"})


# Those that name dependencies: a package's default visibility and the groups a package
# group includes (bazel query reports both), and the labels a package gives each of its
# rules (Bazel 4.2.3's query leaves these out; its build checks the constraints, and Bazel
# 6+ adds the licenses and metadata as dependencies of every rule).
ARGUMENTS_OF_NON_RULES = frozenset(
    {
        ("package", "default_visibility"),
        ("package_group", "includes"),
        ("package", "default_applicable_licenses"),
        ("package", "default_package_metadata"),
        ("package", "default_compatible_with"),
        ("package", "default_restricted_to"),
    }
)
# String methods whose result is a bool or an int: no string.
PREDICATES = frozenset(
    {
        "startswith",
        "endswith",
        "find",
        "rfind",
        "index",
        "rindex",
        "count",
        "isalnum",
        "isalpha",
        "isdigit",
        "islower",
        "isspace",
        "istitle",
        "isupper",
    }
)


# String methods that return a list of pieces of the receiver.
SPLITS = frozenset({"split", "rsplit", "partition", "rpartition", "splitlines", "elems"})


# String methods that change case: "/" and "@" stay, no other character becomes one.
CASES = frozenset({"capitalize", "title", "swapcase"})


# Every method of the native interpreter's strings (starlark-rust's; a test of
# rust/src/starlark/eval.rs holds it to the interpreter's `dir("")`): those the Python
# reader computes, but `swapcase`, which the interpreter lacks, and `codepoints`, which
# the reader does not compute. The native reader checks each call of one
# (rust/src/starlark/checked.rs) and distrusts one taken as a value (eval.rs).
STRING_METHOD_NAMES = frozenset(
    {*STRING_METHODS, *PREDICATES, *SPLITS, *CASES, "codepoints"} - {"swapcase"}
)


# The string methods that take a start and an end after what they look for: Bazel bounds
# them otherwise ("abc".find("", 5) is 3 there, -1 in Python and starlark-rust), so
# neither reader trusts its own answer to a call of one given a start or an end.
BOUNDED_STRING_METHODS = frozenset(
    {"startswith", "endswith", "find", "rfind", "index", "rindex", "count"}
)


# The names the Python reader takes for string methods when it calls one on a value it
# does not know (any other is a loaded struct's function): the interpreter's, `swapcase`
# (which the reader computes) and starlark-go's `elem_ords`.
STRING_NAMES = STRING_METHOD_NAMES | {"swapcase", "elem_ords"}


# Built-in functions a BUILD file may call: any other name is a rule (or fails).
BUILTINS = frozenset(
    {
        "all",
        "any",
        "bool",
        "dict",
        "dir",
        "enumerate",
        "fail",
        "float",
        "getattr",
        "hasattr",
        "hash",
        "int",
        "json.decode",
        "json.encode",
        "json.encode_indent",
        "json.indent",
        "len",
        "list",
        "max",
        "min",
        "print",
        "range",
        "repr",
        "reversed",
        "sorted",
        "str",
        "tuple",
        "type",
        "zip",
    }
)
