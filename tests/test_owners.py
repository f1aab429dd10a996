"""CODEOWNERS patterns: GitHub's matching, in time linear in the pattern."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from gitrepo import GitRepo
from oracle_gate.config.owners import _Pattern, _pattern_regex, read_codeowners
from oracle_gate.repo.trees import GitTree


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["*", "**", "?", "a", "b", "/", "."]), min_size=1, max_size=8),
    st.text(alphabet="ab/.", min_size=1, max_size=8),
)
def test_the_place_set_matcher_agrees_with_the_regular_expression(
    pieces: list[str], path: str
) -> None:
    """A pattern of several wildcard runs is matched without a regular expression; both
    readings agree on every pattern (on ones small enough for both)."""
    path = path.strip("/") or "a"
    matcher = _Pattern("".join(pieces))
    expected = _pattern_regex(matcher.anchored, matcher.tokens).fullmatch(path) is not None
    matcher.regex = None
    assert matcher.matches(path) is expected


def test_a_pathological_pattern_is_matched_fast(repo: GitRepo) -> None:
    """``**a**a**...b`` took a backtracking matcher 135 s at nine segments, three times
    longer per segment more; thirty on a long path take the gate a blink (the bound is
    generous: a loaded machine)."""
    pattern = "**a" * 30 + "**b"
    repo.write("CODEOWNERS", f"* @everyone\n{pattern} @nobody\n/src/ @src-team\n")
    repo.write("src/" + "a" * 200 + ".txt", "x\n")
    owners = read_codeowners(GitTree(repo.path, repo.commit("owners")))
    started = time.monotonic()
    assert owners.owners_of("src/" + "a" * 200 + ".txt") == ("@src-team",)
    assert owners.owners_of("a" * 300) == ("@everyone",)
    assert owners.owners_of("a" * 40 + "b") == ("@nobody",)
    assert time.monotonic() - started < 10
