"""The native core reads labels as ``bazel/labels.py`` does.

The native core resolves the labels an evaluated BUILD file's rules were given
into the package graph's edges (``rust/src/starlark/edges.rs``); the static
reader resolves the rest with ``label_ref``. A string one side reads as a label
and the other does not would be an edge one backend draws and the other misses,
so the two must answer alike on every string, odd ones included: Python's
``\\s`` counts the separators U+001C..U+001F as white space, Rust's
``is_whitespace`` does not.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends import _native, needs_native
from oracle_gate.bazel.labels import label_ref

pytestmark = needs_native

# The characters that decide how a label reads, and some that should not matter.
_SYNTAX = ["/", "//", ":", "@", "@@", "%", "%s", "{", "}", ".", "..", " ", "\\", "-", "~", "+"]
_SPACES = ["\x1c", "\x1f", "\x85", "\xa0", "\u2003", "\u200b", "\u3000", "\t"]
_WORDS = ["a", "libs", "b_c", "conditions", "default", "bazel_tools", "é", "x9"]
_PIECES = st.sampled_from([*_SYNTAX, *_SPACES, *_WORDS])
_TEXTS = st.lists(_PIECES, max_size=10).map("".join)


def _python(text: str) -> tuple[str, str, bool] | None:
    found = label_ref(text)
    return None if found is None else (found.repo, found.package, found.prefix)


@pytest.mark.parametrize(
    "text",
    [
        "//a/b:c",
        "//a/b",
        "@//a",
        "@@//a:x",
        "@mono//a",
        "//libs/%s",
        "//libs/",
        "//",
        "//lib:",
        "//lib:{}",
        "//conditions:default",
        "@bazel_tools//conditions:default",
        ":local",
        "//a/../b",
        "//a\x1cb",
        "//a\u200bb",
        "@bad name//a",
        "@repo",
        "@@repo",
        "@",
        "@types/node",
        "//my lib:l",
        "//my\tlib:l",
        "//a:b/../c",
        "//a:",
        "@//",
    ],
)
def test_native_label_ref_matches_python_on_known_labels(text: str) -> None:
    assert _native is not None
    assert _native.label_ref(text) == _python(text)


@settings(max_examples=2000, deadline=None)
@given(text=_TEXTS.map(lambda t: "//" + t) | _TEXTS.map(lambda t: "@" + t) | _TEXTS)
def test_native_label_ref_matches_python(text: str) -> None:
    assert _native is not None
    assert _native.label_ref(text) == _python(text)


def test_a_bare_repository_is_its_root_package() -> None:
    """``@zlib`` is ``@zlib//:zlib``; ``@`` alone and ``@types/node`` name nothing."""
    assert _python("@zlib") == ("zlib", "", False)
    assert _python("@") is None
    assert _python("@types/node") is None
    assert _python("//my lib:l") == ("", "my lib", False)  # Bazel 4.2.3 takes the space
