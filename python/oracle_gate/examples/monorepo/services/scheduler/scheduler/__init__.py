"""Busy windows of a calendar, built on libs/intervals."""

from intervals import merge_ranges


def busy_windows(meetings):
    """The merged [start, end] windows in which someone is in a meeting."""
    return merge_ranges([[m["start"], m["end"]] for m in meetings])
