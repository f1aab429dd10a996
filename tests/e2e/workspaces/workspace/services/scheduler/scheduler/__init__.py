"""Busy windows of a calendar, built on libs/intervals and libs/codec."""

from codec import encode
from intervals import merge_ranges


def busy_windows(meetings):
    """The merged [start, end] windows in which someone is in a meeting."""
    return merge_ranges([[m["start"], m["end"]] for m in meetings])


def export(meetings):
    """The busy windows in the codec's line format, one window a line."""
    return encode({str(start): str(end) for start, end in busy_windows(meetings)})
