from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle_gate import globs
from oracle_gate.globs import (
    GlobIndex,
    GlobPattern,
    _regex,
    compile_glob,
    literal_prefix,
    matches_any,
    validate_glob,
    wildcard_match,
)
from oracle_gate.repo.directories import starting_with


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("tests/**/test_*.py", "tests/test_a.py", True),
        ("tests/**/test_*.py", "tests/unit/deep/test_a.py", True),
        ("tests/**/test_*.py", "tests/unit/helper.py", False),
        ("tests/test_*.py", "tests/unit/test_a.py", False),
        ("*.py", "a/b.py", False),
        ("*.py", "b.py", True),
        ("testdata/ranges/", "testdata/ranges/a.json", True),
        ("testdata/ranges/", "testdata/ranges/deep/a.json", True),
        ("testdata/ranges/", "testdata/rangesx/a.json", False),
        ("testdata/**", "testdata/x", True),
        ("testdata/**", "testdata", False),
        ("a?c.txt", "abc.txt", True),
        ("a?c.txt", "a/c.txt", False),
        ("data.[ch]", "data.[ch]", True),
        ("data.[ch]", "data.c", False),
    ],
)
def test_glob_follows_bazel_semantics(pattern: str, path: str, expected: bool) -> None:
    assert matches_any(path, [pattern]) is expected


# What Bazel 4.2.3's glob() finds for a name starting with "." (checked with bazel query).
@pytest.mark.parametrize(
    ("pattern", "path", "bazel"),
    [
        ("*", ".h", True),
        ("*h", ".h", False),
        (".*", ".h", True),
        ("**", ".d/y", True),
        ("**/*", "sub/.s", True),
        ("**/.s", "sub/.s", True),
        ("**/*s", "sub/.s", False),
        ("*/y", ".d/y", True),
        ("?a", ".a", False),
    ],
)
def test_bazel_glob_matches_a_hidden_name_only_as_bazel_does(
    pattern: str, path: str, bazel: bool
) -> None:
    assert bool(compile_glob(pattern, bazel=True).fullmatch(path)) is bazel


def test_a_matrix_row_pattern_matches_hidden_names() -> None:
    """Row globs are the gate's own patterns, not Bazel's glob(): every name counts."""
    assert matches_any(".h", ["*h"])
    assert matches_any("sub/.s", ["**/*s"])


@pytest.mark.parametrize("pattern", ["", "/abs", "a/../b", "a//b", "a**/b", "./x"])
def test_invalid_globs_are_explained(pattern: str) -> None:
    assert validate_glob(pattern) is not None


def test_valid_glob_has_no_complaint() -> None:
    assert validate_glob("tests/**/test_*.py") is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet="ab/0\U0010ffff", max_size=5)),
    st.text(alphabet="ab/0\U0010ffff", max_size=3),
)
def test_starting_with_is_the_sorted_filter(texts: list[str], prefix: str) -> None:
    # The bisect bound is the prefix's successor; the last code point has none.
    ordered = sorted(texts)
    assert list(starting_with(ordered, prefix)) == [t for t in ordered if t.startswith(prefix)]


_SEGMENTS = st.one_of(st.just("**"), st.text(alphabet="a*?.", min_size=1, max_size=4))
_NAMES = st.text(alphabet="a.b", max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_SEGMENTS, min_size=1, max_size=4),
    st.lists(_NAMES, min_size=1, max_size=4),
    st.booleans(),
)
def test_the_segment_matcher_agrees_with_the_regular_expression(
    segments: list[str], names: list[str], bazel: bool
) -> None:
    """A pattern with many wildcards is matched segment by segment, never by a regular
    expression; both readings of every pattern agree (on ones small enough for both)."""
    pattern = "/".join(segments)
    path = "/".join(names)
    matcher = GlobPattern(pattern, bazel)
    assert matcher.segments_match(names) is (_regex(pattern, bazel).fullmatch(path) is not None)


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("/".join(["*a*a*a*a*a*a*a*a*a*a*b"] * 4), "/".join(["a" * 80] * 4)),
        ("/".join(["**", "a"] * 30 + ["b"]), "/".join(["a"] * 60)),
    ],
    ids=["stars_in_a_segment", "many_star_star_segments"],
)
def test_a_pattern_of_many_wildcards_is_matched_without_backtracking(
    pattern: str, path: str
) -> None:
    """A backtracking matcher tries every split of the path among the wildcards (the
    second pattern took the regular expression minutes); each is one step per pattern
    segment and path name here. The match counts its steps as ``wildcard_match`` calls."""
    matcher = compile_glob(pattern)
    assert matcher.regex is None
    calls = 0
    original = wildcard_match

    def counted(segment: str, name: str) -> bool:
        nonlocal calls
        calls += 1
        return original(segment, name)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(globs, "wildcard_match", counted)
        assert matcher.fullmatch(path) is False
    segments, names = pattern.count("/") + 1, path.count("/") + 1
    assert calls <= segments * names


@pytest.mark.parametrize(
    ("pattern", "prefix"),
    [
        ("m/m1.py", "m/m1.py"),
        ("src/*.py", "src/"),
        ("src/a?.py", "src/a"),
        ("testdata/", "testdata/"),
        ("**/a.py", ""),
        ("a/b*/c/**", "a/b"),
    ],
)
def test_a_literal_prefix_is_the_pattern_before_its_first_wildcard(
    pattern: str, prefix: str
) -> None:
    assert literal_prefix(pattern) == prefix


_INDEX_SEGMENTS = st.one_of(st.just("**"), st.text(alphabet="ab*?", min_size=1, max_size=3))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.lists(_INDEX_SEGMENTS, min_size=1, max_size=3).map("/".join)
            | st.lists(st.sampled_from(["a", "ab"]), min_size=1, max_size=2).map(
                lambda names: "/".join(names) + "/"
            ),
            max_size=3,
        ),
        max_size=5,
    ),
    st.lists(st.text(alphabet="ab", min_size=1, max_size=3), min_size=1, max_size=4),
)
def test_the_index_finds_exactly_the_lists_that_match(
    lists: list[list[str]], names: list[str]
) -> None:
    """Holding a path against the globs of its prefixes only loses no match: the index
    says what matching every glob of every list says."""
    path = "/".join(names)
    expected = [index for index, patterns in enumerate(lists) if matches_any(path, patterns)]
    assert GlobIndex(lists).matching(path) == expected


def test_the_index_compiles_only_the_globs_a_path_could_match() -> None:
    """Ten thousand literal row globs: a path compiles the one glob it equals, never the
    others (``compile_glob`` keeps fewer than ten thousand)."""
    index = GlobIndex([f"m/m{i}.py"] for i in range(10_000))
    compile_glob.cache_clear()
    assert index.matching("m/m7.py") == [7]
    assert index.matching("m/m70.py") == [70]
    assert index.matching("m/other.py") == []
    assert compile_glob.cache_info().currsize == 2
