"""Properties of merge_ranges: each takes one sample and raises on violation."""

from hypothesis import strategies as st
from intervals import merge_ranges

_RANGES = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)).map(sorted))


def prop_idempotent(ranges):
    once = merge_ranges(ranges)
    assert merge_ranges(once) == once


def prop_permutation_invariant(ranges):
    assert merge_ranges(list(reversed(ranges))) == merge_ranges(ranges)


prop_idempotent.strategy = _RANGES
prop_permutation_invariant.strategy = _RANGES
